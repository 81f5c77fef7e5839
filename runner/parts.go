package runner

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/mpq/mpq/network/netsim"
)

// PartsEnv names the environment variable that says how a simulation's two
// parts (the experiment's client and server; see simulate) run: "auto"
// (the default), "side" (side by side on two goroutines, whatever the
// CPUs give: the two-CPU mode before the choice existed) or "turns" (one
// goroutine, in turns). The results are the same in every mode; it is
// there to measure the modes against each other.
const PartsEnv = "MPQ_SIM_PARTS"

// partsMode reads PartsEnv: "auto", "side" or "turns".
func partsMode() (string, error) {
	switch v := os.Getenv(PartsEnv); v {
	case "", "auto":
		return "auto", nil
	case "side", "turns":
		return v, nil
	default:
		return "", fmt.Errorf("%s=%q: auto, side or turns", PartsEnv, v)
	}
}

// The stretches of a chooser: it exploits the faster way in stretches of
// about exploitWall of the wall clock and tries the other in stretches of
// about probeWall, first after minProbeEvery stretches; each probe that
// confirms the choice doubles the stretches to the next, up to
// maxProbeEvery. A stretch lasts several of the kernel's scheduling
// periods, so that on a loaded host it measures the share of the CPUs
// each way gets rather than the luck of one period. firstSpan is a
// stretch's virtual length before any is measured; a stretch of fewer
// than minEvents events (a handshake, an idle stretch) measures nothing.
const (
	exploitWall   = 100 * time.Millisecond
	probeWall     = 25 * time.Millisecond
	minProbeEvery = 2
	maxProbeEvery = 8
	firstSpan     = int64(50 * time.Millisecond)
	minEvents     = 2000
	// sideBias: in turns only when that measured this much faster. On a
	// host crowded with other work (more runnable threads than CPUs) the
	// kernel shares the CPUs out by thread, and two parts side by side
	// got 1.3-2 times the wall-clock speed of one thread there, more than
	// their stretches measured; where turns win (one CPU hog on a host
	// otherwise idle), they won by 1.7-2.3 times (issue 39).
	sideBias = 1.5
	// freeWait: a stretch side by side whose threads waited on the
	// kernel's run queues for less than this share of its wall time
	// (summed over the process's threads) had the CPUs to itself; such
	// stretches do not count towards the next probe (a hog on one of two
	// CPUs makes about 0.7).
	freeWait = 0.1
	// takenWait: while stretches in turns wait less than freeWait and
	// stretches side by side wait at least this share of their wall time,
	// one CPU is free and the other taken (a CPU hog beside the run): the
	// parts run in turns whatever the speeds measured, since there the
	// second thread only takes time from the first (side by side got
	// 0.82-0.88 times one CPU's speed beside one hog, issue 39). On a
	// crowded host the stretches in turns wait too, and the speeds
	// decide as before.
	takenWait = 0.3
)

// chooser is a netsim.Chooser that measures the wall time of each stretch
// of a two-part simulation and runs the parts the way that ran more events
// per wall second: side by side when the second CPU gives the other part
// its time, in turns when it does not (a CPU taken by another process, or
// by another simulation of the same sweep). The speeds it measured carry
// over to the next simulation of the process (last), so that a sweep of
// short runs does not learn again in each. It reads the wall clock, and
// only to choose: the results are the same whatever it chooses.
type chooser struct {
	st    chooserState
	side  bool // the way of the stretch running
	probe bool // whether that stretch tries the way not chosen
	t0    time.Time
	since int // stretches since the last probe
	// now is time.Now (tests give it a clock of their own).
	now func() time.Time
	// waited returns the time the process's threads have waited on the
	// kernel's run queues so far, false where that is not known (then
	// every stretch counts towards the next probe); w0 is its value at
	// the start of the stretch.
	waited func() (time.Duration, bool)
	w0     time.Duration
	w0ok   bool
	// procs is the process's GOMAXPROCS when the chooser was made, cur
	// what it is now: stretches in turns run with one (see useProcs);
	// gomaxprocs is runtime.GOMAXPROCS (tests give it one of their own).
	procs, cur int
	gomaxprocs func(int) int
}

// chooserState is what a chooser knows: per way (0: in turns, 1: side by
// side) the events per wall second of its last samples stretches (0: none
// yet; the way's speed is their median, which one stretch stalled by the
// kernel for a second does not move) and its virtual nanoseconds per wall
// second, 0 if not measured; the way chosen; and the stretches between
// probes.
type chooserState struct {
	rates [2][samples]float64
	// waits: per way, the run-queue wait share (the process's threads'
	// wait over the stretch's wall time) of the stretches whose rates
	// are remembered, -1 where it was not known.
	waits  [2][samples]float64
	next   [2]int
	virt   [2]float64
	chosen bool
	every  int
	// warm is set once the process ran its first stretch of minEvents.
	warm bool
}

// samples is how many stretches of each way a chooser remembers.
const samples = 3

// speed is the median of way w's remembered rates, 0 before any.
func (st *chooserState) speed(w int) float64 {
	var v []float64
	for _, r := range st.rates[w] {
		if r > 0 {
			v = append(v, r)
		}
	}
	return upperMedian(v)
}

// upperMedian sorts v and returns its middle value (the upper of the two
// for an even count), 0 for none.
func upperMedian(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// add remembers a rate of way w and its wait share (-1: not known) in
// place of its oldest.
func (st *chooserState) add(w int, rate, wait float64) {
	st.rates[w][st.next[w]] = rate
	st.waits[w][st.next[w]] = wait
	st.next[w] = (st.next[w] + 1) % samples
}

// wait is the median of way w's remembered wait shares, false before any
// or while one of them is not known.
func (st *chooserState) wait(w int) (float64, bool) {
	var v []float64
	for i, r := range st.rates[w] {
		if r > 0 {
			if st.waits[w][i] < 0 {
				return 0, false
			}
			v = append(v, st.waits[w][i])
		}
	}
	return upperMedian(v), len(v) > 0
}

// taken reports whether the waits say that one CPU is free and the other
// taken: in turns the process hardly waits, side by side it waits
// (takenWait).
func (st *chooserState) taken() bool {
	w0, ok0 := st.wait(0)
	w1, ok1 := st.wait(1)
	return ok0 && ok1 && w0 < freeWait && w1 >= takenWait
}

var last struct {
	sync.Mutex
	st chooserState
}

func newChooser() *chooser {
	last.Lock()
	st := last.st
	last.Unlock()
	if st.every == 0 {
		st.every = minProbeEvery
	}
	n := runtime.GOMAXPROCS(0)
	return &chooser{st: st, now: time.Now, waited: runQueueWait, procs: n, cur: n, gomaxprocs: runtime.GOMAXPROCS}
}

// useProcs gives the stretch about to run its GOMAXPROCS: the process's
// own side by side, one in turns. In turns a second P only lets the Go
// runtime's other threads (idle Ps spinning for work, the garbage
// collector's workers) compete with the simulation's for a CPU: beside
// one CPU hog, they made the stretches in turns wait on the run queues
// 0.25-0.44 of their time (GOMAXPROCS=1: about none), and one CPU was the
// faster mode there (issue 39).
func (c *chooser) useProcs(side bool) {
	want := 1
	if side {
		want = c.procs
	}
	if want != c.cur {
		c.gomaxprocs(want)
		c.cur = want
	}
}

// restore gives the process its GOMAXPROCS back once the simulation ended.
func (c *chooser) restore() { c.useProcs(true) }

func way(side bool) int {
	if side {
		return 1
	}
	return 0
}

// Next implements netsim.Chooser.
func (c *chooser) Next() (bool, int64) {
	c.side, c.probe = c.st.chosen, false
	switch {
	case c.st.speed(1) == 0:
		c.side = true // measure each way first, side by side first
	case c.st.speed(0) == 0:
		c.side, c.probe = false, true // a probe's length: turns are the slower way on a free second CPU
	case c.since >= c.st.every:
		c.side, c.probe = !c.st.chosen, true
	}
	wall := exploitWall
	if c.probe {
		wall = probeWall
	}
	span := firstSpan
	if v := c.st.virt[way(c.side)]; v > 0 {
		span = max(int64(v*wall.Seconds()), int64(time.Millisecond))
	}
	c.useProcs(c.side)
	c.t0 = c.now()
	c.w0ok = false
	if c.waited != nil {
		c.w0, c.w0ok = c.waited()
	}
	return c.side, span
}

// waitShare is the share of the stretch just run, of d seconds, that the
// process's threads waited on the kernel's run queues, -1 if not known.
func (c *chooser) waitShare(d float64) float64 {
	if !c.w0ok {
		return -1
	}
	w, ok := c.waited()
	if !ok {
		return -1
	}
	return max(0, (w-c.w0).Seconds()/d)
}

// free reports whether the stretch just run, whose wait share was ws, had
// the CPUs to itself: run side by side, not a probe, its threads rarely
// waiting for a CPU (freeWait).
func (c *chooser) free(ws float64) bool {
	return c.side && !c.probe && ws >= 0 && ws < freeWait
}

// Ran implements netsim.Chooser.
func (c *chooser) Ran(side bool, events uint64, span int64) {
	d := c.now().Sub(c.t0).Seconds()
	if d <= 0 || events == 0 {
		return
	}
	w := way(side)
	ws := c.waitShare(d)
	ev, vt := float64(events)/d, float64(span)/d
	if c.st.virt[w] == 0 || c.probe {
		c.st.virt[w] = vt
	} else {
		c.st.virt[w] = 0.7*c.st.virt[w] + 0.3*vt
	}
	if events < minEvents {
		return
	}
	if !c.st.warm {
		// The process's first stretch of work runs on a cold heap and
		// caches (measured at 0.4 times the later stretches' speed) and
		// would send the next stretches to the other way.
		c.st.warm = true
		return
	}
	c.st.add(w, ev, ws)
	was := c.st.chosen
	if c.st.speed(0) > 0 && c.st.speed(1) > 0 {
		c.st.chosen = c.st.speed(1)*sideBias > c.st.speed(0) && !c.st.taken()
	}
	if c.probe {
		c.since = 0
		if c.st.chosen != was {
			c.st.every = minProbeEvery
		} else {
			c.st.every = min(2*c.st.every, maxProbeEvery)
		}
	} else if !(c.st.chosen && c.free(ws)) {
		c.since++
	}
	last.Lock()
	last.st = c.st
	last.Unlock()
}

// setParts sets how sim's two parts run: the environment's mode, else a
// chooser where the process may use two CPUs for it (SetSimParallel), else
// in turns. The caller calls done once the simulation ended.
func setParts(sim *netsim.Sim) (done func(), err error) {
	mode, err := partsMode()
	if err != nil {
		return nil, err
	}
	switch {
	case mode == "side":
		sim.SetParallel(true)
	case mode == "turns" || !simParallel.Load():
		sim.SetParallel(false)
	default:
		c := newChooser()
		sim.SetChooser(c)
		return c.restore, nil
	}
	return func() {}, nil
}
