package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// t0 is the fake rehearsal's time origin; the fixture's times are whole
// seconds from it, so the interpolations below are exact fractions.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is s seconds after t0.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// writeJSONFile writes v as JSON to name, making its directory.
func writeJSONFile(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, name, string(b))
}

// writeFile writes body to name, making its directory.
func writeFile(t *testing.T, name, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// summary is the smallest summary.json agreement.FromRuns reads: the
// priority source's MCT p50 and p99 and the background source's goodput.
func summary(p50, goodput float64) map[string]any {
	return map[string]any{
		"name": "validation-lowrate",
		"sources": []map[string]any{
			{"name": "priority", "mct_ms": map[string]any{"n": 100, "p50": p50, "p99": 2 * p50}},
			{"name": "background", "goodput_mbps": goodput},
		},
	}
}

// clockSample is one of a node's clock samples, or one end of a run's
// clock.json.
func clockSample(offset float64, s int) map[string]any {
	return map[string]any{"offset_ms": offset, "rtt_ms": 0.4, "at": at(s)}
}

// clockJSON is a run's clock.json: measured is the client's clock minus
// the server's, which clock.json records negated (offset_ms is the
// server's minus the client's).
func clockJSON(startS int, startMeasured float64, endS int, endMeasured float64) map[string]any {
	return map[string]any{
		"start":     clockSample(-startMeasured, startS),
		"end":       clockSample(-endMeasured, endS),
		"corrected": false,
	}
}

// The fake rehearsal (OFFSET_MS 50, DRIFT_PPM 10, two merged runs, two
// simulator seeds). The nodes' samples against the host, at t0 + s
// seconds:
//
//	client: +50.4 ms at s = 0 (clock-set), +60.4 ms at s = 1000 (clock-end):
//	        50.4 + 0.01·s
//	server:  0.0 ms at s = -1000 (clock-boot), +0.84 ms at s = 1100 (clock-end):
//	        0.4·(s + 1000)/1000 = 0.4 + 0.0004·s
//
// so the offset set (client minus server) is 50 + 0.0096·s ms:
//
//	rep-0: start s = 100: 50.96, end s = 200: 51.92
//	rep-1: start s = 500: 54.80, end s = 600: 55.76
//	end check at the client's clock-end, s = 1000: set 59.6, through
//	the host 60.4 − 0.84 = 59.56
//
// Each run measures its offset 0.5 ms off the one set: rep-0 51.46 and
// 52.42, rep-1 54.30 and 55.26.
//
// Agreement: the simulator's p50s 70 and 80 ms (mean 75), goodputs 3.0
// and 4.0 Mbit/s (mean 3.5); the rehearsal's 78 and 82 ms (mean 80), 3.3
// and 3.5 Mbit/s (mean 3.4). The bounds: p50 within 10 % · 75 + 2 = 9.5
// ms (80 is 5 off), goodput within 10 % · 3.5 = 0.35 Mbit/s (3.4 is 0.1
// off).
func writeFixture(t *testing.T) string {
	t.Helper()
	out := t.TempDir()
	nodes := filepath.Join(out, "nodes")
	writeJSONFile(t, filepath.Join(nodes, "client", "clock-set.json"), clockSample(50.4, 0))
	writeJSONFile(t, filepath.Join(nodes, "client", "clock-end.json"), clockSample(60.4, 1000))
	writeJSONFile(t, filepath.Join(nodes, "server", "clock-boot.json"), clockSample(0, -1000))
	writeJSONFile(t, filepath.Join(nodes, "server", "clock-end.json"), clockSample(0.84, 1100))

	res := filepath.Join(out, "results", "validation-lowrate")
	writeJSONFile(t, filepath.Join(res, "rep-0", "summary.json"), summary(78, 3.3))
	writeJSONFile(t, filepath.Join(res, "rep-0", "clock.json"), clockJSON(100, 51.46, 200, 52.42))
	writeJSONFile(t, filepath.Join(res, "rep-1", "summary.json"), summary(82, 3.5))
	writeJSONFile(t, filepath.Join(res, "rep-1", "clock.json"), clockJSON(500, 54.30, 600, 55.26))

	sim := filepath.Join(out, "sim", "validation-lowrate")
	writeJSONFile(t, filepath.Join(sim, "seed-1", "summary.json"), summary(70, 3.0))
	writeJSONFile(t, filepath.Join(sim, "seed-2", "summary.json"), summary(80, 4.0))
	return out
}

// reportArgs are the rehearsal's arguments of the fixture: OFFSET_MS 50,
// DRIFT_PPM 10, REPEAT 2, SEEDS 2 and a profile parameter.
func reportArgs(out string) []string {
	return []string{out, "50", "10", "2", "2", "links=2"}
}

// reportFile is what the test reads of rehearsal.json, by the names the
// issue gives its fields (pointers: a field missing is nil).
type reportFile struct {
	Parameters map[string]string `json:"profile_parameters"`
	NominalMS  *float64          `json:"clock_offset_nominal_ms"`
	DriftPPM   *float64          `json:"clock_drift_ppm"`
	SetMS      *float64          `json:"clock_offset_set_ms"`
	MeasuredMS *float64          `json:"clock_offset_measured_ms"`
	ClockHeld  *bool             `json:"clock_held"`
	MaxErrorMS *float64          `json:"clock_max_error_ms"`
	ClockRuns  []struct {
		Run           string  `json:"run"`
		SetMS         float64 `json:"set_ms"`
		MeasuredMS    float64 `json:"measured_ms"`
		EndSetMS      float64 `json:"end_set_ms"`
		EndMeasuredMS float64 `json:"end_measured_ms"`
	} `json:"clock_runs"`
	EndCheck *struct {
		ThroughHostMS float64 `json:"through_host_ms"`
		SetMS         float64 `json:"set_ms"`
	} `json:"clock_end_check"`
	Agreement *struct {
		Simulator, Rehearsal struct {
			Runs        int     `json:"runs"`
			P50MS       float64 `json:"mct_p50_ms"`
			GoodputMbps float64 `json:"goodput_mbps"`
		}
		Bounds struct {
			P50     string `json:"mct_p50"`
			Goodput string `json:"goodput"`
		} `json:"bounds"`
		Failures   []string `json:"failures"`
		NotChecked []string `json:"not_checked"`
		Held       *bool    `json:"held"`
	} `json:"agreement"`
}

// near is equality up to the float64 rounding of the interpolations.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The report on hand-made runs: with every offset measured within 2 ms of
// the one set (at each run's start and end) and the rehearsal's p50 and
// goodput within their bounds of the simulator's it exits 0 and writes
// the offsets and the agreement computed by hand in writeFixture's
// comment; a measured offset more than 2 ms off, above or below, at a
// run's start or end exits 3 with clock_held false; a p50 or a goodput
// beyond its bound exits 3 with the agreement's failure; missing or
// malformed input exits 1 with an error naming the file and writes no
// report.
func TestReport(t *testing.T) {
	res := filepath.Join("results", "validation-lowrate")
	sim := filepath.Join("sim", "validation-lowrate")
	// The rehearsal's offsets as set (writeFixture's comment).
	set := map[string][2]float64{"rep-0": {50.96, 51.92}, "rep-1": {54.80, 55.76}}
	tests := []struct {
		name string
		// edit changes the fixture in out.
		edit func(t *testing.T, out string)
		args func(out string) []string
		code int
		// err is in the error of code 1 (after out: the file or
		// directory it names) or 2.
		err string
		// measured are the runs' measured offsets when edit changed
		// them (else 0.5 ms above the ones set).
		measured map[string][2]float64
		// clockHeld and agreeHeld are rehearsal.json's verdicts;
		// failures the metrics the agreement failed on.
		clockHeld, agreeHeld bool
		failures             []string
		// p50 and goodput are the rehearsal's means.
		p50, goodput float64
	}{
		{name: "held", code: 0, clockHeld: true, agreeHeld: true, p50: 80, goodput: 3.4},
		{
			name: "offsets 1.9 ms off, within 2",
			edit: func(t *testing.T, out string) {
				writeJSONFile(t, filepath.Join(out, res, "rep-0", "clock.json"), clockJSON(100, 50.96+1.9, 200, 51.92-1.9))
				writeJSONFile(t, filepath.Join(out, res, "rep-1", "clock.json"), clockJSON(500, 54.80-1.9, 600, 55.76+1.9))
			},
			measured: map[string][2]float64{"rep-0": {52.86, 50.02}, "rep-1": {52.90, 57.66}},
			code:     0, clockHeld: true, agreeHeld: true, p50: 80, goodput: 3.4,
		},
		{
			name: "start offset 2.1 ms above",
			edit: func(t *testing.T, out string) {
				writeJSONFile(t, filepath.Join(out, res, "rep-1", "clock.json"), clockJSON(500, 54.80+2.1, 600, 55.26))
			},
			measured: map[string][2]float64{"rep-0": {51.46, 52.42}, "rep-1": {56.90, 55.26}},
			code:     3, clockHeld: false, agreeHeld: true, p50: 80, goodput: 3.4,
		},
		{
			name: "end offset 2.1 ms below",
			edit: func(t *testing.T, out string) {
				writeJSONFile(t, filepath.Join(out, res, "rep-0", "clock.json"), clockJSON(100, 51.46, 200, 51.92-2.1))
			},
			measured: map[string][2]float64{"rep-0": {51.46, 49.82}, "rep-1": {54.30, 55.26}},
			code:     3, clockHeld: false, agreeHeld: true, p50: 80, goodput: 3.4,
		},
		{
			name: "p50 at its bound",
			edit: func(t *testing.T, out string) {
				// (84 + 85)/2 = 84.5 = 75 + 9.5.
				writeJSONFile(t, filepath.Join(out, res, "rep-0", "summary.json"), summary(84, 3.3))
				writeJSONFile(t, filepath.Join(out, res, "rep-1", "summary.json"), summary(85, 3.5))
			},
			code: 0, clockHeld: true, agreeHeld: true, p50: 84.5, goodput: 3.4,
		},
		{
			name: "p50 beyond its bound",
			edit: func(t *testing.T, out string) {
				// (85 + 90)/2 = 87.5: 12.5 off, more than 9.5.
				writeJSONFile(t, filepath.Join(out, res, "rep-0", "summary.json"), summary(85, 3.3))
				writeJSONFile(t, filepath.Join(out, res, "rep-1", "summary.json"), summary(90, 3.5))
			},
			code: 3, clockHeld: true, agreeHeld: false, failures: []string{"mean p50"}, p50: 87.5, goodput: 3.4,
		},
		{
			name: "goodput beyond its bound",
			edit: func(t *testing.T, out string) {
				// (3.0 + 3.1)/2 = 3.05: 0.45 off, more than 0.35.
				writeJSONFile(t, filepath.Join(out, res, "rep-0", "summary.json"), summary(78, 3.0))
				writeJSONFile(t, filepath.Join(out, res, "rep-1", "summary.json"), summary(82, 3.1))
			},
			code: 3, clockHeld: true, agreeHeld: false, failures: []string{"mean goodput"}, p50: 80, goodput: 3.05,
		},
		{
			name: "client's clock-set.json missing",
			edit: func(t *testing.T, out string) {
				os.Remove(filepath.Join(out, "nodes", "client", "clock-set.json"))
			},
			code: 1, err: filepath.Join("nodes", "client", "clock-set.json"),
		},
		{
			name: "server's clock-end.json malformed",
			edit: func(t *testing.T, out string) {
				writeFile(t, filepath.Join(out, "nodes", "server", "clock-end.json"), `{"offset_ms": "x"`)
			},
			code: 1, err: filepath.Join("nodes", "server", "clock-end.json"),
		},
		{
			name: "a run's clock.json missing",
			edit: func(t *testing.T, out string) {
				os.Remove(filepath.Join(out, res, "rep-1", "clock.json"))
			},
			code: 1, err: filepath.Join(res, "rep-1", "clock.json"),
		},
		{
			name: "a run's clock.json malformed",
			edit: func(t *testing.T, out string) {
				writeFile(t, filepath.Join(out, res, "rep-0", "clock.json"), `{"start": {"at": "yesterday"}}`)
			},
			code: 1, err: filepath.Join(res, "rep-0", "clock.json"),
		},
		{
			name: "a simulator run's summary.json malformed",
			edit: func(t *testing.T, out string) {
				writeFile(t, filepath.Join(out, sim, "seed-2", "summary.json"), `{"sources": [`)
			},
			code: 1, err: filepath.Join(sim, "seed-2", "summary.json"),
		},
		{
			name: "a run whose priority messages did not all complete",
			edit: func(t *testing.T, out string) {
				writeFile(t, filepath.Join(out, res, "rep-1", "summary.json"),
					`{"sources":[{"name":"priority","mct_ms":{"n":1,"p50":"+Inf","p99":"+Inf"}},{"name":"background","goodput_mbps":1}]}`)
			},
			code: 1, err: filepath.Join(res, "rep-1"),
		},
		{
			name: "no simulator runs",
			edit: func(t *testing.T, out string) {
				os.RemoveAll(filepath.Join(out, "sim"))
			},
			code: 1, err: sim,
		},
		{
			name: "fewer merged runs than REPEAT",
			edit: func(t *testing.T, out string) {
				os.RemoveAll(filepath.Join(out, res, "rep-1"))
			},
			code: 1, err: res + ": 1 merged runs, want 2",
		},
		{
			name: "more simulator runs than SEEDS",
			args: func(out string) []string { return []string{out, "50", "10", "2", "1"} },
			code: 1, err: sim + ": 2 simulator runs, want 1",
		},
		{
			name: "OFFSET_MS not a number",
			args: func(out string) []string { return []string{out, "fifty", "10", "2", "2"} },
			code: 2, err: `"fifty": not a number`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := writeFixture(t)
			if tc.edit != nil {
				tc.edit(t, out)
			}
			args := reportArgs(out)
			if tc.args != nil {
				args = tc.args(out)
			}
			code, err := reportCmd(args)
			if code != tc.code {
				t.Fatalf("exit %d (%v), want %d", code, err, tc.code)
			}
			name := filepath.Join(out, "rehearsal.json")
			if tc.code != 0 && tc.code != 3 {
				want := tc.err
				if tc.code == 1 {
					want = filepath.Join(out, tc.err)
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want one with %q", err, want)
				}
				if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("rehearsal.json written (%v) though the report could not tell", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("exit %d with an error: %v", code, err)
			}
			if _, err := os.Stat(name + ".tmp"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("rehearsal.json.tmp left behind (%v)", err)
			}
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			var r reportFile
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("rehearsal.json: %v\n%s", err, b)
			}
			checkReport(t, &r, set, tc.measured, tc.clockHeld, tc.agreeHeld, tc.failures, tc.p50, tc.goodput)
			if t.Failed() {
				t.Logf("rehearsal.json:\n%s", b)
			}
		})
	}
}

// checkReport checks rehearsal.json's fields against the hand-computed
// values of writeFixture's comment; measured, when not nil, replaces the
// runs' measured offsets.
func checkReport(t *testing.T, r *reportFile, set, measured map[string][2]float64, clockHeld, agreeHeld bool, failures []string, p50, goodput float64) {
	t.Helper()
	if measured == nil {
		measured = map[string][2]float64{"rep-0": {51.46, 52.42}, "rep-1": {54.30, 55.26}}
	}
	num := func(field string, got *float64, want float64) {
		t.Helper()
		if got == nil {
			t.Errorf("%s missing", field)
		} else if !near(*got, want) {
			t.Errorf("%s %v, want %v", field, *got, want)
		}
	}
	num("clock_offset_nominal_ms", r.NominalMS, 50)
	num("clock_drift_ppm", r.DriftPPM, 10)
	num("clock_max_error_ms", r.MaxErrorMS, 2)
	// The first run's offset, as set and as it measured it.
	num("clock_offset_set_ms", r.SetMS, 50.96)
	num("clock_offset_measured_ms", r.MeasuredMS, measured["rep-0"][0])
	if r.ClockHeld == nil || *r.ClockHeld != clockHeld {
		t.Errorf("clock_held %v, want %v", r.ClockHeld, clockHeld)
	}
	if len(r.ClockRuns) != 2 {
		t.Fatalf("%d clock_runs, want 2", len(r.ClockRuns))
	}
	for i, c := range r.ClockRuns {
		if want := []string{"rep-0", "rep-1"}[i]; c.Run != want {
			t.Errorf("clock_runs[%d] is %q, want %q", i, c.Run, want)
		}
		s, m := set[c.Run], measured[c.Run]
		if !near(c.SetMS, s[0]) || !near(c.EndSetMS, s[1]) || !near(c.MeasuredMS, m[0]) || !near(c.EndMeasuredMS, m[1]) {
			t.Errorf("clock_runs[%d]: set %v, measured %v, at the end set %v, measured %v; want %v, %v, %v, %v",
				i, c.SetMS, c.MeasuredMS, c.EndSetMS, c.EndMeasuredMS, s[0], m[0], s[1], m[1])
		}
	}
	if e := r.EndCheck; e == nil || !near(e.ThroughHostMS, 59.56) || !near(e.SetMS, 59.6) {
		t.Errorf("clock_end_check %+v, want through the host 59.56, set 59.6", e)
	}
	if r.Parameters["links"] != "2" || len(r.Parameters) != 1 {
		t.Errorf("profile_parameters %v, want links=2", r.Parameters)
	}

	a := r.Agreement
	if a == nil {
		t.Fatal("agreement missing")
	}
	if s := a.Simulator; s.Runs != 2 || !near(s.P50MS, 75) || !near(s.GoodputMbps, 3.5) {
		t.Errorf("agreement.simulator %+v, want 2 runs, p50 75 ms, goodput 3.5 Mbit/s", s)
	}
	if g := a.Rehearsal; g.Runs != 2 || !near(g.P50MS, p50) || !near(g.GoodputMbps, goodput) {
		t.Errorf("agreement.rehearsal %+v, want 2 runs, p50 %v ms, goodput %v Mbit/s", g, p50, goodput)
	}
	if want := "10 % + 2 ms of the simulator's (9.50 ms)"; a.Bounds.P50 != want {
		t.Errorf("agreement.bounds.mct_p50 %q, want %q", a.Bounds.P50, want)
	}
	if want := "10 % of the simulator's (0.350 Mbit/s)"; a.Bounds.Goodput != want {
		t.Errorf("agreement.bounds.goodput %q, want %q", a.Bounds.Goodput, want)
	}
	if a.Held == nil || *a.Held != agreeHeld {
		t.Errorf("agreement.held %v, want %v", a.Held, agreeHeld)
	}
	if len(a.Failures) != len(failures) {
		t.Errorf("agreement.failures %q, want ones about %q", a.Failures, failures)
	} else {
		for i, f := range failures {
			if !strings.HasPrefix(a.Failures[i], f+" ") {
				t.Errorf("agreement.failures[%d] %q, want one about %s", i, a.Failures[i], f)
			}
		}
	}
	// The pooled p99 is logged, not checked: without messages.csv it
	// has no messages.
	if len(a.NotChecked) != 1 || !strings.HasPrefix(a.NotChecked[0], "pooled p99 of 0 and 0 messages") {
		t.Errorf("agreement.not_checked %q, want the pooled p99 of no messages", a.NotChecked)
	}
}

// The report replaces rehearsal.json through a temporary file renamed
// over it: when the temporary file cannot be written (here a directory
// stands in its name), the report exits 1 and the earlier rehearsal.json
// is left whole; when it can, the new one replaces it and no temporary
// file is left.
func TestReportWritesAtomically(t *testing.T) {
	out := writeFixture(t)
	name := filepath.Join(out, "rehearsal.json")
	writeFile(t, name, "earlier\n")
	if err := os.Mkdir(name+".tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	if code, err := reportCmd(reportArgs(out)); code != 1 || err == nil {
		t.Errorf("with the temporary file's name taken: exit %d, %v; want 1 and an error", code, err)
	}
	if b, err := os.ReadFile(name); err != nil || string(b) != "earlier\n" {
		t.Errorf("rehearsal.json after a failed write: %.40q, %v; want the earlier one", b, err)
	}
	if err := os.Remove(name + ".tmp"); err != nil {
		t.Fatal(err)
	}
	if code, err := reportCmd(reportArgs(out)); code != 0 || err != nil {
		t.Fatalf("exit %d, %v", code, err)
	}
	var r reportFile
	if b, err := os.ReadFile(name); err != nil || json.Unmarshal(b, &r) != nil || r.SetMS == nil {
		t.Errorf("rehearsal.json not replaced: %q, %v", b, err)
	}
	if _, err := os.Stat(name + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rehearsal.json.tmp left behind (%v)", err)
	}
}

// TestReportExit: the report's exit status reaches the shell as the
// report gives it: 2 for an argument that is not a number (main once
// turned every error into 1), 1 when the results are missing, with the
// error on stderr.
func TestReportExit(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{dir, "forty", "0", "1", "1"}, 2},
		{[]string{dir, "40", "0", "1", "1"}, 1},
	} {
		var stderr strings.Builder
		if got := reportExit(tc.args, &stderr); got != tc.want || !strings.Contains(stderr.String(), "rehearsal:") {
			t.Errorf("report %v: exit %d, stderr %q; want %d and the error", tc.args, got, stderr.String(), tc.want)
		}
	}
}
