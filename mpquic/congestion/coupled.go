package congestion

import (
	"math"
	"time"
)

func init() {
	Register("lia", func(cfg Config) (Controller, error) { return newCoupled(cfg, liaIncrease, nil), nil })
	Register("olia", func(cfg Config) (Controller, error) {
		best := oliaBest
		if cfg.OLIABestOverflow {
			best = mpquicOLIABest
		}
		return newCoupled(cfg, oliaIncrease(best), nil), nil
	})
	Register("balia", func(cfg Config) (Controller, error) { return newCoupled(cfg, baliaIncrease, baliaDecrease), nil })
}

// Group is the set of path controllers of one connection. Coupled
// controllers (lia, olia, balia) join it when they are made and read every
// member's window and smoothed RTT when they grow; uncoupled ones ignore
// it. A Group belongs to one connection and, like the controllers, is not
// safe for concurrent use.
type Group struct {
	members []*coupled
	views   []pathView // scratch for the increase functions
}

// NewGroup returns an empty group.
func NewGroup() *Group { return &Group{} }

// Leave removes a path's controller from the group (the path was
// abandoned); controllers that never joined are ignored.
func (g *Group) Leave(c Controller) {
	r, ok := c.(*NewReno)
	if !ok || r.coupled == nil {
		return
	}
	for i, m := range g.members {
		if m == r.coupled {
			g.members = append(g.members[:i], g.members[i+1:]...)
			return
		}
	}
}

// Len is the number of coupled controllers in the group.
func (g *Group) Len() int { return len(g.members) }

// pathView is what a coupled increase reads of one path: the window in
// bytes, the smoothed RTT in seconds (and in nanoseconds, srttNS) and, for
// OLIA, ell, the bytes acknowledged between losses (the larger of those
// since the last loss and those between the two losses before it).
type pathView struct {
	cwnd, rtt float64
	srttNS    int64
	ell       uint64
}

// increaseFunc is the congestion avoidance increase in bytes of path self
// for acked newly acknowledged bytes, with datagrams of mds bytes, given
// every path of the connection (paths[self] included). It may be negative
// (OLIA moves window away from the largest paths).
type increaseFunc func(acked, mds float64, self int, paths []pathView) float64

// decreaseFunc is the window after a congestion event on path self; nil
// halves it (RFC 9002's kLossReductionFactor).
type decreaseFunc func(self int, paths []pathView) float64

// coupled is the coupling state of one path's controller: a NewReno whose
// congestion avoidance increase (and, for BALIA, decrease) depends on all
// paths of the connection. Slow start, recovery periods and persistent
// congestion are NewReno's (RFC 6356 Section 3 keeps them).
type coupled struct {
	r        *NewReno
	g        *Group
	increase increaseFunc
	decrease decreaseFunc
	srtt     time.Duration
	frac     float64 // the fraction of a byte of increase not yet applied
	// OLIA's ell_1 (bytes acked since the last loss) and ell_2 (between
	// the two losses before).
	sinceLoss, betweenLosses uint64
}

func newCoupled(cfg Config, inc increaseFunc, dec decreaseFunc) *NewReno {
	r := NewNewReno(cfg, false)
	c := &coupled{r: r, g: cfg.Group, increase: inc, decrease: dec}
	r.coupled = c
	cfg.Group.members = append(cfg.Group.members, c)
	return r
}

// snapshot fills the group's views and returns this path's index in them.
// Paths without an RTT sample yet are left out (nothing is known of their
// rate), except this one.
func (c *coupled) snapshot() ([]pathView, int) {
	v := c.g.views[:0]
	self := -1
	for _, m := range c.g.members {
		if m != c && m.srtt <= 0 {
			continue
		}
		if m == c {
			self = len(v)
		}
		v = append(v, pathView{cwnd: float64(m.r.cwnd), rtt: m.srtt.Seconds(), srttNS: int64(m.srtt), ell: max(m.sinceLoss, m.betweenLosses)})
	}
	c.g.views = v
	return v, self
}

// grow applies the coupled increase for acked bytes and returns the
// window.
func (c *coupled) grow(acked uint64) uint64 {
	if c.srtt <= 0 {
		return c.r.cwnd
	}
	v, self := c.snapshot()
	c.frac += c.increase(float64(acked), float64(c.r.mds), self, v)
	whole := math.Floor(c.frac)
	c.frac -= whole
	w := float64(c.r.cwnd) + whole
	if w < float64(c.r.minWindow) {
		return c.r.minWindow
	}
	return uint64(w)
}

// onLoss records a congestion event (a new recovery period) and returns
// the reduced window.
func (c *coupled) onLoss() uint64 {
	c.betweenLosses, c.sinceLoss = c.sinceLoss, 0
	c.frac = 0
	if c.decrease == nil || c.srtt <= 0 {
		return uint64(float64(c.r.cwnd) * c.r.backoff)
	}
	v, self := c.snapshot()
	reduced := c.decrease(self, v)
	if n := float64(c.r.conns); n > 1 {
		// (N-1+f)/N of the window, f = reduced/cwnd balia's own factor.
		reduced = float64(c.r.cwnd)*(n-1)/n + reduced/n
	}
	return uint64(reduced)
}

// liaIncrease is RFC 6356 Section 3: for each ACK on path i,
// cwnd_i += min(alpha*bytes_acked*MSS_i/cwnd_total, bytes_acked*MSS_i/cwnd_i)
// with alpha = cwnd_total * max_i(cwnd_i/rtt_i^2) / (sum_i cwnd_i/rtt_i)^2
// (windows in bytes).
func liaIncrease(acked, mds float64, self int, paths []pathView) float64 {
	var total, best, sum float64
	for _, p := range paths {
		total += p.cwnd
		best = max(best, p.cwnd/(p.rtt*p.rtt))
		sum += p.cwnd / p.rtt
	}
	alpha := total * best / (sum * sum)
	return min(alpha*acked*mds/total, acked*mds/paths[self].cwnd)
}

// oliaIncrease is OLIA (Khalili et al., "MPTCP is not Pareto-optimal",
// IEEE/ACM ToN 2013, Section V): for each ACK on path r, w_r grows by
// (w_r/rtt_r^2)/(sum_p w_p/rtt_p)^2 + alpha_r/w_r packets (windows in
// packets), where, with n paths, M the paths of largest window and B the
// presumably best paths (those best tells: oliaBest, the largest
// ell_p/rtt_p^2, ell_p the bytes acked between losses, so that
// sqrt(ell_p)/rtt_p is the rate a regular TCP would get there), alpha_r
// is 1/(n|B\M|) for r in B\M, -1/(n|M|) for r in M when B\M is not
// empty, and 0 otherwise. The increase is counted per acknowledged byte
// (acked/mds packets at once).
func oliaIncrease(best func(paths []pathView) func(pathView) bool) increaseFunc {
	return func(acked, mds float64, self int, paths []pathView) float64 {
		var sum, maxW float64
		for _, p := range paths {
			sum += p.cwnd / mds / p.rtt
			maxW = max(maxW, p.cwnd)
		}
		inM := func(p pathView) bool { return p.cwnd == maxW }
		inB := best(paths)
		var nM, nBnotM int
		for _, p := range paths {
			switch {
			case inM(p):
				nM++
			case inB(p):
				nBnotM++
			}
		}
		me := paths[self]
		w := me.cwnd / mds
		alpha := 0.0
		n := float64(len(paths))
		if nBnotM > 0 {
			switch {
			case inM(me):
				alpha = -1 / (n * float64(nM))
			case inB(me):
				alpha = 1 / (n * float64(nBnotM))
			}
		}
		perPacket := (w/(me.rtt*me.rtt))/(sum*sum) + alpha/w
		return perPacket * acked
	}
}

// oliaBest is OLIA's set B: the paths of largest ell_p/rtt_p^2.
func oliaBest(paths []pathView) func(pathView) bool {
	var maxBest float64
	for _, p := range paths {
		maxBest = max(maxBest, float64(p.ell)/(p.rtt*p.rtt))
	}
	return func(p pathView) bool { return float64(p.ell)/(p.rtt*p.rtt) == maxBest }
}

// mpquicOLIABest is MPQUIC's reading of B (Config.OLIABestOverflow):
// path p is at least as good as q when ell_p*srtt_q^2 >= ell_q*srtt_p^2,
// each product taken in int64 bytes times nanoseconds squared, which
// wraps past 2^63 (9.2e18: 28 kB of ell at an 18 ms smoothed RTT, 5.8 kB
// at 40 ms). MPQUIC (congestion/olia_sender.go, getEpsilon) walks its
// paths keeping the last one at least as good as the best so far, then
// counts a path in B when it is at least as good as that one. It walks a
// Go map, in no fixed order; with two paths the set does not depend on
// the order (p is in B, for either order, exactly when it is at least as
// good as q); with more, this walks the paths in the order they joined.
func mpquicOLIABest(paths []pathView) func(pathView) bool {
	atLeast := func(p, q pathView) bool {
		return int64(p.ell)*(q.srttNS*q.srttNS) >= int64(q.ell)*(p.srttNS*p.srttNS)
	}
	var best pathView
	for i, p := range paths {
		if i == 0 || atLeast(p, best) {
			best = p
		}
	}
	return func(p pathView) bool { return atLeast(p, best) }
}

// baliaIncrease is BALIA (Peng, Walid, Hwang and Low, "Multipath TCP:
// analysis, design and implementation", IEEE/ACM ToN 2016): with
// x_k = w_k/rtt_k and alpha_r = max_k x_k / x_r, for each ACK on path r,
// w_r grows by x_r/(rtt_r (sum_k x_k)^2) * (1+alpha_r)/2 * (4+alpha_r)/5
// packets, counted per acknowledged byte.
func baliaIncrease(acked, mds float64, self int, paths []pathView) float64 {
	var sum, best float64
	for _, p := range paths {
		x := p.cwnd / mds / p.rtt
		sum += x
		best = max(best, x)
	}
	me := paths[self]
	x := me.cwnd / mds / me.rtt
	a := best / x
	return x / (me.rtt * sum * sum) * (1 + a) / 2 * (4 + a) / 5 * acked
}

// baliaDecrease is BALIA's reduction on a loss on path r:
// w_r -= w_r/2 * min(alpha_r, 1.5).
func baliaDecrease(self int, paths []pathView) float64 {
	var best float64
	for _, p := range paths {
		best = max(best, p.cwnd/p.rtt)
	}
	me := paths[self]
	a := best / (me.cwnd / me.rtt)
	return me.cwnd - me.cwnd/2*min(a, 1.5)
}
