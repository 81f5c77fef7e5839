package resultset

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/trafficgen"
)

// writeRun writes a synthetic run directory: its summary and the mct_ms
// column of its messages (the summary counting them, unless it counts
// messages already).
func writeRun(t *testing.T, root, dir string, s *trafficgen.Summary, mcts ...string) {
	t.Helper()
	if s.Sources[0].Messages == 0 {
		s.Sources[0].Messages = len(mcts)
	}
	d := filepath.Join(root, dir)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "summary.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	msgs := "source,kind,mct_ms,response_ms\n"
	for _, m := range mcts {
		msgs += "s1,periodic," + m + ",+Inf\n"
	}
	if err := os.WriteFile(filepath.Join(d, "messages.csv"), []byte(msgs), 0o644); err != nil {
		t.Fatal(err)
	}
}

func summary(point, rep, repeat int, sha string, p50 float64, thr float64) *trafficgen.Summary {
	vary := []string{"transport.path_scheduler=" + map[int]string{0: "lowrtt", 1: "cwr"}[point]}
	return &trafficgen.Summary{Name: "synthetic", Point: point, Vary: vary, Repetition: rep, Repeat: repeat, Seed: uint64(100 + rep),
		ConfigSHA256: sha, ThroughputMbps: trafficgen.Directions{Server: trafficgen.Throughput{Total: thr}},
		Sources: []trafficgen.SourceSummary{{Name: "s1", Kind: "periodic", Sender: "server",
			MCTMS: &trafficgen.Dist{P50: trafficgen.Millis(p50), P99: trafficgen.Inf, P999: trafficgen.Inf, Mean: trafficgen.Inf}}}}
}

// TestBuildNamesPointsWithoutRuns: of the grid points 0, 1 and 2 the
// runs of 0 and 2 are there; point 1 had none (every repetition failed):
// a warning names it rather than the aggregate leaving it out silently.
func TestBuildNamesPointsWithoutRuns(t *testing.T) {
	root := t.TempDir()
	writeRun(t, root, "p0", summary(0, 0, 1, "aaa", 20, 10), "20.000")
	s := summary(1, 0, 1, "ccc", 20, 10)
	s.Point = 2
	writeRun(t, root, "p2", s, "20.000")
	a, err := Build(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Points) != 2 || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "grid point 1: no runs") {
		t.Fatalf("%d points, warnings %q", len(a.Points), a.Warnings)
	}
}

// TestBuild aggregates synthetic runs with values computed by hand:
// point 0 has two repetitions, point 1 one of two.
func TestBuild(t *testing.T) {
	root := t.TempDir()
	writeRun(t, root, "transport.path_scheduler=lowrtt/rep0", summary(0, 0, 2, "aaa", 20, 10), "10.000", "20.000", "30.000", "+Inf")
	writeRun(t, root, "transport.path_scheduler=lowrtt/rep1", summary(0, 1, 2, "aaa", 15, 14), "15.000", "25.000")
	writeRun(t, root, "transport.path_scheduler=cwr/rep1", summary(1, 1, 2, "bbb", 12, 20), "12.000")
	// A run under way (temporary directory) is not a run.
	writeRun(t, root, ".x.tmp-1", summary(1, 0, 2, "bbb", 1, 1), "1.000")
	a, err := Build(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Runs != 3 || len(a.Points) != 2 || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "1 of 2 repetitions") {
		t.Fatalf("%d runs, %d points, warnings %v", a.Runs, len(a.Points), a.Warnings)
	}
	p := a.Points[0]
	if p.Dir != "transport.path_scheduler=lowrtt" || len(p.Runs) != 2 || p.Seeds[1] != 101 {
		t.Fatalf("point 0: %+v", p)
	}
	// p50 of 20 and 15: mean 17.5, sd 3.5355339, half-width
	// 12.7062047 · 3.5355339 / √2 = 31.7655118.
	m := p.Metrics["s1.mct_p50_ms"]
	if m.N != 2 || m.Mean != 17.5 || math.Abs(float64(m.SD)-3.5355339059) > 1e-9 || math.Abs(float64(m.CI95[1])-(17.5+31.7655118405)) > 1e-8 {
		t.Fatalf("s1.mct_p50_ms %+v", m)
	}
	if m := p.Metrics["s1.mct_p99_ms"]; m.Inf != 2 || !math.IsInf(float64(m.Mean), 1) {
		t.Fatalf("s1.mct_p99_ms %+v", m)
	}
	// Pooled: 10 15 20 25 30 +Inf: p50 rank 3 = 20, p99 rank 6 = +Inf.
	if pl := p.Pooled["s1"]; pl.Metric != "mct_ms" || pl.N != 6 || pl.Failed != 1 || pl.P50 != 20 || !math.IsInf(float64(pl.P99), 1) {
		t.Fatalf("pooled %+v", pl)
	}

	if err := a.Write(root); err != nil {
		t.Fatal(err)
	}
	rows := readCSVFile(t, filepath.Join(root, RunsCSV))
	if len(rows) != 4 || strings.Join(rows[0][:5], ",") != "point,repetition,seed,dir,transport.path_scheduler" ||
		strings.Join(rows[2][:5], ",") != "0,1,101,transport.path_scheduler=lowrtt/rep1,lowrtt" {
		t.Fatalf("runs.csv %v", rows)
	}
	col := func(rows [][]string, name string) int {
		for i, h := range rows[0] {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %s in %v", name, rows[0])
		return -1
	}
	if v := rows[3][col(rows, "s1.mct_p99_ms")]; v != "+Inf" {
		t.Fatalf("runs.csv s1.mct_p99_ms %q", v)
	}
	agg := readCSVFile(t, filepath.Join(root, AggregateCSV))
	if len(agg) != 3 {
		t.Fatalf("aggregate.csv %v", agg)
	}
	for name, want := range map[string]string{
		"runs": "2", "repeat": "2", "transport.path_scheduler": "lowrtt",
		"s1.mct_p50_ms.mean": "17.5", "s1.mct_p50_ms.sd": "3.535534", "s1.mct_p50_ms.ci95_hi": "49.265512",
		"s1.mct_p99_ms.mean": "+Inf", "s1.mct_p99_ms.sd": "",
		"throughput_server_mbps.mean": "12", "s1.pooled_mct_n": "6", "s1.pooled_mct_p50_ms": "20", "s1.pooled_mct_p99_ms": "+Inf",
	} {
		if got := agg[1][col(agg, name)]; got != want {
			t.Errorf("aggregate.csv %s = %q, want %q", name, got, want)
		}
	}
	// Point 1 has one repetition: no spread.
	if got := agg[2][col(agg, "throughput_server_mbps.sd")]; got != "" {
		t.Errorf("sd of one run %q", got)
	}
	b, err := os.ReadFile(filepath.Join(root, AggregateJSON))
	if err != nil || !bytes.Contains(b, []byte(`"p99": "+Inf"`)) || !bytes.Contains(b, []byte(`"sd": null`)) {
		t.Fatalf("aggregate.json: %v\n%s", err, b)
	}
}

// TestBuildRefusesMixedRuns: runs of two experiments, a grid point with
// two configurations, or a repetition there twice are errors.
func TestBuildRefusesMixedRuns(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(root string)
		want string
	}{
		{"two experiments", func(root string) {
			s := summary(1, 0, 2, "bbb", 1, 1)
			s.Name = "other"
			writeRun(t, root, "o", s, "1.000")
		}, "runs of two experiments"},
		{"two configurations", func(root string) { writeRun(t, root, "x", summary(0, 1, 2, "ccc", 1, 1), "1.000") }, "different configurations"},
		{"a repetition twice", func(root string) { writeRun(t, root, "copy/rep0", summary(0, 0, 2, "aaa", 1, 1), "1.000") }, "the same repetition 0"},
		{"two repeats", func(root string) { writeRun(t, root, "p", summary(0, 0, 1, "aaa", 1, 1), "1.000") }, "from sweeps of 1 and 2 repetitions"},
		{"two base seeds", func(root string) {
			s := summary(0, 1, 2, "aaa", 1, 1)
			s.BaseSeed = 7
			writeRun(t, root, "p/rep1", s, "1.000")
		}, "different base seeds, 0 and 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeRun(t, root, "p/rep0", summary(0, 0, 2, "aaa", 20, 10), "10.000")
			tc.add(root)
			if _, err := Build(root, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestBuildSeedSweep: a sweep over the seed has grid points whose
// configurations hash alike (the hash leaves the seed out); each is a
// grid point of its own, not a repetition found twice.
func TestBuildSeedSweep(t *testing.T) {
	root := t.TempDir()
	for i, seed := range []uint64{1, 2, 3} {
		s := summary(0, 0, 1, "aaa", float64(10*(i+1)), 1)
		s.Point, s.Vary, s.Seed, s.BaseSeed = i, []string{fmt.Sprintf("seed=%d", seed)}, seed, seed
		writeRun(t, root, fmt.Sprintf("seed=%d", seed), s, "1.000")
	}
	a, err := Build(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Points) != 3 || a.Points[2].BaseSeed != 3 || a.Points[2].Metrics["s1.mct_p50_ms"].Mean != 30 {
		t.Fatalf("points %+v", a.Points)
	}
}

// TestPooledColumnsByMetric: a sweep over a source's kind pools MCTs at
// one grid point and response times at the other; each goes in columns
// named after its metric, never the one under the other's name.
func TestPooledColumnsByMetric(t *testing.T) {
	root := t.TempDir()
	writeRun(t, root, "periodic", summary(0, 0, 1, "aaa", 25, 1), "25.000")
	rr := summary(1, 0, 1, "bbb", 50, 1)
	rr.Sources[0].Kind = "frames"
	writeRun(t, root, "frames", rr, "25.000") // its response_ms is +Inf
	a, err := Build(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := a.WriteAggregateCSV(&buf); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	get := func(row int, name string) string {
		for i, h := range rows[0] {
			if h == name {
				return rows[row][i]
			}
		}
		t.Fatalf("no column %s in %v", name, rows[0])
		return ""
	}
	if m, r := get(1, "s1.pooled_mct_p50_ms"), get(1, "s1.pooled_response_p50_ms"); m != "25" || r != "" {
		t.Errorf("periodic point: pooled mct %q, response %q", m, r)
	}
	if m, r := get(2, "s1.pooled_mct_p50_ms"), get(2, "s1.pooled_response_p50_ms"); m != "" || r != "+Inf" {
		t.Errorf("frames point: pooled mct %q, response %q", m, r)
	}
}

func readCSVFile(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestBuildWarnsAboutBuilds: runs of the same revision of a dirty
// checkout, from two different binaries, are told apart by the
// binary's hash: aggregate.json lists both provenances and warns.
func TestBuildWarnsAboutBuilds(t *testing.T) {
	root := t.TempDir()
	for rep, bin := range []string{"aaaa", "bbbb"} {
		s := summary(0, rep, 2, "aaa", 10, 1)
		s.Provenance = &trafficgen.Provenance{Backend: "sim", Started: "2026-01-01T00:00:0" + fmt.Sprint(rep) + "Z"}
		s.Provenance.Revision, s.Provenance.Dirty, s.Provenance.BinarySHA256 = "1672e02bb6ea", true, bin
		writeRun(t, root, fmt.Sprintf("p/rep%d", rep), s, "1.000")
	}
	a, err := Build(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Provenances) != 2 || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "2 different builds") {
		t.Fatalf("provenances %+v, warnings %v", a.Provenances, a.Warnings)
	}
}

// TestBuildSeedSweepOneBuild: a sweep of the seed (each point its own
// base seed) from one build is one provenance, without a warning.
func TestBuildSeedSweepOneBuild(t *testing.T) {
	root := t.TempDir()
	for pt, seed := range []uint64{1, 2} {
		s := summary(pt, 0, 1, "aaa", 10, 1)
		s.Vary, s.BaseSeed = []string{fmt.Sprintf("seed=%d", seed)}, seed
		s.Provenance = &trafficgen.Provenance{Backend: "sim", Started: "2026-01-01T00:00:00Z"}
		s.Provenance.Revision, s.Provenance.BinarySHA256 = "1672e02bb6ea", "aaaa"
		writeRun(t, root, fmt.Sprintf("p%d/rep0", pt), s, "1.000")
	}
	a, err := Build(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Provenances) != 0 || len(a.Warnings) != 0 {
		t.Fatalf("provenances %+v, warnings %v", a.Provenances, a.Warnings)
	}
}

// TestPooledWarmup: the rows messages.csv marks as warm-up are left out
// of the pooled times and counted.
func TestPooledWarmup(t *testing.T) {
	root := t.TempDir()
	s := summary(0, 0, 1, "aaa", 20, 10)
	s.Sources[0].Messages, s.Sources[0].WarmupExcluded = 3, 2
	writeRun(t, root, "run", s)
	msgs := "source,kind,mct_ms,response_ms,warmup\n" +
		"s1,periodic,500.000,+Inf,true\ns1,periodic,300.000,+Inf,true\n" +
		"s1,periodic,10.000,+Inf,false\ns1,periodic,20.000,+Inf,false\ns1,periodic,30.000,+Inf,false\n"
	if err := os.WriteFile(filepath.Join(root, "run", "messages.csv"), []byte(msgs), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := Build(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Left: 10 20 30; p50 rank 2 = 20, p99 rank 3 = 30.
	if pl := a.Points[0].Pooled["s1"]; pl.N != 3 || pl.WarmupExcluded != 2 || pl.P50 != 20 || pl.P99 != 30 || pl.P999 != 30 {
		t.Fatalf("pooled %+v, want n 3, warmup_excluded 2, p50 20, p99 30", pl)
	}
}

// TestPooledTailIntervals: 100 pooled MCTs 1 … 100 ms. p99 is rank 99
// (99 ms), one message beyond it; its order-statistic interval: with A
// = messages above the p99 ~ Binomial(100, 0.01), P(A ≥ 4) = 0.0184 ≤
// 0.025 < P(A ≥ 3) = 0.0794 puts the lower end at rank 101 − 4 = 97, and
// P(A = 0) = 0.99^100 = 0.366 > 0.025 leaves no upper end (+Inf). p99.9
// is rank 100, nothing beyond; with A ~ Binomial(100, 0.001), P(A ≥ 2) =
// 0.0046 ≤ 0.025 < P(A ≥ 1) = 0.0952: lower end rank 99, no upper end.
func TestPooledTailIntervals(t *testing.T) {
	root := t.TempDir()
	var mcts []string
	for i := 1; i <= 100; i++ {
		mcts = append(mcts, fmt.Sprintf("%d.000", i))
	}
	writeRun(t, root, "run", summary(0, 0, 1, "aaa", 50, 10), mcts...)
	a, err := Build(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	inf := Value(math.Inf(1))
	pl := a.Points[0].Pooled["s1"]
	if pl.P99 != 99 || pl.P99CI95 != [2]Value{97, inf} || pl.BeyondP99 != 1 ||
		pl.P999 != 100 || pl.P999CI95 != [2]Value{99, inf} || pl.BeyondP999 != 0 {
		t.Fatalf("pooled %+v", pl)
	}
	if err := a.Write(root); err != nil {
		t.Fatal(err)
	}
	agg := readCSVFile(t, filepath.Join(root, AggregateCSV))
	want := map[string]string{"s1.pooled_mct_p99_ms": "99", "s1.pooled_mct_p99_ci95_lo": "97", "s1.pooled_mct_p99_ci95_hi": "+Inf",
		"s1.pooled_mct_beyond_p99": "1", "s1.pooled_mct_p999_ci95_lo": "99", "s1.pooled_mct_beyond_p999": "0", "s1.pooled_mct_warmup_excluded": "0"}
	for i, h := range agg[0] {
		if w, ok := want[h]; ok {
			if agg[1][i] != w {
				t.Errorf("aggregate.csv %s = %q, want %q", h, agg[1][i], w)
			}
			delete(want, h)
		}
	}
	if len(want) > 0 {
		t.Errorf("aggregate.csv lacks %v", want)
	}
	b, err := os.ReadFile(filepath.Join(root, AggregateJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"p99_ci95": [`) {
		t.Errorf("aggregate.json has no p99_ci95:\n%s", b)
	}
}

// TestCutMessagesRefused: a messages.csv cut on a line boundary (a row
// short of what summary.json counts) is refused, not pooled.
func TestCutMessagesRefused(t *testing.T) {
	root := t.TempDir()
	s := summary(0, 0, 1, "aaa", 20, 10)
	s.Sources[0].Messages = 3
	writeRun(t, root, "run", s, "10.000", "20.000")
	_, err := Build(root, nil)
	if err == nil || !strings.Contains(err.Error(), "2 rows of source s1, summary.json counts 3 messages") {
		t.Fatalf("cut messages.csv: %v", err)
	}
}
