package experiment

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mpq/mpq/internal/names"
)

// A [[sweep.NAME]] array of tables is a dimension of the sweep's grid
// whose values are cases: each case a table of dotted keys, all set
// together in the runs of that case, and an optional name that labels
// the runs ("NAME=case-name"). It expresses a list of scenarios that a
// grid of independent keys cannot, e.g. the CoNEXT'17 design's two-path
// scenarios:
//
//	[[sweep.scenario]]
//	name = "s001"
//	"path.0.rate" = "51.83Mbit"
//	"path.1.rate" = "45.38Mbit"
//
//	[[sweep.scenario]]
//	name = "s002"
//	"path.0.rate" = "49.44Mbit"
//	"path.1.rate" = "34.8Mbit"
//
// Such a list combines with the [sweep] keys and the other lists like a
// key: the dimensions are ordered by their first line, the first varying
// slowest.

// isCaseList reports whether [sweep] entry k is an array of tables
// ([[sweep.k]]), not a key's list of values (an inline array of inline
// tables is a list of values).
func (d *document) isCaseList(k string) bool {
	_, ok := d.lines["sweep."+k+".0"]
	return ok
}

// caseList reads the [[sweep.k]] cases: each case's keys in file order,
// as overrides carrying their line and the case for error messages.
func (d *document) caseList(k string, v any, errs *Errors) sweepKey {
	var elems []any
	switch t := v.(type) {
	case []any:
		elems = t
	case []map[string]any:
		for _, m := range t {
			elems = append(elems, m)
		}
	}
	dim := sweepKey{key: k, line: d.lines["sweep."+k+".0"], cases: []sweepCase{}}
	fail := func(line int, key, format string, args ...any) {
		*errs = append(*errs, &Error{File: d.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	names := map[string]int{} // case name -> its line
	for i, e := range elems {
		prefix := "sweep." + k + "." + strconv.Itoa(i)
		line := d.lines[prefix]
		m, ok := e.(map[string]any)
		if !ok {
			fail(line, "sweep."+k, "case %d is not a table", i)
			continue
		}
		var c sweepCase
		origin := fmt.Sprintf("[[sweep.%s]] %d", k, i)
		if n, ok := m["name"]; ok {
			s, isStr := n.(string)
			switch {
			case !isStr || s == "":
				fail(d.lineOr(prefix+".name", line), "sweep."+k+".name", "must be a non-empty string")
			case strings.ContainsAny(s, "/\\,=") || strings.TrimSpace(s) != s:
				fail(d.lineOr(prefix+".name", line), "sweep."+k+".name", "%q: a case name may not contain '/', '\\', ',' or '=' or begin or end with a space (it names the run's directory)", s)
			case names[s] > 0:
				fail(d.lineOr(prefix+".name", line), "sweep."+k+".name", "%q names two cases (the other at line %d)", s, names[s])
			default:
				names[s] = d.lineOr(prefix+".name", line)
				origin = fmt.Sprintf("[[sweep.%s]] %s", k, s)
				c.label = k + "=" + s
			}
		}
		for key, val := range m {
			if key == "name" {
				continue
			}
			add := func(key string, val any) {
				kl := d.lineOr(prefix+"."+key, line)
				first, _, _ := strings.Cut(key, ".")
				switch first {
				case "sweep", "repeat":
					fail(kl, "sweep."+k+"."+key, "cannot be set by a case")
					return
				}
				c.sets = append(c.sets, Override{Key: key, Value: val, Origin: origin, Line: kl})
			}
			if sub, ok := val.(map[string]any); ok {
				flattenSweep(key, sub, add)
				continue
			}
			add(key, val)
		}
		if len(c.sets) == 0 {
			fail(line, "sweep."+k, "case %d sets no key (want \"dotted.key\" = value lines)", i)
			continue
		}
		sort.SliceStable(c.sets, func(a, b int) bool {
			if c.sets[a].Line != c.sets[b].Line {
				return c.sets[a].Line < c.sets[b].Line
			}
			return c.sets[a].Key < c.sets[b].Key
		})
		if c.label == "" {
			c.label = c.setsLabel()
		}
		dim.cases = append(dim.cases, c)
	}
	if len(elems) > 0 && len(dim.cases) == 0 {
		dim.cases = nil // every case bad: reported, and left out
	}
	return dim
}

// setsLabel labels an unnamed case by the keys it sets.
func (c *sweepCase) setsLabel() string {
	parts := make([]string, len(c.sets))
	for j, o := range c.sets {
		parts[j] = o.String()
	}
	return strings.Join(parts, ",")
}

// lineOr is the line of key, or def if it has none.
func (d *document) lineOr(key string, def int) int {
	if l, ok := d.lines[key]; ok {
		return l
	}
	return def
}

// dropOverridden removes from every case the keys an override sets: a
// key set on the command line no longer varies.
func (k *sweepKey) dropOverridden(overrides []Override) {
	for i := range k.cases {
		c := &k.cases[i]
		unnamed := c.label == c.setsLabel()
		kept := c.sets[:0]
		for _, o := range c.sets {
			fixed := false
			for _, ov := range overrides {
				fixed = fixed || ov.Key == o.Key
			}
			if !fixed {
				kept = append(kept, o)
			}
		}
		c.sets = kept
		if unnamed {
			c.label = c.setsLabel()
		}
		if c.label == "" { // every key it set is fixed: its index names it
			c.label = k.key + "=" + strconv.Itoa(i)
		}
	}
}

// selectCases returns the cases of the [[sweep.NAME]] list dim that the
// --sweep o names (o.Values, each a case's name), in o's order.
func selectCases(file string, dim sweepKey, o Override) ([]sweepCase, *Error) {
	var known []string
	for _, c := range dim.cases {
		if name, ok := strings.CutPrefix(c.label, dim.key+"="); ok {
			known = append(known, name)
		}
	}
	fail := func(format string, args ...any) *Error {
		return &Error{File: file, Key: o.Key, Origin: o.Origin, Msg: fmt.Sprintf(format, args...)}
	}
	if len(known) == 0 {
		return nil, fail("the cases of [[sweep.%s]] have no names to choose them by", dim.key)
	}
	var out []sweepCase
	seen := map[string]bool{}
	for _, v := range o.Values {
		name := fmt.Sprint(v)
		i := slices.IndexFunc(dim.cases, func(c sweepCase) bool { return c.label == dim.key+"="+name })
		if i < 0 {
			msg := fmt.Sprintf("no case of [[sweep.%s]] is named %q (its cases: %s)", dim.key, name, strings.Join(known, ", "))
			if s := names.Closest(name, known); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return nil, fail("%s", msg)
		}
		if seen[name] {
			return nil, fail("case %q named twice", name)
		}
		seen[name] = true
		out = append(out, dim.cases[i])
	}
	return out, nil
}
