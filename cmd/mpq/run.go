package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/testbed/runner"
	"github.com/mpq/mpq/trafficgen"
)

// setFlags is the repeatable --set flag.
type setFlags []experiment.Override

func (s *setFlags) String() string { return "" }
func (s *setFlags) Set(v string) error {
	o, err := experiment.ParseOverride(v)
	if err != nil {
		return err
	}
	*s = append(*s, o)
	return nil
}

// runRun runs an experiment file: one run, or a sweep.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	out := fs.String("out", "results", "write results under `DIR`/<name>/<run>")
	backend := fs.String("backend", "", "run on `BACKEND` (sim, loopback), overriding the file")
	parallel := fs.Int("parallel", runtime.NumCPU(), "simulated runs at once (loopback runs one at a time)")
	repeat := fs.Int("repeat", 0, "run every grid point `N` times, with seeds derived from the file's seed (overrides the file's repeat)")
	var sets setFlags
	fs.Var(&sets, "set", "override a `key=value` of the file (repeatable), e.g. --set transport.path_scheduler=cwr")
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mpq run FILE [flags]\n\nRuns the experiment (or the sweep) in FILE and writes each run's results\n(config.resolved.toml, summary.json, messages.csv, paths.csv,\nthroughput.csv) into its own directory.\n\nflags:")
		fs.PrintDefaults()
	}
	// Flags may come before and after FILE.
	pos, code := parseArgs(fs, args, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		fs.Usage()
		return exitUsage
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "mpq run: one experiment FILE expected, got %d arguments: %s\n", len(pos), strings.Join(pos, " "))
		return exitUsage
	}
	file := pos[0]
	if *backend != "" {
		sets = append(sets, experiment.Override{Key: "backend", Value: *backend, Origin: "--backend"})
	}
	if *repeat < 0 {
		fmt.Fprintf(stderr, "mpq run: --repeat %d: want a number of repetitions, at least 1\n", *repeat)
		return exitUsage
	}
	if *repeat > 0 {
		sets = append(sets, experiment.Override{Key: "repeat", Value: int64(*repeat), Origin: "--repeat"})
	}
	runs, err := experiment.Load(file, sets)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	if *parallel < 1 {
		*parallel = 1
	}
	workers := *parallel
	for _, r := range runs {
		if r.Backend != experiment.BackendSim {
			workers = 1 // real time: runs must not disturb each other
		}
	}
	base := filepath.Join(*out, sanitize(runs[0].Name))
	if err := os.MkdirAll(base, 0o755); err != nil {
		fmt.Fprintf(stderr, "mpq run: %v\n", err)
		return 1
	}
	type job struct {
		i   int
		run *experiment.Experiment
	}
	jobs := make(chan job)
	var mu sync.Mutex
	done, failed := 0, 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				dir := filepath.Join(base, runName(j.run))
				res, err := runOne(ctx, j.run, dir)
				mu.Lock()
				done++
				if err != nil {
					failed++
					if ctx.Err() == nil {
						fmt.Fprintf(stderr, "[%d/%d] %s: failed: %v\n", done, len(runs), dir, err)
					}
				} else {
					fmt.Fprintf(stderr, "[%d/%d] %s (%.1fs)\n", done, len(runs), dir, res.Wall.Seconds())
					fmt.Fprintln(stdout, oneLine(dir, res.Summary))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range runs {
		select {
		case jobs <- job{i, &runs[i]}:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "mpq run: interrupted; %d of %d runs finished and kept\n", done-failed, len(runs))
		return 130
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// runOne runs an experiment into a temporary directory and renames it to
// dir once complete, so that dir never holds a partial run.
func runOne(ctx context.Context, e *experiment.Experiment, dir string) (*runner.Result, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, err
	}
	res, err := runner.Run(ctx, e, tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	// A previous run of the same name is replaced.
	if err := os.RemoveAll(dir); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return res, nil
}

// runName names a run's directory: after the values its grid point
// varies, or "run"; with repetitions, a directory per repetition inside,
// rep0, rep1, … (zero-padded to the same width).
func runName(e *experiment.Experiment) string {
	name := "run"
	if len(e.Vary) > 0 {
		name = sanitize(strings.Join(e.Vary, ","))
	}
	if e.Repeat > 1 {
		width := len(strconv.Itoa(e.Repeat - 1))
		name = filepath.Join(name, fmt.Sprintf("rep%0*d", width, e.Repetition))
	}
	return name
}

// sanitize keeps a name usable as a directory name.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-_.=,+%", r):
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	if b.Len() == 0 {
		return "experiment"
	}
	return b.String()
}

// oneLine is the line printed per finished run: each source's headline
// metric (periodic: message completion time; request-response and
// frames: response time; file: completion time; stop-and-wait:
// completion ratio and time; bulk: goodput), with the messages completed
// of those generated, and each end's throughput.
func oneLine(dir string, s *trafficgen.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s/%s", dir, s.PathScheduler, s.StreamScheduler)
	for _, src := range s.Sources {
		b.WriteString("  ")
		b.WriteString(headline(src))
	}
	fmt.Fprintf(&b, "  throughput server %.1f client %.1f Mbit/s", s.ThroughputMbps.Server.Total, s.ThroughputMbps.Client.Total)
	return b.String()
}

// headline is a source's headline metric for the console.
func headline(src trafficgen.SourceSummary) string {
	done := fmt.Sprintf("(%d/%d)", src.Completed, src.Messages)
	dist := func(what string, d *trafficgen.Dist, hi string) string {
		if d == nil {
			return fmt.Sprintf("%s %s none %s", src.Name, what, done)
		}
		top := d.P99
		if hi == "max" {
			top = d.Max
		}
		return fmt.Sprintf("%s %s p50 %s %s %s %s", src.Name, what, fmtMS(d.P50), hi, fmtMS(top), done)
	}
	switch src.Kind {
	case experiment.KindPeriodic:
		return dist("mct", src.MCTMS, "p99")
	case experiment.KindRequestResponse, experiment.KindFrames:
		return dist("response", src.ResponseMS, "p99")
	case experiment.KindFile:
		return dist("completion", src.ResponseMS, "max")
	case experiment.KindStopAndWait:
		ratio, t := 0.0, trafficgen.Inf
		if src.CompletionRatio != nil {
			ratio = *src.CompletionRatio
		}
		if src.CompletionTimeMS != nil {
			t = *src.CompletionTimeMS
		}
		return fmt.Sprintf("%s completion ratio %.3f time %s %s", src.Name, ratio, fmtMS(t), done)
	}
	return fmt.Sprintf("%s goodput %.1f Mbit/s", src.Name, src.GoodputMbps)
}

// fmtMS formats a time in milliseconds for the console.
func fmtMS(m trafficgen.Millis) string {
	f := float64(m)
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsNaN(f):
		return "n/a"
	}
	return fmt.Sprintf("%.1fms", f)
}
