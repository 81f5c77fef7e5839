package cli

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// quick runs the quickstart experiment (three schedulers) for 1 s of
// simulated time and returns its results directory.
func quick(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if code, _, stderr := runCmd(t, "run", "../experiments/quickstart.toml", "--set", "duration=1s", "--out", dir, "--parallel", "1"); code != 0 {
		t.Fatalf("mpq run: exit %d\n%s", code, stderr)
	}
	return filepath.Join(dir, "quickstart")
}

// TestPlotFormats: mpq plot writes a PDF with its fonts embedded, an SVG
// that parses as XML (fonts embedded too), a PNG of 3.5 in × 2.5 in at
// 192 dpi, and the table as Markdown and CSV.
func TestPlotFormats(t *testing.T) {
	res := quick(t)
	out := t.TempDir()
	read := func(name string) []byte {
		t.Helper()
		f := filepath.Join(out, name)
		code, stdout, stderr := runCmd(t, "plot", res, "-o", f)
		if code != 0 || !strings.Contains(stdout, "ccdf of 3 runs (3 grid points)") {
			t.Fatalf("mpq plot -o %s: exit %d\n%s%s", name, code, stdout, stderr)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pdf := read("f.pdf")
	if !bytes.HasPrefix(pdf, []byte("%PDF-")) {
		t.Errorf("PDF header %q", pdf[:min(8, len(pdf))])
	}
	if err := pdfFontEmbedded(pdf); err != nil {
		t.Error(err)
	}
	svg := read("f.svg")
	d := xml.NewDecoder(bytes.NewReader(svg))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse as XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" || !bytes.Contains(svg, []byte("@font-face")) || !bytes.Contains(svg, []byte(`width="252pt"`)) {
		t.Errorf("SVG: root <%s>, embedded font %v, 252 pt wide %v", root, bytes.Contains(svg, []byte("@font-face")), bytes.Contains(svg, []byte(`width="252pt"`)))
	}
	img, format, err := image.Decode(bytes.NewReader(read("f.png")))
	if err != nil || format != "png" {
		t.Fatalf("PNG: %v %s", err, format)
	}
	if b := img.Bounds(); b.Dx() != 672 || b.Dy() != 480 {
		t.Errorf("PNG %dx%d, want 672x480 (3.5 in x 2.5 in at 192 dpi)", b.Dx(), b.Dy())
	}
	md := string(read("f.md"))
	for _, s := range []string{"| run | runs | messages |", "| lowrtt | 1 |", "| cwr | 1 |", "| cwr-red | 1 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
	if csv := string(read("f.csv")); !strings.HasPrefix(csv, "label,runs,n,failed,p50_ms") {
		t.Errorf("csv:\n%s", csv)
	}
	if names := dirNames(t, out); len(names) != 5 {
		t.Errorf("files left: %v", names)
	}
}

// pdfFontEmbedded checks that a PDF's font descriptor refers to a font
// program (/FontFile2 N 0 R) that is in the file: an object N with the
// font's length (/Length1) and its stream. Without embedding, the
// reference is to object 0.
func pdfFontEmbedded(pdf []byte) error {
	m := regexp.MustCompile(`/FontFile2 (\d+) 0 R`).FindSubmatch(pdf)
	if m == nil || string(m[1]) == "0" {
		return fmt.Errorf("PDF: no embedded font program (%q)", m)
	}
	obj := bytes.Index(pdf, []byte("\n"+string(m[1])+" 0 obj"))
	if obj < 0 {
		return fmt.Errorf("PDF: font program object %s missing", m[1])
	}
	rest := pdf[obj:]
	end := bytes.Index(rest, []byte("endobj"))
	if end < 0 || !bytes.Contains(rest[:end], []byte("/Length1 ")) || !bytes.Contains(rest[:end], []byte("stream")) {
		return fmt.Errorf("PDF: object %s is not a font program", m[1])
	}
	return nil
}

// TestPlotSameSVG: the same results give the same SVG bytes.
func TestPlotSameSVG(t *testing.T) {
	res := quick(t)
	out := t.TempDir()
	var svgs [][]byte
	for _, name := range []string{"a.svg", "b.svg"} {
		if code, _, stderr := runCmd(t, "plot", res, "-o", filepath.Join(out, name)); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		svgs = append(svgs, b)
	}
	if !bytes.Equal(svgs[0], svgs[1]) {
		t.Fatal("two SVGs of the same results differ")
	}
}

// TestPlotBadInput: a missing, empty or wrong results directory, and bad
// flags, give a clear error and exit 2, and write nothing.
func TestPlotBadInput(t *testing.T) {
	res := quick(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	wrong := filepath.Join(dir, "wrong")
	for _, d := range []string{empty, wrong} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, wrong, "notes.txt", "not results")
	out := filepath.Join(dir, "f.svg")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{filepath.Join(dir, "missing"), "-o", out}, "missing: no such directory"},
		{[]string{empty, "-o", out}, "empty: no runs in it"},
		{[]string{wrong, "-o", out}, "wrong: no runs in it (no summary.json below it"},
		{[]string{filepath.Join(wrong, "notes.txt"), "-o", out}, "notes.txt: not a directory"},
		{[]string{"-o", out}, "no RESULTS_DIR given"},
		{[]string{res}, "no output file"},
		{[]string{res, "-o", filepath.Join(dir, "f.gif")}, `unknown format "gif"`},
		{[]string{res, "-o", out, "--kind", "pie"}, "--kind pie: unknown"},
		{[]string{res, "-o", out, "--source", "S9"}, "--source S9: no such source with messages in quickstart (it has s1)"},
		{[]string{res, "-o", out, "--where", "transport.path_scheduler=sr"}, "no run matches --where transport.path_scheduler=sr"},
		{[]string{res, "-o", out, "--label", "rtt"}, "--label rtt: not a key the runs vary"},
		{[]string{res, "-o", out, "--metric", "s1.mct_p99_ms"}, "--metric is for --kind metrics, not ccdf"},
		{[]string{res, "-o", out, "--columns", "path_scheduler"}, "--columns is for --kind metrics or robustness-summary, not ccdf"},
		{[]string{res, "-o", filepath.Join(dir, "t.md"), "--kind", "robustness", "--by", "shape"}, "--by is for --kind robustness-summary, not robustness"},
		{[]string{res, "-o", filepath.Join(dir, "t.md"), "--kind", "metrics"}, "name the columns with --metric NAME"},
		{[]string{res, "-o", filepath.Join(dir, "t.md"), "--kind", "metrics", "--metric", "s1.p99"}, "--metric s1.p99: no such metric"},
	} {
		code, stdout, stderr := runCmd(t, append([]string{"plot"}, tc.args...)...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.msg) {
			t.Errorf("mpq plot %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.msg)
		}
	}
	if names := dirNames(t, dir); len(names) != 2 {
		t.Errorf("files left: %v", names)
	}
}

// TestPlotFlagsAnywhere: flags before, between and after the
// directories.
func TestPlotFlagsAnywhere(t *testing.T) {
	res := quick(t)
	out := filepath.Join(t.TempDir(), "f.csv")
	code, stdout, stderr := runCmd(t, "plot", "--where", "transport.path_scheduler=cwr", res, "-o", out, res+"/", "--kind", "ccdf")
	if code != 0 || !strings.Contains(stdout, "ccdf of 1 run (1 grid point)") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
}
