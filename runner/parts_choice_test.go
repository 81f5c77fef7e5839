package runner

import (
	"testing"
	"time"
)

// TestChooserFollowsTheCPUs drives a chooser with a clock of the test's:
// side by side is twice as fast as in turns at first (a second CPU free),
// then a third as fast (the second CPU taken), then twice as fast again.
// The chooser must run mostly the faster way in each phase, switching
// within a few stretches of each change, and its stretches must take
// about exploitWall (probes about probeWall) of the clock.
func TestChooserFollowsTheCPUs(t *testing.T) {
	defer func(st chooserState) { last.st = st }(last.st)
	last.st = chooserState{}
	clock := time.Unix(0, 0)
	c := newChooser()
	c.procs, c.cur = 2, 2
	c.gomaxprocs = func(int) int { return 0 }
	c.now = func() time.Time { return clock }
	c.waited = nil // every stretch counts towards the next probe
	// events per second of each way in each phase: turns, side.
	phases := [][2]float64{{1e6, 2e6}, {1e6, 0.33e6}, {1e6, 2e6}}
	const stretches = 200
	for p, rate := range phases {
		var wall [2]time.Duration
		switchedAt := -1
		for i := range stretches {
			side, span := c.Next()
			if span < 1 {
				t.Fatalf("phase %d: a stretch of %d ns", p, span)
			}
			// The work: 1,000 events per virtual millisecond.
			events := uint64(span / 1000)
			d := time.Duration(float64(events) / rate[way(side)] * float64(time.Second))
			if i > 20 && !c.probe && (d < exploitWall/2 || d > 2*exploitWall) {
				t.Errorf("phase %d, stretch %d: took %v, want about %v", p, i, d, exploitWall)
			}
			clock = clock.Add(d)
			wall[way(side)] += d
			c.Ran(side, events, span)
			faster := rate[1] > rate[0]
			if switchedAt < 0 && c.st.chosen == faster {
				switchedAt = i
			}
		}
		best := way(rate[1] > rate[0])
		share := wall[best].Seconds() / (wall[0] + wall[1]).Seconds()
		t.Logf("phase %d: chose the faster way after %d stretches; %.3f of the wall time in it", p, switchedAt, share)
		if switchedAt < 0 || switchedAt > 20 {
			t.Errorf("phase %d: the faster way chosen after %d stretches", p, switchedAt)
		}
		if share < 0.85 {
			t.Errorf("phase %d: %.3f of the wall time in the faster way, want at least 0.85", p, share)
		}
	}
}

// TestChooserFreeCPUs drives a chooser whose side-by-side stretches find
// the CPUs free (their threads never wait on a run queue), side by side
// twice as fast as in turns, after a first stretch at 0.3 of its later
// speed (a cold process): the chooser must not take the cold stretch for
// the speed of side by side, and must stop probing turns while the CPUs
// are free; once the stretches wait (a third of their time: another
// process's thread on the CPUs), it probes again.
func TestChooserFreeCPUs(t *testing.T) {
	defer func(st chooserState) { last.st = st }(last.st)
	last.st = chooserState{}
	clock := time.Unix(0, 0)
	var wait time.Duration // the run queues' total so far
	waitShare := 0.0
	c := newChooser()
	c.procs, c.cur = 2, 2
	c.gomaxprocs = func(int) int { return 0 }
	c.now = func() time.Time { return clock }
	c.waited = func() (time.Duration, bool) { return wait, true }
	run := func(n int) (turns, probes int) {
		for range n {
			side, span := c.Next()
			events := uint64(span / 1000)
			rate := 1e6
			if side {
				rate = 2e6
				if c.st.speed(1) == 0 && !c.st.warm {
					rate = 0.6e6
				}
			}
			d := time.Duration(float64(events) / rate * float64(time.Second))
			clock = clock.Add(d)
			if side {
				wait += time.Duration(waitShare * float64(d))
			}
			if !side {
				turns++
			}
			if c.probe {
				probes++
			}
			c.Ran(side, events, span)
		}
		return
	}
	turns, probes := run(100)
	t.Logf("free CPUs: %d stretches in turns, %d probes in 100", turns, probes)
	if turns > 1 || probes > 1 {
		t.Errorf("free CPUs: %d stretches in turns, %d probes; want the one measuring probe", turns, probes)
	}
	waitShare = 0.33
	_, probes = run(100)
	t.Logf("waiting CPUs: %d probes in 100 stretches", probes)
	if probes < 10 {
		t.Errorf("waiting CPUs: %d probes in 100 stretches, want at least 10", probes)
	}
}

// TestChooserTakenCPU drives a chooser on a host with one CPU taken by
// another process: side by side the process's threads wait on the run
// queues 0.7 of their time and run about as fast as in turns (turns
// 1.1 times as fast, below sideBias), in turns they never wait. The
// chooser must run in turns; once the other process leaves (no waits,
// side by side twice as fast) it must go back to side by side; on a
// crowded host (both ways wait half their time, side by side 1.3 times
// as fast as turns) it must stay side by side. Stretches in turns run
// with GOMAXPROCS 1, side by side with the process's, given back at the
// end.
func TestChooserTakenCPU(t *testing.T) {
	defer func(st chooserState) { last.st = st }(last.st)
	last.st = chooserState{}
	clock := time.Unix(0, 0)
	var wait time.Duration
	c := newChooser()
	c.procs, c.cur = 2, 2
	c.now = func() time.Time { return clock }
	c.waited = func() (time.Duration, bool) { return wait, true }
	procs := 2
	c.gomaxprocs = func(n int) int { procs = n; return 0 }
	// per phase: events per second in turns and side by side, and the
	// wait share of each way.
	phases := []struct {
		name  string
		rate  [2]float64
		waits [2]float64
		best  int
	}{
		{"one CPU taken", [2]float64{1.1e6, 1e6}, [2]float64{0, 0.7}, 0},
		{"CPUs free again", [2]float64{1e6, 2e6}, [2]float64{0, 0}, 1},
		{"crowded", [2]float64{1e6, 1.3e6}, [2]float64{0.5, 0.5}, 1},
	}
	for _, ph := range phases {
		var wall [2]time.Duration
		switchedAt := -1
		for i := range 100 {
			side, span := c.Next()
			if want := map[bool]int{false: 1, true: 2}[side]; procs != want {
				t.Fatalf("%s, stretch %d: side by side %v with GOMAXPROCS %d, want %d", ph.name, i, side, procs, want)
			}
			w := way(side)
			events := uint64(span / 1000)
			d := time.Duration(float64(events) / ph.rate[w] * float64(time.Second))
			clock = clock.Add(d)
			wait += time.Duration(ph.waits[w] * float64(d))
			wall[w] += d
			c.Ran(side, events, span)
			if switchedAt < 0 && way(c.st.chosen) == ph.best {
				switchedAt = i
			}
		}
		share := wall[ph.best].Seconds() / (wall[0] + wall[1]).Seconds()
		t.Logf("%s: the better way chosen after %d stretches; %.3f of the wall time in it", ph.name, switchedAt, share)
		if switchedAt < 0 || switchedAt > 20 || share < 0.85 {
			t.Errorf("%s: the better way chosen after %d stretches, %.3f of the wall time in it; want within 20 and at least 0.85", ph.name, switchedAt, share)
		}
	}
	c.restore()
	if procs != 2 {
		t.Errorf("GOMAXPROCS %d after the simulation, want 2 back", procs)
	}
}
