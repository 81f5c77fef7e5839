package netsim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Events run in time order, ties in scheduling order, and cancelled ones
// never run.
func TestSimOrder(t *testing.T) {
	sim := New(1)
	var got []string
	rec := func(s string) func() { return func() { got = append(got, s) } }
	sim.After(2*time.Millisecond, rec("c"))
	sim.After(time.Millisecond, rec("a"))
	sim.After(time.Millisecond, rec("b"))
	stop := sim.AfterFunc(time.Millisecond, rec("cancelled"))
	sim.At(Epoch.Add(-time.Hour), rec("past")) // runs now
	tm := sim.After(3*time.Millisecond, rec("stopped"))
	if !stop() || stop() {
		t.Error("cancel reported wrongly")
	}
	if !tm.Stop() {
		t.Error("Stop of a pending timer reported false")
	}
	drain(t, sim, 10)
	want := "[past a b c]"
	if g := fmt.Sprint(got); g != want {
		t.Errorf("ran %s, want %s", g, want)
	}
	if sim.Elapsed() != 2*time.Millisecond || sim.Processed != 4 {
		t.Errorf("elapsed %v processed %d", sim.Elapsed(), sim.Processed)
	}
}

// RunUntil stops at its time; RunWhile stops when the condition fails or
// at the deadline, so a livelock cannot hang a test.
func TestSimRunBounds(t *testing.T) {
	sim := New(1)
	n := 0
	var tick func()
	tick = func() { n++; sim.After(time.Millisecond, tick) } // forever
	sim.After(0, tick)
	sim.RunUntil(Epoch.Add(10 * time.Millisecond))
	if n != 11 || sim.Elapsed() != 10*time.Millisecond {
		t.Errorf("RunUntil: %d ticks at %v", n, sim.Elapsed())
	}
	if sim.RunWhile(func() bool { return true }, Epoch.Add(time.Second)) {
		t.Error("RunWhile reported success at the deadline")
	}
	if sim.Elapsed() != time.Second {
		t.Errorf("RunWhile stopped at %v", sim.Elapsed())
	}
	if !sim.RunWhile(func() bool { return n < 1500 }, Epoch.Add(time.Hour)) || n != 1500 {
		t.Errorf("RunWhile: %d ticks", n)
	}
	sim.RunFor(time.Second)
	if sim.Elapsed() != 2*time.Second+499*time.Millisecond {
		t.Errorf("RunFor ended at %v", sim.Elapsed())
	}
}

// Components draw from independent streams derived from the seed and
// their name.
func TestSimRand(t *testing.T) {
	a, b := New(1), New(1)
	x := a.Rand("x").Uint64()
	b.Rand("y").Uint64() // another component does not shift x
	if b.Rand("x").Uint64() != x {
		t.Error("same seed and name, different stream")
	}
	if a.Rand("y").Uint64() == x || New(2).Rand("x").Uint64() == x {
		t.Error("streams collide")
	}
}

// The StepLimit stops every way of running the loop.
func TestSimStepLimit(t *testing.T) {
	sim := New(1)
	sim.StepLimit = 100
	var loop func()
	loop = func() { sim.After(0, loop) } // a livelock at one instant
	sim.After(time.Millisecond, loop)
	sim.RunUntil(Epoch.Add(time.Second))
	if sim.Processed != 100 || !sim.Exhausted() || sim.Elapsed() != time.Millisecond {
		t.Errorf("RunUntil: %d steps at %v", sim.Processed, sim.Elapsed())
	}
	if sim.RunWhile(func() bool { return true }, Epoch.Add(time.Hour)) || sim.Step() {
		t.Error("ran past the limit")
	}
	sim.StepLimit = 150
	sim.RunFor(time.Second)
	if sim.Processed != 150 {
		t.Errorf("raised limit: %d steps", sim.Processed)
	}
}

// Packets of links run in time order among the timers, ties in
// scheduling order, whether they keep the order their link accepted them
// in (parked behind the link's first, see Sim.deliverAt) or overtake
// (jitter): the order is the one a single heap of every event gives,
// (time, scheduling order). Packets are scheduled from events too, as
// links do, and Pending counts the parked ones.
func TestSimLinkPacketOrder(t *testing.T) {
	sim := New(1)
	r := sim.Rand("order")
	type sched struct {
		at  int64
		seq int
	}
	var want []sched
	var got []int
	seq := 0
	var links [3]*Link
	for i := range links {
		l, err := NewLink(sim, fmt.Sprint("l", i), LinkConfig{Rate: 1e6}, func(p *Packet) { got = append(got, int(p.Data[0])<<8|int(p.Data[1])) })
		if err != nil {
			t.Fatal(err)
		}
		links[i] = l
	}
	// schedule sends a packet on a random link, or sets a timer, at a
	// time that is mostly later than the link's last (in order) and
	// sometimes earlier, or equal.
	last := make([]int64, len(links))
	var schedule func()
	schedule = func() {
		if seq >= 3000 {
			return
		}
		s := seq
		seq++
		i := r.IntN(len(links) + 1)
		now := sim.nowNs
		var at int64
		if i == len(links) {
			at = now + int64(r.IntN(5))*int64(time.Microsecond)
			sim.At(Epoch.Add(time.Duration(at)), func() { got = append(got, s); schedule(); schedule() })
		} else {
			switch r.IntN(4) {
			case 0: // overtakes
				at = max(now, last[i]-int64(r.IntN(3))*int64(time.Microsecond))
			case 1: // ties
				at = max(now, last[i])
			default:
				at = max(now, last[i]) + int64(r.IntN(3))*int64(time.Microsecond)
			}
			last[i] = max(last[i], at)
			sim.deliverAt(at, links[i], &Packet{Data: []byte{byte(s >> 8), byte(s)}})
		}
		want = append(want, sched{max(at, now), s})
	}
	for range 20 {
		schedule()
	}
	if sim.Pending() != 20 {
		t.Fatalf("Pending() = %d, want 20", sim.Pending())
	}
	// Each event run schedules up to two more: run them all, then
	// compare with (time, scheduling order).
	for sim.Step() {
		if len(got)%7 == 0 && seq < 3000 {
			schedule()
		}
	}
	slices.SortStableFunc(want, func(a, b sched) int { return cmp.Compare(a.at, b.at) })
	if len(got) != len(want) {
		t.Fatalf("%d events ran, %d scheduled", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i].seq {
			t.Fatalf("event %d: ran %d, want %d (at %d)", i, got[i], want[i].seq, want[i].at)
		}
	}
	if sim.Pending() != 0 {
		t.Fatalf("Pending() = %d after the run", sim.Pending())
	}
}

// TestSinceEpoch: sinceEpoch is t.Sub(Epoch) to the nanosecond, near
// Epoch and far from it (where Sub saturates), with and without a
// monotonic reading on t.
func TestSinceEpoch(t *testing.T) {
	for _, tm := range []time.Time{
		Epoch,
		Epoch.Add(1),
		Epoch.Add(-1),
		Epoch.Add(20*time.Second + 123456789),
		Epoch.Add(-20*time.Second - 987654321),
		Epoch.Add(250 * 365 * 24 * time.Hour),
		Epoch.Add(-250 * 365 * 24 * time.Hour),
		Epoch.AddDate(300, 0, 0).Add(7),
		Epoch.AddDate(-300, 0, 0).Add(-7),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("x", 3600)),
		time.Now(),
		time.Now().Add(-time.Hour),
	} {
		if got, want := sinceEpoch(tm), int64(tm.Sub(Epoch)); got != want {
			t.Errorf("sinceEpoch(%v) = %d, want %d", tm, got, want)
		}
	}
}

// TestTimerReset: a reset timer runs where Stop and At would have put it
// (after the events already at its new time; earlier or later than
// before), and a timer that ran or was stopped cannot be reset.
func TestTimerReset(t *testing.T) {
	s := New(1)
	var order []string
	at := func(ms int) time.Time { return Epoch.Add(time.Duration(ms) * time.Millisecond) }
	rec := func(name string) func() { return func() { order = append(order, name) } }
	a := s.At(at(10), rec("a"))
	s.At(at(10), rec("b"))
	s.At(at(5), rec("c"))
	d := s.At(at(1), rec("d"))
	e := s.At(at(20), rec("e"))
	if !a.Reset(at(10)) { // behind b now
		t.Fatal("Reset of a pending timer failed")
	}
	if !e.Reset(at(2)) { // earlier
		t.Fatal("Reset of a pending timer failed")
	}
	g := s.At(at(0), rec("g"))
	if !g.Reset(at(50)) { // from the heap's top to its end
		t.Fatal("Reset of a pending timer failed")
	}
	stopped := s.At(at(3), rec("stopped"))
	stopped.Stop()
	if stopped.Reset(at(4)) {
		t.Error("Reset of a stopped timer succeeded")
	}
	s.RunUntil(at(1))
	if d.Reset(at(30)) {
		t.Error("Reset of a timer that ran succeeded")
	}
	s.RunUntil(at(100))
	if got, want := strings.Join(order, " "), "d e c b a g"; got != want {
		t.Errorf("order %q, want %q", got, want)
	}
}
