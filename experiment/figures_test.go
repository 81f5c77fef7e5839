package experiment

import (
	"strconv"
	"strings"
	"testing"
)

// TestOutputFigures: output.figures names files whose stem is a registered
// figure kind and whose extension a registered format; every other entry
// is an error at the file's line and key, and the figures are not part of
// a run's configuration.
func TestOutputFigures(t *testing.T) {
	RegisterFigures([]string{"ccdf", "ratio"}, []string{"pdf", "png", "md"})
	t.Cleanup(func() { RegisterFigures(nil, nil) })
	line := strings.Count(paperFile, "\n") + 2 // [output] is the line before
	at := "e.toml:" + strconv.Itoa(line) + ": output.figures: "
	for _, tc := range []struct {
		name, value, want string
	}{
		{"not an array", `"ratio.pdf"`, at + "want an array of file names"},
		{"not a string", `["ratio.pdf", 3]`, at + "want an array of file names, got the element 3"},
		{"a path", `["figs/ratio.pdf"]`, at + `"figs/ratio.pdf": want a file name in the sweep's directory`},
		{"a parent", `["../ratio.pdf"]`, at + `"../ratio.pdf": want a file name`},
		{"hidden", `[".pdf"]`, at + `".pdf": want a file name`},
		{"unknown format", `["ratio.jpeg"]`, at + `"ratio.jpeg": unknown figure format "jpeg" (known: pdf, png, md)`},
		{"no format", `["ratio"]`, at + `"ratio": unknown figure format ""`},
		{"unknown kind", `["ratoi.pdf"]`, at + `"ratoi.pdf": unknown figure kind "ratoi" (known: ccdf, ratio); did you mean "ratio"?`},
		{"twice", `["ratio.pdf", "ccdf.md", "ratio.pdf"]`, at + `"ratio.pdf" is named twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("e.toml", []byte(paperFile+"[output]\nfigures = "+tc.value+"\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	swept := paperFile + "[sweep]\n\"output.figures\" = [[\"ratio.pdf\"], [\"ccdf.pdf\"]]\n"
	if _, err := Parse("e.toml", []byte(swept), nil); err == nil || !strings.Contains(err.Error(), "sweep.output.figures: cannot be swept") {
		t.Fatalf("swept figures: %v", err)
	}

	plain, err := Parse("e.toml", []byte(paperFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	with, err := Parse("e.toml", []byte(paperFile+"[output]\nfigures = [\"ratio.pdf\", \"ratio.PNG\", \"ccdf.md\"]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(with[0].Output.Figures, " "); got != "ratio.pdf ratio.PNG ccdf.md" {
		t.Fatalf("figures %q", got)
	}
	if plain[0].PointSHA256() != with[0].PointSHA256() || string(plain[0].ResolvedTOML()) != string(with[0].ResolvedTOML()) {
		t.Fatalf("the figures changed the run's configuration:\n%s", with[0].ResolvedTOML())
	}

	// A program that draws no figures checks only that they are file names.
	RegisterFigures(nil, nil)
	if _, err := Parse("e.toml", []byte(paperFile+"[output]\nfigures = [\"anything.xyz\"]\n"), nil); err != nil {
		t.Fatalf("without registered kinds: %v", err)
	}
	if _, err := Parse("e.toml", []byte(paperFile+"[output]\nfigures = [\"a/b.pdf\"]\n"), nil); err == nil {
		t.Fatal("a path accepted without registered kinds")
	}
}

// TestOutputFiguresAllProblemsAtLoad: every bad output.figures entry is
// named at once, and a figure of one run in a file of several runs is
// refused at load, not after the runs (issue 37).
func TestOutputFiguresAllProblemsAtLoad(t *testing.T) {
	RegisterFigures([]string{"ccdf", "ratio", "cwnd", "throughput-time"}, []string{"pdf", "png"})
	RegisterOneRunFigures([]string{"cwnd", "throughput-time"})
	t.Cleanup(func() { RegisterFigures(nil, nil); RegisterOneRunFigures(nil) })
	line := strings.Count(paperFile, "\n") + 2
	at := "e.toml:" + strconv.Itoa(line) + ": output.figures: "
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"two bad entries", paperFile + "[output]\nfigures = [\"ratoi.pdf\", \"ccdf.jpeg\", \"ccdf.pdf\"]\n",
			[]string{at + `"ratoi.pdf": unknown figure kind`, `; "ccdf.jpeg": unknown figure format`}},
		{"one run's figure, repetitions", "repeat = 3\n" + paperFile + "[output]\nfigures = [\"throughput-time.png\"]\n",
			[]string{`output.figures: "throughput-time.png" draws one run, and the file has 3`}},
		{"one run's figure, a sweep", paperFile + "[output]\nfigures = [\"cwnd.pdf\", \"ccdf.pdf\"]\n[sweep]\nseed = [1, 2]\n",
			[]string{`output.figures: "cwnd.pdf" draws one run, and the file has 2`}},
		{"a bad entry beside one run's figure", "repeat = 3\n" + paperFile + "[output]\nfigures = [\"throughput-time.png\", \"bogus.png\"]\n",
			[]string{`output.figures: "bogus.png": unknown figure kind`, `output.figures: "throughput-time.png" draws one run, and the file has 3`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("e.toml", []byte(tc.doc), nil)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want %q", err, w)
				}
			}
		})
	}
	if _, err := Parse("e.toml", []byte(paperFile+"[output]\nfigures = [\"cwnd.pdf\"]\n"), nil); err != nil {
		t.Errorf("one run's figure of a file of one run: %v", err)
	}
}
