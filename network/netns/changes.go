package netns

import (
	"context"
	"fmt"
	"io"
	"time"
)

// ApplyChanges applies the paths' scheduled changes of a testbed in netem
// mode (ChangePlan) from the driver: it waits for the run's start in the
// start file the client end writes (StartFile), then runs each command at
// its time after the start, printing it to out with its time. It returns
// when every command ran, at the first that fails, or when ctx ends (nil:
// a run that ended before a change had nothing more to change).
func ApplyChanges(ctx context.Context, t *Topology, startFile string, out io.Writer) error {
	sh := &shell{ctx: ctx, out: out}
	return applyChanges(ctx, t.ChangePlan(), startFile, out, sh.run)
}

// applyChanges is ApplyChanges running plan's commands with run.
func applyChanges(ctx context.Context, plan []TimedCmd, startFile string, out io.Writer, run func(Cmd) error) error {
	if len(plan) == 0 {
		return nil
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	var start time.Time
	for {
		var err error
		if start, err = ReadStart(startFile); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	for _, c := range plan {
		timer := time.NewTimer(time.Until(start.Add(c.At)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		fmt.Fprintf(out, "# at %v after the start (late by %v):\n", c.At, time.Since(start.Add(c.At)).Round(time.Microsecond))
		if err := run(c.Cmd); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("scheduled change at %v: %w", c.At, err)
		}
	}
	return nil
}
