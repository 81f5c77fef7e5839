package netsim

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// pingPong is a workload on a two-host network: each host answers every
// packet it receives with up to three packets after random delays of its
// own timers (drawn from its part's streams), and logs what it does with
// its part's clock. Each host's log depends only on what reaches it, so
// the logs are the same whichever way the parts run.
type pingPong struct {
	logs [2][]string
}

// runPingPong runs the workload for 2 s of virtual time on a network of
// one part (parts = 1) or two, in parallel or not, with links of delay
// d; it returns the hosts' logs and how many times the parts ran side by side.
func runPingPong(t *testing.T, parts int, parallel bool, d time.Duration) ([2][]string, uint64) {
	t.Helper()
	if parts == 2 {
		return runPingPongWith(t, func(s *Sim) { s.SetParallel(parallel) }, d)
	}
	return runPingPongOn(t, New(7), nil, d)
}

// runPingPongWith runs the workload on two parts, set up by set.
func runPingPongWith(t *testing.T, set func(*Sim), d time.Duration) ([2][]string, uint64) {
	t.Helper()
	sim := New(7)
	b := sim.NewPart()
	set(sim)
	return runPingPongOn(t, sim, b, d)
}

// runPingPongOn runs the workload with the server in part b (nil: in sim).
func runPingPongOn(t *testing.T, sim, b *Sim, d time.Duration) ([2][]string, uint64) {
	t.Helper()
	ends := [2]*Sim{sim, sim}
	if b != nil {
		ends[1] = b
	}
	topo, err := NewSplitTopology(ends[0], ends[1], []PathSpec{
		Symmetric(LinkConfig{Rate: 10e6, Delay: d, Jitter: d / 3, Loss: Bernoulli{P: 0.05}}),
		Symmetric(LinkConfig{Rate: 5e6, Delay: 2 * d}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var pp pingPong
	addrs := [2][]netip.AddrPort{}
	for i := range topo.Client {
		addrs[0] = append(addrs[0], netip.AddrPortFrom(topo.Client[i], 1))
		addrs[1] = append(addrs[1], netip.AddrPortFrom(topo.Server[i], 2))
	}
	for h := range 2 {
		part := ends[h]
		out := topo.Net.Sender(addrs[h][0].Addr())
		rng := part.Rand(fmt.Sprintf("host%d", h))
		send := func(n uint64) {
			path := int(n % 2)
			peer := addrs[1-h][path]
			b := out.Buffer(100 + int(n%1000))
			b[0] = byte(n)
			out.Send(addrs[h][path], peer, b)
			pp.logs[h] = append(pp.logs[h], fmt.Sprintf("%d send %d", part.Elapsed(), n))
		}
		for _, a := range addrs[h] {
			if err := topo.Net.Bind(a, func(p *Packet) {
				n := uint64(len(p.Data))*31 + uint64(p.Data[0])
				pp.logs[h] = append(pp.logs[h], fmt.Sprintf("%d recv %v %d", part.Elapsed(), p.Src, len(p.Data)))
				for k := range rng.IntN(4) {
					part.After(time.Duration(rng.Int64N(int64(5*time.Millisecond))), func() { send(n + uint64(k)) })
				}
			}); err != nil {
				t.Fatal(err)
			}
		}
		for k := range 20 {
			part.After(time.Duration(k)*time.Millisecond, func() { send(uint64(k + 100*h)) })
		}
	}
	sim.RunUntil(Epoch.Add(2 * time.Second))
	for _, p := range sim.Parts() {
		if p.Now() != Epoch.Add(2*time.Second) {
			t.Fatalf("part %d at %v after RunUntil", p.lp, p.Elapsed())
		}
	}
	return pp.logs, sim.Windows()
}

// TestPartsSameRun: the ping-pong workload gives the same logs in one part,
// in two parts in windows one after the other, and in two parts side by
// side; with links of 0.2 ms the windows would be too short
// and the two parts run one event at a time, with the same logs again.
func TestPartsSameRun(t *testing.T) {
	for _, d := range []time.Duration{5 * time.Millisecond, 200 * time.Microsecond} {
		one, w1 := runPingPong(t, 1, true, d)
		serial, w2 := runPingPong(t, 2, false, d)
		par, w3 := runPingPong(t, 2, true, d)
		if len(one[0]) < 1000 || len(one[1]) < 1000 {
			t.Fatalf("delay %v: only %d and %d log lines: the workload died out", d, len(one[0]), len(one[1]))
		}
		for h := range 2 {
			if !slices.Equal(one[h], serial[h]) || !slices.Equal(one[h], par[h]) {
				t.Errorf("delay %v: host %d's logs differ (%d, %d, %d lines)", d, h, len(one[h]), len(serial[h]), len(par[h]))
			}
		}
		wantPar := d >= time.Millisecond
		if w1 != 0 || w2 != 0 || (w3 > 0) != wantPar {
			t.Errorf("delay %v: windows %d, %d, %d (parallel expected: %v)", d, w1, w2, w3, wantPar)
		}
		t.Logf("delay %v: %d + %d log lines, %d windows", d, len(one[0]), len(one[1]), w3)
	}
}

// TestPartsEventOrder: events of one time run in the order they were
// scheduled, a packet from another part counting as scheduled when it was
// sent; of one time and one time of scheduling, the first part's first.
// (That the order is the same when the parts run side by side is
// TestPartsSameRun's.)
func TestPartsEventOrder(t *testing.T) {
	sim := New(1)
	b := sim.NewPart()
	topo, err := NewSplitTopology(sim, b, []PathSpec{Symmetric(LinkConfig{Rate: 1e9, Delay: 10 * time.Millisecond})})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	dst := netip.AddrPortFrom(topo.Server[0], 1)
	if err := topo.Net.Bind(dst, func(*Packet) { order = append(order, "packet") }); err != nil {
		t.Fatal(err)
	}
	tx := topo.Up[0].model.TxTime(125)                           // 1 µs
	arrive := Epoch.Add(11*time.Millisecond + time.Duration(tx)) // sent at 1 ms
	// In part b: a timer for the packet's arrival time scheduled before
	// the packet was sent, one scheduled after, and one scheduled at the
	// same instant as the send (part b comes after part 0 then).
	b.After(0, func() { b.At(arrive, func() { order = append(order, "before") }) })
	sim.After(time.Millisecond, func() {
		out := topo.Net.Sender(topo.Client[0])
		out.Send(netip.AddrPortFrom(topo.Client[0], 1), dst, out.Buffer(125))
	})
	b.After(time.Millisecond, func() { b.At(arrive, func() { order = append(order, "same instant") }) })
	b.After(2*time.Millisecond, func() { b.At(arrive, func() { order = append(order, "after") }) })
	sim.RunUntil(Epoch.Add(time.Second))
	if want := []string{"before", "packet", "same instant", "after"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

// TestPartsSetup: a network of two parts refuses what would join them
// outside their links: shared links, an address assigned after it was
// connected, a node across parts; and a link between parts running side
// by side refuses a delay below the window.
func TestPartsSetup(t *testing.T) {
	sim := New(1)
	b := sim.NewPart()
	topo, err := NewSplitTopology(sim, b, []PathSpec{Symmetric(LinkConfig{Rate: 1e6, Delay: 5 * time.Millisecond})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topo.Net.AddLink("shared", LinkConfig{Rate: 1e6}); err == nil {
		t.Error("a shared link in a network of two parts")
	}
	if err := topo.Net.Assign(topo.Client[0], b); err == nil {
		t.Error("an address assigned after it was connected")
	}
	if _, err := NewNode(topo.Net, []netip.AddrPort{netip.AddrPortFrom(topo.Client[0], 1), netip.AddrPortFrom(topo.Server[0], 1)}, nil, nil); err == nil {
		t.Error("a node across parts")
	}
	sim.SetParallel(true)
	var setErr error
	sim.After(time.Millisecond, func() {
		setErr = topo.Up[0].SetConfig(LinkConfig{Rate: 1e6, Delay: time.Millisecond})
	})
	// Something for part b to do, so that the window runs both.
	b.After(time.Millisecond, func() {})
	sim.RunUntil(Epoch.Add(10 * time.Millisecond))
	if sim.Windows() == 0 || setErr == nil {
		t.Errorf("windows %d, SetConfig below the window: %v", sim.Windows(), setErr)
	}
}

// TestPartsStepLimit: a part that schedules events at one instant forever
// stops at the step limit when the parts run side by side too, and the
// simulation says it is exhausted.
func TestPartsStepLimit(t *testing.T) {
	sim := New(1)
	b := sim.NewPart()
	if _, err := NewSplitTopology(sim, b, []PathSpec{Symmetric(LinkConfig{Rate: 1e6, Delay: 5 * time.Millisecond})}); err != nil {
		t.Fatal(err)
	}
	sim.SetParallel(true)
	sim.StepLimit = 10_000
	var loop func()
	loop = func() { b.After(0, loop) }
	b.After(time.Millisecond, loop)
	sim.After(time.Millisecond, func() {})
	sim.RunUntil(Epoch.Add(time.Second))
	if !sim.Exhausted() || sim.Windows() == 0 {
		t.Errorf("exhausted %v after %d windows", sim.Exhausted(), sim.Windows())
	}
	if b.Now().After(Epoch.Add(2 * time.Millisecond)) {
		t.Errorf("the livelocked part ran on to %v", b.Elapsed())
	}
}

// scripted is a Chooser that runs the parts side by side and in turns by
// turns, in stretches of lengths that vary, and records what it was told.
type scripted struct {
	n         int
	ran       [2]int
	events    uint64
	badReport bool
}

func (c *scripted) Next() (bool, int64) {
	c.n++
	return c.n%3 != 0, int64(c.n%7+1) * int64(3*time.Millisecond)
}

func (c *scripted) Ran(side bool, events uint64, span int64) {
	if span < 1 || span > int64(7*3*time.Millisecond) {
		c.badReport = true
	}
	if side {
		c.ran[1]++
	} else {
		c.ran[0]++
	}
	c.events += events
}

// TestPartsChooserSameRun: parts run by a Chooser, side by side and in
// turns stretch after stretch, give the logs of one part; both ways ran,
// and the chooser was told every event.
func TestPartsChooserSameRun(t *testing.T) {
	const d = 5 * time.Millisecond
	one, _ := runPingPong(t, 1, false, d)
	c := &scripted{}
	chosen, windows := runPingPongWith(t, func(s *Sim) { s.SetChooser(c) }, d)
	for h := range 2 {
		if !slices.Equal(one[h], chosen[h]) {
			t.Errorf("host %d's logs differ (%d and %d lines)", h, len(one[h]), len(chosen[h]))
		}
	}
	if c.ran[0] == 0 || c.ran[1] == 0 || windows != uint64(c.ran[1]) || c.badReport {
		t.Errorf("stretches in turns %d, side by side %d, windows %d, bad report %v", c.ran[0], c.ran[1], windows, c.badReport)
	}
	if want := uint64(len(one[0]) + len(one[1])); c.events < want {
		t.Errorf("the chooser was told of %d events, fewer than the %d log lines", c.events, want)
	}
}

// TestSpinnerAdapts: a waiter that keeps having to sleep spins less and
// less, down to minSpins; one whose waits end while it spins spins longer
// again, up to maxSpins.
func TestSpinnerAdapts(t *testing.T) {
	var sp spinner
	if sp.spins() != maxSpins {
		t.Fatalf("a new spinner spins %d, want %d", sp.spins(), maxSpins)
	}
	for range 20 {
		sp.slept()
	}
	if sp.spins() != minSpins {
		t.Errorf("after 20 sleeps: %d spins, want %d", sp.spins(), minSpins)
	}
	for range 100 {
		sp.caught()
	}
	if sp.spins() != maxSpins {
		t.Errorf("after 100 waits caught spinning: %d spins, want %d", sp.spins(), maxSpins)
	}
	// The signal's waiter: a counter already raised is caught at once.
	s := newSignal()
	s.raise(5)
	sp.slept()
	n := sp.spins()
	s.await(5, &sp)
	if sp.spins() <= n {
		t.Errorf("a wait caught spinning left %d spins (had %d)", sp.spins(), n)
	}
	// A wait that ends in sleep halves the spin: the counter is raised
	// only once the waiter sleeps.
	n = sp.spins()
	done := make(chan struct{})
	go func() { s.await(9, &sp); close(done) }()
	for !s.sleeping.Load() {
		time.Sleep(time.Millisecond)
	}
	s.raise(9)
	<-done
	if sp.spins() != max(n/2, minSpins) {
		t.Errorf("a wait that slept left %d spins (had %d)", sp.spins(), n)
	}
}
