package plots

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/trafficgen"
)

// Run is one run directory: what mpq run wrote for one run.
type Run struct {
	Dir     string
	Summary *trafficgen.Summary
	// config and messages are read when first needed.
	config   *experiment.Experiment
	messages []Message
	// facts are the run's facts besides its headline metrics
	// (runfacts.go), read when first asked for; fileFactValues those
	// read from its other files (fileFacts), by name, once asked for.
	facts          []resultset.Metric
	fileFactValues map[string]float64
}

// Point is one grid point of an experiment: its runs are the repetitions
// of one configuration.
type Point struct {
	// Name is the experiment's, Index the grid point's index in its
	// sweep, Vary its varied keys ("key=value") and Scheduler its path
	// scheduler. When runs of the same experiment from several
	// invocations of mpq run differ in a key no sweep varies (another
	// --set), their points would share a name and varied values: each
	// then gets the part of its sweep's directory that tells them apart
	// as Variant, and Name is the experiment's name followed by it in
	// parentheses ("conext17-lowbdp (grid-a)"); Experiment is the
	// experiment's name alone.
	Name, Variant, Experiment string
	// Want is the number of runs a filter chose (--where
	// repetition=N: 1, repetition=N,M: 2); 0 for the sweep's
	// repetitions.
	Want      int
	Index     int
	Vary      []string
	Scheduler string
	Runs      []*Run
	// Label names the point in a figure (SetLabels); Group is the label
	// without the path scheduler (the bars of one group), GroupValues
	// the same with the values alone, one per line, and GroupKeys names
	// them ("s1.interval / s1.size").
	Label, Group, GroupValues, GroupKeys string
}

// InputError is a problem with the results given: a missing, empty or
// wrong directory, a malformed file, a flag that selects nothing.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// Load reads the runs below each of dirs (run directories, grid points
// with repetitions, whole sweeps) and groups them by grid point, in the
// order of dirs and then of the grid. Runs are the directories with a
// summary.json; directories whose names start with "." (runs under way)
// are skipped.
func Load(dirs []string) ([]*Point, error) { return load(dirs, false) }

// LoadSweeps is Load for the kinds that take each sweep directory of an
// experiment as a sweep of its own (ratio, aggregation,
// aggregation-summary): a grid point's runs are grouped within their
// sweep directory only. Two invocations of mpq run may then hold the
// same configuration of a grid point, as when a --set or an edited file
// changes one mode of a [[sweep.mode]] list only and the other mode's
// runs are those of the other invocation: Load refuses such a point as
// one grid point run twice, LoadSweeps gives each directory its own.
func LoadSweeps(dirs []string) ([]*Point, error) { return load(dirs, true) }

// load is Load, with each sweep directory's points apart when apart.
func load(dirs []string, apart bool) ([]*Point, error) {
	if len(dirs) == 0 {
		return nil, inputErr("no results directory given")
	}
	var points []*Point
	byKey := map[string]*Point{}
	seen := map[string]bool{}
	for _, d := range dirs {
		found, err := findRuns(d)
		if err != nil {
			return nil, err
		}
		var runs []*Run
		for _, rd := range found {
			abs, err := filepath.Abs(rd)
			if err != nil {
				return nil, err
			}
			if seen[abs] {
				continue
			}
			seen[abs] = true
			s, err := readSummary(rd)
			if err != nil {
				return nil, err
			}
			runs = append(runs, &Run{Dir: rd, Summary: s})
		}
		sort.SliceStable(runs, func(i, j int) bool {
			a, b := runs[i].Summary, runs[j].Summary
			if a.Name != b.Name {
				return a.Name < b.Name
			}
			if a.Point != b.Point {
				return a.Point < b.Point
			}
			return a.Repetition < b.Repetition
		})
		for _, r := range runs {
			s := r.Summary
			// Points of a sweep may share a configuration's hash: the
			// hash leaves the seed out, and a scheduler leaves out the
			// options it does not have (lowrtt in a sweep of a
			// cwr-plus option). Their varied values tell them apart,
			// and so does the emulator of runs of one configuration
			// on the namespace backend (--emulator).
			key := s.Name + "\x00" + s.ConfigSHA256 + "\x00" + strings.Join(s.Vary, "\x00")
			if s.ConfigSHA256 == "" {
				key = fmt.Sprintf("%s\x00%d\x00%s", s.Name, s.Point, strings.Join(s.Vary, ","))
			}
			if s.Provenance != nil && s.Provenance.Emulator != "" {
				key += "\x00emulator=" + s.Provenance.Emulator
			}
			if apart {
				key += "\x00" + sweepDir(r)
			}
			p := byKey[key]
			if p == nil {
				p = &Point{Name: s.Name, Experiment: s.Name, Index: s.Point, Vary: s.Vary, Scheduler: schedulerOf(s)}
				byKey[key] = p
				points = append(points, p)
			} else if err := sameInvocation(p.Runs, r); err != nil {
				return nil, err
			}
			p.Runs = append(p.Runs, r)
		}
	}
	if err := nameVariants(points); err != nil {
		return nil, err
	}
	return points, nil
}

// nameVariants tells apart the points of an experiment that have the
// same varied values and path scheduler but different configurations:
// runs of several invocations of mpq run with different settings of a
// key no sweep varies (--set). Pooled, paired or compared under one name
// they would mix (a ratio or a robustness cell would take one of them
// for the other); each such experiment's points are named after their
// sweep directories instead (see Point.Variant).
func nameVariants(points []*Point) error {
	type same struct{ name, vary, scheduler string }
	configs := map[same]string{}
	ambiguous := map[string]bool{}
	for _, p := range points {
		k := same{p.Name, strings.Join(p.Vary, "\x00"), p.Scheduler}
		sha := p.Runs[0].Summary.ConfigSHA256
		if other, ok := configs[k]; ok && other != sha {
			ambiguous[p.Name] = true
		}
		configs[k] = sha
	}
	for name := range ambiguous {
		var dirs []string
		for _, p := range points {
			if p.Name == name {
				if d := sweepDir(p.Runs[0]); !slices.Contains(dirs, d) {
					dirs = append(dirs, d)
				}
			}
		}
		short := distinctParts(dirs)
		for _, p := range points {
			if p.Name == name {
				p.Variant = short[sweepDir(p.Runs[0])]
				p.Name = name + " (" + p.Variant + ")"
			}
		}
	}
	// Named apart, no two points may still be the same grid point in
	// two configurations: one directory holding runs of two.
	seen := map[same]*Point{}
	for _, p := range points {
		k := same{p.Name, strings.Join(p.Vary, "\x00"), p.Scheduler}
		if q := seen[k]; q != nil && q.Runs[0].Summary.ConfigSHA256 != p.Runs[0].Summary.ConfigSHA256 {
			return inputErr("%s and %s: runs of %s with the same varied values and different configurations in one directory: plot each invocation's runs apart", q.Runs[0].Dir, p.Runs[0].Dir, p.experiment())
		}
		seen[k] = p
	}
	return nil
}

// experiment is the point's experiment's name (Name without the
// variant).
func (p *Point) experiment() string {
	if p.Experiment != "" {
		return p.Experiment
	}
	return p.Name
}

// sweepDir is the directory of the sweep a run belongs to: mpq run
// writes a run into SWEEP/POINT, or SWEEP/POINT/repN with repetitions.
// It is absolute (when the working directory is known), so that "." and
// "../x" name directories apart by what differs in them.
func sweepDir(r *Run) string {
	d := filepath.Dir(filepath.Clean(sweepPointDir(r)))
	if abs, err := filepath.Abs(d); err == nil {
		d = abs
	}
	return d
}

// sweepParts names, for each experiment whose points (without a
// Variant) come from several sweep directories, each point's directory by
// what tells it from the others (distinctParts); experiments from one
// directory are not in the map.
func sweepParts(points []*Point) map[*Point]string {
	dirs := map[string][]string{}
	for _, p := range points {
		if p.Variant != "" {
			continue
		}
		if d := sweepDir(p.Runs[0]); !slices.Contains(dirs[p.Name], d) {
			dirs[p.Name] = append(dirs[p.Name], d)
		}
	}
	out := map[*Point]string{}
	for _, p := range points {
		if ds := dirs[p.Name]; len(ds) > 1 {
			out[p] = distinctParts(ds)[sweepDir(p.Runs[0])]
		}
	}
	return out
}

// wantRuns is how many runs the point should have: its sweep's
// repetitions, or those --where repetition=N chose.
func (p *Point) wantRuns() int {
	if p.Want > 0 {
		return p.Want
	}
	return max(p.Runs[0].Summary.Repeat, 1)
}

// runsCell is a table's "runs" cell of a point: its runs, or "k of n"
// when repetitions are missing (runs that failed leave no results, and
// its statistics are of the others).
func runsCell(p *Point) string {
	if want := p.wantRuns(); len(p.Runs) < want {
		return fmt.Sprintf("%d of %d", len(p.Runs), want)
	}
	return strconv.Itoa(len(p.Runs))
}

// sweepPointDir is the directory of a run's grid point (the run's own
// without repetitions).
func sweepPointDir(r *Run) string {
	if r.Summary.Repeat > 1 {
		return filepath.Dir(filepath.Clean(r.Dir))
	}
	return r.Dir
}

// distinctParts names each of dirs (distinct paths) by the path
// elements that tell it from the others: the elements they all share at
// the start and at the end are left out ("a/x" and "b/x": "a" and "b").
func distinctParts(dirs []string) map[string]string {
	parts := make([][]string, len(dirs))
	for i, d := range dirs {
		parts[i] = strings.Split(filepath.ToSlash(d), "/")
	}
	sharedAt := func(at func([]string) (string, bool)) bool {
		v0, ok := at(parts[0])
		if !ok {
			return false
		}
		for _, p := range parts[1:] {
			if v, ok := at(p); !ok || v != v0 {
				return false
			}
		}
		return true
	}
	lead, trail := 0, 0
	for sharedAt(func(p []string) (string, bool) {
		if lead >= len(p)-trail-1 {
			return "", false
		}
		return p[lead], true
	}) {
		lead++
	}
	for sharedAt(func(p []string) (string, bool) {
		i := len(p) - 1 - trail
		if i <= lead {
			return "", false
		}
		return p[i], true
	}) {
		trail++
	}
	out := map[string]string{}
	for i, d := range dirs {
		out[d] = strings.Join(parts[i][lead:len(parts[i])-trail], "/")
	}
	return out
}

// sameInvocation checks that r can be pooled with the runs of its point
// (the same configuration): repetitions of one sweep, as mpq aggregate
// requires. Runs of another invocation that gave the same configuration
// (another seed, other --set values that change nothing, another
// repeat), or the same repetition twice, are refused rather than pooled
// into one line.
func sameInvocation(runs []*Run, r *Run) error {
	first, s := runs[0].Summary, r.Summary
	what := ""
	switch {
	case s.BaseSeed != first.BaseSeed:
		what = fmt.Sprintf("seeds derived from different base seeds, %d and %d", first.BaseSeed, s.BaseSeed)
	case s.Repeat != first.Repeat:
		what = fmt.Sprintf("sweeps of %d and %d repetitions", first.Repeat, s.Repeat)
	}
	for _, q := range runs {
		if what == "" && q.Summary.Repetition == s.Repetition {
			what = fmt.Sprintf("the same repetition %d", s.Repetition)
		}
	}
	if what == "" {
		return nil
	}
	return inputErr("runs %s and %s have the same configuration from two invocations of mpq run (%s): plot each invocation's runs apart (into directories of their own)",
		runs[0].Dir, r.Dir, what)
}

// findRuns returns the run directories below dir, sorted.
func findRuns(dir string) ([]string, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, inputErr("%s: no such directory", dir)
	case err != nil:
		return nil, &InputError{err}
	case !st.IsDir():
		return nil, inputErr("%s: not a directory (want a results directory of mpq run)", dir)
	}
	rel, err := resultset.FindRuns(dir)
	if err != nil {
		return nil, &InputError{err}
	}
	if len(rel) == 0 {
		return nil, inputErr("%s: no runs in it (no summary.json below it; want a results directory of mpq run)", dir)
	}
	runs := make([]string, len(rel))
	for i, r := range rel {
		runs[i] = filepath.Join(dir, filepath.FromSlash(r))
	}
	return runs, nil
}

func readSummary(dir string) (*trafficgen.Summary, error) {
	s, err := resultset.ReadRun(dir)
	if err != nil {
		return nil, &InputError{err}
	}
	if s.Name == "" || schedulerOf(s) == "" {
		return nil, inputErr("%s: not a summary of mpq run (no name or path_scheduler)", filepath.Join(dir, "summary.json"))
	}
	return s, nil
}

// schedulerOf is what names a run's line and style: its path scheduler,
// or for a baseline transport (tcp, tls, mptcp, quic-go: no path
// scheduler) its kind.
func schedulerOf(s *trafficgen.Summary) string {
	if s.PathScheduler == "" && s.Transport.Kind != "" && s.Transport.Kind != experiment.KindMPQ {
		return s.Transport.Kind
	}
	return s.PathScheduler
}

// Config is the run's resolved configuration (config.resolved.toml).
func (r *Run) Config() (*experiment.Experiment, error) {
	if r.config != nil {
		return r.config, nil
	}
	name := filepath.Join(r.Dir, "config.resolved.toml")
	if _, err := os.Stat(name); err != nil {
		return nil, &InputError{err}
	}
	es, err := experiment.Load(name, nil)
	if err != nil {
		return nil, &InputError{err}
	}
	if len(es) != 1 {
		return nil, inputErr("%s: %d runs in a resolved configuration", name, len(es))
	}
	r.config = &es[0]
	return r.config, nil
}

// Filter keeps the points whose varied keys include every "key=value" of
// where ("path_scheduler=NAME" also matches the scheduler of points that
// do not vary it; "repetition=N" keeps only that repetition's run of
// each point); "key=A,B" is met by any of the values (a pair of modes
// of one sweep, side by side). It fails when a condition is malformed
// or nothing is left.
func Filter(points []*Point, where []string) ([]*Point, error) {
	for _, w := range where {
		if k, v, ok := strings.Cut(w, "="); !ok || k == "" || v == "" {
			return nil, inputErr("--where %q: want KEY=VALUE", w)
		}
	}
	var out []*Point
	for _, p := range points {
		if q := p.matches(where); q != nil {
			out = append(out, q)
		}
	}
	if len(out) == 0 && len(points) > 0 {
		return nil, inputErr("no run matches --where %s (the runs vary: %s)", strings.Join(where, " --where "), strings.Join(variedKeys(points), ", "))
	}
	return out, nil
}

// matches returns the point if it matches every condition, with only the
// runs of the repetition a "repetition=N" condition names; else nil.
func (p *Point) matches(where []string) *Point {
	q := p
	for _, w := range where {
		k, v, _ := strings.Cut(w, "=")
		if k == "repetition" {
			c := *q
			c.Runs = nil
			for _, r := range q.Runs {
				if slices.Contains(strings.Split(v, ","), strconv.Itoa(r.Summary.Repetition)) {
					c.Runs = append(c.Runs, r)
				}
			}
			if len(c.Runs) == 0 {
				return nil
			}
			c.Want = len(strings.Split(v, ",")) // the repetitions chosen are all the point should have
			q = &c
			continue
		}
		ok := false
		for _, v := range strings.Split(v, ",") {
			ok = ok || slices.Contains(p.Vary, k+"="+v) || (k == "path_scheduler" || k == schedulerKey) && v == p.Scheduler
		}
		if !ok {
			return nil
		}
	}
	return q
}

// schedulerKey is the key of the path scheduler in a sweep.
const schedulerKey = "transport.path_scheduler"

// warmupKey is the one output option that changes what the figures
// show: every per-source statistic leaves out the warm-up's messages.
const warmupKey = "output.warmup"

// variedKeys are the keys the points vary, in order of appearance,
// without the output options but the warm-up.
func variedKeys(points []*Point) []string {
	var keys []string
	seen := map[string]bool{}
	for _, p := range points {
		for _, kv := range p.Vary {
			k, _, _ := strings.Cut(kv, "=")
			if !seen[k] && (experiment.ChangesExperiment(k) || k == warmupKey) {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	if !seen[emulatorKey] && differs(points, emulatorKey) {
		keys = append(keys, emulatorKey)
	}
	return keys
}

// variedKey is the varied key (or the path scheduler's) that k names,
// whole or by its last parts ("size" for "source.s1.size"); "" when the
// points vary none such.
func variedKey(points []*Point, k string) string {
	for _, v := range append([]string{schedulerKey}, variedKeys(points)...) {
		if v == k || strings.HasSuffix(v, "."+k) {
			return v
		}
	}
	return ""
}

// Value is the point's value of a varied key, "" if it does not vary
// it; but the backend and the emulator, which every run records, are
// its runs' where the point does not vary them ("sim" beside a point of
// --backend loopback; "netem" beside "forwarder", which --emulator
// chose).
func (p *Point) Value(key string) string {
	if key == schedulerKey {
		return p.Scheduler
	}
	for _, kv := range p.Vary {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v
		}
	}
	if len(p.Runs) == 0 || p.Runs[0].Summary == nil {
		return ""
	}
	switch s := p.Runs[0].Summary; {
	case key == backendKey:
		return s.Backend
	case key == emulatorKey && s.Provenance != nil:
		return s.Provenance.Emulator
	}
	return ""
}

// backendKey is the experiment file's key for the backend (mpq run
// --backend); emulatorKey names the emulator of a run over real sockets
// (provenance.emulator: mpq run --emulator), a key of no file, varied
// where points differ in it.
const (
	backendKey  = "backend"
	emulatorKey = "emulator"
)

// SetLabels names the points. The label is made of the values of keys
// (each may be a key's last part: "size" for "source.s1.size"), or by
// default of the varied keys whose values differ between the points; the
// path scheduler is named by its name alone, the experiment by its name
// when the points are of several. It fails for a key no point varies.
func SetLabels(points []*Point, keys []string) error {
	varied := variedKeys(points)
	var use []string
	if len(keys) > 0 {
		for _, k := range keys {
			full := variedKey(points, k)
			if full == "" {
				return inputErr("--label %s: not a key the runs vary (they vary: %s)", k, strings.Join(varied, ", "))
			}
			use = append(use, full)
		}
	} else {
		all := varied
		if !slices.Contains(varied, schedulerKey) {
			all = append([]string{schedulerKey}, varied...)
		}
		for _, k := range all {
			if differs(points, k) {
				use = append(use, k)
			}
		}
	}
	names := false
	for _, p := range points {
		names = names || p.Name != points[0].Name
	}
	var gkeys []string
	if names {
		gkeys = append(gkeys, "experiment")
	}
	for _, k := range use {
		if k != schedulerKey {
			gkeys = append(gkeys, shortKey(k))
		}
	}
	for _, p := range points {
		var label, group, values []string
		if names {
			label, group, values = append(label, p.Name), append(group, p.Name), append(values, p.Name)
		}
		for _, k := range use {
			if k == schedulerKey {
				label = append(label, p.Scheduler)
				continue
			}
			v := p.Value(k)
			if v == "" {
				v = notSet // a point of another invocation that left it alone
			}
			kv := shortKey(k) + "=" + v
			label, group, values = append(label, kv), append(group, kv), append(values, v)
		}
		if len(label) == 0 {
			label = []string{p.Scheduler}
		}
		p.Label, p.Group = strings.Join(label, " "), strings.Join(group, " ")
		p.GroupValues, p.GroupKeys = strings.Join(values, "\n"), strings.Join(gkeys, " / ")
	}
	return nil
}

// notSet names the value of a key that a point does not vary, in the
// label of a point beside others that do.
const notSet = "(not set)"

// differs tells whether the points have different values of key.
func differs(points []*Point, key string) bool {
	for _, p := range points {
		if p.Value(key) != points[0].Value(key) {
			return true
		}
	}
	return false
}

// shortKey drops the table of a key: "source.s1.size" is "s1.size",
// "transport.congestion" "congestion".
func shortKey(k string) string {
	for _, pre := range []string{"transport.", "source."} {
		if s, ok := strings.CutPrefix(k, pre); ok {
			return s
		}
	}
	return k
}
