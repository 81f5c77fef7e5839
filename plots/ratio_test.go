package plots

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// ratioPoint is a grid point of a synthetic sweep: one run per time (ms;
// NaN for a download that did not complete), the first path's rate and
// the second's.
func ratioPoint(scen, mode string, rate0, rate1 float64, times ...float64) *Point {
	p := &Point{Name: "g", Vary: []string{"scenario=" + scen, "mode=" + mode}}
	for i, t := range times {
		d := &trafficgen.Dist{N: 1, MeanCompleted: trafficgen.Millis(t)}
		if math.IsNaN(t) {
			d.Failed = 1
		}
		cfg := &experiment.Experiment{Paths: []experiment.Path{{Down: experiment.Link{Rate: rate0}}, {Down: experiment.Link{Rate: rate1}}}}
		// As mpq run lays a sweep out: SWEEP/POINT, or SWEEP/POINT/repN
		// with repetitions.
		dir := filepath.Join("sweep", scen+","+mode)
		if len(times) > 1 {
			dir = filepath.Join(dir, "rep"+string(rune('0'+i)))
		}
		p.Runs = append(p.Runs, &Run{Dir: dir, config: cfg,
			Summary: &trafficgen.Summary{Name: "g", Repeat: len(times), Sources: []trafficgen.SourceSummary{{Name: "download", Kind: experiment.KindFile, ResponseMS: d}}}})
	}
	return p
}

// TestRatios: hand-computed ratios. s1: single path times 100, 300, 200
// (median 200) over multipath 100, 100, 50 (median 100): 2, single path
// on the faster path. s2: 60 over 120: 0.5, on the slower path. s3: a
// single path run did not complete: no ratio, counted as failed.
// Statistics over {0.5, 2}: nearest-rank median 0.5, p90 2, multipath
// faster in half.
func TestRatios(t *testing.T) {
	nan := math.NaN()
	points := []*Point{
		ratioPoint("s1", "single", 10, 5, 100, 300, 200), ratioPoint("s1", "multi", 10, 5, 100, 100, 50),
		ratioPoint("s2", "single", 5, 10, 60), ratioPoint("s2", "multi", 5, 10, 120),
		ratioPoint("s3", "single", 5, 5, 10, nan), ratioPoint("s3", "multi", 5, 5, 10, 10),
	}
	rs, err := Ratios(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Ratio != 2 || rs[0].FirstFaster != 1 || rs[1].Ratio != 0.5 || rs[1].FirstFaster != -1 ||
		!math.IsNaN(rs[2].Ratio) || !strings.Contains(rs[2].Failed, "single path: ") || rs[2].FirstFaster != 0 {
		t.Fatalf("ratios %+v", rs)
	}
	st := NewRatioStats(rs)
	if st.N != 3 || st.Failed != 1 || st.Median != 0.5 || st.P90 != 2 || st.Min != 0.5 || st.Max != 2 || st.MultiFaster != 0.5 || st.SingleFaster != 0.5 {
		t.Fatalf("stats %+v", st)
	}
	tb, err := RatioTable(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Header, then all / faster / slower.
	if len(tb.MD) != 4 || strings.Join(tb.MD[1], "|") != "g|all|3|1|0.50|0.50|0.50|2.00|2.00|50.0 %|50.0 %" ||
		strings.Join(tb.MD[2], "|") != "g|single path on the faster path|1|0|2.00|2.00|2.00|2.00|2.00|100.0 %|0.0 %" {
		t.Fatalf("table %q", tb.MD)
	}
	if _, err := RatioFigure(points, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
}

// TestRatiosMissingRepetitions: a point of 3 repetitions with 2 runs
// (a run that failed leaves none) has no time: its scenario counts as
// failed, not as the median of the two left.
func TestRatiosMissingRepetitions(t *testing.T) {
	single := ratioPoint("s1", "single", 10, 5, 100, 300)
	for _, r := range single.Runs {
		r.Summary.Repeat = 3
	}
	rs, err := Ratios([]*Point{single, ratioPoint("s1", "multi", 10, 5, 100, 100, 100)}, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || !math.IsNaN(rs[0].Ratio) || !strings.Contains(rs[0].Failed, "1 of 3 repetitions missing") {
		t.Fatalf("ratios %+v", rs)
	}
}

// TestBenefitMissingRepetitions: an entry whose multipath point has a
// repetition missing has no benefit (failed, with the reason), not the -1
// of a multipath download that did not complete; nor has its twin.
func TestBenefitMissingRepetitions(t *testing.T) {
	multi := ratioPoint("s1a", "multi", 10, 5, 80, 80)
	for _, r := range multi.Runs {
		r.Summary.Repeat = 3
	}
	points := []*Point{
		ratioPoint("s1a", "single", 10, 5, 100, 100, 100), multi,
		ratioPoint("s1b", "single", 5, 10, 200, 200, 200), ratioPoint("s1b", "multi", 5, 10, 250, 250, 250),
	}
	bs, err := Benefits(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || !math.IsNaN(bs[0].EAB) || !strings.Contains(bs[0].Failed, "1 of 3 repetitions missing") {
		t.Fatalf("s1a: %+v", bs)
	}
	if math.IsNaN(bs[1].EAB) || bs[1].Failed != "" {
		t.Fatalf("s1b (its twin's single path is complete): %+v", bs[1])
	}
}

// TestRatiosRefuseTwoOfAPoint: two single path points of one scenario
// (two invocations with different path schedulers, which Load does not
// rename) are refused; one used to replace the other.
func TestRatiosRefuseTwoOfAPoint(t *testing.T) {
	a, b := ratioPoint("s1", "single", 10, 5, 100), ratioPoint("s1", "single", 10, 5, 300)
	a.Scheduler, b.Scheduler = "lowrtt", "blest"
	_, err := Ratios([]*Point{a, b, ratioPoint("s1", "multi", 10, 5, 100)}, DefaultOptions())
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "two single points of scenario") {
		t.Fatalf("%v, want an input error", err)
	}
}

// TestRatiosNeedPairs: a scenario without its other mode, or points that
// do not vary the mode, are input errors, not scenarios left out.
func TestRatiosNeedPairs(t *testing.T) {
	for name, pts := range map[string][]*Point{
		"no multi": {ratioPoint("s1", "single", 1, 1, 1), ratioPoint("s2", "single", 1, 1, 1), ratioPoint("s2", "multi", 1, 1, 1)},
		"no mode":  {{Name: "g", Vary: []string{"transport.path_scheduler=cwr"}, Runs: ratioPoint("s1", "single", 1, 1, 1).Runs}},
	} {
		_, err := Ratios(pts, DefaultOptions())
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
