package congestion

import (
	"math"
	"time"
)

func init() {
	Register("newreno", func(cfg Config) (Controller, error) { return NewNewReno(cfg, false), nil })
	Register("newreno-cwl", func(cfg Config) (Controller, error) { return NewNewReno(cfg, true), nil })
	Register("newreno-cwl-ss", func(cfg Config) (Controller, error) {
		r := NewNewReno(cfg, true)
		r.limitStartupOnly = true
		return r, nil
	})
}

// IsNewReno reports whether name is one of NewReno's registrations
// (newreno, newreno-cwl, newreno-cwl-ss), which take Config.RenoGrowth.
func IsNewReno(name string) bool {
	return name == "newreno" || name == "newreno-cwl" || name == "newreno-cwl-ss"
}

// LossReductionFactor is kLossReductionFactor of RFC 9002 Section 7.3.2.
const LossReductionFactor = 0.5

// NewReno is the congestion controller of RFC 9002 Section 7 with byte
// counting: in slow start the window grows by the bytes acknowledged; in
// congestion avoidance it grows by one maximum datagram size for every
// window's worth of acknowledged bytes; a loss of a packet sent after the
// current recovery period began halves it (never below two datagrams);
// persistent congestion collapses it to two datagrams.
//
// Registered as "newreno", it grows whenever bytes are acknowledged, as the
// multipath QUIC of the reference experiments did; the reference paper's
// Table I (cwnd growth per RTT under window reservation) depends on this.
// Registered as "newreno-cwl" it also applies RFC 9002 Section 7.8: the
// window does not grow while the sender is not congestion-window limited
// (bytes in flight before the ACK below the window minus three datagrams,
// or below half the window in slow start). Registered as "newreno-cwl-ss"
// (ours, not an RFC's) it applies that rule only in the initial slow start
// (while ssthresh is unset) and grows as "newreno" after it.
//
// Config.RenoGrowth GrowthPerRTT replaces the byte counting of congestion
// avoidance by one datagram per round trip (a round ends when a packet
// sent after it began is acknowledged) in which anything was
// acknowledged, however much of the window the path used.
//
// Config.SlowStart SlowStartHyStart leaves the initial slow start by
// HyStart++ (RFC 9406, see hyStart) instead of at the first loss: the
// growth per ACK frame is at most 8 datagrams (unless Config.Paced), a quarter of that in
// Conservative Slow Start (the window in whole bytes, rounded down), and
// the fifth round of Conservative Slow Start sets ssthresh to the window.
// The coupled controllers, NewReno underneath, take it too.
type NewReno struct {
	mds           uint64
	cwnd          uint64
	ssthresh      uint64
	minWindow     uint64
	bytesAcked    uint64    // acknowledged bytes counted towards the next CA increase
	recoveryStart time.Time // congestion_recovery_start_time; zero if none
	inRecovery    bool
	appLimited    bool // the last ACK found the sender application limited
	checkLimited  bool
	// limitStartupOnly restricts checkLimited to the initial slow start
	// (newreno-cwl-ss).
	limitStartupOnly bool
	perRTT           bool      // Config.RenoGrowth is GrowthPerRTT
	roundStart       time.Time // per-RTT growth: when the current round began
	coupled          *coupled  // lia, olia, balia; nil for NewReno itself
	hs               hyStart   // Config.SlowStart hystart++; off otherwise
	// conns is Config.EmulatedConnections (at least 1) and backoff the
	// factor of a congestion event, (conns-1+beta)/conns.
	conns       uint64
	backoff     float64
	rtoCollapse bool // Config.RTOCollapse
}

// NewNewReno returns a NewReno controller; cwndLimited enables the
// RFC 9002 Section 7.8 rule.
func NewNewReno(cfg Config, cwndLimited bool) *NewReno {
	mds := uint64(cfg.MaxDatagramSize)
	iw := min(10*mds, max(14720, 2*mds))
	if cfg.InitialWindowPackets > 0 {
		iw = uint64(cfg.InitialWindowPackets) * mds
	}
	beta := LossReductionFactor
	if cfg.LossReduction > 0 {
		beta = cfg.LossReduction
	}
	return &NewReno{mds: mds, cwnd: iw, ssthresh: math.MaxUint64, minWindow: 2 * mds, checkLimited: cwndLimited || cfg.CwndLimited,
		perRTT: cfg.RenoGrowth == GrowthPerRTT, hs: newHyStart(cfg.SlowStart == SlowStartHyStart, cfg.Paced),
		conns: uint64(max(cfg.EmulatedConnections, 1)), backoff: emulatedBackoff(cfg.EmulatedConnections, beta), rtoCollapse: cfg.RTOCollapse}
}

// OnPacketSent implements Controller.
func (r *NewReno) OnPacketSent(time.Time, int, uint64) {}

func (r *NewReno) inCongestionRecovery(sent time.Time) bool {
	return !r.recoveryStart.IsZero() && !sent.After(r.recoveryStart)
}

// cwndLimited reports whether the window was (nearly) used up.
func (r *NewReno) cwndLimited(priorInFlight uint64) bool {
	if priorInFlight >= r.cwnd {
		return true
	}
	if r.cwnd < r.ssthresh && priorInFlight >= r.cwnd/2 {
		return true
	}
	return r.cwnd-priorInFlight <= 3*r.mds
}

// OnAck implements Controller.
func (r *NewReno) OnAck(now time.Time, acked []AckedPacket, priorInFlight uint64, rtt RTT) {
	limited := r.checkLimited && (!r.limitStartupOnly || r.ssthresh == math.MaxUint64) && !r.cwndLimited(priorInFlight)
	r.appLimited = limited
	if r.coupled != nil {
		r.coupled.srtt = rtt.Smoothed
	}
	var hsBytes uint64 // bytes HyStart++ grows the window by
	hsRound := false
	for _, p := range acked {
		if r.inCongestionRecovery(p.TimeSent) {
			continue
		}
		r.inRecovery = false
		size := uint64(p.Size)
		if r.coupled != nil {
			// OLIA's ell counts the bytes acknowledged outside
			// recovery whether the window was used or not, as
			// MPQUIC's does (CwndLimited gates the growth only).
			r.coupled.sinceLoss += size
		}
		if limited {
			continue
		}
		if r.hs.on {
			// Still in the initial slow start (ssthresh unset):
			// HyStart++ grows the window per ACK frame, below.
			hsBytes += size
			hsRound = hsRound || r.hs.endsRound(p.TimeSent)
			continue
		}
		if r.cwnd < r.ssthresh {
			r.cwnd += size
			continue
		}
		if r.coupled != nil {
			r.cwnd = r.coupled.grow(size)
			continue
		}
		if r.perRTT {
			if p.TimeSent.After(r.roundStart) {
				r.roundStart = now
				r.cwnd += r.conns * r.mds
			}
			continue
		}
		// N emulated connections grow N datagrams a window.
		r.bytesAcked += r.conns * size
		for r.bytesAcked >= r.cwnd {
			r.bytesAcked -= r.cwnd
			r.cwnd += r.mds
		}
	}
	if hsBytes > 0 {
		inc, done := r.hs.onAck(now, float64(hsBytes), float64(r.mds), hsRound, rtt.Latest)
		if done {
			r.ssthresh = r.cwnd
			return
		}
		r.cwnd += uint64(inc)
	}
}

// OnCongestionEvent implements Controller.
func (r *NewReno) OnCongestionEvent(now, sentTime time.Time) {
	if r.inCongestionRecovery(sentTime) {
		return
	}
	r.recoveryStart = now
	r.roundStart = now
	r.inRecovery = true
	r.hs.stop()
	reduced := uint64(float64(r.cwnd) * r.backoff)
	if r.coupled != nil {
		reduced = r.coupled.onLoss()
	}
	r.ssthresh = max(reduced, r.minWindow)
	r.cwnd = r.ssthresh
	r.bytesAcked = 0
}

// OnPersistentCongestion implements Controller.
func (r *NewReno) OnPersistentCongestion(time.Time) {
	r.hs.stop()
	r.cwnd = r.minWindow
	r.recoveryStart = time.Time{}
	r.inRecovery = false
	r.bytesAcked = 0
}

// OnProbeTimeout implements ProbeTimeoutReactor: with Config.RTOCollapse,
// MPQUIC's retransmission timeout from the RTOAfterPTOs-th consecutive
// probe timeout on (ssthresh half the window, the window its minimum,
// slow start and recovery begun anew).
func (r *NewReno) OnProbeTimeout(_ time.Time, consecutive int) {
	if !r.rtoCollapse || consecutive < RTOAfterPTOs {
		return
	}
	r.hs.stop()
	r.ssthresh = r.cwnd / 2
	r.cwnd = r.minWindow
	r.recoveryStart = time.Time{}
	r.inRecovery = false
	r.bytesAcked = 0
}

// Window implements Controller.
func (r *NewReno) Window() uint64 { return r.cwnd }

// SlowStartThreshold implements Controller.
func (r *NewReno) SlowStartThreshold() uint64 { return r.ssthresh }

// TraceHyStart makes r record HyStart++'s steps (HyStartTracer).
func (r *NewReno) TraceHyStart() { r.hs.trace = true }

// HyStartSteps appends the steps recorded since the last call to dst
// (HyStartTracer).
func (r *NewReno) HyStartSteps(dst []HyStartStep) []HyStartStep { return r.hs.take(dst) }

// State implements Controller.
func (r *NewReno) State() State {
	switch {
	case r.inRecovery:
		return Recovery
	case r.appLimited:
		return ApplicationLimited
	case r.cwnd < r.ssthresh:
		return SlowStart
	default:
		return CongestionAvoidance
	}
}
