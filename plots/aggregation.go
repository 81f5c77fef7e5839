package plots

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/mpq/mpq/trafficgen"
)

// Benefit is the experimental aggregation benefit of one entry of a
// single path / multipath sweep whose scenarios come in both path orders
// (as experiments/conext17's do): how the multipath download compares
// with the single path downloads over each of the scenario's two paths,
// the entry's own (on its first path) and its swapped twin's (on the
// other).
//
// With goodputs G1, G2 of the single path downloads (the file over its
// completion time), Gmax the larger and Gm the multipath download's, the
// benefit is (Gm - Gmax) / (G1 + G2 - Gmax) when Gm >= Gmax and
// (Gm - Gmax) / Gmax otherwise (De Coninck's thesis, UCLouvain, March
// 2020, equation 5.1, after Paasch et al.): 0 is as fast as the best single
// path, 1 as fast as both single paths' goodputs summed, -1 a multipath
// download that did not complete; above 0 multipath beat the best path.
type Benefit struct {
	// Name is the experiment's, Scenario the entry's point (as in Ratio).
	Name, Scenario string
	// BestFirst reports that the connection started on the better path:
	// the entry's single path download was at least as fast as its
	// twin's.
	BestFirst bool
	// EAB is the benefit; NaN when the entry has none, Failed then says
	// why (a single path download that did not complete, or no twin).
	EAB    float64
	Failed string
}

// Benefits computes the aggregation benefit of every entry of the ratio
// sweep of points (see Ratios), pairing each entry with the one of the
// same experiment whose two paths are its own swapped.
func Benefits(points []*Point, o Options) ([]Benefit, error) {
	rs, err := Ratios(points, o)
	if err != nil {
		return nil, err
	}
	// Twins: the entries with the same two paths, one in each order (or,
	// for two equal paths, any two).
	groups := map[string][]int{}
	key := func(r Ratio) string {
		a, b := r.paths[0], r.paths[1]
		if b < a {
			a, b = b, a
		}
		return r.Name + "\x00" + a + "\x00" + b
	}
	for i, r := range rs {
		groups[key(r)] = append(groups[key(r)], i)
	}
	out := make([]Benefit, len(rs))
	for i, r := range rs {
		b := Benefit{Name: r.Name, Scenario: r.Scenario, EAB: math.NaN()}
		g := groups[key(r)]
		twin := -1
		if r.paths[0] != "" && len(g) == 2 && (r.paths[0] == r.paths[1] || rs[g[0]].paths[0] != rs[g[1]].paths[0]) {
			twin = g[0]
			if twin == i {
				twin = g[1]
			}
		}
		switch {
		case twin < 0:
			b.Failed = "no entry of the same scenario with the paths swapped"
		case r.missing: // a multipath time missing for want of runs is no failed download
			b.Failed = r.Failed
		case math.IsNaN(r.Single) || !(r.Single > 0):
			b.Failed = r.Failed // Ratios' "single path: ..."
		case math.IsNaN(rs[twin].Single) || !(rs[twin].Single > 0):
			b.Failed = "single path with the paths swapped: " + strings.TrimPrefix(rs[twin].Failed, "single path: ")
		default:
			b.BestFirst = r.Single <= rs[twin].Single
			b.EAB = aggregationBenefit(1/r.Single, 1/rs[twin].Single, 1/r.Multi)
		}
		out[i] = b
	}
	return out, nil
}

// aggregationBenefit is the benefit of a multipath goodput gm over the
// single path goodputs g1 and g2 (see Benefit); a multipath download
// that did not complete (gm NaN or 0) is -1.
func aggregationBenefit(g1, g2, gm float64) float64 {
	if math.IsNaN(gm) || math.IsInf(gm, 0) || gm < 0 {
		gm = 0
	}
	gmax := math.Max(g1, g2)
	if gm >= gmax {
		return (gm - gmax) / (g1 + g2 - gmax)
	}
	return (gm - gmax) / gmax
}

// BenefitStats summarises the benefits of a set of entries: how many, how
// many have none (Failed), the nearest-rank quantiles of the others and
// the fractions of them above 0 (multipath beat the best single path) and
// below 0.
type BenefitStats struct {
	N, Failed                  int
	P10, P25, Median, P75, P90 float64
	Positive, Negative         float64
}

// NewBenefitStats computes the statistics of bs.
func NewBenefitStats(bs []Benefit) BenefitStats {
	s := BenefitStats{N: len(bs), Positive: math.NaN(), Negative: math.NaN()}
	var v []float64
	for _, b := range bs {
		if math.IsNaN(b.EAB) {
			s.Failed++
			continue
		}
		v = append(v, b.EAB)
	}
	sort.Float64s(v)
	q := func(p float64) float64 { return trafficgen.NearestRank(v, p) }
	s.P10, s.P25, s.Median, s.P75, s.P90 = q(0.1), q(0.25), q(0.5), q(0.75), q(0.9)
	if len(v) > 0 {
		pos, neg := 0, 0
		for _, x := range v {
			if x > 0 {
				pos++
			} else if x < 0 {
				neg++
			}
		}
		s.Positive, s.Negative = float64(pos)/float64(len(v)), float64(neg)/float64(len(v))
	}
	return s
}

// AggregationTable gives, per experiment, for all its entries and for
// those that started on the better and on the worse path, the entries,
// those without a benefit, the quantiles of the benefit and the
// fractions where multipath beat the best single path (above 0) and
// where it did not reach it (below 0).
func AggregationTable(points []*Point, o Options) (*Table, error) {
	bs, err := Benefits(points, o)
	if err != nil {
		return nil, err
	}
	t := &Table{
		MD: [][]string{{"experiment", "entries", "n", "failed", "p10", "p25", "median", "p75", "p90",
			"above 0 (beat the best path)", "below 0"}},
		CSV: [][]string{{"experiment", "entries", "n", "failed", "p10", "p25", "median", "p75", "p90",
			"frac_positive", "frac_negative"}},
	}
	for _, g := range benefitGroups(bs) {
		for _, sub := range []struct {
			label string
			bs    []Benefit
		}{{"all", g.all}, {"started on the better path", g.best}, {"started on the worse path", g.worst}} {
			st := NewBenefitStats(sub.bs)
			md := []string{g.name, sub.label, strconv.Itoa(st.N), strconv.Itoa(st.Failed)}
			cs := []string{g.name, sub.label, strconv.Itoa(st.N), strconv.Itoa(st.Failed)}
			for _, v := range []float64{st.P10, st.P25, st.Median, st.P75, st.P90} {
				md = append(md, FormatNumber(v, 2))
				cs = append(cs, trafficgen.FormatCSV(v))
			}
			md = append(md, percentCell(st.Positive), percentCell(st.Negative))
			cs = append(cs, trafficgen.FormatCSV(st.Positive), trafficgen.FormatCSV(st.Negative))
			t.MD, t.CSV = append(t.MD, md), append(t.CSV, cs)
		}
	}
	return t, nil
}

// benefitGroup is one experiment's entries (Benefit.Name, in the order
// met): all of them, and those with a benefit that started on the better
// and on the worse path.
type benefitGroup struct {
	name             string
	all, best, worst []Benefit
}

// benefitGroups groups bs by experiment.
func benefitGroups(bs []Benefit) []benefitGroup {
	var out []benefitGroup
	at := map[string]int{}
	for _, b := range bs {
		i, ok := at[b.Name]
		if !ok {
			i = len(out)
			at[b.Name] = i
			out = append(out, benefitGroup{name: b.Name})
		}
		g := &out[i]
		g.all = append(g.all, b)
		switch {
		case math.IsNaN(b.EAB): // in "all" only: no better path known
		case b.BestFirst:
			g.best = append(g.best, b)
		default:
			g.worst = append(g.worst, b)
		}
	}
	return out
}

// AggregationSummaryTable gives a row per experiment (per invocation
// when several of one experiment differ, see Point.Variant), for
// comparing experiments or variants side by side: its entries, those
// without a benefit, the median benefit and the fractions above 0 of
// the entries with a benefit, all and by start (the aggregation
// table's "above 0" column of its three rows).
func AggregationSummaryTable(points []*Point, o Options) (*Table, error) {
	bs, err := Benefits(points, o)
	if err != nil {
		return nil, err
	}
	t := &Table{
		MD: [][]string{{"experiment", "entries", "failed", "median", "above 0", "above 0, started on the better path",
			"above 0, started on the worse path"}},
		CSV: [][]string{{"experiment", "n", "failed", "median", "frac_positive", "frac_positive_better", "frac_positive_worse"}},
	}
	for _, g := range benefitGroups(bs) {
		all, best, worst := NewBenefitStats(g.all), NewBenefitStats(g.best), NewBenefitStats(g.worst)
		n, failed := strconv.Itoa(all.N), strconv.Itoa(all.Failed)
		t.MD = append(t.MD, []string{g.name, n, failed, FormatNumber(all.Median, 2),
			percentCell(all.Positive), percentCell(best.Positive), percentCell(worst.Positive)})
		f := trafficgen.FormatCSV
		t.CSV = append(t.CSV, []string{g.name, n, failed, f(all.Median), f(all.Positive), f(best.Positive), f(worst.Positive)})
	}
	return t, nil
}
