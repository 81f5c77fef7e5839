package scheduler

import (
	"math"
	"time"
)

// RateCapSlack is how far beyond its estimated bottleneck rate times its
// minimum RTT a path's bytes in flight may go with cwr-plus's rate_cap:
// the standing queue, in time, that the rule allows itself, which every
// message waits behind. Over the robustness grid (3 repetitions, with
// rate_pace and none of cwr-plus's later rules) 0.25 ms did better than
// 0.5 and 1 ms: the latency goal at >= 95 % of lowrtt's goodput at 54,
// 49 and 26 of the 144 points. The slack is also what lets the estimate
// grow beyond itself (RateCapSlack/MinRTT a round trip); where a first
// slow start left it low, 0.25 ms of a 100 ms path grows it slowly
// (rate_probe).
const RateCapSlack = 250 * time.Microsecond

// rateCapFloorPackets is the smallest cap in packets, so that a path with
// a tiny or stale estimate still carries data and measures its rate.
const rateCapFloorPackets = 4

// rateCap is cwr-plus's rule rate_cap: once a path has left its first slow
// start, data of streams without priority (new and retransmitted) keep
// its bytes in flight within its estimated bottleneck rate times (MinRTT
// + RateCapSlack), so that the window the congestion controller allows
// beyond the path's bandwidth-delay product does not become a standing
// queue that priority messages wait behind. The estimate is the largest
// delivery rate measured over a minimum RTT (deliveryRate). It does not
// hold while the path's congestion window is within the cap: the window
// then keeps the queue short by itself (a path whose window random loss
// keeps small, say).
type rateCap struct {
	on    bool
	rates pathRates
	// pace is cwr-plus's rule rate_pace (paceBucket): while the cap
	// holds a path, the same data leave it no faster than the cap per
	// minimum RTT.
	pace    bool
	buckets map[uint64]*paceBucket
	// pipe is cwr-plus's rule pipe_room (pipeRoom).
	pipe bool
	// probing is cwr-plus's rule rate_probe (probe).
	probing bool
	// careful is cwr-plus's rule careful_start (carefulStart), starts
	// the paths' states by ID.
	careful bool
	starts  map[uint64]*carefulStart
	// drain is cwr-plus's rule careful_drain (draining).
	drain bool
	// cleared holds the paths that have shown no queue (queued) since
	// they left their first slow start, left when they were first seen
	// out of it (careful_start's draining).
	cleared map[uint64]bool
	left    map[uint64]time.Time
	// wake is when a packet that pacing held last becomes due (Waker);
	// zero when pacing held none since the last decision on data
	// without priority.
	wake time.Time
}

// paceBucket is a token bucket of bytes: tokens grow at the path's
// pacing rate up to a depth, and each packet of a stream without
// priority sent on the path takes its size.
type paceBucket struct {
	tokens float64
	last   time.Time
}

// observe samples each candidate's delivered bytes; call it at every
// decision.
func (c *rateCap) observe(now time.Time, paths []PathInfo, cand []int) {
	if c.on || c.pace || c.pipe {
		c.rates = c.rates.observe(now, paths, cand)
	}
	if c.probing && (c.on || c.pace) {
		c.probe(now, paths, cand)
	}
	if c.careful && c.on {
		c.observeStarts(now, paths, cand)
	}
}

// RateCapProbe is how much rule rate_probe raises the estimate of a path
// that rate_cap holds at its cap, per smoothed RTT without a queue: the estimate may be low (a first slow start that ended
// below the bottleneck's rate, say), and a cap at a low estimate would
// keep the path below its rate, since the estimate grows by itself only
// with what the cap lets through.
const RateCapProbe = 0.01

// probe raises the estimate of each candidate that the cap held back (its
// bytes in flight at the cap; not the pacer, which holds a path that
// refills after a stall too) in a smoothed RTT in which its RTT samples
// showed no queue (the least latest RTT seen in that round less than
// RateCapSlack/2 above its minimum; the least, since the peer's
// acknowledgement delay only adds) by RateCapProbe. A cap at the bottleneck's rate keeps RateCapSlack of
// queue, so the samples then show it and the estimate stays; a probe
// beyond the rate overshoots by at most RateCapProbe of a minimum RTT.
// Only on a path that another candidate undercuts in minimum RTT by more
// than QueueGuard (undercut): the probe's overshoot is a queue, and
// priority messages take the faster path (probing every path added
// 2.0-4.4 ms to the pooled p99.9 of six points of the robustness grid's
// equal paths). Only for controllers with a slow-start threshold: bbr drains its queue
// by itself every few rounds (ProbeBW's 0.75 phase, ProbeRTT), which
// looks like a low estimate, and the estimate never falls (probing it
// there, in a first version that probed on one sample, cost the
// lossless base point with 0.5 BDP queues a third of its goodput).
func (c *rateCap) probe(now time.Time, paths []PathInfo, cand []int) {
	for _, i := range cand {
		p := &paths[i]
		r, _, ok := c.capping(p)
		if !ok || p.SSThresh == math.MaxUint64 || !undercut(paths, cand, i) {
			continue // not capped, a controller without ssthresh (bbr), or a path messages take
		}
		if r.probed.IsZero() {
			r.probed, r.roundRTT, r.held = now, p.LatestRTT, false
			continue
		}
		r.roundRTT = min(r.roundRTT, p.LatestRTT)
		if now.Sub(r.probed) < p.SRTT {
			continue
		}
		if r.held && r.roundRTT < p.MinRTT+RateCapSlack/2 {
			r.max *= 1 + RateCapProbe
		}
		r.probed, r.roundRTT, r.held = now, p.LatestRTT, false
	}
}

// undercut reports whether some candidate's minimum RTT is lower than
// candidate i's by more than QueueGuard (both with RTT samples): priority
// messages take that one, not i.
func undercut(paths []PathInfo, cand []int, i int) bool {
	p := &paths[i]
	if !p.HasRTTSample {
		return false
	}
	for _, j := range cand {
		if q := &paths[j]; j != i && q.HasRTTSample && q.MinRTT+QueueGuard < p.MinRTT {
			return true
		}
	}
	return false
}

// limit is the cap of p's bytes in flight for the estimate r.
func (c *rateCap) limit(p *PathInfo, r *deliveryRate) float64 {
	return max(r.max*(p.MinRTT+RateCapSlack).Seconds(), float64(rateCapFloorPackets*p.MaxPacketSize))
}

// pipeRoom reports whether rule pipe_room lets a priority packet of size
// bytes on p beyond its window: p's bytes in flight with the packet
// within its estimated bandwidth-delay product (the estimate times its
// minimum RTT), so that the packet finds no queue, once p's controller
// has had a congestion event (its slow-start threshold set). With a
// controller that has no threshold (bbr), only once it has left its
// Startup and while no other candidate matches p's minimum RTT within
// QueueGuard (matched): its small windows are deliberate (ProbeRTT's
// four packets, which last until the bytes in flight fall to them), and
// priority data beyond them kept path 0 of the lossless base point in
// ProbeRTT long enough to lose a third of its goodput; where the other
// path is slower by more than a queue, a message held out of ProbeRTT's
// window would take it and arrive that much later.
func (c *rateCap) pipeRoom(paths []PathInfo, cand []int, i int, size int) bool {
	p := &paths[i]
	if !c.pipe {
		return false
	}
	if p.SSThresh == math.MaxUint64 && (p.InStartup() || matched(paths, cand, i)) {
		return false // no congestion event yet, or bbr with a path as fast beside it
	}
	r := c.rates[p.ID]
	if r == nil || r.max <= 0 {
		return false
	}
	return float64(p.BytesInFlight+uint64(size)) <= r.max*p.MinRTT.Seconds()
}

// capping returns p's estimate and cap when the cap applies to p: p has
// left its first slow start, has an estimate, and its window exceeds the
// cap (a window within it keeps the queue short by itself: a
// window-limited path).
func (c *rateCap) capping(p *PathInfo) (*deliveryRate, float64, bool) {
	if p.InStartup() && !c.startedCarefully(p.ID) {
		return nil, 0, false
	}
	r := c.rates[p.ID]
	if r == nil || r.max <= 0 {
		return nil, 0, false
	}
	limit := c.limit(p, r)
	return r, limit, float64(p.CWND) > limit
}

// holds reports whether the rules keep a packet of size bytes of a
// stream without priority off p at now: rate_cap, beyond the cap;
// rate_pace, before the pacing bucket holds size bytes.
func (c *rateCap) holds(now time.Time, p *PathInfo, size int) bool {
	if !c.on && !c.pace {
		return false
	}
	if st := c.starting(p.ID); st != nil {
		return c.on && float64(p.BytesInFlight+uint64(size)) > st.limit
	}
	r, limit, ok := c.capping(p)
	if !ok {
		return false
	}
	if c.on && float64(p.BytesInFlight+uint64(size)) > limit {
		r.held = true // rate_probe: the cap held the path in this round
		return true
	}
	return c.pace && c.paced(now, p, r, limit, size)
}

// paceRate is the rate of p's bucket in bytes per second: the cap per
// minimum RTT, that is the estimate times (MinRTT + RateCapSlack) /
// MinRTT, a little above the estimate so that the estimate can still
// grow.
func paceRate(p *PathInfo, limit float64) float64 { return limit / p.MinRTT.Seconds() }

// paceDepth is the most bytes p's bucket holds: RateCapSlack at the
// estimate, and at least two packets (one acknowledgement's worth).
func paceDepth(p *PathInfo, r *deliveryRate) float64 {
	return max(r.max*RateCapSlack.Seconds(), float64(2*p.MaxPacketSize))
}

// paced refills p's bucket to now and reports whether it holds fewer
// than size bytes; if so it notes when it will (wake).
func (c *rateCap) paced(now time.Time, p *PathInfo, r *deliveryRate, limit float64, size int) bool {
	if c.buckets == nil {
		c.buckets = make(map[uint64]*paceBucket)
	}
	rate, depth := paceRate(p, limit), paceDepth(p, r)
	b := c.buckets[p.ID]
	if b == nil {
		b = &paceBucket{tokens: depth, last: now}
		c.buckets[p.ID] = b
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(depth, b.tokens+rate*d.Seconds())
		b.last = now
	}
	if b.tokens >= float64(size) {
		return false
	}
	due := now.Add(time.Duration((float64(size) - b.tokens) / rate * float64(time.Second)))
	if !due.After(now) {
		due = now.Add(time.Nanosecond)
	}
	if c.wake.IsZero() || due.Before(c.wake) {
		c.wake = due
	}
	return true
}

// sent takes a packet of a stream without priority from p's bucket.
func (c *rateCap) sent(pathID uint64, size int) {
	if b := c.buckets[pathID]; b != nil {
		b.tokens -= float64(size)
	}
}

// CarefulStep is how much further, in time at the path's rate, rule
// careful_start lets a path's bytes in flight grow per minimum RTT: the
// queue one round of growth beyond the bandwidth-delay product can
// build. The cap grows by CarefulStep/MinRTT of the bytes acknowledged
// (at most by them, slow start's doubling), so a 20 ms path grows 2.5 % a
// round trip and reaches a 100 Mbit/s path's 250 kB from the initial
// window in about 120 round trips (2.4 s); a 100 ms path 0.5 %, which
// leaves a long-RTT fast path below its rate for much of a 30 s run
// (docs/results/robustness.md, "Beyond the grid"). Over the robustness
// grid's 20/100 ms shape a step of 1 ms left 0.4-1.5 ms of queue at the
// end of the careful start, 0.5 ms none.
const CarefulStep = 500 * time.Microsecond

// CarefulQueue is the least RTT above its minimum, over a round, that
// ends a careful start: the queue it found.
const CarefulQueue = CarefulStep / 2

// carefulStart is a path's state in rule careful_start.
type carefulStart struct {
	// limit caps the path's bytes in flight for data of streams without
	// priority, in bytes, while active.
	limit float64
	// acked is the path's BytesAcked at the last observation.
	acked uint64
	// round began at when; least is the least latest RTT seen in it.
	round time.Time
	least time.Duration
	// active: the path starts carefully now; interim: only while a
	// path as fast drains its start-up's overshoot (draining).
	active, interim bool
	// alone: every candidate has an RTT sample (so that a first sample
	// will not end the careful start at once).
	alone bool
	// handed: the careful start ended in rate_cap's hands (queue found,
	// or the controller's window within the limit). A start that another
	// candidate's RTT ended (the path's own slow start goes on) is
	// neither active nor handed.
	handed bool
}

// observeStarts runs rule careful_start over the candidates: a path in
// its first slow start (PathInfo.InStartup) with no other candidate whose
// minimum RTT is within QueueGuard of its own (matched: none that could
// carry a message as fast while it overshoots, which the stagger relies
// on) starts carefully: data of streams without priority keep its bytes
// in flight within a limit that begins at its window and grows by
// CarefulStep/MinRTT of each acknowledged byte while the path uses at
// least half of it, so that the path's first approach to its
// bottleneck's rate overshoots it by about CarefulStep of queue, not by a
// doubling. It ends when a round (a minimum RTT) shows a queue (its least
// RTT sample more than CarefulQueue above the minimum) or the
// controller's window falls below the limit; rate_cap then holds the
// path at its estimate (even while its controller is still in its first
// slow start), and the stagger and startup_copies count it as started. A
// path that another candidate matches in RTT leaves the rule (its
// start-up is the stagger's); with careful_drain (drain) it holds what
// it has in flight, growing carefully, while such a path drains its own
// start-up's overshoot (draining), and never hands over meanwhile.
// Paths are observed in the candidates' order, each one's
// cleared/left marks before the later paths are judged.
func (c *rateCap) observeStarts(now time.Time, paths []PathInfo, cand []int) {
	if c.starts == nil {
		c.starts = make(map[uint64]*carefulStart)
		c.cleared = make(map[uint64]bool)
		c.left = make(map[uint64]time.Time)
	}
	for _, i := range cand {
		p := &paths[i]
		if !p.InStartup() {
			if _, ok := c.left[p.ID]; !ok {
				c.left[p.ID] = now
			}
			if !queued(p) {
				c.cleared[p.ID] = true
			}
		}
		st := c.starts[p.ID]
		if st == nil {
			if !p.InStartup() {
				continue
			}
			st = &carefulStart{limit: float64(max(p.CWND, rateCapFloorPackets*uint64(p.MaxPacketSize))), acked: p.BytesAcked, active: true}
			c.starts[p.ID] = st
		}
		if st.handed {
			continue
		}
		if matched(paths, cand, i) && !(c.drain && c.draining(now, paths, cand, i)) {
			st.active, st.interim = false, false
			continue
		}
		if !st.active {
			// Ended by a path as fast, which now drains its overshoot:
			// hold what is in flight, growing carefully, until it has
			// drained; no hand-over meanwhile (the path's own slow start
			// goes on afterwards, its estimate not yet made).
			if !p.InStartup() {
				continue
			}
			st.active, st.interim, st.acked, st.round = true, true, p.BytesAcked, time.Time{}
			st.limit = max(float64(p.BytesInFlight), float64(rateCapFloorPackets*p.MaxPacketSize))
		}
		st.alone = p.HasRTTSample && allSampled(paths, cand)
		if st.interim {
			st.grow(p)
			continue
		}
		if float64(p.CWND) < st.limit {
			st.active, st.handed = false, true
			continue
		}
		if !st.grow(p) {
			continue
		}
		if st.round.IsZero() {
			st.round, st.least = now, p.LatestRTT
			continue
		}
		st.least = min(st.least, p.LatestRTT)
		if now.Sub(st.round) < p.MinRTT {
			continue
		}
		if st.least > p.MinRTT+CarefulQueue {
			st.active, st.handed = false, true
			continue
		}
		st.round, st.least = now, p.LatestRTT
	}
}

// grow raises st's limit by CarefulStep/MinRTT of the bytes acknowledged
// since the last observation, while p uses at least half of it, and
// reports whether p has an RTT sample (without one it only notes the
// bytes acknowledged).
func (st *carefulStart) grow(p *PathInfo) bool {
	sampled := p.HasRTTSample && p.MinRTT > 0
	if sampled && float64(p.BytesInFlight) >= st.limit/2 {
		st.limit += float64(p.BytesAcked-st.acked) * min(1, CarefulStep.Seconds()/p.MinRTT.Seconds())
	}
	st.acked = p.BytesAcked
	return sampled
}

// CarefulDrainRTTs bounds, in the draining path's smoothed RTTs since it
// left its first slow start, how long careful_start takes another path's
// overshoot to drain: a controller that keeps a queue of its own (bbr's
// window of two bandwidth-delay products) never shows itself clear.
const CarefulDrainRTTs = 4

// draining reports whether some candidate other than i, as fast as i
// (its minimum RTT within QueueGuard of i's), left its first slow start
// less than CarefulDrainRTTs of its smoothed RTTs ago and has not shown
// itself clear of a queue since (cleared): its start-up's overshoot
// still drains, and i's own slow start would queue the one path a
// message could take past it.
func (c *rateCap) draining(now time.Time, paths []PathInfo, cand []int, i int) bool {
	p := &paths[i]
	for _, j := range cand {
		q := &paths[j]
		if j == i || !q.HasRTTSample || !p.HasRTTSample || q.MinRTT > p.MinRTT+QueueGuard || q.InStartup() || c.cleared[q.ID] {
			continue
		}
		if left, ok := c.left[q.ID]; ok && now.Sub(left) < CarefulDrainRTTs*q.SRTT {
			return true
		}
	}
	return false
}

// matched reports whether some candidate other than i has a minimum RTT
// within QueueGuard of candidate i's (i's counting as unknown, and the
// other's as higher, while either has no RTT sample).
func matched(paths []PathInfo, cand []int, i int) bool {
	p := &paths[i]
	if !p.HasRTTSample {
		return false
	}
	for _, j := range cand {
		if j != i && paths[j].HasRTTSample && paths[j].MinRTT <= p.MinRTT+QueueGuard {
			return true
		}
	}
	return false
}

// allSampled reports whether every candidate has an RTT sample.
func allSampled(paths []PathInfo, cand []int) bool {
	for _, j := range cand {
		if !paths[j].HasRTTSample {
			return false
		}
	}
	return true
}

// starting returns path id's careful start while it is active (rule
// careful_start), else nil.
func (c *rateCap) starting(id uint64) *carefulStart {
	if !c.careful || !c.on {
		return nil
	}
	if st := c.starts[id]; st != nil && st.active {
		return st
	}
	return nil
}

// carefulPath reports whether path id starts carefully or has, for the
// stagger: its careful start is active, with every candidate's RTT known
// (so that it will not end in the path's own slow start once another
// path's first RTT sample shows that path clear), or ended in rate_cap's
// hands.
func (c *rateCap) carefulPath(id uint64) bool {
	st := c.starting(id)
	return st != nil && st.alone || c.startedCarefully(id)
}

// startedCarefully reports whether path id's careful start ended in
// rate_cap's hands: the path counts as out of its first slow start.
func (c *rateCap) startedCarefully(id uint64) bool {
	if !c.careful || !c.on {
		return false
	}
	st := c.starts[id]
	return st != nil && st.handed
}
