package congestion

import (
	"math"
	"time"
)

func init() {
	Register("bbr", func(cfg Config) (Controller, error) { return NewBBR(cfg), nil })
}

// BBR's states, reported as the controller's State.
const (
	BBRStartup State = iota + ApplicationLimited + 1
	BBRDrain
	BBRProbeBW
	BBRProbeRTT
)

// BBRv1 parameters (Cardwell et al., "BBR: Congestion-Based Congestion
// Control", ACM Queue 14(5), 2016, and draft-cardwell-iccrg-bbr-congestion-control-00).
const (
	bbrHighGain        = 2.885 // 2/ln(2): startup's pacing and window gain
	bbrBtlBwRounds     = 10    // the max-bandwidth filter's window, in rounds
	bbrRTpropWindow    = 10 * time.Second
	bbrProbeRTTTime    = 200 * time.Millisecond
	bbrMinPipePackets  = 4
	bbrFullBwGrowth    = 1.25 // startup: a round must raise the bandwidth this much
	bbrFullBwRounds    = 3    // rounds without that growth that fill the pipe
	bbrProbeBWCwndGain = 2
)

// bbrPacingGains is ProbeBW's gain cycle, one phase per min RTT.
var bbrPacingGains = [8]float64{1.25, 0.75, 1, 1, 1, 1, 1, 1}

// bbrSent is what BBR's delivery rate estimation keeps of a sent packet
// (draft-cheng-iccrg-delivery-rate-estimation).
type bbrSent struct {
	at, deliveredTime, firstSentTime time.Time
	delivered                        uint64
	appLimited                       bool // sent while the sender was application limited
}

// BBR is BBRv1 (Cardwell et al. 2016; draft-cardwell-iccrg-bbr-congestion-control-00)
// for one path. It models the path by BtlBw, the largest delivery rate
// measured over the last 10 round trips, and RTprop, the smallest RTT of
// the last 10 s, and sets the pacing rate to pacing_gain * BtlBw and the
// window to cwnd_gain * BtlBw * RTprop (+ 3 datagrams). Its states:
// Startup (both gains 2/ln 2) until three rounds in a row raise BtlBw by
// less than 25 %; Drain (pacing gain ln 2 / 2) until the bytes in flight
// are down to one BDP; ProbeBW, cycling the pacing gain through 1.25,
// 0.75 and six times 1, each phase one RTprop long (the 1.25 phase until
// the bytes in flight reach 1.25 BDP or a loss, the 0.75 phase ending
// early once they are down to a BDP), with cwnd_gain 2; and ProbeRTT, when
// RTprop has not been renewed for 10 s: the window drops to 4 datagrams
// for max(200 ms, one round) after the bytes in flight got there, then
// RTprop's stamp is renewed and the previous window restored.
//
// Application-limited samples follow the draft and
// draft-cheng-iccrg-delivery-rate-estimation: the connection calls
// OnAppLimited when the path could have sent (window and pacer allowed)
// and the connection had nothing for it (AppLimitedObserver says when);
// the packets sent until what was in flight then is delivered carry the
// mark, and a rate sample that ends on one enters the BtlBw filter only
// if it raises BtlBw, and does not count towards Startup's three rounds
// without growth. (So a path the application or a scheduler leaves idle
// keeps its Startup and its bandwidth estimate.) ProbeRTT marks its own
// samples so, as the draft does.
//
// Our choices where the paper leaves room: ProbeBW starts its cycle with
// the 1.25 phase (Linux picks a random phase other than 0.75); losses do
// not change the window (BBRv1's packet conservation in recovery is left
// out). BBR paces its path at its own rate (PacingRater) whatever the
// connection's pacing setting says.
type BBR struct {
	mds, iw  uint64
	cwnd     uint64
	state    State
	pacing   float64 // bytes per second
	pGain    float64
	cGain    float64
	inflight uint64

	// Delivery rate estimation.
	delivered      uint64
	deliveredTime  time.Time
	firstSentTime  time.Time
	sent           []bbrSent
	head           int
	rounds         uint64
	nextRoundStart uint64
	roundStart     bool

	// BtlBw: the largest sample of each of the last bbrBtlBwRounds rounds.
	bwRound [bbrBtlBwRounds]uint64
	bwMax   [bbrBtlBwRounds]float64
	btlBw   float64

	rtProp        time.Duration
	rtPropStamp   time.Time
	rtPropExpired bool

	filledPipe  bool
	fullBw      float64
	fullBwCount int

	// appLimited is the delivery count that ends an application-limited
	// stretch (C.app_limited of the delivery rate draft); 0: none.
	appLimited uint64

	cycleIndex int
	cycleStamp time.Time
	lossPhase  bool // a loss in the current ProbeBW phase

	probeRTTDone      time.Time
	probeRTTRoundDone bool
	priorCwnd         uint64
}

// NewBBR returns a BBR controller in Startup.
func NewBBR(cfg Config) *BBR {
	base := NewNewReno(cfg, false)
	return &BBR{mds: base.mds, iw: base.cwnd, cwnd: base.cwnd, state: BBRStartup, pGain: bbrHighGain, cGain: bbrHighGain,
		rtProp: -1}
}

// OnPacketSent implements Controller: it records the delivery state the
// packet's rate sample will start from.
func (b *BBR) OnPacketSent(now time.Time, size int, inFlight uint64) {
	if inFlight <= uint64(size) {
		b.firstSentTime, b.deliveredTime = now, now
	}
	b.inflight = inFlight
	if b.head > 0 && b.head >= len(b.sent)/2 {
		n := copy(b.sent, b.sent[b.head:])
		b.sent, b.head = b.sent[:n], 0
	}
	b.sent = append(b.sent, bbrSent{at: now, deliveredTime: b.deliveredTime, firstSentTime: b.firstSentTime, delivered: b.delivered,
		appLimited: b.appLimited != 0})
}

// OnAppLimited implements AppLimitedObserver: the path could have sent
// with inFlight bytes in flight and was given nothing. The stretch lasts
// until those bytes are delivered.
func (b *BBR) OnAppLimited(inFlight uint64) {
	b.appLimited = max(b.delivered+inFlight, 1)
}

// record finds the sent record of a packet sent at t, dropping older
// ones (lost, or acknowledged out of order: those give no sample).
func (b *BBR) record(t time.Time) (bbrSent, bool) {
	for b.head < len(b.sent) && b.sent[b.head].at.Before(t) {
		b.head++
	}
	if b.head < len(b.sent) && b.sent[b.head].at.Equal(t) {
		r := b.sent[b.head]
		b.head++
		return r, true
	}
	return bbrSent{}, false
}

// OnAck implements Controller.
func (b *BBR) OnAck(now time.Time, acked []AckedPacket, priorInFlight uint64, rtt RTT) {
	var (
		rs      bbrSent
		have    bool
		sentAt  time.Time
		ackedSz uint64
	)
	for _, p := range acked {
		ackedSz += uint64(p.Size)
		b.delivered += uint64(p.Size)
		b.deliveredTime = now
		r, ok := b.record(p.TimeSent)
		if !ok {
			continue
		}
		if !have || r.delivered >= rs.delivered {
			rs, have, sentAt = r, true, p.TimeSent
		}
	}
	b.inflight = priorInFlight - min(priorInFlight, ackedSz)
	b.roundStart = false
	if b.appLimited != 0 && b.delivered > b.appLimited {
		b.appLimited = 0
	}
	if have {
		b.firstSentTime = sentAt
		if rs.delivered >= b.nextRoundStart {
			b.nextRoundStart = b.delivered
			b.rounds++
			b.roundStart = true
		}
		interval := max(sentAt.Sub(rs.firstSentTime), now.Sub(rs.deliveredTime))
		if interval > 0 && (b.rtProp < 0 || interval >= b.rtProp) {
			if bw := float64(b.delivered-rs.delivered) / interval.Seconds(); !rs.appLimited || bw >= b.btlBw {
				b.bwSample(bw)
			}
		}
		b.rtpropSample(now, now.Sub(sentAt))
	}
	b.step(now, priorInFlight, have && rs.appLimited)
	b.setControls(ackedSz, rtt.Smoothed)
}

// bwSample feeds the max filter of BtlBw.
func (b *BBR) bwSample(bw float64) {
	i := b.rounds % bbrBtlBwRounds
	if b.bwRound[i] != b.rounds {
		b.bwRound[i], b.bwMax[i] = b.rounds, 0
	}
	b.bwMax[i] = max(b.bwMax[i], bw)
	b.btlBw = 0
	for j := range b.bwMax {
		if b.bwRound[j]+bbrBtlBwRounds > b.rounds {
			b.btlBw = max(b.btlBw, b.bwMax[j])
		}
	}
}

// rtpropSample feeds the min filter of RTprop.
func (b *BBR) rtpropSample(now time.Time, rtt time.Duration) {
	b.rtPropExpired = b.rtProp >= 0 && now.Sub(b.rtPropStamp) > bbrRTpropWindow
	if rtt > 0 && (b.rtProp < 0 || rtt <= b.rtProp || b.rtPropExpired) {
		b.rtProp, b.rtPropStamp = rtt, now
	}
}

// bdp is gain times the estimated bandwidth-delay product in bytes; the
// initial window while nothing is measured.
func (b *BBR) bdp(gain float64) uint64 {
	if b.btlBw == 0 || b.rtProp < 0 {
		return b.iw
	}
	return uint64(gain * b.btlBw * b.rtProp.Seconds())
}

// step runs the state machine after an ACK; appLimited says the ACK's
// rate sample ended on an application-limited packet.
func (b *BBR) step(now time.Time, priorInFlight uint64, appLimited bool) {
	if b.state == BBRProbeBW && b.nextPhase(now, priorInFlight) {
		b.advancePhase(now)
	}
	if !b.filledPipe && b.roundStart && !appLimited {
		if b.btlBw >= b.fullBw*bbrFullBwGrowth {
			b.fullBw, b.fullBwCount = b.btlBw, 0
		} else if b.fullBwCount++; b.fullBwCount >= bbrFullBwRounds {
			b.filledPipe = true
		}
	}
	if b.state == BBRStartup && b.filledPipe {
		b.state, b.pGain, b.cGain = BBRDrain, 1/bbrHighGain, bbrHighGain
	}
	if b.state == BBRDrain && b.inflight <= b.bdp(1) {
		b.enterProbeBW(now)
	}
	if b.state != BBRProbeRTT && b.rtPropExpired {
		b.state, b.pGain, b.cGain = BBRProbeRTT, 1, 1
		b.priorCwnd = b.cwnd
		b.probeRTTDone = time.Time{}
	}
	if b.state == BBRProbeRTT {
		// ProbeRTT's low-rate samples must not lower BtlBw: they are
		// marked application limited (the draft's BBRHandleProbeRTT;
		// Linux's bbr_update_min_rtt). At a 20 ms RTT its 200 ms are
		// the whole 10-round filter.
		b.appLimited = max(b.delivered+b.inflight, 1)
		b.probeRTT(now)
	}
}

func (b *BBR) enterProbeBW(now time.Time) {
	b.state, b.pGain, b.cGain = BBRProbeBW, 1, bbrProbeBWCwndGain
	b.cycleIndex = len(bbrPacingGains) - 1
	b.advancePhase(now)
}

func (b *BBR) advancePhase(now time.Time) {
	b.cycleStamp = now
	b.cycleIndex = (b.cycleIndex + 1) % len(bbrPacingGains)
	b.pGain = bbrPacingGains[b.cycleIndex]
	b.lossPhase = false
}

// nextPhase reports whether ProbeBW's current gain phase is over.
func (b *BBR) nextPhase(now time.Time, priorInFlight uint64) bool {
	full := now.Sub(b.cycleStamp) > b.rtProp
	switch {
	case b.pGain > 1:
		return full && (b.lossPhase || priorInFlight >= b.bdp(b.pGain))
	case b.pGain < 1:
		return full || priorInFlight <= b.bdp(1)
	}
	return full
}

// probeRTT holds the window at 4 datagrams for max(200 ms, one round)
// once the bytes in flight are down to it, then leaves ProbeRTT.
func (b *BBR) probeRTT(now time.Time) {
	switch {
	case b.probeRTTDone.IsZero() && b.inflight <= bbrMinPipePackets*b.mds:
		b.probeRTTDone = now.Add(bbrProbeRTTTime)
		b.probeRTTRoundDone = false
		b.nextRoundStart = b.delivered
	case !b.probeRTTDone.IsZero():
		if b.roundStart {
			b.probeRTTRoundDone = true
		}
		if b.probeRTTRoundDone && now.After(b.probeRTTDone) {
			b.rtPropStamp = now
			b.rtPropExpired = false
			b.cwnd = max(b.cwnd, b.priorCwnd)
			if b.filledPipe {
				b.enterProbeBW(now)
			} else {
				b.state, b.pGain, b.cGain = BBRStartup, bbrHighGain, bbrHighGain
			}
		}
	}
}

// setControls sets the pacing rate and window from the model.
func (b *BBR) setControls(acked uint64, srtt time.Duration) {
	if b.pacing == 0 && srtt > 0 {
		// The initial rate: the initial window per smoothed RTT, at
		// Startup's gain.
		b.pacing = bbrHighGain * float64(b.iw) / srtt.Seconds()
	}
	if b.btlBw > 0 {
		if r := b.pGain * b.btlBw; b.filledPipe || r > b.pacing {
			b.pacing = r
		}
	}
	target := b.bdp(b.cGain) + 3*b.mds
	switch {
	case b.filledPipe:
		b.cwnd = min(b.cwnd+acked, target)
	case b.cwnd < target || b.delivered < b.iw:
		b.cwnd += acked
	}
	b.cwnd = max(b.cwnd, bbrMinPipePackets*b.mds)
	if b.state == BBRProbeRTT {
		b.cwnd = min(b.cwnd, bbrMinPipePackets*b.mds)
	}
}

// OnCongestionEvent implements Controller: a loss ends a ProbeBW 1.25
// phase at its minimum length and changes nothing else.
func (b *BBR) OnCongestionEvent(time.Time, time.Time) { b.lossPhase = true }

// OnPersistentCongestion implements Controller: the window drops to its
// minimum and regrows to the model's target (BBRv1's reaction to a
// retransmission timeout).
func (b *BBR) OnPersistentCongestion(time.Time) {
	b.priorCwnd = b.cwnd
	b.cwnd = bbrMinPipePackets * b.mds
}

// Window implements Controller.
func (b *BBR) Window() uint64 { return b.cwnd }

// SlowStartThreshold implements Controller: BBR has none.
func (b *BBR) SlowStartThreshold() uint64 { return math.MaxUint64 }

// State implements Controller: BBRStartup, BBRDrain, BBRProbeBW or
// BBRProbeRTT.
func (b *BBR) State() State { return b.state }

// PacingRate implements PacingRater.
func (b *BBR) PacingRate() uint64 { return uint64(b.pacing) }
