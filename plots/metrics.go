package plots

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/trafficgen"
)

// pooledMetric matches the name of a pooled quantile of a source's
// message times, as aggregate.csv names it: S.pooled_T_pQ_ms, T being
// mct or response and Q 50, 90, 99 or 999; or their largest,
// S.pooled_T_max_ms; each of the messages created from a time on with
// _from_X (S.pooled_mct_p99_ms_from_5s), before a time with _before_X,
// or both (windowSuffix).
var pooledMetric = regexp.MustCompile(`^(.+)\.pooled_(mct|response)_(?:p(50|90|99|999)|(max|min))_ms` + windowSuffix + `$`)

// windowSuffix is the optional end of a pooled metric's name that keeps
// the messages created at or after a time, _from_5s, before a time,
// _before_1s, or in between, _from_5s_before_10s: two groups, the
// times or "".
const windowSuffix = `(?:_from_(` + durationPattern + `))?(?:_before_(` + durationPattern + `))?`

// ratioMetric matches a metric of a pivoted table relative to another
// column: NAME/[VALUE], NAME's mean at a point over its mean at the
// point of the same row whose --columns value is VALUE.
var ratioMetric = regexp.MustCompile(`^(.+)/\[(.+)\]$`)

// overMetric matches the name of a count of a source's messages later
// than a bound: S.pooled_T_over_Xms, X in ms (27.9, 40), with
// windowSuffix.
var overMetric = regexp.MustCompile(`^(.+)\.pooled_(mct|response)_over_([0-9]+(?:\.[0-9]+)?)ms` + windowSuffix + `$`)

// countFact matches the facts that count things (messages, connections,
// packets): a single value of one of them (a run's, or the largest,
// smallest or median of several) is a whole number and is written
// without decimals.
var countFact = regexp.MustCompile(`(^|\.)(failed|late_after_change)$|^transport\.(max_)?connections$|^emulator\.dropped_loss$`)

// underExt matches what follows the @ of NAME@under_X: X, a number in
// NAME's unit.
var underExt = regexp.MustCompile(`^under_([0-9]+(?:\.[0-9]+)?)$`)

// MetricsTable is a table of chosen metrics per grid point (o.Metrics),
// for a results page whose table no figure gives: a row per point, a
// column per metric. A metric is
//
//   - a headline metric (resultset.Headline: goodput_server_mbps,
//     s1.mct_p99_ms, path.0.cwnd_growth_ca_bytes_per_rtt,
//     competitor.NAME.goodput_mbps, ...): its mean over the repetitions
//     ± half its 95 % Student-t interval, as in aggregate.csv;
//   - a pooled quantile of a source's message times, S.pooled_mct_p99_ms
//     (or _response_, and p50, p90, p999): the nearest-rank quantile of
//     the messages of every repetition, failed ones +Inf, with its 95 %
//     order-statistic interval (TailCI, as the ccdf table gives it);
//     S.pooled_mct_max_ms and S.pooled_mct_min_ms, the largest and the
//     smallest of those times;
//   - a count of a source's late messages, S.pooled_mct_over_Xms (or
//     _response_): the messages of every repetition whose time is
//     above X ms, failed ones included;
//   - either of those two over the messages created at or after a time
//     X of the run (X a duration: 5s, 500ms) only, the name ending in
//     _from_X: S.pooled_mct_p99_ms_from_5s, S.pooled_mct_over_40ms_from_5s;
//     over those created before X, ending in _before_X
//     (S.pooled_mct_over_40ms_before_1s); or from X and before Y,
//     _from_X_before_Y;
//   - A/B, two headline metrics: their ratio in each run, then its mean
//     ± half its interval (a connection's goodput over a competitor's);
//   - NAME@max, NAME@min or NAME@median, a headline metric: its
//     largest, smallest or median value over the repetitions (the worst
//     seed's p99; the median of an even number of runs is the mean of
//     the two middle ones); NAME@sd its sample standard deviation over
//     them (n - 1 in the denominator; none below two runs); NAME@reps
//     its value in each repetition, in the order of their seeds, in one
//     cell; NAME@under_X how many repetitions have a value below X
//     ("2 of 10", of those with a value). NAME may also be a pooled
//     metric (a quantile, the largest, the smallest, a late count, with
//     their windows), then of each repetition's own messages (perRun);
//   - a fact of the runs besides runs.csv's (runfacts.go:
//     transport.connections, emulator.late_max_ms, S.disruption_ms,
//     path.ID.server.failed_after_ms, path.ID.server.sent_percent_from_X,
//     ...), as a headline metric;
//   - NAME/[VALUE], with o.Columns: a headline metric's mean over its
//     mean in the column VALUE of the same row (ξ = T / T_tls), with
//     the smallest and largest ratio of the repetitions paired by their
//     repetition number.
//
// With o.Columns (a varied key, or its last part) the table is pivoted:
// a row per combination of the other varied keys (a column each, with
// the experiment first when the points are of several; not a key each
// value of o.Columns fixes, the path scheduler of a transport.kind), then for each
// metric a column per value of o.Columns in the order the points give
// them ("lowrtt", or "METRIC VALUE" with several metrics); a cell no
// point fills is "–".
//
// The Markdown rounds a mean to three decimals below 0.1, two below 100,
// one below 1000 and none above, a pooled quantile to one decimal (ms); the CSV has
// every digit and each interval's ends.
func MetricsTable(points []*Point, o Options) (*Table, error) {
	if len(o.Metrics) == 0 {
		return nil, inputErr("--kind metrics: name the columns with --metric NAME (repeatable): a headline metric of runs.csv, S.pooled_mct_p99_ms, or A/B")
	}
	if o.Columns != "" {
		return pivotMetrics(points, o)
	}
	for _, m := range o.Metrics {
		if ratioMetric.MatchString(m) {
			return nil, inputErr("--metric %s: a ratio to another column needs --columns KEY", m)
		}
	}
	t := &Table{MD: [][]string{{"run", "runs"}}, CSV: [][]string{{"label", "runs"}}}
	for _, m := range o.Metrics {
		t.MD[0] = append(t.MD[0], m)
		t.CSV[0] = append(t.CSV[0], csvColumns(m)...)
	}
	for _, p := range points {
		md, cs := []string{p.Label, runsCell(p)}, []string{p.Label, strconv.Itoa(len(p.Runs))}
		for _, m := range o.Metrics {
			cell, csv, err := metricCell(p, m, o)
			if err != nil {
				return nil, err
			}
			md, cs = append(md, cell), append(cs, csv...)
		}
		t.MD, t.CSV = append(t.MD, md), append(t.CSV, cs)
	}
	return t, nil
}

// csvColumns are the CSV columns of a metric named name: the value, its
// interval's ends and the runs it is of.
func csvColumns(name string) []string {
	return []string{name, name + "_ci95_lo", name + "_ci95_hi", name + "_n"}
}

// metricCell is a metric at a point: its Markdown cell and its CSV
// columns (csvColumns).
func metricCell(p *Point, m string, o Options) (string, []string, error) {
	if base, ext, ok := strings.Cut(m, "@"); ok && (ext == "reps" || underExt.MatchString(ext)) {
		return repsCell(p, base, ext, o)
	}
	s, err := pointMetric(p, m, o)
	if err != nil {
		return "", nil, err
	}
	f := trafficgen.FormatCSV
	csv := func(used int) []string {
		return []string{f(float64(s.Mean)), f(float64(s.CI95[0])), f(float64(s.CI95[1])), strconv.Itoa(used)}
	}
	switch {
	case overMetric.MatchString(m):
		return strconv.Itoa(int(s.Mean)), csv(len(p.Runs)), nil
	case pooledMetric.MatchString(m):
		cell := FormatNumber(float64(s.Mean), 1)
		if !math.IsNaN(float64(s.CI95[0])) { // the largest and smallest have no interval, nor has nothing
			cell += " " + FormatInterval(float64(s.CI95[0]), float64(s.CI95[1]), 1)
		}
		return cell, csv(len(p.Runs)), nil
	}
	// Runs without the value (NaN: a path that never opened, 0/0) are
	// left out of the mean: say so.
	prec := precisionOf(float64(s.Mean))
	if base, _, _ := strings.Cut(m, "@"); (countFact.MatchString(base) || overMetric.MatchString(base)) && math.IsNaN(float64(s.CI95[0])) && float64(s.Mean) == math.Trunc(float64(s.Mean)) {
		prec = 0 // a whole count without an interval: one run's, or @max, @min, @median
	}
	cell := WithCI(s, prec)
	if s.N < len(p.Runs) {
		cell += fmt.Sprintf(" (%d of %d runs)", s.N, len(p.Runs))
	}
	return cell, csv(s.N), nil
}

// pivotMetrics is MetricsTable with o.Columns: the values of that key
// as columns (see MetricsTable).
func pivotMetrics(points []*Point, o Options) (*Table, error) {
	varied := append([]string{schedulerKey}, variedKeys(points)...)
	col := variedKey(points, o.Columns)
	if col == "" {
		return nil, inputErr("--columns %s: not a key the runs vary (they vary: %s)", o.Columns, strings.Join(variedKeys(points), ", "))
	}
	var rowKeys []string
	for _, k := range varied {
		if k != col && !slices.Contains(rowKeys, k) && differs(points, k) && !fixedBy(points, col, k) {
			rowKeys = append(rowKeys, k)
		}
	}
	several := false
	for _, p := range points {
		several = several || p.Name != points[0].Name
	}
	rowOf := func(p *Point) []string {
		var r []string
		if several {
			r = append(r, p.Name)
		}
		for _, k := range rowKeys {
			v := p.Value(k)
			if v == "" {
				v = notSet
			}
			r = append(r, v)
		}
		return r
	}
	var values []string
	var rows [][]string
	cells := map[string]*Point{} // by cellKey
	cellKey := func(row []string, v string) string { return strings.Join(row, "\x00") + "\x00\x00" + v }
	for _, p := range points {
		v, r := p.Value(col), rowOf(p)
		if !slices.Contains(values, v) {
			values = append(values, v)
		}
		if !slices.ContainsFunc(rows, func(x []string) bool { return slices.Equal(x, r) }) {
			rows = append(rows, r)
		}
		cells[cellKey(r, v)] = p
	}
	var head []string
	if several {
		head = append(head, "experiment")
	}
	for _, k := range rowKeys {
		head = append(head, shortKey(k))
	}
	t := &Table{MD: [][]string{append(slices.Clone(head), "runs")}, CSV: [][]string{append(slices.Clone(head), "runs")}}
	// A metric's columns: every value's, but NAME/[VALUE] has none for
	// VALUE itself, whose ratio to itself is 1.
	columnsOf := func(m string) []string {
		if rm := ratioMetric.FindStringSubmatch(m); rm != nil && slices.Contains(values, rm[2]) && len(values) > 1 {
			return slices.DeleteFunc(slices.Clone(values), func(v string) bool { return v == rm[2] })
		}
		return values
	}
	for _, m := range o.Metrics {
		for _, v := range columnsOf(m) {
			name := v
			if len(o.Metrics) > 1 {
				name = m + " " + v
			}
			t.MD[0] = append(t.MD[0], name)
			t.CSV[0] = append(t.CSV[0], csvColumns(m+"["+v+"]")...)
		}
	}
	for _, r := range rows {
		md, cs := slices.Clone(r), slices.Clone(r)
		var runs, nruns []string
		for _, v := range values {
			if p := cells[cellKey(r, v)]; p != nil {
				if c := runsCell(p); !slices.Contains(runs, c) {
					runs = append(runs, c)
				}
				if n := strconv.Itoa(len(p.Runs)); !slices.Contains(nruns, n) {
					nruns = append(nruns, n)
				}
			}
		}
		md, cs = append(md, strings.Join(runs, ", ")), append(cs, strings.Join(nruns, " "))
		for _, m := range o.Metrics {
			for _, v := range columnsOf(m) {
				p := cells[cellKey(r, v)]
				if p == nil {
					md, cs = append(md, "–"), append(cs, "", "", "", "0")
					continue
				}
				if rm := ratioMetric.FindStringSubmatch(m); rm != nil {
					if !slices.Contains(values, rm[2]) {
						return nil, inputErr("--metric %s: %s is not a value of %s (it has %s)", m, rm[2], col, strings.Join(values, ", "))
					}
					base := cells[cellKey(r, rm[2])]
					if base == nil {
						md, cs = append(md, "–"), append(cs, "", "", "", "0")
						continue
					}
					cell, csv, err := ratioCell(p, base, rm[1])
					if err != nil {
						return nil, err
					}
					md, cs = append(md, cell), append(cs, csv...)
					continue
				}
				cell, csv, err := metricCell(p, m, o)
				if err != nil {
					return nil, err
				}
				md, cs = append(md, cell), append(cs, csv...)
			}
		}
		t.MD, t.CSV = append(t.MD, md), append(t.CSV, cs)
	}
	return t, nil
}

// fixedBy says whether each value of the key col fixes the value of the
// key k (the path scheduler of a transport.kind: mpq's lowrtt, the
// baselines' their own name): then k splits no row of a pivoted table.
func fixedBy(points []*Point, col, k string) bool {
	seen := map[string]string{}
	for _, p := range points {
		c, v := p.Value(col), p.Value(k)
		if w, ok := seen[c]; ok && w != v {
			return false
		}
		seen[c] = v
	}
	return true
}

// pointMetric is one metric of MetricsTable at a grid point; a pooled
// quantile's interval is its order-statistic one (TailCI).
func pointMetric(p *Point, name string, o Options) (resultset.Summary, error) {
	if m := overMetric.FindStringSubmatch(name); m != nil {
		vals, err := pooledOf(p, name, m[1], m[2], m[4], m[5], o)
		if err != nil {
			return resultset.Summary{}, err
		}
		bound, _ := strconv.ParseFloat(m[3], 64)
		nan := resultset.Value(math.NaN())
		return resultset.Summary{Mean: resultset.Value(trafficgen.Beyond(vals, bound)), CI95: [2]resultset.Value{nan, nan}, N: len(vals)}, nil
	}
	if m := pooledMetric.FindStringSubmatch(name); m != nil {
		vals, err := pooledOf(p, name, m[1], m[2], m[5], m[6], o)
		if err != nil {
			return resultset.Summary{}, err
		}
		if m[4] != "" { // the largest (+Inf when a message failed) or the smallest, NaN without any
			nan := resultset.Value(math.NaN())
			v := math.NaN()
			if len(vals) > 0 {
				v = vals[len(vals)-1]
				if m[4] == "min" {
					v = vals[0]
				}
			}
			return resultset.Summary{Mean: resultset.Value(v), CI95: [2]resultset.Value{nan, nan}, N: len(vals)}, nil
		}
		q, _ := strconv.ParseFloat("0."+m[3], 64) // 0.50, 0.90, 0.99, 0.999
		tc := TailCI(vals, q)
		return resultset.Summary{Mean: resultset.Value(tc.Value), CI95: [2]resultset.Value{resultset.Value(tc.Lo), resultset.Value(tc.Hi)}, N: len(vals)}, nil
	}
	if base, ext, ok := strings.Cut(name, "@"); ok {
		if ext != "max" && ext != "min" && ext != "median" && ext != "sd" {
			return resultset.Summary{}, inputErr("--metric %s: @%s: want @max, @min, @median, @sd, @reps or @under_X", name, ext)
		}
		all, err := perRun(p, base, o)
		if err != nil {
			return resultset.Summary{}, err
		}
		var vals []float64
		for _, v := range all {
			if !math.IsNaN(v) {
				vals = append(vals, v)
			}
		}
		slices.Sort(vals)
		pick := math.NaN()
		switch n := len(vals); {
		case n == 0:
		case ext == "min":
			pick = vals[0]
		case ext == "max":
			pick = vals[n-1]
		case ext == "sd": // n - 1 in the denominator; none below two runs
			pick = float64(resultset.Summarise(vals).SD)
		default: // the middle value, or the mean of the two middle ones
			pick = (vals[(n-1)/2] + vals[n/2]) / 2
		}
		nan := resultset.Value(math.NaN())
		return resultset.Summary{Mean: resultset.Value(pick), CI95: [2]resultset.Value{nan, nan}, N: len(vals)}, nil
	}
	if a, b, ok := strings.Cut(name, "/"); ok {
		if err := knownMetric(p, a); err != nil {
			return resultset.Summary{}, err
		}
		if err := knownMetric(p, b); err != nil {
			return resultset.Summary{}, err
		}
		as, err := pointValues(p, a)
		if err != nil {
			return resultset.Summary{}, err
		}
		bs, err := pointValues(p, b)
		if err != nil {
			return resultset.Summary{}, err
		}
		var vals []float64
		for i := range as {
			vals = append(vals, as[i]/bs[i])
		}
		return resultset.Summarise(vals), nil
	}
	if err := knownMetric(p, name); err != nil {
		return resultset.Summary{}, err
	}
	vals, err := pointValues(p, name)
	if err != nil {
		return resultset.Summary{}, err
	}
	return resultset.Summarise(vals), nil
}

// pooledOf are the times of source src's messages of every repetition
// of the point, sorted (failed ones +Inf, last), for the metric name,
// which asks for times of kind ("mct" or "response"); with from (a
// duration, durationPattern; "" for none) only those of the messages
// created at or after it, with before only those created before it.
func pooledOf(p *Point, name, src, kind, from, before string, o Options) ([]float64, error) {
	o.Source = src
	fromMS, beforeMS := math.Inf(-1), math.Inf(1)
	if from != "" {
		fromMS = msOf(from)
	}
	if before != "" {
		beforeMS = msOf(before)
	}
	vals, s, err := pooledTimesWithin(p, o, fromMS, beforeMS)
	if err != nil {
		return nil, err
	}
	if want := strings.TrimSuffix(timeColumn(s.Kind), "_ms"); want != kind {
		return nil, inputErr("--metric %s: source %s's messages have a %s time, not %s (%s)", name, s.Name, want, kind, strings.Replace(name, "_"+kind+"_", "_"+want+"_", 1))
	}
	slices.Sort(vals)
	return vals, nil
}

// perRun is a metric of each run of the point alone, in the order of
// its runs (their repetitions', the order of their seeds): a headline
// metric or fact (pointValues), or a pooled metric (pooledMetric,
// overMetric) of the run's own messages; NaN where a run has none.
func perRun(p *Point, name string, o Options) ([]float64, error) {
	if !pooledMetric.MatchString(name) && !overMetric.MatchString(name) {
		if err := knownMetric(p, name); err != nil {
			return nil, err
		}
		return pointValues(p, name)
	}
	var vals []float64
	for _, r := range p.Runs {
		one := *p
		one.Runs = []*Run{r}
		s, err := pointMetric(&one, name, o)
		if err != nil {
			return nil, err
		}
		vals = append(vals, float64(s.Mean))
	}
	return vals, nil
}

// repsCell is the cell of NAME@reps or NAME@under_X (base being NAME,
// ext what follows the @): the runs' values in the order of their
// seeds, a late count without decimals, a pooled time with one, other
// metrics with the decimals of the largest (precisionOf), "–" for a
// run without one; or how many runs have a value below X, "k of n" of
// the n with a value. The CSV has the values, space-separated, or the
// count, and the runs counted.
func repsCell(p *Point, base, ext string, o Options) (string, []string, error) {
	vals, err := perRun(p, base, o)
	if err != nil {
		return "", nil, err
	}
	if m := underExt.FindStringSubmatch(ext); m != nil {
		bound, _ := strconv.ParseFloat(m[1], 64)
		k, n := 0, 0
		for _, v := range vals {
			if !math.IsNaN(v) {
				n++
				if v < bound {
					k++
				}
			}
		}
		return fmt.Sprintf("%d of %d", k, n), []string{strconv.Itoa(k), "", "", strconv.Itoa(n)}, nil
	}
	prec := 0
	switch {
	case overMetric.MatchString(base), countFact.MatchString(base):
	case pooledMetric.MatchString(base):
		prec = 1
	default:
		largest := 0.0
		for _, v := range vals {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				largest = math.Max(largest, math.Abs(v))
			}
		}
		prec = precisionOf(largest)
	}
	md, cs := make([]string, len(vals)), make([]string, len(vals))
	for i, v := range vals {
		md[i], cs[i] = FormatNumber(v, prec), trafficgen.FormatCSV(v)
	}
	return strings.Join(md, " "), []string{strings.Join(cs, " "), "", "", strconv.Itoa(len(vals))}, nil
}

// timeColumn is the messages.csv column a source's times come from.
func timeColumn(kind string) string {
	if trafficgen.HasReply(kind) {
		return "response_ms"
	}
	return "mct_ms"
}

// runMetric is a headline metric or a fact of one run (runfacts.go),
// NaN when it has none.
func runMetric(r *Run, name string) (float64, error) {
	for _, m := range r.metrics() {
		if m.Name == name {
			return m.Value, nil
		}
	}
	if v, ok, err := r.fileFact(name); ok {
		return v, err
	}
	return math.NaN(), nil
}

// pointValues are a headline metric or fact of each run of the point,
// in the order of its runs.
func pointValues(p *Point, name string) ([]float64, error) {
	var vals []float64
	for _, r := range p.Runs {
		v, err := runMetric(r, name)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	return vals, nil
}

// knownMetric says whether the point's first run has the headline
// metric or fact name (a fact of its other files, fileFacts, by the
// form of its name), and if not which it has.
func knownMetric(p *Point, name string) error {
	if isFileFact(name) {
		return nil
	}
	var names []string
	for _, m := range p.Runs[0].metrics() {
		if m.Name == name {
			return nil
		}
		names = append(names, m.Name)
	}
	return inputErr("--metric %s: no such metric in %s (it has %s, and S.pooled_mct_p99_ms or _response_ for a source S's pooled times, p50, p90, p99 or p999, and S.pooled_mct_over_Xms for those over X ms, each with _from_5s for the messages from 5 s on or _before_1s for those before 1 s; path.ID.server.sent_percent_from_Xs; path.ID.server.cwnd_mean_kb_from_Xs; path.ID.trace_down_capacity_mbps)",
		name, p.Runs[0].Dir, strings.Join(names, ", "))
}

// precisionOf is the decimals a Markdown cell gives a value: three below
// 0.1 (a jitter of 0.0077 is 0.008, not 0.01), two below 100, one below
// 1000, none above.
func precisionOf(v float64) int {
	switch a := math.Abs(v); {
	case a >= 1000:
		return 0
	case a >= 100:
		return 1
	case a < 0.1 && a > 0:
		return 3
	}
	return 2
}

// ratioCell is the cell of NAME/[VALUE] (name being NAME) at point p,
// base being the point of its row in the column VALUE: the ratio of
// their means, and the smallest and largest ratio of two runs of the
// same repetition number ("0.634 [0.618, 0.660]"; the ratio alone with
// fewer than two such pairs); in the CSV the ratio, those two and the
// number of pairs.
func ratioCell(p, base *Point, name string) (string, []string, error) {
	if err := knownMetric(p, name); err != nil {
		return "", nil, err
	}
	pv, err := pointValues(p, name)
	if err != nil {
		return "", nil, err
	}
	bv, err := pointValues(base, name)
	if err != nil {
		return "", nil, err
	}
	ratio := float64(resultset.Summarise(pv).Mean) / float64(resultset.Summarise(bv).Mean)
	var pairs []float64
	for i, r := range p.Runs {
		for j, b := range base.Runs {
			if b.Summary.Repetition == r.Summary.Repetition {
				pairs = append(pairs, pv[i]/bv[j])
			}
		}
	}
	f := trafficgen.FormatCSV
	lo, hi := math.NaN(), math.NaN()
	if len(pairs) > 0 {
		lo, hi = slices.Min(pairs), slices.Max(pairs)
	}
	csv := []string{f(ratio), f(lo), f(hi), strconv.Itoa(len(pairs))}
	cell := FormatNumber(ratio, 3)
	if len(pairs) >= 2 {
		cell += " " + FormatInterval(lo, hi, 3)
	}
	return cell, csv, nil
}
