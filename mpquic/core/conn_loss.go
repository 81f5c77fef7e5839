package core

import (
	"math"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qlog"
	"github.com/mpq/mpq/scheduler"
)

// spacesOf returns the packet number spaces whose loss recovery runs on
// path p with p's RTT and congestion controller: the handshake spaces ride
// on path 0 (in buf), and once they are gone p's own alone (p.appOnly,
// not to be appended to or written).
func (c *Conn) spacesOf(p *path, buf []*pnSpace) []*pnSpace {
	if p.id != 0 || c.handshakeSpacesGone {
		return p.appOnly[:]
	}
	buf = buf[:0]
	for l := range c.spaces {
		if !c.spaces[l].discarded {
			buf = append(buf, &c.spaces[l])
		}
	}
	return append(buf, &p.app)
}

func (c *Conn) levelOfSpace(p *path, sp *pnSpace) level {
	for l := range c.spaces {
		if sp == &c.spaces[l] {
			return level(l)
		}
	}
	return levelApp
}

// ackDelayDuration decodes the ACK Delay field of an ACK frame, raw times
// 2^exp microseconds (RFC 9000 Section 19.3), saturating at the largest
// Duration: the field reaches 2^62-1, whose product overflows.
func ackDelayDuration(raw, exp uint64) time.Duration {
	const maxMicros = uint64(math.MaxInt64 / int64(time.Microsecond))
	if exp > 63 || raw > maxMicros>>exp {
		return math.MaxInt64
	}
	return time.Duration(raw<<exp) * time.Microsecond
}

// maxAckDelayFor is the max_ack_delay that applies to a space's PTO: the
// peer's for application data, zero for the handshake spaces.
func (c *Conn) maxAckDelayFor(l level) time.Duration {
	if l == levelApp {
		return c.peerMaxAckDelay()
	}
	return 0
}

// handleAck processes an ACK frame for space l (or the application space of
// path p) following RFC 9002 Section A.7.
// rangesAck reports whether the ranges acknowledge packet number pn.
func rangesAck(ranges []wire.AckRange, pn uint64) bool {
	for _, r := range ranges {
		if r.Smallest <= pn && pn <= r.Largest {
			return true
		}
	}
	return false
}

func (c *Conn) handleAck(now time.Time, p *path, l level, wranges []wire.AckRange, rawDelay uint64, frameType uint64) error {
	var sp *pnSpace
	if l == levelApp {
		sp = &p.app
	} else {
		sp = &c.spaces[l]
	}
	ranges := c.rangeBuf[:0]
	for _, r := range wranges {
		ranges = append(ranges, recovery.Range{Smallest: r.Smallest, Largest: r.Largest})
	}
	c.rangeBuf = ranges
	priorInFlight := c.bytesInFlight(p)
	acked := c.ackedBuf[:0]
	res, err := sp.sent.OnAck(ranges, func(sp0 *recovery.SentPacket) {
		c.onFramesAcked(p, l, sp0.Frames)
		if sp0.InFlight {
			acked = append(acked, congestion.AckedPacket{Number: sp0.Number, TimeSent: sp0.TimeSent, Size: sp0.Size})
			p.bytesAcked += uint64(sp0.Size)
		}
		if l == levelApp {
			if sp0.TimeSent.After(p.health.newestAckedSent) {
				p.health.newestAckedSent = sp0.TimeSent
			}
			c.app.noteAcked(p.id, sp0.Number)
			c.copies.settle(pktKey{p.id, sp0.Number})
			if c.pktObs != nil && sp0.InFlight {
				c.pktObs.OnPacketAcked(now, p.id, sp0.Number)
			}
		}
	})
	c.ackedBuf = acked
	if err != nil {
		return withFrameType(err, frameType)
	}
	if l == levelApp && p.health.failed && len(wranges) > 0 && wranges[0].Largest >= p.health.failPN {
		// A packet sent since the path failed arrived: it works again.
		defer c.pathRecovered(now, p, rangesAck(wranges, p.health.probePN-1))
	}
	if !res.NewlyAcked {
		return nil
	}
	if res.LargestNewlyAcked && res.AckElicitingAcked {
		ackDelay := time.Duration(0)
		if l == levelApp {
			exp := uint64(3)
			if c.havePeerTP {
				exp = c.peerParams.AckDelayExponent
			}
			ackDelay = ackDelayDuration(rawDelay, exp)
		}
		maxDelay := time.Duration(-1)
		if c.confirmed {
			maxDelay = c.peerMaxAckDelay()
		}
		p.rtt.Update(now, now.Sub(res.LargestSentTime), ackDelay, maxDelay)
	}
	c.detectLost(now, p, sp, l)
	if len(acked) > 0 {
		p.cc.OnAck(now, acked, priorInFlight, c.rttSnapshot(p))
		if st := p.cc.State(); st == congestion.BBRDrain || st == congestion.BBRProbeBW {
			p.leftStartup = true
		}
	}
	// Reset the PTO backoff unless the client is unsure the server
	// validated its address (RFC 9002 Section 6.2.1).
	if c.peerCompletedAddressValidation() {
		p.ptoCount = 0
	}
	c.updateMetrics(now, p)
	return nil
}

func (c *Conn) rttSnapshot(p *path) congestion.RTT {
	return congestion.RTT{Latest: p.rtt.Latest(), Smoothed: p.rtt.Smoothed(), Var: p.rtt.Var(), Min: p.rtt.Min()}
}

// peerCompletedAddressValidation is PeerCompletedAddressValidation of
// RFC 9002 Section A.6.
func (c *Conn) peerCompletedAddressValidation() bool {
	if !c.isClient {
		return true
	}
	return c.confirmed || c.keys[levelHandshake].discarded || c.spaces[levelHandshake].sent.LargestAcked() >= 0
}

// detectLost runs loss detection on one space and reacts to the losses:
// frames are queued again and the congestion controller is told.
func (c *Conn) detectLost(now time.Time, p *path, sp *pnSpace, l level) {
	pcDuration := p.rtt.PersistentCongestionDuration(c.peerMaxAckDelay())
	res := sp.sent.DetectLost(now, p.rtt.LossDelay(), pcDuration, p.rtt.FirstSampleTime(), func(sp0 *recovery.SentPacket, trig recovery.LossTrigger) {
		p.packetsLost++
		p.bytesLost += uint64(sp0.Size)
		c.qlog.PacketLost(now, p.id, qlog.PacketHeader{PacketType: l.String(), PacketNumber: sp0.Number, HasPacketNumber: true}, trig.String())
		if c.pktObs != nil && l == levelApp && sp0.InFlight {
			c.pktObs.OnPacketLost(now, p.id, sp0.Number)
		}
		if l == levelApp && sp0.AckEliciting {
			c.onDataLost(now, p, sp0, scheduler.LossDeclared)
		} else {
			c.onFramesLost(p, l, sp0.Frames)
		}
		if l == levelApp {
			c.copies.settle(pktKey{p.id, sp0.Number})
		}
	})
	if res.LostBytes == 0 && !res.PersistentCongestion {
		return
	}
	p.cc.OnCongestionEvent(now, res.LargestLostSentTime)
	if res.PersistentCongestion {
		p.cc.OnPersistentCongestion(now)
		p.rtt.ResetAfterPersistentCongestion()
	}
}

// onFramesAcked acts on the frames of an acknowledged packet.
func (c *Conn) onFramesAcked(p *path, l level, refs []recovery.FrameRef) {
	for i := range refs {
		r := &refs[i]
		switch r.Kind {
		case refStream:
			if s := c.streams.get(r.ID); s != nil && s.send != nil {
				s.send.OnAcked(r.Offset, int(r.Length), r.Fin)
				c.lastStreamAck = c.now
				c.budgetAcked()
				c.notifyWritable(s)
				c.maybeForget(s)
			}
		case refCrypto:
			c.crypto[r.ID].send.OnAcked(r.Offset, int(r.Length), false)
		case refAck:
			// Our ACK was received: stop repeating what it covered
			// (RFC 9000 Section 13.2.4).
			if sp := c.spaceByRef(r.ID); sp != nil {
				sp.recv.OnAckAcked(r.Offset)
			}
		case refResetStream:
			if s := c.streams.get(r.ID); s != nil && s.send != nil {
				s.send.OnResetAcked()
				c.maybeForget(s)
			}
		case refHandshakeDone:
			c.ctrl.handshakeDone = false
		}
	}
}

// onDataLost handles the frames of the ack-eliciting 1-RTT packet sp0 of
// path p, declared lost or stranded on p at a PTO, as the path scheduler's
// LossPolicy decides (scheduler.DefaultLossDecision without one). A
// declared loss without copies in flight is always sent again.
func (c *Conn) onDataLost(now time.Time, p *path, sp0 *recovery.SentPacket, reason scheduler.LossReason) {
	dec := scheduler.DefaultLossDecision(nil)
	if c.lossPol != nil {
		lp := c.lostPacket(p, sp0, reason)
		dec = c.lossPol.OnDataLost(now, c.pathInfos(c.paths, now), lp)
		if dec.Action == scheduler.LeaveToCopies && reason != scheduler.LossPTO && len(lp.Copies) == 0 {
			dec = scheduler.LossDecision{Action: scheduler.ResendNow}
		}
	}
	if dec.Action == scheduler.LeaveToCopies {
		return
	}
	c.onFramesLost(p, levelApp, sp0.Frames)
	for _, r := range sp0.Frames {
		if r.Kind != refStream {
			continue
		}
		if s := c.streams.m[r.ID]; s != nil {
			s.pinned, s.pinPath = dec.Action == scheduler.ResendOn, dec.Path
		}
	}
}

// onFramesLost queues again what a lost packet carried, when still needed.
func (c *Conn) onFramesLost(p *path, l level, refs []recovery.FrameRef) {
	for i := range refs {
		r := &refs[i]
		switch r.Kind {
		case refStream:
			if s := c.streams.get(r.ID); s != nil && s.send != nil {
				s.send.OnLost(r.Offset, int(r.Length), r.Fin)
				c.queueSend(s)
			}
		case refCrypto:
			if !c.spaces[min(r.ID, uint64(levelHandshake))].discarded || r.ID == uint64(levelApp) {
				c.crypto[r.ID].send.OnLost(r.Offset, int(r.Length), false)
			}
		case refResetStream:
			if s := c.streams.get(r.ID); s != nil && s.send != nil {
				s.send.OnResetLost()
				c.ctrl.resetStream.add(r.ID)
			}
		case refStopSending:
			if s := c.streams.m[r.ID]; s != nil && s.recv != nil && !s.recv.Done() {
				c.ctrl.stopSending.add(r.ID)
			}
		case refMaxData:
			if r.Offset == c.streams.connRecv.Limit() {
				c.ctrl.maxData = true
			}
		case refMaxStreamData:
			if s := c.streams.m[r.ID]; s != nil && s.recv != nil && !s.recv.FinalSizeKnown() && r.Offset == s.recv.Limit() {
				c.ctrl.maxStreamData.add(r.ID)
			}
		case refMaxStreams:
			if r.Offset == c.streams.peerLimitSent[r.ID] {
				c.ctrl.maxStreams[r.ID] = true
			}
		case refDataBlocked:
			if lim, ok := c.streams.connSend.BlockedAt(); ok && lim == r.Offset {
				c.ctrl.dataBlocked = true
			}
		case refStreamDataBlocked:
			if s := c.streams.get(r.ID); s != nil && s.send != nil {
				if lim, ok := s.send.BlockedAt(); ok && lim == r.Offset {
					c.ctrl.streamDataBlocked.add(r.ID)
				}
			}
		case refStreamsBlocked:
			if c.streams.blockedAt[r.ID] == r.Offset+1 && c.streams.localLimit[r.ID] == r.Offset {
				c.ctrl.streamsBlocked[r.ID] = true
			}
		case refNewConnID:
			if lc := c.ids.localByKey(r.ID); lc != nil && !lc.retired {
				c.ctrl.newConnIDs.add(r.ID)
			}
		case refRetireConnID:
			c.ids.retireQueue = append(c.ids.retireQueue, r.ID)
			c.ctrl.retire = true
		case refHandshakeDone:
			c.ctrl.handshakeDone = true
		case refPathAbandon:
			// Repeat it while the path's state is kept.
			if p := c.pathByID(r.ID); p != nil && p.state == pathClosing {
				c.ctrl.pathAbandon.add(r.ID)
			}
		case refPathStatus:
			// Only the latest status is worth repeating.
			if p := c.openPath(r.ID); p != nil && p.statusSeq == r.Offset {
				c.ctrl.pathStatus.add(r.ID)
			}
		case refMaxPathID:
			if r.Offset == c.mp.localMax {
				c.ctrl.maxPathID = true
			}
		case refPathsBlocked:
			if r.Offset == c.mp.peerMax && c.mp.pathsBlockedSent == r.Offset+1 {
				c.ctrl.pathsBlocked = true
			}
		case refPathCIDsBlocked:
			if !c.ids.hasUnusedRemote(r.ID) && !c.mp.retired(r.ID) {
				c.ctrl.pathCIDsBlocked.add(r.ID)
			}
		case refPing, refAck:
		}
	}
}

// spaceByRef finds the space an ACK record refers to: levels 0 and 1 are
// the handshake spaces, 2+pathID the application space of a path.
func (c *Conn) spaceByRef(id uint64) *pnSpace {
	if id < uint64(levelApp) {
		return &c.spaces[id]
	}
	if p := c.pathByID(id - uint64(levelApp)); p != nil {
		return &p.app
	}
	return nil
}

// lossTimer returns when the loss detection timer of path p fires
// (SetLossDetectionTimer, RFC 9002 Section A.8), and the space it is for.
func (c *Conn) lossTimer(now time.Time, p *path) (time.Time, *pnSpace, bool) {
	if p.id != 0 || c.handshakeSpacesGone {
		if t, sp, isPTO, ok := c.appLossTimer(p); ok {
			return t, sp, isPTO
		}
	}
	var buf [3]*pnSpace
	sps := c.spacesOf(p, buf[:0])
	var earliest time.Time
	var esp *pnSpace
	for _, sp := range sps {
		if lt := sp.sent.LossTime(); !lt.IsZero() && (earliest.IsZero() || lt.Before(earliest)) {
			earliest, esp = lt, sp
		}
	}
	if !earliest.IsZero() {
		return earliest, esp, false
	}
	if c.amplificationRoom(p) == 0 || p.health.failed {
		// A failed path is probed on a schedule of its own (pathfail.go).
		return time.Time{}, nil, false
	}
	inFlight := false
	for _, sp := range sps {
		if sp.sent.AckElicitingInFlight() {
			inFlight = true
		}
	}
	if !inFlight && (p.id != 0 || c.peerCompletedAddressValidation()) {
		return time.Time{}, nil, false
	}
	backoff := time.Duration(1) << min(p.ptoCount, 16)
	if !inFlight {
		// Anti-deadlock: the client probes from now (RFC 9002 Section 6.2.2.1).
		d := p.rtt.PTO(0) * backoff
		l := levelInitial
		if c.keys[levelHandshake].haveSeal {
			l = levelHandshake
		}
		return now.Add(d), &c.spaces[l], true
	}
	var pto time.Time
	var psp *pnSpace
	for _, sp := range sps {
		if !sp.sent.AckElicitingInFlight() {
			continue
		}
		l := c.levelOfSpace(p, sp)
		if l == levelApp && !c.confirmed {
			continue // no application PTO before confirmation
		}
		t := sp.sent.LastAckElicitingTime().Add(p.rtt.PTO(c.maxAckDelayFor(l)) * backoff)
		if pto.IsZero() || t.Before(pto) {
			pto, psp = t, sp
		}
	}
	return pto, psp, true
}

// appLossTimer is lossTimer for a path whose only space is its own
// application space (spacesOf), without the loops over spaces; ok is false
// where lossTimer's anti-deadlock probe applies, which it leaves to
// lossTimer.
func (c *Conn) appLossTimer(p *path) (t time.Time, sp *pnSpace, isPTO, ok bool) {
	sp = &p.app
	if lt := sp.sent.LossTime(); !lt.IsZero() {
		return lt, sp, false, true
	}
	if c.amplificationRoom(p) == 0 || p.health.failed {
		return time.Time{}, nil, false, true
	}
	if !sp.sent.AckElicitingInFlight() {
		if p.id != 0 || c.peerCompletedAddressValidation() {
			return time.Time{}, nil, false, true
		}
		return time.Time{}, nil, false, false
	}
	if !c.confirmed {
		return time.Time{}, nil, true, true // no application PTO before confirmation
	}
	backoff := time.Duration(1) << min(p.ptoCount, 16)
	return sp.sent.LastAckElicitingTime().Add(p.rtt.PTO(c.maxAckDelayFor(levelApp)) * backoff), sp, true, true
}

// onLossTimeout runs OnLossDetectionTimeout (RFC 9002 Section A.9) for path
// p.
func (c *Conn) onLossTimeout(now time.Time, p *path) {
	t, sp, isPTO := c.lossTimer(now, p)
	if t.IsZero() || t.After(now) {
		return
	}
	l := c.levelOfSpace(p, sp)
	if !isPTO {
		c.detectLost(now, p, sp, l)
		c.updateMetrics(now, p)
		return
	}
	p.ptoCount++
	c.qlog.LossTimerUpdated(now, p.id, "expired", "pto", 0)
	if r, ok := p.cc.(congestion.ProbeTimeoutReactor); ok && l == levelApp {
		w, ss := p.cc.Window(), p.cc.SlowStartThreshold()
		r.OnProbeTimeout(now, p.ptoCount)
		if p.cc.Window() != w || p.cc.SlowStartThreshold() != ss {
			c.updateMetrics(now, p)
		}
	}
	// Send one or two ack-eliciting probes in that space
	// (RFC 9002 Section 6.2.4). Handshake data still unacknowledged is sent
	// again so that the probe can make progress.
	sp.probes = 2
	if l != levelApp {
		sp.sent.ForEachOutstanding(func(sp0 *recovery.SentPacket) bool {
			for _, r := range sp0.Frames {
				if r.Kind == refCrypto {
					c.crypto[r.ID].send.OnLost(r.Offset, int(r.Length), false)
				}
			}
			return true
		})
	} else if c.otherActivePath(p) {
		// Multipath: the path may be broken. The path scheduler decides
		// whether what it carries goes again at once (by default on the
		// other paths, instead of waiting for its recovery:
		// draft-ietf-quic-multipath-21 Section 5.5). The packets stay
		// outstanding for congestion control; whichever copy arrives
		// first acknowledges the data.
		sp.sent.ForEachOutstanding(func(sp0 *recovery.SentPacket) bool {
			if sp0.AckEliciting {
				c.onDataLost(now, p, sp0, scheduler.LossPTO)
			}
			return true
		})
	} else if !c.hasNewData() {
		// Nothing new to send: repeat the oldest outstanding data.
		sp.sent.ForEachOutstanding(func(sp0 *recovery.SentPacket) bool {
			if !sp0.AckEliciting {
				return true
			}
			c.onFramesLost(p, l, sp0.Frames)
			return false
		})
	}
}

// otherActivePath reports whether a validated path other than p is open
// and not failed.
func (c *Conn) otherActivePath(p *path) bool {
	for _, q := range c.paths {
		if q != p && q.state == pathActive && !q.health.failed && c.ownAckPath(q) {
			return true
		}
	}
	return false
}

// hasNewData reports whether any stream has data flow control lets out.
func (c *Conn) hasNewData() bool {
	return len(c.sendableStreams()) > 0
}

// updateMetrics logs changed recovery metrics and congestion state.
func (c *Conn) updateMetrics(now time.Time, p *path) {
	st := p.cc.State()
	if st != p.ccState {
		c.qlog.CongestionStateUpdated(now, p.id, p.ccState.String(), st.String(), "")
		p.ccState = st
	}
	if c.qlog == nil && c.obs == nil {
		return
	}
	m := pathMetrics{cwnd: p.cc.Window(), inFlight: c.bytesInFlight(p), ssthresh: p.cc.SlowStartThreshold(),
		srtt: p.rtt.Smoothed(), minRTT: p.rtt.Min(), latestRTT: p.rtt.Latest(), rttVar: p.rtt.Var()}
	changed := m != p.lastMetrics
	if !changed && p.hs == nil {
		return
	}
	p.lastMetrics = m
	if c.qlog != nil {
		qm := qlog.Metrics{CongestionWindow: m.cwnd, BytesInFlight: m.inFlight,
			SmoothedRTT: m.srtt, MinRTT: m.minRTT, LatestRTT: m.latestRTT, RTTVariance: m.rttVar, SSThresh: m.ssthresh}
		steps := 0
		if p.hs != nil {
			// HyStart++'s steps of this ACK frame, each with the
			// metrics after it.
			c.hsSteps = p.hs.HyStartSteps(c.hsSteps[:0])
			for _, s := range c.hsSteps {
				c.qlog.HyStartStep(now, p.id, qm, qlog.HyStart{Step: string(s.Kind), RoundMinRTT: s.RoundMinRTT,
					Samples: s.Samples, Threshold: s.Threshold, CSS: s.CSS})
			}
			steps = len(c.hsSteps)
		}
		if changed && steps == 0 {
			c.qlog.MetricsUpdated(now, p.id, qm)
		}
	}
	if c.obs != nil && changed {
		c.obs.PathMetricsUpdated(now, PathMetrics{PathID: p.id, CongestionWindow: m.cwnd, BytesInFlight: m.inFlight,
			SSThresh: m.ssthresh, SmoothedRTT: m.srtt, MinRTT: m.minRTT, LatestRTT: m.latestRTT, CongestionState: st.String()})
	}
}
