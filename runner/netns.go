package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/network/netns"
	"github.com/mpq/mpq/trafficgen"
)

// BackendHosts is the backend of the runs of mpq run --role: two
// processes, on two hosts or in two namespaces, each running one end.
const BackendHosts = "hosts"

func init() {
	experiment.RegisterBackend(experiment.BackendNetns)
	experiment.RegisterBackend(BackendHosts)
}

// NetnsOptions configure the netns backend.
type NetnsOptions struct {
	// Executable is the mpq binary the backend runs in the namespaces
	// (both ends, with --role, and the forwarder); default the running
	// program.
	Executable string
	// Mode forces netem or the forwarder; "" chooses netem if the
	// kernel has it.
	Mode netns.Mode
	// Notes receives what the user should know once (netem missing,
	// testbeds left behind cleaned up); default nowhere.
	Notes io.Writer
	// Tag names the testbed (its namespaces start with it); default
	// mpqrun and the process ID. Runs of one process with the same tag
	// must not overlap.
	Tag string
}

// Netns configures the netns backend of this process.
var Netns NetnsOptions

// serverPortNetns is the server's QUIC port in the namespace testbed.
const serverPortNetns = 4433

var noteOnce sync.Once

// runNetns runs an experiment in the namespace testbed (package netns):
// it brings up a testbed of its own (named after the process, so that
// runs of other processes do not collide), runs the server with --role
// server in the server's namespace and the client with --role client in
// the client's, merges their halves into dir, adds the testbed's commands
// (testbed.log) and, in forwarder mode, the forwarder's statistics
// (emulator.json), and takes the testbed down: after the run, when it
// fails, and when ctx is cancelled (Ctrl-C, SIGTERM). A testbed left by a
// run killed with SIGKILL is removed by the next run or mpq testbed up.
func runNetns(ctx context.Context, e *experiment.Experiment, dir string, started time.Time) (res *Result, err error) {
	if err := netns.CheckRoot(); err != nil {
		return nil, fmt.Errorf("backend netns: %w", err)
	}

	exe := Netns.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	tag := Netns.Tag
	if tag == "" {
		tag = fmt.Sprintf("mpqrun%d", os.Getpid())
	}
	t, err := netns.FromExperiment(e, tag, Netns.Mode)
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "testbed.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	notes := &noteWriter{w: log, notes: Netns.Notes}
	st, err := netns.Up(ctx, t, netns.Options{Out: notes, Owner: netns.Self(), Attached: true, File: e.File,
		Forwarder: []string{exe, "testbed", "forward"}})
	if err != nil {
		return nil, fmt.Errorf("testbed up: %w (commands in %s)", err, filepath.Join(dir, "testbed.log"))
	}
	defer func() {
		// Down with a context of its own: ctx may be cancelled.
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		fmt.Fprintln(log, "# the run is over")
		if st.Mode == netns.ModeForwarder {
			if ferr := netns.StopForwarder(tag); ferr != nil {
				err = errors.Join(err, ferr)
			} else if res != nil {
				err = errors.Join(err, copyFile(filepath.Join(netns.StateDir, tag, netns.StatsFile), filepath.Join(dir, "emulator.json")))
			}
		}
		if res != nil {
			netns.Status(dctx, tag, nil, log)
		}
		err = errors.Join(err, netns.Down(dctx, tag, netns.Options{Out: log}))
		if err != nil {
			res = nil
		}
	}()

	// Both ends run the resolved configuration.
	roles := filepath.Join(dir, ".roles")
	if err := os.MkdirAll(roles, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(roles)
	cfg := filepath.Join(roles, "experiment.toml")
	if err := os.WriteFile(cfg, e.ResolvedTOML(), 0o644); err != nil {
		return nil, err
	}
	var listen, connect, local []string
	for i := range e.Paths {
		c, s := e.Addrs(i)
		listen = append(listen, "--listen", netip.AddrPortFrom(s.Addr(), serverPortNetns).String())
		connect = append(connect, "--connect", netip.AddrPortFrom(s.Addr(), serverPortNetns).String())
		local = append(local, "--local", c.Addr().String())
	}
	// The server waits for the client's start at most until the client
	// should have started.
	wait := []string{"--wait", (30 * time.Second).String()}
	server := roleCmd(t.Server(), exe, cfg, "server", filepath.Join(roles, "server"), append(listen, wait...))
	// The client writes the run's start to the testbed's start file, from
	// which the forwarder's scheduled link changes count, and in netem
	// mode ApplyChanges runs their tc commands.
	start := []string{"--start-file", netns.StartFile(tag)}
	client := roleCmd(t.Client(), exe, cfg, "client", filepath.Join(roles, "client"), append(append(append(connect, local...), wait...), start...))
	if st.Mode == netns.ModeNetem {
		// netem counts a segmentation-offload datagram (UDP_SEGMENT, up
		// to 64 kB, segmented only after the qdisc) as one packet
		// against its limit and delivers its segments together: the ends
		// send one datagram at a time, as the forwarder sees them.
		for _, c := range []*exec.Cmd{server, client} {
			c.Env = append(os.Environ(), "MPQUIC_DISABLE_GSO=1")
		}
		fmt.Fprintln(log, "# MPQUIC_DISABLE_GSO=1 for both ends (netem counts an offloaded datagram as one packet)")
	}
	fmt.Fprintln(log, "+ "+strings.Join(server.Args, " "))
	fmt.Fprintln(log, "+ "+strings.Join(client.Args, " "))
	changed := make(chan error, 1)
	cctx, stopChanges := context.WithCancel(ctx)
	if st.Mode == netns.ModeNetem {
		go func() { changed <- netns.ApplyChanges(cctx, t, netns.StartFile(tag), &lockedWriter{w: log}) }()
	} else {
		changed <- nil
	}
	comps, compCmds, err := netnsCompetitors(e, t, exe, roles)
	if err != nil {
		stopChanges()
		return nil, err
	}
	names := []string{"server", "client"}
	cmds := []*exec.Cmd{server, client}
	for k, c := range compCmds {
		fmt.Fprintln(log, "+ "+strings.Join(c.Args, " "))
		names = append(names, fmt.Sprintf("competitor %s's %s", comps[k/2].c.c.Name, names[k%2]))
		cmds = append(cmds, c)
	}
	err = runBoth(ctx, names, cmds...)
	stopChanges()
	if cerr := <-changed; cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	cdir, err := findHalf(filepath.Join(roles, "client"))
	if err != nil {
		return nil, err
	}
	sdir, err := findHalf(filepath.Join(roles, "server"))
	if err != nil {
		return nil, err
	}
	for _, c := range comps {
		if err := c.merge(); err != nil {
			return nil, fmt.Errorf("competitor %s: %w", c.c.c.Name, err)
		}
	}
	var cs []*competitor
	for _, c := range comps {
		cs = append(cs, c.c)
	}
	sums, extra := competitorResults(cs, e)
	if t0, err := netns.ReadStart(netns.StartFile(tag)); err == nil {
		for k, c := range comps {
			if !c.start.IsZero() {
				ms := math.Round(float64(c.start.Sub(t0))/1e3) / 1e3
				sums[k].StartOffsetMS = &ms
			}
		}
	}
	res, err = mergeRun(e, cdir, sdir, dir, MergeOptions{}, func(s *trafficgen.Summary) {
		s.Competitors = sums
		s.Provenance = &trafficgen.Provenance{Emulator: string(st.Mode)}
	}, extra...)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// noteWriter writes the testbed's output to w and its notes ("# …"
// lines about the kernel and leftovers) once to notes as well.
type noteWriter struct {
	w     io.Writer
	notes io.Writer
}

func (n *noteWriter) Write(p []byte) (int, error) {
	if n.notes != nil {
		for _, l := range strings.Split(string(p), "\n") {
			switch {
			case strings.HasPrefix(l, "# netem is not available"):
				noteOnce.Do(func() { fmt.Fprintln(n.notes, "mpq run: "+strings.TrimPrefix(l, "# ")) })
			case strings.HasPrefix(l, "# testbed ") && strings.Contains(l, "which is gone"):
				fmt.Fprintln(n.notes, "mpq run: "+strings.TrimPrefix(l, "# "))
			}
		}
	}
	return n.w.Write(p)
}

// roleCmd is the command that runs one end in its namespace, writing its
// output to a log next to its results.
func roleCmd(ns, exe, cfg, side, out string, flags []string) *exec.Cmd {
	args := append([]string{"netns", "exec", ns, exe, "run", cfg, "--role", side, "--out", out}, flags...)
	c := exec.Command("ip", args...)
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return c
}

// runBoth runs the ends (named by names, for errors) and waits for all;
// when one fails, or ctx ends, the others are stopped (SIGTERM, then
// SIGKILL). The error has the output of the ends that failed.
func runBoth(ctx context.Context, names []string, cmds ...*exec.Cmd) error {
	type result struct {
		i   int
		err error
	}
	outs := make([]*strings.Builder, len(cmds))
	done := make(chan result, len(cmds))
	for i, c := range cmds {
		outs[i] = &strings.Builder{}
		w := &lockedWriter{w: outs[i]}
		c.Stdout, c.Stderr = w, w
		if err := c.Start(); err != nil {
			for _, o := range cmds[:i] {
				o.Process.Kill()
			}
			return err
		}
		go func() { done <- result{i, c.Wait()} }()
	}
	var errs []error
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for _, c := range cmds {
			c.Process.Signal(syscall.SIGTERM)
		}
		go func() {
			time.Sleep(5 * time.Second)
			for _, c := range cmds {
				c.Process.Signal(syscall.SIGKILL)
			}
		}()
	}
	for range cmds {
		var r result
		select {
		case r = <-done:
		case <-ctx.Done():
			stop()
			r = <-done
		}
		if r.err != nil {
			side := names[r.i]
			if !stopped {
				errs = append(errs, fmt.Errorf("the %s failed (%v): %s", side, r.err, strings.TrimSpace(outs[r.i].String())))
			}
			stop()
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// findHalf returns the directory under root that holds a half.
func findHalf(root string) (string, error) {
	var found string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == HalfFile && found == "" {
			found = filepath.Dir(p)
		}
		return nil
	})
	if err == nil && found == "" {
		err = fmt.Errorf("no %s under %s", HalfFile, root)
	}
	return found, err
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// netnsCompetitor is a competitor of a netns run: a server and a client
// of its own (mpq run --role in the server's and the client's
// namespaces, on its path's addresses and a port of its own), whose
// halves merge into its recorder.
type netnsCompetitor struct {
	c   *competitor
	dir string
	// start is its client's time zero.
	start time.Time
}

// netnsCompetitors writes each competitor's run (its
// CompetitorExperiment) under roles and returns the commands of its
// ends, server then client, competitor by competitor. Competitor k's
// server listens on its path's server address, port serverPortNetns+2+2k
// (its clock protocol on the next), so that its packets take the path's
// links beside the experiment's. Its time zero is its own client's,
// chosen as the experiment's client chooses its own, at the same moment
// but not at the same instant: the summary gives the difference
// (CompetitorSummary.StartOffsetMS).
func netnsCompetitors(e *experiment.Experiment, t *netns.Topology, exe, roles string) ([]*netnsCompetitor, []*exec.Cmd, error) {
	var out []*netnsCompetitor
	var cmds []*exec.Cmd
	for k, c := range newCompetitors(e, time.Time{}) {
		dir := filepath.Join(roles, fmt.Sprintf("competitor%d", k))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
		cfg := filepath.Join(dir, "experiment.toml")
		if err := os.WriteFile(cfg, c.e.ResolvedTOML(), 0o644); err != nil {
			return nil, nil, err
		}
		// The ends run what the file says: merge against the same.
		runs, err := experiment.Load(cfg, nil)
		if err != nil {
			return nil, nil, err
		}
		c.e = runs[0]
		ca, sa := e.Addrs(c.c.Path)
		at := netip.AddrPortFrom(sa.Addr(), uint16(serverPortNetns+2+2*k)).String()
		wait := []string{"--wait", (30 * time.Second).String()}
		cmds = append(cmds,
			roleCmd(t.Server(), exe, cfg, "server", filepath.Join(dir, "server"), append([]string{"--listen", at}, wait...)),
			roleCmd(t.Client(), exe, cfg, "client", filepath.Join(dir, "client"),
				append([]string{"--connect", at, "--local", ca.Addr().String(), "--start-file", filepath.Join(dir, "start")}, wait...)))
		out = append(out, &netnsCompetitor{c: c, dir: dir})
	}
	return out, cmds, nil
}

// merge joins the competitor's halves into its recorder.
func (n *netnsCompetitor) merge() error {
	cdir, err := findHalf(filepath.Join(n.dir, "client"))
	if err != nil {
		return err
	}
	sdir, err := findHalf(filepath.Join(n.dir, "server"))
	if err != nil {
		return err
	}
	rec, _, _, _, err := mergeHalves(&n.c.e, cdir, sdir, MergeOptions{})
	if err != nil {
		return err
	}
	// Both ends ran the run: it connected (else the client's end fails).
	n.c.rec, n.c.connected = rec, true
	if t, err := netns.ReadStart(filepath.Join(n.dir, "start")); err == nil {
		n.start = t
	}
	return nil
}
