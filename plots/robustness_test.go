package plots

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// robustnessConfig has two paths whose faster one has the lower rate:
// path 0 50 ms one way at 100 Mbit/s (a 10 kB message alone: 50 + 0.8 =
// 50.8 ms), path 1 20 ms at 10 Mbit/s (20 + 8 = 28 ms). The limit is
// 28 ms.
var robustnessConfig = &experiment.Experiment{Paths: []experiment.Path{
	{Up: experiment.Link{Rate: 100e6, Delay: 50 * time.Millisecond}, Down: experiment.Link{Rate: 100e6, Delay: 50 * time.Millisecond}},
	{Up: experiment.Link{Rate: 10e6, Delay: 20 * time.Millisecond}, Down: experiment.Link{Rate: 10e6, Delay: 20 * time.Millisecond}},
}}

// robustnessPoint is a grid point of scheduler sched at loss: one run per
// element of goodputs (the bulk source's, Mbit/s) with the message
// completion times of times[i] (+Inf: failed), of a sweep of repeat
// repetitions.
func robustnessPoint(sched, loss string, repeat int, goodputs []float64, times [][]float64) *Point {
	p := &Point{Name: "rob", Vary: []string{"loss=" + loss, "transport.path_scheduler=" + sched}, Scheduler: sched}
	for i, g := range goodputs {
		var ms []Message
		for k, v := range times[i] {
			ms = append(ms, Message{Source: "s1", Kind: "periodic", Seq: k, Priority: true, Length: 10000, MCT: v})
		}
		p.Runs = append(p.Runs, &Run{Dir: "rob/" + sched + "/" + loss, config: robustnessConfig, messages: ms,
			Summary: &trafficgen.Summary{Name: "rob", Repetition: i, Repeat: repeat, PathScheduler: sched, Sources: []trafficgen.SourceSummary{
				{Name: "s1", Kind: "periodic", Sender: "server", Priority: true},
				{Name: "background", Kind: experiment.KindBulk, Sender: "server", GoodputMbps: g},
			}}})
	}
	return p
}

// TestRobustnessCells: the goal decision, the share and the summary by
// hand. Limit 28 ms (path 1; the slower path's 50.8 ms would be wrong).
// With at most 1000 messages the nearest-rank p99.9 is the largest.
//   - loss a, lowrtt: goodputs 110, 90 (mean 100); times up to 45 ms:
//     excess 17, goal not met; share 1.
//   - cwr-plus: 96, 94 (95): share 0.95, counted as >= 95 %; times up
//     to 30 = 28 + 2: met.
//   - cwr: 50, 60: share 0.55; up to 40 ms: excess 12, not met (met
//     with the slower path's limit).
//   - sr: 1 of 2 repetitions: not met, no share, though its 28 ms meet
//     the limit.
//   - blest: 100, 100: share 1; a failed message: p99.9 +Inf, not met.
//   - loss b, cwr-plus alone: up to 29 ms, met; no lowrtt: no share.
//
// Summary: lowrtt 1 point, goal 0, good 1, both 0, worst share 1, worst
// excess 17; cwr-plus 2, 2, 1, 1, 0.95, 2 (at a), 1 without a share;
// cwr 1, 0, 0, 0, 0.55, 12; sr 1, 0, 0, 0, none, 0, 1 without; blest 1,
// 0, 1, 0, 1, +Inf.
func TestRobustnessCells(t *testing.T) {
	inf := math.Inf(1)
	points := []*Point{
		robustnessPoint("lowrtt", "a", 2, []float64{110, 90}, [][]float64{{25, 27}, {26, 45}}),
		robustnessPoint("cwr-plus", "a", 2, []float64{96, 94}, [][]float64{{28, 29.9}, {29, 30}}),
		robustnessPoint("cwr", "a", 2, []float64{50, 60}, [][]float64{{29, 40}, {30, 31}}),
		robustnessPoint("sr", "a", 2, []float64{99}, [][]float64{{28, 28}}),
		robustnessPoint("blest", "a", 2, []float64{100, 100}, [][]float64{{28, inf}, {28, 28}}),
		robustnessPoint("cwr-plus", "b", 2, []float64{80, 80}, [][]float64{{28, 29}, {29, 28}}),
	}
	cells, err := RobustnessCells(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	want := []struct {
		sched, point string
		p999, excess float64
		met          bool
		share        float64
		failed       string
	}{
		{"lowrtt", "loss=a", 45, 17, false, 1, ""},
		{"cwr-plus", "loss=a", 30, 2, true, 0.95, ""},
		{"cwr", "loss=a", 40, 12, false, 0.55, ""},
		{"sr", "loss=a", 28, 0, false, nan, "1 of 2 repetitions missing"},
		{"blest", "loss=a", inf, inf, false, 1, ""},
		{"cwr-plus", "loss=b", 29, 1, true, nan, "no lowrtt at this point"},
	}
	if len(cells) != len(want) {
		t.Fatalf("%d cells, want %d", len(cells), len(want))
	}
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-9 }
	for i, w := range want {
		c := cells[i]
		if c.Scheduler != w.sched || c.Point != w.point || !same(c.LimitMS, 28) || !same(c.P999MS, w.p999) || !same(c.ExcessMS, w.excess) ||
			c.GoalMet != w.met || !same(c.Share, w.share) || c.Failed != w.failed {
			t.Errorf("cell %d: %s %s limit %v p99.9 %v excess %v met %v share %v failed %q; want %+v",
				i, c.Scheduler, c.Point, c.LimitMS, c.P999MS, c.ExcessMS, c.GoalMet, c.Share, c.Failed, w)
		}
	}
	if cells[4].FailedMessages != 1 || cells[4].Messages != 4 {
		t.Errorf("blest: %d of %d messages failed, want 1 of 4", cells[4].FailedMessages, cells[4].Messages)
	}
	type sum struct {
		sched                             string
		points, goal, good, both, noShare int
		worstShare, worstExcess           float64
	}
	wantSum := []sum{
		{"lowrtt", 1, 0, 1, 0, 0, 1, 17},
		{"cwr-plus", 2, 2, 1, 1, 1, 0.95, 2},
		{"cwr", 1, 0, 0, 0, 0, 0.55, 12},
		{"sr", 1, 0, 0, 0, 1, nan, 0},
		{"blest", 1, 0, 1, 0, 0, 1, inf},
	}
	got := SummarizeRobustness(cells)
	if len(got) != len(wantSum) {
		t.Fatalf("%d summary lines, want %d", len(got), len(wantSum))
	}
	for i, w := range wantSum {
		s := got[i]
		if g := (sum{s.Scheduler, s.Points, s.Goal, s.Good, s.Both, s.NoShare, s.WorstShare, s.WorstExcessMS}); g.sched != w.sched ||
			g.points != w.points || g.goal != w.goal || g.good != w.good || g.both != w.both || g.noShare != w.noShare ||
			!same(g.worstShare, w.worstShare) || !same(g.worstExcess, w.worstExcess) {
			t.Errorf("summary %d: %+v, want %+v", i, g, w)
		}
	}
	if got[1].WorstSharePoint != "rob: loss=a" || got[1].WorstExcessPoint != "rob: loss=a" {
		t.Errorf("cwr-plus worst at %q and %q, want rob: loss=a", got[1].WorstSharePoint, got[1].WorstExcessPoint)
	}
}

// TestRobustnessLimit: the limit of a message sent by the server or the
// client, by hand (robustnessConfig; a client's 2 kB: path 1 20 + 1.6 =
// 21.6 ms, path 0 50.16 ms).
func TestRobustnessLimit(t *testing.T) {
	for _, tc := range []struct {
		sender string
		length int64
		want   float64
	}{{"server", 10000, 28}, {"client", 2000, 21.6}, {"server", 100000, 58}} {
		if got := RobustnessLimit(robustnessConfig, tc.sender, tc.length); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s %d bytes: %v ms, want %v", tc.sender, tc.length, got, tc.want)
		}
	}
}

// TestRobustnessOutputs: the table, the summary table and the figure are
// written for the points of TestRobustnessCells.
func TestRobustnessOutputs(t *testing.T) {
	points := []*Point{
		robustnessPoint("lowrtt", "a", 1, []float64{100}, [][]float64{{25}}),
		robustnessPoint("cwr", "a", 1, []float64{50}, [][]float64{{29}}),
	}
	tab, err := Tabulate("robustness", points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := tab.Write(&b, "md"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| rob | loss=a | cwr | 1/1 | 28.0 | 29.0 | 1.0 | 0 of 1 | yes | [29.0, +Inf] | undecided | 50.0 | 100.0 | 50.0 % |  |") {
		t.Errorf("table:\n%s", b.String())
	}
	sum, err := Tabulate("robustness-summary", points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := sum.Write(&b, "csv"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "cwr,1,1,0,0,0.500,rob: loss=a,1.000,rob: loss=a,0,0,0,1") {
		t.Errorf("summary:\n%s", b.String())
	}
	fig, err := Draw("robustness", points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats {
		b.Reset()
		if err := fig.Write(&b, f); err != nil || b.Len() == 0 {
			t.Errorf("%s: %v, %d bytes", f, err, b.Len())
		}
	}
}

// TestRobustnessShown: what the p99.9's 95 % interval shows of the goal
// (limit 28 ms, goal 30 ms), by hand. B, the messages at or below the
// p99.9, is Binomial(n, 0.999); the upper end is the largest value when
// P(B = n) = 0.999^n <= 0.025, i.e. n >= 3,688, and +Inf below.
//   - 1,797 messages (3 x 30 s of one every 50 ms) all at 20 ms:
//     0.999^1797 = 0.166: upper end +Inf, undecided although none is
//     late.
//   - 4,000 at 20 ms: 0.999^4000 = 0.0183: upper end 20 ms, met.
//   - 4,000, the largest at 40 ms: upper end 40: not met; the lower end
//     (the number of values above the p99.9, n - B, about Poisson(4):
//     P(n - B >= 9) = 0.021 <= 0.025 < P(n - B >= 8) = 0.051, so the
//     9th largest) is 20 ms: undecided.
//   - 4,000, the 20 largest at 40 ms: the 9th largest is 40: missed.
//   - 4,000 at 20 ms with 1 of 2 repetitions: missed.
func TestRobustnessShown(t *testing.T) {
	times := func(n, late int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = 20
			if i >= n-late {
				v[i] = 40
			}
		}
		return v
	}
	for _, tc := range []struct {
		name         string
		repeat       int
		times        []float64
		shown        string
		lo, hi       float64
		summaryShown [2]int
	}{
		{"1797 on time", 1, times(1797, 0), ShownUndecided, 20, math.Inf(1), [2]int{0, 0}},
		{"4000 on time", 1, times(4000, 0), ShownMet, 20, 20, [2]int{1, 0}},
		{"4000, one late", 1, times(4000, 1), ShownUndecided, 20, 40, [2]int{0, 0}},
		{"4000, 20 late", 1, times(4000, 20), ShownMissed, 40, 40, [2]int{0, 1}},
		{"a repetition missing", 2, times(4000, 0), ShownMissed, 20, 20, [2]int{0, 1}},
	} {
		p := robustnessPoint("cwr-plus", "a", tc.repeat, []float64{100}, [][]float64{tc.times})
		cells, err := RobustnessCells([]*Point{p}, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		c := cells[0]
		if c.Shown != tc.shown || c.P999LoMS != tc.lo || c.P999HiMS != tc.hi {
			t.Errorf("%s: shown %q [%v, %v], want %q [%v, %v]", tc.name, c.Shown, c.P999LoMS, c.P999HiMS, tc.shown, tc.lo, tc.hi)
		}
		s := SummarizeRobustness(cells)[0]
		if got := [2]int{s.ShownMet, s.ShownMissed}; got != tc.summaryShown {
			t.Errorf("%s: summary shows met, missed %v, want %v", tc.name, got, tc.summaryShown)
		}
	}
}

// TestRobustnessRefOf: a cell's share divides by the lowrtt of its own
// variant only: another variant's is another configuration.
func TestRobustnessRefOf(t *testing.T) {
	x, y := &Point{Variant: "x"}, &Point{Variant: "y"}
	for _, tc := range []struct {
		refs    []*Point
		variant string
		want    *Point
		several bool
	}{
		{[]*Point{x, y}, "y", y, false},
		{[]*Point{x, y}, "z", nil, true},
		{[]*Point{x}, "z", nil, true},
		{nil, "", nil, false},
	} {
		got, several := robustnessRefOf(tc.refs, tc.variant)
		if got != tc.want || several != tc.several {
			t.Errorf("variant %q among %d: %v %v, want %v %v", tc.variant, len(tc.refs), got, several, tc.want, tc.several)
		}
	}
}

// TestRobustnessCellsVariants: the same grid point from two invocations
// in two configurations (variants "a" and "b", as Load names them): each
// cwr-plus cell divides by its own invocation's lowrtt (a: 50 / 100,
// b: 150 / 200), gets a row of its own, and a variant without a lowrtt
// of its own gets no share. Pooled under one name, both would have
// divided by the last lowrtt loaded.
func TestRobustnessCellsVariants(t *testing.T) {
	variant := func(p *Point, v string) *Point {
		p.Experiment, p.Variant, p.Name = p.Name, v, p.Name+" ("+v+")"
		return p
	}
	points := []*Point{
		variant(robustnessPoint("lowrtt", "x", 1, []float64{100}, [][]float64{{25}}), "a"),
		variant(robustnessPoint("cwr-plus", "x", 1, []float64{50}, [][]float64{{25}}), "a"),
		variant(robustnessPoint("lowrtt", "x", 1, []float64{200}, [][]float64{{25}}), "b"),
		variant(robustnessPoint("cwr-plus", "x", 1, []float64{150}, [][]float64{{25}}), "b"),
		variant(robustnessPoint("cwr-plus", "x", 1, []float64{10}, [][]float64{{25}}), "c"),
	}
	cells, err := RobustnessCells(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		got = append(got, fmt.Sprintf("%s %s %.2f", c.Scheduler, c.Point, c.Share))
	}
	want := "lowrtt (a) loss=x 1.00, cwr-plus (a) loss=x 0.50, lowrtt (b) loss=x 1.00, cwr-plus (b) loss=x 0.75, cwr-plus (c) loss=x NaN"
	if strings.Join(got, ", ") != want {
		t.Fatalf("cells %q, want %q", strings.Join(got, ", "), want)
	}
	if !strings.Contains(cells[4].Failed, "no lowrtt of its own invocation") {
		t.Errorf("variant c: why %q", cells[4].Failed)
	}
}

// TestPointKeyLeavesOutOutput: a grid point's key leaves out the path
// scheduler and output settings (mpq run --set output.qlog=false), so
// that the map groups and labels the points of such a run as those of a
// run without it.
func TestPointKeyLeavesOutOutput(t *testing.T) {
	p := &Point{Vary: []string{"output.qlog=false", "shape=base", "loss=loss0", "transport.path_scheduler=cwr-plus"}}
	if got, want := pointKey(p), "shape=base,loss=loss0"; got != want {
		t.Fatalf("pointKey %q, want %q", got, want)
	}
}

// gridPoint is a grid point of scheduler sched with the varied values
// vary (the scheduler's added): one run, of a sweep of one repetition,
// with bulk goodput g and the message completion times times.
func gridPoint(sched string, vary []string, g float64, times ...float64) *Point {
	p := robustnessPoint(sched, "x", 1, []float64{g}, [][]float64{times})
	p.Vary = append(slices.Clone(vary), "transport.path_scheduler="+sched)
	return p
}

// TestRobustnessSchedulerOptions: a point whose runs set options of the
// path scheduler (mpq run --set transport.scheduler_options.X=V, in a
// results directory of their own) is of the grid point of the runs
// without them: its share divides by that point's lowrtt (100 Mbit/s),
// and it has a row of its own named after the options. A key other than
// the scheduler's options is another grid point, without a lowrtt.
func TestRobustnessSchedulerOptions(t *testing.T) {
	for _, tc := range []struct {
		vary       []string
		row, point string
		share      float64
	}{
		{nil, "cwr-plus", "loss=a", 0.96},
		{[]string{"transport.scheduler_options.careful_start=false"}, "cwr-plus careful_start=false", "loss=a", 0.80},
		{[]string{"transport.scheduler_options.careful_start=false", "transport.scheduler_options.credit_rtts=1"},
			"cwr-plus careful_start=false credit_rtts=1", "loss=a", 0.80},
		{[]string{"transport.scheduler_options={borrow=message}"}, "cwr-plus {borrow=message}", "loss=a", 0.80},
		{[]string{"transport.pacing=true"}, "cwr-plus", "transport.pacing=true,loss=a", math.NaN()},
	} {
		g := 80.0
		if tc.vary == nil {
			g = 96
		}
		points := []*Point{
			gridPoint("lowrtt", []string{"loss=a"}, 100, 25),
			gridPoint("cwr-plus", append(slices.Clone(tc.vary), "loss=a"), g, 25),
		}
		cells, err := RobustnessCells(points, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		c := cells[1]
		if c.Scheduler != tc.row || c.Point != tc.point || !(math.Abs(c.Share-tc.share) < 1e-9 || math.IsNaN(c.Share) && math.IsNaN(tc.share)) {
			t.Errorf("%v: row %q point %q share %v, want %q %q %v", tc.vary, c.Scheduler, c.Point, c.Share, tc.row, tc.point, tc.share)
		}
	}
}

// robustnessGrid is a grid of shapes, queues and controllers, lowrtt
// beside cwr-plus (limit 28 ms: met up to 30 ms), one repetition each:
//
//	shape queue cc       lowrtt       cwr-plus
//	base  q1    newreno  100, 45 ms   96 (0.96), 30 ms: both
//	base  q2    newreno  100, 45 ms   90 (0.90), 29 ms: goal only
//	base  q1    bbr      100, 45 ms   100 (1), 40 ms: share only
//	base  q2    bbr      100, 45 ms   99 (0.99), 28 ms: both
//	fast  q1    newreno  50, 45 ms    50 (1), 28 ms: both
func robustnessGrid() []*Point {
	var points []*Point
	for _, r := range []struct {
		shape, queue, cc string
		g, ms            float64 // cwr-plus's goodput, its messages' time
	}{
		{"base", "q1", "newreno", 96, 30},
		{"base", "q2", "newreno", 90, 29},
		{"base", "q1", "bbr", 100, 40},
		{"base", "q2", "bbr", 99, 28},
		{"fast", "q1", "newreno", 50, 28},
	} {
		vary := []string{"shape=" + r.shape, "queue=" + r.queue, "transport.congestion=" + r.cc}
		ref := 100.0
		if r.shape == "fast" {
			ref = 50
		}
		points = append(points, gridPoint("lowrtt", vary, ref, 45), gridPoint("cwr-plus", vary, r.g, r.ms))
	}
	return points
}

// TestRobustnessSummaryGrouped: the summary split by keys (o.By), and
// with a column per value of a key (o.Columns), on robustnessGrid by
// hand: cwr-plus at the base shape meets both at q1 with newreno and at
// q2 with bbr (1/2 each); with newreno it meets the goal at both queues,
// one at a share of 0.90 (its worst); at the fast shape 1/1, and no bbr
// point (–). Each scheduler's lines come together, lowrtt's first (its
// cells are first).
func TestRobustnessSummaryGrouped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		by      []string
		columns string
		want    []string // the table's rows, cells joined by " | "
	}{
		{"columns", []string{"shape"}, "congestion", []string{
			"experiment | shape | scheduler | newreno | bbr",
			"rob | base | lowrtt | 0/2 | 0/2",
			"rob | fast | lowrtt | 0/1 | –",
			"rob | base | cwr-plus | 1/2 | 1/2",
			"rob | fast | cwr-plus | 1/1 | –",
		}},
		{"by", []string{"shape", "transport.congestion"}, "", []string{
			"experiment | shape | congestion | scheduler | points | goal met | >= 95 % of lowrtt's goodput | both | worst share",
			"rob | base | newreno | lowrtt | 2 | 0 | 2 | 0 | 100.0 %",
			"rob | base | bbr | lowrtt | 2 | 0 | 2 | 0 | 100.0 %",
			"rob | fast | newreno | lowrtt | 1 | 0 | 1 | 0 | 100.0 %",
			"rob | base | newreno | cwr-plus | 2 | 2 | 1 | 1 | 90.0 %",
			"rob | base | bbr | cwr-plus | 2 | 1 | 2 | 1 | 99.0 %",
			"rob | fast | newreno | cwr-plus | 1 | 1 | 1 | 1 | 100.0 %",
		}},
		{"columns alone", nil, "queue", []string{
			"experiment | scheduler | q1 | q2",
			"rob | lowrtt | 0/3 | 0/2",
			"rob | cwr-plus | 2/3 | 1/2",
		}},
		{"without lowrtt", []string{"shape"}, "congestion", []string{
			"experiment | shape | scheduler | newreno | bbr",
			"rob | base | cwr-plus | 0/2 (2 without a share) | 0/2 (2 without a share)",
			"rob | fast | cwr-plus | 0/1 (1 without a share) | –",
		}},
	} {
		o := DefaultOptions()
		o.By, o.Columns = tc.by, tc.columns
		points := robustnessGrid()
		if tc.name == "without lowrtt" {
			points = slices.DeleteFunc(points, func(p *Point) bool { return p.Scheduler == "lowrtt" })
		}
		tab, err := RobustnessSummaryTable(points, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, r := range tab.MD {
			if len(tc.columns) == 0 {
				r = r[:len(tc.by)+7] // up to the worst share
			}
			got = append(got, strings.Join(r, " | "))
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

// TestRobustnessSummaryGroupedKeys: --by and --columns must name keys
// the runs vary, other than the path scheduler, and not the same one.
func TestRobustnessSummaryGroupedKeys(t *testing.T) {
	for _, tc := range []struct {
		by      []string
		columns string
		want    string
	}{
		{[]string{"path_scheduler"}, "", "--by path_scheduler: not a key"},
		{[]string{"delay"}, "", "--by delay: not a key"},
		{nil, "transport.path_scheduler", "--columns transport.path_scheduler: not a key"},
		{[]string{"shape"}, "shape", "--columns shape is also a --by key"},
	} {
		o := DefaultOptions()
		o.By, o.Columns = tc.by, tc.columns
		_, err := RobustnessSummaryTable(robustnessGrid(), o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--by %v --columns %q: %v, want %q", tc.by, tc.columns, err, tc.want)
		}
	}
}
