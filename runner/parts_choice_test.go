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
