// Package agreement states how closely two emulators of the same
// experiment must agree (issue 18's bounds, docs/results/validation.md "Validation on
// real kernels"): over the repetitions of an experiment, the mean of the
// runs' median completion time of a priority source within 10 % + 2 ms,
// the mean of their 99th percentiles within 25 % + 5 ms (or, PooledP99,
// the 99th percentile of the messages pooled over the repetitions), and
// the mean goodput of a bulk source within 10 %, each relative to the
// reference emulator (the simulator).
package agreement

import (
	"errors"
	"fmt"
	"math"

	"os"
	"path/filepath"
	"sort"

	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/trafficgen"
)

// MinPooledP99 is the fewest pooled messages whose p99 has a bounded 95 %
// confidence interval (trafficgen.QuantileCI: 0.99^n ≤ 0.025 from n =
// 368 on). A run's own p99 of fewer messages is its largest one or two,
// and whether a random loss met one of them decides it.
const MinPooledP99 = 368

// Point is what one emulator measured of an experiment: means over its
// repetitions.
type Point struct {
	// Runs counts the repetitions.
	Runs int
	// P50MS and P99MS are the means of the runs' median and 99th
	// percentile completion times of the priority source (ms).
	P50MS, P99MS float64
	// GoodputMbps is the mean goodput of the bulk source (Mbit/s).
	GoodputMbps float64
	// PooledN counts the priority source's completion times pooled over
	// the repetitions (from their messages.csv; 0 without them), and
	// PooledP99MS is their nearest-rank 99th percentile with its 95 %
	// order-statistic confidence interval PooledP99CI (ms; the upper end
	// +Inf with fewer than MinPooledP99 messages).
	PooledN     int
	PooledP99MS float64
	PooledP99CI [2]float64
}

// Bounds are the tolerances of an agreement: a value agrees with the
// reference's if it differs by at most Rel times the reference plus Abs.
type Bounds struct {
	P50Rel, P50AbsMS float64
	P99Rel, P99AbsMS float64
	GoodputRel       float64
}

// Default are issue 18's bounds.
var Default = Bounds{P50Rel: 0.10, P50AbsMS: 2, P99Rel: 0.25, P99AbsMS: 5, GoodputRel: 0.10}

// Metrics names what Check compares.
type Metrics uint8

// The metrics.
const (
	P50 Metrics = 1 << iota
	P99
	Goodput
	// PooledP99 compares the pooled p99s with P99's bounds, and fails
	// when either point pooled fewer than MinPooledP99 messages.
	PooledP99
	All = P50 | P99 | Goodput | PooledP99
)

// Check returns a sentence for each metric of which among which got does
// not agree with ref, none if they agree.
func (b Bounds) Check(ref, got Point, which Metrics) []string {
	var out []string
	check := func(m Metrics, name, unit string, r, g, rel, abs float64) {
		if which&m == 0 {
			return
		}
		tol := rel*r + abs
		if d := math.Abs(g - r); !(d <= tol+1e-9) { // rounding does not decide
			out = append(out, fmt.Sprintf("%s %.2f %s against %.2f %s: off by %.2f, more than %.0f %% + %g (%.2f)",
				name, g, unit, r, unit, d, rel*100, abs, tol))
		}
	}
	check(P50, "mean p50", "ms", ref.P50MS, got.P50MS, b.P50Rel, b.P50AbsMS)
	check(P99, "mean p99", "ms", ref.P99MS, got.P99MS, b.P99Rel, b.P99AbsMS)
	check(Goodput, "mean goodput", "Mbit/s", ref.GoodputMbps, got.GoodputMbps, b.GoodputRel, 0)
	if which&PooledP99 != 0 {
		if n := min(ref.PooledN, got.PooledN); n < MinPooledP99 {
			out = append(out, fmt.Sprintf("pooled p99 of %d and %d messages: fewer than %d do not bound it", ref.PooledN, got.PooledN, MinPooledP99))
		} else {
			check(PooledP99, "pooled p99", "ms", ref.PooledP99MS, got.PooledP99MS, b.P99Rel, b.P99AbsMS)
		}
	}
	return out
}

// FromRuns reads the summaries of the run directories dirs and returns
// the means of the priority source's MCT p50 and p99 and of the bulk
// source's goodput, and the pooled p99 of the priority source's messages
// when every run has its messages.csv. A run without the source, or whose priority messages
// did not all complete (a p50 or p99 of +Inf), is an error: a mean of
// such runs would hide them.
func FromRuns(dirs []string, priority, bulk string) (Point, error) {
	var p Point
	if len(dirs) == 0 {
		return p, errors.New("no runs")
	}
	for _, d := range dirs {
		s, err := resultset.ReadRun(d)
		if err != nil {
			return p, err
		}
		var gotP, gotB bool
		for _, src := range s.Sources {
			switch src.Name {
			case priority:
				if src.MCTMS == nil {
					return p, fmt.Errorf("%s: source %q has no completion times", d, priority)
				}
				p50, p99 := float64(src.MCTMS.P50), float64(src.MCTMS.P99)
				if math.IsInf(p50, 0) || math.IsInf(p99, 0) || math.IsNaN(p50) || math.IsNaN(p99) {
					return p, fmt.Errorf("%s: source %q: p50 %v, p99 %v (messages that did not complete)", d, priority, p50, p99)
				}
				p.P50MS += p50
				p.P99MS += p99
				gotP = true
			case bulk:
				p.GoodputMbps += src.GoodputMbps
				gotB = true
			}
		}
		if !gotP || !gotB {
			return p, fmt.Errorf("%s: no source %q or %q", d, priority, bulk)
		}
		p.Runs++
	}
	if err := p.pool(dirs, priority); err != nil {
		return p, err
	}
	n := float64(p.Runs)
	p.P50MS /= n
	p.P99MS /= n
	p.GoodputMbps /= n
	return p, nil
}

// pool pools the completion times of source over the runs dirs (their
// messages.csv, warm-up left out) into p's pooled p99. Runs without
// messages.csv leave it empty; some with and some without is an error.
func (p *Point) pool(dirs []string, source string) error {
	var times []float64
	have := 0
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "messages.csv")); errors.Is(err, os.ErrNotExist) {
			continue
		}
		have++
		got, err := resultset.ReadMessageTimes(d, "mct_ms")
		if err != nil {
			return err
		}
		// A file cut short would pool fewer messages than the run had.
		s, err := resultset.ReadRun(d)
		if err != nil {
			return err
		}
		rows := map[string]int{}
		for name, st := range got {
			rows[name] = len(st.Times) + st.Warmup
		}
		if err := resultset.CheckMessageRows(d, s, rows); err != nil {
			return err
		}
		if st := got[source]; st != nil {
			times = append(times, st.Times...)
		}
	}
	if have == 0 {
		return nil
	}
	if have != len(dirs) {
		return fmt.Errorf("%d of %d runs have a messages.csv: a pooled p99 of some of them would hide the others", have, len(dirs))
	}
	sort.Float64s(times)
	p.PooledN = len(times)
	p.PooledP99MS = trafficgen.NearestRank(times, 0.99)
	lo, hi, _, _ := trafficgen.QuantileCI(times, 0.99, 0.95)
	p.PooledP99CI = [2]float64{lo, hi}
	return nil
}
