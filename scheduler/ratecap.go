package scheduler

import "time"

// RateCapSlack is how far beyond its estimated bottleneck rate times its
// minimum RTT a path's bytes in flight may go with cwr-plus's rate_cap:
// the standing queue, in time, that the rule allows itself so that its
// estimate can grow to the bottleneck's rate (a window one RateCapSlack
// beyond the estimate delivers RateCapSlack/MinRTT more per round trip
// while the bottleneck has room).
const RateCapSlack = time.Millisecond

// RatePaceGain is how many times its estimated bottleneck rate a path
// may carry with cwr-plus's rate_pace: data of streams without priority
// wait while what the path carried lately (priority data included) ran
// ahead of it, so that a burst (a window freed at once by a late
// acknowledgement or a flow-control update) does not queue at the
// bottleneck. It is above 1 so that the estimate can grow.
const RatePaceGain = 1.05

// rateCapFloorPackets is the smallest cap in packets, so that a path with
// a tiny or stale estimate still carries data and measures its rate.
const rateCapFloorPackets = 4

// rateCap is cwr-plus's rule rate_cap: once a path has left its first slow
// start, data of streams without priority (new and retransmitted) keep
// its bytes in flight within its
// estimated bottleneck rate times (MinRTT + RateCapSlack), so that the
// window the congestion controller allows beyond the path's
// bandwidth-delay product does not become a standing queue that priority
// messages wait behind. The estimate is the largest delivery rate
// measured over a minimum RTT (deliveryRate). With rate_pace (off by
// default) the same data also keep to RatePaceGain times the estimate
// over time: a token bucket per path,
// refilled at that rate up to RateCapSlack's worth of bytes (at least two
// packets), which every packet sent on the path drains. Neither holds
// while the path's congestion window is within the cap: the window then
// keeps the queue short by itself (a path whose window random loss keeps
// small, say).
type rateCap struct {
	// on is rate_cap, pace rate_pace.
	on, pace bool
	rates    map[uint64]*deliveryRate
	paces    map[uint64]*pace
	// wake is when a packet held by a bucket could go (zero: none held).
	wake time.Time
}

// pace is a path's token bucket (rate_cap).
type pace struct {
	tokens float64 // bytes
	last   time.Time
}

// observe samples each candidate's delivered bytes; call it at every
// decision.
func (c *rateCap) observe(now time.Time, paths []PathInfo, cand []int) {
	if !c.on {
		return
	}
	if c.rates == nil {
		c.rates = make(map[uint64]*deliveryRate)
		c.paces = make(map[uint64]*pace)
	}
	c.wake = time.Time{}
	for _, i := range cand {
		p := &paths[i]
		r := c.rates[p.ID]
		if r == nil {
			r = &deliveryRate{}
			c.rates[p.ID] = r
		}
		r.sample(now, p)
		b := c.paces[p.ID]
		if b == nil {
			b = &pace{last: now}
			c.paces[p.ID] = b
			continue
		}
		if r.max > 0 {
			b.tokens = min(c.depth(p, r), b.tokens+now.Sub(b.last).Seconds()*r.max*RatePaceGain)
		}
		b.last = now
	}
}

// depth is the bucket's size for p with the estimate r.
func (c *rateCap) depth(p *PathInfo, r *deliveryRate) float64 {
	return max(r.max*RateCapSlack.Seconds(), float64(2*p.MaxPacketSize))
}

// sent drains the bucket of path id by a packet of size bytes.
func (c *rateCap) sent(id uint64, size int) {
	if b := c.paces[id]; b != nil {
		b.tokens -= float64(size)
	}
}

// limit is the cap of p's bytes in flight for the estimate r.
func (c *rateCap) limit(p *PathInfo, r *deliveryRate) float64 {
	return max(r.max*(p.MinRTT+RateCapSlack).Seconds(), float64(rateCapFloorPackets*p.MaxPacketSize))
}

// holds reports whether the rule keeps a packet of size bytes of a
// stream without priority off p at now.
func (c *rateCap) holds(now time.Time, p *PathInfo, size int) bool {
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
	if float64(p.BytesInFlight+uint64(size)) > limit {
		return true
	}
	b := c.paces[p.ID]
	if !c.pace || b == nil || b.tokens >= float64(size) {
		return false
	}
	at := now.Add(time.Duration((float64(size) - b.tokens) / (r.max * RatePaceGain) * float64(time.Second)))
	if c.wake.IsZero() || at.Before(c.wake) {
		c.wake = at
	}
	return true
}
