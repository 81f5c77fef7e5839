package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/network/netns"
	"github.com/mpq/mpq/runner"
)

// roleOptions are run's flags for one end of a two-host run.
type roleOptions struct {
	role                   string
	listen, connect, local listFlag
	wait                   time.Duration
	emulator               string
	startFile              string
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*l = append(*l, x)
		}
	}
	return nil
}

func (o *roleOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.role, "role", "", "run one end of a two-host run, `ROLE` server or client, writing its half of each run into RUN/server or RUN/client (join them with mpq merge)")
	fs.Var(&o.listen, "listen", "server role: its `ADDR:PORT` on each path (repeatable); QUIC and the clock protocol (PORT+1) listen on the first")
	fs.Var(&o.connect, "connect", "client role: the server's `ADDR:PORT` on each path (repeatable)")
	fs.Var(&o.local, "local", "client role: its own `ADDR` on each path (repeatable)")
	fs.DurationVar(&o.wait, "wait", 10*time.Minute, "roles: how long the server waits for the client's start of a run, and the client for the server")
	fs.StringVar(&o.startFile, "start-file", "", "client role: write the run's start (Unix time in nanoseconds) to `FILE` once chosen, for a link emulator whose scheduled changes count from it")
	fs.StringVar(&o.emulator, "emulator", "auto", "backend netns: emulate the links with `KIND`, netem, forwarder or auto")
}

// configure applies the flags that are not about roles.
func (o *roleOptions) configure(stderr io.Writer) bool {
	switch o.emulator {
	case "auto", "":
	case "netem", "forwarder":
		runner.Netns.Mode = netns.Mode(o.emulator)
	default:
		fmt.Fprintf(stderr, "mpq run: --emulator %q: want auto, netem or forwarder\n", o.emulator)
		return false
	}
	runner.Netns.Notes = stderr
	return true
}

// needsRoot checks, before anything is made, that runs on the netns
// backend run as root.
func needsRoot(runs []experiment.Experiment) error {
	for _, r := range runs {
		if r.Backend == experiment.BackendNetns {
			if err := netns.CheckRoot(); err != nil {
				return fmt.Errorf("backend netns: %w", err)
			}
			break
		}
	}
	return nil
}

// role builds the runner's role from the flags.
func (o *roleOptions) parse() (*runner.Role, error) {
	r := &runner.Role{Side: o.role, Wait: o.wait, StartFile: o.startFile}
	var bad []string
	for _, a := range o.listen {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			bad = append(bad, "--listen "+a)
			continue
		}
		r.Listen = append(r.Listen, ap)
	}
	for _, a := range o.connect {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			bad = append(bad, "--connect "+a)
			continue
		}
		r.Connect = append(r.Connect, ap)
	}
	for _, a := range o.local {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			bad = append(bad, "--local "+a)
			continue
		}
		r.Local = append(r.Local, ip)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("bad addresses: %s (want ADDR:PORT for --listen and --connect, ADDR for --local)", strings.Join(bad, ", "))
	}
	switch o.role {
	case "server":
		if len(o.connect)+len(o.local) > 0 {
			return nil, fmt.Errorf("--role server takes --listen, not --connect or --local")
		}
	case "client":
		if len(o.listen) > 0 {
			return nil, fmt.Errorf("--role client takes --connect and --local, not --listen")
		}
	default:
		return nil, fmt.Errorf("--role %q: want server or client", o.role)
	}
	return r, nil
}

// runRoles runs this end of every run, one after the other, writing each
// half into base/RUN/<role>.
func runRoles(ctx context.Context, o *runOptions, runs []experiment.Experiment, base string, stdout, stderr io.Writer) int {
	r, err := o.roles.parse()
	if err != nil {
		fmt.Fprintf(stderr, "mpq run: %v\n", err)
		return exitUsage
	}
	for i := range runs {
		if err := r.Check(&runs[i]); err != nil {
			fmt.Fprintf(stderr, "mpq run: %v\n", err)
			return exitUsage
		}
		if runs[i].Backend != experiment.BackendNetns {
			if what := emulatedOnly(&runs[i]); what != "" {
				fmt.Fprintf(stderr, "mpq run: %s: %s: a two-host run has the hosts' network, which mpq does not shape; the netns backend and the others emulate it\n", runs[i].File, what)
				return exitUsage
			}
			runs[i].Backend = runner.BackendHosts
		}
		// Real sockets: never the simulator's null packet protection.
		runs[i].Transport.SimNullProtection = false
	}
	if err := runner.OpenRole(r); err != nil {
		fmt.Fprintf(stderr, "mpq run: %v\n", err)
		return exitFailure
	}
	defer r.Close()
	failed := 0
	for i := range runs {
		e := &runs[i]
		dir := filepath.Join(base, runName(e), r.Side)
		info, err := runRole(ctx, e, r, dir)
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "[%d/%d] %s: failed: %v\n", i+1, len(runs), dir, err)
			if ctx.Err() != nil {
				fmt.Fprintf(stderr, "mpq run: interrupted; %d of %d halves written\n", i-failed+1, len(runs))
				return exitInterrupted
			}
			continue
		}
		line := fmt.Sprintf("%s: %s half written", dir, r.Side)
		if c := info.Clock; c != nil {
			line += fmt.Sprintf("; server clock offset %+.3f ms (probe rtt %.3f ms) before, %+.3f ms after", c.Start.OffsetMS, c.Start.RTTMS, c.End.OffsetMS)
		}
		fmt.Fprintf(stderr, "[%d/%d] %s\n", i+1, len(runs), dir)
		fmt.Fprintln(stdout, line)
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "mpq run: %d of %d runs failed\n", failed, len(runs))
		return exitFailure
	}
	return 0
}

// runRole runs one end of a run into a temporary directory renamed to dir
// once complete, with the run's experiment (experiment.json) for mpq
// merge.
func runRole(ctx context.Context, e *experiment.Experiment, r *runner.Role, dir string) (*runner.RoleInfo, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	removeStale(dir, ".tmp-")
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, err
	}
	info, err := runner.RunRole(ctx, e, r, tmp)
	if err == nil {
		err = writeExperiment(filepath.Join(tmp, experimentFile), e)
	}
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	if err == nil {
		err = os.RemoveAll(dir)
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return info, nil
}

// experimentFile is the run's experiment next to a half, as JSON: the
// resolved configuration with the run's place in its sweep.
const experimentFile = "experiment.json"

func writeExperiment(name string, e *experiment.Experiment) error {
	js, err := json.MarshalIndent(e, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(js, '\n'), 0o644)
}

func readExperiment(name string) (*experiment.Experiment, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var e experiment.Experiment
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &e, nil
}

// emulatedOnly names what of an experiment only mpq's emulated networks
// carry out ("" if nothing): scheduled link changes, shared bottlenecks,
// link traces and competing connections. A two-host run would leave them
// out without a word.
func emulatedOnly(e *experiment.Experiment) string {
	if len(e.Bottlenecks) > 0 {
		return "[[bottleneck]]"
	}
	if len(e.Competitors) > 0 {
		return "[[competitor]]"
	}
	for i, p := range e.Paths {
		if len(p.Changes) > 0 {
			return fmt.Sprintf("path %d's [[path.change]]", i)
		}
		if p.Up.Trace != nil || p.Down.Trace != nil {
			return fmt.Sprintf("path %d's trace", i)
		}
	}
	return ""
}
