package netns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/internal/schedlag"
	"golang.org/x/sys/unix"
)

// The test binary is also the forwarder of the tests' testbeds: with
// MPQ_NETNS_TEST_FORWARDER=1 it runs Forward on the --state directory it
// is given, as "mpq testbed forward" does.
func TestMain(m *testing.M) {
	if os.Getenv("MPQ_NETNS_TEST_FORWARDER") == "1" {
		dir := ""
		for i, a := range os.Args {
			if a == "--state" && i+1 < len(os.Args) {
				dir = os.Args[i+1]
			}
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := Forward(ctx, dir)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// needRoot skips a test that needs root (CI runs as root).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates network namespaces (CI runs as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
}

// testTag names a test's testbed after the process and the test, so that
// parallel runs of the tests never share one.
func testTag(t *testing.T, short string) string {
	return fmt.Sprintf("t%d-%s", os.Getpid(), short)
}

// upForwarder brings a testbed up in forwarder mode with the test binary
// as the forwarder, and takes it down at the end of the test.
func upForwarder(t *testing.T, doc, short string) (*Topology, *State) {
	t.Helper()
	runs, err := experiment.Parse("t.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := FromExperiment(&runs[0], testTag(t, short), ModeForwarder)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MPQ_NETNS_TEST_FORWARDER", "1")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := Up(ctx, topo, Options{Out: &out, Owner: Self(), Attached: true, Forwarder: []string{os.Args[0]}})
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out.String())
	}
	t.Cleanup(func() {
		if err := Down(context.Background(), topo.Tag, Options{}); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	return topo, st
}

// inNetns runs f on a thread in namespace ns, so that the sockets f opens
// belong to it.
func inNetns(t *testing.T, ns string, f func()) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		t.Fatalf("setns %s: %v", ns, err)
	}
	f()
	if e := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); e != nil {
		// The thread is in the wrong namespace: let it die with the
		// goroutine instead of returning it to the runtime.
		t.Fatalf("setns back: %v", e)
	}
	runtime.UnlockOSThread()
}

// leftovers lists what of testbed tag exists: namespaces, its state,
// and processes whose command line names it.
func leftovers(tag string) []string {
	var out []string
	for _, end := range []string{"client", "server", "router"} {
		if nsExists(tag + "-" + end) {
			out = append(out, "namespace "+tag+"-"+end)
		}
	}
	if _, err := os.Stat(stateDir(tag)); err == nil {
		out = append(out, "state "+stateDir(tag))
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(stateDir(tag))) && !zombie(pidOf(p)) {
			out = append(out, "process "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func pidOf(cmdlinePath string) int {
	var pid int
	fmt.Sscanf(filepath.Base(filepath.Dir(cmdlinePath)), "%d", &pid)
	return pid
}

const twoPaths = `name = "t"
seed = 2
[[path]]
rate = "50Mbit"
rtt = "20ms"
[[path]]
rate = "50Mbit"
rtt = "60ms"
jitter = "1ms"
[[source]]
name = "s"
kind = "bulk"
`

// echoRTTs sends n datagrams from the client's address from to the
// server's address to (an echo server in the server's namespace) one at a
// time and returns their round trips.
func echoRTTs(t *testing.T, topo *Topology, from, to string, n int) []time.Duration {
	t.Helper()
	cli, dst, done := echoSockets(t, topo, from, to)
	defer done()
	var rtts []time.Duration
	buf := make([]byte, 2048)
	for i := range n {
		start := time.Now()
		if _, err := cli.WriteToUDP([]byte(fmt.Sprintf("ping %d", i)), dst); err != nil {
			t.Fatal(err)
		}
		cli.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := cli.Read(buf); err != nil {
			t.Fatalf("echo %d from %s to %s: %v", i, from, to, err)
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts
}

// echoLost sends n datagrams as echoRTTs does and counts those whose echo
// did not come back within wait.
func echoLost(t *testing.T, topo *Topology, from, to string, n int, wait time.Duration) int {
	t.Helper()
	cli, dst, done := echoSockets(t, topo, from, to)
	defer done()
	lost := 0
	buf := make([]byte, 2048)
	for i := range n {
		if _, err := cli.WriteToUDP([]byte(fmt.Sprintf("ping %d", i)), dst); err != nil {
			t.Fatal(err)
		}
		cli.SetReadDeadline(time.Now().Add(wait))
		if _, err := cli.Read(buf); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			lost++
		}
	}
	return lost
}

// echoSockets starts an echo server on port 7007 of the server's
// namespace and opens the client's socket on address from; done closes
// both. dst is the echo server at address to.
func echoSockets(t *testing.T, topo *Topology, from, to string) (cli *net.UDPConn, dst *net.UDPAddr, done func()) {
	t.Helper()
	var srv *net.UDPConn
	var err error
	inNetns(t, topo.Server(), func() { srv, err = net.ListenUDP("udp", &net.UDPAddr{Port: 7007}) })
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			k, a, err := srv.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			srv.WriteToUDPAddrPort(buf[:k], a)
		}
	}()
	inNetns(t, topo.Client(), func() { cli, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)}) })
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	return cli, &net.UDPAddr{IP: net.ParseIP(to), Port: 7007}, func() { cli.Close(); srv.Close() }
}

// keepsTime reports whether the machine keeps time within tolerance now
// (package schedlag); if not, it says so: a late figure then says nothing
// of the forwarder, and the test does not fail on it. Figures below their
// bounds (early packets) always fail.
func keepsTime(t *testing.T, tolerance time.Duration) bool {
	t.Helper()
	busy, lag := schedlag.Busy(tolerance)
	if busy {
		t.Logf("the machine is too busy to check a real-time bound of %v: its sleeps wake %v late (median); not failing on it", tolerance, lag)
	}
	return !busy
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }

// quantile is the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(q*float64(len(s)-1)+0.5)]
}

// Through the forwarder a datagram takes the path of its client address,
// whichever server address it goes to, and its round trip is the path's:
// never less, and in the first quartile at most a millisecond more than
// the path's plus its mean jitter (a quartile, not the median, so that a
// loaded machine's stalls do not fail the test) (1 ms on path 1: uniform on [0, 1 ms) each
// way). down removes everything, and again does nothing.
func TestForwarderPaths(t *testing.T) {
	needRoot(t)
	topo, st := upForwarder(t, twoPaths, "paths")
	if st.Mode != ModeForwarder || !st.Forwarder.Alive() {
		t.Fatalf("state %+v", st)
	}
	for _, tc := range []struct {
		from, to string
		rtt      time.Duration
		jitter   time.Duration // the mean of both directions' jitter
	}{
		{"10.0.0.1", "10.0.0.2", 20 * time.Millisecond, 0},
		{"10.1.0.1", "10.1.0.2", 60 * time.Millisecond, time.Millisecond},
		{"10.1.0.1", "10.0.0.2", 60 * time.Millisecond, time.Millisecond}, // path 1, by its source
		{"10.0.0.1", "10.1.0.2", 20 * time.Millisecond, 0},
	} {
		// On a machine busy with other work the echoes can be late (never
		// early): up to three tries of 15 to see the path's round trip.
		var q time.Duration
		for try := range 3 {
			rtts := echoRTTs(t, topo, tc.from, tc.to, 15)
			for _, r := range rtts {
				if r < tc.rtt {
					t.Errorf("%s -> %s: a round trip of %v, below the path's %v", tc.from, tc.to, r, tc.rtt)
				}
			}
			q = quantile(rtts, 0.25)
			t.Logf("%s -> %s (try %d): first quartile %v, median %v (path %v)", tc.from, tc.to, try+1, q, median(rtts), tc.rtt)
			if q <= tc.rtt+tc.jitter+time.Millisecond {
				break
			}
		}
		if q > tc.rtt+tc.jitter+time.Millisecond && keepsTime(t, time.Millisecond) {
			t.Errorf("%s -> %s: first quartile of the round trips %v, want %v (+ jitter %v + 1 ms)", tc.from, tc.to, q, tc.rtt, tc.jitter)
		}
	}
	// Every echo went over the path of its client address, and nothing
	// else (no ARP, no IPv6); nothing was lost.
	if err := StopForwarder(topo.Tag); err != nil {
		t.Fatal(err)
	}
	var stats []struct {
		Path     int `json:"path"`
		Up, Down struct {
			Sent, Delivered, Foreign uint64
		}
	}
	b, err := os.ReadFile(filepath.Join(stateDir(topo.Tag), StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &stats); err != nil {
		t.Fatal(err)
	}
	for _, p := range stats {
		if p.Up.Sent < 30 || p.Up.Sent%15 != 0 || p.Up.Delivered != p.Up.Sent || p.Down.Sent != p.Up.Sent ||
			p.Down.Delivered != p.Up.Sent || p.Up.Foreign+p.Down.Foreign != 0 {
			t.Errorf("path %d: %+v", p.Path, p)
		}
	}
	var out bytes.Buffer
	if err := Down(context.Background(), topo.Tag, Options{Out: &out}); err != nil {
		t.Fatal(err)
	}
	if l := leftovers(topo.Tag); len(l) > 0 {
		t.Fatalf("left behind: %v", l)
	}
	out.Reset()
	if err := Down(context.Background(), topo.Tag, Options{Out: &out}); err != nil || out.Len() != 0 {
		t.Fatalf("second down: %v, %q", err, out.String())
	}
}

const tcpPath = `name = "tcp"
seed = 3
[[path]]
rate = "20Mbit"
rtt = "30ms"
[[source]]
name = "s"
kind = "bulk"
`

// TCP through the forwarder (Go's net package in the two namespaces)
// sees the path's round trip and rate: connecting takes one round trip
// (the quickest of four, up to 10 ms more on a loaded machine), a small request and its answer
// one more (never less; the first quartile within 1 ms), and a 4 s
// transfer gets the link's rate less the headers (1448 payload bytes in
// each 1514-byte frame) and slow start: 85 to 102 % of it.
func TestTCPThroughForwarder(t *testing.T) {
	needRoot(t)
	topo, _ := upForwarder(t, tcpPath, "tcp")
	const rtt, rate = 30 * time.Millisecond, 20e6
	var ln net.Listener
	var err error
	inNetns(t, topo.Server(), func() { ln, err = net.Listen("tcp", "10.0.0.2:7008") })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const pings, connects = 10, 3
	type transfer struct {
		bytes       int
		first, last time.Time
	}
	received := make(chan transfer, 1)
	go func() {
		var tr transfer
		defer func() { received <- tr }()
		var c net.Conn
		for i := range connects + 1 { // the connect probes, then the transfer's
			var err error
			if c, err = ln.Accept(); err != nil {
				return
			}
			if i < connects {
				c.Close()
			}
		}
		defer c.Close()
		b := make([]byte, 64<<10)
		for range pings {
			if _, err := io.ReadFull(c, b[:1]); err != nil {
				return
			}
			c.Write(b[:1])
		}
		for {
			n, err := c.Read(b)
			if n > 0 {
				if tr.bytes == 0 {
					tr.first = time.Now()
				}
				tr.bytes += n
				tr.last = time.Now()
			}
			if err != nil {
				return
			}
		}
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("10.0.0.1")}, Timeout: 5 * time.Second}
	// Connecting takes one round trip: the quickest of three tries (a
	// single one may meet a stall of a busy machine).
	var c net.Conn
	connect := time.Hour
	for i := range connects + 1 {
		if i > 0 {
			c.Close()
		}
		start := time.Now()
		inNetns(t, topo.Client(), func() { c, err = d.Dial("tcp", "10.0.0.2:7008") })
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < connect {
			connect = d
		}
		if d := time.Since(start); d < rtt {
			t.Errorf("connected in %v, less than a round trip of %v", d, rtt)
		}
	}
	defer c.Close()
	var rtts []time.Duration
	b := make([]byte, 1)
	for range pings {
		s := time.Now()
		c.Write(b)
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		rtts = append(rtts, time.Since(s))
	}
	if connect < rtt || connect > rtt+10*time.Millisecond && keepsTime(t, 10*time.Millisecond) {
		t.Errorf("connect took %v, want one round trip of %v", connect, rtt)
	}
	for _, r := range rtts {
		if r < rtt {
			t.Errorf("a request round trip of %v, below the path's %v", r, rtt)
		}
	}
	if q := quantile(rtts, 0.25); q > rtt+time.Millisecond && keepsTime(t, time.Millisecond) {
		t.Errorf("first quartile of the request round trips %v, want %v (+1 ms)", q, rtt)
	}
	buf := make([]byte, 64<<10)
	const dur = 4 * time.Second
	c.SetWriteDeadline(time.Now().Add(dur))
	for {
		if _, err := c.Write(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			t.Fatal(err)
		}
	}
	c.Close()
	// The receiver's rate, from its first byte to its last, against the
	// payload rate of the link, which charges a TCP segment's IP payload
	// (ChargedBytes): 1448 bytes of data in 1480 (TCP's header with
	// timestamps, 32 bytes).
	tr := <-received
	got := float64(tr.bytes) * 8 / tr.last.Sub(tr.first).Seconds()
	payload := rate * 1448 / 1480
	t.Logf("connect %v, request rtt %v, goodput %.2f Mbit/s (payload rate %.2f)", connect, median(rtts), got/1e6, payload/1e6)
	if got > 1.02*payload || got < 0.85*payload && keepsTime(t, time.Millisecond) {
		t.Errorf("goodput %.2f Mbit/s, want about %.2f", got/1e6, payload/1e6)
	}
}

// A testbed whose owner died (a run killed with SIGKILL) is removed by the
// next Up, with everything it had.
func TestOrphansCleaned(t *testing.T) {
	needRoot(t)
	dead := exec.Command("true")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	owner := procOf(dead.Process.Pid)
	dead.Wait()
	runs, _ := experiment.Parse("t.toml", []byte(twoPaths), nil)
	topo, _ := FromExperiment(&runs[0], testTag(t, "orphan"), ModeForwarder)
	t.Setenv("MPQ_NETNS_TEST_FORWARDER", "1")
	var out bytes.Buffer
	// The testbed is built for this (living) process and only then handed
	// to the dead one: every Up cleans orphans, so the tests of other
	// packages running at the same time would otherwise take it down while
	// it is being built.
	st, err := Up(context.Background(), topo, Options{Out: &out, Owner: Self(), Forwarder: []string{os.Args[0]}})
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out.String())
	}
	defer Down(context.Background(), topo.Tag, Options{})
	if l := leftovers(topo.Tag); len(l) != 5 {
		t.Fatalf("the testbed has %v", l)
	}
	st.Owner = owner
	if err := writeState(st); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := CleanOrphans(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "# testbed "+topo.Tag+" belonged to process") {
		t.Errorf("cleaning said %q", out.String())
	}
	if l := leftovers(topo.Tag); len(l) > 0 {
		t.Fatalf("left behind: %v", l)
	}
	if _, err := ReadState(topo.Tag); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state: %v", err)
	}
}

// down stops what still runs in the testbed's namespaces (it would keep
// them, and their veths, alive) before it removes them.
func TestDownStopsProcesses(t *testing.T) {
	needRoot(t)
	topo, _ := upForwarder(t, tcpPath, "procs")
	sleeper := exec.Command("ip", "netns", "exec", topo.Client(), "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { sleeper.Wait(); close(exited) }()
	var out bytes.Buffer
	if err := Down(context.Background(), topo.Tag, Options{Out: &out}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		sleeper.Process.Kill()
		t.Fatalf("a process in the client's namespace outlived down:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "# stopping the processes in "+topo.Client()) {
		t.Errorf("down said:\n%s", out.String())
	}
	if l := leftovers(topo.Tag); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}
