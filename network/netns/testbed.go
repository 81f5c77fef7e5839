package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mpq/mpq/experiment"
)

// Options configure Up and Down.
type Options struct {
	// Out receives every command as it runs ("+ ip netns add …") and the
	// notes (which mode, what was cleaned up).
	Out io.Writer
	// DryRun prints the commands without running them.
	DryRun bool
	// Mode forces netem or the forwarder; "" probes the kernel for netem
	// and falls back to the forwarder.
	Mode Mode
	// Owner is the process the testbed belongs to (zero: it lasts until
	// Down). A testbed whose owner died is removed by the next Up.
	Owner Proc
	// File is the experiment file, for the record.
	File string
	// Forwarder is the command line of the forwarder (mpq testbed
	// forward), to which "--state DIR" is appended; it runs in the
	// router's namespace.
	Forwarder []string
	// Attached makes the forwarder die with the calling process (a run's
	// testbed); otherwise it runs in a session of its own until Down.
	Attached bool
}

// ErrNotRoot says why the testbed cannot run.
var ErrNotRoot = errors.New("the namespace testbed needs root (it creates network namespaces and veths): run it as root, e.g. with sudo")

// CheckRoot returns ErrNotRoot unless the process runs as root.
func CheckRoot() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	return nil
}

// shell runs and prints commands.
type shell struct {
	ctx context.Context
	out io.Writer
	dry bool
}

// run prints a command and runs it; the error carries its output.
func (s *shell) run(c Cmd) error {
	fmt.Fprintln(s.out, "+ "+c.String())
	if s.dry {
		return nil
	}
	cmd := exec.CommandContext(s.ctx, c.Args[0], c.Args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			msg = err.Error()
		}
		return &CmdError{Cmd: c, Output: msg}
	}
	return nil
}

// CmdError is a command that failed, with what it printed.
type CmdError struct {
	Cmd    Cmd
	Output string
}

func (e *CmdError) Error() string { return fmt.Sprintf("%s: %s", e.Cmd, e.Output) }

// netemMissing reports whether a failed probe says the kernel has no
// netem.
func netemMissing(err error) bool {
	var ce *CmdError
	return errors.As(err, &ce) && strings.Contains(ce.Output, "Specified qdisc kind is unknown")
}

// Up builds the topology t: it first removes the testbeds whose owner
// died and a previous testbed of the same tag (unless another live
// process owns it), then runs the plan, printing every command. In
// forwarder mode it starts the forwarder and waits until it forwards. On
// failure, or if ctx ends, it removes what it made.
func Up(ctx context.Context, t *Topology, o Options) (*State, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	sh := &shell{ctx: ctx, out: o.Out, dry: o.DryRun}
	if o.DryRun {
		if t.Mode == "" {
			t.Mode = ModeNetem
			fmt.Fprintln(o.Out, "# dry run: the plan for a kernel with netem (--emulator forwarder shows the other)")
		}
		for _, c := range t.UpPlan() {
			sh.run(c)
		}
		if t.Mode == ModeForwarder {
			sh.run(Cmd{Args: append(append([]string{"ip", "netns", "exec", t.Router()}, o.Forwarder...), "--state", stateDir(t.Tag))})
		} else {
			for _, c := range t.ChangePlan() {
				fmt.Fprintf(o.Out, "# at %v after the start of a run (mpq run applies it):\n", c.At)
				sh.run(c.Cmd)
			}
		}
		return &State{Tag: t.Tag, Mode: t.Mode, Namespaces: t.Namespaces()}, nil
	}
	if err := CheckRoot(); err != nil {
		return nil, err
	}
	if err := CleanOrphans(ctx, o.Out); err != nil {
		return nil, err
	}
	if old, err := ReadState(t.Tag); err == nil {
		if old.Owner.PID != 0 && old.Owner.Alive() && old.Owner != Self() {
			return nil, fmt.Errorf("testbed %s belongs to the running process %d: choose another name", t.Tag, old.Owner.PID)
		}
		fmt.Fprintf(o.Out, "# testbed %s exists: taking it down first\n", t.Tag)
		if err := Down(ctx, t.Tag, Options{Out: o.Out}); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, ns := range append(t.Namespaces(), t.Router()) {
		if nsExists(ns) {
			return nil, fmt.Errorf("namespace %s exists but is not a testbed's (no %s): remove it or choose another name", ns, statePath(t.Tag))
		}
	}
	st := &State{Tag: t.Tag, Mode: t.Mode, Owner: o.Owner, File: o.File, Created: time.Now().UTC(),
		Namespaces: []string{t.Client(), t.Server(), t.Router()}}
	if err := writeState(st); err != nil {
		return nil, err
	}
	fail := func(err error) (*State, error) {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		fmt.Fprintf(o.Out, "# failed: %v; removing what was made\n", err)
		if derr := Down(cctx, t.Tag, Options{Out: o.Out}); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	plan := func() []Cmd { return t.UpPlan() }
	// The client's namespace first: the netem probe runs in it.
	first := cmd("ip", "netns", "add", t.Client())
	if err := sh.run(first); err != nil {
		return fail(err)
	}
	if t.Mode == "" {
		err := sh.run(t.NetemProbe())
		switch {
		case err == nil:
			t.Mode = ModeNetem
			if err := sh.run(t.NetemProbeUndo()); err != nil {
				return fail(err)
			}
		case netemMissing(err):
			t.Mode = ModeForwarder
			fmt.Fprintf(o.Out, "# netem is not available on this kernel (tc: \"Specified qdisc kind is unknown\"): the paths go through mpq's userspace forwarder in namespace %s\n", t.Router())
		default:
			return fail(err)
		}
	}
	st.Mode = t.Mode
	st.Namespaces = t.Namespaces()
	if err := writeState(st); err != nil {
		return fail(err)
	}
	for _, c := range plan() {
		if c.String() == first.String() {
			continue
		}
		if err := sh.run(c); err != nil {
			return fail(err)
		}
	}
	if t.Mode == ModeForwarder {
		p, err := startForwarder(ctx, t, o)
		if err != nil {
			return fail(err)
		}
		st.Forwarder = p
		if err := writeState(st); err != nil {
			return fail(err)
		}
	}
	return st, nil
}

// startForwarder starts the forwarder in the router's namespace and waits
// until it forwards (its ready file), at most 10 s.
func startForwarder(ctx context.Context, t *Topology, o Options) (Proc, error) {
	dir := stateDir(t.Tag)
	if err := WriteForwardConfig(dir, t); err != nil {
		return Proc{}, err
	}
	ready := filepath.Join(dir, readyFile)
	os.Remove(ready)
	os.Remove(filepath.Join(dir, startFile))
	args := append(append([]string{"ip", "netns", "exec", t.Router()}, o.Forwarder...), "--state", dir)
	fmt.Fprintln(o.Out, "+ "+shellJoin(args))
	logf, err := os.Create(filepath.Join(dir, "forward.log"))
	if err != nil {
		return Proc{}, err
	}
	defer logf.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if o.Attached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		return Proc{}, err
	}
	// ip netns exec execs the forwarder: the process is the forwarder.
	p := procOf(cmd.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(ready); err == nil {
			return p, nil
		}
		select {
		case err := <-exited:
			return Proc{}, fmt.Errorf("the forwarder exited (%v): %s", err, tail(filepath.Join(dir, "forward.log")))
		case <-deadline.C:
			stopProc(p, time.Second)
			return Proc{}, fmt.Errorf("the forwarder did not start within 10 s: %s", tail(filepath.Join(dir, "forward.log")))
		case <-ctx.Done():
			stopProc(p, time.Second)
			return Proc{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// tail returns the end of a log file.
func tail(name string) string {
	b, _ := os.ReadFile(name)
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	if s == "" {
		return "(no output)"
	}
	return s
}

// nsPids lists the processes in a named network namespace.
func nsPids(ctx context.Context, ns string) []int {
	out, err := exec.CommandContext(ctx, "ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// nsExists reports whether a named network namespace exists.
func nsExists(name string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", name))
	return err == nil
}

// StopForwarder stops the forwarder of testbed tag (if it runs), which
// writes its final statistics as it exits.
func StopForwarder(tag string) error {
	st, err := ReadState(tag)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return stopProc(st.Forwarder, 5*time.Second)
}

// Down removes testbed tag: its forwarder, its namespaces (with their
// veths, qdiscs and routes) and its state. It is idempotent: what does
// not exist is skipped. It only touches the namespaces named after tag.
func Down(ctx context.Context, tag string, o Options) error {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if err := CheckTag(tag); err != nil {
		return err
	}
	sh := &shell{ctx: ctx, out: o.Out, dry: o.DryRun}
	if o.DryRun {
		for _, c := range DownPlan(tag) {
			sh.run(c)
		}
		fmt.Fprintf(o.Out, "+ rm -r %s\n", stateDir(tag))
		return nil
	}
	if err := CheckRoot(); err != nil {
		return err
	}
	var errs []error
	if st, err := ReadState(tag); err == nil {
		if st.Forwarder.Alive() {
			fmt.Fprintf(o.Out, "# stopping the forwarder (pid %d)\n", st.Forwarder.PID)
			errs = append(errs, stopProc(st.Forwarder, 5*time.Second))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, c := range DownPlan(tag) {
		ns := c.Args[len(c.Args)-1]
		if !nsExists(ns) {
			continue
		}
		// A process left in a namespace would keep it, its veths and
		// their qdiscs alive after ip netns del: stop them first.
		if pids := nsPids(ctx, ns); len(pids) > 0 {
			fmt.Fprintf(o.Out, "# stopping the processes in %s: %v\n", ns, pids)
			for _, pid := range pids {
				errs = append(errs, stopProc(procOf(pid), 2*time.Second))
			}
		}
		errs = append(errs, sh.run(c))
	}
	if _, err := os.Stat(stateDir(tag)); err == nil {
		fmt.Fprintf(o.Out, "+ rm -r %s\n", stateDir(tag))
		errs = append(errs, os.RemoveAll(stateDir(tag)))
	}
	return errors.Join(errs...)
}

// CleanOrphans takes down the testbeds whose owner died (a run killed
// with SIGKILL), saying so on out.
func CleanOrphans(ctx context.Context, out io.Writer) error {
	tags, err := Testbeds()
	if err != nil {
		return err
	}
	var errs []error
	for _, tag := range tags {
		st, err := ReadState(tag)
		if err != nil || !st.Orphaned() {
			continue
		}
		fmt.Fprintf(out, "# testbed %s belonged to process %d, which is gone: taking it down\n", tag, st.Owner.PID)
		errs = append(errs, Down(ctx, tag, Options{Out: out}))
	}
	return errors.Join(errs...)
}

// Status writes what exists of testbed tag: its state, its namespaces
// with their addresses, routes and qdiscs (with their counters), and the
// forwarder's statistics. With e, it first says what the experiment asks
// of each path.
func Status(ctx context.Context, tag string, e *experiment.Experiment, w io.Writer) error {
	if err := CheckTag(tag); err != nil {
		return err
	}
	if e != nil {
		for i, p := range e.Paths {
			c, s := e.Addrs(i)
			fmt.Fprintf(w, "path %d: client %v, server %v; up %s; down %s\n", i, c, s, describe(p.Up, p.RTT()), describe(p.Down, p.RTT()))
		}
	}
	st, err := ReadState(tag)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(w, "testbed %s: not up\n", tag)
	case err != nil:
		return err
	default:
		owner := "mpq testbed up (until mpq testbed down)"
		if st.Owner.PID != 0 {
			owner = fmt.Sprintf("the run of process %d", st.Owner.PID)
			if !st.Owner.Alive() {
				owner += ", which is gone"
			}
		}
		fmt.Fprintf(w, "testbed %s: %s mode, made %s by %s\n", tag, st.Mode, st.Created.Format(time.RFC3339), owner)
		if st.Mode == ModeForwarder {
			state := "not running"
			if st.Forwarder.Alive() {
				state = fmt.Sprintf("running (pid %d)", st.Forwarder.PID)
			}
			fmt.Fprintf(w, "forwarder: %s; statistics in %s\n", state, filepath.Join(stateDir(tag), StatsFile))
		}
	}
	sh := &shell{ctx: ctx, out: w}
	for _, end := range []string{"client", "router", "server"} {
		ns := tag + "-" + end
		if !nsExists(ns) {
			continue
		}
		fmt.Fprintf(w, "\n== namespace %s\n", ns)
		for _, args := range [][]string{
			{"ip", "-n", ns, "-br", "addr"},
			{"ip", "-n", ns, "rule"},
			{"tc", "-n", ns, "-s", "qdisc", "show"},
		} {
			c := exec.CommandContext(ctx, args[0], args[1:]...)
			out, err := c.CombinedOutput()
			fmt.Fprintf(w, "$ %s\n%s", shellJoin(args), out)
			if err != nil {
				fmt.Fprintf(w, "(%v)\n", err)
			}
		}
	}
	_ = sh
	if b, err := os.ReadFile(filepath.Join(stateDir(tag), StatsFile)); err == nil {
		fmt.Fprintf(w, "\n== forwarder statistics\n%s", b)
	}
	return nil
}

// describe is a link's configuration in a few words.
func describe(l experiment.Link, rtt time.Duration) string {
	s := fmt.Sprintf("rate %s delay %v", experiment.FormatRate(l.Rate), l.Delay)
	if l.Jitter > 0 {
		s += fmt.Sprintf(" jitter %v", l.Jitter)
	}
	if l.Loss > 0 {
		s += fmt.Sprintf(" loss %g%% (%s)", l.Loss*100, l.LossModel)
	}
	if l.Rate > 0 {
		s += fmt.Sprintf(" queue %d bytes", l.QueueLimit(rtt))
	}
	return s
}
