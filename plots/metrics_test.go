package plots

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/trafficgen"
)

// TestMetricsTable: the metrics table's columns are the metrics asked
// for, in order, each computed as its doc comment says (threeReps: the
// server's throughput 20, 22, 24 Mbit/s, mean 22 ± 4.97; path 0's growth
// 1133.333 ± 379.458).
func TestMetricsTable(t *testing.T) {
	reps := tenTimes()
	for i := range reps {
		reps[i].competitors = []trafficgen.CompetitorSummary{{Name: "c", GoodputMbps: reps[i].total / 2}}
	}
	points := loadFixtures(t, reps...)
	for _, tc := range []struct {
		name    string
		metrics []string
		wantMD  []string // rows of the Markdown, the header first
		wantCSV string   // the CSV's first two lines
		wantErr string
	}{
		{name: "headline metrics", metrics: []string{"throughput_server_mbps", "path.0.cwnd_growth_ca_bytes_per_rtt"},
			wantMD: []string{"| run | runs | throughput_server_mbps | path.0.cwnd_growth_ca_bytes_per_rtt |",
				"| cwr-red | 3 | 22.00 ± 4.97 | 1133 ± 379 |", "| lowrtt | 1 of 2 | 30.00 | 1340 |"},
			wantCSV: "label,runs,throughput_server_mbps,throughput_server_mbps_ci95_lo,throughput_server_mbps_ci95_hi,throughput_server_mbps_n," +
				"path.0.cwnd_growth_ca_bytes_per_rtt,path.0.cwnd_growth_ca_bytes_per_rtt_ci95_lo,path.0.cwnd_growth_ca_bytes_per_rtt_ci95_hi,path.0.cwnd_growth_ca_bytes_per_rtt_n\n" +
				"cwr-red,3,22.000,17.032,26.968,3,1133.333,753.875,1512.792,3\n"},
		{name: "pooled quantiles", metrics: []string{"s1.pooled_mct_p50_ms", "s1.pooled_mct_p90_ms"},
			// 30 messages of cwr-red pooled (10 to 100 ms, each three
			// times): rank 15 and 27. The p50's interval, B ~ Bin(30,
			// 0.5): P(B <= 9) = 0.021 and P(B >= 21) = 0.021 are the
			// last within 0.025, ranks 10 and 21: 40 and 70 ms. The
			// p90's upper end: P(B = 30) = 0.9^30 = 0.042 > 0.025, no
			// rank bounds it.
			wantMD: []string{"| run | runs | s1.pooled_mct_p50_ms | s1.pooled_mct_p90_ms |", "| cwr-red | 3 | 50.0 [40.0, 70.0] | 90.0 [80.0, +Inf] |"},
			wantCSV: "label,runs,s1.pooled_mct_p50_ms,s1.pooled_mct_p50_ms_ci95_lo,s1.pooled_mct_p50_ms_ci95_hi,s1.pooled_mct_p50_ms_n," +
				"s1.pooled_mct_p90_ms,s1.pooled_mct_p90_ms_ci95_lo,s1.pooled_mct_p90_ms_ci95_hi,s1.pooled_mct_p90_ms_n\n" +
				"cwr-red,3,50.000,40.000,70.000,3,90.000,80.000,+Inf,3\n"},
		{name: "the largest", metrics: []string{"s1.pooled_mct_max_ms"},
			wantMD: []string{"| run | runs | s1.pooled_mct_max_ms |", "| cwr-red | 3 | 100.0 |"}},
		{name: "the smallest", metrics: []string{"s1.pooled_mct_min_ms"},
			wantMD: []string{"| run | runs | s1.pooled_mct_min_ms |", "| cwr-red | 3 | 10.0 |"}},
		{name: "a ratio to a column without columns", metrics: []string{"throughput_server_mbps/[tls]"},
			wantErr: "needs --columns"},
		{name: "late messages", metrics: []string{"s1.pooled_mct_over_75ms", "s1.pooled_mct_over_99.5ms", "s1.pooled_mct_over_100ms"},
			// 80, 90 and 100 ms in each of the three runs; 100 ms is not
			// over 100 ms.
			wantMD: []string{"| run | runs | s1.pooled_mct_over_75ms | s1.pooled_mct_over_99.5ms | s1.pooled_mct_over_100ms |", "| cwr-red | 3 | 9 | 3 | 0 |"}},
		{name: "a ratio per run", metrics: []string{"throughput_server_mbps/competitor.c.goodput_mbps"},
			wantMD: []string{"| run | runs | throughput_server_mbps/competitor.c.goodput_mbps |", "| cwr-red | 3 | 2.00 ± 0.00 |"}},
		{name: "the worst, best and median run", metrics: []string{"throughput_server_mbps@max", "throughput_server_mbps@min", "path.0.cwnd_growth_ca_bytes_per_rtt@median"},
			// 20, 22 and 24 Mbit/s in cwr-red's three runs; path 0's
			// growth 1000, 1100, 1300: the median 1100.
			wantMD: []string{"| run | runs | throughput_server_mbps@max | throughput_server_mbps@min | path.0.cwnd_growth_ca_bytes_per_rtt@median |", "| cwr-red | 3 | 24.00 | 20.00 | 1100 |"}},
		{name: "the spread of the runs", metrics: []string{"throughput_server_mbps@sd", "path.0.cwnd_growth_ca_bytes_per_rtt@sd"},
			// 20, 22, 24: mean 22, squares 4 + 0 + 4 over 2, sd 2;
			// 1000, 1100, 1300: mean 1133.3, (17777.8 + 1111.1 +
			// 27777.8) / 2 = 23333.3, sd 152.75.
			wantMD: []string{"| cwr-red | 3 | 2.00 | 152.8 |"}},
		{name: "neither max nor min", metrics: []string{"throughput_server_mbps@p50"}, wantErr: "want @max, @min, @median, @sd, @reps or @under_X"},
		{name: "no metric", wantErr: "name the columns with --metric"},
		{name: "unknown metric", metrics: []string{"goodput_mbps"}, wantErr: "--metric goodput_mbps: no such metric"},
		{name: "unknown half of a ratio", metrics: []string{"throughput_server_mbps/x"}, wantErr: "--metric x: no such metric"},
		{name: "the wrong time of a source", metrics: []string{"s1.pooled_response_p99_ms"}, wantErr: "have a mct time, not response (s1.pooled_mct_p99_ms)"},
		{name: "the wrong time of a late count", metrics: []string{"s1.pooled_response_over_40ms"}, wantErr: "not response (s1.pooled_mct_over_40ms)"},
		{name: "no such source", metrics: []string{"s9.pooled_mct_p99_ms"}, wantErr: "--source s9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md, csv, ok := metricsCase(t, points, tc.metrics, tc.wantErr)
			if !ok {
				return
			}
			for _, row := range tc.wantMD {
				if !strings.Contains(md, row+"\n") {
					t.Errorf("markdown lacks %q:\n%s", row, md)
				}
			}
			if tc.wantCSV != "" && !strings.HasPrefix(csv, tc.wantCSV) {
				t.Errorf("csv:\n%s\nwant it to start with:\n%s", csv, tc.wantCSV)
			}
		})
	}
	if _, err := Draw("metrics", points, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "is a table") {
		t.Errorf("drawing the metrics table: %v", err)
	}
}

// metricsCase tabulates the metrics of the points: with wantErr, it
// checks that they fail with an input error saying so and returns
// false; else the table's Markdown and CSV.
func metricsCase(t *testing.T, points []*Point, metrics []string, wantErr string) (md, csv string, ok bool) {
	t.Helper()
	o := DefaultOptions()
	o.Metrics = metrics
	tab, err := Tabulate("metrics", points, o)
	if wantErr != "" {
		var ie *InputError
		if err == nil || !strings.Contains(err.Error(), wantErr) || !errors.As(err, &ie) {
			t.Fatalf("error %v, want an input error with %q", err, wantErr)
		}
		return "", "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return tableText(t, tab, "md"), tableText(t, tab, "csv"), true
}

// tenTimes are threeReps with s1's times 10, 20, ..., 100 ms in each
// run (created at 100, 150, ..., 550 ms).
func tenTimes() []fixture {
	reps := threeReps()
	for i := range reps {
		reps[i].times = []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	}
	return reps
}

// TestMetricsTableSaysHowManyRuns: a metric some runs lack (a competitor
// in two of the three) is the mean of those that have it, and the table
// says over how many: "(2 of 3 runs)" and the CSV's _n.
func TestMetricsTableSaysHowManyRuns(t *testing.T) {
	reps := threeReps()
	for _, i := range []int{0, 1, 3} { // cwr-red's first two, lowrtt's
		reps[i].competitors = []trafficgen.CompetitorSummary{{Name: "c", GoodputMbps: 10}}
	}
	o := DefaultOptions()
	o.Metrics = []string{"competitor.c.goodput_mbps"}
	tab, err := Tabulate("metrics", loadFixtures(t, reps...), o)
	if err != nil {
		t.Fatal(err)
	}
	if md := tableText(t, tab, "md"); !strings.Contains(md, "| cwr-red | 3 | 10.00 ± 0.00 (2 of 3 runs) |") {
		t.Errorf("markdown:\n%s", md)
	}
	if csv := tableText(t, tab, "csv"); !strings.Contains(csv, "cwr-red,3,10.000,10.000,10.000,2\n") {
		t.Errorf("csv:\n%s", csv)
	}
}

// TestMetricsMedianOfEven: the median of an even number of runs is the
// mean of the two middle values (22 and 24 of 20, 22, 24, 30: 23).
func TestMetricsMedianOfEven(t *testing.T) {
	reps := threeReps()
	reps = append(reps, fixture{rep: 3, sched: "cwr-red", times: []float64{25}, total: 30, prio: 1.6})
	if md := metricsMD(t, loadFixtures(t, reps...), "", "throughput_server_mbps@median"); !strings.Contains(md, "| cwr-red | 4 | 23.00 |") {
		t.Errorf("markdown:\n%s", md)
	}
}

// TestMetricsPivotFixedKey: a key each column's value fixes (the path
// scheduler of a transport.kind) splits no row; a mean below 0.1 has
// three decimals.
func TestMetricsPivotFixedKey(t *testing.T) {
	var fs []fixture
	for i, c := range []struct {
		kind, sched, size string
		total             float64
	}{{"mpq", "lowrtt", "10kB", 20}, {"tcp", "tcp", "10kB", 30}, {"mpq", "lowrtt", "50kB", 0.0077}, {"tcp", "tcp", "50kB", 0.0046}} {
		fs = append(fs, fixture{point: i, sched: c.sched, times: []float64{25},
			vary: []string{"transport.kind=" + c.kind, "source.s1.size=" + c.size}, total: c.total, prio: 0})
	}
	want := "| s1.size | runs | mpq | tcp |\n|---|---|---|---|\n" +
		"| 10kB | 1 of 2 | 20.00 | 30.00 |\n| 50kB | 1 of 2 | 0.008 | 0.005 |\n"
	if md := metricsMD(t, loadFixtures(t, fs...), "transport.kind", "throughput_server_mbps"); md != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", md, want)
	}
}

// TestMetricsPivot: --columns sets a varied key's values side by side:
// a row per value of the other varied key, a column per scheduler (in
// the order the points give them) for each metric, "–" where no point
// is, and a runs column saying each row's runs.
func TestMetricsPivot(t *testing.T) {
	var fs []fixture
	for i, c := range []struct {
		sched, size string
		total       float64
	}{{"lowrtt", "10kB", 20}, {"cwr", "10kB", 30}, {"lowrtt", "50kB", 22}} {
		fs = append(fs, fixture{point: i, sched: c.sched, times: []float64{25},
			vary: []string{"transport.path_scheduler=" + c.sched, "source.s1.size=" + c.size}, total: c.total, prio: 1})
	}
	points := loadFixtures(t, fs...)
	o := DefaultOptions()
	o.Metrics, o.Columns = []string{"throughput_server_mbps"}, "path_scheduler"
	tab, err := Tabulate("metrics", points, o)
	if err != nil {
		t.Fatal(err)
	}
	// The fixtures' sweep repeats twice; each point has one run.
	want := "| s1.size | runs | lowrtt | cwr |\n|---|---|---|---|\n" +
		"| 10kB | 1 of 2 | 20.00 | 30.00 |\n| 50kB | 1 of 2 | 22.00 | – |\n"
	if md := tableText(t, tab, "md"); md != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", md, want)
	}
	if csv := tableText(t, tab, "csv"); !strings.HasPrefix(csv, "s1.size,runs,throughput_server_mbps[lowrtt],") ||
		!strings.Contains(csv, "\n50kB,1,22.000,,,1,,,,0\n") {
		t.Errorf("csv:\n%s", csv)
	}
	if md := metricsMD(t, points, "path_scheduler", "throughput_server_mbps", "s1.pooled_mct_p50_ms"); !strings.HasPrefix(md, "| s1.size | runs | throughput_server_mbps lowrtt | throughput_server_mbps cwr | s1.pooled_mct_p50_ms lowrtt | s1.pooled_mct_p50_ms cwr |\n") {
		t.Errorf("two metrics:\n%s", md)
	}
	// A point of another invocation that does not vary a row's key.
	fs = append(fs, fixture{point: 0, sched: "lowrtt", times: []float64{25}, total: 25, prio: 1, sha: "other",
		vary: []string{"transport.path_scheduler=lowrtt"}})
	dir := t.TempDir()
	for i, f := range fs {
		writeFixture(t, filepath.Join(dir, fmt.Sprint(i)), f)
	}
	all, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if md := metricsMD(t, all, "path_scheduler", "throughput_server_mbps"); !strings.Contains(md, "| (not set) | 1 of 2 | 25.00 | – |") {
		t.Errorf("a key not set:\n%s", md)
	}
	o.Columns = "congestion"
	if _, err := Tabulate("metrics", points, o); err == nil || !strings.Contains(err.Error(), "--columns congestion: not a key the runs vary") {
		t.Errorf("an unvaried key: %v", err)
	}
}

// metricsMD is the metrics table of the points, pivoted by columns (""
// for none), as Markdown.
func metricsMD(t *testing.T, points []*Point, columns string, metrics ...string) string {
	t.Helper()
	o := DefaultOptions()
	o.Metrics, o.Columns = metrics, columns
	tab, err := Tabulate("metrics", points, o)
	if err != nil {
		t.Fatal(err)
	}
	return tableText(t, tab, "md")
}

// TestMetricsNoMessages: a point whose source delivered no message (all
// in the warm-up, or a run too short) has no pooled quantile and no
// largest time: "–", not a failure.
func TestMetricsNoMessages(t *testing.T) {
	points := loadFixtures(t, fixture{sched: "cwr", times: []float64{30, 40}, warmup: 2})
	md := metricsMD(t, points, "", "s1.pooled_mct_max_ms", "s1.pooled_mct_p99_ms", "s1.pooled_mct_over_10ms")
	if !strings.Contains(md, "| cwr | 1 of 2 | – | – | 0 |") {
		t.Errorf("markdown:\n%s", md)
	}
}

// TestMetricsRatioToColumn: NAME/[VALUE] is the ratio of the means, with
// the smallest and largest ratio of runs of one repetition number.
func TestMetricsRatioToColumn(t *testing.T) {
	var fs []fixture
	for _, c := range []struct {
		point, rep int
		kind, size string
		total      float64
	}{
		{0, 0, "mpq", "10kB", 20}, {0, 1, "mpq", "10kB", 30}, {1, 0, "tls", "10kB", 40}, {1, 1, "tls", "10kB", 60},
		{2, 0, "mpq", "50kB", 10}, {3, 0, "tls", "50kB", 20}, {4, 0, "tcp", "50kB", 5},
	} {
		fs = append(fs, fixture{point: c.point, rep: c.rep, sched: c.kind, times: []float64{25},
			vary: []string{"transport.kind=" + c.kind, "source.s1.size=" + c.size}, total: c.total})
	}
	points := loadFixtures(t, fs...)
	// 10kB: means 25 and 50, 0.5; repetition 0 20/40, repetition 1
	// 30/60 (unpaired, 20/60 and 30/40 would widen the range). 50kB: one
	// pair, 10/20; tcp 5/20. 10kB has no tcp point.
	// No column for tls itself: its ratio to itself is 1.
	want := "| s1.size | runs | mpq | tcp |\n|---|---|---|---|\n" +
		"| 10kB | 2 | 0.500 [0.500, 0.500] | – |\n" +
		"| 50kB | 1 of 2 | 0.500 | 0.250 |\n"
	if md := metricsMD(t, points, "transport.kind", "throughput_server_mbps/[tls]"); md != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", md, want)
	}
	o := DefaultOptions()
	o.Metrics, o.Columns = []string{"throughput_server_mbps/[quic-go]"}, "transport.kind"
	if _, err := Tabulate("metrics", points, o); err == nil || !strings.Contains(err.Error(), "quic-go is not a value of transport.kind") {
		t.Errorf("an unknown column: %v", err)
	}
}

// TestRunFacts: the facts of a run besides runs.csv's, from its
// summary.json's transport section and its emulator.json (the paths',
// not a shared bottleneck's, whose packets the paths count too).
func TestRunFacts(t *testing.T) {
	dir := t.TempDir()
	emu := `[{"path": 0, "up": {"dropped_loss": 3, "late_max_ms": 1.5}, "down": {"dropped_loss": 2, "late_max_ms": 4.25}},
 {"path": 1, "up": {"dropped_loss": 1, "late_max_ms": 0.5}, "down": {}},
 {"bottleneck": "b", "up": {"dropped_loss": 100, "late_max_ms": 9}, "down": {}}]`
	if err := os.WriteFile(filepath.Join(dir, "emulator.json"), []byte(emu), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Run{Dir: dir, Summary: &trafficgen.Summary{Transport: trafficgen.TransportSummary{Kind: "tls", Connections: 3, MaxConnections: 1, ConnectionsPer1000: 2.5}}}
	got := map[string]float64{}
	for _, m := range r.metrics() {
		got[m.Name] = m.Value
	}
	for name, want := range map[string]float64{"transport.connections": 3, "transport.max_connections": 1,
		"transport.connections_per_1000": 2.5, "emulator.late_max_ms": 4.25, "emulator.dropped_loss": 6} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	// A simulator's run: no connections counted, no emulator.
	sim := &Run{Dir: t.TempDir(), Summary: &trafficgen.Summary{Transport: trafficgen.TransportSummary{Kind: "mpq"}}}
	for _, m := range sim.metrics()[len(resultset.Headline(sim.Summary)):] {
		if !math.IsNaN(m.Value) {
			t.Errorf("simulator run: %s = %v, want NaN", m.Name, m.Value)
		}
	}
}

// perRepFixtures are three runs of cwr-red, written last first: s1's
// times (created at 100, 150, 200, 250 and 300 ms) are 10, 50, 20, 60,
// 30 ms in rep0; 45, 15, 70, 25, 35 in rep1; 5, 10, failed (+Inf), 20,
// 100 in rep2; the server's throughput 20, 22.5 and 24 Mbit/s; a
// competitor c of 10 Mbit/s in rep0 and rep1 only.
func perRepFixtures() []fixture {
	times := [][]float64{{10, 50, 20, 60, 30}, {45, 15, 70, 25, 35}, {5, 10, math.Inf(1), 20, 100}}
	totals := []float64{20, 22.5, 24}
	var fs []fixture
	for rep := 2; rep >= 0; rep-- {
		f := fixture{rep: rep, sched: "cwr-red", times: times[rep], total: totals[rep], prio: 1.6}
		if rep < 2 {
			f.competitors = []trafficgen.CompetitorSummary{{Name: "c", GoodputMbps: 10}}
		}
		fs = append(fs, f)
	}
	return fs
}

// TestMetricsPerRepetition: NAME@reps lists a metric of each run in
// the order of the runs' seeds, NAME@under_X counts the runs below X,
// and both (and @max) take a pooled metric of each run's own messages
// (perRepFixtures; nearest rank of five times: the third).
func TestMetricsPerRepetition(t *testing.T) {
	points := loadFixtures(t, perRepFixtures()...)
	for _, tc := range []struct {
		name    string
		metrics []string
		wantMD  string // the row of cwr-red
		wantErr string
	}{
		{name: "largest and median of each run", metrics: []string{"s1.pooled_mct_max_ms@reps", "s1.pooled_mct_p50_ms@reps"},
			// rep0 sorted 10 20 30 50 60, rep1 15 25 35 45 70, rep2
			// 5 10 20 100 +Inf.
			wantMD: "| cwr-red | 3 | 60.0 70.0 +Inf | 30.0 35.0 20.0 |"},
		{name: "late messages of each run", metrics: []string{"s1.pooled_mct_over_25ms@reps"},
			// 50 60 30; 45 70 35 (25 is not over 25); +Inf 100.
			wantMD: "| cwr-red | 3 | 3 3 2 |"},
		{name: "a headline metric and a fact of each run", metrics: []string{"throughput_server_mbps@reps", "competitor.c.goodput_mbps@reps"},
			wantMD: "| cwr-red | 3 | 20.00 22.50 24.00 | 10.00 10.00 – |"},
		{name: "runs under a bound", metrics: []string{"s1.pooled_mct_p50_ms@under_30", "throughput_server_mbps@under_22.5", "competitor.c.goodput_mbps@under_11", "s1.pooled_mct_max_ms@under_1000"},
			// 30, 35, 20: one below 30 (30 is not); 20 of 20, 22.5,
			// 24; the competitor in two runs; +Inf is no time under
			// 1000.
			wantMD: "| cwr-red | 3 | 1 of 3 | 1 of 3 | 2 of 2 | 2 of 3 |"},
		{name: "the largest of a pooled metric per run", metrics: []string{"s1.pooled_mct_p50_ms@max", "s1.pooled_mct_over_25ms@min"},
			wantMD: "| cwr-red | 3 | 35.00 | 2 |"},
		{name: "counts without decimals", metrics: []string{"s1.failed@reps", "s1.failed@max", "s1.failed@median", "s1.failed"},
			// rep2's message of +Inf failed: 0 0 1, the largest 1, the
			// median 0; their mean keeps its decimals.
			wantMD: "| cwr-red | 3 | 0 0 1 | 1 | 0 | 0.33 ± 1.43 |"},
		{name: "an unknown extension", metrics: []string{"s1.pooled_mct_p50_ms@p90"}, wantErr: "want @max, @min, @median, @sd, @reps or @under_X"},
		{name: "an unknown metric per run", metrics: []string{"goodput_mbps@reps"}, wantErr: "--metric goodput_mbps: no such metric"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if md, _, ok := metricsCase(t, points, tc.metrics, tc.wantErr); ok && !strings.Contains(md, tc.wantMD+"\n") {
				t.Errorf("markdown lacks %q:\n%s", tc.wantMD, md)
			}
		})
	}
	o := DefaultOptions()
	o.Metrics = []string{"s1.pooled_mct_p50_ms@reps", "s1.pooled_mct_p50_ms@under_30"}
	tab, err := Tabulate("metrics", points, o)
	if err != nil {
		t.Fatal(err)
	}
	if csv := tableText(t, tab, "csv"); !strings.Contains(csv, "\ncwr-red,3,30.000 35.000 20.000,,,3,1,,,3\n") {
		t.Errorf("csv:\n%s", csv)
	}
}

// TestMetricsBefore: _before_X keeps the messages created before X,
// _from_X_before_Y those from X on and before Y (perRepFixtures).
func TestMetricsBefore(t *testing.T) {
	points := loadFixtures(t, perRepFixtures()...)
	md := metricsMD(t, points, "",
		"s1.pooled_mct_over_25ms_before_200ms@reps",            // 10 50; 45 15; 5 10
		"s1.pooled_mct_over_25ms_from_200ms@reps",              // 20 60 30; 70 25 35; +Inf 20 100
		"s1.pooled_mct_over_25ms_before_200ms",                 // the three runs' together: 1 + 1 + 0
		"s1.pooled_mct_max_ms_before_200ms",                    // 10 50 45 15 5 10
		"s1.pooled_mct_over_25ms_from_150ms_before_250ms@reps", // 50 20; 15 70; 10 +Inf
	)
	if want := "| cwr-red | 3 | 1 1 0 | 2 2 2 | 2 | 50.0 | 1 1 1 |\n"; !strings.Contains(md, want) {
		t.Errorf("markdown lacks %q:\n%s", want, md)
	}
}
