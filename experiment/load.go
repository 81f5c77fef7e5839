package experiment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Override sets one key of an experiment file, as "--set key=value" does.
// Keys are dotted: "duration", "transport.path_scheduler", "path.1.rtt",
// "path.0.down.loss", "source.s1.size" or "source.0.size".
type Override struct {
	Key   string
	Value any
	// Origin says where it came from, for error messages: "--set KEY",
	// "--backend", "[sweep]".
	Origin string
	// Line is the line of the file that gave the value (a [sweep] entry),
	// or 0.
	Line int
	// Values, when not nil, make the override a sweep of Key over them
	// (mpq run --sweep), as a [sweep] entry of the file would: one more
	// dimension of the grid, after the file's, replacing the file's own
	// sweep of the same key. Value is then unused.
	Values []any
}

// String is "key=value", an inline table's value as "{k=v,...}" with
// its keys in order ("{}" for an empty one), as a sweep's labels and
// run directories name it.
func (o Override) String() string { return o.Key + "=" + valueString(o.Value) }

// valueString formats a value of a key for a label: scalars as %v, an
// inline table as "{k=v,...}" (keys sorted, its values likewise).
func valueString(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Sprint(v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + valueString(m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// outputKeys are the keys and tables that say what a run writes, not what
// it does: setting them does not change the experiment (a run's label
// leaves them out).
var outputKeys = []string{"output"}

// ChangesExperiment reports whether setting key can change what an
// experiment does and measures, as opposed to what it writes ([output]).
func ChangesExperiment(key string) bool {
	for _, k := range outputKeys {
		if key == k || strings.HasPrefix(key, k+".") {
			return false
		}
	}
	return true
}

// ParseOverride parses "key=value"; the value is read as a TOML value
// (number, boolean, string in quotes, array) and otherwise as a string.
func ParseOverride(s string) (Override, error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return Override{}, fmt.Errorf("--set %q: want key=value", s)
	}
	return Override{Key: k, Value: parseLooseValue(strings.TrimSpace(v)), Origin: "--set " + strings.TrimSpace(s)}, nil
}

// ParseSweep parses "key=v1,v2,...": a sweep of key over the values,
// each read as ParseOverride reads a value.
func ParseSweep(s string) (Override, error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" || strings.TrimSpace(v) == "" {
		return Override{}, fmt.Errorf("--sweep %q: want key=value1,value2,...", s)
	}
	o := Override{Key: k, Origin: "--sweep " + strings.TrimSpace(s)}
	for _, x := range strings.Split(v, ",") {
		x = strings.TrimSpace(x)
		if x == "" {
			return Override{}, fmt.Errorf("--sweep %q: an empty value", s)
		}
		o.Values = append(o.Values, parseLooseValue(x))
	}
	return o, nil
}

func parseLooseValue(v string) any {
	var doc map[string]any
	if err := toml.Unmarshal([]byte("v = "+v), &doc); err == nil {
		return doc["v"]
	}
	return v
}

// document is a parsed file: its values and the line of every key.
type document struct {
	file  string
	root  map[string]any
	lines map[string]int // dotted key path -> line
	// origins holds the override that set a key (dotted path with
	// numeric indexes), for error messages.
	origins map[string]Override
}

// Load reads an experiment file and returns its runs: one, or one per
// combination of the [sweep] values, in a fixed order (the first sweep key
// varies slowest), each repeated `repeat` times in a row with the seeds
// of RepetitionSeed. Overrides apply to every run, before the sweep. Errors
// are *Error or Errors.
func Load(file string, overrides []Override) ([]Experiment, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: file, Msg: "cannot read the experiment file: " + err.Error()}
	}
	return Parse(file, data, overrides)
}

// Parse is Load for a document already in memory.
func Parse(file string, data []byte, overrides []Override) ([]Experiment, error) {
	doc, err := parseDocument(file, data)
	if err != nil {
		return nil, err
	}
	var errs Errors
	sweep, serr := doc.takeSweep()
	errs = append(errs, serr...)
	// Every name the file gives is checked, also where the sweep or an
	// override replaces it in every run (a misspelled base
	// path_scheduler under a [sweep] of schedulers): the file as written
	// is converted once for its unknown names. (Its other problems, a
	// key the sweep alone supplies, say, are not problems of any run.)
	if _, berr := doc.clone().convert(); len(berr) > 0 {
		for _, e := range berr {
			if strings.HasPrefix(e.Msg, "unknown ") && e.Origin == "" {
				errs = append(errs, e)
			}
		}
	}
	// A sweep given on the command line (--sweep) is one more dimension,
	// after the file's, and replaces the file's sweep of the same key.
	var sets []Override
	for _, o := range overrides {
		if o.Values == nil {
			sets = append(sets, o)
			continue
		}
		// --sweep NAME=a,b of a [[sweep.NAME]] list keeps its cases a
		// and b, in that order.
		if i := slices.IndexFunc(sweep, func(k sweepKey) bool { return k.cases != nil && k.key == o.Key }); i >= 0 {
			cases, err := selectCases(doc.file, sweep[i], o)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			sweep[i].cases = cases
			continue
		}
		sweep = slices.DeleteFunc(sweep, func(k sweepKey) bool { return k.cases == nil && k.key == o.Key })
		sweep = append(sweep, sweepKey{key: o.Key, values: o.Values, origin: o.Origin})
	}
	overrides = sets
	// An override of a swept key fixes it: that key no longer varies (and
	// a case of a [[sweep.NAME]] list no longer sets it).
	kept := sweep[:0]
	for _, k := range sweep {
		overridden := false
		for _, o := range overrides {
			overridden = overridden || o.Key == k.key
		}
		if k.cases != nil {
			k.dropOverridden(overrides)
			overridden = false
		}
		if !overridden {
			kept = append(kept, k)
		}
	}
	sweep = kept
	// Every problem is reported at once: a bad override is left out and
	// the rest of the document is still checked, run by run.
	var good []Override
	for _, o := range overrides {
		if err := doc.apply(o); err != nil {
			errs = append(errs, err)
			continue
		}
		good = append(good, o)
	}
	kept = sweep[:0]
	for _, k := range sweep {
		if k.key == "repeat" {
			errs = append(errs, &Error{File: file, Line: k.line, Key: "sweep.repeat", Msg: "cannot be swept: repeat = N repeats every grid point N times"})
			continue
		}
		if k.key == "output.figures" {
			errs = append(errs, &Error{File: file, Line: k.line, Key: "sweep.output.figures", Msg: "cannot be swept: the figures are drawn once, from the whole sweep"})
			continue
		}
		kept = append(kept, k)
	}
	sweep = kept
	var runs []Experiment
	for point, combo := range expand(sweep) {
		d := doc.clone()
		var vary, label []string
		for _, o := range good {
			if o.Key == "repeat" {
				continue // how often a point runs, not what it is
			}
			vary = append(vary, o.String())
			if ChangesExperiment(o.Key) {
				label = append(label, o.String())
			}
		}
		for _, c := range combo {
			for _, o := range c.sets {
				if err := d.apply(o); err != nil {
					errs = append(errs, err)
				}
			}
			vary = append(vary, c.label)
			label = append(label, c.label)
		}
		e, cerr := d.convert()
		errs = append(errs, cerr...)
		e.Vary, e.Label = vary, label
		e.Point = point
		e.BaseSeed = e.Seed
		for rep := range max(e.Repeat, 1) {
			r := e
			r.Repetition = rep
			r.Seed = RepetitionSeed(e.Seed, rep)
			runs = append(runs, r)
		}
	}
	// A figure of one run cannot be drawn from a sweep or repetitions:
	// said now, not after every run (issue 37).
	if len(runs) > 1 {
		for _, f := range runs[0].Output.Figures {
			if oneRunFigure(f) {
				errs = append(errs, &Error{File: file, Line: doc.lines["output.figures"], Key: "output.figures",
					Msg: fmt.Sprintf("%q draws one run, and the file has %d (draw it with mpq plot from one run's directory)", f, len(runs))})
			}
		}
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, dedup(errs)
	}
	return runs, nil
}

// RepetitionSeed is the seed of repetition rep of a grid point whose
// file gives seed: seed itself for the first repetition (so that
// repeat = 1 runs what the file says), and for the others a SplitMix64
// mix of seed and rep, kept below 2^63 so that it is a valid seed key.
func RepetitionSeed(seed uint64, rep int) uint64 {
	if rep == 0 {
		return seed
	}
	z := seed + uint64(rep)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return z >> 1
}

func dedup(es Errors) Errors {
	seen := map[string]bool{}
	var out Errors
	for _, e := range es {
		if s := e.Error(); !seen[s] {
			seen[s] = true
			out = append(out, e)
		}
	}
	return out
}

// parseDocument decodes the TOML and indexes the lines of its keys.
func parseDocument(file string, data []byte) (*document, error) {
	var root map[string]any
	if err := toml.Unmarshal(data, &root); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, _ := de.Position()
			return nil, &Error{File: file, Line: line, Key: strings.Join(de.Key(), "."), Msg: "TOML syntax: " + de.Error()}
		}
		return nil, &Error{File: file, Msg: "TOML: " + err.Error()}
	}
	d := &document{file: file, root: root, lines: map[string]int{}, origins: map[string]Override{}}
	d.indexLines(data)
	return d, nil
}

// indexLines records the line of every key with go-toml's position-aware
// parser: "path.0.rate" for the rate of the first [[path]], and so on.
func (d *document) indexLines(data []byte) {
	p := unstable.Parser{}
	p.Reset(data)
	nl := newlines(data)
	var table []string
	// arrays counts the elements of top-level arrays of tables by name,
	// counts those of every array by its indexed path ("path.1.change"),
	// so that a nested array is numbered within its parent element.
	arrays := map[string]int{}
	counts := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			// A table inside an array of tables ([path.down] after
			// [[path]]) belongs to the array's last element.
			table = table[:0]
			var name []string
			it := e.Key()
			for it.Next() {
				if n := arrays[strings.Join(name, ".")]; len(name) > 0 && n > 0 {
					table = append(table, strconv.Itoa(n-1))
				}
				part := string(it.Node().Data)
				name = append(name, part)
				table = append(table, part)
			}
			if e.Kind == unstable.ArrayTable {
				n := strings.Join(table, ".")
				table = append(table, strconv.Itoa(counts[n]))
				counts[n]++
				arrays[strings.Join(name, ".")]++
			}
			line := lineOf(nl, e)
			d.lines[strings.Join(table, ".")] = line
			// A header also defines the tables it names that no header
			// of their own defined ("path" of a [[path.change]] without
			// a [[path]]): their errors name its line.
			for i := 1; i < len(table); i++ {
				if k := strings.Join(table[:i], "."); d.lines[k] == 0 {
					d.lines[k] = line
				}
			}
		case unstable.KeyValue:
			key := append([]string(nil), table...)
			it := e.Key()
			var parts []string
			for it.Next() {
				parts = append(parts, string(it.Node().Data))
			}
			line := lineOf(nl, e)
			if len(table) == 1 && table[0] == "sweep" {
				// Sweep keys are dotted paths in quotes.
				d.lines["sweep["+strings.Join(parts, ".")+"]"] = line
				continue
			}
			key = append(key, parts...)
			d.lines[strings.Join(key, ".")] = line
		}
	}
}

// lineOf is the line a node's key starts on.
func lineOf(nl []int, n *unstable.Node) int {
	r := n.Raw
	if n.Kind == unstable.KeyValue || n.Kind == unstable.Table || n.Kind == unstable.ArrayTable {
		if it := n.Key(); it.Next() {
			r = it.Node().Raw
		}
	}
	// The line is one more than the newlines before the node's first
	// byte (the parser's Shape counts them from the start of the
	// document every time: quadratic in a file of thousands of lines).
	line, _ := slices.BinarySearch(nl, int(r.Offset))
	return line + 1
}

// newlines is the offsets of data's newline bytes, in order.
func newlines(data []byte) []int {
	var nl []int
	for i, b := range data {
		if b == '\n' {
			nl = append(nl, i)
		}
	}
	return nl
}

// clone deep-copies the document's values (lines are shared).
func (d *document) clone() *document {
	origins := make(map[string]Override, len(d.origins))
	for k, v := range d.origins {
		origins[k] = v
	}
	return &document{file: d.file, root: deepCopy(d.root).(map[string]any), lines: d.lines, origins: origins}
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = deepCopy(x)
		}
		return s
	case []map[string]any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = deepCopy(x)
		}
		return s
	}
	return v
}

// takeSweep removes the [sweep] table and returns its keys in file order
// with their value lists.
func (d *document) takeSweep() ([]sweepKey, Errors) {
	raw, ok := d.root["sweep"]
	if !ok {
		return nil, nil
	}
	delete(d.root, "sweep")
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, Errors{{File: d.file, Line: d.lines["sweep"], Key: "sweep", Msg: "must be a table of key = [values]"}}
	}
	var keys []sweepKey
	var errs Errors
	for k, v := range m {
		line := d.lines["sweep["+k+"]"]
		if d.isCaseList(k) {
			keys = append(keys, d.caseList(k, v, &errs))
			continue
		}
		if sub, ok := v.(map[string]any); ok {
			// An unquoted dotted key (transport.path_scheduler = [...])
			// arrives as a nested table: flatten it.
			flattenSweep(k, sub, func(fk string, fv any) {
				keys = append(keys, d.sweepKey(fk, fv, d.lines["sweep."+fk], &errs))
			})
			continue
		}
		keys = append(keys, d.sweepKey(k, v, line, &errs))
	}
	// A key without values is reported and left out: with it the grid
	// would be empty and nothing else in the file would be checked.
	keys = slices.DeleteFunc(keys, func(k sweepKey) bool { return len(k.values) == 0 && len(k.cases) == 0 })
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].line != keys[j].line {
			return keys[i].line < keys[j].line
		}
		return keys[i].key < keys[j].key
	})
	return keys, errs
}

func flattenSweep(prefix string, m map[string]any, f func(string, any)) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			flattenSweep(prefix+"."+k, sub, f)
			continue
		}
		f(prefix+"."+k, v)
	}
}

func (d *document) sweepKey(k string, v any, line int, errs *Errors) sweepKey {
	vals, ok := v.([]any)
	if !ok || len(vals) == 0 {
		*errs = append(*errs, &Error{File: d.file, Line: line, Key: "sweep." + k, Msg: "must be a non-empty array of values"})
	}
	return sweepKey{key: k, values: vals, line: line}
}

// sweepKey is one dimension of a sweep's grid: a key and its values, or
// (cases not nil) a [[sweep.NAME]] list of cases, each setting several
// keys at once.
type sweepKey struct {
	key    string
	values []any
	cases  []sweepCase
	line   int
	origin string // "[sweep]", or the --sweep it came from
}

// sweepCase is one value of a grid dimension: the keys it sets and the
// "key=value" that names it in the run's label.
type sweepCase struct {
	sets  []Override
	label string
}

// points is the dimension's values as cases.
func (k sweepKey) points() []sweepCase {
	if k.cases != nil {
		return k.cases
	}
	out := make([]sweepCase, len(k.values))
	for i, v := range k.values {
		origin := k.origin
		if origin == "" {
			origin = "[sweep]"
		}
		o := Override{Key: k.key, Value: v, Origin: origin, Line: k.line}
		out[i] = sweepCase{sets: []Override{o}, label: o.String()}
	}
	return out
}

// expand returns the grid of a sweep, the first key varying slowest.
func expand(keys []sweepKey) [][]sweepCase {
	out := [][]sweepCase{nil}
	for _, k := range keys {
		var next [][]sweepCase
		for _, prefix := range out {
			for _, c := range k.points() {
				next = append(next, append(append([]sweepCase(nil), prefix...), c))
			}
		}
		out = next
	}
	return out
}

// apply sets a dotted key. Arrays of tables are indexed by number or, for
// sources, by name.
func (d *document) apply(o Override) *Error {
	parts := strings.Split(o.Key, ".")
	fail := func(msg string, args ...any) *Error {
		return &Error{File: d.file, Line: o.Line, Key: o.Key, Origin: o.Origin, Msg: fmt.Sprintf(msg, args...)}
	}
	if o.Key == "" || parts[0] == "sweep" {
		return fail("cannot be set")
	}
	cur := d.root
	var canon []string
	for i := 0; i < len(parts)-1; i++ {
		p := parts[i]
		canon = append(canon, p)
		next, ok := cur[p]
		if !ok {
			if p == "path" || p == "source" {
				return fail("no [[%s]] tables", p)
			}
			m := map[string]any{}
			cur[p] = m
			cur = m
			// A table the override made: an error about it (a
			// misspelt table name) says which override it came from.
			if path := strings.Join(canon, "."); d.origins[path].Origin == "" {
				d.origins[path] = o
			}
			continue
		}
		switch t := next.(type) {
		case map[string]any:
			cur = t
		case []any:
			if i+1 >= len(parts)-1 {
				return fail("names an array of tables; add an index or name, e.g. %s.0.%s", p, parts[len(parts)-1])
			}
			i++
			m, idx := findElem(t, parts[i])
			if m == nil {
				return fail("no %s %q (use an index from 0 to %d or a name)", p, parts[i], len(t)-1)
			}
			canon = append(canon, strconv.Itoa(idx))
			cur = m
		default:
			return fail("%s is not a table", strings.Join(parts[:i+1], "."))
		}
	}
	cur[parts[len(parts)-1]] = o.Value
	d.origins[strings.Join(append(canon, parts[len(parts)-1]), ".")] = o
	return nil
}

func findElem(arr []any, sel string) (map[string]any, int) {
	if i, err := strconv.Atoi(sel); err == nil {
		if i >= 0 && i < len(arr) {
			m, _ := arr[i].(map[string]any)
			return m, i
		}
		return nil, 0
	}
	for i, x := range arr {
		if m, ok := x.(map[string]any); ok && m["name"] == sel {
			return m, i
		}
	}
	return nil, 0
}
