// Package paper reproduces the figures and tables of the reference paper
// (Noroozi et al., "Performance Evaluation of a New Scheduling Model
// Using Congestion Window Reservation": Figures 4 to 6, Tables I and II)
// from the results of its experiment files (experiments/paper-*.toml):
// the figures of docs/results/reference-paper.md as PNG (and PDF for a paper), and its
// tables, ours beside the paper's numbers, as Markdown blocks that
// replace the marked parts of that page.
package paper

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mpq/mpq/plots"
	"github.com/mpq/mpq/trafficgen"
)

// Experiments are the experiment files, in the order they run, and the
// names of their results directories.
var Experiments = []struct{ File, Name string }{
	{"paper-fig4.toml", "paper-fig4"},
	{"paper-fig5.toml", "paper-fig5"},
	{"paper-fig6.toml", "paper-fig6"},
	{"paper-timeline.toml", "paper-timeline"},
}

// Output says where the figures go.
type Output struct {
	// Results is the directory holding the experiments' results
	// directories; PNG and PDF where the figures are written.
	Results, PNG, PDF string
	// Log receives a line per file written.
	Log io.Writer
}

// figure is one figure to draw.
type figure struct {
	name, exp, kind string
	where           []string
	opts            plots.Options
}

// Generate draws every figure and computes every table from the results,
// and returns the tables as Markdown blocks by name.
func Generate(out Output) (map[string]string, error) {
	load := map[string][]*plots.Point{}
	for _, e := range Experiments {
		pts, err := plots.Load([]string{filepath.Join(out.Results, e.Name)})
		if err != nil {
			return nil, err
		}
		load[e.Name] = pts
	}
	figs, err := figures(load)
	if err != nil {
		return nil, err
	}
	for _, f := range figs {
		pts, err := plots.Filter(load[f.exp], f.where)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if err := plots.SetLabels(pts, nil); err != nil {
			return nil, err
		}
		fig, err := plots.Draw(f.kind, pts, f.opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		for _, dest := range []string{filepath.Join(out.PNG, f.name+".png"), filepath.Join(out.PDF, f.name+".pdf")} {
			if err := fig.Save(dest); err != nil {
				return nil, err
			}
			fmt.Fprintf(out.Log, "mpq paper: %s\n", dest)
		}
	}
	return tables(load)
}

// groups splits points by their values of every varied key but the path
// scheduler, in order of first appearance: the "KEY=VALUE" conditions of
// each group and a name made of its values.
func groups(points []*plots.Point) (conds [][]string, names []string) {
	seen := map[string]bool{}
	for _, p := range points {
		var cond, vals []string
		for _, kv := range p.Vary {
			k, v, _ := strings.Cut(kv, "=")
			if k == "transport.path_scheduler" || strings.HasPrefix(k, "output.") || k == "duration" {
				continue
			}
			cond, vals = append(cond, kv), append(vals, v)
		}
		key := strings.Join(cond, ",")
		if seen[key] {
			continue
		}
		seen[key] = true
		conds, names = append(conds, cond), append(names, strings.Join(vals, "-"))
	}
	return conds, names
}

// sources are the names of the sources with messages of an experiment.
func sources(points []*plots.Point) []string {
	var out []string
	for _, s := range points[0].Runs[0].Summary.Sources {
		if s.Kind != "bulk" {
			out = append(out, s.Name)
		}
	}
	return out
}

// figures lists the figures of docs/results/reference-paper.md.
func figures(load map[string][]*plots.Point) ([]figure, error) {
	var figs []figure
	opts := plots.DefaultOptions
	// Figure 4: a CCDF per inter-arrival time and size, the throughput,
	// Table I as a figure, and the cwnd of lowrtt and cwr-red.
	conds, names := groups(load["paper-fig4"])
	for i, c := range conds {
		figs = append(figs, figure{name: "fig4-ccdf-" + names[i], exp: "paper-fig4", kind: "ccdf", where: c, opts: opts()})
	}
	figs = append(figs,
		figure{name: "fig4-throughput", exp: "paper-fig4", kind: "throughput", opts: opts()},
		figure{name: "table1-growth", exp: "paper-fig4", kind: "growth", opts: opts()})
	// The cwnd of one run (the first repetition) of the largest messages
	// at the shortest interval, 20 s into the run.
	if len(conds) > 0 {
		last := conds[len(conds)-1]
		for _, c := range conds {
			if strings.Contains(strings.Join(c, ","), "50ms") && strings.Contains(strings.Join(c, ","), "50kB") {
				last = c
			}
		}
		for _, s := range []string{"lowrtt", "cwr-red"} {
			o := opts()
			o.From, o.To = 20000, 30000
			figs = append(figs, figure{name: "cwnd-" + s, exp: "paper-fig4", kind: "cwnd", where: append(append([]string{}, last...), "path_scheduler="+s, "repetition=0"), opts: o})
		}
	}
	// Figures 5 and 6: a CCDF per source (and RTT).
	for _, exp := range []string{"paper-fig5", "paper-fig6"} {
		conds, names := groups(load[exp])
		for i, c := range conds {
			for _, src := range sources(load[exp]) {
				o := opts()
				o.Source = src
				name := strings.TrimPrefix(exp, "paper-") + "-ccdf-"
				if names[i] != "" {
					name += names[i] + "-"
				}
				figs = append(figs, figure{name: name + src, exp: exp, kind: "ccdf", where: c, opts: o})
			}
		}
	}
	// The timelines around the slowest message of cwr and cwr-red.
	for _, s := range []string{"cwr", "cwr-red"} {
		figs = append(figs, figure{name: "timeline-" + s, exp: "paper-timeline", kind: "timeline", where: []string{"path_scheduler=" + s}, opts: opts()})
	}
	return figs, nil
}

// dist is the pooled distribution of a source's times at a point.
func dist(p *plots.Point, source string) (*trafficgen.Dist, []float64, error) {
	o := plots.DefaultOptions()
	o.Source = source
	vals, _, err := plots.PooledTimes(p, o)
	if err != nil {
		return nil, nil, err
	}
	sort.Float64s(vals)
	return trafficgen.DistributionOf(vals), vals, nil
}

// above is the fraction of sorted values above x, in per cent.
func above(sorted []float64, x float64) float64 {
	i := sort.Search(len(sorted), func(i int) bool { return sorted[i] > x })
	return 100 * float64(len(sorted)-i) / float64(len(sorted))
}

func num(v float64, prec int) string { return plots.FormatNumber(v, prec) }
