package scheduler

import "time"

// RateCapSlack is how far beyond its estimated bottleneck rate times its
// minimum RTT a path's bytes in flight may go with cwr-plus's rate_cap:
// the standing queue, in time, that the rule allows itself so that its
// estimate can grow to the bottleneck's rate (a window one RateCapSlack
// beyond the estimate delivers RateCapSlack/MinRTT more per round trip
// while the bottleneck has room).
const RateCapSlack = time.Millisecond

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
}

// observe samples each candidate's delivered bytes; call it at every
// decision.
func (c *rateCap) observe(now time.Time, paths []PathInfo, cand []int) {
	if c.on {
		c.rates = c.rates.observe(now, paths, cand)
	}
}

// limit is the cap of p's bytes in flight for the estimate r.
func (c *rateCap) limit(p *PathInfo, r *deliveryRate) float64 {
	return max(r.max*(p.MinRTT+RateCapSlack).Seconds(), float64(rateCapFloorPackets*p.MaxPacketSize))
}

// holds reports whether the rule keeps a packet of size bytes of a
// stream without priority off p.
func (c *rateCap) holds(p *PathInfo, size int) bool {
	if !c.on || p.InStartup() {
		return false
	}
	r := c.rates[p.ID]
	if r == nil || r.max <= 0 {
		return false
	}
	limit := c.limit(p, r)
	if float64(p.CWND) <= limit {
		return false // the window itself keeps the queue short: a window-limited path
	}
	return float64(p.BytesInFlight+uint64(size)) > limit
}
