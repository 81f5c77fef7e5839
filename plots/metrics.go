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
// mct or response and Q 50, 99 or 999.
var pooledMetric = regexp.MustCompile(`^(.+)\.pooled_(mct|response)_p(50|90|99|999)_ms$`)

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
//     the messages of every repetition, failed ones +Inf;
//   - A/B, two headline metrics: their ratio in each run, then its mean
//     ± half its interval (a connection's goodput over a competitor's).
//
// The Markdown rounds a cell to two decimals below 100, one below 1000
// and none above; the CSV has every digit and each interval's ends.
func MetricsTable(points []*Point, o Options) (*Table, error) {
	if len(o.Metrics) == 0 {
		return nil, inputErr("--kind metrics: name the columns with --metric NAME (repeatable): a headline metric of runs.csv, S.pooled_mct_p99_ms, or A/B")
	}
	t := &Table{MD: [][]string{{"run", "runs"}}, CSV: [][]string{{"label", "runs"}}}
	for _, m := range o.Metrics {
		t.MD[0] = append(t.MD[0], m)
		t.CSV[0] = append(t.CSV[0], m, m+"_ci95_lo", m+"_ci95_hi", m+"_n")
	}
	for _, p := range points {
		n := strconv.Itoa(len(p.Runs))
		md, cs := []string{p.Label, runsCell(p)}, []string{p.Label, n}
		for _, m := range o.Metrics {
			s, err := pointMetric(p, m, o)
			if err != nil {
				return nil, err
			}
			cell, used := WithCI(s, precisionOf(float64(s.Mean))), len(p.Runs)
			if !pooledMetric.MatchString(m) {
				// Runs without the value (NaN: a path that never
				// opened, 0/0) are left out of the mean: say so.
				used = s.N
				if s.N < len(p.Runs) {
					cell += fmt.Sprintf(" (%d of %d runs)", s.N, len(p.Runs))
				}
			}
			md = append(md, cell)
			f := trafficgen.FormatCSV
			cs = append(cs, f(float64(s.Mean)), f(float64(s.CI95[0])), f(float64(s.CI95[1])), strconv.Itoa(used))
		}
		t.MD, t.CSV = append(t.MD, md), append(t.CSV, cs)
	}
	return t, nil
}

// pointMetric is one metric of MetricsTable at a grid point; a pooled
// quantile has no interval.
func pointMetric(p *Point, name string, o Options) (resultset.Summary, error) {
	if m := pooledMetric.FindStringSubmatch(name); m != nil {
		o.Source = m[1]
		vals, src, err := PooledTimes(p, o)
		if err != nil {
			return resultset.Summary{}, err
		}
		if want := strings.TrimSuffix(timeColumn(src.Kind), "_ms"); want != m[2] {
			return resultset.Summary{}, inputErr("--metric %s: source %s's messages have a %s time, not %s (%s.pooled_%s_p%s_ms)", name, src.Name, want, m[2], src.Name, want, m[3])
		}
		slices.Sort(vals)
		q, _ := strconv.ParseFloat("0."+m[3], 64) // 0.50, 0.90, 0.99, 0.999
		nan := resultset.Value(math.NaN())
		return resultset.Summary{Mean: resultset.Value(trafficgen.NearestRank(vals, q)), CI95: [2]resultset.Value{nan, nan}}, nil
	}
	if a, b, ok := strings.Cut(name, "/"); ok {
		if err := knownMetric(p, a); err != nil {
			return resultset.Summary{}, err
		}
		if err := knownMetric(p, b); err != nil {
			return resultset.Summary{}, err
		}
		var vals []float64
		for _, r := range p.Runs {
			vals = append(vals, runMetric(r, a)/runMetric(r, b))
		}
		return resultset.Summarise(vals), nil
	}
	if err := knownMetric(p, name); err != nil {
		return resultset.Summary{}, err
	}
	return metric(p, name), nil
}

// timeColumn is the messages.csv column a source's times come from.
func timeColumn(kind string) string {
	if trafficgen.HasReply(kind) {
		return "response_ms"
	}
	return "mct_ms"
}

// runMetric is a headline metric of one run, NaN when it has none.
func runMetric(r *Run, name string) float64 {
	for _, m := range resultset.Headline(r.Summary) {
		if m.Name == name {
			return m.Value
		}
	}
	return math.NaN()
}

// knownMetric says whether the point's first run has the headline
// metric name, and if not which it has.
func knownMetric(p *Point, name string) error {
	var names []string
	for _, m := range resultset.Headline(p.Runs[0].Summary) {
		if m.Name == name {
			return nil
		}
		names = append(names, m.Name)
	}
	return inputErr("--metric %s: no such metric in %s (it has %s, and S.pooled_mct_p99_ms or _response_ for a source S's pooled times, p50, p90, p99 or p999)",
		name, p.Runs[0].Dir, strings.Join(names, ", "))
}

// precisionOf is the decimals a Markdown cell gives a value: two below
// 100, one below 1000, none above.
func precisionOf(v float64) int {
	switch a := math.Abs(v); {
	case a >= 1000:
		return 0
	case a >= 100:
		return 1
	}
	return 2
}
