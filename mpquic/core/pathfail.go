package core

import (
	"time"

	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/qerr"
	"github.com/mpq/mpq/scheduler"
)

// Path failure detection: the connection's side of a path that stops
// delivering (a link down, a Wi-Fi handover), with the multipath extension
// negotiated and the handshake confirmed.
//
// Detection. Let t0 be the send time of the oldest ack-eliciting packet
// of path p still outstanding above p's largest acknowledged packet: the
// first packet sent after the last one known to have arrived. p is
// declared failed at t0 + D(p), D(p) = max(failRTTs × srtt_p, 2 PTO_p)
// (PTO_p without backoff: srtt + max(4 rttvar, 1 ms) + max_ack_delay; one
// PTO alone covers a lone packet's delayed acknowledgement with no margin
// at all, and a receiver a few milliseconds late made a false failure), as
// soon as some other path q witnesses that the peer is alive and the
// network delivers elsewhere: q is active, not failed, a packet sent on q
// at or after t0 was acknowledged, and q is not silent itself (it has no
// packet unacknowledged above its largest acknowledged one for D(q) or
// longer). The last path that is not failed is therefore never declared
// failed, nor is any path while all are silent: the RFC 9002 probe
// timeouts and the idle timeout handle those cases as before.
//
// Bound. p is declared failed at most max(D(p), E) after the first packet
// sent on it that is lost, where E is the time until a packet sent on a
// surviving path q at or after it is acknowledged: E <= g_q + srtt_q +
// max_ack_delay, g_q the time until q sends an ack-eliciting packet (zero
// when q carries data; a PTO of p reinjects p's data onto q, so g_q <=
// PTO_p when q was idle). With paths of equal smoothed RTT R carrying
// data, that is 3 R (failRTTs) after the first lost packet as long as
// 8 rttvar + 2 max_ack_delay <= R, else 2 (R + 4 rttvar + max_ack_delay):
// about 3.3 R at R = 60 ms with a 25 ms max_ack_delay and rttvar 2 ms.
//
// Failure. The path is marked failed (scheduler.PathInfo.Failed, which
// the built-in schedulers avoid), everything outstanding on it is
// declared lost and its data offered to the path scheduler's loss policy
// with scheduler.LossPathFailed (sent again on the other paths by
// default), its probe timeouts stop, and it is probed: a PING after
// PTO_p, then after twice as long each time, at most max(failProbeMax,
// PTO_p) apart. At every probe what is still outstanding on the path is
// declared lost the same way.
//
// Recovery. An acknowledgement of any packet the path carried from t0 on
// (a probe, or a packet declared lost at the failure that arrived after
// all) ends the failure: the rest outstanding is declared lost as above,
// and the path's congestion window collapses to the minimum as after
// persistent congestion (RFC 9002 Section 7.6.2: the outage lost
// everything for longer than that; the slow start threshold stays), and
// its RTT estimate restarts from the sample of the acknowledgement that
// ended the failure (as a first sample would set it).
//
// Abandonment. A path failed for Config.PathAbandonAfter (if set) is
// abandoned with PATH_ABANDON and error PATH_UNSTABLE_OR_POOR
// (draft-ietf-quic-multipath-21 Section 3.4).
//
// Each step is recorded as a PathEvent (PathStats.Events) and logged in
// qlog as quic:tuple_assigned with the extension field path_event.

// failRTTs is K of the detection threshold, in smoothed RTTs of the path.
const failRTTs = 3

// failProbeMax bounds the backoff of the probes of a failed path: a path
// that comes back is in use again at most this long (plus its RTT) later.
const failProbeMax = time.Second

// Path events recorded in PathEvent.Kind.
const (
	PathEventFailed    = "failed"
	PathEventRecovered = "recovered"
	// PathEventSpurious ends a failure that an acknowledgement of a packet
	// sent before the failure was declared disproved: the path was slow
	// (a stalled receiver, a burst of queueing), not down.
	PathEventSpurious  = "spurious"
	PathEventAbandoned = "abandoned"
)

// PathEvent is a change of a path's health.
type PathEvent struct {
	PathID uint64
	// Kind is PathEventFailed, PathEventRecovered, PathEventSpurious or
	// PathEventAbandoned.
	Kind string
	At   time.Time
}

// pathHealth is the failure detection state of a path.
type pathHealth struct {
	failed   bool
	failedAt time.Time
	// failPN is the first packet number sent from t0 on: an
	// acknowledgement of it or of a later one ends the failure.
	failPN uint64
	// probePN is the first packet number sent after the failure was
	// declared: an acknowledgement of probePN-1, the last one sent before
	// the declaration, shows the failure spurious.
	probePN uint64
	// probeNext is when the next probe is due, probeTries how many were
	// sent.
	probeNext  time.Time
	probeTries int
	// newestAckedSent is the latest send time of an acknowledged 1-RTT
	// packet of the path: the evidence that the path delivers.
	newestAckedSent time.Time
	// witnessAsked is the t0 of the path's silence for which the idle
	// paths were asked for a witness (askWitnesses).
	witnessAsked time.Time
}

// maxFailBackoff bounds the doublings of D(p) after spurious failures.
const maxFailBackoff = 4

// failAfter is D(p), the silence after which path p is declared failed:
// max(failRTTs × srtt, 2 PTO), doubled for each failure of the path that
// turned out spurious (at most maxFailBackoff times): a path whose
// silences outlast D without an outage (a receiver stalled by its CPU, an
// acknowledgement policy slower than the RTT suggests) is given longer.
func (c *Conn) failAfter(p *path) time.Duration {
	d := max(failRTTs*p.rtt.Smoothed(), 2*p.rtt.PTO(c.peerMaxAckDelay()))
	return d << min(p.spuriousFailures, maxFailBackoff)
}

// failureTimer returns, for a path p that the failure detection watches
// and that is silent (see silentSince), the time t0 + D(p), and whether
// that is when p is declared failed (decided: another path has
// acknowledged a packet sent since p's oldest unacknowledged one, see
// witnesses) or when the idle paths are asked to witness p's silence
// (below). set is false when neither is due: p is not silent, or its
// witnesses were asked for this silence and none answered yet. Both at
// once, since the timer and the check run for every path at every event.
func (c *Conn) failureTimer(p *path) (at time.Time, decided, set bool) {
	t0, ok := c.silentSince(p)
	if !ok {
		return time.Time{}, false, false
	}
	if c.witnessed(p, t0) {
		return t0.Add(c.failAfter(p)), true, true
	}
	if p.health.witnessAsked.Equal(t0) {
		return time.Time{}, false, false
	}
	return t0.Add(c.failAfter(p)), false, true
}

// witnessed reports whether another path witnesses the silence of p
// since t0 (see witnesses).
func (c *Conn) witnessed(p *path, t0 time.Time) bool {
	for _, q := range c.paths {
		if q != p && c.witnesses(q, t0) {
			return true
		}
	}
	return false
}

// silentSince returns t0 of path p, the send time of its oldest
// ack-eliciting packet outstanding above its largest acknowledged one, if
// the failure detection watches p.
func (c *Conn) silentSince(p *path) (time.Time, bool) {
	if p.health.failed || p.state != pathActive || !c.mp.enabled || !c.confirmed || c.cfg.DisablePathFailure {
		return time.Time{}, false
	}
	_, t0, ok := p.app.sent.OldestUnackedAbove()
	return t0, ok
}

// Witnesses on demand. A path that carries nothing (a backup path while
// an available one works, a path a scheduler leaves idle) witnesses
// nothing, and a path whose silence no other path can contradict is never
// declared failed: its data would stay there, or wait for its probe
// timeouts, which never expire while a scheduler keeps sending on it (a
// PTO timer restarts with every ack-eliciting packet, RFC 9002 Section
// 6.2.1). So when p has been silent for D(p) without a witness, each
// other active path that is not failed, can carry its own
// acknowledgements and has nothing outstanding above its largest
// acknowledged packet sends one PING (draft-ietf-quic-multipath-21
// Section 3.3: PING frames to detect connectivity changes); its
// acknowledgement, one round trip of that path later, is the witness and
// p is declared failed. Once per silence of p (per t0).

// askWitnesses makes the idle paths probe once for p (see above).
func (c *Conn) askWitnesses(p *path) {
	t0, _ := c.silentSince(p)
	p.health.witnessAsked = t0
	for _, q := range c.paths {
		if q == p || q.state != pathActive || q.health.failed || !c.ownAckPath(q) {
			continue
		}
		if _, _, busy := q.app.sent.OldestUnackedAbove(); busy {
			continue
		}
		q.app.probes = max(q.app.probes, 1)
	}
}

// witnesses reports whether path q shows that the network delivers
// packets sent at or after t0 (see failureTimer).
func (c *Conn) witnesses(q *path, t0 time.Time) bool {
	if q.state != pathActive || q.health.failed || !c.ownAckPath(q) || q.health.newestAckedSent.Before(t0) {
		return false
	}
	_, tq, silent := q.app.sent.OldestUnackedAbove()
	return !silent || c.now.Sub(tq) < c.failAfter(q)
}

// checkPathFailures declares failed the paths whose deadline passed.
func (c *Conn) checkPathFailures(now time.Time) {
	if c.state != stateActive {
		return
	}
	for _, p := range c.paths {
		// failureTimer's time is t0 + D(p) whenever it is set: before
		// it, nothing is due whatever the witnesses say (the common
		// case, checked without asking them).
		if t0, ok := c.silentSince(p); !ok || now.Before(t0.Add(c.failAfter(p))) {
			continue
		}
		_, decided, set := c.failureTimer(p)
		if !set {
			continue
		}
		if decided {
			c.pathFailed(now, p)
		} else {
			c.askWitnesses(p)
		}
	}
}

// pathFailed marks p failed and sends its outstanding data elsewhere.
func (c *Conn) pathFailed(now time.Time, p *path) {
	pn, _, _ := p.app.sent.OldestUnackedAbove()
	h := &p.health
	h.failed, h.failedAt, h.failPN, h.probePN = true, now, pn, p.app.nextPN
	h.probeTries = 0
	h.probeNext = now.Add(p.rtt.PTO(c.peerMaxAckDelay()))
	p.ptoCount = 0
	p.app.probes = 0
	c.pathEvent(now, p, PathEventFailed)
	c.failoverStatus(p)
	c.declareOutstandingLost(now, p)
	c.updateMetrics(now, p)
}

// Failover signalling. draft-ietf-quic-multipath-21 Section 3.3: "If an
// endpoint starts using a backup path because it has detected issues on
// the paths marked as 'available', it is RECOMMENDED to update its own
// path state signaling such that the peer avoids using the broken path."
// When path p is declared failed while it was available (neither end
// marked it backup), no other path that is available at both ends is
// usable, and a usable backup path remains (so the schedulers turn to the
// backups: package scheduler, "Backup paths"), the connection sends
// PATH_STATUS_BACKUP for p. When p recovers it sends PATH_STATUS_AVAILABLE
// again, unless the application set p's status in between. Only p's
// status changes: the backup path stays what the application made it, so
// a peer that marked it backup itself sees every path as backup and,
// without guidance from the draft, may use both (our schedulers do).

// usableForData mirrors the built-in schedulers' usable paths: active,
// validated, not failed and not behind scheduler.FailedPTOs probe
// timeouts.
func (c *Conn) usableForData(q *path) bool {
	validated := q.validated || c.isClient && q.id == 0
	return q.state == pathActive && validated && !q.health.failed && q.ptoCount < scheduler.FailedPTOs
}

// backupAtEither reports whether either end marked q backup.
func backupAtEither(q *path) bool {
	return q.status == scheduler.StatusBackup || q.peerStatusKnown && q.peerStatus == scheduler.StatusBackup
}

// failoverStatus sends PATH_STATUS_BACKUP for the failed path p if the
// connection now turns to a backup path (see above).
func (c *Conn) failoverStatus(p *path) {
	if !c.mp.enabled || backupAtEither(p) {
		return
	}
	backup := false
	for _, q := range c.paths {
		if q == p || !c.usableForData(q) {
			continue
		}
		if !backupAtEither(q) {
			return // an available path takes over
		}
		backup = true
	}
	if backup {
		c.sendStatus(p, scheduler.StatusBackup)
		p.failoverBackup = true
	}
}

// restoreStatus sends PATH_STATUS_AVAILABLE for p again if failoverStatus
// marked it backup.
func (c *Conn) restoreStatus(p *path) {
	if p.failoverBackup {
		p.failoverBackup = false
		c.sendStatus(p, scheduler.StatusAvailable)
	}
}

// declareOutstandingLost declares lost every packet outstanding on p,
// without a congestion signal (the path is failed: its losses say nothing
// about congestion), and offers their data to the loss policy.
func (c *Conn) declareOutstandingLost(now time.Time, p *path) {
	p.app.sent.DeclareAllLost(func(sp0 *recovery.SentPacket) {
		p.packetsLost++
		p.bytesLost += uint64(sp0.Size)
		if c.pktObs != nil && sp0.InFlight {
			c.pktObs.OnPacketLost(now, p.id, sp0.Number)
		}
		if sp0.AckEliciting {
			c.onDataLost(now, p, sp0, scheduler.LossPathFailed)
		} else {
			c.onFramesLost(p, levelApp, sp0.Frames)
		}
		c.copies.settle(pktKey{p.id, sp0.Number})
	})
}

// pathRecovered ends the failure of p: an acknowledgement of a packet it
// carried since the failure began arrived. If it acknowledged the last
// packet sent before the failure was declared, the failure was spurious
// (that packet left at least D after the first unacknowledged one: an
// outage that explained the silence would have dropped it; if it was lost
// to chance instead, the failure counts as an outage, the conservative
// side):
// the path keeps its congestion state, as after a spurious retransmission
// timeout, and the event is PathEventSpurious. Otherwise the path
// returns from an outage whose capacity is unknown: its window collapses
// as after persistent congestion (RFC 9002 Section 7.6.2).
func (c *Conn) pathRecovered(now time.Time, p *path, spurious bool) {
	if !p.health.failed || p.state != pathActive {
		return
	}
	c.declareOutstandingLost(now, p)
	kind := PathEventSpurious
	if spurious {
		p.spuriousFailures++
	} else {
		kind = PathEventRecovered
		p.cc.OnPersistentCongestion(now)
		// The RTT history is the path's before the outage (often its queue
		// full); a scheduler that prefers low RTTs would leave the path alone
		// on a stale estimate and never sample it again. The probe's sample
		// restarts it.
		p.rtt.Restart()
		if p.pacer != nil {
			p.pacer = newPacer(c.cfg)
		}
	}
	p.health = pathHealth{newestAckedSent: p.health.newestAckedSent}
	p.ptoCount = 0
	c.restoreStatus(p)
	c.pathEvent(now, p, kind)
	c.updateMetrics(now, p)
}

// failedPathTimers probes the failed paths and abandons those failed for
// too long.
func (c *Conn) failedPathTimers(now time.Time) {
	for i := 0; i < len(c.paths); i++ {
		p := c.paths[i]
		h := &p.health
		if !h.failed {
			continue
		}
		if c.cfg.PathAbandonAfter > 0 && !now.Before(h.failedAt.Add(c.cfg.PathAbandonAfter)) {
			c.pathEvent(now, p, PathEventAbandoned)
			c.abandonPath(p, uint64(qerr.PathUnstableOrPoor), false)
			i--
			continue
		}
		if !now.Before(h.probeNext) {
			c.declareOutstandingLost(now, p)
			p.app.probes = 1
			h.probeTries++
			pto := p.rtt.PTO(c.peerMaxAckDelay())
			h.probeNext = now.Add(min(pto<<min(h.probeTries, 16), max(failProbeMax, pto)))
		}
	}
}

// nextFailureTimer is the earliest failure deadline, probe or abandonment
// of the paths.
func (c *Conn) nextFailureTimer() time.Time {
	var t time.Time
	earliest := func(x time.Time) {
		if !x.IsZero() && (t.IsZero() || x.Before(t)) {
			t = x
		}
	}
	for _, p := range c.paths {
		h := &p.health
		if !h.failed {
			// failureTimer's time, without asking the witnesses
			// unless they decide whether it is set: it is t0 + D(p)
			// if set, and unset only if none witnesses and they were
			// asked for this silence.
			if t0, ok := c.silentSince(p); ok && (!h.witnessAsked.Equal(t0) || c.witnessed(p, t0)) {
				earliest(t0.Add(c.failAfter(p)))
			}
			continue
		}
		earliest(h.probeNext)
		if c.cfg.PathAbandonAfter > 0 {
			earliest(h.failedAt.Add(c.cfg.PathAbandonAfter))
		}
	}
	return t
}

// pathEvent records a path event and logs it.
func (c *Conn) pathEvent(now time.Time, p *path, kind string) {
	c.pathEvents = append(c.pathEvents, PathEvent{PathID: p.id, Kind: kind, At: now})
	if c.qlog != nil {
		state := p.state.String()
		if p.health.failed {
			state = "failed"
		}
		c.qlog.PathEvent(now, p.id, state, kind, p.local, p.remote)
	}
	switch kind {
	case PathEventFailed:
		c.emit(Event{Kind: EventPathBroken, PathID: p.id})
	case PathEventRecovered, PathEventSpurious:
		c.emit(Event{Kind: EventPathRecovered, PathID: p.id})
	}
}

// PathEvents returns every path event of the connection in order, those of
// paths already forgotten included.
func (c *Conn) PathEvents() []PathEvent {
	return append([]PathEvent(nil), c.pathEvents...)
}

// eventsOf returns the path events of one path.
func (c *Conn) eventsOf(id uint64) []PathEvent {
	var out []PathEvent
	for _, e := range c.pathEvents {
		if e.PathID == id {
			out = append(out, e)
		}
	}
	return out
}
