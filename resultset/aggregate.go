package resultset

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mpq/mpq/internal/atomicfile"
	"github.com/mpq/mpq/trafficgen"
)

// Aggregate is a sweep's runs grouped by grid point: aggregate.json.
type Aggregate struct {
	Name string `json:"name"`
	// Provenance is the runs' common provenance, Started the earliest
	// start; Provenances lists every different one when they are not all
	// the same (runs of several builds merged), and then Provenance is
	// the first run's.
	Provenance  *trafficgen.Provenance  `json:"provenance"`
	Provenances []trafficgen.Provenance `json:"provenances,omitempty"`
	// Runs counts the runs aggregated.
	Runs   int      `json:"runs"`
	Points []*Point `json:"points"`
	// Warnings says what is missing (repetitions not found).
	Warnings []string `json:"warnings,omitempty"`

	runs []*Run
	// keys are the varied keys in order of first appearance, metrics the
	// headline metric names.
	keys    []string
	metrics []string
}

// Point is a grid point and its repetitions.
type Point struct {
	Point int `json:"point"`
	// Vary lists the point's varied keys ("key=value").
	Vary []string `json:"vary"`
	// Dir is the point's directory (the run's, or the parent of its
	// repetitions' rep* directories).
	Dir          string `json:"dir"`
	ConfigSHA256 string `json:"config_sha256"`
	// BaseSeed is the seed the repetitions' seeds derive from.
	BaseSeed uint64 `json:"base_seed"`
	// Repeat is the number of repetitions the sweep asked for, Runs the
	// directories found, by repetition, with their Repetitions and Seeds.
	Repeat      int      `json:"repeat"`
	Runs        []string `json:"runs"`
	Repetitions []int    `json:"repetitions"`
	Seeds       []uint64 `json:"seeds"`
	// Metrics summarises every headline metric across the repetitions.
	Metrics map[string]Summary `json:"metrics"`
	// Pooled has each source's message times pooled over the
	// repetitions.
	Pooled map[string]Pooled `json:"pooled"`

	runs []*Run
}

// Build reads the runs below root (dirs, relative to root, or every run
// found there when dirs is nil) and aggregates them. It fails when the
// runs are of several experiments, when runs of one grid point disagree
// on its configuration or on the base seed of their repetitions, or when
// a repetition is there twice.
func Build(root string, dirs []string) (*Aggregate, error) {
	if dirs == nil {
		var err error
		if dirs, err = FindRuns(root); err != nil {
			return nil, err
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%s: no runs (directories with summary.json)", root)
	}
	a := &Aggregate{}
	for _, d := range dirs {
		abs := filepath.Join(root, filepath.FromSlash(d))
		s, err := ReadRun(abs)
		if err != nil {
			return nil, err
		}
		a.runs = append(a.runs, &Run{Dir: d, Summary: s, abs: abs})
	}
	sort.SliceStable(a.runs, func(i, j int) bool {
		x, y := a.runs[i].Summary, a.runs[j].Summary
		if x.Point != y.Point {
			return x.Point < y.Point
		}
		return x.Repetition < y.Repetition
	})
	a.Name = a.runs[0].Summary.Name
	byPoint := map[int]*Point{}
	seen := map[[2]int]string{} // point, repetition -> dir
	for _, r := range a.runs {
		s := r.Summary
		if s.Name != a.Name {
			return nil, fmt.Errorf("%s: runs of two experiments, %q (%s) and %q (%s): aggregate each one's directory", root, a.Name, a.runs[0].Dir, s.Name, r.Dir)
		}
		p := byPoint[s.Point]
		if p == nil {
			p = &Point{Point: s.Point, Vary: s.Vary, ConfigSHA256: s.ConfigSHA256, BaseSeed: s.BaseSeed, Repeat: s.Repeat, Dir: r.Dir}
			if s.Repeat > 1 {
				p.Dir = path.Dir(r.Dir)
			}
			byPoint[s.Point] = p
			a.Points = append(a.Points, p)
		}
		if s.ConfigSHA256 != p.ConfigSHA256 {
			return nil, fmt.Errorf("runs %s and %s are of grid point %d with different configurations (the experiment file changed between them?)", p.runs[0].Dir, r.Dir, s.Point)
		}
		if s.Repeat != p.Repeat {
			return nil, fmt.Errorf("runs %s and %s are of grid point %d from sweeps of %d and %d repetitions (remove the runs of the other one)", p.runs[0].Dir, r.Dir, s.Point, p.Repeat, s.Repeat)
		}
		if s.BaseSeed != p.BaseSeed {
			return nil, fmt.Errorf("runs %s and %s are of grid point %d with seeds derived from different base seeds, %d and %d (the seed changed between them?)", p.runs[0].Dir, r.Dir, s.Point, p.BaseSeed, s.BaseSeed)
		}
		// The configuration's hash leaves the seed out (the repetitions
		// share it), so a sweep over the seed has one hash for several
		// grid points: a repetition is told by its grid point.
		key := [2]int{s.Point, s.Repetition}
		if other, ok := seen[key]; ok {
			return nil, fmt.Errorf("runs %s and %s are the same repetition %d of grid point %d", other, r.Dir, s.Repetition, s.Point)
		}
		seen[key] = r.Dir
		p.runs = append(p.runs, r)
		p.Runs = append(p.Runs, r.Dir)
		p.Repetitions = append(p.Repetitions, s.Repetition)
		p.Seeds = append(p.Seeds, s.Seed)
	}
	a.Runs = len(a.runs)
	a.provenance()
	// Grid points are numbered from 0 without gaps (experiment.Load): a
	// number missing below the last one found is a point with no run
	// at all (every repetition failed, or was not run). A missing last
	// point cannot be told from here.
	last := 0
	for _, p := range a.Points {
		last = max(last, p.Point)
	}
	for i := 0; i < last; i++ {
		if byPoint[i] == nil {
			a.Warnings = append(a.Warnings, fmt.Sprintf("grid point %d: no runs (each of its repetitions failed or was not run)", i))
		}
	}
	for _, p := range a.Points {
		if len(p.runs) != p.Repeat {
			a.Warnings = append(a.Warnings, fmt.Sprintf("grid point %d (%s): %d of %d repetitions", p.Point, p.Dir, len(p.runs), p.Repeat))
		}
		if err := a.aggregatePoint(p); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// provenance sets the common provenance.
func (a *Aggregate) provenance() {
	var distinct []trafficgen.Provenance
	earliest := ""
	for _, r := range a.runs {
		pv := r.Summary.Provenance
		if pv == nil {
			continue
		}
		if earliest == "" || pv.Started < earliest {
			earliest = pv.Started
		}
		c := *pv
		c.Started, c.Seed = "", r.Summary.BaseSeed
		if slices.ContainsFunc(r.Summary.Vary, func(kv string) bool { return strings.HasPrefix(kv, "seed=") }) {
			// A sweep of the seed: one build, several base seeds.
			c.Seed = a.runs[0].Summary.BaseSeed
		}
		found := false
		for _, d := range distinct {
			found = found || reflect.DeepEqual(d, c)
		}
		if !found {
			distinct = append(distinct, c)
		}
	}
	if len(distinct) == 0 {
		return
	}
	p := distinct[0]
	p.Started = earliest
	a.Provenance = &p
	if len(distinct) > 1 {
		a.Provenances = distinct
		a.Warnings = append(a.Warnings, fmt.Sprintf("the runs come from %d different builds or backends (see provenances)", len(distinct)))
	}
}

// aggregatePoint summarises a point's metrics and pools its messages.
func (a *Aggregate) aggregatePoint(p *Point) error {
	vals := map[string][]float64{}
	for _, r := range p.runs {
		for _, m := range Headline(r.Summary) {
			if _, ok := vals[m.Name]; !ok {
				a.addMetric(m.Name)
			}
			vals[m.Name] = append(vals[m.Name], m.Value)
		}
		for _, kv := range r.Summary.Vary {
			k, _, _ := strings.Cut(kv, "=")
			a.addKey(k)
		}
	}
	p.Metrics = map[string]Summary{}
	for name, v := range vals {
		p.Metrics[name] = Summarise(v)
	}
	p.Pooled = map[string]Pooled{}
	times := map[string][]float64{}
	warm := map[string]int{}
	for _, r := range p.runs {
		cols := map[string][]string{} // column -> sources
		for _, src := range r.Summary.Sources {
			if c := pooledColumn(src.Kind); c != "" {
				cols[c] = append(cols[c], src.Name)
			}
		}
		for i, c := range sortedKeys(cols) {
			got, err := ReadMessageTimes(r.abs, c)
			if err != nil {
				return err
			}
			if i == 0 {
				rows := map[string]int{}
				for name, st := range got {
					rows[name] = len(st.Times) + st.Warmup
				}
				if err := CheckMessageRows(r.Dir, r.Summary, rows); err != nil {
					return err
				}
			}
			for _, name := range cols[c] {
				if st := got[name]; st != nil {
					times[name] = append(times[name], st.Times...)
					warm[name] += st.Warmup
				}
				if _, ok := p.Pooled[name]; !ok {
					p.Pooled[name] = Pooled{Metric: c}
				}
			}
		}
	}
	for name, pl := range p.Pooled {
		pl = pool(pl.Metric, times[name])
		pl.WarmupExcluded = warm[name]
		p.Pooled[name] = pl
	}
	return nil
}

func (a *Aggregate) addMetric(name string) {
	for _, m := range a.metrics {
		if m == name {
			return
		}
	}
	a.metrics = append(a.metrics, name)
}

func (a *Aggregate) addKey(k string) {
	for _, x := range a.keys {
		if x == k {
			return
		}
	}
	a.keys = append(a.keys, k)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// varyValue is the value of key in a "key=value" list, or "".
func varyValue(vary []string, key string) string {
	for _, kv := range vary {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// csvRow writes one CSV record.
func csvRow(w io.Writer, fields []string) error {
	for i, f := range fields {
		if strings.ContainsAny(f, ",\"\n\r") {
			f = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
		}
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, f); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteRunsCSV writes runs.csv: one row per run, by grid point and
// repetition: point, repetition, seed, dir (relative), one column per
// varied key, one per headline metric (empty when the run has none).
func (a *Aggregate) WriteRunsCSV(w io.Writer) error {
	head := append([]string{"point", "repetition", "seed", "dir"}, a.keys...)
	if err := csvRow(w, append(head, a.metrics...)); err != nil {
		return err
	}
	for _, r := range a.runs {
		s := r.Summary
		row := []string{strconv.Itoa(s.Point), strconv.Itoa(s.Repetition), strconv.FormatUint(s.Seed, 10), r.Dir}
		for _, k := range a.keys {
			row = append(row, varyValue(s.Vary, k))
		}
		vals := map[string]float64{}
		for _, m := range Headline(s) {
			vals[m.Name] = m.Value
		}
		for _, m := range a.metrics {
			v, ok := vals[m]
			if !ok {
				row = append(row, "")
				continue
			}
			row = append(row, Value(v).csv())
		}
		if err := csvRow(w, row); err != nil {
			return err
		}
	}
	return nil
}

// pooledColumnKey is a source with pooled times and the metric pooled
// (messages.csv's column): a sweep over a source's kind pools its MCT at
// some grid points and its response time at others, each in columns of
// its own.
type pooledColumnKey struct{ source, metric string }

// pooledColumns lists the sources with pooled times and their metrics, in
// the order of the runs' sources.
func (a *Aggregate) pooledColumns() []pooledColumnKey {
	var out []pooledColumnKey
	seen := map[pooledColumnKey]bool{}
	for _, r := range a.runs {
		for _, src := range r.Summary.Sources {
			k := pooledColumnKey{src.Name, pooledColumn(src.Kind)}
			if k.metric != "" && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// pooledFields is the number of aggregate.csv's columns per pooled
// distribution.
const pooledFields = 12

// WriteAggregateCSV writes aggregate.csv: one row per grid point: point,
// runs (found), repeat (asked for), dir, the varied keys, then for every
// headline metric M the columns M.mean, M.sd, M.ci95_lo, M.ci95_hi, then
// for every source S with messages the times pooled over the
// repetitions: S.pooled_T_warmup_excluded, S.pooled_T_n,
// S.pooled_T_failed, S.pooled_T_p50_ms, S.pooled_T_p99_ms,
// S.pooled_T_p99_ci95_lo, S.pooled_T_p99_ci95_hi, S.pooled_T_beyond_p99,
// and the same four for p999 (T: mct or response).
func (a *Aggregate) WriteAggregateCSV(w io.Writer) error {
	head := append([]string{"point", "runs", "repeat", "dir"}, a.keys...)
	for _, m := range a.metrics {
		head = append(head, m+".mean", m+".sd", m+".ci95_lo", m+".ci95_hi")
	}
	pooled := a.pooledColumns()
	for _, c := range pooled {
		pre := c.source + ".pooled_" + strings.TrimSuffix(c.metric, "_ms")
		head = append(head, pre+"_warmup_excluded", pre+"_n", pre+"_failed", pre+"_p50_ms",
			pre+"_p99_ms", pre+"_p99_ci95_lo", pre+"_p99_ci95_hi", pre+"_beyond_p99",
			pre+"_p999_ms", pre+"_p999_ci95_lo", pre+"_p999_ci95_hi", pre+"_beyond_p999")
	}
	if err := csvRow(w, head); err != nil {
		return err
	}
	for _, p := range a.Points {
		row := []string{strconv.Itoa(p.Point), strconv.Itoa(len(p.runs)), strconv.Itoa(p.Repeat), p.Dir}
		for _, k := range a.keys {
			row = append(row, varyValue(p.Vary, k))
		}
		for _, m := range a.metrics {
			s, ok := p.Metrics[m]
			if !ok {
				row = append(row, "", "", "", "")
				continue
			}
			row = append(row, s.Mean.csv(), s.SD.csv(), s.CI95[0].csv(), s.CI95[1].csv())
		}
		for _, c := range pooled {
			pl, ok := p.Pooled[c.source]
			if !ok || pl.Metric != c.metric {
				row = append(row, make([]string, pooledFields)...)
				continue
			}
			row = append(row, strconv.Itoa(pl.WarmupExcluded), strconv.Itoa(pl.N), strconv.Itoa(pl.Failed), pl.P50.csv(),
				pl.P99.csv(), pl.P99CI95[0].csv(), pl.P99CI95[1].csv(), strconv.Itoa(pl.BeyondP99),
				pl.P999.csv(), pl.P999CI95[0].csv(), pl.P999CI95[1].csv(), strconv.Itoa(pl.BeyondP999))
		}
		if err := csvRow(w, row); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes aggregate.json.
func (a *Aggregate) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Write writes runs.csv, aggregate.csv and aggregate.json into dir, each
// under a temporary name renamed when complete.
func (a *Aggregate) Write(dir string) error {
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{RunsCSV, a.WriteRunsCSV}, {AggregateCSV, a.WriteAggregateCSV}, {AggregateJSON, a.WriteJSON}} {
		if err := atomicfile.Write(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}
