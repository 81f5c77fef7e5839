package plots

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
)

var inf = math.Inf(1)

// TestNewCCDF: the CCDF on values computed by hand; +Inf values (failed
// messages) keep it above 0, NaN is not a time.
func TestNewCCDF(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vals   []float64
		x, y   []float64
		n, inf int
	}{
		{"ties and a failure", []float64{30, 10, 20, 20, inf}, []float64{10, 20, 30}, []float64{0.8, 0.4, 0.2}, 5, 1},
		{"all complete", []float64{2, 1, 3, 4}, []float64{1, 2, 3, 4}, []float64{0.75, 0.5, 0.25, 0}, 4, 0},
		{"one value", []float64{5}, []float64{5}, []float64{0}, 1, 0},
		{"all failed", []float64{inf, inf}, nil, nil, 2, 2},
		{"two failed of four", []float64{inf, 7, inf, 7}, []float64{7}, []float64{0.5}, 4, 2},
		{"NaN is not counted", []float64{math.NaN(), 1}, []float64{1}, []float64{0}, 1, 0},
		{"none", nil, nil, nil, 0, 0},
	} {
		c := NewCCDF(tc.vals)
		if !slices.Equal(c.X, tc.x) || !slices.Equal(c.Y, tc.y) || c.N != tc.n || c.Inf != tc.inf {
			t.Errorf("%s: got X %v Y %v N %d Inf %d, want X %v Y %v N %d Inf %d", tc.name, c.X, c.Y, c.N, c.Inf, tc.x, tc.y, tc.n, tc.inf)
		}
	}
}

// TestCCDFTablePoolsRepetitions: the table pools the repetitions of a
// grid point; a failed message is +Inf in the quantiles it reaches.
// Pooled: 10 20 30 40 +Inf: p50 is rank 3 (30), p90 rank 5 (+Inf); the
// warm-up's messages (500 ms, 900 ms) are left out.
func TestCCDFTablePoolsRepetitions(t *testing.T) {
	points := loadFixtures(t,
		fixture{point: 0, rep: 0, sched: "cwr", times: []float64{500, 20, inf, 10}, warmup: 1},
		fixture{point: 0, rep: 1, sched: "cwr", times: []float64{40, 30}},
		fixture{point: 1, rep: 0, sched: "lowrtt", times: []float64{900, 4, 1, 3, 2}, warmup: 1},
	)
	tab, err := CCDFTable(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tab.Write(&b, "csv"); err != nil {
		t.Fatal(err)
	}
	want := "label,runs,n,failed,p50_ms,p90_ms,p99_ms,p999_ms,max_ms\n" +
		"cwr,2,5,1,30.000,+Inf,+Inf,+Inf,+Inf\n" +
		"lowrtt,1,4,0,2.000,4.000,4.000,4.000,4.000\n"
	if b.String() != want {
		t.Fatalf("csv:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := tab.Write(&b, "md"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| cwr | 2 | 5 | 1 | 30.0 | +Inf | +Inf | +Inf | +Inf |") {
		t.Fatalf("markdown:\n%s", b.String())
	}
}

// TestLowerBound: the fastest path's one-way delay plus the message's
// serialization: path 1, 25 ms + 10,000 B × 8 / 100 Mbit/s = 25.8 ms
// (path 0: 40.8 ms).
func TestLowerBound(t *testing.T) {
	points := loadFixtures(t, fixture{sched: "cwr", times: []float64{30}})
	src, err := DefaultOptions().pointSource(points[0])
	if err != nil {
		t.Fatal(err)
	}
	lb, ok, err := lowerBound(points[0].Runs[0], src)
	if err != nil || !ok || math.Abs(lb-25.8) > 1e-9 {
		t.Fatalf("lower bound %v %v %v, want 25.8 ms", lb, ok, err)
	}
}
