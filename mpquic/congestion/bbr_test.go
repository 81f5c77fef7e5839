package congestion

import (
	"slices"
	"testing"
	"time"
)

// bbrPipe is a fluid model of one path for BBR's tests: a bottleneck of
// rate bytes per second with an unbounded queue and a fixed round-trip
// propagation delay, a sender with unlimited data that sends full-size
// datagrams whenever the window and the controller's pacing rate let it,
// and one ACK per datagram.
type bbrPipe struct {
	b        *BBR
	now      time.Time
	rate     float64
	rtt      time.Duration
	free     time.Time // when the bottleneck is free
	next     time.Time // when pacing lets the next datagram go
	inflight uint64
	acks     []pipeAck
	// An application-limited sender (app > 0): app datagrams become
	// available every period, from appNext on; with mark, the sender
	// calls OnAppLimited when the window and pacer would let a datagram
	// go and it has none, as the connection does.
	app, avail int
	period     time.Duration
	appNext    time.Time
	mark       bool
	// what the test watches
	states        []State
	gains         []float64 // ProbeBW's pacing gain at each phase change
	minCwnd       uint64    // smallest window while in ProbeRTT
	probeRTTStart time.Time
	probeRTTTime  time.Duration
}

type pipeAck struct{ at, sent time.Time }

func newPipe(rate float64, rtt time.Duration) *bbrPipe {
	return &bbrPipe{b: NewBBR(Config{MaxDatagramSize: mds}), now: t0, rate: rate, rtt: rtt, states: []State{BBRStartup}, minCwnd: 1 << 62}
}

func (p *bbrPipe) watch() {
	b := p.b
	if st := b.State(); st != p.states[len(p.states)-1] {
		if st == BBRProbeRTT {
			p.probeRTTStart = p.now
		}
		if p.states[len(p.states)-1] == BBRProbeRTT {
			p.probeRTTTime += p.now.Sub(p.probeRTTStart)
		}
		p.states = append(p.states, st)
	}
	if b.State() == BBRProbeBW && (len(p.gains) == 0 || b.cycleStamp.Equal(p.now)) {
		if len(p.gains) == 0 || p.gains[len(p.gains)-1] != b.pGain || b.pGain == 1 {
			p.gains = append(p.gains, b.pGain)
		}
	}
	if b.State() == BBRProbeRTT {
		p.minCwnd = min(p.minCwnd, b.Window())
	}
}

// run advances the model until end.
func (p *bbrPipe) run(end time.Time) {
	for p.now.Before(end) {
		for p.app > 0 && !p.appNext.After(p.now) {
			p.avail += p.app
			p.appNext = p.appNext.Add(p.period)
		}
		for p.inflight+mds <= p.b.Window() && !p.now.Before(p.next) && (p.app == 0 || p.avail > 0) {
			p.avail--
			p.inflight += mds
			p.b.OnPacketSent(p.now, mds, p.inflight)
			dep := p.now
			if p.free.After(dep) {
				dep = p.free
			}
			dep = dep.Add(time.Duration(mds / p.rate * float64(time.Second)))
			p.free = dep
			p.acks = append(p.acks, pipeAck{at: dep.Add(p.rtt), sent: p.now})
			if r := p.b.PacingRate(); r > 0 {
				p.next = p.now.Add(time.Duration(float64(mds) / float64(r) * float64(time.Second)))
			}
		}
		if p.mark && p.app > 0 && p.avail == 0 && p.inflight+mds <= p.b.Window() && !p.now.Before(p.next) {
			p.b.OnAppLimited(p.inflight)
		}
		// The next event: an ACK, pacing letting a datagram go, or the
		// application's next datagrams.
		t := end
		if p.app > 0 && p.appNext.Before(t) {
			t = p.appNext
		}
		if len(p.acks) > 0 && p.acks[0].at.Before(t) {
			t = p.acks[0].at
		}
		if p.inflight+mds <= p.b.Window() && p.next.After(p.now) && p.next.Before(t) {
			t = p.next
		}
		p.now = t
		for len(p.acks) > 0 && !p.acks[0].at.After(p.now) {
			a := p.acks[0]
			p.acks = p.acks[1:]
			prior := p.inflight
			p.inflight -= mds
			r := p.now.Sub(a.sent)
			p.b.OnAck(p.now, []AckedPacket{{TimeSent: a.sent, Size: mds}}, prior, RTT{Latest: r, Smoothed: r, Min: r})
			p.watch()
		}
	}
}

// TestBBRStateMachine runs BBR over a 10 Mbit/s bottleneck with a 100 ms
// round trip (BDP 125000 bytes): Startup must end on the bandwidth
// plateau (three rounds without 25 % growth) with BtlBw at the
// bottleneck's 1.25e6 bytes/s, Drain follow, then ProbeBW cycling its
// pacing gain 1.25, 0.75, 1 (six phases), 1.25 …; 10 s after RTprop was
// last lowered ProbeRTT holds the window at 4 datagrams for at least
// 200 ms and returns to ProbeBW.
func TestBBRStateMachine(t *testing.T) {
	p := newPipe(1.25e6, 100*time.Millisecond)
	p.run(t0.Add(3 * time.Second))
	b := p.b
	if len(p.states) < 3 || p.states[1] != BBRDrain || p.states[2] != BBRProbeBW {
		t.Fatalf("states %v, want startup, drain, probe_bw", p.states)
	}
	if !b.filledPipe || b.btlBw < 0.95*1.25e6 || b.btlBw > 1.05*1.25e6 {
		t.Fatalf("BtlBw %v bytes/s (filled pipe %v), want 1.25e6", b.btlBw, b.filledPipe)
	}
	if b.rtProp < 100*time.Millisecond || b.rtProp > 105*time.Millisecond {
		t.Fatalf("RTprop %v, want 100 ms", b.rtProp)
	}
	// ProbeBW's gains, from its first phase: 1.25, 0.75, then 1.
	want := []float64{1.25, 0.75, 1, 1, 1, 1, 1, 1, 1.25, 0.75}
	if len(p.gains) < len(want) {
		t.Fatalf("gains %v, want at least %v", p.gains, want)
	}
	for i, g := range want {
		if p.gains[i] != g {
			t.Fatalf("ProbeBW gains %v, want %v…", p.gains, want)
		}
	}
	t.Logf("after 3 s: states %v gains %v btlBw %.0f cwnd %d rounds %d", p.states, p.gains, b.btlBw, b.cwnd, b.rounds)
	p.run(t0.Add(14 * time.Second))
	t.Logf("after 14 s: states %v probe_rtt %v", p.states, p.probeRTTTime)
	var sawProbeRTT bool
	for i, s := range p.states {
		if s == BBRProbeRTT {
			sawProbeRTT = true
			if i+1 >= len(p.states) || p.states[i+1] != BBRProbeBW {
				t.Fatalf("states %v: ProbeRTT must return to ProbeBW", p.states)
			}
		}
	}
	if !sawProbeRTT || p.minCwnd != bbrMinPipePackets*mds || p.probeRTTTime < bbrProbeRTTTime {
		t.Fatalf("ProbeRTT seen %v, window %d, lasting %v; want 4 datagrams for >= 200 ms (states %v)", sawProbeRTT, p.minCwnd, p.probeRTTTime, p.states)
	}
}

// TestBBRAppLimited: an application that sends 2 datagrams every 100 ms
// over a 10 Mbit/s path with a 100 ms round trip (delivery rate 27 kB/s,
// 2.2 % of the bottleneck) gives rounds without bandwidth growth. Marked
// application limited (the draft's rule), they do not count towards a
// full pipe: after 3 s (some 30 rounds) BBR is still in Startup; unmarked
// it leaves Startup after 3 such rounds. Once the application sends all
// it can, Startup ends on the real plateau, BtlBw within 5 % of
// 1.25e6 bytes/s. And a path at its full rate that turns application
// limited keeps BtlBw: 3 s (30 rounds, three times the filter's window)
// of the slow sender later it is still the bottleneck's, where the
// unmarked samples take it down to the sender's rate.
func TestBBRAppLimited(t *testing.T) {
	const rate = 1.25e6
	slow := func(mark bool) *bbrPipe {
		p := newPipe(rate, 100*time.Millisecond)
		p.app, p.period, p.appNext, p.mark = 2, 100*time.Millisecond, t0, mark
		return p
	}
	for _, mark := range []bool{true, false} {
		p := slow(mark)
		p.run(t0.Add(3 * time.Second))
		inStartup := p.b.State() == BBRStartup && !p.b.filledPipe
		if inStartup != mark {
			t.Errorf("marked %v: after 3 s of an application-limited sender, states %v, rounds %d, BtlBw %.0f", mark, p.states, p.b.rounds, p.b.btlBw)
		}
		if mark {
			p.app = 0 // now everything it can
			p.run(t0.Add(8 * time.Second))
			if !p.b.filledPipe || p.b.btlBw < 0.95*rate || p.b.btlBw > 1.05*rate {
				t.Errorf("marked: bulk after the slow start: BtlBw %.0f (filled pipe %v), want %.0f", p.b.btlBw, p.b.filledPipe, rate)
			}
		}
	}
	for _, mark := range []bool{true, false} {
		p := newPipe(rate, 100*time.Millisecond)
		p.run(t0.Add(3 * time.Second))
		p.app, p.period, p.appNext, p.mark, p.avail = 2, 100*time.Millisecond, p.now, mark, 0
		p.run(t0.Add(6 * time.Second))
		kept := p.b.btlBw >= 0.95*rate
		if kept != mark {
			t.Errorf("marked %v: BtlBw %.0f after 3 s of an application-limited sender, bottleneck %.0f", mark, p.b.btlBw, rate)
		}
	}
}

// TestBBRProbeRTTKeepsBandwidth: at a 20 ms round trip ProbeRTT's 200 ms
// of a 4-datagram window are ten rounds, the whole BtlBw filter. Its
// samples are marked application limited, so BtlBw stays at the
// bottleneck's 12.5e6 bytes/s (100 Mbit/s) through it and the window
// after it is two BDPs again (500,000 bytes + 3 datagrams), not 2 x 4
// datagrams + 3 (14,850 bytes) of an estimate made of ProbeRTT's samples.
func TestBBRProbeRTTKeepsBandwidth(t *testing.T) {
	const rate = 12.5e6
	p := newPipe(rate, 20*time.Millisecond)
	p.run(t0.Add(2 * time.Second))
	// The pipe's queue drains to nothing each gain cycle, which renews
	// RTprop; age it so that the next sample enters ProbeRTT.
	p.b.rtPropStamp = p.now.Add(-bbrRTpropWindow - time.Millisecond)
	p.run(t0.Add(3 * time.Second)) // ProbeRTT and about 700 ms of ProbeBW after it
	if !slices.Contains(p.states, BBRProbeRTT) {
		t.Fatalf("states %v: no ProbeRTT", p.states)
	}
	b := p.b
	t.Logf("states %v, BtlBw %.0f, window %d after ProbeRTT", p.states, b.btlBw, b.cwnd)
	if b.State() != BBRProbeBW || b.btlBw < 0.95*rate {
		t.Fatalf("after ProbeRTT: state %v, BtlBw %.0f bytes/s, want probe_bw at %.0f", b.State(), b.btlBw, rate)
	}
	if want := uint64(2*rate*0.02) + 3*mds; b.cwnd < want*9/10 {
		t.Errorf("window %d after ProbeRTT, want about %d", b.cwnd, want)
	}
}
