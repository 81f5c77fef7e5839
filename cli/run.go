package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/network/netns"
	"github.com/mpq/mpq/plots"
	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/runner"
	"github.com/mpq/mpq/trafficgen"
)

// setFlags is the repeatable --set flag. It keeps every value as given:
// runRun parses them all and reports every bad one at once.
type setFlags []string

func (s *setFlags) String() string { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// setupRun registers run's flags; the command runs an experiment file:
// one run, or a sweep.
func setupRun(fs *flag.FlagSet) runFunc {
	var o runOptions
	fs.StringVar(&o.out, "out", "results", "write results under `DIR`/<name>/<run>")
	fs.StringVar(&o.backend, "backend", "", "run on `NAME` ("+strings.Join(experiment.Backends(), ", ")+"), overriding the file")
	fs.IntVar(&o.parallel, "parallel", runtime.NumCPU(), "simulated runs at `N` at once (real-time backends run one at a time)")
	fs.Var(&o.sets, "set", "override a `key=value` of the file (repeatable), e.g. --set transport.path_scheduler=cwr")
	fs.Var(&o.sweeps, "sweep", "sweep `key=v1,v2,...` as a [sweep] entry would (repeatable: a grid), e.g. --sweep transport.congestion=newreno,cubic,bbr")
	fs.IntVar(&o.repeat, "repeat", 0, "run every grid point `N` times, with seeds derived from the file's seed (overrides the file's repeat)")
	fs.BoolVar(&o.resume, "resume", false, "keep the runs whose directory is complete for the same resolved configuration; run the rest")
	fs.StringVar(&o.shard, "shard", "", "run only the `K/N`-th of N slices of the runs (every N-th from the K-th), to merge with mpq aggregate")
	o.roles.register(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		fs.Visit(func(f *flag.Flag) {
			o.repeatSet = o.repeatSet || f.Name == "repeat"
		})
		return runRun(ctx, &o, args, stdout, stderr)
	}
}

// runOptions are run's flags.
type runOptions struct {
	out, backend string
	parallel     int
	repeat       int
	repeatSet    bool // --repeat was given (0 is then an error, not the default)
	resume       bool
	shard        string
	sets         setFlags
	sweeps       setFlags
	roles        roleOptions
}

// runRun runs the experiment files named by args, one after the other.
// Every file is checked before any runs: a problem in any of them is
// exit status 2 with nothing run.
func runRun(ctx context.Context, o *runOptions, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "mpq run: no experiment FILE given")
		fmt.Fprintln(stderr, synopsis("run"))
		return exitUsage
	}
	if len(args) == 1 {
		return runOneFile(ctx, o, args[0], nil, stdout, stderr)
	}
	if o.roles.role != "" {
		fmt.Fprintf(stderr, "mpq run: --role runs one experiment FILE, got %d: %s\n", len(args), strings.Join(args, " "))
		return exitUsage
	}
	var probs []string
	names := map[string]string{} // results directory name -> file
	all := &overall{start: time.Now()}
	shardK, shardN, _ := parseShard(o.shard) // a bad --shard is reported per file
	for _, f := range args {
		runs, p := loadRuns(f, o.sets, o.sweeps, o.backend, o.repeat)
		probs = append(probs, p...)
		if len(runs) == 0 {
			continue
		}
		if shardN > 0 {
			for i := range runs {
				if i%shardN == shardK-1 {
					all.total++
				}
			}
		}
		n := sanitize(runs[0].Name)
		if other, ok := names[n]; ok {
			probs = append(probs, fmt.Sprintf("mpq run: %s and %s are both named %q: their runs would share %s", other, f, runs[0].Name, filepath.Join(o.out, n)))
		}
		names[n] = f
	}
	if len(probs) > 0 {
		for _, p := range probs {
			fmt.Fprintln(stderr, p)
		}
		return exitUsage
	}
	status := 0
	for i, f := range args {
		fmt.Fprintf(stderr, "mpq run: file %d of %d: %s\n", i+1, len(args), f)
		switch code := runOneFile(ctx, o, f, all, stdout, stderr); {
		case code == exitInterrupted || ctx.Err() != nil:
			return exitInterrupted
		case code > status:
			status = code
		}
	}
	return status
}

// overall follows the runs of several files, for an estimate of the time
// left for all of them.
type overall struct {
	start       time.Time
	done, total int
}

// line is the overall part of a progress line: "; all files: 30/5060,
// about 4m10s left" (by the number of runs, at the rate so far).
func (a *overall) line(now time.Time) string {
	s := fmt.Sprintf("; all files: %d/%d", a.done, a.total)
	if d, ok := eta(now.Sub(a.start), float64(a.done), float64(a.total)); ok {
		s += ", about " + formatETA(d) + " left"
	}
	return s
}

// runOneFile runs one experiment file: its run, or its sweep. all, if
// not nil, counts its runs among those of several files.
func runOneFile(ctx context.Context, o *runOptions, file string, all *overall, stdout, stderr io.Writer) int {
	runs, probs := loadRuns(file, o.sets, o.sweeps, o.backend, o.repeat)
	if o.repeatSet && o.repeat == 0 {
		probs = append(probs, "mpq run: --repeat 0: want a number of repetitions, at least 1")
	}
	if o.parallel < 1 {
		probs = append(probs, fmt.Sprintf("mpq run: --parallel %d: want a number of runs at once, at least 1", o.parallel))
	}
	shardK, shardN, err := parseShard(o.shard)
	if err != nil {
		probs = append(probs, "mpq run: "+err.Error())
	}
	if len(probs) > 0 {
		for _, p := range probs {
			fmt.Fprintln(stderr, p)
		}
		return exitUsage
	}
	if !o.roles.configure(stderr) {
		return exitUsage
	}
	for _, r := range runs {
		if r.Backend != experiment.BackendNetns {
			continue
		}
		if err := netns.CheckMode(&r, runner.Netns.Mode); err != nil {
			fmt.Fprintf(stderr, "mpq run: %v\n", err)
			return exitUsage
		}
	}
	if err := needsRoot(runs); err != nil {
		fmt.Fprintf(stderr, "mpq run: %v\n", err)
		return exitFailure
	}
	if o.roles.role != "" {
		if o.resume || o.shard != "" {
			fmt.Fprintln(stderr, "mpq run: --role runs every run of FILE in turn with the other end: --resume and --shard do not apply")
			return exitUsage
		}
		return runRoles(ctx, o, runs, filepath.Join(o.out, sanitize(runs[0].Name)), stdout, stderr)
	}
	workers := o.parallel
	for _, r := range runs {
		if r.Backend != experiment.BackendSim {
			workers = 1 // real time: runs must not disturb each other
		}
	}
	base := filepath.Join(o.out, sanitize(runs[0].Name))
	made := missingDirs(base)
	if err := os.MkdirAll(base, 0o755); err != nil {
		fmt.Fprintf(stderr, "mpq run: %v\n", err)
		return exitFailure
	}
	// This shard's runs (all without --shard), and of them those still
	// to run.
	var mine []string
	var todo []experiment.Experiment
	for i := range runs {
		if i%shardN != shardK-1 {
			continue
		}
		name := runName(&runs[i])
		mine = append(mine, filepath.ToSlash(name))
		if o.resume && complete(filepath.Join(base, name), &runs[i]) {
			// Kept: what a killed rerun of it left goes (runOne
			// does this for the runs it runs).
			removeStale(filepath.Join(base, name), ".tmp-")
			continue
		}
		todo = append(todo, runs[i])
	}
	if kept := len(mine) - len(todo); o.resume {
		fmt.Fprintf(stderr, "mpq run: --resume: %d of %d runs already complete, %d to run\n", kept, len(mine), len(todo))
	}
	total := len(runs)
	figures := runs[0].Output.Figures // one file, one sweep: the same for every run
	if all != nil {
		all.total -= len(mine) - len(todo) // kept by --resume
	}
	runs = todo
	// A simulation uses a second CPU for the experiment's other end
	// only when the runs at once leave one (the results are the same).
	runner.SetSimParallel(2*min(workers, len(runs)) <= runtime.GOMAXPROCS(0))
	prog := newProgress(runs, time.Now())
	type job struct {
		i   int
		run *experiment.Experiment
	}
	jobs := make(chan job)
	var mu sync.Mutex
	failed := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				dir := filepath.Join(base, runName(j.run))
				res, replaced, err := runOne(ctx, j.run, dir)
				mu.Lock()
				head := prog.finished(j.i, time.Now())
				if all != nil {
					all.done++
				}
				if err != nil {
					failed++
					if ctx.Err() == nil {
						fmt.Fprintf(stderr, "%s %s: failed: %v\n", head, dir, err)
					}
				} else {
					if len(replaced) > 0 {
						fmt.Fprintf(stderr, "mpq run: %s: replaced %s\n", dir, describeRuns(replaced))
					}
					tail := prog.left(time.Now())
					if all != nil {
						tail += all.line(time.Now())
					}
					fmt.Fprintf(stderr, "%s %s (%.1fs)%s\n", head, dir, res.Wall.Seconds(), tail)
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
	if rss := peakRSS(); rss > 0 {
		// Each run streams its results to its own directory and keeps
		// nothing once written: this stays about one run's (or
		// --parallel runs') memory however many runs there are.
		fmt.Fprintf(stderr, "mpq run: peak RSS %.0f MB\n", float64(rss)/1e6)
	}
	if ctx.Err() != nil {
		// The directories this command made and no run wrote into go
		// (os.Remove keeps a directory that is not empty): an
		// interrupted sweep leaves no empty directory (issue 37).
		for _, d := range made {
			os.Remove(d)
		}
		removeStaleAggregate(base, stderr)
		fmt.Fprintf(stderr, "mpq run: interrupted; %d of %d runs finished and kept\n", prog.done-failed, len(runs))
		return exitInterrupted
	}
	if failed > 0 {
		removeStaleAggregate(base, stderr)
		fmt.Fprintf(stderr, "mpq run: %d of %d runs failed\n", failed, len(runs))
		return exitFailure
	}
	if shardN > 1 {
		removeStaleAggregate(base, stderr)
		fmt.Fprintf(stderr, "mpq run: shard %d/%d complete (%d of %d runs); once every shard is, copy their directories together and run mpq aggregate %s\n",
			shardK, shardN, len(mine), total, base)
		if len(figures) > 0 {
			fmt.Fprintf(stderr, "mpq run: output.figures (%s) are drawn from the whole sweep: after mpq aggregate, with mpq plot %s --kind KIND -o FILE\n",
				strings.Join(figures, ", "), base)
		}
		return 0
	}
	// The aggregate describes every run in the directory, not only this
	// invocation's: when those of an earlier invocation cannot be
	// aggregated with them, there is none (an old one would describe
	// other runs), and the command says so.
	if _, err := writeAggregate(base, nil, stderr); err != nil {
		for _, f := range []string{resultset.RunsCSV, resultset.AggregateCSV, resultset.AggregateJSON} {
			os.Remove(filepath.Join(base, f))
		}
		fmt.Fprintf(stderr, "mpq run: aggregating %s: %v; no runs.csv or aggregate written: the directory holds runs of another invocation (give each its own --out, or move one's runs away, then run mpq aggregate)\n", base, err)
		return exitFailure
	}
	if !drawFigures(base, figures, stdout, stderr) {
		return exitFailure
	}
	return 0
}

// removeStaleAggregate removes the runs.csv and aggregate files an
// earlier invocation wrote into base when this one writes none (runs
// failed, interrupted, a shard): they would describe runs that this one
// replaced. mpq aggregate rebuilds them from the runs in the directory.
func removeStaleAggregate(base string, stderr io.Writer) {
	var gone []string
	for _, f := range []string{resultset.RunsCSV, resultset.AggregateCSV, resultset.AggregateJSON} {
		if os.Remove(filepath.Join(base, f)) == nil {
			gone = append(gone, f)
		}
	}
	if len(gone) > 0 {
		fmt.Fprintf(stderr, "mpq run: %s: removed the earlier %s (they described other runs; mpq aggregate %s rebuilds them)\n",
			base, strings.Join(gone, ", "), base)
	}
}

// missingDirs lists dir and those of its parents that do not exist yet,
// innermost first: what os.MkdirAll(dir) would make.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			return out
		}
		out = append(out, d)
		if filepath.Dir(d) == d {
			return out
		}
	}
}

// drawFigures draws an experiment's output.figures from every run in its
// sweep's directory base, each into base with its name; it reports
// whether all were drawn (the runs and the aggregate stay either way).
func drawFigures(base string, figures []string, stdout, stderr io.Writer) bool {
	ok := true
	for _, name := range figures {
		out := filepath.Join(base, name)
		kind := strings.TrimSuffix(name, filepath.Ext(name))
		runs, points, err := drawPlot([]string{base}, kind, out, plots.DefaultOptions(), nil, nil)
		if err != nil {
			fmt.Fprintf(stderr, "mpq run: output.figures: %s: %v (the runs and the aggregate are written; mpq plot draws it with other options)\n", name, err)
			ok = false
			continue
		}
		fmt.Fprintf(stdout, "%s: %s of %s (%s)\n", out, kind, plural(runs, "run"), plural(points, "grid point"))
	}
	return ok
}

// parseShard parses --shard K/N; "" is 1/1.
func parseShard(s string) (k, n int, err error) {
	if s == "" {
		return 1, 1, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 1 || k > n {
		return 0, 0, fmt.Errorf("--shard %q: want K/N with 1 <= K <= N, e.g. 2/4", s)
	}
	return k, n, nil
}

// complete reports whether dir holds a complete run of e: every file a
// run writes, the same resolved configuration (comments aside), and a
// summary that reads back as this run of this sweep (experiment, grid
// point, repetition of how many, base seed and configuration), so that
// the aggregate does not take a run of another sweep for this one.
func complete(dir string, e *experiment.Experiment) bool {
	files := []string{"messages.csv"}
	if e.Output.Series {
		files = append(files, "paths.csv", "throughput.csv")
	}
	if e.Backend == experiment.BackendLoopback {
		files = append(files, "emulator.json")
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config.resolved.toml"))
	if err != nil || !experiment.SameRun(cfg, e.ResolvedTOML()) {
		return false
	}
	s, err := resultset.ReadRun(dir)
	return err == nil && s.Name == e.Name && s.Point == e.Point && s.Repetition == e.Repetition &&
		s.Repeat == max(e.Repeat, 1) && s.BaseSeed == e.BaseSeed && s.Seed == e.Seed && s.ConfigSHA256 == e.PointSHA256()
}

// loadRuns loads an experiment file with the --set, --sweep and --backend
// overrides, and returns its runs or every problem found, in the file
// and in the overrides.
func loadRuns(file string, sets, sweeps []string, backend string, repeat int) ([]experiment.Experiment, []string) {
	var probs []string
	var overrides []experiment.Override
	for _, s := range sets {
		o, err := experiment.ParseOverride(s)
		if err != nil {
			probs = append(probs, "mpq run: "+err.Error())
			continue
		}
		overrides = append(overrides, o)
	}
	for _, s := range sweeps {
		o, err := experiment.ParseSweep(s)
		if err != nil {
			probs = append(probs, "mpq run: "+err.Error())
			continue
		}
		overrides = append(overrides, o)
	}
	if backend != "" {
		overrides = append(overrides, experiment.Override{Key: "backend", Value: backend, Origin: "--backend"})
	}
	switch {
	case repeat < 0:
		probs = append(probs, fmt.Sprintf("mpq run: --repeat %d: want a number of repetitions, at least 1", repeat))
	case repeat > 0:
		overrides = append(overrides, experiment.Override{Key: "repeat", Value: int64(repeat), Origin: "--repeat"})
	}
	runs, err := experiment.Load(file, overrides)
	if err != nil {
		probs = append(probs, strings.Split(err.Error(), "\n")...)
	}
	return runs, probs
}

// runOne runs an experiment into a temporary directory and renames it to
// dir once complete, so that dir never holds a partial run. What dir held
// before is replaced; replaced lists the runs that were in it (relative
// to dir), for the command to say so.
func runOne(ctx context.Context, e *experiment.Experiment, dir string) (res *runner.Result, replaced []string, err error) {
	parent := filepath.Dir(dir)
	_, statErr := os.Stat(parent)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, nil, err
	}
	removeStale(dir, ".tmp-")
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, nil, err
	}
	res, err = runner.Run(ctx, e, tmp)
	if err != nil {
		os.RemoveAll(tmp)
		if created {
			// A repetition's grid point directory made for this run
			// alone: an interrupted sweep leaves no empty directory
			// (issue 37). os.Remove keeps it if another run wrote into it.
			os.Remove(parent)
		}
		return nil, nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	if _, err := os.Stat(dir); err == nil {
		replaced, _ = resultset.FindRuns(dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	return res, replaced, nil
}

// describeRuns names the runs a run directory held ("." for the
// directory itself).
func describeRuns(dirs []string) string {
	switch {
	case len(dirs) == 1 && dirs[0] == ".":
		return "the earlier run in it"
	case len(dirs) == 1:
		return "the earlier run in it (" + dirs[0] + ")"
	}
	return fmt.Sprintf("the %d earlier runs in it (%s)", len(dirs), strings.Join(dirs, ", "))
}

// runName names a run's directory after its label (the values the sweep
// varies and the overrides that change the experiment), or "run"; with
// repetitions, a directory per repetition inside, rep0, rep1, …
// (zero-padded to the same width).
func runName(e *experiment.Experiment) string {
	name := "run"
	if len(e.Label) > 0 {
		name = shorten(sanitize(strings.Join(e.Label, ",")))
	}
	if e.Repeat > 1 {
		width := len(strconv.Itoa(e.Repeat - 1))
		name = filepath.Join(name, fmt.Sprintf("rep%0*d", width, e.Repetition))
	}
	return name
}

// maxRunName bounds a run directory's name, below the 255 bytes most
// file systems allow a name.
const maxRunName = 200

// shorten keeps a run directory's name within maxRunName: a longer one
// (many overrides) keeps its first bytes and ends in "~" and 16 hex
// digits of its SHA-256, so that two labels stay two directories. The
// whole label is in the run's summary.json (vary).
func shorten(name string) string {
	if len(name) <= maxRunName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:maxRunName-17] + "~" + hex.EncodeToString(sum[:8])
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
// completion ratio and time, and the time to the first acknowledgement;
// bulk: goodput), with the messages completed of those generated (after
// the warm-up, whose messages it counts apart), the competitors' goodput,
// each end's throughput, the paths the client could not open, and the
// datagrams an end dropped at its full receive queue.
func oneLine(dir string, s *trafficgen.Summary) string {
	var b strings.Builder
	if k := s.Transport.Kind; k != "" && k != experiment.KindMPQ {
		fmt.Fprintf(&b, "%s: %s", dir, k)
		if s.Transport.Congestion != "" {
			fmt.Fprintf(&b, " (%s)", s.Transport.Congestion)
		}
	} else {
		fmt.Fprintf(&b, "%s: %s/%s", dir, s.PathScheduler, s.StreamScheduler)
	}
	for _, src := range s.Sources {
		b.WriteString("  ")
		b.WriteString(headline(src))
	}
	for _, c := range s.Competitors {
		fmt.Fprintf(&b, "  competitor %s goodput %.1f Mbit/s", c.Name, c.GoodputMbps)
	}
	if s.Transport.Kind == experiment.KindMPTCP {
		b.WriteString("  throughput not measured (mptcp)")
	} else {
		fmt.Fprintf(&b, "  throughput server %.1f client %.1f Mbit/s", s.ThroughputMbps.Server.Total, s.ThroughputMbps.Client.Total)
	}
	for _, f := range s.PathsFailed {
		fmt.Fprintf(&b, "  path %d failed", f.Path)
	}
	// Losses in the receiving process, not on the network: the machine
	// did not keep up (summary.json's receive_queue_dropped).
	for _, side := range []string{"client", "server"} {
		if n := s.ReceiveQueueDropped[side]; n > 0 {
			fmt.Fprintf(&b, "  %s receive queue dropped %d datagrams", side, n)
		}
	}
	return b.String()
}

// headline is a source's headline metric for the console.
func headline(src trafficgen.SourceSummary) string {
	done := fmt.Sprintf("(%d/%d)", src.Completed, src.Messages)
	if src.WarmupExcluded > 0 {
		// The messages of the warm-up are not in the counts or times.
		done = fmt.Sprintf("(%d/%d, %d in warm-up)", src.Completed, src.Messages, src.WarmupExcluded)
	}
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
		first := ""
		if src.ConnectToFirstAckMS != nil {
			first = " first ack " + fmtMS(*src.ConnectToFirstAckMS)
		}
		return fmt.Sprintf("%s completion ratio %.3f time %s%s %s", src.Name, ratio, fmtMS(t), first, done)
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
