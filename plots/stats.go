package plots

import (
	"fmt"
	"math"

	"github.com/mpq/mpq/resultset"
)

// metric summarises a headline metric of mpq aggregate (resultset.Headline)
// over the point's repetitions: mean and 95 % Student-t confidence
// interval, as aggregate.csv has them.
func metric(p *Point, name string) resultset.Summary {
	var vals []float64
	for _, r := range p.Runs {
		v := math.NaN()
		for _, m := range r.metrics() {
			if m.Name == name {
				v = m.Value
			}
		}
		vals = append(vals, v)
	}
	return resultset.Summarise(vals)
}

// Metric summarises a headline metric (resultset.Headline's names, e.g.
// "s1.mct_p99_ms") over the point's repetitions: its mean, standard
// deviation and 95 % Student-t confidence interval.
func Metric(p *Point, name string) resultset.Summary { return metric(p, name) }

// WithCI formats a mean with the half width of its confidence interval,
// "26.1 ± 0.3", or the mean alone without an interval (one run).
func WithCI(s resultset.Summary, prec int) string {
	m := float64(s.Mean)
	lo, hi := float64(s.CI95[0]), float64(s.CI95[1])
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(m, 0) {
		return FormatNumber(m, prec)
	}
	return fmt.Sprintf("%s ± %s", FormatNumber(m, prec), FormatNumber((hi-lo)/2, prec))
}
