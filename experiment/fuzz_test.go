package experiment

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseTrace: any input gives a trace or an error, never a panic; a
// trace has opportunities in order and a positive period.
func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{"1\n2\n2\n5\n", "", "0\n", "12\n-3\n", "1\n\n  4\n", "99999999999999999999\n"} {
		f.Add(s)
	}
	if m, _ := filepath.Glob("../experiments/traces/*.trace"); len(m) > 0 {
		if b, err := os.ReadFile(m[0]); err == nil && len(b) < 64<<10 {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := ParseTrace(strings.NewReader(in))
		if err != nil {
			return
		}
		if len(tr.MS) == 0 || tr.MS[len(tr.MS)-1] <= 0 || tr.MeanRate() <= 0 {
			t.Fatalf("trace %v", tr.MS)
		}
		for i := 1; i < len(tr.MS); i++ {
			if tr.MS[i] < tr.MS[i-1] {
				t.Fatalf("out of order: %v", tr.MS)
			}
		}
	})
}

// FuzzParse: any experiment file gives runs or errors naming the file,
// never a panic; the resolved file of a run reads back as the same run.
// Trace files are not read (every trace key fails as a missing file).
func FuzzParse(f *testing.F) {
	old := loadTrace
	loadTrace = func(string, string) (*Trace, error) { return nil, errors.New("no trace files while fuzzing") }
	f.Cleanup(func() { loadTrace = old })
	seeds, _ := filepath.Glob("../experiments/*.toml")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{paperFile, casesFile, changesFile, bottleneckFile, competitorFile, "name = 1\n", "[[path]]\n[[path.change]]\nat = \"1s\"\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		runs, err := Parse("f.toml", []byte(doc), nil)
		if err != nil {
			var e *Error
			var es Errors
			if !errors.As(err, &e) && !errors.As(err, &es) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), "f.toml") {
				t.Fatalf("error without the file's name: %v", err)
			}
			return
		}
		if len(runs) > 10000 {
			return
		}
		for _, r := range runs[:min(len(runs), 3)] {
			again, err := Parse("r.toml", r.ResolvedTOML(), nil)
			if err != nil {
				t.Fatalf("resolved file does not parse: %v\n%s", err, r.ResolvedTOML())
			}
			a := again[0]
			a.File, r.File = "", ""
			a.Vary, r.Vary, a.Label, r.Label = nil, nil, nil, nil
			a.Point, r.Point = 0, 0
			a.Repeat, r.Repeat, a.Repetition, r.Repetition, a.BaseSeed, r.BaseSeed = 0, 0, 0, 0, 0, 0
			if !reflect.DeepEqual(a, r) {
				t.Fatalf("round trip differs:\n%+v\n%+v\n%s", a, r, r.ResolvedTOML())
			}
		}
	})
}
