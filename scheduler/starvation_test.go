package scheduler_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/runner"
)

// No rule may starve a path: while a path is up and the sender has
// background data, the path carries background data within a bounded
// time. The case is issue 35's: the failover of experiments/failover.toml
// without random loss (2 x 50 Mbit/s, 60 ms RTT, 1 BDP queues, 10 kB
// every 50 ms beside bulk, path 0 down from 10 s to 15 s, 30 s), where a
// loss-based controller keeps path 0's queue full, so path 0 never looks
// clear of its start-up overshoot to stagger_clear.
//
// The bound: starvationBoundRTTs round trips of the paths' propagation
// delay, 64 x 60 ms = 3.84 s. No hold of the stagger lasts longer than
// stagger_hold_rtts (32) of the largest smoothed RTT of the paths, and a
// full 1 BDP queue at most doubles the RTT: 32 x 120 ms.
const (
	starvationRTT       = 60 * time.Millisecond
	starvationBoundRTTs = 64
	starvationBin       = 20 * time.Millisecond
	starvationDown      = 10 * time.Second
	starvationUp        = 15 * time.Second
	starvationDuration  = 30 * time.Second
)

// runStarvation runs the lossless failover with the path scheduler and
// its options (a TOML inline table) and returns the run's directory.
func runStarvation(t *testing.T, sched, options, slowStart string) string {
	t.Helper()
	doc := fmt.Sprintf(`name = "starvation"
duration = %q
seed = 1
[[path]]
rate = "50Mbit"
delay = "30ms"
[[path.change]]
at = %q
down = true
[[path.change]]
at = %q
down = false
[[path]]
rate = "50Mbit"
delay = "30ms"
[transport]
path_scheduler = %q
scheduler_options = %s
stream_scheduler = "priority-fifo"
slow_start = %q
[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"
priority = true
announce = true
[[source]]
name = "background"
kind = "bulk"
[output]
interval = %q
`, starvationDuration, starvationDown, starvationUp, sched, options, slowStart, starvationBin)
	return runDoc(t, "starvation.toml", doc)
}

// basePaths1BDP are the reference paper's base point's two paths
// (100 Mbit/s, 50 ms RTT) with 1-BDP queues, as experiment-file TOML.
const basePaths1BDP = `[[path]]
rate = "100Mbit"
rtt = "50ms"
queue = "1bdp"
[[path]]
rate = "100Mbit"
rtt = "50ms"
queue = "1bdp"
`

// prioBesideBulkDoc is an experiment file named name of duration, seed 1,
// over paths (TOML [[path]] tables), with transport (the [transport]
// table's lines) and the reference paper's sources: 10 kB with priority
// every 50 ms beside bulk data; time series (paths.csv, throughput.csv)
// when series.
func prioBesideBulkDoc(name, duration, paths, transport string, series bool) string {
	return fmt.Sprintf(`name = %q
duration = %q
seed = 1
%s[transport]
%s[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"
priority = true
[[source]]
name = "background"
kind = "bulk"
[output]
series = %t
`, name, duration, paths, transport, series)
}

// runDoc runs the first run of the experiment file doc (named name) in
// the simulator and returns its directory.
func runDoc(t *testing.T, name, doc string) string {
	t.Helper()
	runs, err := experiment.Parse(name, []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := runner.Run(context.Background(), &runs[0], dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readCSV reads a result file's rows (the header first) and the index
// of each column by its header name.
func readCSV(t *testing.T, path string) (rows [][]string, col map[string]int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err = csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: empty", path)
	}
	col = map[string]int{}
	for i, k := range rows[0] {
		col[k] = i
	}
	return rows, col
}

// backgroundGaps reads the server's stream bytes sent per path, class and
// bin from throughput.csv and returns, per path, the longest time without
// background data while the path was usable: from its first stream data
// to the end of the duration, except for path 0 from the link's cut until
// its first stream data after the link is back (the stack's failure
// detection and probing, no scheduler's rule).
func backgroundGaps(t *testing.T, dir string) (gap [2]time.Duration, at [2]time.Duration) {
	t.Helper()
	rows, _ := readCSV(t, filepath.Join(dir, "throughput.csv"))
	n := int(starvationDuration / starvationBin)
	var bg, any [2][]bool
	for p := range 2 {
		bg[p], any[p] = make([]bool, n), make([]bool, n)
	}
	for _, r := range rows[1:] {
		if r[1] != "sent" || r[2] != "server" || r[3] == "" {
			continue
		}
		ms, err1 := strconv.ParseFloat(r[0], 64)
		p, err2 := strconv.Atoi(r[3])
		b, err3 := strconv.ParseInt(r[5], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || p > 1 {
			t.Fatalf("throughput.csv: row %v", r)
		}
		i := int(time.Duration(ms*1e6) / starvationBin)
		if i >= n || b == 0 {
			continue
		}
		any[p][i] = true
		if r[4] == "background" {
			bg[p][i] = true
		}
	}
	for p := range 2 {
		usable := false
		run := 0
		for i := range n {
			start := time.Duration(i) * starvationBin
			if p == 0 && start >= starvationDown && start < starvationUp {
				usable = false
			}
			if !usable && any[p][i] && !(p == 0 && start >= starvationDown && start < starvationUp) {
				usable, run = true, 0
			}
			if !usable {
				continue
			}
			if bg[p][i] {
				run = 0
				continue
			}
			run++
			if d := time.Duration(run) * starvationBin; d > gap[p] {
				gap[p], at[p] = d, start-d+starvationBin
			}
		}
	}
	return gap, at
}

// TestNoPathStarves: with the stagger's documented failover options
// (cwr-red: stagger_startup, stagger_clear, credit, credit_rtts = 3,
// HyStart++; cwr-plus: experiments/cwr-plus-goal.toml's options), each
// path carries background data at least once every starvationBoundRTTs
// round trips while it is usable. With stagger_hold_rtts = "none" (the
// rule as it was) path 1 carries none until path 0 is cut at 10 s.
func TestNoPathStarves(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	bound := starvationBoundRTTs * starvationRTT
	for _, tc := range []struct {
		name, sched, options, slowStart string
		starves                         bool
	}{
		{"cwr-red failover options", "cwr-red",
			`{ stagger_startup = true, stagger_clear = true, credit = true, credit_rtts = 3 }`, "hystart++", false},
		{"cwr-plus goal options", "cwr-plus",
			`{ copies = false, parity = true, drain = true, queue_guard = false, stagger_startup = true, stagger_clear = true, credit_rtts = 2 }`, "standard", false},
		{"cwr-plus defaults", "cwr-plus", `{}`, "standard", false},
		{"cwr-red, the unbounded rule", "cwr-red",
			`{ stagger_startup = true, stagger_clear = true, credit = true, credit_rtts = 3, stagger_hold_rtts = "none" }`, "hystart++", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gap, at := backgroundGaps(t, runStarvation(t, tc.sched, tc.options, tc.slowStart))
			t.Logf("longest time without background data: path 0 %v (from %v), path 1 %v (from %v); bound %v",
				gap[0], at[0], gap[1], at[1], bound)
			for p := range 2 {
				if starved := gap[p] > bound; starved != tc.starves && (p == 1 || !tc.starves) {
					t.Errorf("path %d: %v without background data from %v (bound %v = %d RTTs of %v)",
						p, gap[p], at[p], bound, starvationBoundRTTs, starvationRTT)
				}
			}
		})
	}
}
