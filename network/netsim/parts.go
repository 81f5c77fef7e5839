package netsim

import (
	"math"
	"sync/atomic"
	"time"
)

// minWindow is the least lookahead worth a window: below it the parts
// would wait on each other more than they work, and run one event at a
// time instead.
const minWindow = int64(time.Millisecond)

// group is a simulation of one or more parts (see Sim).
type group struct {
	parts []*Sim
	// parallel is SetParallel's; serial forbids windows (tracers see
	// the packets of every part in the order of time).
	parallel, serial bool
	// running is set while a window runs: packets for another part wait
	// in their sender's outbox.
	running bool
	// cross lists the links from one part into another, whose least
	// delay is the lookahead of a window; window is the lookahead of the
	// window running.
	cross  []*Link
	window int64
	// windows counts the runs of the parts side by side (runAsync).
	windows uint64
	// chooser, if set, decides stretch by stretch whether two parts run
	// side by side or in turns (SetChooser); turns counts the stretches
	// it had run in turns.
	chooser Chooser
	turns   uint64
}

// A Chooser decides how the two parts of a simulation run, one stretch of
// virtual time after the other: side by side on two goroutines (runAsync)
// or in turns on the caller's (runWindows). The results are the same
// either way; only the speed differs, and which way is faster depends on
// what the CPUs give, which netsim does not measure: it reads no clock.
// Its user (the runner) measures each stretch and chooses the next.
type Chooser interface {
	// Next returns how the next stretch runs and its length in virtual
	// nanoseconds (at least 1; a stretch also ends where a Run method
	// stops).
	Next() (side bool, span int64)
	// Ran reports the stretch just run: how, the events it ran and the
	// virtual nanoseconds it covered.
	Ran(side bool, events uint64, span int64)
}

// SetChooser lets c decide how two parts run (see Chooser), in place of
// SetParallel; nil goes back to SetParallel's choice.
func (s *Sim) SetChooser(c Chooser) { s.g.chooser = c }

// Turns is the number of stretches a Chooser had the parts run in turns.
func (s *Sim) Turns() uint64 { return s.g.turns }

// Windows is the number of times the parts ran side by side (0: they
// never did).
func (s *Sim) Windows() uint64 { return s.g.windows }

func (g *group) processed() uint64 {
	var n uint64
	for _, p := range g.parts {
		n += p.Processed
	}
	return n
}

// next returns the part whose next event comes first, in the order of
// events (see Sim); false if no part has one.
func (g *group) next() (*Sim, bool) {
	var best *Sim
	for _, p := range g.parts {
		if len(p.events) == 0 {
			continue
		}
		if best == nil || p.events[0].before(best.events[0]) {
			best = p
		}
	}
	return best, best != nil
}

// first is the time of the earliest event of any part; false if none is
// left.
func (g *group) first() (int64, bool) {
	p, ok := g.next()
	if !ok {
		return 0, false
	}
	return p.events[0].at, true
}

// exhausted reports whether the parts ran the StepLimit's events (the
// first part's, over every part).
func (g *group) exhausted() bool {
	lim := g.parts[0].StepLimit
	return lim != 0 && g.processed() >= lim
}

// step runs the simulation's next event, in whichever part.
func (g *group) step() bool {
	lim := g.parts[0].StepLimit
	if lim != 0 && g.processed() >= lim {
		return false
	}
	p, ok := g.next()
	if !ok {
		return false
	}
	p.stepPart()
	return true
}

// lookahead is the least delay of the links between parts: no packet sent
// now reaches another part sooner. MaxInt64 without such links.
func (g *group) lookahead() int64 {
	la := int64(math.MaxInt64)
	for _, l := range g.cross {
		la = min(la, int64(l.model.MinDelay()))
	}
	return la
}

// canWindow reports whether the parts may run in windows (see
// runWindows): no tracer (it must see the packets of every part in the
// order of time) and a lookahead of at least minWindow.
func (g *group) canWindow() bool {
	return !g.serial && g.lookahead() >= minWindow
}

// runUntil runs every part's events up to and including end, then sets
// every part's clock to end (unless the StepLimit stopped it): in
// windows, side by side if SetParallel allows, or one event of any part
// at a time.
func (g *group) runUntil(end int64) {
	if g.canWindow() {
		if g.chooser != nil && len(g.parts) == 2 {
			g.runChosen(end)
		} else if g.parallel && len(g.parts) == 2 {
			g.runAsync(end)
		} else {
			g.runWindows(end)
		}
	} else if !g.stepUntil(end) {
		return
	}
	if g.exhausted() {
		return
	}
	for _, p := range g.parts {
		p.advance(end)
	}
}

// runChosen runs two parts up to end in stretches, each side by side or in
// turns as the chooser says. A stretch runs every event up to its end in
// both parts before the next starts, so the two ways can follow each other
// in any order.
func (g *group) runChosen(end int64) {
	for {
		from, ok := g.first()
		if !ok || from > end {
			return
		}
		side, span := g.chooser.Next()
		limit := end
		if span >= 1 && from <= end-span {
			limit = from + span - 1
		}
		before := g.processed()
		if side {
			g.runAsync(limit)
		} else {
			g.turns++
			g.runWindows(limit)
		}
		g.chooser.Ran(side, g.processed()-before, limit-from+1)
		if g.exhausted() {
			return
		}
	}
}

// stepUntil runs the parts one event at a time up to end; false if the
// StepLimit stopped it.
func (g *group) stepUntil(end int64) bool {
	for {
		p, ok := g.next()
		if !ok || p.events[0].at > end {
			return true
		}
		if !g.step() {
			return false
		}
	}
}

// runWindows runs the parts in windows, one after the other (side by
// side, two parts run without windows: runAsync). A window starts at the
// earliest event w of any part and ends before w + lookahead: a packet a
// part sends in it arrives in another part after the window, so each part
// runs the window's events without the others', and the packets sent are
// handed over in between, in the order each part sent them.
func (g *group) runWindows(end int64) {
	for {
		w, ok := g.first()
		if !ok || w > end {
			return
		}
		g.window = g.lookahead()
		if g.window < minWindow {
			// A scheduled change brought a link's delay down.
			g.stepUntil(end)
			return
		}
		limit := end
		if w <= end-g.window {
			limit = w + g.window - 1
		}
		g.running = true
		for _, p := range g.parts {
			p.runLocal(limit)
		}
		g.running = false
		g.handOver()
		if g.exhausted() {
			return
		}
	}
}

// signal is a counter one goroutine raises and another awaits. The
// waiter spins before it sleeps: the other part's progress usually moves
// within microseconds, and waking a sleeping goroutine costs some 100 µs
// on a virtual machine.
type signal struct {
	v        *atomic.Uint64
	sleeping *atomic.Bool
	wake     chan struct{}
}

func newSignal() signal {
	return signal{v: new(atomic.Uint64), sleeping: new(atomic.Bool), wake: make(chan struct{}, 1)}
}

// maxSpins bounds the spinning of signal.await: that many checks of the
// counter, each followed by spinPause (about 100 ns on an AMD EPYC of
// family 26: some 400 µs in all). On this project's virtual machine, the
// same build's speed-2x100 sometimes takes 0.65 s instead of 0.385 s for
// seconds at a time (about a fifth of the runs); there, spinning longer
// than the 17 µs of 65,536 bare checks took 4 % off the slow runs (76
// triples, median 0.650 -> 0.624 s with the pauses, 0.625 s with 2^20
// bare checks) and nothing off the others.
//
// A waiter's spin adapts (spinner): when the other part's CPU is taken by
// another process, the other part makes no progress while its waiter
// spins, and the spin only takes CPU from whatever runs instead. Each
// wait that ends in sleep halves the waiter's spin, down to minSpins;
// each that ends while spinning lengthens it by an eighth, up to maxSpins.
const (
	maxSpins = 1 << 12
	minSpins = 1 << 5
)

// spinner is one waiter's spin length (see maxSpins); its zero value
// spins the most.
type spinner struct{ short int }

func (p *spinner) spins() int { return maxSpins - p.short }

func (p *spinner) slept() {
	n := max(p.spins()/2, minSpins)
	p.short = maxSpins - n
}

func (p *spinner) caught() {
	n := p.spins()
	p.short = maxSpins - min(n+n/8+1, maxSpins)
}

// raise sets the counter to v and wakes the waiter if it sleeps.
func (s signal) raise(v uint64) {
	s.v.Store(v)
	if s.sleeping.Load() {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// await returns once the counter is at least v, spinning as sp says first. The sleeping flag is set
// before the counter is read again, and raise reads the flag after it
// stores, so one of the two sees the other's write: no wake-up is lost. A
// stale wake-up only makes the loop check again.
func (s signal) await(v uint64, sp *spinner) {
	for range sp.spins() {
		if s.v.Load() >= v {
			sp.caught()
			return
		}
		spinPause()
	}
	sp.slept()
	for {
		s.sleeping.Store(true)
		if s.v.Load() >= v {
			s.sleeping.Store(false)
			return
		}
		<-s.wake
		s.sleeping.Store(false)
		if s.v.Load() >= v {
			return
		}
	}
}

// runAsync runs two parts side by side without windows (conservative
// synchronisation with lookahead): each part publishes its progress, a
// time before which it will run no more events, after it has handed over
// every packet it sent before; a part may run every event earlier than
// the other's progress plus the lookahead, since whatever the other
// sends from then on arrives later. A part's progress is the earlier of
// its next event and that bound, so the two progress together, without
// the whole simulation stopping between windows: a part that runs ahead
// of the other (its work in one stretch of time lighter) does not wait
// for it at every window's end. Each part still runs its events in the
// order of events, so the results are runWindows'.
func (g *group) runAsync(end int64) {
	la := g.lookahead()
	g.window, g.running = la, true
	start := uint64(g.parts[0].nowNs)
	for _, p := range g.parts {
		p.progress.v.Store(start)
	}
	a, b := g.parts[0], g.parts[1]
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.runAhead(a, end, la)
	}()
	a.runAhead(b, end, la)
	<-done
	g.running = false
	g.windows++
	// Packets handed over after the other part had finished.
	for _, p := range g.parts {
		p.takeInbox()
	}
}

// batch is how many events a part runs between two publications of its
// progress in runAhead.
const batch = 64

// runAhead is one part's side of runAsync, other being the other part.
func (s *Sim) runAhead(other *Sim, end, la int64) {
	lim := s.g.parts[0].StepLimit
	for {
		// The other part hands its packets over before it raises its
		// progress: read the progress first, and every packet sent
		// before it is in the inbox.
		seen := other.progress.v.Load()
		s.takeInbox()
		bound := int64(math.MaxInt64)
		if seen < uint64(math.MaxInt64-la) {
			bound = int64(seen) + la
		}
		for n := 1; len(s.events) > 0 && s.events[0].at < bound && s.events[0].at <= end; n++ {
			if lim != 0 && s.Processed >= lim {
				s.publish(math.MaxInt64)
				return
			}
			s.stepPart()
			if n%batch == 0 {
				s.publish(min(s.nextAt(), bound))
			}
		}
		next := s.nextAt()
		s.publish(min(next, bound))
		if next > end && bound > end {
			return
		}
		other.progress.await(seen+1, &s.spin)
	}
}

// nextAt is the time of the part's next event, MaxInt64 without one.
func (s *Sim) nextAt() int64 {
	if len(s.events) == 0 {
		return math.MaxInt64
	}
	return s.events[0].at
}

// publish hands the part's outbox over to the receiving parts, then
// raises its progress to t.
func (s *Sim) publish(t int64) {
	if len(s.outbox) > 0 {
		to := s.outbox[0].l.to
		to.inMu.Lock()
		to.inbox = append(to.inbox, s.outbox...)
		to.inMu.Unlock()
		clear(s.outbox)
		s.outbox = s.outbox[:0]
	}
	if uint64(t) > s.progress.v.Load() {
		s.progress.raise(uint64(t))
	}
}

// takeInbox schedules the packets handed over to the part.
func (s *Sim) takeInbox() {
	s.inMu.Lock()
	in := s.inbox
	s.inbox = s.taken[:0]
	s.inMu.Unlock()
	for i := range in {
		s.accept(in[i])
	}
	clear(in)
	s.taken = in
}

// runLocal runs the part's events up to and including limit. Side by
// side, a part stops early once it alone ran the step limit's events
// (the first part's StepLimit, read-only while windows run): a livelock
// then ends the window, and the simulation is Exhausted after it.
func (s *Sim) runLocal(limit int64) {
	lim := s.g.parts[0].StepLimit
	for len(s.events) > 0 && s.events[0].at <= limit {
		if lim != 0 && s.Processed >= lim {
			return
		}
		s.stepPart()
	}
}

// handOver gives the packets of the parts' outboxes to their receiving
// parts.
func (g *group) handOver() {
	for _, p := range g.parts {
		for i := range p.outbox {
			c := &p.outbox[i]
			c.l.to.accept(*c)
			*c = crossing{}
		}
		p.outbox = p.outbox[:0]
	}
}
