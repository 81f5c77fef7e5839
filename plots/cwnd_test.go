package plots

import (
	"math"
	"testing"
)

// TestSteadyTop: the cwnd figure's axis fits the windows after the
// start-up transient (issue 37: a 2.3 MB slow-start peak flattened the
// sawtooth below 150 kB), and the transient's peak is what it marks.
func TestSteadyTop(t *testing.T) {
	st := func(ms, cwnd float64, state string) PathState {
		return PathState{Time: ms, Cwnd: cwnd * 1e3, State: state}
	}
	startup := []PathState{
		st(0, 10, "slow_start"), st(500, 2300, "slow_start"), st(600, 1150, "recovery"),
		st(700, 575, "congestion_avoidance"), st(800, 280, "recovery"), st(900, 100, "congestion_avoidance"),
	}
	// The sawtooth: 75 to 150 kB and back, every second from 1 s.
	for i := range 9 {
		startup = append(startup, st(float64(1000+1000*i), 75, "recovery"), st(float64(1900+1000*i), 150, "congestion_avoidance"))
	}
	for _, c := range []struct {
		name     string
		states   []PathState
		from, to float64
		top      float64
		peak     float64
		ok       bool
	}{
		{"start-up peak left out", startup, 0, 10000, 150, 2300, true},
		{"window after the start-up", startup, 1000, 10000, 150, 0, true},
		{"never leaves slow start", []PathState{st(0, 10, "slow_start"), st(100, 20, "slow_start")}, 0, 1000, 0, 0, false},
		{"bbr's startup", []PathState{st(0, 10, "startup"), st(100, 900, "startup"), st(200, 100, "drain"), st(300, 120, "probe_bw")}, 0, 1000, 120, 900, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			top, peak, ok := steadyTop(c.states, c.from, c.to)
			if ok != c.ok || (ok && (math.Abs(top-c.top) > 1e-9 || math.Abs(peak.Cwnd/1e3-c.peak) > 1e-9)) {
				t.Errorf("steadyTop = %v, peak %v kB, %v; want %v, %v kB, %v", top, peak.Cwnd/1e3, ok, c.top, c.peak, c.ok)
			}
		})
	}
}
