package scheduler_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCWRPlusRateCap holds cwr-plus's rate_cap on the real core in the
// simulator at the robustness grid's lossless base point (2 x 100 Mbit/s,
// 50 ms RTT, 1 BDP drop-tail queues, newreno, 10 kB every 50 ms beside
// bulk data): once the paths' first slow starts are over, no message
// waits behind a standing queue (every one within 2 ms of the one-way
// delay plus its serialization, 25.8 ms), and the bulk data still carry
// at least 85 % of the two paths' 200 Mbit/s over the whole run. Without
// the rule, newreno's window beyond the bandwidth-delay product fills
// both queues.
func TestCWRPlusRateCap(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	const (
		limitMs = 25.8 + 2
		settled = 3 * time.Second // the first slow starts and their recovery are over
	)
	for _, tc := range []struct {
		options string
		holds   bool
	}{
		{`{}`, true},
		{`{ rate_cap = false }`, false},
	} {
		t.Run(tc.options, func(t *testing.T) {
			doc := prioBesideBulkDoc("ratecap", "8s", basePaths1BDP, cwrPlusTransport(tc.options, ""), false)
			dir := runDoc(t, "ratecap.toml", doc)
			late, n, worst := lateMessages(t, dir, settled, limitMs)
			gp := bulkGoodput(t, dir)
			t.Logf("%d of %d messages after %v later than %.1f ms (worst %.1f ms); bulk goodput %.1f Mbit/s", late, n, settled, limitMs, worst, gp)
			if n < 90 {
				t.Fatalf("%d messages after %v, want about 100", n, settled)
			}
			if holds := late == 0 && gp >= 170; holds != tc.holds {
				t.Errorf("no late message and goodput >= 170 Mbit/s: %v, want %v", holds, tc.holds)
			}
		})
	}
}

// lateMessages counts the priority messages of dir's messages.csv
// created at or after from whose completion time exceeds limitMs (one
// that failed counts as late), of n such messages, and the worst
// completed time.
func lateMessages(t *testing.T, dir string, from time.Duration, limitMs float64) (late, n int, worst float64) {
	t.Helper()
	for _, mcts := range readMCTs(t, filepath.Join(dir, "messages.csv"), from) {
		for _, mct := range mcts {
			n++
			if mct > limitMs {
				late++
			}
			if !math.IsInf(mct, 1) {
				worst = max(worst, mct)
			}
		}
	}
	return late, n, worst
}

// bulkGoodput reads the goodput of source "background" from dir's
// summary.json, in Mbit/s.
func bulkGoodput(t *testing.T, dir string) float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Sources []struct {
			Name    string  `json:"name"`
			Goodput float64 `json:"goodput_mbps"`
		} `json:"sources"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, src := range s.Sources {
		if src.Name == "background" {
			return src.Goodput
		}
	}
	t.Fatal("no background source in summary.json")
	return 0
}
