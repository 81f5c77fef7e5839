package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseTrace(t *testing.T) {
	tr, err := ParseTrace(strings.NewReader("1\n2\n\n2\n  8 \n"))
	if err != nil {
		t.Fatal(err)
	}
	// 4 opportunities of 1500 bytes in 8 ms: 6 Mbit/s.
	if len(tr.MS) != 4 || tr.Period() != 8*time.Millisecond || tr.MeanRate() != 6e6 {
		t.Errorf("trace %+v, period %v, rate %v", tr, tr.Period(), tr.MeanRate())
	}
	for _, tc := range []struct{ in, want string }{
		{"", "no opportunities"},
		{"0\n0\n", "the last time"},
		{"5\n3\n", "line 2: 3 ms is before the line above (5 ms)"},
		{"1\nx\n", `line 2: "x" is not a whole number`},
		{"1.5\n", `line 1: "1.5" is not a whole number`},
		{"-1\n", "line 1: -1 ms is outside"},
		{"1\n" + strings.Repeat("9", 5000) + "\n", "line 2: too long"},
	} {
		if _, err := ParseTrace(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.20q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// trace_up and trace_down name files relative to the experiment file; a
// trace replaces its direction's rate (its mean rate, which sizes the
// queue), and the resolved file names it absolutely.
func TestTraceKeys(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "traces", "t.trace"), []byte("1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "e.toml")
	doc := "name = \"t\"\n[[path]]\nrate = \"5Mbit\"\nrtt = \"20ms\"\ntrace_down = \"traces/t.trace\"\n[[source]]\nkind = \"bulk\"\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := runs[0].Paths[0]
	if p.Down.Trace == nil || p.Down.Trace.File != filepath.Join(dir, "traces", "t.trace") || p.Down.Rate != 12e6 || p.Up.Trace != nil || p.Up.Rate != 5e6 {
		t.Fatalf("path %+v", p)
	}
	checkRoundTrip(t, runs[0])
	for _, tc := range []struct{ from, to, want string }{
		{`"traces/t.trace"`, `"traces/none.trace"`, "e.toml:5: path.0.trace_down: open " + filepath.Join(dir, "traces", "none.trace")},
		{`"traces/t.trace"`, `3`, "e.toml:5: path.0.trace_down: want a string"},
		{"[[source]]", "[path.down]\nrate = \"1Mbit\"\n[[source]]", "e.toml:7: path.0.down.rate: the direction's trace_down gives its rate"},
		{"[[source]]", "[[path.change]]\nat = \"1s\"\nrate = \"1Mbit\"\n[[source]]", "e.toml:8: path.0.change.0.rate: the path's trace gives the rate"},
	} {
		if err := os.WriteFile(file, []byte(strings.Replace(doc, tc.from, tc.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(file, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.to, err, tc.want)
		}
	}
}
