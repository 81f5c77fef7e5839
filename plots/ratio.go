package plots

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// The ratio figure pairs the grid points of a sweep that differ only in
// the mode key: "mode=single" (the numerator) and "mode=multi", as the
// experiments of experiments/conext17 vary it.
const (
	ratioKey    = "mode"
	ratioSingle = "single"
	ratioMulti  = "multi"
)

// Ratio is one scenario of a sweep: the completion times of its single
// path and multipath grid points and their ratio.
type Ratio struct {
	// Name is the experiment's; Scenario the point's other varied
	// values ("scenario=s001a").
	Name, Scenario string
	// Single and Multi are the points' times in ms: the median over their
	// repetitions of each run's mean completion time of the source's
	// transfers (NaN when a run did not complete them all).
	Single, Multi float64
	// Ratio is Single / Multi: above 1 multipath was faster. NaN when
	// either time is missing; Failed then says why.
	Ratio  float64
	Failed string
	// FirstFaster is +1 when the first path has the higher rate (single
	// path ran on the faster path), -1 when the lower, 0 when equal or
	// unknown.
	FirstFaster int
	// missing reports that a point of the scenario has repetitions
	// missing: no time, and no benefit either (a multipath time missing
	// for that reason is not a download that did not complete).
	missing bool
	// paths describes the scenario's first and second path (their
	// configurations, both directions), to find the entry of the same
	// scenario with the paths swapped (Benefits); empty when unknown.
	paths [2]string
}

// runTime is a run's mean completion time of the source's transfers
// (response time for kinds with replies), or why there is none.
func runTime(r *Run, o Options) (float64, string, error) {
	src, err := o.source(r.Summary)
	if err != nil {
		return 0, "", err
	}
	d := src.MCTMS
	if trafficgen.HasReply(src.Kind) {
		d = src.ResponseMS
	}
	switch {
	case d == nil || d.N == 0:
		return math.NaN(), "no transfer", nil
	case d.Failed > 0:
		return math.NaN(), fmt.Sprintf("%d of %d transfers did not complete", d.Failed, d.N), nil
	}
	return float64(d.MeanCompleted), "", nil
}

// pointTime is the median of a point's run times (the lower middle of an
// even number); NaN with the reason when a run has none, or when
// repetitions are missing (a run that failed leaves no results: the
// median of the others would hide it), which the bool reports.
func pointTime(p *Point, o Options) (float64, string, bool, error) {
	if want := p.wantRuns(); len(p.Runs) < want {
		return math.NaN(), fmt.Sprintf("%s: %d of %d repetitions missing", sweepPointDir(p.Runs[0]), want-len(p.Runs), want), true, nil
	}
	var ts []float64
	for _, r := range p.Runs {
		t, why, err := runTime(r, o)
		if err != nil {
			return 0, "", false, err
		}
		if why != "" {
			return math.NaN(), r.Dir + ": " + why, false, nil
		}
		ts = append(ts, t)
	}
	sort.Float64s(ts)
	return trafficgen.NearestRank(ts, 0.5), "", false, nil
}

// Ratios pairs the single path and multipath points of each scenario,
// in the order of the single path points. A point without its pair is an
// error: the figure would silently leave the scenario out.
func Ratios(points []*Point, o Options) ([]Ratio, error) {
	type pair struct{ single, multi *Point }
	pairs := map[string]*pair{}
	var order []string
	// An experiment run into several directories (invocations: other
	// --set values, other scenarios) is a sweep per directory, named
	// after it: its entries are not pooled, nor paired across them.
	parts := sweepParts(points)
	for _, p := range points {
		var rest []string
		mode := ""
		for _, v := range p.Vary {
			if k, val, _ := strings.Cut(v, "="); k == ratioKey {
				mode = val
				continue
			}
			rest = append(rest, v)
		}
		if mode != ratioSingle && mode != ratioMulti {
			return nil, inputErr("%s: the ratio figure needs grid points varying %s=%s and %s=%s (as experiments/conext17 does); this one varies %v",
				p.Runs[0].Dir, ratioKey, ratioSingle, ratioKey, ratioMulti, p.Vary)
		}
		name := p.Name
		if part, ok := parts[p]; ok {
			name += " (" + part + ")"
		}
		key := name + "\x00" + strings.Join(rest, ",")
		pr := pairs[key]
		if pr == nil {
			pr = &pair{}
			pairs[key] = pr
			order = append(order, key)
		}
		slot := &pr.multi
		if mode == ratioSingle {
			slot = &pr.single
		}
		if *slot != nil { // never replace a point: the figure would hide one
			return nil, inputErr("%s and %s: two %s points of scenario %q of %s (runs of two invocations that differ in their path scheduler?): plot them apart",
				(*slot).Runs[0].Dir, p.Runs[0].Dir, mode, strings.Join(rest, ","), p.Name)
		}
		*slot = p
	}
	var out []Ratio
	for _, key := range order {
		pr := pairs[key]
		name, scen, _ := strings.Cut(key, "\x00")
		if pr.single == nil || pr.multi == nil {
			have := pr.single
			if have == nil {
				have = pr.multi
			}
			return nil, inputErr("%s: scenario %q of %s has no %s point to pair with (give the whole sweep)", have.Runs[0].Dir, scen, name,
				map[bool]string{true: ratioMulti, false: ratioSingle}[pr.multi == nil])
		}
		r := Ratio{Name: name, Scenario: scen}
		var why1, why2 string
		var miss1, miss2 bool
		var err error
		if r.Single, why1, miss1, err = pointTime(pr.single, o); err != nil {
			return nil, err
		}
		if r.Multi, why2, miss2, err = pointTime(pr.multi, o); err != nil {
			return nil, err
		}
		r.Ratio = r.Single / r.Multi
		r.missing = miss1 || miss2
		switch {
		case why1 != "":
			r.Ratio, r.Failed = math.NaN(), "single path: "+why1
		case why2 != "":
			r.Ratio, r.Failed = math.NaN(), "multipath: "+why2
		case !(r.Multi > 0):
			r.Ratio, r.Failed = math.NaN(), "multipath time not positive"
		}
		if cfg, err := pr.multi.Runs[0].Config(); err == nil && len(cfg.Paths) >= 2 {
			r.paths = [2]string{pathKey(cfg.Paths[0]), pathKey(cfg.Paths[1])}
			a, b := cfg.Paths[0].Down.Rate, cfg.Paths[1].Down.Rate
			switch {
			case a > b:
				r.FirstFaster = 1
			case a < b:
				r.FirstFaster = -1
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// pathKey describes a path's links in both directions, by value (a
// trace's content, not its pointer).
func pathKey(p experiment.Path) string {
	var b strings.Builder
	for _, l := range []experiment.Link{p.Up, p.Down} {
		tr := l.Trace
		l.Trace = nil
		fmt.Fprintf(&b, "%+v", l)
		if tr != nil {
			fmt.Fprintf(&b, " trace %+v", *tr)
		}
		b.WriteString(";")
	}
	return b.String()
}

// RatioStats summarises the ratios of a set of scenarios: how many, how
// many failed (no ratio), the nearest-rank quantiles of the others, and
// the fractions of them above 1 (multipath faster) and below 1.
type RatioStats struct {
	N, Failed                  int
	P10, P25, Median, P75, P90 float64
	Min, Max                   float64
	MultiFaster, SingleFaster  float64
	FailedReasons              []string
	sorted                     []float64
}

// NewRatioStats computes the statistics of rs.
func NewRatioStats(rs []Ratio) RatioStats {
	s := RatioStats{N: len(rs)}
	for _, r := range rs {
		if math.IsNaN(r.Ratio) {
			s.Failed++
			s.FailedReasons = append(s.FailedReasons, r.Scenario+": "+r.Failed)
			continue
		}
		s.sorted = append(s.sorted, r.Ratio)
	}
	sort.Float64s(s.sorted)
	q := func(p float64) float64 { return trafficgen.NearestRank(s.sorted, p) }
	s.P10, s.P25, s.Median, s.P75, s.P90 = q(0.1), q(0.25), q(0.5), q(0.75), q(0.9)
	s.Min, s.Max = math.NaN(), math.NaN()
	if n := len(s.sorted); n > 0 {
		s.Min, s.Max = s.sorted[0], s.sorted[n-1]
		above, below := 0, 0
		for _, v := range s.sorted {
			if v > 1 {
				above++
			} else if v < 1 {
				below++
			}
		}
		s.MultiFaster, s.SingleFaster = float64(above)/float64(n), float64(below)/float64(n)
	} else {
		s.MultiFaster, s.SingleFaster = math.NaN(), math.NaN()
	}
	return s
}

// ratioSubsets splits one experiment's ratios into all of them and those
// whose single path ran on the faster or on the slower path.
func ratioSubsets(rs []Ratio) []struct {
	label string
	rs    []Ratio
} {
	var faster, slower []Ratio
	for _, r := range rs {
		switch r.FirstFaster {
		case 1:
			faster = append(faster, r)
		case -1:
			slower = append(slower, r)
		}
	}
	return []struct {
		label string
		rs    []Ratio
	}{{"all", rs}, {"single path on the faster path", faster}, {"single path on the slower path", slower}}
}

// byExperiment groups ratios by experiment, in order of appearance.
func byExperiment(rs []Ratio) (names []string, groups map[string][]Ratio) {
	groups = map[string][]Ratio{}
	for _, r := range rs {
		if _, ok := groups[r.Name]; !ok {
			names = append(names, r.Name)
		}
		groups[r.Name] = append(groups[r.Name], r)
	}
	return names, groups
}

// RatioFigure draws the CDF over scenarios of the ratio single path time
// / multipath time (logarithmic axis; right of 1 multipath was faster):
// for one experiment a line for all its scenarios (both path orders) and
// one each for the scenarios whose single path ran on the faster and on
// the slower path; for several, one line per experiment. Scenarios
// without a ratio are counted in the legend.
func RatioFigure(points []*Point, o Options) (*Figure, error) {
	rs, err := Ratios(points, o)
	if err != nil {
		return nil, err
	}
	names, groups := byExperiment(rs)
	type line struct {
		label string
		st    RatioStats
		style draw.LineStyle
	}
	var lines []line
	colours := []Style{SchedulerStyle("lowrtt"), SchedulerStyle("cwr"), SchedulerStyle("cwr-red"), SchedulerStyle("sr"), SchedulerStyle("redundant")}
	if len(names) == 1 {
		for i, sub := range ratioSubsets(groups[names[0]]) {
			st := colours[0].Line()
			st.Dashes = dashStyles[i]
			lines = append(lines, line{sub.label, NewRatioStats(sub.rs), st})
		}
	} else {
		for i, n := range names {
			lines = append(lines, line{strings.TrimPrefix(n, "conext17-"), NewRatioStats(groups[n]), colours[i%len(colours)].Line()})
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range lines {
		if len(l.st.sorted) > 0 {
			lo, hi = math.Min(lo, l.st.Min), math.Max(hi, l.st.Max)
		}
	}
	if math.IsInf(lo, 1) {
		return nil, inputErr("no scenario has a ratio (every one failed)")
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Min(lo, 0.5))))
	hi = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, 2))))
	p := newPlot("single path time / multipath time", "CDF over scenarios")
	p.Title.Text = o.Title
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = lo, hi
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(gridLines())
	one := &vline{x: 1, style: draw.LineStyle{Color: black, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}}
	p.Add(one)
	for _, l := range lines {
		if len(l.st.sorted) == 0 {
			continue
		}
		xy := make(plotter.XYs, 0, 2*len(l.st.sorted)+1)
		n := float64(len(l.st.sorted))
		xy = append(xy, plotter.XY{X: lo, Y: 0})
		for i, v := range l.st.sorted {
			xy = append(xy, plotter.XY{X: v, Y: float64(i) / n}, plotter.XY{X: v, Y: float64(i+1) / n})
		}
		xy = append(xy, plotter.XY{X: hi, Y: 1})
		ln, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		ln.LineStyle = l.style
		p.Add(ln)
		label := fmt.Sprintf("%s (%d, median %.2f)", l.label, len(l.st.sorted), l.st.Median)
		if l.st.Failed > 0 {
			label += fmt.Sprintf(", %d failed", l.st.Failed)
		}
		p.Legend.Add(label, ln)
	}
	// Bottom right: the curves rise left of it.
	p.Legend.Top, p.Legend.Left = false, false
	return &Figure{Plots: []*plot.Plot{p}, Width: ColumnWidth, Height: 2.5 * vg.Inch}, nil
}

// RatioTable gives the numbers of the ratio figure: per experiment and
// subset, the scenarios, those failed, the quantiles of the ratio and
// the fractions where multipath and single path were faster.
func RatioTable(points []*Point, o Options) (*Table, error) {
	rs, err := Ratios(points, o)
	if err != nil {
		return nil, err
	}
	t := &Table{
		MD: [][]string{{"experiment", "scenarios", "n", "failed", "p10", "p25", "median", "p75", "p90",
			"multipath faster", "single path faster"}},
		CSV: [][]string{{"experiment", "scenarios", "n", "failed", "min", "p10", "p25", "median", "p75", "p90", "max",
			"frac_multi_faster", "frac_single_faster"}},
	}
	names, groups := byExperiment(rs)
	for _, n := range names {
		for _, sub := range ratioSubsets(groups[n]) {
			st := NewRatioStats(sub.rs)
			md := []string{n, sub.label, strconv.Itoa(st.N), strconv.Itoa(st.Failed)}
			cs := []string{n, sub.label, strconv.Itoa(st.N), strconv.Itoa(st.Failed), trafficgen.FormatCSV(st.Min)}
			for _, v := range []float64{st.P10, st.P25, st.Median, st.P75, st.P90} {
				md = append(md, FormatNumber(v, 2))
				cs = append(cs, trafficgen.FormatCSV(v))
			}
			md = append(md, percentCell(st.MultiFaster), percentCell(st.SingleFaster))
			cs = append(cs, trafficgen.FormatCSV(st.Max), trafficgen.FormatCSV(st.MultiFaster), trafficgen.FormatCSV(st.SingleFaster))
			t.MD, t.CSV = append(t.MD, md), append(t.CSV, cs)
		}
	}
	return t, nil
}

// percentCell writes a fraction as a table's percentage ("–" for none).
func percentCell(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(100*v, 'f', 1, 64) + " %"
}
