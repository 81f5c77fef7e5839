package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mpq/mpq/plots"
)

// plotOptions are plot's flags.
type plotOptions struct {
	out, kind, source, title, vantage, columns string
	labels, where, metrics, by                 setFlags
	from, to                                   time.Duration
}

// setupPlot registers plot's flags; the command draws a figure (or
// writes the table behind it) from results directories.
func setupPlot(fs *flag.FlagSet) runFunc {
	var o plotOptions
	fs.StringVar(&o.out, "o", "", "write the figure to `FILE`: .pdf, .svg or .png; or its numbers to .md or .csv (required)")
	fs.StringVar(&o.kind, "kind", "ccdf", "the figure: `KIND` ("+strings.Join(plots.Kinds, ", ")+")")
	fs.StringVar(&o.source, "source", "", "the source whose messages are shown, by `NAME` (default: the first priority source)")
	fs.Var(&o.labels, "label", "name the runs by the values of `KEY` (repeatable; default: the keys whose values differ)")
	fs.Var(&o.where, "where", "keep only the runs whose varied KEY has VALUE, `KEY=VALUE` (repeatable; KEY=A,B: either value); path_scheduler=NAME, and repetition=N for one repetition")
	fs.StringVar(&o.title, "title", "", "a title above the figure, `TEXT` (default none: papers put it in the caption)")
	o.from, o.to = -1, -1
	fs.Var((*unsetDuration)(&o.from), "from", "start of the time window (cwnd, timeline, hystart) at `DURATION`, e.g. 10s (default: the run's start; timeline: around its slowest message)")
	fs.Var((*unsetDuration)(&o.to), "to", "end of the time window (cwnd, timeline, hystart) at `DURATION`, e.g. 12.5s (default: the run's end; timeline: around its slowest message)")
	fs.Var(&o.metrics, "metric", "metrics: a column, `NAME` (repeatable): a headline metric of runs.csv (mean ± half its 95 % interval), S.pooled_mct_p99_ms (a source's pooled quantile) or A/B (their ratio per run)")
	fs.StringVar(&o.columns, "columns", "", "metrics: a column per value of the varied `KEY` (path_scheduler, s1.size, ...) for each metric, a row per combination of the other varied values; robustness-summary: a column per value, the points meeting the goal at >= 95 % of lowrtt's goodput of those there")
	fs.Var(&o.by, "by", "robustness-summary: a line per scheduler and value of the varied `KEY` (repeatable), counting over the other varied keys' points")
	fs.StringVar(&o.vantage, "vantage", "", "cwnd, hystart: the connection `END` whose paths are shown, server or client (default: the source's sender)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return runPlot(&o, args, stdout, stderr)
	}
}

// runPlot draws the figure of the results directories args.
func runPlot(o *plotOptions, args []string, stdout, stderr io.Writer) int {
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mpq plot: "+format+"\n%s\n", append(a, synopsis("plot"))...)
		return exitUsage
	}
	if len(args) == 0 {
		return usageErr("no RESULTS_DIR given")
	}
	if o.out == "" {
		return usageErr("no output file: -o FILE.{pdf,svg,png,md,csv}")
	}
	format := plots.FormatOf(o.out)
	table := slices.Contains(plots.TableFormats, format)
	if !table && !slices.Contains(plots.Formats, format) {
		return usageErr("-o %s: unknown format %q (want .pdf, .svg, .png for a figure, .md or .csv for its numbers)", o.out, format)
	}
	if !slices.Contains(plots.Kinds, o.kind) {
		return usageErr("--kind %s: unknown (known: %s)", o.kind, strings.Join(plots.Kinds, ", "))
	}
	opts := plots.DefaultOptions()
	opts.Source, opts.Title, opts.Vantage = o.source, o.title, o.vantage
	opts.Metrics, opts.Columns, opts.By = o.metrics, o.columns, o.by
	if len(o.metrics) > 0 && o.kind != "metrics" {
		return usageErr("--metric is for --kind metrics, not %s", o.kind)
	}
	if o.columns != "" && o.kind != "metrics" && o.kind != "robustness-summary" {
		return usageErr("--columns is for --kind metrics or robustness-summary, not %s", o.kind)
	}
	if len(o.by) > 0 && o.kind != "robustness-summary" {
		return usageErr("--by is for --kind robustness-summary, not %s", o.kind)
	}
	if o.from >= 0 {
		opts.From = float64(o.from) / 1e6
	}
	if o.to >= 0 {
		opts.To = float64(o.to) / 1e6
	}
	if !math.IsNaN(opts.From) && !math.IsNaN(opts.To) && opts.To <= opts.From {
		return usageErr("--from %v --to %v: an empty window", o.from, o.to)
	}
	runs, points, err := drawPlot(args, o.kind, o.out, opts, o.where, o.labels)
	if err != nil {
		printErr(stderr, "plot", err)
		var ie *plots.InputError
		if errors.As(err, &ie) {
			return exitUsage
		}
		return exitFailure
	}
	fmt.Fprintf(stdout, "%s: %s of %s (%s)\n", o.out, o.kind, plural(runs, "run"), plural(points, "grid point"))
	return 0
}

// drawPlot draws the figure kind of the results directories dirs into the
// file out, or writes its table when out is a table format; it returns
// how many runs and grid points it shows.
func drawPlot(dirs []string, kind, out string, opts plots.Options, where, labels setFlags) (runs, npoints int, err error) {
	points, err := plots.LoadKind(kind, dirs)
	if err == nil {
		points, err = plots.Filter(points, where)
	}
	if err == nil {
		err = plots.SetLabels(points, labels)
	}
	if err != nil {
		return 0, 0, err
	}
	if slices.Contains(plots.TableFormats, plots.FormatOf(out)) {
		var t *plots.Table
		if t, err = plots.Tabulate(kind, points, opts); err == nil {
			err = t.Save(out)
		}
	} else {
		var f *plots.Figure
		if f, err = plots.Draw(kind, points, opts); err == nil {
			err = f.Save(out)
		}
	}
	return plots.CountRuns(points), len(points), err
}

// An unsetDuration is a duration flag whose negative value means "not
// given": its help shows no default (flag prints "(default -1ns)" for a
// DurationVar defaulting to -1).
type unsetDuration time.Duration

func (d *unsetDuration) String() string {
	if d == nil || *d <= 0 {
		return "" // flag compares a new value's String with the default's
	}
	return time.Duration(*d).String()
}

func (d *unsetDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("negative duration %v", v)
	}
	*d = unsetDuration(v)
	return nil
}

// plural says n things: "1 run", "3 runs".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
