package congestion

import (
	"math"
	"strings"
	"testing"
	"time"
)

// readingsController builds controller name with the readings r, its
// window w datagrams and its initial slow start over (ssthresh = cwnd).
func readingsController(t *testing.T, name string, cfg Config, w float64) Controller {
	t.Helper()
	cfg.MaxDatagramSize = mds
	c, err := New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	switch x := c.(type) {
	case *NewReno:
		x.hs.stop()
		x.cwnd = uint64(w * mds)
		x.ssthresh = x.cwnd
	case *Cubic:
		x.hs.stop()
		x.cwnd = w * mds
		x.ssthresh = uint64(x.cwnd)
	}
	return c
}

// TestEmulatedConnectionsBackoff: a congestion event at a window of 100
// datagrams multiplies it by (N-1+β)/N: newreno with N = 2, β = 0.5:
// 0.75, 75 datagrams; MPQUIC's Reno and OLIA (N = 2, β = 0.7): 0.85, 85;
// cubic with N = 2 (β_cubic 0.7): 0.85, 85, and W_max 100; without
// readings 50, 50 and 70. balia with N = 2 takes (N-1+f)/N of the window,
// f its own factor: at 10 datagrams and 100 ms beside 20 at 50 ms, f =
// 1 - 1.5/2 = 0.25, so 0.625: 6.25 datagrams, 8437 bytes (3375 alone).
func TestEmulatedConnectionsBackoff(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want uint64
	}{
		{"newreno", Config{}, 50 * mds},
		{"newreno", Config{EmulatedConnections: 2}, 75 * mds},
		{"newreno", Config{EmulatedConnections: 2, LossReduction: 0.7}, 85 * mds},
		{"newreno", Config{LossReduction: 0.7}, 70 * mds},
		{"olia", Config{EmulatedConnections: 2, LossReduction: 0.7}, 85 * mds},
		{"lia", Config{EmulatedConnections: 2}, 75 * mds},
		{"cubic", Config{}, 70 * mds},
		{"cubic", Config{EmulatedConnections: 2}, 85 * mds},
		{"cubic", Config{EmulatedConnections: 4}, uint64(math.Floor(100 * (3 + 0.7) / 4 * mds))},
	} {
		c := readingsController(t, tc.name, tc.cfg, 100)
		c.OnCongestionEvent(t0, t0.Add(-time.Millisecond))
		if c.Window() != tc.want || c.SlowStartThreshold() != tc.want {
			t.Errorf("%s %+v: window %d ssthresh %d after a loss at 100 datagrams, want %d", tc.name, tc.cfg, c.Window(), c.SlowStartThreshold(), tc.want)
		}
		if cu, ok := c.(*Cubic); ok && cu.wMax != 100 {
			t.Errorf("%s %+v: W_max %v, want 100", tc.name, tc.cfg, cu.wMax)
		}
	}
	rtt := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	for _, tc := range []struct {
		conns       int
		want0, wan1 uint64
	}{{0, 10 * mds, 3375}, {2, 15 * mds, 8437}} {
		g := NewGroup()
		var rs []*NewReno
		for i, w := range []float64{20, 10} {
			c := readingsController(t, "balia", Config{Group: g, EmulatedConnections: tc.conns}, w).(*NewReno)
			c.coupled.srtt = rtt[i]
			rs = append(rs, c)
		}
		rs[1].OnCongestionEvent(t0.Add(2*time.Second), t0.Add(2*time.Second))
		rs[0].OnCongestionEvent(t0.Add(2*time.Second), t0.Add(2*time.Second))
		if rs[0].Window() != tc.want0 || rs[1].Window() != tc.wan1 {
			t.Errorf("balia, %d connections: windows %d and %d, want %d and %d", tc.conns, rs[0].Window(), rs[1].Window(), tc.want0, tc.wan1)
		}
	}
}

// TestEmulatedConnectionsGrowth: in congestion avoidance newreno with N
// = 2 grows by one datagram per cwnd/N acknowledged (MPQUIC's Reno: one
// per cwnd/N ACKs): at 20 datagrams, 10 ACKs give 21 and 11 more 22 (with
// N = 1, 20 ACKs give 21); by 2 per round trip with GrowthPerRTT;
// cubic's Reno-friendly estimate grows by 3N²(1-b)/(1+b) = 3·4·0.15/1.85
// = 0.973 datagrams per window after a reduction (b = 0.85; RFC 9438's
// alpha_cubic is 0.529), computed ACK by ACK as in TestCubicRenoFriendly.
func TestEmulatedConnectionsGrowth(t *testing.T) {
	r := readingsController(t, "newreno", Config{EmulatedConnections: 2}, 20)
	ack(r, t0.Add(time.Second), t0, 10, 20*mds)
	if r.Window() != 21*mds {
		t.Errorf("newreno, 2 connections: window %d after 10 ACKs, want %d", r.Window(), 21*mds)
	}
	ack(r, t0.Add(time.Second), t0, 11, 20*mds)
	if r.Window() != 22*mds {
		t.Errorf("newreno, 2 connections: window %d after 11 more, want %d", r.Window(), 22*mds)
	}
	r = readingsController(t, "newreno", Config{EmulatedConnections: 2, RenoGrowth: GrowthPerRTT}, 20)
	ack(r, t0.Add(time.Second), t0.Add(time.Millisecond), 1, 20*mds)
	if r.Window() != 22*mds {
		t.Errorf("newreno per-rtt, 2 connections: window %d after a round, want %d", r.Window(), 22*mds)
	}

	c := readingsController(t, "cubic", Config{EmulatedConnections: 2}, 100).(*Cubic)
	c.OnCongestionEvent(t0, t0.Add(-time.Millisecond))
	const rtt = 10 * time.Millisecond
	b := 0.85
	alpha := 3 * 4 * (1 - b) / (1 + b)
	if math.Abs(alpha-0.97297) > 1e-5 || math.Abs(c.alpha-alpha) > 1e-12 {
		t.Fatalf("alpha %v, want %v", c.alpha, alpha)
	}
	w := 85.0
	for i := range 86 {
		at := t0.Add(time.Second + time.Duration(i)*rtt/86)
		ackOne(c, at, at.Add(-rtt), rtt)
		w += alpha / w
	}
	if got := c.cwnd / mds; math.Abs(got-w) > 1e-9 || w < 85.96 {
		t.Fatalf("cubic, 2 connections: window %v datagrams after a window acknowledged, want W_est %v", got, w)
	}
}

// TestCwndLimited: with CwndLimited the window does not grow while the
// bytes in flight before the ACK leave more than three datagrams of it
// unused (above half of it in slow start), for newreno, olia and cubic;
// cubic's epoch moves on by the time it did not grow.
func TestCwndLimited(t *testing.T) {
	const rtt = 50 * time.Millisecond
	acks := func(c Controller, at time.Time, n int, prior uint64) {
		ps := make([]AckedPacket, n)
		for i := range ps {
			ps[i] = AckedPacket{Number: uint64(i), TimeSent: at.Add(-rtt), Size: mds}
		}
		c.OnAck(at, ps, prior, RTT{Latest: rtt, Smoothed: rtt, Min: rtt})
	}
	for _, name := range []string{"newreno", "olia", "cubic"} {
		c := readingsController(t, name, Config{CwndLimited: true}, 20)
		acks(c, t0.Add(time.Second), 20, 10*mds) // 10 of 20 datagrams in flight
		if c.Window() != 20*mds {
			t.Errorf("%s: window %d after ACKs with half the window used, want %d", name, c.Window(), 20*mds)
		}
		acks(c, t0.Add(2*time.Second), 20, 18*mds) // within 3 datagrams
		if c.Window() <= 20*mds {
			t.Errorf("%s: window %d after ACKs with the window used, want it grown", name, c.Window())
		}
		c = readingsController(t, name, Config{}, 20)
		acks(c, t0.Add(time.Second), 20, 10*mds)
		if c.Window() <= 20*mds {
			t.Errorf("%s without CwndLimited: window %d, want it grown", name, c.Window())
		}
	}
	// Slow start: limited below half the window.
	r := New2(t, "newreno", Config{CwndLimited: true})
	ack(r, t0, t0, 4, 4*mds) // 4 of 10 in flight
	if r.Window() != 10*mds {
		t.Errorf("slow start with 4 of 10 datagrams in flight: window %d, want %d", r.Window(), 10*mds)
	}
	ack(r, t0, t0, 6, 6*mds)
	if r.Window() != 16*mds {
		t.Errorf("slow start with 6 of 10 datagrams in flight: window %d, want %d", r.Window(), 16*mds)
	}
	// cubic: 5 s without using the window move the epoch on by 5 s.
	c := readingsController(t, "cubic", Config{CwndLimited: true}, 100).(*Cubic)
	c.OnCongestionEvent(t0, t0.Add(-time.Millisecond))
	ack(c, t0.Add(time.Second), t0.Add(time.Second/2), 1, 70*mds)
	epoch := c.epochStart
	ack(c, t0.Add(2*time.Second), t0.Add(time.Second+time.Second/2), 1, 10*mds)
	ack(c, t0.Add(7*time.Second), t0.Add(6*time.Second+time.Second/2), 1, 70*mds)
	if got := c.epochStart.Sub(epoch); got != 5*time.Second {
		t.Errorf("cubic: epoch moved by %v over 5 s unused, want 5s", got)
	}
}

// New2 builds controller name with cfg in its initial slow start.
func New2(t *testing.T, name string, cfg Config) Controller {
	t.Helper()
	cfg.MaxDatagramSize = mds
	c, err := New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRTOCollapse: with RTOCollapse the third consecutive probe timeout
// (MPQUIC's RTO after two tail-loss probes) and each after it set
// ssthresh to half the window and the window to two datagrams; the first
// two change nothing, and without the reading none does.
func TestRTOCollapse(t *testing.T) {
	for _, name := range []string{"newreno", "cubic", "olia"} {
		c := readingsController(t, name, Config{RTOCollapse: true}, 40)
		r := c.(ProbeTimeoutReactor)
		r.OnProbeTimeout(t0, 1)
		r.OnProbeTimeout(t0, 2)
		if c.Window() != 40*mds {
			t.Fatalf("%s: window %d after two probe timeouts, want %d", name, c.Window(), 40*mds)
		}
		r.OnProbeTimeout(t0, 3)
		if c.Window() != 2*mds || c.SlowStartThreshold() != 20*mds || c.State() != SlowStart {
			t.Errorf("%s: window %d ssthresh %d state %v after the third, want %d, %d, slow start", name, c.Window(), c.SlowStartThreshold(), c.State(), 2*mds, 20*mds)
		}
		r.OnProbeTimeout(t0, 4)
		if c.Window() != 2*mds || c.SlowStartThreshold() != mds {
			t.Errorf("%s: window %d ssthresh %d after the fourth, want %d, %d", name, c.Window(), c.SlowStartThreshold(), 2*mds, mds)
		}
		c = readingsController(t, name, Config{}, 40)
		c.(ProbeTimeoutReactor).OnProbeTimeout(t0, 5)
		if c.Window() != 40*mds {
			t.Errorf("%s without RTOCollapse: window %d after five probe timeouts, want %d", name, c.Window(), 40*mds)
		}
	}
}

// TestReadingsRefused: bbr takes none of the loss-based readings, balia
// no loss reduction, and the values are checked.
func TestReadingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"bbr", Config{EmulatedConnections: 2}, "bbr takes none"},
		{"bbr", Config{RTOCollapse: true}, "bbr takes none"},
		{"balia", Config{LossReduction: 0.7}, "balia's reduction is its own"},
		{"newreno", Config{LossReduction: 1.5}, "outside (0, 1)"},
		{"cubic", Config{EmulatedConnections: -1}, "negative"},
		{"cubic", Config{InitialWindowPackets: -1}, "negative"},
	} {
		tc.cfg.MaxDatagramSize = mds
		_, err := New(tc.name, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: error %v, want %q", tc.name, tc.cfg, err, tc.want)
		}
	}
	if c := New2(t, "cubic", Config{InitialWindowPackets: 32}); c.Window() != 32*mds {
		t.Errorf("cubic with a 32-datagram initial window: %d", c.Window())
	}
}

// TestCubicAlphaReadings: after congestion events at 100 and then 80
// datagrams, fast convergence sets W_max = 80·(1+0.7)/2 = 68 while
// RFC 9438's cwnd_prior is 80, and the window is 56. 5,000 ACKs of one
// datagram at the epoch's start (W_cubic stays at 56, below W_est, so
// the window follows the Reno-friendly W_est) grow W_est by alpha/W_est
// each, alpha = 3(1-0.7)/(1+0.7) = 0.5294 until W_est reaches the rule's
// threshold and 1 after it: W_max = 68 (the default, ours), cwnd_prior =
// 80 (rfc9438), never (linux). The same sum computed here ACK by ACK
// gives each window (about 108.7, 101.2 and 91.8 datagrams: W_est² grows
// by 2·alpha an ACK); they are ordered wmax > rfc9438 > linux.
func TestCubicAlphaReadings(t *testing.T) {
	const srtt = 10 * time.Millisecond
	t1 := t0.Add(time.Second)
	at := t1.Add(srtt)
	var got []float64
	for _, tc := range []struct {
		rule      CubicAlphaRule
		threshold float64
	}{{CubicAlphaWMax, 68}, {CubicAlphaRFC9438, 80}, {CubicAlphaLinux, math.Inf(1)}} {
		c := readingsController(t, "cubic", Config{CubicAlpha: tc.rule}, 100).(*Cubic)
		c.OnCongestionEvent(t0, t0.Add(-time.Millisecond))
		c.cwnd = 80 * mds // grown back to 80 datagrams
		c.OnCongestionEvent(t1, t1.Add(-time.Millisecond))
		if math.Abs(c.wMax-68) > 1e-9 || c.cwndPrior != 80 || math.Abs(c.cwnd-56*mds) > 1e-6 {
			t.Fatalf("%q: W_max %v, cwnd_prior %v, window %v datagrams; want 68, 80, 56", tc.rule, c.wMax, c.cwndPrior, c.cwnd/mds)
		}
		est := 56.0
		for range 5000 {
			ackOne(c, at, at.Add(-srtt/2), srtt)
			alpha := 3 * (1 - 0.7) / (1 + 0.7)
			if est >= tc.threshold {
				alpha = 1
			}
			est += alpha / est
		}
		if w := c.cwnd / mds; math.Abs(w-est) > 1e-6 {
			t.Errorf("%q: window %v datagrams after 5,000 ACKs, want %v", tc.rule, w, est)
		}
		got = append(got, c.cwnd/mds)
	}
	t.Logf("windows after 5,000 ACKs: wmax %.3f, rfc9438 %.3f, linux %.3f", got[0], got[1], got[2])
	if !(got[0] > got[1] && got[1] > got[2]) {
		t.Errorf("windows %v: want wmax > rfc9438 > linux", got)
	}
}

// TestCubicAlphaRefused: only cubic takes a Reno-friendly alpha reading,
// and an unknown one is refused.
func TestCubicAlphaRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule CubicAlphaRule
		want string
	}{
		{"newreno", CubicAlphaLinux, "applies to cubic"},
		{"bbr", CubicAlphaRFC9438, "applies to cubic"},
		{"cubic", "kernel", "unknown cubic alpha reading"},
	} {
		_, err := New(tc.name, Config{MaxDatagramSize: mds, CubicAlpha: tc.rule})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with %q: %v, want an error containing %q", tc.name, tc.rule, err, tc.want)
		}
	}
	if _, err := New("cubic", Config{MaxDatagramSize: mds, CubicAlpha: CubicAlphaLinux}); err != nil {
		t.Error(err)
	}
}

// TestCubicTargetReading: with CubicTarget (MPQUIC's CUBIC) the window in
// congestion avoidance is the target itself. A congestion event at 100
// datagrams leaves 70, W_max 100, K = cbrt(30/0.4) = 4.2172 s; the first
// ACK starts the epoch (t = 0) and, with a minimum RTT of 100 ms, sets
// the window to W_cubic(0.1) = 0.4*(0.1-4.2172)^3 + 100 = 72.084
// datagrams (W_est, 70.008, is below); an ACK 2 s later sets it to
// W_cubic(2.1) = 96.204. RFC 9438's step instead: the first ACK finds
// W_cubic(0) = 70.0 below W_est and takes W_est, 70.008; the second grows
// it by (96.204 - 70.008)/70.008 = 0.374 to 70.382.
func TestCubicTargetReading(t *testing.T) {
	const rtt = 100 * time.Millisecond
	t1 := t0.Add(time.Second)
	for _, tc := range []struct {
		target      bool
		first, then float64 // the window after each ACK, datagrams
	}{{true, 72.084, 96.204}, {false, 70.008, 70.382}} {
		c := readingsController(t, "cubic", Config{CubicTarget: tc.target}, 100).(*Cubic)
		c.OnCongestionEvent(t0, t0.Add(-time.Millisecond))
		if math.Abs(c.cwnd-70*mds) > 1e-6 || c.wMax != 100 {
			t.Fatalf("target %v: window %v, W_max %v after the event; want 70, 100", tc.target, c.cwnd/mds, c.wMax)
		}
		ackOne(c, t1, t1.Add(-rtt/2), rtt)
		first := c.cwnd / mds
		at := t1.Add(2 * time.Second)
		ackOne(c, at, at.Add(-rtt/2), rtt)
		then := c.cwnd / mds
		if math.Abs(first-tc.first) > 0.005 || math.Abs(then-tc.then) > 0.005 {
			t.Errorf("target %v: windows %.3f then %.3f datagrams, want %.3f then %.3f", tc.target, first, then, tc.first, tc.then)
		}
	}
	if _, err := New("newreno", Config{MaxDatagramSize: mds, CubicTarget: true}); err == nil || !strings.Contains(err.Error(), "applies to cubic") {
		t.Errorf("newreno with CubicTarget: %v, want an error", err)
	}
}
