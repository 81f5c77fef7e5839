package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// casesSweep is a small CoNEXT'17-style sweep: two scenarios as a case
// list times two modes, a file download, no time series.
const casesSweep = `name = "cases"
duration = "2s"
drain = "60s"
repeat = 2
[[path]]
[[path]]
[[source]]
name = "download"
kind = "file"
size = "200kB"
[output]
series = false

[[sweep.scenario]]
name = "a"
"path.0.rate" = "10Mbit"
"path.0.delay" = "5ms"
"path.1.rate" = "2Mbit"
"path.1.delay" = "20ms"

[[sweep.scenario]]
name = "b"
"path.0.rate" = "2Mbit"
"path.0.delay" = "20ms"
"path.1.rate" = "10Mbit"
"path.1.delay" = "5ms"

[[sweep.mode]]
name = "single"
"transport.multipath" = false
"transport.congestion" = "cubic"

[[sweep.mode]]
name = "multi"
"transport.multipath" = true
"transport.congestion" = "olia"
`

// TestCaseSweepShardsResumeAndRatio: a case-list sweep without time
// series runs into directories named after its cases; --resume keeps all
// its runs (it asks for no paths.csv); its shards merge to the unsharded
// run; and the ratio figure's table pairs its modes.
func TestCaseSweepShardsResumeAndRatio(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "cases.toml", casesSweep)
	whole := filepath.Join(dir, "whole")
	if code, _, stderr := runCmd(t, "run", f, "--out", whole); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	run := filepath.Join(whole, "cases", "scenario=b,mode=multi", "rep1")
	for name, want := range map[string]bool{"summary.json": true, "messages.csv": true, "paths.csv": false, "throughput.csv": false} {
		if _, err := os.Stat(filepath.Join(run, name)); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", name, err == nil, want)
		}
	}
	code, stdout, stderr := runCmd(t, "run", f, "--out", whole, "--resume")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "8 of 8 runs already complete, 0 to run") {
		t.Fatalf("--resume: exit %d: %s", code, stderr)
	}
	merged := filepath.Join(dir, "merged")
	for _, k := range []string{"1/3", "2/3", "3/3"} {
		out := filepath.Join(dir, "shard"+k[:1])
		if code, _, stderr := runCmd(t, "run", f, "--out", out, "--shard", k); code != 0 {
			t.Fatalf("shard %s: exit %d: %s", k, code, stderr)
		}
		copyTree(t, out, merged)
	}
	if code, _, stderr := runCmd(t, "aggregate", filepath.Join(merged, "cases")); code != 0 {
		t.Fatalf("aggregate: exit %d: %s", code, stderr)
	}
	a, b := treeFiles(t, filepath.Join(whole, "cases")), treeFiles(t, filepath.Join(merged, "cases"))
	if len(a) != len(b) || len(a) != 3+8*3 {
		t.Fatalf("%d files unsharded, %d merged, want 27", len(a), len(b))
	}
	for name, content := range a {
		if !bytes.Equal(content, b[name]) {
			t.Errorf("%s differs between the unsharded run and the merged shards", name)
		}
	}
	table := filepath.Join(dir, "ratio.csv")
	if code, _, stderr := runCmd(t, "plot", filepath.Join(whole, "cases"), "--kind", "ratio", "-o", table); code != 0 {
		t.Fatalf("plot: exit %d: %s", code, stderr)
	}
	csv, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	// Two scenarios, none failed: one on the faster path first, one on
	// the slower.
	if !strings.Contains(string(csv), "cases,all,2,0,") || !strings.Contains(string(csv), "cases,single path on the faster path,1,0,") {
		t.Fatalf("ratio table:\n%s", csv)
	}
}
