package agreement

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const three = P50 | P99 | Goodput
	ref := Point{P50MS: 70, P99MS: 200, GoodputMbps: 3.5, PooledN: 400, PooledP99MS: 100}
	tests := []struct {
		name  string
		got   Point
		which Metrics
		fail  []string // the metrics named in the failures, in order
	}{
		// p50: 10 % of 70 + 2 = 9 ms; p99: 25 % of 200 + 5 = 55 ms;
		// goodput: 10 % of 3.5 = 0.35 Mbit/s.
		{"equal", ref, three, nil},
		{"at every bound", Point{P50MS: 79, P99MS: 145, GoodputMbps: 3.85}, three, nil},
		{"p50 beyond", Point{P50MS: 79.01, P99MS: 200, GoodputMbps: 3.5}, three, []string{"mean p50"}},
		{"p50 below", Point{P50MS: 60.99, P99MS: 200, GoodputMbps: 3.5}, three, []string{"mean p50"}},
		{"p99 beyond", Point{P50MS: 70, P99MS: 255.01, GoodputMbps: 3.5}, three, []string{"mean p99"}},
		{"goodput beyond", Point{P50MS: 70, P99MS: 200, GoodputMbps: 3.14}, three, []string{"mean goodput"}},
		{"all beyond", Point{P50MS: 90, P99MS: 300, GoodputMbps: 2}, three, []string{"mean p50", "mean p99", "mean goodput"}},
		{"p99 not asked", Point{P50MS: 70, P99MS: 300, GoodputMbps: 3.5}, P50 | Goodput, nil},
		{"NaN never agrees", Point{P50MS: math.NaN(), P99MS: 200, GoodputMbps: 3.5}, three, []string{"mean p50"}},
		// Pooled p99: 25 % of 100 + 5 = 30 ms, with 368 messages or more
		// on both sides.
		{"pooled at its bound", Point{PooledN: 368, PooledP99MS: 130}, PooledP99, nil},
		{"pooled beyond", Point{PooledN: 400, PooledP99MS: 130.01}, PooledP99, []string{"pooled p99"}},
		{"pooled too few", Point{PooledN: 367, PooledP99MS: 100}, PooledP99, []string{"pooled p99"}},
		{"all four", Point{P50MS: 70, P99MS: 300, GoodputMbps: 3.5, PooledN: 400, PooledP99MS: 110}, All, []string{"mean p99"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Default.Check(ref, tc.got, tc.which)
			if len(got) != len(tc.fail) {
				t.Fatalf("failures %q, want %q", got, tc.fail)
			}
			for i, f := range tc.fail {
				if !strings.HasPrefix(got[i], f+" ") {
					t.Errorf("failure %q, want one about %s", got[i], f)
				}
			}
		})
	}
}

// writeRun writes a summary.json with a priority source of the given
// p50 and p99 and a bulk source of the given goodput.
func writeRun(t *testing.T, p50, p99, goodput float64) string {
	t.Helper()
	dir := t.TempDir()
	s := map[string]any{
		"name": "x",
		"sources": []map[string]any{
			{"name": "priority", "mct_ms": map[string]any{"n": 10, "p50": p50, "p99": p99}},
			{"name": "background", "goodput_mbps": goodput},
		},
	}
	b, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// FromRuns averages the runs' own p50, p99 and goodput: (70+80+90)/3 =
// 80, (100+200+300)/3 = 200, (3+3.5+4)/3 = 3.5.
func TestFromRuns(t *testing.T) {
	dirs := []string{writeRun(t, 70, 100, 3), writeRun(t, 80, 200, 3.5), writeRun(t, 90, 300, 4)}
	p, err := FromRuns(dirs, "priority", "background")
	if err != nil {
		t.Fatal(err)
	}
	want := Point{Runs: 3, P50MS: 80, P99MS: 200, GoodputMbps: 3.5}
	if math.Abs(p.P50MS-want.P50MS) > 1e-9 || math.Abs(p.P99MS-want.P99MS) > 1e-9 || math.Abs(p.GoodputMbps-want.GoodputMbps) > 1e-9 || p.Runs != 3 {
		t.Errorf("got %+v, want %+v", p, want)
	}
	if _, err := FromRuns(nil, "priority", "background"); err == nil {
		t.Error("no runs accepted")
	}
	if _, err := FromRuns(dirs, "other", "background"); err == nil {
		t.Error("a missing source accepted")
	}
	// A run whose p99 is +Inf (a message that did not complete) is an
	// error, not a mean of +Inf.
	inf := t.TempDir()
	os.WriteFile(filepath.Join(inf, "summary.json"), []byte(`{"sources":[{"name":"priority","mct_ms":{"n":1,"p50":"+Inf","p99":"+Inf"}},{"name":"background","goodput_mbps":1}]}`), 0o644)
	if _, err := FromRuns([]string{inf}, "priority", "background"); err == nil || !strings.Contains(err.Error(), "did not complete") {
		t.Errorf("a run with failed messages: %v", err)
	}
}

// writeMessages writes a messages.csv into dir with the priority
// source's completion times vals (and a warm-up row, left out).
func writeMessages(t *testing.T, dir string, vals []float64) {
	t.Helper()
	var b strings.Builder
	b.WriteString("source,mct_ms,warmup\npriority,9999,true\n")
	for _, v := range vals {
		fmt.Fprintf(&b, "priority,%g,false\nbackground,1,false\n", v)
	}
	if err := os.WriteFile(filepath.Join(dir, "messages.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// summary.json counts the rows: the priority source's messages and
	// its warm-up row; the background is bulk (no rows counted).
	var sum map[string]any
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err == nil {
		err = json.Unmarshal(raw, &sum)
	}
	if err != nil {
		t.Fatal(err)
	}
	srcs := sum["sources"].([]any)
	pr, bg := srcs[0].(map[string]any), srcs[1].(map[string]any)
	pr["kind"], pr["messages"], pr["warmup_excluded"] = "periodic", len(vals), 1
	bg["kind"] = "bulk"
	if raw, err = json.Marshal(sum); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// FromRuns pools the runs' messages: 1..200 and 201..400 (ms) pool to
// 400 values whose p99 is rank ceil(0.99·400) = 396, 396 ms; its 95 %
// interval is ranks [392, 400] (the misses of 400 draws at p = 0.99 are
// about Poisson(4): P(≥ 9) = 0.021 ≤ 0.025 < P(≥ 8) = 0.051 gives 392;
// P(none) = 0.99^400 = 0.018 ≤ 0.025 gives 400).
func TestFromRunsPooled(t *testing.T) {
	a, b := writeRun(t, 100, 198, 3), writeRun(t, 300, 398, 3)
	var va, vb []float64
	for i := 1; i <= 200; i++ {
		va = append(va, float64(i))
		vb = append(vb, float64(200+i))
	}
	writeMessages(t, a, va)
	writeMessages(t, b, vb)
	p, err := FromRuns([]string{a, b}, "priority", "background")
	if err != nil {
		t.Fatal(err)
	}
	if p.PooledN != 400 || p.PooledP99MS != 396 || p.PooledP99CI != [2]float64{392, 400} {
		t.Errorf("pooled n %d p99 %v CI %v, want 400, 396, [392 400]", p.PooledN, p.PooledP99MS, p.PooledP99CI)
	}
	// The runs' own p99s average to 298: the pooled one is not their mean.
	if p.P99MS != 298 {
		t.Errorf("mean p99 %v, want 298", p.P99MS)
	}
	// A messages.csv cut short (a line boundary: 150 of the 200 rows
	// summary.json counts) is an error, not a pool of fewer messages.
	cut := writeRun(t, 100, 198, 3)
	writeMessages(t, cut, va)
	raw, _ := os.ReadFile(filepath.Join(cut, "messages.csv"))
	lines := strings.SplitAfter(string(raw), "\n")
	os.WriteFile(filepath.Join(cut, "messages.csv"), []byte(strings.Join(lines[:2+2*150], "")), 0o644)
	if _, err := FromRuns([]string{cut, b}, "priority", "background"); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("a messages.csv cut short: %v", err)
	}
	// One run with messages and one without is an error, not a pool of
	// half the runs.
	if _, err := FromRuns([]string{a, writeRun(t, 1, 1, 1)}, "priority", "background"); err == nil || !strings.Contains(err.Error(), "messages.csv") {
		t.Errorf("runs with and without messages: %v", err)
	}
}
