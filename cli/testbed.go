package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/network/netns"
)

// setupTestbed registers testbed's flags: mpq testbed up|down|status
// [FILE], and forward (which up starts in the router's namespace).
func setupTestbed(fs *flag.FlagSet) runFunc {
	var o testbedOptions
	fs.StringVar(&o.name, "name", "mpq", "name the testbed `TAG`: namespaces TAG-client, TAG-server (and TAG-router)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the ip and tc commands without running them")
	fs.StringVar(&o.emulator, "emulator", "auto", "emulate the links with `KIND`: netem, forwarder (the userspace forwarder), or auto (netem if the kernel has it)")
	fs.Var(&o.sets, "set", "override a `key=value` of the file (repeatable)")
	fs.StringVar(&o.state, "state", "", "the testbed's state `DIR` (testbed forward only)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return runTestbed(ctx, &o, args, stdout, stderr)
	}
}

type testbedOptions struct {
	name, emulator, state string
	dryRun                bool
	sets                  setFlags
}

func runTestbed(ctx context.Context, o *testbedOptions, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "mpq testbed: up, down, status or forward expected\n%s\n", synopsis("testbed"))
		return exitUsage
	}
	verb, args := args[0], args[1:]
	if len(args) > 1 {
		fmt.Fprintf(stderr, "mpq testbed %s: at most one experiment FILE, got %s\n", verb, strings.Join(args, " "))
		return exitUsage
	}
	if err := netns.CheckTag(o.name); err != nil {
		fmt.Fprintf(stderr, "mpq testbed: --name: %v\n", err)
		return exitUsage
	}
	var mode netns.Mode
	switch o.emulator {
	case "auto":
	case "netem":
		mode = netns.ModeNetem
	case "forwarder":
		mode = netns.ModeForwarder
	default:
		fmt.Fprintf(stderr, "mpq testbed: --emulator %q: want auto, netem or forwarder\n", o.emulator)
		return exitUsage
	}
	var e *experiment.Experiment
	if len(args) == 1 {
		runs, probs := loadRuns(args[0], o.sets, nil, "", 0)
		if len(probs) > 0 {
			for _, p := range probs {
				fmt.Fprintln(stderr, p)
			}
			return exitUsage
		}
		e = &runs[0]
		if len(runs) > 1 {
			fmt.Fprintf(stderr, "mpq testbed: %s has %d runs; the testbed is the first's (pick another with --set)\n", args[0], len(runs))
		}
	}
	switch verb {
	case "up":
		if e == nil {
			fmt.Fprintf(stderr, "mpq testbed up: an experiment FILE is needed (its [[path]] tables)\n%s\n", synopsis("testbed"))
			return exitUsage
		}
		t, err := netns.FromExperiment(e, o.name, mode)
		if err != nil {
			fmt.Fprintf(stderr, "mpq testbed up: %v\n", err)
			return exitUsage
		}
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "mpq testbed up: %v\n", err)
			return exitFailure
		}
		st, err := netns.Up(ctx, t, netns.Options{Out: stdout, DryRun: o.dryRun, File: e.File,
			Forwarder: []string{self, "testbed", "forward"}})
		if err != nil {
			printErr(stderr, "testbed up", err)
			return exitFailure
		}
		if !o.dryRun {
			fmt.Fprintf(stdout, "testbed %s is up (%s): run commands in it with \"ip netns exec %s …\" and \"ip netns exec %s …\"\n",
				st.Tag, st.Mode, t.Client(), t.Server())
			for i := range e.Paths {
				c, s := e.Addrs(i)
				fmt.Fprintf(stdout, "  path %d: client %v, server %v\n", i, c.Addr(), s.Addr())
			}
			fmt.Fprintf(stdout, "take it down with: mpq testbed down --name %s\n", st.Tag)
		}
		return 0
	case "down":
		if err := netns.Down(ctx, o.name, netns.Options{Out: stdout, DryRun: o.dryRun}); err != nil {
			printErr(stderr, "testbed down", err)
			return exitFailure
		}
		return 0
	case "status":
		if err := netns.Status(ctx, o.name, e, stdout); err != nil {
			printErr(stderr, "testbed status", err)
			return exitFailure
		}
		return 0
	case "forward":
		if o.state == "" {
			fmt.Fprintln(stderr, "mpq testbed forward: --state DIR is needed (mpq testbed up starts the forwarder)")
			return exitUsage
		}
		if err := netns.Forward(ctx, o.state); err != nil {
			printErr(stderr, "testbed forward", err)
			return exitFailure
		}
		return 0
	}
	fmt.Fprintf(stderr, "mpq testbed: unknown action %q: want up, down, status or forward\n%s\n", verb, synopsis("testbed"))
	return exitUsage
}
