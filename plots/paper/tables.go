package paper

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mpq/mpq/plots"
	"github.com/mpq/mpq/trafficgen"
)

// tableI is the reference paper's Table I: the mean growth of the
// congestion windows of path 1 and path 2 per RTT in congestion
// avoidance (bytes), by inter-arrival time, message size and scheduler.
var tableI = map[string][2]float64{
	"50ms/10kB/lowrtt": {1342, 1340}, "50ms/10kB/cwr": {1264, 1263}, "50ms/10kB/cwr-red": {1190, 1189},
	"50ms/25kB/lowrtt": {1333, 1334}, "50ms/25kB/cwr": {1175, 1246}, "50ms/25kB/cwr-red": {969, 972},
	"50ms/50kB/lowrtt": {1336, 1350}, "50ms/50kB/cwr": {1111, 1102}, "50ms/50kB/cwr-red": {738, 771},
	"100ms/10kB/lowrtt": {1346, 1354}, "100ms/10kB/cwr": {1294, 1318}, "100ms/10kB/cwr-red": {1289, 1306},
	"100ms/25kB/lowrtt": {1334, 1345}, "100ms/25kB/cwr": {1288, 1254}, "100ms/25kB/cwr-red": {1183, 1200},
	"100ms/50kB/lowrtt": {1332, 1335}, "100ms/50kB/cwr": {1149, 1183}, "100ms/50kB/cwr-red": {1048, 1033},
}

// markdown renders rows (the header first) as a Markdown table.
func markdown(rows [][]string) string {
	var b strings.Builder
	for i, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if i == 0 {
			b.WriteString("|" + strings.Repeat("---|", len(r)) + "\n")
		}
	}
	return b.String()
}

// tables computes the tables of docs/results/reference-paper.md by block
// name.
func tables(load map[string][]*plots.Point) (map[string]string, error) {
	out := map[string]string{}
	for name, f := range map[string]func([]*plots.Point) (string, error){
		"table1": table1, "fig4": fig4, "fig5": func(p []*plots.Point) (string, error) { return sourcesTable(p, nil) },
		"fig6": func(p []*plots.Point) (string, error) { return sourcesTable(p, []string{"path.0.rtt", "path.1.rtt"}) },
	} {
		exp := map[string]string{"table1": "paper-fig4", "fig4": "paper-fig4", "fig5": "paper-fig5", "fig6": "paper-fig6"}[name]
		s, err := f(load[exp])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = s
	}
	out["runs"] = runsBlock(load)
	return out, nil
}

// table1 puts our Table I beside the paper's: the mean cwnd growth per
// RTT in congestion avoidance of each path ± half the 95 % confidence
// interval over the repetitions.
func table1(points []*plots.Point) (string, error) {
	rows := [][]string{{"IAT", "size", "scheduler", "path 0 (ours)", "path 1 (paper)", "path 1 (ours)", "path 2 (paper)"}}
	for _, p := range sortedFig4(points) {
		iat, size := p.Value("source.s1.interval"), p.Value("source.s1.size")
		paper, ok := tableI[iat+"/"+size+"/"+p.Scheduler]
		pp := [2]string{"–", "–"}
		if ok {
			pp = [2]string{fmt.Sprint(paper[0]), fmt.Sprint(paper[1])}
		}
		rows = append(rows, []string{iat, size, p.Scheduler,
			plots.WithCI(plots.Growth(p, 0), 0), pp[0], plots.WithCI(plots.Growth(p, 1), 0), pp[1]})
	}
	return markdown(rows), nil
}

// sortedFig4 orders Figure 4's points by inter-arrival time, size and
// then scheduler in the sweep's order.
func sortedFig4(points []*plots.Point) []*plots.Point {
	out := append([]*plots.Point(nil), points...)
	ms := func(p *plots.Point, k string) string { return p.Value(k) }
	val := func(s string) int {
		var n int
		fmt.Sscanf(s, "%d", &n)
		return n
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if x, y := val(ms(a, "source.s1.interval")), val(ms(b, "source.s1.interval")); x != y {
			return x < y
		}
		return val(ms(a, "source.s1.size")) < val(ms(b, "source.s1.size"))
	})
	return out
}

// fig4 is Figure 4 in numbers: the priority source's pooled message
// completion times (p99 and p99.9 with their 95 % order-statistic
// interval and the messages beyond them, tailCell), the mean of the repetitions' own p99 with its 95 %
// confidence interval (the interval a claim about the tail needs), the share of messages later than one and than 1.625
// RTTs of the paths (50 ms), the failed messages, and the throughput with
// its priority share.
func fig4(points []*plots.Point) (string, error) {
	rows := [][]string{{"IAT", "size", "scheduler", "messages", "MCT p50", "p90", "p99", "p99 per run", "p99.9", "max", "> 1 RTT", "> 1.625 RTT", "failed", "throughput (Mbit/s)", "priority share", "missed", "copies"}}
	for _, p := range sortedFig4(points) {
		d, sorted, err := dist(p, "s1")
		if err != nil {
			return "", err
		}
		rtt := p.Runs[0].Summary.Paths[0].RTTMS
		total, prio, _, err := plots.PointThroughput(p, plots.DefaultOptions())
		if err != nil {
			return "", err
		}
		rows = append(rows, []string{p.Value("source.s1.interval"), p.Value("source.s1.size"), p.Scheduler, fmt.Sprint(d.N),
			num(float64(d.P50), 1), num(float64(d.P90), 1), tailCell(sorted, 0.99), plots.WithCI(plots.Metric(p, "s1.mct_p99_ms"), 1),
			tailCell(sorted, 0.999), num(float64(d.Max), 1),
			num(above(sorted, rtt), 2) + " %", num(above(sorted, 1.625*rtt), 2) + " %", fmt.Sprint(d.Failed),
			plots.WithCI(total, 1), num(100*float64(prio.Mean)/float64(total.Mean), 1) + " %",
			num(perRun(p, missed), 0), num(perRun(p, copies), 0)})
	}
	return markdown(rows), nil
}

// tailCell is a pooled tail quantile with its 95 % order-statistic
// confidence interval and the messages beyond it: "75.6 [70.1, 80.2] (12)".
func tailCell(sorted []float64, p float64) string {
	tc := plots.TailCI(sorted, p)
	return fmt.Sprintf("%s %s (%d)", num(tc.Value, 1), plots.FormatInterval(tc.Lo, tc.Hi, 1), tc.Beyond)
}

// sourcesTable is Figures 5 and 6 in numbers: per point (the values of
// keys, then the scheduler) each source's pooled p50, p99 and p99.9 (the
// tails with interval and messages beyond, tailCell), the
// mean of the repetitions' own p99 with its 95 % confidence interval, and
// the throughput.
func sourcesTable(points []*plots.Point, keys []string) (string, error) {
	srcs := sources(points)
	var head []string
	for _, k := range keys {
		head = append(head, "RTT "+strings.ReplaceAll(strings.TrimSuffix(k, ".rtt"), ".", " "))
	}
	head = append(head, "scheduler")
	for _, s := range srcs {
		head = append(head, s+" p50 / p99 / p99.9")
	}
	for _, s := range srcs {
		head = append(head, s+" p99 per run")
	}
	head = append(head, "failed", "throughput (Mbit/s)", "copies")
	rows := [][]string{head}
	for _, p := range points {
		var row []string
		for _, k := range keys {
			v := p.Value(k)
			if v == "" {
				if e, err := p.Runs[0].Config(); err == nil {
					var id int
					fmt.Sscanf(strings.TrimPrefix(k, "path."), "%d", &id)
					v = e.Paths[id].RTT().String()
				}
			}
			row = append(row, v)
		}
		row = append(row, p.Scheduler)
		failed := 0
		for _, s := range srcs {
			d, sorted, err := dist(p, s)
			if err != nil {
				return "", err
			}
			failed += d.Failed
			row = append(row, num(float64(d.P50), 1)+" / "+tailCell(sorted, 0.99)+" / "+tailCell(sorted, 0.999))
		}
		for _, s := range srcs {
			row = append(row, plots.WithCI(plots.Metric(p, s+".mct_p99_ms"), 1))
		}
		total, _, _, err := plots.PointThroughput(p, plots.DefaultOptions())
		if err != nil {
			return "", err
		}
		rows = append(rows, append(row, fmt.Sprint(failed), plots.WithCI(total, 1), num(perRun(p, copies), 0)))
	}
	return markdown(rows), nil
}

// runsBlock says what produced the numbers: the runs and repetitions per
// experiment and the build.
func runsBlock(load map[string][]*plots.Point) string {
	var b strings.Builder
	var prov string
	for _, e := range Experiments {
		pts := load[e.Name]
		reps := map[int]bool{}
		for _, p := range pts {
			reps[len(p.Runs)] = true
		}
		var rs []string
		for r := range reps {
			rs = append(rs, fmt.Sprint(r))
		}
		sort.Strings(rs)
		repetitions := "repetitions"
		if len(rs) == 1 && rs[0] == "1" {
			repetitions = "repetition"
		}
		fmt.Fprintf(&b, "- `%s`: %d runs, %d grid points × %s %s\n", e.File, plots.CountRuns(pts), len(pts), strings.Join(rs, "/"), repetitions)
		if s := pts[0].Runs[0].Summary; s.Provenance != nil && prov == "" {
			pv := s.Provenance
			dirty := ""
			if pv.Dirty {
				dirty = " (with uncommitted changes)"
			}
			rev := "an unknown commit (not run in a checkout)"
			if pv.Revision != "" {
				rev = fmt.Sprintf("commit `%.12s`%s", pv.Revision, dirty)
			}
			prov = fmt.Sprintf("- built from %s, %s, backend %s\n", rev, pv.GoVersion, pv.Backend)
		}
	}
	return b.String() + prov
}

// perRun is the mean of a count over the point's runs.
func perRun(p *plots.Point, count func(*trafficgen.Summary) uint64) float64 {
	var sum uint64
	for _, r := range p.Runs {
		sum += count(r.Summary)
	}
	return float64(sum) / float64(len(p.Runs))
}

// missed counts the reservations the server's path scheduler missed, on
// every path.
func missed(s *trafficgen.Summary) uint64 {
	var n uint64
	for _, p := range s.Paths {
		if p.Server != nil {
			n += p.Server.ReservationsMissed
		}
	}
	return n
}

// copies counts the copies the server sent, on every path.
func copies(s *trafficgen.Summary) uint64 {
	var n uint64
	for _, p := range s.Paths {
		if p.Server != nil {
			n += p.Server.CopiesSent
		}
	}
	return n
}
