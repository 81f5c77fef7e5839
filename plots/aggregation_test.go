package plots

import (
	"math"
	"strings"
	"testing"
)

// TestAggregationBenefit: equation 5.1 by hand. Single paths 10 and 5
// (goodputs), multipath 12: above the best, (12-10)/(15-10) = 0.4; 15:
// 1; 20: 2; 10: 0; 8: (8-10)/10 = -0.2; a failed multipath: -1.
func TestAggregationBenefit(t *testing.T) {
	for _, tc := range []struct{ g1, g2, gm, want float64 }{
		{10, 5, 12, 0.4}, {5, 10, 12, 0.4}, {10, 5, 15, 1}, {10, 5, 20, 2}, {10, 5, 10, 0},
		{10, 5, 8, -0.2}, {10, 5, math.NaN(), -1}, {10, 5, 0, -1},
	} {
		if got := aggregationBenefit(tc.g1, tc.g2, tc.gm); !(math.Abs(got-tc.want) <= 1e-12) {
			t.Errorf("aggregationBenefit(%v, %v, %v) = %v, want %v", tc.g1, tc.g2, tc.gm, got, tc.want)
		}
	}
}

// TestBenefits: a sweep of single/multipath entries in both path orders,
// by hand (times in ms; a goodput is 1/time).
//   - s1a (paths 10, 5 Mbit/s): single 100, multi 80; its twin s1b (5, 10):
//     single 200, multi 250. s1a started on the better path (100 <= 200):
//     G = 1/100, 1/200, multi 1/80: (1/80-1/100)/(1/200) = 0.5. s1b started
//     on the worse: multi 1/250 below 1/100: (1/250-1/100)/(1/100) = -0.6.
//   - s2a (equal paths 5, 5): single 100, multi 50; s2b the same paths:
//     single 100, multi 100. Each is the other's twin; both start on
//     "the better" path (a tie): (1/50-1/100)/(1/100) = 1, and 0.
//   - s3a (7, 8) has no twin: counted, no benefit.
//   - s4a (3, 4): single 100, multi 50; s4b (4, 3): single did not
//     complete: s4a has none (its twin's single path failed), s4b neither.
//
// Statistics of s1a, s1b, s2a, s2b = {-0.6, 0, 0.5, 1}: nearest-rank median
// 0, p90 1; above 0 in 2 of 4, below in 1 of 4; 3 failed of 7.
func TestBenefits(t *testing.T) {
	nan := math.NaN()
	points := []*Point{
		ratioPoint("s1a", "single", 10, 5, 100), ratioPoint("s1a", "multi", 10, 5, 80),
		ratioPoint("s1b", "single", 5, 10, 200), ratioPoint("s1b", "multi", 5, 10, 250),
		ratioPoint("s2a", "single", 5, 5, 100), ratioPoint("s2a", "multi", 5, 5, 50),
		ratioPoint("s2b", "single", 5, 5, 100), ratioPoint("s2b", "multi", 5, 5, 100),
		ratioPoint("s3a", "single", 7, 8, 100), ratioPoint("s3a", "multi", 7, 8, 100),
		ratioPoint("s4a", "single", 3, 4, 100), ratioPoint("s4a", "multi", 3, 4, 50),
		ratioPoint("s4b", "single", 4, 3, nan), ratioPoint("s4b", "multi", 4, 3, 50),
	}
	bs, err := Benefits(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		eab       float64
		bestFirst bool
		failed    string
	}{
		{0.5, true, ""}, {-0.6, false, ""}, {1, true, ""}, {0, true, ""},
		{nan, false, "no entry of the same scenario with the paths swapped"},
		{nan, false, "single path with the paths swapped: "}, {nan, false, "single path: "},
	}
	if len(bs) != len(want) {
		t.Fatalf("%d benefits: %+v", len(bs), bs)
	}
	for i, w := range want {
		b := bs[i]
		if math.IsNaN(w.eab) != math.IsNaN(b.EAB) || (!math.IsNaN(w.eab) && math.Abs(b.EAB-w.eab) > 1e-12) ||
			b.BestFirst != w.bestFirst || !strings.HasPrefix(b.Failed, w.failed) || (w.failed == "") != (b.Failed == "") {
			t.Errorf("entry %d (%s): %+v, want %+v", i, b.Scenario, b, w)
		}
	}
	st := NewBenefitStats(bs)
	if st.N != 7 || st.Failed != 3 || st.Median != 0 || st.P90 != 1 || st.P10 != -0.6 || st.Positive != 0.5 || st.Negative != 0.25 {
		t.Fatalf("stats %+v", st)
	}
	tb, err := AggregationTable(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.MD) != 4 || strings.Join(tb.MD[1], "|") != "g|all|7|3|-0.60|-0.60|0.00|0.50|1.00|50.0 %|25.0 %" ||
		strings.Join(tb.MD[2], "|") != "g|started on the better path|3|0|0.00|0.00|0.50|1.00|1.00|66.7 %|0.0 %" ||
		strings.Join(tb.MD[3], "|") != "g|started on the worse path|1|0|-0.60|-0.60|-0.60|-0.60|-0.60|0.0 %|100.0 %" {
		t.Fatalf("table %q", tb.MD)
	}
	sum, err := AggregationSummaryTable(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.MD) != 2 || strings.Join(sum.MD[1], "|") != "g|7|3|0.00|50.0 %|66.7 %|0.0 %" ||
		strings.Join(sum.CSV[1], "|") != "g|7|3|0.000|0.500|0.667|0.000" {
		t.Fatalf("summary %q %q", sum.MD, sum.CSV)
	}
	if _, err := Draw("aggregation", points, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "is a table") {
		t.Fatalf("Draw: %v", err)
	}
}
