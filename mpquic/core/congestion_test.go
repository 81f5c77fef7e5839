package core

import (
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
)

// TestControllerPacing: a controller that sets its own pacing rate (bbr)
// gets a pacer on every path whatever Pacing says; the others only with
// Pacing. Coupled controllers of one connection share its group.
func TestControllerPacing(t *testing.T) {
	for _, tc := range []struct {
		cc        string
		pacing    bool
		wantPacer bool
	}{{"bbr", false, true}, {"bbr", true, true}, {"newreno", false, false}, {"cubic", true, true}, {"olia", false, false}} {
		cc, sc := testConfigs(t)
		cc.Congestion, sc.Congestion = tc.cc, tc.cc
		cc.Pacing, sc.Pacing = tc.pacing, tc.pacing
		p := newPair(t, cc, sc, EndpointConfig{})
		p.handshake()
		for _, c := range []*Conn{p.client, p.server} {
			path := c.paths[0]
			if (path.pacer != nil) != tc.wantPacer {
				t.Errorf("%s, pacing %v: pacer %v, want %v", tc.cc, tc.pacing, path.pacer != nil, tc.wantPacer)
			}
			if (path.rater != nil) != (tc.cc == "bbr") {
				t.Errorf("%s: the path takes its pacing rate from the controller: %v", tc.cc, path.rater != nil)
			}
			if tc.cc == "olia" && c.ccGroup.Len() != 1 {
				t.Errorf("olia: group of %d controllers, want 1", c.ccGroup.Len())
			}
		}
	}
}

// TestPacingBurstConfig: the paths' pacers take their burst from
// PacingBurst: after a second at 100 MB/s a 1 ms burst is 100,000 bytes,
// none 10 datagrams of 1350 bytes.
func TestPacingBurstConfig(t *testing.T) {
	for _, tc := range []struct {
		burst time.Duration
		want  uint64
	}{{time.Millisecond, 100_000}, {0, 13_500}, {-1, 13_500}} {
		cc, sc := testConfigs(t)
		cc.Pacing, sc.Pacing = true, true
		cc.PacingBurst, sc.PacingBurst = tc.burst, tc.burst
		p := newPair(t, cc, sc, EndpointConfig{})
		p.handshake()
		pc := p.server.paths[0].pacer
		pc.SetBytesPerSecond(100_000_000)
		if b := pc.Budget(p.now.Add(time.Second)); b != tc.want {
			t.Errorf("PacingBurst %v: burst %d, want %d", tc.burst, b, tc.want)
		}
	}
}

// TestCoupledGroupFollowsPaths: with olia, each path's controller joins
// the connection's group when the path opens and leaves it when the path
// is abandoned, so the coupled increase counts the open paths only.
func TestCoupledGroupFollowsPaths(t *testing.T) {
	cc, sc := testConfigs(t)
	cc.Congestion, sc.Congestion = "olia", "olia"
	p := newPair(t, cc, sc, EndpointConfig{})
	openSecondPath(t, p)
	if n := p.server.ccGroup.Len(); n != 2 {
		t.Fatalf("two paths: the server's group has %d controllers", n)
	}
	if err := p.client.AbandonPath(0, 0); err != nil {
		t.Fatal(err)
	}
	p.runUntil(func() bool { return p.server.ccGroup.Len() == 1 && p.client.ccGroup.Len() == 1 }, 5*time.Second)
	if p.server.ccGroup.Len() != 1 || p.client.ccGroup.Len() != 1 {
		t.Fatalf("path 0 abandoned: groups of %d and %d controllers, want 1", p.server.ccGroup.Len(), p.client.ccGroup.Len())
	}
}

// TestControllerPaced: the controllers learn whether their path is paced
// (congestion.Config.Paced), which lifts HyStart++'s per-ACK growth limit
// (RFC 9406 Section 4.3).
func TestControllerPaced(t *testing.T) {
	for _, pacing := range []bool{false, true} {
		cfg := Config{MaxPacketSize: 1350, Pacing: pacing}
		if got := cfg.congestionConfig(nil).Paced; got != pacing {
			t.Errorf("Pacing %v: congestion.Config.Paced %v", pacing, got)
		}
	}
}

// appLimitedProbe is NewReno, its window capped at cap bytes when cap is
// set (so that a bulk transfer fills it), that records the connection's
// OnAppLimited calls (congestion.AppLimitedObserver) with the window at
// each, and calls check at each when set.
type appLimitedProbe struct {
	*congestion.NewReno
	cap   uint64
	calls []appLimitedCall
	check func()
}

type appLimitedCall struct{ inFlight, window uint64 }

func (a *appLimitedProbe) Window() uint64 {
	if a.cap > 0 {
		return min(a.NewReno.Window(), a.cap)
	}
	return a.NewReno.Window()
}

func (a *appLimitedProbe) OnAppLimited(inFlight uint64) {
	a.calls = append(a.calls, appLimitedCall{inFlight, a.Window()})
	if a.check != nil {
		a.check()
	}
}

func init() {
	congestion.Register("test-app-limited", func(cfg congestion.Config) (congestion.Controller, error) {
		return &appLimitedProbe{NewReno: congestion.NewNewReno(cfg, false), cap: 8 * 1350}, nil
	})
	congestion.Register("test-app-limited-wide", func(cfg congestion.Config) (congestion.Controller, error) {
		return &appLimitedProbe{NewReno: congestion.NewNewReno(cfg, false)}, nil
	})
}

// TestAppLimitedMarked: a controller that wants to know
// (congestion.AppLimitedObserver, bbr) is told when its path could have
// sent a full-size packet and the connection had nothing for it: once
// the handshake is over and the client has nothing to send, and in a
// 2 MB upload only when the window had room (bytes in flight plus a
// full-size packet within it, the calls' own record), never while the
// window (capped at 8 datagrams) is full.
func TestAppLimitedMarked(t *testing.T) {
	cc, sc := testConfigs(t)
	cc.Congestion, sc.Congestion = "test-app-limited", "test-app-limited"
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	probe := p.client.paths[0].cc.(*appLimitedProbe)
	if len(probe.calls) == 0 {
		t.Fatal("after the handshake the client has nothing to send: no OnAppLimited call")
	}
	before := len(probe.calls)
	p.transfer(p.client, p.server, randomBytes(2<<20, 7), 30*time.Second)
	full, size := 0, uint64(p.client.maxPacketSize(p.client.paths[0]))
	for _, c := range probe.calls[before:] {
		if c.inFlight+size > c.window {
			full++
		}
	}
	if full > 0 || len(probe.calls) == before {
		t.Fatalf("upload: %d OnAppLimited calls, %d of them with the window full", len(probe.calls)-before, full)
	}
	t.Logf("%d calls after the handshake, %d in and after the upload", before, len(probe.calls)-before)
}

// TestAppLimitedNotFlowBlocked: data that the peer's flow control holds
// back is not application limited (Linux's receive-window-limited state
// is not either). The server's windows fixed at 32 KiB, a 300 KiB upload
// that the client's send buffer takes whole: no OnAppLimited call while
// the upload has data not yet sent, though the window soon exceeds
// what flow control lets out; calls once all of it is sent.
func TestAppLimitedNotFlowBlocked(t *testing.T) {
	cc, sc := testConfigs(t)
	cc.Congestion, sc.Congestion = "test-app-limited-wide", "test-app-limited-wide"
	sc.InitialStreamWindow, sc.MaxStreamWindow = 32<<10, 32<<10
	sc.InitialConnWindow, sc.MaxConnWindow = 32<<10, 32<<10
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	probe := p.client.paths[0].cc.(*appLimitedProbe)
	var unsent, calls int
	probe.check = func() {
		calls++
		for _, s := range p.client.streams.m {
			if s.send != nil && s.send.HasPendingData() {
				unsent++
				return
			}
		}
	}
	p.transfer(p.client, p.server, randomBytes(300<<10, 9), 30*time.Second)
	t.Logf("%d OnAppLimited calls in the upload, %d with data unsent; window %d", calls, unsent, probe.Window())
	if unsent > 0 || calls == 0 {
		t.Fatalf("%d OnAppLimited calls, %d of them while flow control held data back; want some, none of them", calls, unsent)
	}
}

// TestWriteShortCleared: an application whose last write was short has
// more to send than the buffer takes (writerWaiting), until a write that
// fits, Close, or the end of its sending: CancelWrite, or the peer's
// STOP_SENDING. After those the connection can be application limited
// again.
func TestWriteShortCleared(t *testing.T) {
	for _, end := range []string{"fits", "close", "cancel", "stop-sending"} {
		t.Run(end, func(t *testing.T) {
			cc, sc := testConfigs(t)
			p := newPair(t, cc, sc, EndpointConfig{})
			p.handshake()
			s, err := p.client.OpenStream(true)
			if err != nil {
				t.Fatal(err)
			}
			big := make([]byte, 8<<20)
			if n, _ := s.Write(big); n == len(big) {
				t.Fatalf("a write of %d bytes was not short", len(big))
			}
			if !p.client.writerWaiting() {
				t.Fatal("after a short write: no writer waiting")
			}
			switch end {
			case "fits":
				_, err = s.Write(nil)
			case "close":
				err = s.Close()
			case "cancel":
				s.CancelWrite(7)
			case "stop-sending":
				p.flush()
				p.runUntil(func() bool { return p.server.AcceptStream() != nil }, time.Second)
				ss := p.server.streams.m[s.ID()].handle
				ss.CancelRead(7)
				p.runUntil(func() bool { return !p.client.writerWaiting() }, 2*time.Second)
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.client.writerWaiting() {
				t.Errorf("after %s: a writer still counted as waiting", end)
			}
		})
	}
}
