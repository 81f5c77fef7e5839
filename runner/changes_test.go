package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// deliveredMbps is the bulk goodput of each throughput.csv bin (by its
// start in milliseconds) of a run's directory.
func deliveredMbps(t *testing.T, dir string) map[float64]float64 {
	t.Helper()
	out := map[float64]float64{}
	for _, r := range readCSV(t, filepath.Join(dir, "throughput.csv")) {
		if r["what"] == "delivered" && r["class"] == "background" {
			out[num(t, r["time_ms"])] += num(t, r["mbps"])
		}
	}
	return out
}

// meanMbps is the mean goodput of the 100 ms bins in [from, to) ms; a bin
// missing from throughput.csv (which ends at the last delivery) is zero.
func meanMbps(bins map[float64]float64, from, to float64) float64 {
	var sum float64
	for at, v := range bins {
		if at >= from && at < to {
			sum += v
		}
	}
	return sum / ((to - from) / 100)
}

const changeBase = `name = "change"
duration = "4s"
[[path]]
rate = "10Mbit"
rtt = "20ms"
%s
[transport]
multipath = false
[[source]]
name = "bg"
kind = "bulk"
`

// The simulator applies a path's scheduled changes at their times: a path
// down from 1 s to 2 s delivers nothing from one round trip after it went
// down until it is up again, and carries bulk again later; a rate cut
// from 10 to 2 Mbit/s at 2 s holds the goodput under 2 Mbit/s a round
// trip later (the queue built at 10 Mbit/s drains at that rate, see
// linkmodel.Step).
func TestSimScheduledChanges(t *testing.T) {
	tests := []struct {
		name    string
		changes string
		check   func(t *testing.T, bins map[float64]float64)
	}{
		{"down", "[[path.change]]\nat = \"1s\"\ndown = true\n[[path.change]]\nat = \"2s\"\ndown = false\n",
			func(t *testing.T, bins map[float64]float64) {
				if m := meanMbps(bins, 500, 1000); m < 8 {
					t.Errorf("before: %v Mbit/s", m)
				}
				if m := meanMbps(bins, 1100, 2000); m != 0 {
					t.Errorf("while down: %v Mbit/s, want 0", m)
				}
				if m := meanMbps(bins, 3500, 4000); m < 5 {
					t.Errorf("after: %v Mbit/s", m)
				}
			}},
		{"rate", "[[path.change]]\nat = \"2s\"\nrate = \"2Mbit\"\n",
			func(t *testing.T, bins map[float64]float64) {
				if m := meanMbps(bins, 1000, 2000); m < 8 {
					t.Errorf("before: %v Mbit/s", m)
				}
				if m := meanMbps(bins, 2500, 4000); m < 1.5 || m > 2.001 {
					t.Errorf("after the cut: %v Mbit/s, want 1.5 to 2", m)
				}
			}},
		{"down one direction", "[[path.change]]\nat = \"1s\"\ndirection = \"down\"\ndown = true\n",
			func(t *testing.T, bins map[float64]float64) {
				if m := meanMbps(bins, 1100, 4000); m != 0 {
					t.Errorf("while the down direction is down: %v Mbit/s, want 0", m)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			e := load(t, fmt.Sprintf(changeBase, tt.changes))
			if _, err := Run(context.Background(), e, dir); err != nil {
				t.Fatal(err)
			}
			tt.check(t, deliveredMbps(t, dir))
		})
	}
}
