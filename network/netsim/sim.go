// Package netsim is a deterministic discrete-event network simulator with a
// virtual clock. It runs the real sans-IO mpquic connections over emulated
// links: one event loop, no goroutines racing the clock, all randomness
// derived from one seed, so that a run is reproducible bit for bit and a
// minute of network time takes far less than a minute.
package netsim

import (
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"
)

// Epoch is the virtual time at which every simulation starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Sim is the event loop and the virtual clock.
//
// A simulation can be cut into parts (NewPart): each part is a Sim of its
// own, with its own clock and events, and the hosts whose addresses it
// holds (Network.Assign). The parts share nothing but the links between
// them, whose packets take at least their propagation delay to cross, so
// that the parts can run side by side on two CPUs (SetParallel) in windows
// shorter than that delay. Events are ordered by (time, time of
// scheduling, part, sequence number within the part): an order that does
// not depend on how the parts' runs interleave, so that a run gives the
// same results in parallel or not. In a simulation of one part the order
// is (time, sequence), as it always was.
type Sim struct {
	now    time.Time
	nowNs  int64 // now, in nanoseconds since Epoch
	events []*event
	free   []*event
	// seq numbers the part's events; the part's index is in its top
	// byte.
	seq  uint64
	seed uint64
	// g is the simulation this Sim is a part of, lp the part's index.
	g  *group
	lp int
	// outbox holds the packets sent to other parts during a window,
	// handed over at its end (in the order they were sent).
	outbox []crossing
	// Side by side without windows (runAsync): inbox holds the packets
	// other parts handed over (under inMu), and progress is a time
	// before which the part will run no more events (raised as it
	// runs; see runAsync).
	inMu     sync.Mutex
	inbox    []crossing
	taken    []crossing // the inbox's other buffer
	progress signal
	// spin is how long the part spins awaiting the other's progress.
	spin spinner
	// parked counts the packet events waiting behind their link's
	// event in the heap (see deliverAt).
	parked int
	// Processed counts the events run so far.
	Processed uint64
	// StepLimit, if not zero, bounds Processed: once it is reached, Step
	// runs nothing and reports false, and the Run methods return. Tests
	// set it so that a livelock at one virtual instant cannot hang them.
	StepLimit uint64
}

// New returns a simulation at Epoch whose randomness derives from seed.
func New(seed uint64) *Sim {
	s := &Sim{now: Epoch, seed: seed, progress: newSignal()}
	s.g = &group{parts: []*Sim{s}}
	return s
}

// partBits is where a part's index sits in its events' sequence numbers.
const partBits = 56

// maxParts bounds the parts of a simulation.
const maxParts = 16

// NewPart adds a part to s's simulation (see Sim) and returns it: a clock
// and event loop of its own at s's time, with the same seed. Call it
// before the network that uses it is built. The Run and Step methods of
// any part run the whole simulation.
func (s *Sim) NewPart() *Sim {
	g := s.g
	if len(g.parts) >= maxParts {
		panic("netsim: too many parts")
	}
	p := &Sim{now: s.now, nowNs: s.nowNs, seed: s.seed, g: g, lp: len(g.parts), progress: newSignal()}
	p.seq = uint64(p.lp) << partBits
	g.parts = append(g.parts, p)
	return p
}

// Parts returns the simulation's parts, the first one made by New first.
func (s *Sim) Parts() []*Sim { return s.g.parts }

// SetParallel lets the simulation run its parts on a goroutine each
// (where it can: see group.canWindow); the results are the same as
// without.
func (s *Sim) SetParallel(on bool) { s.g.parallel = on }

// Now is the virtual time.
func (s *Sim) Now() time.Time { return s.now }

// Elapsed is the virtual time since Epoch.
func (s *Sim) Elapsed() time.Duration { return time.Duration(s.nowNs) }

// Seed is the seed of the simulation.
func (s *Sim) Seed() uint64 { return s.seed }

// Rand returns a random source for the named component. Every component
// gets its own stream derived from the seed and its name, so adding a
// component does not change the randomness of the others.
func (s *Sim) Rand(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(s.seed, h.Sum64()))
}

// Timer is a scheduled event that can be cancelled.
type Timer struct {
	ev  *event
	seq uint64
	sim *Sim
}

// Stop cancels the event; it reports whether the event had not run yet.
func (t Timer) Stop() bool {
	if t.ev == nil || t.ev.seq != t.seq || t.ev.idx < 0 {
		return false // never scheduled, already run or stopped
	}
	t.sim.remove(t.ev)
	t.ev.f = nil
	t.sim.free = append(t.sim.free, t.ev)
	return true
}

// Reset moves the pending event of t to virtual time at (now if at is
// in the past), as if stopped and scheduled again with At (the event's
// order among those at the same time is that of one scheduled now), with
// one move in the heap instead of a removal and an insertion, and
// reports true. If t has run, was stopped or was never scheduled, it
// does nothing and reports false. Only t itself follows the event: other
// copies of the Timer are stale afterwards, as after Stop and At (their
// Stop does nothing).
func (t *Timer) Reset(at time.Time) bool {
	ev := t.ev
	if ev == nil || ev.seq != t.seq || ev.idx < 0 {
		return false
	}
	s := t.sim
	ev.at, ev.created, ev.seq = s.ns(at), s.nowNs, s.seq
	s.seq++
	t.seq = ev.seq
	s.up(ev.idx)
	s.down(ev.idx)
	return true
}

// At schedules f at virtual time t (now if t is in the past). Events at the
// same time run in the order they were scheduled.
func (s *Sim) At(t time.Time, f func()) Timer {
	ev := s.schedule(s.ns(t))
	ev.f = f
	return Timer{ev, ev.seq, s}
}

// ns converts a virtual time to nanoseconds since Epoch, not before now.
func (s *Sim) ns(t time.Time) int64 {
	return max(sinceEpoch(t), s.nowNs)
}

// sinceEpoch is int64(t.Sub(Epoch)), from the two times' seconds and
// nanoseconds: Sub checks for overflow by adding the difference back,
// which costs as much again, on every event scheduled. Times more than
// 2^33 s (272 years) from Epoch, where the difference could overflow, go
// through Sub. (Epoch has no monotonic reading, so Sub uses the wall
// clock's readings too.)
func sinceEpoch(t time.Time) int64 {
	if sec := t.Unix() - Epoch.Unix(); sec > -1<<33 && sec < 1<<33 {
		return sec*1e9 + int64(t.Nanosecond()-Epoch.Nanosecond())
	}
	return int64(t.Sub(Epoch))
}

// deliverAt schedules the arrival of p at the end of l at ns since Epoch;
// unlike At it allocates nothing.
//
// A link delivers its packets almost always in the order it accepted
// them, so only its earliest packet's event is in the heap: the ones
// behind it wait in the link's FIFO (parked) and the next enters the heap
// when the one before runs. The heap then holds a few events instead of
// every packet in flight, and the order of events is unchanged: a FIFO
// holds its events in (at, seq) order (a packet that would arrive before
// the FIFO's last one, with jitter, goes into the heap on its own), so
// the heap's least event is still the least of all.
//
// A link into another part (l.to) hands the packet over to that part,
// at once or, in a window, at the window's end (crossing).
func (s *Sim) deliverAt(ns int64, l *Link, p *Packet) {
	at := max(ns, s.nowNs)
	if l.to != s {
		c := crossing{at: at, created: s.nowNs, seq: s.seq, l: l, p: p}
		s.seq++
		if s.g.running {
			s.outbox = append(s.outbox, c)
		} else {
			l.to.accept(c)
		}
		return
	}
	ev := s.newEvent(at)
	ev.link, ev.pkt = l, p
	s.enqueueArrival(ev, l)
}

// enqueueArrival puts a link's packet event ev into the heap or the
// link's FIFO (see deliverAt).
func (s *Sim) enqueueArrival(ev *event, l *Link) {
	at := ev.at
	switch {
	case l.head == nil:
		s.push(ev)
		l.head, l.lastAt = ev, at
	case at >= l.lastAt:
		l.parked.push(ev)
		l.lastAt = at
		s.parked++
	default:
		s.push(ev)
	}
}

// crossing is a packet on its way to another part: its arrival event's
// time, time of scheduling and sequence number in the sending part.
type crossing struct {
	at, created int64
	seq         uint64
	l           *Link
	p           *Packet
}

// accept schedules a crossing in its receiving part s. The crossings of a
// link come in the order they were sent, so its FIFO stays in event
// order.
func (s *Sim) accept(c crossing) {
	ev := s.takeEvent()
	ev.at, ev.created, ev.seq, ev.idx = c.at, c.created, c.seq, -1
	ev.link, ev.pkt = c.l, c.p
	s.enqueueArrival(ev, c.l)
}

// takeEvent takes an event off the free list or allocates one.
func (s *Sim) takeEvent() *event {
	if n := len(s.free); n > 0 {
		ev := s.free[n-1]
		s.free = s.free[:n-1]
		return ev
	}
	return new(event)
}

// newEvent takes an event off the free list (or allocates one) and gives
// it time at and the next sequence number, without scheduling it.
func (s *Sim) newEvent(at int64) *event {
	ev := s.takeEvent()
	ev.at, ev.created, ev.seq = at, s.nowNs, s.seq
	s.seq++
	ev.idx = -1
	return ev
}

func (s *Sim) schedule(at int64) *event {
	ev := s.newEvent(at)
	s.push(ev)
	return ev
}

// push puts ev into the heap.
func (s *Sim) push(ev *event) {
	ev.idx = len(s.events)
	s.events = append(s.events, ev)
	s.up(ev.idx)
}

// After schedules f after d.
func (s *Sim) After(d time.Duration, f func()) Timer { return s.At(s.now.Add(d), f) }

// AfterFunc is After with the shape of time.AfterFunc, returning a cancel
// function; it lets application code written for real time run here.
func (s *Sim) AfterFunc(d time.Duration, f func()) func() bool {
	t := s.After(d, f)
	return t.Stop
}

// Step runs the next event of the simulation (of whichever part); it
// reports false when none is left or the StepLimit is reached.
func (s *Sim) Step() bool {
	if len(s.g.parts) > 1 {
		return s.g.step()
	}
	if len(s.events) == 0 || s.StepLimit != 0 && s.Processed >= s.StepLimit {
		return false
	}
	s.stepPart()
	return true
}

// stepPart runs the part's next event, which must exist.
func (s *Sim) stepPart() {
	ev := s.events[0]
	s.remove(ev)
	if ev.at != s.nowNs {
		s.nowNs = ev.at
		s.now = Epoch.Add(time.Duration(ev.at))
	}
	s.Processed++
	f, l, p := ev.f, ev.link, ev.pkt
	if l != nil && l.head == ev {
		// The link's next packet enters the heap.
		l.head = nil
		if next, ok := l.parked.pop(); ok {
			s.parked--
			l.head = next
			s.push(next)
		}
	}
	ev.f, ev.link, ev.pkt = nil, nil, nil
	s.free = append(s.free, ev)
	if l != nil {
		l.arrive(p)
	} else {
		f()
	}
}

// RunUntil runs events up to and including virtual time t, then sets the
// clock to t (unless the StepLimit stopped it). With several parts it
// runs them all and sets every part's clock.
func (s *Sim) RunUntil(t time.Time) {
	end := sinceEpoch(t)
	if len(s.g.parts) > 1 {
		s.g.runUntil(end)
		return
	}
	for len(s.events) > 0 && s.events[0].at <= end {
		if !s.Step() {
			return
		}
	}
	s.advance(end)
}

// advance sets the clock to end unless it is past it.
func (s *Sim) advance(end int64) {
	if end > s.nowNs {
		s.nowNs = end
		s.now = Epoch.Add(time.Duration(end))
	}
}

// RunFor runs for d of virtual time.
func (s *Sim) RunFor(d time.Duration) { s.RunUntil(s.now.Add(d)) }

// RunWhile runs events while cond holds and events remain, up to the
// virtual deadline; it reports whether cond became false. It is the bounded
// drive loop of tests: a livelock ends at the deadline instead of hanging.
func (s *Sim) RunWhile(cond func() bool, deadline time.Time) bool {
	end := sinceEpoch(deadline)
	for cond() {
		next, ok := s.g.next()
		if !ok {
			return false
		}
		if next.events[0].at > end {
			s.RunUntil(deadline)
			return !cond()
		}
		if !s.Step() {
			return !cond()
		}
	}
	return true
}

// Exhausted reports whether the StepLimit was reached (the first part's,
// over the events of every part).
func (s *Sim) Exhausted() bool { return s.g.exhausted() }

// Pending is the number of scheduled events of every part.
func (s *Sim) Pending() int {
	n := 0
	for _, p := range s.g.parts {
		n += len(p.events) + p.parked + len(p.outbox)
	}
	return n
}

// event is a scheduled function call or packet arrival. Events are
// recycled; a Timer recognises its own by seq.
type event struct {
	at int64 // nanoseconds since Epoch
	// created is the time the event was scheduled (its sender's, for a
	// packet from another part).
	created int64
	seq     uint64
	idx     int // position in the heap, -1 when not scheduled
	f       func()
	link    *Link
	pkt     *Packet
}

func (a *event) before(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.created != b.created {
		return a.created < b.created
	}
	return a.seq < b.seq
}

// eventFIFO is a queue of events in a ring buffer (a link's parked
// packets, see deliverAt).
type eventFIFO struct {
	buf        []*event
	head, size int
}

func (q *eventFIFO) push(ev *event) {
	if q.size == len(q.buf) {
		buf := make([]*event, max(16, 2*len(q.buf)))
		n := copy(buf, q.buf[q.head:])
		copy(buf[n:], q.buf[:q.head])
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = ev
	q.size++
}

func (q *eventFIFO) pop() (*event, bool) {
	if q.size == 0 {
		return nil, false
	}
	ev := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return ev, true
}

// The events form a binary min-heap ordered by (at, created, seq).

func (s *Sim) up(i int) {
	h := s.events
	ev := h[i]
	for i > 0 {
		parent := (i - 1) / 2
		if !ev.before(h[parent]) {
			break
		}
		h[i] = h[parent]
		h[i].idx = i
		i = parent
	}
	h[i] = ev
	ev.idx = i
}

func (s *Sim) down(i int) {
	h := s.events
	n := len(h)
	ev := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].before(h[c]) {
			c = r
		}
		if !h[c].before(ev) {
			break
		}
		h[i] = h[c]
		h[i].idx = i
		i = c
	}
	h[i] = ev
	ev.idx = i
}

// remove takes ev out of the heap.
func (s *Sim) remove(ev *event) {
	i := ev.idx
	last := len(s.events) - 1
	moved := s.events[last]
	s.events[last] = nil
	s.events = s.events[:last]
	ev.idx = -1
	if i == last {
		return
	}
	s.events[i] = moved
	moved.idx = i
	s.down(i)
	if moved.idx == i {
		s.up(i)
	}
}
