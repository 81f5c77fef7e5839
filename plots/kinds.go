package plots

import (
	"slices"
	"strings"

	"github.com/mpq/mpq/experiment"
)

// The figures an experiment file's output.figures may name.
// The metrics table needs its columns (--metric), which a file's
// output.figures cannot give.
func init() {
	figures := slices.DeleteFunc(slices.Clone(Kinds), func(k string) bool { return k == "metrics" })
	experiment.RegisterFigures(figures, slices.Concat(Formats, TableFormats))
	experiment.RegisterOneRunFigures(oneRunKinds)
}

// oneRunKinds are the kinds that draw one run (oneRun).
var oneRunKinds = []string{"throughput-time", "cwnd", "timeline", "hystart"}

// Kinds are the figures, by name; tableOnly those that are a table only.
var Kinds = []string{"ccdf", "throughput", "throughput-time", "cwnd", "growth", "timeline", "ratio", "aggregation", "aggregation-summary", "robustness", "robustness-summary", "metrics", "hystart"}

var tableOnly = []string{"aggregation", "aggregation-summary", "robustness-summary", "metrics", "hystart"}

// sweepKinds take each sweep directory of an experiment as a sweep of
// its own, never pairing nor pooling runs across them (LoadSweeps).
var sweepKinds = []string{"ratio", "aggregation", "aggregation-summary"}

// LoadKind reads the runs below dirs for the figure kind: with
// LoadSweeps for the kinds that take each sweep directory apart, with
// Load for the others.
func LoadKind(kind string, dirs []string) ([]*Point, error) {
	if slices.Contains(sweepKinds, kind) {
		return LoadSweeps(dirs)
	}
	return Load(dirs)
}

// Draw draws the figure kind of the points.
func Draw(kind string, points []*Point, o Options) (*Figure, error) {
	if len(points) == 0 {
		return nil, inputErr("no runs to draw")
	}
	switch kind {
	case "ccdf":
		return CCDFFigure(points, o)
	case "throughput":
		return ThroughputFigure(points, o)
	case "throughput-time":
		return ThroughputTimeFigure(points, o)
	case "growth":
		return GrowthFigure(points, o)
	case "cwnd":
		return CwndFigure(points, o)
	case "timeline":
		return TimelineFigure(points, o)
	case "ratio":
		return RatioFigure(points, o)
	case "robustness":
		return RobustnessFigure(points, o)
	}
	if slices.Contains(tableOnly, kind) {
		return nil, inputErr("--kind %s is a table: write .md or .csv", kind)
	}
	return nil, inputErr("unknown kind %q (known: %s)", kind, strings.Join(Kinds, ", "))
}

// Tabulate gives the numbers behind the figure kind of the points.
func Tabulate(kind string, points []*Point, o Options) (*Table, error) {
	if len(points) == 0 {
		return nil, inputErr("no runs to tabulate")
	}
	switch kind {
	case "ccdf":
		return CCDFTable(points, o)
	case "throughput":
		return ThroughputTable(points, o)
	case "growth":
		return GrowthTable(points, o)
	case "ratio":
		return RatioTable(points, o)
	case "aggregation":
		return AggregationTable(points, o)
	case "aggregation-summary":
		return AggregationSummaryTable(points, o)
	case "robustness":
		return RobustnessTable(points, o)
	case "robustness-summary":
		return RobustnessSummaryTable(points, o)
	case "metrics":
		return MetricsTable(points, o)
	case "hystart":
		return HyStartTable(points, o)
	}
	if slices.Contains(Kinds, kind) {
		return nil, inputErr("--kind %s has no table: write a figure (%s)", kind, strings.Join(Formats, ", "))
	}
	return nil, inputErr("unknown kind %q (known: %s)", kind, strings.Join(Kinds, ", "))
}
