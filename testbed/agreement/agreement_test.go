package agreement

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	ref := Point{P50MS: 70, P99MS: 200, GoodputMbps: 3.5}
	tests := []struct {
		name  string
		got   Point
		which Metrics
		fail  []string // the metrics named in the failures, in order
	}{
		// p50: 10 % of 70 + 2 = 9 ms; p99: 25 % of 200 + 5 = 55 ms;
		// goodput: 10 % of 3.5 = 0.35 Mbit/s.
		{"equal", ref, All, nil},
		{"at every bound", Point{P50MS: 79, P99MS: 145, GoodputMbps: 3.85}, All, nil},
		{"p50 beyond", Point{P50MS: 79.01, P99MS: 200, GoodputMbps: 3.5}, All, []string{"mean p50"}},
		{"p50 below", Point{P50MS: 60.99, P99MS: 200, GoodputMbps: 3.5}, All, []string{"mean p50"}},
		{"p99 beyond", Point{P50MS: 70, P99MS: 255.01, GoodputMbps: 3.5}, All, []string{"mean p99"}},
		{"goodput beyond", Point{P50MS: 70, P99MS: 200, GoodputMbps: 3.14}, All, []string{"mean goodput"}},
		{"all beyond", Point{P50MS: 90, P99MS: 300, GoodputMbps: 2}, All, []string{"mean p50", "mean p99", "mean goodput"}},
		{"p99 not asked", Point{P50MS: 70, P99MS: 300, GoodputMbps: 3.5}, P50 | Goodput, nil},
		{"NaN never agrees", Point{P50MS: math.NaN(), P99MS: 200, GoodputMbps: 3.5}, All, []string{"mean p50"}},
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
