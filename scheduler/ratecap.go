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
// Only for controllers with a slow-start threshold: bbr drains its queue
// by itself every few rounds (ProbeBW's 0.75 phase, ProbeRTT), which
// looks like a low estimate, and the estimate never falls (probing it
// there, in a first version that probed on one sample, cost the
// lossless base point with 0.5 BDP queues a third of its goodput).
func (c *rateCap) probe(now time.Time, paths []PathInfo, cand []int) {
	for _, i := range cand {
		p := &paths[i]
		r, _, ok := c.capping(p)
		if !ok || p.SSThresh == math.MaxUint64 {
			continue // not capped, or a controller without ssthresh (bbr)
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

// limit is the cap of p's bytes in flight for the estimate r.
func (c *rateCap) limit(p *PathInfo, r *deliveryRate) float64 {
	return max(r.max*(p.MinRTT+RateCapSlack).Seconds(), float64(rateCapFloorPackets*p.MaxPacketSize))
}

// pipeRoom reports whether rule pipe_room lets a priority packet of size
// bytes on p beyond its window: p's bytes in flight with the packet
// within its estimated bandwidth-delay product (the estimate times its
// minimum RTT), so that the packet finds no queue, once p's controller
// has had a congestion event (its slow-start threshold set). Not with a
// controller that has no threshold (bbr): its small windows are
// deliberate (ProbeRTT's four packets, which last until the bytes in
// flight fall to them), and priority data beyond them kept path 0 of the
// lossless base point in ProbeRTT long enough to lose a third of its
// goodput.
func (c *rateCap) pipeRoom(p *PathInfo, size int) bool {
	if !c.pipe || p.SSThresh == math.MaxUint64 {
		return false // no congestion event yet, or a controller without ssthresh (bbr)
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
	if p.InStartup() {
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
