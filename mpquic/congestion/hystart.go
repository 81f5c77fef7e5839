package congestion

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// SlowStartMode names how a controller leaves its initial slow start
// (Config.SlowStart).
type SlowStartMode string

// The slow starts.
const (
	// SlowStartStandard: the window grows by every acknowledged byte until
	// the first congestion event (RFC 9002 Section 7.3.1); the default of
	// every controller but cubic.
	SlowStartStandard SlowStartMode = "standard"
	// SlowStartHyStart: HyStart++ (RFC 9406) in the initial slow start;
	// cubic's default.
	SlowStartHyStart SlowStartMode = "hystart++"
)

// SlowStarts lists the slow starts' names.
func SlowStarts() []string { return []string{string(SlowStartStandard), string(SlowStartHyStart)} }

// DefaultSlowStart is the slow start of the controller registered under
// name when Config.SlowStart is empty: HyStart++ for cubic, standard for
// the others, and "" for bbr, which has no slow start (its startup phase
// takes no Config.SlowStart).
func DefaultSlowStart(name string) SlowStartMode {
	switch name {
	case "cubic":
		return SlowStartHyStart
	case "bbr":
		return ""
	}
	return SlowStartStandard
}

// checkSlowStart resolves cfg.SlowStart for the controller name.
func checkSlowStart(name string, s SlowStartMode) (SlowStartMode, error) {
	def := DefaultSlowStart(name)
	switch s {
	case "":
		return def, nil
	case SlowStartStandard, SlowStartHyStart:
		if def == "" {
			return "", fmt.Errorf("congestion: %q has no slow start to choose (slow start %q)", name, s)
		}
		return s, nil
	}
	return "", fmt.Errorf("congestion: unknown slow start %q (known: %s)", s, strings.Join(SlowStarts(), ", "))
}

// HyStart++ constants (RFC 9406 Section 4.3).
const (
	hsMinRTTThresh  = 4 * time.Millisecond
	hsMaxRTTThresh  = 16 * time.Millisecond
	hsMinRTTDivisor = 8
	hsNRTTSample    = 8
	hsCSSGrowthDiv  = 4
	hsCSSRounds     = 5
	hsLimitSegments = 8 // L for an unpaced sender; a paced one has none
	hsNoRTT         = time.Duration(math.MaxInt64)
)

// hyStart is HyStart++ (RFC 9406) deciding when a controller leaves its
// initial slow start: rounds (a round ends when a packet sent after it
// began is acknowledged) whose minimum RTT, over at least 8 samples, rose
// by max(4 ms, min(16 ms, minRTT/8)) over the previous round's move to
// Conservative Slow Start (growth divided by 4); after 5 rounds of it the
// controller enters congestion avoidance with ssthresh = cwnd; a round of
// CSS whose minimum RTT falls back below the one that started it returns
// to slow start. The growth per ACK frame is limited to L = 8 datagrams,
// RFC 9406's value for unpaced senders; a paced sender has no limit
// (L = infinity, RFC 9406 Section 4.3). A congestion event ends it (the
// controller then calls stop): later slow starts are plain.
type hyStart struct {
	on           bool // still in the initial slow start
	paced        bool // L = infinity
	roundStart   time.Time
	lastRoundMin time.Duration
	curRoundMin  time.Duration
	samples      int
	css          bool
	cssBaseline  time.Duration
	cssRounds    int
	trace        bool          // record steps (TraceHyStart)
	steps        []HyStartStep // recorded, not yet taken
}

// HyStartStepKind names a step of HyStart++.
type HyStartStepKind string

// The steps of HyStart++ a controller records (HyStartTracer).
const (
	// HyStartRoundEnded: a round ended (its first packet's successor was
	// acknowledged); the step carries the round's minimum RTT and its
	// number of samples.
	HyStartRoundEnded HyStartStepKind = "round_ended"
	// HyStartCSSEntered: the current round's minimum RTT, over at least 8
	// samples, reached the previous round's minimum plus RttThresh.
	HyStartCSSEntered HyStartStepKind = "css_entered"
	// HyStartCSSLeft: in Conservative Slow Start, a round's minimum RTT fell
	// below the one that started it (slow start resumes).
	HyStartCSSLeft HyStartStepKind = "css_left"
	// HyStartExited: the last round of Conservative Slow Start ended; the
	// controller sets ssthresh to its window.
	HyStartExited HyStartStepKind = "exited"
)

// HyStartStep is one step of HyStart++ (RFC 9406) in a controller's
// initial slow start.
type HyStartStep struct {
	Kind HyStartStepKind
	// RoundMinRTT is the minimum RTT of the round that ended
	// (HyStartRoundEnded) or of the current round so far (the CSS steps);
	// 0 without a sample. Samples is that round's number of RTT samples.
	RoundMinRTT time.Duration
	Samples     int
	// Threshold is the minimum RTT at which a round enters Conservative
	// Slow Start after the round that ended (its minimum plus RttThresh;
	// HyStartRoundEnded only, 0 without a sample), or, for
	// HyStartCSSEntered, the baseline below which a round leaves it.
	Threshold time.Duration
	// CSS says whether HyStart++ is in Conservative Slow Start after the
	// step.
	CSS bool
}

// HyStartTracer is implemented by the controllers that can run HyStart++
// (newreno and its family, the coupled controllers, cubic). After
// TraceHyStart the controller records HyStart++'s steps (nothing while
// HyStart++ is off); HyStartSteps appends those recorded since its last
// call to dst and forgets them. The connection takes them after each ACK
// frame, so that the record stays short.
type HyStartTracer interface {
	TraceHyStart()
	HyStartSteps(dst []HyStartStep) []HyStartStep
}

// take appends the recorded steps to dst and forgets them.
func (h *hyStart) take(dst []HyStartStep) []HyStartStep {
	dst = append(dst, h.steps...)
	h.steps = h.steps[:0]
	return dst
}

// record notes a step when tracing.
func (h *hyStart) record(kind HyStartStepKind, roundMin time.Duration, samples int, thresh time.Duration) {
	if !h.trace {
		return
	}
	if roundMin == hsNoRTT {
		roundMin = 0
	}
	h.steps = append(h.steps, HyStartStep{Kind: kind, RoundMinRTT: roundMin, Samples: samples, Threshold: thresh, CSS: h.css})
}

// newHyStart returns HyStart++ at the start of a connection; on false
// gives one that is already off (standard slow start). paced lifts the
// per-ACK growth limit L.
func newHyStart(on, paced bool) hyStart {
	return hyStart{on: on, paced: paced, lastRoundMin: hsNoRTT, curRoundMin: hsNoRTT, cssBaseline: hsNoRTT}
}

// endsRound reports whether the acknowledgement of a packet sent at sent
// ends the current round.
func (h *hyStart) endsRound(sent time.Time) bool { return sent.After(h.roundStart) }

// onAck processes one ACK frame that newly acknowledged bytes in slow
// start (newRound: one of them ends the round; latest: the frame's RTT
// sample, 0 if none). It returns the window's increase in bytes, or done
// when Conservative Slow Start has lasted CSS_ROUNDS rounds: the caller
// then sets ssthresh to its window and enters congestion avoidance.
func (h *hyStart) onAck(now time.Time, bytes, mds float64, newRound bool, latest time.Duration) (inc float64, done bool) {
	if newRound {
		if h.trace {
			var thresh time.Duration
			if h.curRoundMin != hsNoRTT {
				thresh = h.curRoundMin + rttThresh(h.curRoundMin)
			}
			h.record(HyStartRoundEnded, h.curRoundMin, h.samples, thresh)
		}
		h.roundStart = now
		h.lastRoundMin, h.curRoundMin, h.samples = h.curRoundMin, hsNoRTT, 0
		if h.css {
			h.cssRounds++
			if h.cssRounds >= hsCSSRounds {
				h.stop()
				h.record(HyStartExited, hsNoRTT, 0, 0)
				return 0, true
			}
		}
	}
	if latest > 0 {
		h.curRoundMin = min(h.curRoundMin, latest)
		h.samples++
	}
	enough := h.samples >= hsNRTTSample && h.curRoundMin != hsNoRTT && h.lastRoundMin != hsNoRTT
	switch {
	case !h.css && enough:
		if h.curRoundMin >= h.lastRoundMin+rttThresh(h.lastRoundMin) {
			h.css, h.cssBaseline, h.cssRounds = true, h.curRoundMin, 0
			h.record(HyStartCSSEntered, h.curRoundMin, h.samples, h.cssBaseline)
		}
	case h.css && h.samples >= hsNRTTSample && h.curRoundMin < h.cssBaseline:
		h.css, h.cssBaseline = false, hsNoRTT
		h.record(HyStartCSSLeft, h.curRoundMin, h.samples, 0)
	}
	inc = bytes
	if !h.paced {
		inc = min(bytes, hsLimitSegments*mds)
	}
	if h.css {
		inc /= hsCSSGrowthDiv
	}
	return inc, false
}

// rttThresh is RFC 9406's RttThresh for the previous round's minimum RTT:
// max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR,
// MAX_RTT_THRESH)).
func rttThresh(lastRoundMin time.Duration) time.Duration {
	return max(hsMinRTTThresh, min(lastRoundMin/hsMinRTTDivisor, hsMaxRTTThresh))
}

// stop ends HyStart++ (a congestion event, or CSS's last round).
func (h *hyStart) stop() { h.on, h.css = false, false }
