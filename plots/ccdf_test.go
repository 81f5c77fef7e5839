package plots

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
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
	// Intervals: with 5 (4) values nothing bounds a p99 or p99.9 from
	// above (0.99^5 > 0.025); from below, with A ~ Binomial(n, 0.01) the
	// values above the p99, P(A ≥ 1) = 1 − 0.99^5 = 0.049 > 0.025 while
	// P(A ≥ 2) = 0.00098 ≤ 0.025: rank n − 1 (p99.9: P(A ≥ 1) = 0.005 ≤
	// 0.025, rank n). Beyond the p99 of the cwr runs: nothing beyond
	// +Inf; of lowrtt's: nothing beyond the largest value.
	want := "label,runs,n,failed,p50_ms,p90_ms,p99_ms,p99_ci95_lo_ms,p99_ci95_hi_ms,beyond_p99,p999_ms,p999_ci95_lo_ms,p999_ci95_hi_ms,beyond_p999,max_ms\n" +
		"cwr,2,5,1,30.000,+Inf,+Inf,40.000,+Inf,0,+Inf,+Inf,+Inf,0,+Inf\n" +
		"lowrtt,1,4,0,2.000,4.000,4.000,3.000,+Inf,0,4.000,4.000,+Inf,0,4.000\n"
	if b.String() != want {
		t.Fatalf("csv:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := tab.Write(&b, "md"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| cwr | 2 | 5 | 1 | 30.0 | +Inf | +Inf | [40.0, +Inf] | 0 | +Inf | [+Inf, +Inf] | 0 | +Inf |") {
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

// TestCCDFTailBars: a CCDF line draws its p99 interval [10, 20] as a
// bar at probability 0.01 with a tick at each end, and its p99.9
// interval [30, +Inf) as a bar at 0.001 open to the right edge (one
// tick): five strokes beside the line's own.
func TestCCDFTailBars(t *testing.T) {
	plt := plot.New()
	plt.X.Min, plt.X.Max, plt.Y.Min, plt.Y.Max = 0, 100, 0, 1
	rec := &recorder.Canvas{}
	c := draw.Canvas{Canvas: rec, Rectangle: vg.Rectangle{Max: vg.Point{X: 100, Y: 100}}}
	l := &ccdfLine{c: NewCCDF([]float64{5}), ymin: 1e-4, style: draw.LineStyle{Width: 1}, tails: map[float64]Tail{
		0.99: {Value: 15, Lo: 10, Hi: 20}, 0.999: {Value: 40, Lo: 30, Hi: math.Inf(1)}}}
	l.Plot(c, plt)
	var segs [][2]vg.Point
	for _, a := range rec.Actions {
		if s, ok := a.(*recorder.Stroke); ok {
			segs = append(segs, [2]vg.Point{{X: s.Path[0].Pos.X, Y: s.Path[0].Pos.Y}, {X: s.Path[len(s.Path)-1].Pos.X, Y: s.Path[len(s.Path)-1].Pos.Y}})
		}
	}
	if len(segs) != 6 {
		t.Fatalf("%d strokes, want 6: %v", len(segs), segs)
	}
	// On a 100-point canvas for x in [0, 100] and y in [0, 1]: the p99
	// bar from x 10 to 20 at y 1, the p99.9 bar from 30 to the edge.
	horiz := map[[2]vg.Point]bool{}
	r := func(p vg.Point) vg.Point {
		return vg.Point{X: vg.Length(math.Round(float64(p.X)*1e6) / 1e6), Y: vg.Length(math.Round(float64(p.Y)*1e6) / 1e6)}
	}
	for _, s := range segs {
		if s[0].Y == s[1].Y {
			horiz[[2]vg.Point{r(s[0]), r(s[1])}] = true
		}
	}
	for _, want := range [][2]vg.Point{{{X: 10, Y: 1}, {X: 20, Y: 1}}, {{X: 30, Y: 0.1}, {X: 100, Y: 0.1}}} {
		if !horiz[want] {
			t.Errorf("no bar %v in %v", want, segs)
		}
	}
}

// TestCutMessagesRefused: a messages.csv cut on a line boundary has
// fewer rows than summary.json counts: the plot refuses it.
func TestCutMessagesRefused(t *testing.T) {
	dir := t.TempDir()
	rd := writeFixture(t, dir, fixture{point: 0, rep: 0, sched: "cwr", times: []float64{10, 20, 30}})
	name := filepath.Join(rd, "messages.csv")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(name, []byte(strings.Join(lines[:len(lines)-2], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	points, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = CCDFTable(points, DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "2 rows of source s1, summary.json counts 3 messages") {
		t.Fatalf("cut messages.csv: %v", err)
	}
}

// TestCCDFLegendExplainsBars: a CCDF whose lines have tail bars says in
// its legend what the bars are (issue 37: they read as steps of the
// curve); one without enough messages for a bar does not.
func TestCCDFLegendExplainsBars(t *testing.T) {
	many := make([]float64, 2000)
	for i := range many {
		many[i] = float64(10 + i%97)
	}
	for _, c := range []struct {
		name  string
		times []float64
		want  bool
	}{
		{"2000 messages", many, true},
		{"3 messages", []float64{10, 20, 30}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFixture(t, dir, fixture{point: 0, rep: 0, sched: "cwr", times: c.times})
			points, err := Load([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			fig, err := CCDFFigure(points, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			var svg strings.Builder
			if err := fig.Write(&svg, "svg"); err != nil {
				t.Fatal(err)
			}
			if found := strings.Contains(svg.String(), "95 % CI of p99"); found != c.want {
				t.Errorf("legend entry for the bars: %v, want %v", !c.want, c.want)
			}
		})
	}
}
