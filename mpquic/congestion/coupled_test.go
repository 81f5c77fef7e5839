package congestion

import (
	"math"
	"strings"
	"testing"
	"time"
)

// coupledPaths builds one connection's controllers of a coupled kind, each
// in congestion avoidance with the given window (datagrams), smoothed RTT
// and, for OLIA, bytes acknowledged between losses.
func coupledPaths(t *testing.T, name string, ws []float64, rtts []time.Duration, ells []uint64) (*Group, []*NewReno) {
	t.Helper()
	return coupledPathsWith(t, name, Config{}, ws, rtts, ells)
}

// coupledPathsWith is coupledPaths with the readings of cfg.
func coupledPathsWith(t *testing.T, name string, cfg Config, ws []float64, rtts []time.Duration, ells []uint64) (*Group, []*NewReno) {
	t.Helper()
	g := NewGroup()
	var out []*NewReno
	for i, w := range ws {
		cfg.MaxDatagramSize, cfg.Group = mds, g
		c, err := New(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := c.(*NewReno)
		r.cwnd = uint64(w * mds)
		r.ssthresh = r.cwnd
		r.coupled.srtt = rtts[i]
		if ells != nil {
			r.coupled.sinceLoss = ells[i]
		}
		out = append(out, r)
	}
	return g, out
}

// increaseOf acknowledges one datagram on r and returns the increase in
// bytes, fractions included.
func increaseOf(r *NewReno) float64 {
	before := float64(r.cwnd) + r.coupled.frac
	srtt := r.coupled.srtt
	ackOne(r, t0.Add(time.Second), t0.Add(time.Second-srtt), srtt)
	return float64(r.cwnd) + r.coupled.frac - before
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestLIAAlpha: RFC 6356 Section 3 for two paths, 20 datagrams (27000
// bytes) at 50 ms and 10 datagrams (13500 bytes) at 100 ms: cwnd_total =
// 40500, max(cwnd_i/rtt_i^2) = 27000/0.05^2 = 10.8e6, sum(cwnd_i/rtt_i) =
// 540000 + 135000 = 675000, so alpha = 40500 * 10.8e6 / 675000^2 = 0.96.
// An ACK of 1350 bytes grows each path by min(alpha*1350*1350/40500,
// 1350*1350/cwnd_i) = min(43.2, 67.5 or 135) = 43.2 bytes. Alone, a path
// grows as NewReno: 1350*1350/27000 = 67.5.
func TestLIAAlpha(t *testing.T) {
	for i := range 2 {
		// Fresh paths each time: an increase changes the state.
		_, rs := coupledPaths(t, "lia", []float64{20, 10}, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}, nil)
		if got := increaseOf(rs[i]); !near(got, 43.2) {
			t.Errorf("path %d: increase %v bytes, want 43.2", i, got)
		}
	}
	g, rs := coupledPaths(t, "lia", []float64{20}, []time.Duration{50 * time.Millisecond}, nil)
	if got := increaseOf(rs[0]); !near(got, 67.5) || g.Len() != 1 {
		t.Errorf("one path: increase %v bytes, want 67.5", got)
	}
}

// TestOLIAIncrease: two paths at 50 ms, A with 20 datagrams and 1 MB
// acknowledged between losses, B with 10 datagrams and 4 MB. A has the
// largest window (M = {A}), B is the best path (largest ell/rtt^2:
// B\M = {B}), n = 2: alpha_A = -1/(2*1), alpha_B = +1/(2*1). With
// sum(w_p/rtt_p) = 400 + 200 = 600 packets/s, an ACK of one datagram
// grows A by (20/0.05^2)/600^2 - 0.5/20 = -0.0027778 datagrams (-3.75
// bytes) and B by (10/0.05^2)/600^2 + 0.5/10 = 0.0611111 (82.5 bytes).
// When the largest window is also the best path, alpha is 0 everywhere.
func TestOLIAIncrease(t *testing.T) {
	rtt := []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}
	_, rs := coupledPaths(t, "olia", []float64{20, 10}, rtt, []uint64{1e6, 4e6})
	if got := increaseOf(rs[0]); !near(got, -3.75) {
		t.Errorf("path A: increase %v bytes, want -3.75", got)
	}
	_, rs = coupledPaths(t, "olia", []float64{20, 10}, rtt, []uint64{1e6, 4e6})
	if got := increaseOf(rs[1]); !near(got, 82.5) {
		t.Errorf("path B: increase %v bytes, want 82.5", got)
	}
	_, rs = coupledPaths(t, "olia", []float64{20, 10}, rtt, []uint64{4e6, 1e6})
	if got := increaseOf(rs[1]); !near(got, 4000.0/360000*mds) {
		t.Errorf("alpha 0: path B increase %v bytes, want %v", got, 4000.0/360000*mds)
	}
}

// TestOLIABestOverflow: A with 20 datagrams at 20 ms, B with 10 at
// 40 ms, each with 100 kB acknowledged between losses. A has the largest
// window (M = {A}) and is the best path: ell/rtt^2 is 1e5/0.02^2 = 2.5e8
// for A against 1e5/0.04^2 = 6.25e7 for B, so B\M is empty and alpha is
// 0: with sum(w_p/rtt_p) = 1000 + 250 = 1250 packets/s, an ACK of one
// datagram grows A by (20/0.02^2)/1250^2 = 0.032 datagrams (43.2 bytes)
// and B by (10/0.04^2)/1250^2 = 0.004 (5.4 bytes). MPQUIC's test compares
// ell_A*srtt_B^2 = 1e5 * (4e7 ns)^2 = 1.6e20, which wraps in int64 to
// -6,020,696,663,385,964,544, with ell_B*srtt_A^2 = 1e5 * (2e7)^2 = 4e19,
// which wraps to 3,106,511,852,580,896,768: B is at least as good as A
// and A not as good as B, so B\M = {B}, alpha_A = -1/2 and alpha_B =
// +1/2: A grows by 0.032 - 0.5/20 = 0.007 datagrams (9.45 bytes) and B by
// 0.004 + 0.5/10 = 0.054 (72.9 bytes). Where the products do not wrap
// (1 kB each: 1.6e18 and 4e17) the test is OLIA's.
func TestOLIABestOverflow(t *testing.T) {
	rtt := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond}
	for _, tc := range []struct {
		what     string
		overflow bool
		ell      uint64
		wantA    float64
		wantB    float64
	}{
		{"published", false, 1e5, 43.2, 5.4},
		{"MPQUIC's, wrapped", true, 1e5, 9.45, 72.9},
		{"MPQUIC's, not wrapped", true, 1e3, 43.2, 5.4},
	} {
		cfg := Config{OLIABestOverflow: tc.overflow}
		for i, want := range []float64{tc.wantA, tc.wantB} {
			_, rs := coupledPathsWith(t, "olia", cfg, []float64{20, 10}, rtt, []uint64{tc.ell, tc.ell})
			if got := increaseOf(rs[i]); !near(got, want) {
				t.Errorf("%s: path %c: increase %v bytes, want %v", tc.what, 'A'+i, got, want)
			}
		}
	}
	if _, err := New("lia", Config{MaxDatagramSize: mds, OLIABestOverflow: true}); err == nil || !strings.Contains(err.Error(), "applies to olia") {
		t.Errorf("lia with MPQUIC's best-path test: error %v, want it refused", err)
	}
}

// TestOLIAEllCountsUnusedWindow: with CwndLimited, an ACK while the
// window is not used grows no window but still counts its bytes in ell
// (MPQUIC's OnPacketAcked adds them before its cwnd-limited test).
func TestOLIAEllCountsUnusedWindow(t *testing.T) {
	_, rs := coupledPathsWith(t, "olia", Config{CwndLimited: true}, []float64{20}, []time.Duration{50 * time.Millisecond}, []uint64{1000})
	r := rs[0]
	ackOne(r, t0.Add(time.Second), t0.Add(time.Second-50*time.Millisecond), 50*time.Millisecond) // nothing in flight
	if r.cwnd != 20*mds || r.coupled.sinceLoss != 1000+mds {
		t.Errorf("window %d, ell %d after an ACK with the window unused, want %d and %d", r.cwnd, r.coupled.sinceLoss, 20*mds, 1000+mds)
	}
}

// TestBALIAIncreaseAndDecrease: A with 20 datagrams at 50 ms (x_A = 400
// packets/s), B with 10 at 100 ms (x_B = 100): sum x = 500. For B,
// alpha = 400/100 = 4: an ACK of one datagram grows it by
// 100/(0.1*500^2) * (1+4)/2 * (4+4)/5 = 0.016 datagrams (21.6 bytes);
// for A, alpha = 1: 400/(0.05*500^2) * 1 * 1 = 0.032 (43.2 bytes). A
// loss on B takes w_B/2 * min(4, 1.5) = 7.5 datagrams off (2.5 left,
// 3375 bytes); on A, w_A/2 (10 left).
func TestBALIAIncreaseAndDecrease(t *testing.T) {
	rtt := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	_, rs := coupledPaths(t, "balia", []float64{20, 10}, rtt, nil)
	if got := increaseOf(rs[1]); !near(got, 21.6) {
		t.Errorf("path B: increase %v bytes, want 21.6", got)
	}
	_, rs = coupledPaths(t, "balia", []float64{20, 10}, rtt, nil)
	if got := increaseOf(rs[0]); !near(got, 43.2) {
		t.Errorf("path A: increase %v bytes, want 43.2", got)
	}
	_, rs = coupledPaths(t, "balia", []float64{20, 10}, rtt, nil)
	rs[1].OnCongestionEvent(t0.Add(2*time.Second), t0.Add(2*time.Second))
	rs[0].OnCongestionEvent(t0.Add(2*time.Second), t0.Add(2*time.Second))
	if rs[1].Window() != 3375 || rs[0].Window() != 10*mds {
		t.Errorf("after losses: windows %d and %d, want %d and 3375", rs[0].Window(), rs[1].Window(), 10*mds)
	}
}

// TestGroupLeave: a path that leaves the group no longer counts: LIA's
// remaining path grows as NewReno alone.
func TestGroupLeave(t *testing.T) {
	g, rs := coupledPaths(t, "lia", []float64{20, 10}, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}, nil)
	g.Leave(rs[1])
	if got := increaseOf(rs[0]); !near(got, 67.5) || g.Len() != 1 {
		t.Errorf("after leave: increase %v bytes, want 67.5 (group of %d)", got, g.Len())
	}
}
