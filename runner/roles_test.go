package runner

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/scheduler"
)

// freePort returns a UDP port p of 127.0.0.1 with p+1 free too (for the
// clock protocol).
func freePort(t *testing.T) uint16 {
	t.Helper()
	for range 50 {
		a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		p := a.LocalAddr().(*net.UDPAddr).Port
		b, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p + 1})
		a.Close()
		if err == nil {
			b.Close()
			return uint16(p)
		}
	}
	t.Fatal("no free ports")
	return 0
}

const rolesDoc = `name = "roles"
duration = "2s"
seed = 5
[[path]]
rate = 0
rtt = "0s"
[[path]]
rate = 0
rtt = "0s"
[transport]
path_scheduler = "round-robin"
[[source]]
name = "prio"
kind = "periodic"
interval = "20ms"
size = "5kB"
priority = true
[[source]]
name = "rr"
kind = "request-response"
interval = "50ms"
size = 300
reply_size = "3kB"
[output]
qlog = true
`

// The two roles of a run, here in one process over loopback (a client
// with an address per path, the server with one), each write their half;
// merged, they make an ordinary run: every message of both ends'
// sources completed, data on both paths, the clock offset measured (zero
// on one host, within the probes' round trip), the traces of both ends.
func TestRolesMerge(t *testing.T) {
	e := load(t, rolesDoc)
	res, ci, cdir, sdir, out := runRoles(t, e)
	if len(ci.PathIndex) != 2 || ci.Clock == nil {
		t.Fatalf("client info %+v", ci)
	}
	if c := ci.Clock.Start; c.Replies < 16 || abs(c.OffsetMS) > c.RTTMS/2+1 {
		t.Errorf("clock at the start %+v", c)
	}
	s := res.Summary
	// Each end's receive-queue drops come through its half.
	if q := s.ReceiveQueueDropped; len(q) != 2 {
		t.Errorf("receive_queue_dropped %v: want the client's and the server's", q)
	}
	for _, src := range s.Sources {
		if src.Messages < 30 || src.Completed != src.Messages {
			t.Errorf("source %s: %d of %d completed (%v)", src.Name, src.Completed, src.Messages, src.Failures)
		}
	}
	if len(s.Paths) != 2 {
		t.Fatalf("%d paths", len(s.Paths))
	}
	for _, p := range s.Paths {
		if p.Server == nil || p.Client == nil || p.Server.StreamBytesSent == 0 || p.Client.StreamBytesSent == 0 {
			t.Errorf("path %d: server %+v client %+v", p.ID, p.Server, p.Client)
		}
	}
	for _, f := range []string{"config.resolved.toml", "summary.json", "messages.csv", "paths.csv", "throughput.csv", "clock.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	traces, _ := filepath.Glob(filepath.Join(out, "qlog", "*.sqlog"))
	var ends []string
	for _, tr := range traces {
		name := strings.TrimSuffix(filepath.Base(tr), ".sqlog")
		ends = append(ends, name[strings.LastIndexByte(name, '_')+1:])
	}
	if strings.Join(ends, ",") != "client,server" {
		t.Errorf("traces %v", traces)
	}
	// Halves of another configuration are refused.
	e2 := load(t, strings.Replace(rolesDoc, "seed = 5", "seed = 6", 1))
	if _, err := Merge(e2, cdir, sdir, out); err == nil {
		t.Error("merged halves of another configuration")
	}
}

// TestRolesDrainEndsWhenDone: a download's drain ends once it completed,
// as in the simulator, not at the end of its period: the client's own
// messages are all done, it closes the connection, and the server's drain
// ends with it. With the whole 60 s drain the run would outlast
// runRoles's 30 s.
func TestRolesDrainEndsWhenDone(t *testing.T) {
	e := load(t, `name = "download"
duration = "1s"
drain = "60s"
seed = 3
[[path]]
rate = 0
rtt = "0s"
[transport]
multipath = false
[[source]]
name = "download"
kind = "file"
size = "300kB"
count = 1
`)
	res, _, _, _, _ := runRoles(t, e)
	s := res.Summary
	if len(s.Sources) != 1 || s.Sources[0].Completed != 1 {
		t.Fatalf("sources %+v: want the download completed", s.Sources)
	}
	if s.DrainedS >= 30 {
		t.Errorf("drained %v s of the 60 s drain after the download completed", s.DrainedS)
	}
}

// runRoles runs both roles of e in this process over loopback (a client
// with an address per path, the server with one) and merges their halves
// into out.
func runRoles(t *testing.T, e *experiment.Experiment) (res *Result, ci *RoleInfo, cdir, sdir, out string) {
	t.Helper()
	port := freePort(t)
	srv := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	server := &Role{Side: "server", Listen: []netip.AddrPort{srv}, Wait: 20 * time.Second}
	var connect []netip.AddrPort
	var local []netip.Addr
	for i := range e.Paths {
		connect = append(connect, srv)
		local = append(local, netip.AddrFrom4([4]byte{127, 0, byte(i + 1), 1}))
	}
	client := &Role{Side: "client", Connect: connect, Local: local, Wait: 20 * time.Second}
	if err := OpenRole(server); err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	dir := t.TempDir()
	sdir, cdir = filepath.Join(dir, "server"), filepath.Join(dir, "client")
	for _, d := range []string{sdir, cdir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var serr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, serr = RunRole(ctx, e, server, sdir)
	}()
	ci, cerr := RunRole(ctx, e, client, cdir)
	wg.Wait()
	if serr != nil || cerr != nil {
		t.Fatalf("server: %v; client: %v", serr, cerr)
	}
	out = filepath.Join(dir, "run")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := Merge(e, cdir, sdir, out)
	if err != nil {
		t.Fatal(err)
	}
	return res, ci, cdir, sdir, out
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// unknownCopy is a test path scheduler that sends every packet on the
// first path and asks for a copy of it on a path that does not exist, so
// that every packet it schedules adds one copy dropped for an unknown
// path.
type unknownCopy struct{}

func (unknownCopy) Name() string { return "runner-test-unknown-copy" }

func (unknownCopy) Select(_ time.Time, paths []scheduler.PathInfo, _ scheduler.Work, dst []uint64) []uint64 {
	if len(paths) == 0 {
		return dst
	}
	return append(dst, paths[0].ID, 1<<40)
}

func init() {
	scheduler.RegisterPath("runner-test-unknown-copy", func() scheduler.PathScheduler { return unknownCopy{} })
}

// Each end of a two-role run counts the copies its scheduler could not
// send, and its half carries them into the merged summary: both ends
// send packets, so the merged count is more than either end's alone and
// each end's is in it.
func TestRolesCopiesDropped(t *testing.T) {
	e := load(t, strings.Replace(rolesDoc, `path_scheduler = "round-robin"`, `path_scheduler = "runner-test-unknown-copy"`, 1))
	res, _, cdir, sdir, _ := runRoles(t, e)
	s := res.Summary
	got := s.CopiesDroppedByReason[core.CopyUnknownPath]
	var ends uint64
	for _, dir := range []string{cdir, sdir} {
		h, _, err := readHalf(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := h.CopiesDropped[core.CopyUnknownPath]
		if n == 0 {
			t.Errorf("%s: no copies dropped in its half", dir)
		}
		ends += n
	}
	if got == 0 || got != ends || s.CopiesDropped != got {
		t.Errorf("copies_dropped %d, by reason %v; the halves' sum %d", s.CopiesDropped, s.CopiesDroppedByReason, ends)
	}
}
