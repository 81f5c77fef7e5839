package runner

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/network/netsim"
)

// TestSimPartsSameResults runs experiments four ways: in one part of the
// simulation (as before the ends were split), with the client and the
// server in two parts run in windows one after the other, with the two
// parts side by side on two goroutines (netsim.Sim), and with the runner's
// chooser switching between the two (it measures both ways); every result
// file is byte for byte the same but for the wall clock. The experiments cover the
// quickstart's three schedulers, random and bursty loss with jitter, the
// failover (a path down for 5 s, qlog on), 0-RTT resumption with
// stop-and-wait publishes, and a link whose rate and delay change. The
// parallel runs must have run in windows (the test is not vacuous).
func TestSimPartsSameResults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 24 simulated experiments")
	}
	// The delay drops from 40 to 4 ms a round trip at 2 s (the windows
	// shrink), the rate at 3 s, the path is down from 4 to 5 s.
	changes := `name = "changes"
duration = "6s"
seed = 3
[[path]]
rate = "50Mbit"
rtt = "40ms"
[[path.change]]
at = "2s"
delay = "2ms"
[[path.change]]
at = "3s"
rate = "10Mbit"
[[path.change]]
at = "4s"
down = true
[[path.change]]
at = "5s"
down = false
[[path]]
rate = "20Mbit"
rtt = "60ms"
[[source]]
name = "s1"
kind = "periodic"
interval = "20ms"
size = "5kB"
priority = true
[[source]]
name = "bg"
kind = "bulk"
`
	var runs []experiment.Experiment
	add := func(file string, data []byte, sets ...string) []experiment.Experiment {
		es := parseRuns(t, file, data, sets...)
		runs = append(runs, es...)
		return es
	}
	read := func(name string) []byte { return experimentFile(t, name) }
	add("quickstart.toml", read("quickstart.toml"), "duration=3s")
	add("lossy.toml", []byte(lossyDoc))
	add("failover.toml", read("failover.toml"), "duration=17s", "transport.path_scheduler=lowrtt")
	// Of reference 003's sweep, 0-RTT at 5 % loss.
	r3 := add("r3-mqtt.toml", read("references/r3-mqtt.toml"), "duration=3s", "source.pub.count=30")
	runs = runs[:len(runs)-len(r3)]
	for _, e := range r3 {
		if e.Transport.ZeroRTT && e.Paths[0].Up.Loss > 0.04 {
			runs = append(runs, e)
		}
	}
	add("changes.toml", []byte(changes))
	defer func(split, par bool) { simSplitEnds = split; SetSimParallel(par) }(simSplitEnds, simParallel.Load())
	defer func() { simDone = nil }()
	var chosenTurns uint64
	defer func() {
		if chosenTurns == 0 && !t.Failed() {
			t.Error("the chooser never ran a stretch in turns")
		}
	}()
	for _, e := range runs {
		if !twoParts(&e) {
			t.Fatalf("%s: not split into two parts", e.Name)
		}
		var dirs [4]string
		var windows, turns [4]uint64
		for mode := range 4 {
			simSplitEnds = mode > 0
			SetSimParallel(true)
			t.Setenv(PartsEnv, [...]string{"auto", "turns", "side", "auto"}[mode])
			// A fresh chooser measures both ways first.
			last.st = chooserState{}
			simDone = func(s *netsim.Sim) { windows[mode], turns[mode] = s.Windows(), s.Turns() }
			dirs[mode] = t.TempDir()
			if _, err := Run(context.Background(), &e, dirs[mode]); err != nil {
				t.Fatalf("%s, mode %d: %v", e.Name, mode, err)
			}
		}
		if windows[0] != 0 || windows[1] != 0 || windows[2] == 0 || windows[3] == 0 {
			t.Fatalf("%s: runs side by side %v: want none, none, some, some", e.Name, windows)
		}
		// The chooser measures a way on stretches of enough events: the
		// short runs of few messages never leave side by side.
		chosenTurns += turns[3]
		files := resultFiles(t, dirs[0])
		for mode := 1; mode < 4; mode++ {
			if other := resultFiles(t, dirs[mode]); !slices.Equal(files, other) {
				t.Fatalf("%s: result files %v and, in mode %d, %v", e.Name, files, mode, other)
			}
			for _, f := range files {
				a, b := withoutWallClock(t, filepath.Join(dirs[0], f)), withoutWallClock(t, filepath.Join(dirs[mode], f))
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("%s (%s): %s differs in mode %d (%d and %d bytes)", e.Name, e.Transport.PathScheduler, f, mode, len(a), len(b))
				}
			}
		}
		t.Logf("%s (%s): %d result files identical in the four modes, %d runs side by side, chosen %d and %d in turns: %v",
			e.Name, e.Transport.PathScheduler, len(files), windows[2], windows[3], turns[3], files)
	}
}
