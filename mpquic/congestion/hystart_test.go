package congestion

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// hsRound feeds controller c one HyStart++ round r of 8 ACK frames, each
// acknowledging n datagrams with RTT sample rtt. Round r's ACKs arrive from
// t0 + r*100 ms on, 1 ms apart, for packets sent 90 ms before: the first
// one's packet was sent after round r-1 began (so it ends that round), the

func hsRound(c Controller, r, n int, rtt time.Duration) {
	start := t0.Add(time.Duration(r) * 100 * time.Millisecond)
	for i := range 8 {
		at := start.Add(time.Duration(i) * time.Millisecond)
		sent := start.Add(-90*time.Millisecond + time.Duration(i)*time.Millisecond)
		ps := make([]AckedPacket, n)
		for j := range ps {
			ps[j] = AckedPacket{TimeSent: sent, Size: mds}
		}
		c.OnAck(at, ps, c.Window(), RTT{Latest: rtt, Smoothed: rtt, Min: rtt})
	}
}

func newRenoHyStart(t *testing.T, name string) *NewReno {
	t.Helper()
	c, err := New(name, Config{MaxDatagramSize: mds, SlowStart: SlowStartHyStart})
	if err != nil {
		t.Fatal(err)
	}
	return c.(*NewReno)
}

// TestNewRenoHyStartThreshold checks RFC 9406's RttThresh =
// max(4 ms, min(lastRoundMinRTT/8, 16 ms)) and its clamps with NewReno: two
// rounds at the base RTT (8 ACKs of 2 datagrams each) grow the window from
// 13500 by 16*2700 to 56700; a third round whose RTT is just below base +
// RttThresh stays in slow start (56700 + 8*2700 = 78300), one at base +
// RttThresh moves to Conservative Slow Start at its 8th sample (7*2700 +
// 2700/4 = 19575: 76275). At 20 ms, 20/8 = 2.5 ms is raised to
// MIN_RTT_THRESH 4 ms; at 200 ms, 25 ms is cut to MAX_RTT_THRESH 16 ms; at
// 60 ms the threshold is 60/8 = 7.5 ms.
func TestNewRenoHyStartThreshold(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	tests := []struct {
		name      string
		base, rtt time.Duration
		css       bool
		window    uint64
	}{
		{"min clamp: below", ms(20), ms(23.9), false, 78300},
		{"min clamp: at", ms(20), ms(24), true, 76275},
		{"max clamp: below", ms(200), ms(215.9), false, 78300},
		{"max clamp: at", ms(200), ms(216), true, 76275},
		{"unclamped: below", ms(60), ms(67.4), false, 78300},
		{"unclamped: at", ms(60), ms(67.5), true, 76275},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRenoHyStart(t, "newreno")
			hsRound(r, 1, 2, tc.base)
			hsRound(r, 2, 2, tc.base)
			if r.Window() != 56700 {
				t.Fatalf("two rounds of slow start: window %d, want 56700", r.Window())
			}
			hsRound(r, 3, 2, tc.rtt)
			if r.hs.css != tc.css || r.Window() != tc.window || r.State() != SlowStart {
				t.Errorf("third round at %v: css %v window %d state %v, want css %v window %d in slow start",
					tc.rtt, r.hs.css, r.Window(), r.State(), tc.css, tc.window)
			}
		})
	}
}

// TestNewRenoHyStartCSS follows Conservative Slow Start to its end: entered
// in round 3 (window 76275, as in TestNewRenoHyStartThreshold), rounds 4 to
// 7 grow by 2700/4 = 675 per ACK frame (32*675 = 21600: 97875); the first
// ACK of round 8 completes CSS_ROUNDS = 5 rounds and enters congestion
// avoidance with ssthresh = cwnd = 97875, without growing.
func TestNewRenoHyStartCSS(t *testing.T) {
	for _, name := range []string{"newreno", "newreno-cwl", "lia"} {
		t.Run(name, func(t *testing.T) {
			r := newRenoHyStart(t, name)
			hsRound(r, 1, 2, 20*time.Millisecond)
			hsRound(r, 2, 2, 20*time.Millisecond)
			hsRound(r, 3, 2, 30*time.Millisecond)
			for i := 4; i <= 7; i++ {
				hsRound(r, i, 2, 30*time.Millisecond)
			}
			if r.Window() != 97875 || r.State() != SlowStart || !r.hs.css {
				t.Fatalf("four CSS rounds: window %d state %v css %v, want 97875 in CSS", r.Window(), r.State(), r.hs.css)
			}
			at := t0.Add(800 * time.Millisecond)
			// newreno-cwl grows only when cwnd limited: prior in flight
			// is the window.
			r.OnAck(at, []AckedPacket{{TimeSent: at.Add(-90 * time.Millisecond), Size: mds}, {TimeSent: at.Add(-90 * time.Millisecond), Size: mds}},
				r.Window(), RTT{Latest: 30 * time.Millisecond})
			if r.SlowStartThreshold() != 97875 || r.Window() != 97875 || r.State() != CongestionAvoidance || r.hs.on {
				t.Errorf("fifth CSS round: ssthresh %d window %d state %v hystart %v, want 97875 in congestion avoidance",
					r.SlowStartThreshold(), r.Window(), r.State(), r.hs.on)
			}
		})
	}
}

// TestNewRenoHyStartBackToSlowStart: a CSS round (baseline 24 ms) whose
// minimum RTT falls back to 20 ms returns to slow start at its 8th sample:
// 7 frames grow 675 each, the 8th 2700 (76275 + 7425 = 83700).
func TestNewRenoHyStartBackToSlowStart(t *testing.T) {
	r := newRenoHyStart(t, "newreno")
	hsRound(r, 1, 2, 20*time.Millisecond)
	hsRound(r, 2, 2, 20*time.Millisecond)
	hsRound(r, 3, 2, 24*time.Millisecond)
	hsRound(r, 4, 2, 20*time.Millisecond)
	if r.hs.css || r.Window() != 83700 {
		t.Errorf("RTT back below the baseline: css %v window %d, want slow start at 83700", r.hs.css, r.Window())
	}
}

// TestNewRenoHyStartSpuriousInEntryRound: the spurious-exit check of RFC
// 9406 Section 4.2 runs on every ACK of a CSS round with 8 samples, the
// round CSS was entered in too: a round at 24 ms after two at 20 ms enters
// CSS at its 8th ACK (76275, as in TestNewRenoHyStartThreshold); a 9th ACK
// of the same round at 20 ms (its packet sent before the round began)
// brings the round's minimum below the baseline of 24 ms and returns to
// slow start, growing by its whole 2700 bytes (78975). On a bottleneck
// whose queue drains between slow start's flights, the first packet after
// such a gap gives that sample (docs/results/path-failure.md, "HyStart++ traced").
func TestNewRenoHyStartSpuriousInEntryRound(t *testing.T) {
	r := newRenoHyStart(t, "newreno")
	hsRound(r, 1, 2, 20*time.Millisecond)
	hsRound(r, 2, 2, 20*time.Millisecond)
	hsRound(r, 3, 2, 24*time.Millisecond)
	if !r.hs.css || r.Window() != 76275 {
		t.Fatalf("round at 24 ms: css %v window %d, want CSS at 76275", r.hs.css, r.Window())
	}
	at := t0.Add(308 * time.Millisecond)
	sent := at.Add(-90 * time.Millisecond)
	r.OnAck(at, []AckedPacket{{TimeSent: sent, Size: mds}, {TimeSent: sent, Size: mds}}, r.Window(),
		RTT{Latest: 20 * time.Millisecond, Smoothed: 20 * time.Millisecond, Min: 20 * time.Millisecond})
	if r.hs.css || r.Window() != 78975 {
		t.Errorf("a sample at 20 ms later in the round: css %v window %d, want slow start at 78975", r.hs.css, r.Window())
	}
}

// TestNewRenoHyStartLimit: one ACK frame of 10 datagrams grows the window
// by at most L = 8 datagrams (13500 + 10800 = 24300), where standard slow
// start, and HyStart++ on a paced path, grow it by all 13500.
func TestNewRenoHyStartLimit(t *testing.T) {
	r := newRenoHyStart(t, "newreno")
	ack(r, t0, t0, 10, 10*mds)
	if r.Window() != 24300 {
		t.Errorf("HyStart++: window %d after 10 datagrams in one frame, want 24300", r.Window())
	}
	s := NewNewReno(Config{MaxDatagramSize: mds}, false)
	ack(s, t0, t0, 10, 10*mds)
	if s.Window() != 27000 {
		t.Errorf("standard: window %d, want 27000", s.Window())
	}
	// A paced sender has no limit (L = infinity, RFC 9406 Section 4.3):
	// 13500 + 13500.
	c, err := New("newreno", Config{MaxDatagramSize: mds, SlowStart: SlowStartHyStart, Paced: true})
	if err != nil {
		t.Fatal(err)
	}
	ack(c, t0, t0, 10, 10*mds)
	if c.Window() != 27000 {
		t.Errorf("HyStart++, paced: window %d after 10 datagrams in one frame, want 27000", c.Window())
	}
}

// TestNewRenoHyStartLoss: a loss in HyStart++'s slow start halves the
// window (RFC 9002) and ends HyStart++: once the recovery period is over
// and the window (collapsed by persistent congestion) is below ssthresh,
// slow start is standard again (an ACK of 10 datagrams grows by 13500).
func TestNewRenoHyStartLoss(t *testing.T) {
	r := newRenoHyStart(t, "newreno")
	hsRound(r, 1, 2, 20*time.Millisecond) // 13500 + 8*2700 = 35100
	r.OnCongestionEvent(t0.Add(200*time.Millisecond), t0.Add(150*time.Millisecond))
	if r.Window() != 17550 || r.SlowStartThreshold() != 17550 || r.hs.on {
		t.Fatalf("loss: window %d ssthresh %d hystart %v, want 17550 and HyStart++ off", r.Window(), r.SlowStartThreshold(), r.hs.on)
	}
	r.OnPersistentCongestion(t0.Add(time.Second))
	ack(r, t0.Add(2*time.Second), t0.Add(1500*time.Millisecond), 10, 10*mds)
	if r.Window() != 2*mds+10*mds {
		t.Errorf("slow start after the loss: window %d, want %d", r.Window(), 12*mds)
	}
}

// TestHyStartRoundBoundaries: only the acknowledgement of a packet sent
// after the current round began ends it. Round 1's ACKs (RTT 20 ms) set
// the previous-round minimum; in round 2, 8 ACKs of packets sent before it
// began do not start a round, so a 24 ms sample among them (the round's
// minimum stays 20 ms) does not move to CSS; the next round's 8 samples at
// 24 ms do.
func TestHyStartRoundBoundaries(t *testing.T) {
	h := newHyStart(true, false)
	at := t0
	feed := func(newRound bool, rtt time.Duration) {
		at = at.Add(time.Millisecond)
		h.onAck(at, mds, mds, newRound, rtt)
	}
	sentBefore := func() time.Time { return h.roundStart.Add(-time.Millisecond) }
	for i := range 8 {
		feed(i == 0, 20*time.Millisecond)
	}
	if !h.endsRound(h.roundStart.Add(time.Nanosecond)) || h.endsRound(sentBefore()) || h.endsRound(h.roundStart) {
		t.Fatalf("endsRound: a packet sent after the round began must end it, one sent at or before must not")
	}
	feed(true, 20*time.Millisecond)
	for range 8 {
		feed(h.endsRound(sentBefore()), 24*time.Millisecond)
	}
	if h.css || h.curRoundMin != 20*time.Millisecond || h.samples != 9 {
		t.Fatalf("same round: css %v min %v samples %d, want no CSS, min 20ms, 9 samples", h.css, h.curRoundMin, h.samples)
	}
	for i := range 8 {
		feed(i == 0, 24*time.Millisecond)
	}
	if !h.css || h.cssBaseline != 24*time.Millisecond {
		t.Errorf("next round at 24 ms: css %v baseline %v, want CSS from 24ms", h.css, h.cssBaseline)
	}
}

// TestSlowStartConfig: the controllers' defaults and refusals.
func TestSlowStartConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		ss   SlowStartMode
		on   bool
		err  string
	}{
		{"newreno", "", false, ""},
		{"newreno", SlowStartStandard, false, ""},
		{"newreno", SlowStartHyStart, true, ""},
		{"olia", SlowStartHyStart, true, ""},
		{"cubic", "", true, ""},
		{"cubic", SlowStartStandard, false, ""},
		{"bbr", "", false, ""},
		{"bbr", SlowStartHyStart, false, `"bbr" has no slow start`},
		{"newreno", "hystart", false, `unknown slow start "hystart"`},
	} {
		c, err := New(tc.name, Config{MaxDatagramSize: mds, SlowStart: tc.ss})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: error %v, want %q", tc.name, tc.ss, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", tc.name, tc.ss, err)
			continue
		}
		var on bool
		switch c := c.(type) {
		case *NewReno:
			on = c.hs.on
		case *Cubic:
			on = c.hs.on
		}
		if on != tc.on {
			t.Errorf("%s %q: HyStart++ %v, want %v", tc.name, tc.ss, on, tc.on)
		}
	}
}

// TestHyStartSteps follows the steps a traced controller records
// (HyStartTracer) through TestNewRenoHyStartCSS's and
// TestNewRenoHyStartBackToSlowStart's rounds, by hand: the first ACK
// frame ends the empty round 0; each round of 8 samples at base RTT b
// ends with minimum b, 8 samples and threshold b + max(4 ms, b/8); the
// 8th sample of the first round at 30 ms enters CSS with that baseline;
// the ACK that ends CSS's fifth round records that round and the exit.
// A round at 20 ms after CSS was entered at 24 ms leaves it at its 8th
// sample. An untraced controller records nothing.
func TestHyStartSteps(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	round := func(min, thresh float64, css bool) HyStartStep {
		return HyStartStep{Kind: HyStartRoundEnded, RoundMinRTT: ms(min), Samples: 8, Threshold: ms(thresh), CSS: css}
	}
	empty := HyStartStep{Kind: HyStartRoundEnded}
	toCSS := []HyStartStep{empty, round(20, 24, false), round(20, 24, false),
		{Kind: HyStartCSSEntered, RoundMinRTT: ms(30), Samples: 8, Threshold: ms(30), CSS: true},
		round(30, 34, true), round(30, 34, true), round(30, 34, true), round(30, 34, true), round(30, 34, true),
		{Kind: HyStartExited}}
	back := []HyStartStep{empty, round(20, 24, false), round(20, 24, false),
		{Kind: HyStartCSSEntered, RoundMinRTT: ms(24), Samples: 8, Threshold: ms(24), CSS: true},
		round(24, 28, true),
		{Kind: HyStartCSSLeft, RoundMinRTT: ms(20), Samples: 8}}
	tests := []struct {
		name, cc string
		rtts     []float64 // a round each, from round 1
		end      bool      // one more ACK, a round later
		want     []HyStartStep
	}{
		{"newreno to CSS's end", "newreno", []float64{20, 20, 30, 30, 30, 30, 30}, true, toCSS},
		{"lia to CSS's end", "lia", []float64{20, 20, 30, 30, 30, 30, 30}, true, toCSS},
		{"cubic to CSS's end", "cubic", []float64{20, 20, 30, 30, 30, 30, 30}, true, toCSS},
		{"newreno back to slow start", "newreno", []float64{20, 20, 24, 20}, false, back},
		{"cubic back to slow start", "cubic", []float64{20, 20, 24, 20}, false, back},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, traced := range []bool{true, false} {
				c, err := New(tc.cc, Config{MaxDatagramSize: mds, SlowStart: SlowStartHyStart})
				if err != nil {
					t.Fatal(err)
				}
				tr := c.(HyStartTracer)
				if traced {
					tr.TraceHyStart()
				}
				var got []HyStartStep
				for i, rtt := range tc.rtts {
					hsRound(c, i+1, 2, ms(rtt))
					got = tr.HyStartSteps(got)
				}
				if tc.end {
					at := t0.Add(time.Duration(len(tc.rtts)+1) * 100 * time.Millisecond)
					c.OnAck(at, []AckedPacket{{TimeSent: at.Add(-90 * time.Millisecond), Size: mds}}, c.Window(), RTT{Latest: ms(30)})
					got = tr.HyStartSteps(got)
				}
				if !traced {
					if len(got) != 0 {
						t.Errorf("untraced: %d steps recorded, want none", len(got))
					}
					continue
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("steps:\n got %+v\nwant %+v", got, tc.want)
				}
				if again := tr.HyStartSteps(nil); len(again) != 0 {
					t.Errorf("steps taken twice: %+v", again)
				}
			}
		})
	}
}
