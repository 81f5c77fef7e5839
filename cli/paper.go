package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/mpq/mpq/plots"
	"github.com/mpq/mpq/plots/paper"
)

// paperOptions are paper's flags.
type paperOptions struct {
	out, figures, doc, experiments string
	parallel, repeat               int
	resume, plotsOnly              bool
	sets                           setFlags
}

// setupPaper registers paper's flags; the command regenerates every
// figure and table of docs/results/reference-paper.md.
func setupPaper(fs *flag.FlagSet) runFunc {
	var o paperOptions
	fs.StringVar(&o.out, "out", filepath.Join("results", "paper"), "write the runs under `DIR`/<experiment> and the PDF figures under DIR/figures")
	fs.StringVar(&o.figures, "figures", filepath.Join("docs", "figures"), "write the PNG figures into `DIR`")
	fs.StringVar(&o.doc, "doc", filepath.Join("docs", "results", "reference-paper.md"), "replace the marked tables in `FILE` (\"\" for none)")
	fs.StringVar(&o.experiments, "experiments", "experiments", "read the paper's experiment files from `DIR`")
	fs.IntVar(&o.parallel, "parallel", runtime.NumCPU(), "simulated runs at `N` at once")
	fs.IntVar(&o.repeat, "repeat", 0, "run every grid point `N` times (default: as the files say, 10)")
	fs.Var(&o.sets, "set", "override a `key=value` of every file (repeatable), e.g. --set duration=10s for a quick look")
	fs.BoolVar(&o.resume, "resume", false, "keep the runs already complete (mpq run --resume) instead of starting from nothing")
	fs.BoolVar(&o.plotsOnly, "plots-only", false, "run nothing: draw the figures and tables from the results under --out")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		if !noArgs("paper", args, stderr) {
			return exitUsage
		}
		return runPaper(ctx, &o, stdout, stderr)
	}
}

// runPaper runs the paper's experiments, then draws the figures and
// writes the tables.
func runPaper(ctx context.Context, o *paperOptions, stdout, stderr io.Writer) int {
	start := time.Now()
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "mpq paper: "+format+"\n", a...) }
	if !o.plotsOnly {
		// Every file loads before anything runs.
		for _, e := range paper.Experiments {
			file := filepath.Join(o.experiments, e.File)
			if _, probs := loadRuns(file, o.sets, nil, "", o.repeat); len(probs) > 0 {
				for _, p := range probs {
					fmt.Fprintln(stderr, p)
				}
				return exitUsage
			}
		}
		for i, e := range paper.Experiments {
			file := filepath.Join(o.experiments, e.File)
			dir := filepath.Join(o.out, e.Name)
			if !o.resume {
				// From nothing: the runs of an earlier invocation (perhaps
				// with other repetitions) must not mix with these.
				if err := os.RemoveAll(dir); err != nil {
					logf("%v", err)
					return exitFailure
				}
			}
			logf("[%d/%d] %s into %s (%s)", i+1, len(paper.Experiments), file, dir, time.Since(start).Round(time.Second))
			ro := &runOptions{out: o.out, parallel: o.parallel, repeat: o.repeat, resume: o.resume, sets: o.sets}
			if code := runRun(ctx, ro, []string{file}, io.Discard, stderr); code != 0 {
				return code
			}
		}
	}
	if fi, err := os.Stat(o.out); err != nil || !fi.IsDir() {
		// Before making any directory: nothing to draw from.
		logf("%s: no such directory of results (mpq paper without --plots-only runs the experiments)", o.out)
		return exitUsage
	}
	pdfs := filepath.Join(o.out, "figures")
	for _, d := range []string{o.figures, pdfs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			logf("%v", err)
			return exitFailure
		}
	}
	logf("figures and tables (%s)", time.Since(start).Round(time.Second))
	blocks, err := paper.Generate(paper.Output{Results: o.out, PNG: o.figures, PDF: pdfs, Log: stdout})
	if err != nil {
		logf("%v", err)
		var ie *plots.InputError
		if errors.As(err, &ie) {
			return exitUsage
		}
		return exitFailure
	}
	if o.doc != "" {
		if err := paper.UpdateFile(o.doc, blocks); err != nil {
			logf("%v", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "mpq paper: %s: %d tables replaced\n", o.doc, len(blocks))
	}
	logf("done in %s", time.Since(start).Round(time.Second))
	return 0
}
