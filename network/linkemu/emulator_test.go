package linkemu

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

// udp opens a socket on a loopback address.
func udp(t testing.TB, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Bursts must not overflow the kernel's default buffer while the
	// test reads.
	c.SetReadBuffer(4 << 20)
	return c
}

func addrOf(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// recvAll reads datagrams until want arrived or the socket stayed silent
// for quiet; it returns them with their sources.
func recvAll(t testing.TB, c *net.UDPConn, want int, quiet time.Duration) ([][]byte, []netip.AddrPort) {
	t.Helper()
	var got [][]byte
	var from []netip.AddrPort
	buf := make([]byte, 1<<16)
	for len(got) < want {
		c.SetReadDeadline(time.Now().Add(quiet))
		n, a, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			t.Fatal(err)
		}
		got = append(got, append([]byte(nil), buf[:n]...))
		from = append(from, a)
	}
	return got, from
}

// emulatorGoroutines lists the goroutines running the emulator's code.
func emulatorGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "linkemu.(*Emulator).read") || strings.Contains(g, "linkemu.(*Emulator).run") {
			out = append(out, g)
		}
	}
	return out
}

// checkNoLeak fails if emulator goroutines outlive Close. Close waits for
// them, but a goroutine that signalled the wait group may not have
// returned yet, so the check yields to the scheduler a bounded number of
// times.
func checkNoLeak(t *testing.T) {
	t.Helper()
	var left []string
	for range 1000 {
		if left = emulatorGoroutines(); len(left) == 0 {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("%d emulator goroutines after Close:\n%s", len(left), strings.Join(left, "\n\n"))
}

// eventually waits, boundedly, until cond holds: for counters that
// another goroutine updates after a datagram was read.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("condition not met within 5 s")
		}
	}
}

func start(t *testing.T, cfg Config) *Emulator {
	t.Helper()
	e, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Datagrams cross a path both ways, in order, from distinct addresses per
// path; with loss 1 none arrive and every one is counted lost.
func TestForward(t *testing.T) {
	tests := []struct {
		name string
		loss float64
	}{
		{"lossless", 0},
		{"all lost", 1},
	}
	const n = 200
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := udp(t, "127.0.0.1:0")
			client := udp(t, "127.0.0.1:0")
			link := experiment.Link{Rate: 50e6, Delay: 2 * time.Millisecond, QueueBytes: 1 << 20, Loss: tt.loss, LossModel: "bernoulli", Jitter: time.Millisecond}
			paths := []experiment.Path{{Up: link, Down: link}, {Up: link, Down: link}}
			e := start(t, Config{Paths: paths, Server: addrOf(server), Seed: 1})
			if e.Front(0) == e.Front(1) || e.Back(0).Addr() == e.Back(1).Addr() {
				t.Fatalf("paths share addresses: fronts %v %v, backs %v %v", e.Front(0), e.Front(1), e.Back(0), e.Back(1))
			}
			quiet := 300 * time.Millisecond
			if tt.loss == 1 {
				quiet = 100 * time.Millisecond
			}
			for p := range 2 {
				for i := range n {
					b := make([]byte, 100+i)
					binary.BigEndian.PutUint32(b, uint32(i))
					if _, err := client.WriteToUDPAddrPort(b, e.Front(p)); err != nil {
						t.Fatal(err)
					}
				}
				up, from := recvAll(t, server, n, quiet)
				checkSeq(t, up, n, tt.loss)
				for _, a := range from {
					if a != e.Back(p) {
						t.Fatalf("path %d: server received from %v, want %v", p, a, e.Back(p))
					}
				}
				if tt.loss == 1 {
					// Nothing reached the server; answer from its address
					// anyway so that the down link has traffic.
					from = []netip.AddrPort{e.Back(p)}
				}
				for i := range n {
					b := make([]byte, 500)
					binary.BigEndian.PutUint32(b, uint32(i))
					if _, err := server.WriteToUDPAddrPort(b, from[0]); err != nil {
						t.Fatal(err)
					}
				}
				down, dfrom := recvAll(t, client, n, quiet)
				checkSeq(t, down, n, tt.loss)
				for _, a := range dfrom {
					if a != e.Front(p) {
						t.Fatalf("path %d: client received from %v, want %v", p, a, e.Front(p))
					}
				}
			}
			// Counters are final once Close returned.
			e.Close()
			checkNoLeak(t)
			for p, s := range e.Stats() {
				for dir, ls := range map[string]LinkStats{"up": s.Up, "down": s.Down} {
					want := LinkStats{Sent: n, Delivered: n}
					if tt.loss == 1 {
						want = LinkStats{Sent: n, DroppedLoss: n}
					}
					if ls.Sent != want.Sent || ls.Delivered != want.Delivered || ls.DroppedLoss != want.DroppedLoss ||
						ls.DroppedQueue != 0 || ls.DroppedOverflow != 0 || ls.Unroutable != 0 || ls.WriteErrors != 0 || ls.InFlight != 0 {
						t.Errorf("path %d %s: %+v", p, dir, ls)
					}
				}
				t.Logf("path %d: up late mean %v max %v, down late mean %v max %v", p, s.Up.LateMean, s.Up.LateMax, s.Down.LateMean, s.Down.LateMax)
			}
		})
	}
}

// checkSeq checks that datagrams numbered 0..n-1 arrived all and in order
// (none with loss 1).
func checkSeq(t *testing.T, got [][]byte, n int, loss float64) {
	t.Helper()
	if loss == 1 {
		if len(got) != 0 {
			t.Fatalf("%d datagrams crossed a link that loses all", len(got))
		}
		return
	}
	if len(got) != n {
		t.Fatalf("%d of %d datagrams arrived", len(got), n)
	}
	for i, b := range got {
		if seq := binary.BigEndian.Uint32(b); seq != uint32(i) {
			t.Fatalf("datagram %d is number %d: reordered", i, seq)
		}
	}
}

// Odd datagrams neither crash the emulator nor stop it: empty ones, the
// largest UDP payload, datagrams from strangers on the back socket, and
// server datagrams before the client sent anything.
func TestOddDatagrams(t *testing.T) {
	server := udp(t, "127.0.0.1:0")
	client := udp(t, "127.0.0.1:0")
	stranger := udp(t, "127.0.0.1:0")
	link := experiment.Link{Delay: time.Millisecond}
	e := start(t, Config{Paths: []experiment.Path{{Up: link, Down: link}}, Server: addrOf(server), Seed: 1})

	// Before the client spoke, the server's datagram has nowhere to go;
	// a stranger's is ignored.
	server.WriteToUDPAddrPort([]byte("early"), e.Back(0))
	stranger.WriteToUDPAddrPort([]byte("not the server"), e.Back(0))
	eventually(t, func() bool { s := e.Stats()[0]; return s.Down.Unroutable == 1 && s.Down.Foreign == 1 })
	sizes := []int{0, 1, 65507, 1350}
	for _, s := range sizes {
		if _, err := client.WriteToUDPAddrPort(make([]byte, s), e.Front(0)); err != nil {
			t.Fatalf("size %d: %v", s, err)
		}
	}
	got, from := recvAll(t, server, len(sizes), 2*time.Second)
	if len(got) != len(sizes) {
		t.Fatalf("server got %d datagrams", len(got))
	}
	for i, b := range got {
		if len(b) != sizes[i] {
			t.Errorf("datagram %d: %d bytes, want %d", i, len(b), sizes[i])
		}
	}
	server.WriteToUDPAddrPort(make([]byte, 65507), from[0])
	if back, _ := recvAll(t, client, 1, 2*time.Second); len(back) != 1 || len(back[0]) != 65507 {
		t.Fatalf("client got %d datagrams back", len(back))
	}
	e.Close()
	e.Close()
	checkNoLeak(t)
	if s := e.Stats()[0]; s.Down.Unroutable != 1 || s.Down.Foreign != 1 || s.Down.Delivered != 1 || s.Up.Delivered != uint64(len(sizes)) {
		t.Errorf("stats %+v", s)
	}
}

// What the emulator holds for a link is bounded: beyond the bound
// datagrams are dropped as overflow, and Close drops what is held.
func TestOverflow(t *testing.T) {
	server := udp(t, "127.0.0.1:0")
	client := udp(t, "127.0.0.1:0")
	link := experiment.Link{Delay: time.Hour}
	e := start(t, Config{Paths: []experiment.Path{{Up: link, Down: link}}, Server: addrOf(server), MaxInFlightPackets: 10, MaxInFlightBytes: 1 << 20})
	const n = 50
	for range n {
		client.WriteToUDPAddrPort(make([]byte, 100), e.Front(0))
	}
	eventually(t, func() bool { return e.Stats()[0].Up.Sent == n })
	if s := e.Stats()[0]; s.Up.Sent != n || s.Up.InFlight != 10 || s.Up.DroppedOverflow != n-10 {
		t.Fatalf("stats %+v", s.Up)
	}
	e.Close()
	checkNoLeak(t)
}

func TestStartErrors(t *testing.T) {
	taken := udp(t, "127.0.0.1:0")
	link := experiment.Link{Rate: 1e6}
	one := []experiment.Path{{Up: link, Down: link}}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no paths", Config{Server: addrOf(taken)}},
		{"too many paths", Config{Paths: make([]experiment.Path, 255), Server: addrOf(taken)}},
		{"no server", Config{Paths: one}},
		{"bad link", Config{Paths: []experiment.Path{{Up: experiment.Link{Rate: -1}}}, Server: addrOf(taken)}},
		{"address in use", Config{Paths: one, Server: addrOf(taken), FrontAddr: func(int) netip.AddrPort { return addrOf(taken) }}},
		{"second path's address in use", Config{Paths: append(one, one...), Server: addrOf(taken),
			BackAddr: func(i int) netip.AddrPort {
				if i == 1 {
					return addrOf(taken)
				}
				return netip.MustParseAddrPort("127.0.0.1:0")
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if e, err := Start(tt.cfg); err == nil {
				e.Close()
				t.Fatal("started")
			}
			checkNoLeak(t)
		})
	}
}
