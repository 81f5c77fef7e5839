package runner

import (
	"context"
	"testing"

	"github.com/mpq/mpq/experiment"
)

// TestCoupledShareUnderRandomLoss runs experiments/cc-coupled-loss.toml:
// where each flow sees the same independent loss rate (two paths
// through one shared link with 1 % random loss that the flows never
// fill, 1 Gbit/s against a few Mbit/s, beside a single-path NewReno
// competitor), LIA's two subflows together take what one NewReno takes
// (RFC 6356's design goal 2, which its alpha meets in the fluid
// equilibrium: w_i = sqrt(1/(2p)) on each of two equal paths, the sum
// sqrt(2/p), a NewReno's window), and so do OLIA and BALIA; two
// uncoupled NewReno subflows take twice as much. The share is the mean
// over the file's three repetitions of the connection's goodput over the
// competitor's, as mpq plot's bg.goodput_mbps/competitor.single.goodput_mbps
// gives it (docs/results/congestion-control.md's table); the bounds
// leave room for the seeds' spread. The excess of LIA on a drop-tail
// bottleneck (experiments/shared-bottleneck.toml) is therefore not in
// its increase rule.
func TestCoupledShareUnderRandomLoss(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("three 60 s runs per controller, a measurement: not under -short or the race detector")
	}
	runs, err := experiment.Load("../experiments/cc-coupled-loss.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	bounds := []struct {
		cc     string
		lo, hi float64
	}{
		{"lia", 0.85, 1.3},
		{"olia", 0.85, 1.3},
		{"balia", 0.85, 1.3},
		{"newreno", 1.65, 2.35},
	}
	shares := map[string][]float64{}
	for i := range runs {
		e := &runs[i]
		res, err := Run(context.Background(), e, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if len(s.Competitors) != 1 || len(s.Sources) != 1 {
			t.Fatalf("%s: %d competitors, %d sources", e.Transport.Congestion, len(s.Competitors), len(s.Sources))
		}
		shares[e.Transport.Congestion] = append(shares[e.Transport.Congestion], s.Sources[0].GoodputMbps/s.Competitors[0].GoodputMbps)
	}
	if len(shares) != len(bounds) {
		t.Fatalf("the file's controllers %v, want those of %v", shares, bounds)
	}
	for _, b := range bounds {
		cc := b.cc
		var sum float64
		for _, v := range shares[cc] {
			sum += v
		}
		share := sum / float64(len(shares[cc]))
		t.Logf("%s: multipath / NewReno competitor %.2f (runs %.2f)", cc, share, shares[cc])
		if len(shares[cc]) != 3 || share < b.lo || share > b.hi {
			t.Errorf("%s: multipath takes %.2f times the competitor's goodput over %d runs, want %.2f to %.2f over 3", cc, share, len(shares[cc]), b.lo, b.hi)
		}
	}
}
