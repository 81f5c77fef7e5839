package scheduler

import (
	"strconv"
	"time"
)

// Names of the options of the start-up stagger, shared by cwr-plus, cwr
// and cwr-red (all off by default; ours, not the reference paper's); what
// each does is its Doc in staggerOptions.
const (
	OptStaggerStartup  = "stagger_startup"
	OptStaggerClear    = "stagger_clear"
	OptStaggerHoldRTTs = "stagger_hold_rtts"
)

// StaggerHoldUnbounded is the value of stagger_hold_rtts that keeps the
// stagger's hold unbounded, as the rule was before the bound.
const StaggerHoldUnbounded = "none"

// staggerOptions are the options of startupStagger with their defaults.
func staggerOptions() []Option {
	return []Option{
		{Name: OptStaggerStartup, Default: "false",
			Doc: "data of streams without priority (new and retransmitted) go on a path in its first slow start only while no path before it (in the connection's order) is in its own: one path at a time overshoots into its queue, and priority data find the other clear (and pass the retransmissions held back, HeldBackSkipper); a path so held counts as application limited for its controller (IdleKeeper: bbr's start-up goes on) (ours)"},
		{Name: OptStaggerClear, Default: "false",
			Doc: "with stagger_startup: a path in its first slow start also waits until each path before it is clear of its overshoot (no queue shown, as cwr-plus's queue_guard, and a window at most its largest delivery rate times its minimum RTT plus 2 ms), not only until its slow start ended, so the next path's slow start begins once the earlier one's window no longer queues (ours)"},
		{Name: OptStaggerHoldRTTs, Choices: []string{"32", "8", "16", "24", "64", StaggerHoldUnbounded}, Default: "32",
			Doc:         "with stagger_startup: no hold of the stagger keeps data of streams without priority off a path for longer than this many of the paths' largest smoothed RTT without a break (a decision that does not hold the path ends a hold; a later hold starts anew); \"none\": as long as the rule says, which can be the whole connection: with stagger_clear a lossless path with a full queue never looks clear, and the next path then carries no background data at all (ours)",
			WrittenWith: OptStaggerStartup},
	}
}

// startupStagger is the rule of stagger_startup and stagger_clear: data of
// streams without priority keep off a path in its first slow start
// (PathInfo.InStartup) while a candidate before it in paths is in its own
// or, with stagger_clear, not yet clear of its overshoot
// (clearOfOvershoot).
type startupStagger struct {
	on, clear bool
	// holdRTTs bounds a path's hold (stagger_hold_rtts; 0: unbounded).
	holdRTTs int
	// now is the time of the decision (observe); heldSince when the
	// rule's present hold of each path began.
	now       time.Time
	heldSince map[uint64]time.Time
	// rates are the paths' delivery-rate estimates (stagger_clear).
	rates pathRates
	buf   []int
	// idle holds the paths the latest decision (since observe) kept data
	// without priority off by this rule (keepsIdle).
	idle map[uint64]bool
	// careful, when set, reports the paths that start carefully
	// (cwr-plus's careful_start): their start-up overshoots no queue, so
	// they hold no other path back.
	careful func(id uint64) bool
}

func newStartupStagger(o Options) startupStagger {
	g := startupStagger{on: o.Bool(OptStaggerStartup), clear: o.Bool(OptStaggerClear)}
	if v := o[OptStaggerHoldRTTs]; v != StaggerHoldUnbounded {
		g.holdRTTs, _ = strconv.Atoi(v) // a registered choice, or "" (none set: 0)
	}
	return g
}

// observe feeds each candidate's delivered bytes to its delivery-rate
// estimate (stagger_clear) and forgets which paths the previous decision
// kept idle (keepsIdle answers for this decision only); call it at every
// decision.
func (g *startupStagger) observe(now time.Time, paths []PathInfo, cand []int) {
	if !g.on {
		return
	}
	clear(g.idle)
	g.now = now
	if !g.clear {
		return
	}
	g.rates = g.rates.observe(now, paths, cand)
}

// holds reports whether the rule keeps the data of w off candidate i:
// while a candidate before it is in its first slow start or (with
// stagger_clear) not clear of its overshoot, unless that has lasted
// stagger_hold_rtts already (expired).
func (g *startupStagger) holds(paths []PathInfo, cand []int, i int, w Work) bool {
	if !g.on || w.Priority || w.Class == ClassControl {
		return false
	}
	id := paths[i].ID
	if !paths[i].InStartup() || !g.blocked(paths, cand, i) {
		if g.heldSince != nil {
			delete(g.heldSince, id) // a later hold starts anew
		}
		return false
	}
	if g.expired(paths, cand, id) {
		return false
	}
	if g.idle == nil {
		g.idle = make(map[uint64]bool)
	}
	g.idle[id] = true
	return true
}

// keepsIdle reports whether the latest decision held data without
// priority off path id by this rule (IdleKeeper): false after a decision
// for priority data, or one where another rule (credit, a reservation)
// decided first.
func (g *startupStagger) keepsIdle(id uint64) bool { return g.idle[id] }

// blocked reports whether a candidate before i is in its first slow
// start or (stagger_clear) not clear of its overshoot.
func (g *startupStagger) blocked(paths []PathInfo, cand []int, i int) bool {
	for _, j := range cand {
		if j < i && (paths[j].InStartup() && (g.careful == nil || !g.careful(paths[j].ID)) || g.clear && !g.clearOfOvershoot(&paths[j])) {
			return true
		}
	}
	return false
}

// expired reports whether the hold of path id, unbroken since the first
// decision that found it (a decision that does not hold the path ends
// it), has lasted holdRTTs of the candidates' largest smoothed RTT (of
// those with an RTT sample); the first call of a hold begins it.
func (g *startupStagger) expired(paths []PathInfo, cand []int, id uint64) bool {
	if g.holdRTTs == 0 || g.now.IsZero() {
		return false
	}
	if g.heldSince == nil {
		g.heldSince = make(map[uint64]time.Time)
	}
	since, ok := g.heldSince[id]
	if !ok {
		g.heldSince[id] = g.now
		return false
	}
	var srtt time.Duration
	for _, j := range cand {
		if paths[j].HasRTTSample {
			srtt = max(srtt, paths[j].SRTT)
		}
	}
	return srtt > 0 && g.now.Sub(since) >= time.Duration(g.holdRTTs)*srtt
}

// filter returns the candidates the rule does not hold w off (cand itself
// when it holds none; else a buffer reused by the next call).
func (g *startupStagger) filter(paths []PathInfo, cand []int, w Work) []int {
	if !g.on {
		return cand
	}
	g.buf = g.buf[:0]
	for _, i := range cand {
		if !g.holds(paths, cand, i, w) {
			g.buf = append(g.buf, i)
		}
	}
	if len(g.buf) == len(cand) {
		return cand
	}
	return g.buf
}

// clearOfOvershoot reports whether p has left its first slow start's
// overshoot behind (stagger_clear): out of its first slow start, no queue
// shown, and a window that its largest measured delivery rate carries
// within its minimum RTT plus QueueGuard, so that filling it builds no
// queue a priority message would wait behind. Without a rate measured yet
// it is not clear.
func (g *startupStagger) clearOfOvershoot(p *PathInfo) bool {
	if p.InStartup() || queued(p) {
		return false
	}
	r := g.rates[p.ID]
	if r == nil || r.max <= 0 {
		return false
	}
	return float64(p.CWND) <= r.max*(p.MinRTT+QueueGuard).Seconds()
}

// deliveryRate estimates a path's bottleneck rate: the largest rate of
// acknowledged bytes over one minimum RTT seen so far (a max filter
// without expiry: it serves the start-up only). Samples of the path's
// BytesAcked are kept at least MinRTT/8 apart, as many as span two
// minimum RTTs.
type deliveryRate struct {
	t     [16]time.Time
	acked [16]uint64
	n     int // samples kept (at most len(t)); the newest at (head-1)
	head  int
	max   float64 // bytes per second
	// probed is when rate_cap's probe round began, roundRTT the least
	// latest RTT seen in it and held whether the cap held the path back
	// in it (rateCap.probe).
	probed   time.Time
	roundRTT time.Duration
	held     bool
}

// pathRates are delivery-rate estimates by path ID.
type pathRates map[uint64]*deliveryRate

// observe samples each candidate's delivered bytes into its estimate
// (made at its first sample) and returns m (made if nil).
func (m pathRates) observe(now time.Time, paths []PathInfo, cand []int) pathRates {
	if m == nil {
		m = make(pathRates)
	}
	for _, i := range cand {
		p := &paths[i]
		r := m[p.ID]
		if r == nil {
			r = &deliveryRate{}
			m[p.ID] = r
		}
		r.sample(now, p)
	}
	return m
}

// sample records p's delivered bytes at now and updates the estimate.
func (r *deliveryRate) sample(now time.Time, p *PathInfo) {
	if !p.HasRTTSample || p.MinRTT <= 0 {
		return
	}
	if r.n > 0 && now.Sub(r.t[(r.head+len(r.t)-1)%len(r.t)]) < p.MinRTT/8 {
		return
	}
	r.t[r.head], r.acked[r.head] = now, p.BytesAcked
	r.head = (r.head + 1) % len(r.t)
	r.n = min(r.n+1, len(r.t))
	// The newest sample at least one minimum RTT old.
	for k := 2; k <= r.n; k++ {
		j := (r.head - k + len(r.t)) % len(r.t)
		if d := now.Sub(r.t[j]); d >= p.MinRTT {
			r.max = max(r.max, float64(p.BytesAcked-r.acked[j])/d.Seconds())
			return
		}
	}
}
