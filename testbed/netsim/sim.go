// Package netsim is a deterministic discrete-event network simulator with a
// virtual clock. It runs the real sans-IO mpquic connections over emulated
// links: one event loop, no goroutines racing the clock, all randomness
// derived from one seed, so that a run is reproducible bit for bit and a
// minute of network time takes far less than a minute.
package netsim

import (
	"container/heap"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// Epoch is the virtual time at which every simulation starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Sim is the event loop and the virtual clock.
type Sim struct {
	now    time.Time
	events eventHeap
	seq    uint64
	seed   uint64
	// Processed counts the events run so far.
	Processed uint64
}

// New returns a simulation at Epoch whose randomness derives from seed.
func New(seed uint64) *Sim {
	return &Sim{now: Epoch, seed: seed}
}

// Now is the virtual time.
func (s *Sim) Now() time.Time { return s.now }

// Elapsed is the virtual time since Epoch.
func (s *Sim) Elapsed() time.Duration { return s.now.Sub(Epoch) }

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
type Timer struct{ ev *event }

// Stop cancels the event; it reports whether the event had not run yet.
func (t Timer) Stop() bool {
	if t.ev == nil || t.ev.done {
		return false
	}
	t.ev.done = true
	return true
}

// At schedules f at virtual time t (now if t is in the past). Events at the
// same time run in the order they were scheduled.
func (s *Sim) At(t time.Time, f func()) Timer {
	if t.Before(s.now) {
		t = s.now
	}
	ev := &event{at: t, seq: s.seq, f: f}
	s.seq++
	heap.Push(&s.events, ev)
	return Timer{ev}
}

// After schedules f after d.
func (s *Sim) After(d time.Duration, f func()) Timer { return s.At(s.now.Add(d), f) }

// AfterFunc is After with the shape of time.AfterFunc, returning a cancel
// function; it lets application code written for real time run here.
func (s *Sim) AfterFunc(d time.Duration, f func()) func() bool {
	t := s.After(d, f)
	return t.Stop
}

// Step runs the next event; it reports false when none is left.
func (s *Sim) Step() bool {
	for s.events.Len() > 0 {
		ev := heap.Pop(&s.events).(*event)
		if ev.done {
			continue
		}
		ev.done = true
		s.now = ev.at
		s.Processed++
		ev.f()
		return true
	}
	return false
}

// RunUntil runs events up to and including virtual time t, then sets the
// clock to t.
func (s *Sim) RunUntil(t time.Time) {
	for s.events.Len() > 0 {
		ev := s.events[0]
		if ev.done {
			heap.Pop(&s.events)
			continue
		}
		if ev.at.After(t) {
			break
		}
		s.Step()
	}
	if t.After(s.now) {
		s.now = t
	}
}

// RunFor runs for d of virtual time.
func (s *Sim) RunFor(d time.Duration) { s.RunUntil(s.now.Add(d)) }

// RunWhile runs events while cond holds and events remain, up to the
// virtual deadline; it reports whether cond became false. It is the bounded
// drive loop of tests: a livelock ends at the deadline instead of hanging.
func (s *Sim) RunWhile(cond func() bool, deadline time.Time) bool {
	for cond() {
		if s.events.Len() == 0 {
			return false
		}
		if s.events[0].at.After(deadline) {
			s.RunUntil(deadline)
			return !cond()
		}
		s.Step()
	}
	return true
}

// Pending is the number of scheduled events (cancelled ones included until
// they reach the front).
func (s *Sim) Pending() int { return s.events.Len() }

type event struct {
	at   time.Time
	seq  uint64
	f    func()
	done bool
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	n := len(old)
	x := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return x
}
