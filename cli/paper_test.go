package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/plots/paper"
)

// paperDoc has the markers of every table mpq paper writes, and text
// around them that must stay.
const paperDoc = "# doc\n<!-- mpq paper: runs -->\nold\n<!-- mpq paper: end runs -->\ntext\n" +
	"<!-- mpq paper: table1 -->\n<!-- mpq paper: end table1 -->\n<!-- mpq paper: fig4 -->\n<!-- mpq paper: end fig4 -->\n" +
	"<!-- mpq paper: fig5 -->\n<!-- mpq paper: end fig5 -->\n<!-- mpq paper: fig6 -->\n<!-- mpq paper: end fig6 -->\nend\n"

// TestPaper: mpq paper runs the paper's experiment files (shortened here
// to 6 s, one repetition) from nothing and writes every figure (PNG and
// PDF) and the tables into the marked blocks of the document; with
// --plots-only it draws again from the same results; a document without
// the markers fails and is left alone.
func TestPaper(t *testing.T) {
	if testing.Short() {
		t.Skip("47 simulated runs")
	}
	dir := t.TempDir()
	out, png := filepath.Join(dir, "results"), filepath.Join(dir, "png")
	doc := writeFile(t, dir, "doc.md", paperDoc)
	stale := filepath.Join(out, "paper-fig5", "stale")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"paper", "--experiments", "../experiments", "--repeat", "1", "--set", "duration=6s",
		"--out", out, "--figures", png, "--doc", doc, "--parallel", "2"}
	code, stdout, stderr := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, s := range []string{"[1/4] ../experiments/paper-fig4.toml", "[4/4] ../experiments/paper-timeline.toml", "figures and tables", "done in"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("progress lacks %q:\n%s", s, stderr)
		}
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the results of an earlier invocation were kept")
	}
	pngs, _ := filepath.Glob(filepath.Join(png, "*.png"))
	pdfs, _ := filepath.Glob(filepath.Join(out, "figures", "*.pdf"))
	// Figure 4: 6 CCDFs, throughput, growth, 2 cwnd; Figure 5: 3;
	// Figure 6: 6; 2 timelines.
	if len(pngs) != 21 || len(pdfs) != 21 || strings.Count(stdout, ".png\n") != 21 {
		t.Errorf("%d PNG, %d PDF files, want 21 each:\n%s", len(pngs), len(pdfs), stdout)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, s := range []string{"# doc\n<!-- mpq paper: runs -->\n- `paper-fig4.toml`: 30 runs, 30 grid points × 1 repetition\n", "text\n",
		"| 50ms | 50kB | cwr-red |", "| 50ms | 10kB | lowrtt | ", " | 1342 | ", "| RTT path 0 | RTT path 1 | scheduler | S1 p50 / p99 / p99.9 |",
		"| 20ms | 100ms | cwr |", "<!-- mpq paper: end fig6 -->\nend\n"} {
		if !strings.Contains(got, s) {
			t.Errorf("document lacks %q:\n%s", s, got)
		}
	}
	if strings.Contains(got, "old\n") {
		t.Error("a block kept its old text")
	}
	code, _, stderr = runCmd(t, "paper", "--plots-only", "--out", out, "--figures", png, "--doc", doc)
	if code != 0 {
		t.Fatalf("--plots-only: exit %d\n%s", code, stderr)
	}
	again, _ := os.ReadFile(doc)
	if string(again) != got {
		t.Error("the same results gave other tables")
	}
	bad := writeFile(t, dir, "bad.md", "no markers\n")
	code, _, stderr = runCmd(t, "paper", "--plots-only", "--out", out, "--figures", png, "--doc", bad)
	if b, _ := os.ReadFile(bad); code != exitFailure || !strings.Contains(stderr, "no markers") || string(b) != "no markers\n" {
		t.Errorf("document without markers: exit %d, %q, now %q", code, stderr, b)
	}
	// Without results nothing is made, not even the default figures
	// directory (relative to the working directory).
	t.Chdir(dir)
	code, _, stderr = runCmd(t, "paper", "--plots-only", "--out", "none", "--doc", "")
	if code != exitUsage || !strings.Contains(stderr, "no such directory") {
		t.Errorf("no results: exit %d, %q", code, stderr)
	}
	for _, made := range []string{"none", "docs"} {
		if _, err := os.Stat(made); err == nil {
			t.Errorf("mpq paper --plots-only without results made %s", made)
		}
	}
}

// TestPaperDefaultDoc: the document mpq paper writes its tables into by
// default is in the repository and has the markers of every table, so
// that "mpq paper" run at the root updates the reference paper's results
// page.
func TestPaperDefaultDoc(t *testing.T) {
	fs := flag.NewFlagSet("paper", flag.ContinueOnError)
	setupPaper(fs)
	def := fs.Lookup("doc").DefValue
	b, err := os.ReadFile(filepath.Join("..", def))
	if err != nil {
		t.Fatalf("--doc's default %s: %v", def, err)
	}
	blocks := map[string]string{}
	for _, n := range []string{"runs", "table1", "fig4", "fig5", "fig6"} {
		blocks[n] = ""
	}
	if _, err := paper.Replace(string(b), blocks); err != nil {
		t.Errorf("%s: %v", def, err)
	}
}
