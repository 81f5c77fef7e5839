// Package agreement states how closely two emulators of the same
// experiment must agree (issue 18's bounds, EXPERIMENTS.md "Validation on
// real kernels"): over the repetitions of an experiment, the mean of the
// runs' median completion time of a priority source within 10 % + 2 ms,
// the mean of their 99th percentiles within 25 % + 5 ms, and the mean
// goodput of a bulk source within 10 %, each relative to the reference
// emulator (the simulator).
package agreement

import (
	"errors"
	"fmt"
	"math"

	"github.com/mpq/mpq/resultset"
)

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
	All = P50 | P99 | Goodput
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
	return out
}

// FromRuns reads the summaries of the run directories dirs and returns
// the means of the priority source's MCT p50 and p99 and of the bulk
// source's goodput. A run without the source, or whose priority messages
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
	n := float64(p.Runs)
	p.P50MS /= n
	p.P99MS /= n
	p.GoodputMbps /= n
	return p, nil
}
