package congestion

import (
	"math"
	"testing"
	"time"
)

// cubicInAvoidance returns a CUBIC controller in congestion avoidance
// with a window of w datagrams (its initial slow start over).
func cubicInAvoidance(w float64) *Cubic {
	c := NewCubic(Config{MaxDatagramSize: mds})
	c.hs.stop()
	c.cwnd = w * mds
	c.ssthresh = uint64(c.cwnd)
	return c
}

func ackOne(c Controller, at, sent time.Time, srtt time.Duration) {
	c.OnAck(at, []AckedPacket{{TimeSent: sent, Size: mds}}, 0, RTT{Latest: srtt, Smoothed: srtt, Min: srtt})
}

// TestCubicWindowAfterReduction checks RFC 9438's window function after a
// congestion event at a window of 100 datagrams: the window drops to
// beta*100 = 70, W_max is 100, K = cbrt((100-70)/0.4) = cbrt(75) =
// 4.2172 s, and an ACK t = 2 s into the epoch (RTT 100 ms) grows the
// window by (W_cubic(2.1) - cwnd)/cwnd datagrams, W_cubic(2.1) =
// 0.4*(2.1-4.2172)^3 + 100 = 96.204.
func TestCubicWindowAfterReduction(t *testing.T) {
	c := cubicInAvoidance(100)
	c.OnCongestionEvent(t0, t0.Add(-time.Millisecond))
	if c.Window() != 70*mds || c.SlowStartThreshold() != 70*mds || c.wMax != 100 {
		t.Fatalf("after the reduction: window %d ssthresh %d W_max %v, want %d, %d, 100", c.Window(), c.SlowStartThreshold(), c.wMax, 70*mds, 70*mds)
	}
	const rtt = 100 * time.Millisecond
	epoch := t0.Add(time.Second)
	ackOne(c, epoch, epoch.Add(-rtt), rtt)
	k := math.Cbrt(75)
	if math.Abs(k-4.2172) > 1e-4 || math.Abs(c.k-k) > 1e-9 {
		t.Fatalf("K = %v, want cbrt(75) = %v", c.k, k)
	}
	// At t = 0 the window is W_cubic(0) = 70 < W_est = 70 + 0.5294/70:
	// the Reno-friendly region.
	alpha := 3 * (1 - 0.7) / (1 + 0.7)
	w := 70 + alpha/70
	if got := float64(c.cwnd) / mds; math.Abs(got-w) > 1e-9 {
		t.Fatalf("t=0: window %v datagrams, want W_est %v", got, w)
	}
	ackOne(c, epoch.Add(2*time.Second), epoch.Add(2*time.Second-rtt), rtt)
	wc := func(t float64) float64 { return 0.4*math.Pow(t-k, 3) + 100 }
	if math.Abs(wc(2.1)-96.204) > 1e-3 {
		t.Fatalf("W_cubic(2.1) = %v", wc(2.1))
	}
	want := w + (wc(2.1)-w)/w
	if got := c.cwnd / mds; math.Abs(got-want) > 1e-9 {
		t.Fatalf("t=2 s: window %v datagrams, want %v", got, want)
	}
	// Fast convergence: a loss below W_max lowers W_max to
	// cwnd*(1+beta)/2.
	before := c.cwnd / mds
	c.OnCongestionEvent(epoch.Add(3*time.Second), epoch.Add(3*time.Second))
	if want := before * 0.85; math.Abs(c.wMax-want) > 1e-9 {
		t.Fatalf("fast convergence: W_max %v, want %v", c.wMax, want)
	}
}

// TestCubicRenoFriendly: right after a reduction from 100 to 70
// datagrams, with a 10 ms RTT, W_cubic barely moves (W_cubic(0.02) =
// 70.43) while the Reno-friendly estimate grows by alpha_cubic = 0.5294
// datagrams per window acknowledged: after 71 ACKs within 10 ms the
// window is W_est, about 70.54, computed here ACK by ACK (RFC 9438
// Section 4.3: W_est += alpha*segments_acked/cwnd, cwnd = W_est while
// W_cubic(t) < W_est).
func TestCubicRenoFriendly(t *testing.T) {
	c := cubicInAvoidance(100)
	c.OnCongestionEvent(t0, t0.Add(-time.Millisecond))
	const rtt = 10 * time.Millisecond
	alpha := 3 * (1 - 0.7) / (1 + 0.7)
	w := 70.0
	for i := range 71 {
		at := t0.Add(time.Second + time.Duration(i)*rtt/71)
		ackOne(c, at, at.Add(-rtt), rtt)
		w += alpha / w
	}
	if got := c.cwnd / mds; math.Abs(got-w) > 1e-9 || w < 70.5 {
		t.Fatalf("window %v datagrams, want W_est %v", got, w)
	}
}

// TestHyStartPlusPlus drives the initial slow start through rounds of 8
// ACKs (one datagram each): two rounds at 100 ms RTT grow the window by
// what they acknowledge (13500 + 16*1350 = 35100); in the third the RTT
// is 120 ms, at least 100 + max(4, min(16, 100/8)) ms, so its 8th ACK
// moves to Conservative Slow Start (RFC 9406 Section 4.2): 7*1350 +
// 1350/4 (44887.5); four more rounds at 120 ms grow 1350/4 per ACK
// (55687.5), and the first ACK of the fifth CSS round ends slow start
// with ssthresh = cwnd.
func TestHyStartPlusPlus(t *testing.T) {
	c := NewCubic(Config{MaxDatagramSize: mds})
	round := func(r int, rtt time.Duration) {
		start := t0.Add(time.Duration(r) * 100 * time.Millisecond)
		for i := range 8 {
			at := start.Add(time.Duration(i) * time.Millisecond)
			c.OnAck(at, []AckedPacket{{TimeSent: start.Add(-90*time.Millisecond + time.Duration(i)*time.Millisecond), Size: mds}}, 0,
				RTT{Latest: rtt, Smoothed: rtt, Min: 100 * time.Millisecond})
		}
	}
	round(1, 100*time.Millisecond)
	round(2, 100*time.Millisecond)
	if c.cwnd != 35100 {
		t.Fatalf("two rounds of slow start: window %v, want 35100", c.cwnd)
	}
	round(3, 120*time.Millisecond)
	if c.cwnd != 44887.5 || !c.hs.css || c.State() != SlowStart {
		t.Fatalf("RTT rise: window %v css %v state %v, want 44887.5 in CSS", c.cwnd, c.hs.css, c.State())
	}
	for r := 4; r <= 7; r++ {
		round(r, 120*time.Millisecond)
	}
	if c.cwnd != 55687.5 || c.State() != SlowStart {
		t.Fatalf("four CSS rounds: window %v state %v, want 55687.5 in slow start", c.cwnd, c.State())
	}
	c.OnAck(t0.Add(800*time.Millisecond), []AckedPacket{{TimeSent: t0.Add(710 * time.Millisecond), Size: mds}}, 0,
		RTT{Latest: 120 * time.Millisecond, Smoothed: 120 * time.Millisecond})
	if c.SlowStartThreshold() != 55687 || c.State() != CongestionAvoidance {
		t.Fatalf("fifth CSS round: ssthresh %d state %v, want 55687 in congestion avoidance", c.SlowStartThreshold(), c.State())
	}
}
