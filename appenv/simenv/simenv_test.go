package simenv_test

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/internal/echo"
	"github.com/mpq/mpq/appenv/simenv"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/network/netsim"
)

// world is a client host and a server host joined by one path.
type world struct {
	sim            *netsim.Sim
	topo           *netsim.Topology
	client, server *simenv.Host
	serverAddr     string
}

func newWorld(t *testing.T, seed uint64, spec netsim.PathSpec) *world {
	t.Helper()
	sim := netsim.New(seed)
	sim.StepLimit = 5_000_000
	topo, err := netsim.NewTopology(sim, []netsim.PathSpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	ctls, stls, err := netsim.TLSConfigs(seed, "echo")
	if err != nil {
		t.Fatal(err)
	}
	saddr := netip.AddrPortFrom(topo.Server[0], 443)
	server, err := simenv.New(topo.Net, simenv.Config{Addrs: []netip.AddrPort{saddr}, Server: &core.Config{TLS: stls}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := simenv.New(topo.Net, simenv.Config{Addrs: []netip.AddrPort{netip.AddrPortFrom(topo.Client[0], 5000)}, Client: &core.Config{TLS: ctls}})
	if err != nil {
		t.Fatal(err)
	}
	return &world{sim: sim, topo: topo, client: client, server: server, serverAddr: saddr.String()}
}

// runEcho serves echo on the server, runs cfg on the client and drives
// the simulation until the client is done, within a virtual minute.
func (w *world) runEcho(t *testing.T, cfg echo.Config) []echo.Result {
	t.Helper()
	if _, err := echo.Serve(w.server, w.serverAddr); err != nil {
		t.Fatal(err)
	}
	cfg.Addr = w.serverAddr
	var results []echo.Result
	var runErr error
	finished := false
	echo.Run(w.client, cfg, func(r []echo.Result, err error) { results, runErr, finished = r, err, true })
	if !w.sim.RunWhile(func() bool { return !finished }, netsim.Epoch.Add(time.Minute)) {
		t.Fatalf("echo unfinished at %v", w.sim.Elapsed())
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	return results
}

// 20 Mbit/s, 10 ms each way: a 20 ms round trip.
var path20ms = netsim.Symmetric(netsim.LinkConfig{Rate: 20e6, Delay: 10 * time.Millisecond})

// The echo application completes its exchanges in the simulator, with
// completion times that follow from the path, identical in every run.
func TestEcho(t *testing.T) {
	cfg := echo.Config{Sizes: []int{100, 10_000, 1_000_000, 100, 50_000}, Interval: 30 * time.Millisecond, Timeout: 10 * time.Second}
	run := func() []echo.Result {
		w := newWorld(t, 1, path20ms)
		return w.runEcho(t, cfg)
	}
	a := run()
	for i, r := range a {
		if r.Err != nil {
			t.Fatalf("exchange %d: %v", i, r.Err)
		}
		d := r.End - r.Start
		t.Logf("exchange %d: %d bytes at %v in %v", i, r.Size, r.Start, d)
		// At least a round trip and the message's transmission: the
		// server echoes as it receives, so the two directions overlap.
		min := 20*time.Millisecond + time.Duration(float64(r.Size)*8/20e6*float64(time.Second))
		if d < min || d > min+500*time.Millisecond {
			t.Errorf("exchange %d of %d bytes took %v, expected just above %v", i, r.Size, d, min)
		}
	}
	// The dial costs one round trip: the first exchange starts after it.
	if s := a[0].Start; s < 20*time.Millisecond || s > 25*time.Millisecond {
		t.Errorf("first exchange started at %v", s)
	}
	if b := run(); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("runs differ:\n%v\n%v", a, b)
	}
}

// Exchanges that cannot complete time out through cancellable timers, and
// the application still finishes.
func TestEchoTimeout(t *testing.T) {
	w := newWorld(t, 2, path20ms)
	// Black-hole the path once the handshake is done.
	w.sim.After(30*time.Millisecond, func() {
		for _, l := range w.topo.Net.Links() {
			cfg := l.Config()
			cfg.Loss = netsim.Bernoulli{P: 1}
			if err := l.SetConfig(cfg); err != nil {
				t.Error(err)
			}
		}
	})
	res := w.runEcho(t, echo.Config{Sizes: []int{1000, 1000}, Interval: 10 * time.Millisecond, Timeout: 2 * time.Second})
	for i, r := range res {
		if !errors.Is(r.Err, echo.ErrTimeout) {
			t.Errorf("exchange %d: err %v, want timeout", i, r.Err)
		}
		if d := r.End - r.Start; d != 2*time.Second {
			t.Errorf("exchange %d ended after %v", i, d)
		}
	}
}

// The environment's own guarantees: timers on the virtual clock and
// cancellation, errors for bad addresses, streams accepted before OnStream
// handed over afterwards, and the close callback.
func TestHostBasics(t *testing.T) {
	w := newWorld(t, 3, path20ms)
	var e appenv.Env = w.client
	var fired []time.Duration
	e.AfterFunc(5*time.Millisecond, func() { fired = append(fired, w.sim.Elapsed()) })
	cancel := e.AfterFunc(time.Millisecond, func() { t.Error("cancelled timer ran") })
	if !cancel() || cancel() {
		t.Error("cancel reported wrongly")
	}
	if _, err := w.server.Listen("10.9.9.9:1", func(appenv.Conn) {}); err == nil {
		t.Error("listen on a foreign address accepted")
	}
	if _, err := w.client.Listen(w.topo.Client[0].String()+":5000", func(appenv.Conn) {}); err == nil {
		t.Error("listen without server configuration accepted")
	}
	var dialErr error
	e.Dial("not an address", func(_ appenv.Conn, err error) { dialErr = err })

	var serverConn appenv.Conn
	var accepted []uint64
	var closedErr error
	l, err := w.server.Listen(w.serverAddr, func(c appenv.Conn) {
		serverConn = c
		c.OnClosed(func(err error) { closedErr = err })
	})
	if err != nil {
		t.Fatal(err)
	}
	if l.Addr() != w.serverAddr {
		t.Errorf("listener address %s", l.Addr())
	}
	var cc appenv.Conn
	e.Dial(w.serverAddr, func(c appenv.Conn, err error) {
		if err != nil {
			t.Fatal(err)
		}
		cc = c
		for range 3 {
			s, err := c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			s.Write([]byte("x"))
			s.Close()
		}
	})
	w.sim.RunFor(200 * time.Millisecond)
	if dialErr == nil {
		t.Error("dial of a bad address succeeded")
	}
	if len(fired) != 1 || fired[0] != 5*time.Millisecond {
		t.Errorf("timer fired at %v", fired)
	}
	if serverConn == nil || cc == nil {
		t.Fatal("no connection")
	}
	if cc.RemoteAddr() != w.serverAddr || serverConn.LocalAddr() != w.serverAddr || serverConn.RemoteAddr() != cc.LocalAddr() {
		t.Errorf("addresses %s %s %s %s", cc.LocalAddr(), cc.RemoteAddr(), serverConn.LocalAddr(), serverConn.RemoteAddr())
	}
	serverConn.OnStream(func(s appenv.Stream) { accepted = append(accepted, s.ID()) })
	w.sim.RunFor(time.Millisecond)
	if fmt.Sprint(accepted) != "[0 4 8]" {
		t.Errorf("accepted %v", accepted)
	}
	cc.Close(7, "bye")
	w.sim.RunFor(100 * time.Millisecond)
	if w.sim.Exhausted() {
		t.Fatal("step limit reached")
	}
	if closedErr == nil {
		t.Fatal("server saw no close")
	}
	if want := "quic: remote application error 0x7: bye"; closedErr.Error() != want {
		t.Errorf("close error %q, want %q", closedErr, want)
	}
}
