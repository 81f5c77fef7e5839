package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/testbed/runner"
	"github.com/mpq/mpq/trafficgen"
)

// setFlags is the repeatable --set flag. It keeps every value as given:
// runRun parses them all and reports every bad one at once.
type setFlags []string

func (s *setFlags) String() string { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// setupRun registers run's flags; the command runs an experiment file:
// one run, or a sweep.
func setupRun(fs *flag.FlagSet) runFunc {
	var o runOptions
	fs.StringVar(&o.out, "out", "results", "write results under `DIR`/<name>/<run>")
	fs.StringVar(&o.backend, "backend", "", "run on `NAME` ("+strings.Join(experiment.Backends(), ", ")+"), overriding the file")
	fs.IntVar(&o.parallel, "parallel", runtime.NumCPU(), "simulated runs at `N` at once (real-time backends run one at a time)")
	fs.Var(&o.sets, "set", "override a `key=value` of the file (repeatable), e.g. --set transport.path_scheduler=cwr")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return runRun(ctx, &o, args, stdout, stderr)
	}
}

// runOptions are run's flags.
type runOptions struct {
	out, backend string
	parallel     int
	sets         setFlags
}

// runRun runs the experiment file named by args.
func runRun(ctx context.Context, o *runOptions, args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		if len(args) == 0 {
			fmt.Fprintln(stderr, "mpq run: no experiment FILE given")
		} else {
			fmt.Fprintf(stderr, "mpq run: one experiment FILE expected, got %d arguments: %s\n", len(args), strings.Join(args, " "))
		}
		fmt.Fprintln(stderr, synopsis("run"))
		return exitUsage
	}
	runs, probs := loadRuns(args[0], o.sets, o.backend)
	if len(probs) > 0 {
		for _, p := range probs {
			fmt.Fprintln(stderr, p)
		}
		return exitUsage
	}
	workers := max(o.parallel, 1)
	for _, r := range runs {
		if r.Backend != experiment.BackendSim {
			workers = 1 // real time: runs must not disturb each other
		}
	}
	base := filepath.Join(o.out, sanitize(runs[0].Name))
	if err := os.MkdirAll(base, 0o755); err != nil {
		fmt.Fprintf(stderr, "mpq run: %v\n", err)
		return exitFailure
	}
	prog := newProgress(runs, time.Now())
	type job struct {
		i   int
		run *experiment.Experiment
	}
	jobs := make(chan job)
	var mu sync.Mutex
	failed := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				dir := filepath.Join(base, runName(j.run, j.i, len(runs)))
				res, err := runOne(ctx, j.run, dir)
				mu.Lock()
				head := prog.finished(j.i, time.Now())
				if err != nil {
					failed++
					if ctx.Err() == nil {
						fmt.Fprintf(stderr, "%s %s: failed: %v\n", head, dir, err)
					}
				} else {
					fmt.Fprintf(stderr, "%s %s (%.1fs)%s\n", head, dir, res.Wall.Seconds(), prog.left(time.Now()))
					fmt.Fprintln(stdout, oneLine(dir, res.Summary))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range runs {
		select {
		case jobs <- job{i, &runs[i]}:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "mpq run: interrupted; %d of %d runs finished and kept\n", prog.done-failed, len(runs))
		return exitInterrupted
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "mpq run: %d of %d runs failed\n", failed, len(runs))
		return exitFailure
	}
	return 0
}

// loadRuns loads an experiment file with the --set and --backend
// overrides, and returns its runs or every problem found, in the file
// and in the overrides.
func loadRuns(file string, sets []string, backend string) ([]experiment.Experiment, []string) {
	var probs []string
	var overrides []experiment.Override
	for _, s := range sets {
		o, err := experiment.ParseOverride(s)
		if err != nil {
			probs = append(probs, "mpq run: "+err.Error())
			continue
		}
		overrides = append(overrides, o)
	}
	if backend != "" {
		overrides = append(overrides, experiment.Override{Key: "backend", Value: backend, Origin: "--backend"})
	}
	runs, err := experiment.Load(file, overrides)
	if err != nil {
		probs = append(probs, strings.Split(err.Error(), "\n")...)
	}
	return runs, probs
}

// runOne runs an experiment into a temporary directory and renames it to
// dir once complete, so that dir never holds a partial run.
func runOne(ctx context.Context, e *experiment.Experiment, dir string) (*runner.Result, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, err
	}
	res, err := runner.Run(ctx, e, tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	// A previous run of the same name is replaced.
	if err := os.RemoveAll(dir); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return res, nil
}

// runName names a run's directory after its label (the values the sweep
// varies and the overrides that change the experiment), or "run".
func runName(e *experiment.Experiment, i, n int) string {
	if len(e.Label) == 0 {
		if n == 1 {
			return "run"
		}
		return fmt.Sprintf("run%03d", i)
	}
	return sanitize(strings.Join(e.Label, ","))
}

// sanitize keeps a name usable as a directory name.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-_.=,+%", r):
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	if b.Len() == 0 {
		return "experiment"
	}
	return b.String()
}

// oneLine is the line printed per finished run: the priority sources'
// median and 99th percentile completion times and the throughput.
func oneLine(dir string, s *trafficgen.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s/%s", dir, s.PathScheduler, s.StreamScheduler)
	for _, src := range s.Sources {
		if src.MCTMS == nil {
			continue
		}
		fmt.Fprintf(&b, "  %s mct p50 %.1fms p99 %.1fms (%d/%d)", src.Name, src.MCTMS.P50, src.MCTMS.P99, src.MessagesCompleted, src.MessagesSent)
	}
	fmt.Fprintf(&b, "  throughput %.1f Mbit/s", s.ThroughputMbps.Total)
	return b.String()
}
