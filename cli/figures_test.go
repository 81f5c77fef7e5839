package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunDrawsFigures: a sweep's output.figures are drawn into its
// directory once every run is done, as mpq plot draws them; a shard draws
// none and says how; a figure the runs cannot give fails the command but
// keeps the runs and the aggregate; an unknown kind is the file's error.
func TestRunDrawsFigures(t *testing.T) {
	dir := t.TempDir()
	doc := strings.Replace(runFile, `["1s", "60s"]`, `["1s", "2s"]`, 1) + "[output]\nfigures = [\"ccdf.png\", \"ccdf.md\"]\n"
	f := writeFile(t, dir, "cli.toml", doc)
	out := filepath.Join(dir, "all")
	code, stdout, stderr := runCmd(t, "run", f, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	base := filepath.Join(out, "cli")
	png, err := os.ReadFile(filepath.Join(base, "ccdf.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("ccdf.png: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(base, "ccdf.md"))
	if err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(dir, "ref.md")
	if code, _, stderr := runCmd(t, "plot", base, "--kind", "ccdf", "-o", ref); code != 0 {
		t.Fatalf("mpq plot: exit %d: %s", code, stderr)
	}
	if want, _ := os.ReadFile(ref); len(md) == 0 || !bytes.Equal(md, want) {
		t.Fatalf("ccdf.md differs from mpq plot's:\n%s\nwant\n%s", md, want)
	}
	if !strings.Contains(stdout, filepath.Join(base, "ccdf.md")+": ccdf of 2 runs (2 grid points)") {
		t.Fatalf("stdout:\n%s", stdout)
	}

	// One shard of two: no figure, and a word on how to draw it.
	shard := filepath.Join(dir, "shard")
	code, _, stderr = runCmd(t, "run", f, "--out", shard, "--shard", "1/2")
	if code != 0 || !strings.Contains(stderr, "output.figures (ccdf.png, ccdf.md) are drawn from the whole sweep") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(shard, "cli", "ccdf.png")); !os.IsNotExist(err) {
		t.Fatalf("a shard drew a figure: %v", err)
	}

	// A figure these runs cannot give (no single/multi modes to divide).
	bad := writeFile(t, dir, "ratio.toml", strings.Replace(doc, `"ccdf.png", "ccdf.md"`, `"ratio.md"`, 1))
	failed := filepath.Join(dir, "failed")
	code, _, stderr = runCmd(t, "run", bad, "--out", failed)
	if code != exitFailure || !strings.Contains(stderr, "mpq run: output.figures: ratio.md: ") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(failed, "cli", "aggregate.json")); err != nil {
		t.Fatalf("the aggregate of a sweep whose figure failed: %v", err)
	}

	// An unknown kind is an error of the file, before any run.
	typo := writeFile(t, dir, "typo.toml", strings.Replace(doc, `"ccdf.png"`, `"ccfd.png"`, 1))
	code, _, stderr = runCmd(t, "run", typo, "--out", filepath.Join(dir, "typo"))
	line := strings.Count(doc[:strings.Index(doc, "figures")], "\n") + 1
	want := typo + ":" + strconv.Itoa(line) + `: output.figures: "ccfd.png": unknown figure kind "ccfd"`
	if code != exitUsage || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, want %d and %q: %s", code, exitUsage, want, stderr)
	}
}
