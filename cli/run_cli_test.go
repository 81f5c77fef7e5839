package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunReportsEveryProblem: names are checked when the file loads, and
// every problem of the file, of several --set and of --backend is
// reported at once with exit 2, before anything runs (issue 14: names
// failed run by run with exit 1, and of several bad --set only the first
// was reported).
func TestRunReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	f := writeFile(t, dir, "cli.toml", strings.Replace(runFile, `kind = "periodic"`, "kind = \"periodic\"\nrate = 3", 1)+
		"[transport]\npath_scheduler = \"lowrt\"\nstream_scheduler = \"priority\"\n")
	code, stdout, stderr := runCmd(t, "run", f, "--out", dir,
		"--set", "transport.congestion=vegas", "--set", "nokey", "--set", "source.s1.size=big", "--set", "alsobad", "--backend", "loopbak")
	if code != exitUsage || stdout != "" {
		t.Fatalf("exit %d, stdout %q, want 2 and nothing; stderr:\n%s", code, stdout, stderr)
	}
	want := []string{
		`mpq run: --set "nokey": want key=value`,
		`mpq run: --set "alsobad": want key=value`,
		f + `:9: source.0.rate: not a key of periodic sources`,
		f + `:15: transport.path_scheduler: unknown path scheduler "lowrt"`,
		f + `:16: transport.stream_scheduler: unknown stream scheduler "priority"`,
		f + `: transport.congestion (from --set transport.congestion=vegas): unknown congestion controller "vegas"`,
		f + `: source.0.size (from --set source.s1.size=big): bad size "big"`,
		f + `: backend (from --backend): unknown backend "loopbak"`,
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
	if n := strings.Count(stderr, "\n"); n != len(want) {
		t.Errorf("%d lines on stderr, want %d:\n%s", n, len(want), stderr)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Fatalf("a bad file left %v", names)
	}
}

// TestRunExitCodes: the exit statuses docs/reference/cli.md and "mpq help run" state.
func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "cli.toml", runFile)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing file", []string{"run", filepath.Join(dir, "missing.toml")}, exitUsage, "missing.toml: cannot read the experiment file: no such file or directory"},
		{"no file", []string{"run", "--out", dir}, exitUsage, "no experiment FILE given"},
		{"bad flag value", []string{"run", good, "--parallel", "many"}, exitUsage, `invalid value "many" for flag -parallel`},
		{"results cannot be written", []string{"run", good, "--set", "duration=1s", "--out", filepath.Join(good, "sub")}, exitFailure, "not a directory"},
		{"success", []string{"run", good, "--set", "duration=1s", "--out", dir}, 0, "[1/1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.msg) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tc.code, stderr, tc.msg)
			}
		})
	}
}

// TestRunDirectoryName: a run's directory is named after the swept keys
// and the --set values that change the experiment, not output options.
func TestRunDirectoryName(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "cli.toml", strings.Replace(runFile, `["1s", "60s"]`, `["1s", "2s"]`, 1))
	code, _, stderr := runCmd(t, "run", f, "--out", dir, "--set", "output.qlog=true", "--set", "output.interval=50ms", "--set", "seed=3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := runDirs(t, filepath.Join(dir, "cli"))
	want := []string{"seed=3,duration=1s", "seed=3,duration=2s"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("run directories %v, want %v", got, want)
	}
	// The output options took effect all the same.
	if _, err := os.Stat(filepath.Join(dir, "cli", want[0], "qlog")); err != nil {
		t.Fatalf("--set output.qlog=true: %v", err)
	}
	// Only output options: the run keeps the plain name. (Into a
	// directory of its own: the runs of the first invocation would not
	// aggregate with these.)
	dir2 := t.TempDir()
	code, _, stderr = runCmd(t, "run", f, "--out", dir2, "--set", "duration=1s", "--set", "output.qlog=true")
	if code != 0 || !strings.Contains(stderr, filepath.Join(dir2, "cli", "duration=1s")+" ") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// TestRunETA: a sweep's progress lines estimate the time left, except the
// last; a single run has none.
func TestRunETA(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "cli.toml", strings.Replace(runFile, `["1s", "60s"]`, `["1s", "2s", "3s"]`, 1))
	code, _, stderr := runCmd(t, "run", f, "--out", dir, "--parallel", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "mpq run: peak RSS") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("stderr:\n%s", stderr)
	}
	for i, l := range lines {
		if has := strings.Contains(l, " left"); has != (i < 2) || !strings.HasPrefix(l, "[") {
			t.Fatalf("line %d: %q", i+1, l)
		}
	}
	_, _, stderr = runCmd(t, "run", f, "--out", dir, "--set", "duration=1s")
	if strings.Contains(stderr, "left") {
		t.Fatalf("single run with an estimate: %s", stderr)
	}
}

func TestETA(t *testing.T) {
	for _, tc := range []struct {
		elapsed     time.Duration
		done, total float64
		want        time.Duration
		ok          bool
	}{
		// 10 s of a 60 s sweep took 2 s: 50 s of experiment left at 5x.
		{2 * time.Second, 10, 60, 10 * time.Second, true},
		{3 * time.Second, 20, 20, 0, false},
		{0, 0, 20, 0, false},
		{time.Minute, 1, 4, 3 * time.Minute, true},
	} {
		got, ok := eta(tc.elapsed, tc.done, tc.total)
		if got != tc.want || ok != tc.ok {
			t.Errorf("eta(%v, %v, %v) = %v, %v; want %v, %v", tc.elapsed, tc.done, tc.total, got, ok, tc.want, tc.ok)
		}
	}
	for d, want := range map[time.Duration]string{1234 * time.Millisecond: "1.2s", 83 * time.Second: "1m23s", 754 * time.Second: "13m0s"} {
		if got := formatETA(d); got != want {
			t.Errorf("formatETA(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestInterruptedGet: an interrupted download exits 1 and leaves no file,
// as docs/reference/cli.md states (serve's 0 and run's 130 are checked by startServe and
// TestRunInterrupted).
func TestInterruptedGet(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"get", "--addr", silentAddr(t), "--path", "/f", "--out", filepath.Join(dir, "f")}, &out, &errOut)
	if code != exitFailure || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("left %v", names)
	}
}

// TestTransportNamesAllReported: serve and get check every name flag and
// report every bad one, naming the flag, with exit 2.
func TestTransportNamesAllReported(t *testing.T) {
	names := []string{"--congestion", "vegas", "--path-scheduler", "lowrt", "--stream-scheduler", "fifo"}
	for cmd, args := range map[string][]string{"serve": {"--root", t.TempDir()}, "get": {"--path", "/x"}} {
		code, _, stderr := runCmd(t, append(append([]string{cmd}, args...), names...)...)
		for _, w := range []string{
			`mpq ` + cmd + `: --congestion: unknown congestion controller "vegas"`,
			`mpq ` + cmd + `: --path-scheduler: unknown path scheduler "lowrt" (known: blest, cwr, cwr-plus, cwr-red, cwr-red-fast, ecf, lowrtt, redundant, round-robin, sr); did you mean "lowrtt"?`,
			`mpq ` + cmd + `: --stream-scheduler: unknown stream scheduler "fifo"`,
		} {
			if code != exitUsage || !strings.Contains(stderr, w) {
				t.Errorf("mpq %s: exit %d, stderr %q lacks %q", cmd, code, stderr, w)
			}
		}
	}
}

// TestGetRemovesStalePartials: the partial download a killed mpq get left
// beside its --out file is removed by the next get of that file, even one
// that fails; another file's is kept.
func TestGetRemovesStalePartials(t *testing.T) {
	dir := t.TempDir()
	stale, other := filepath.Join(dir, ".f.mpq-get-123"), filepath.Join(dir, ".g.mpq-get-456")
	for _, p := range []string{stale, other} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"get", "--addr", silentAddr(t), "--path", "/f", "--out", filepath.Join(dir, "f")}, &out, &errOut); code != exitFailure {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != ".g.mpq-get-456" {
		t.Fatalf("left %v, want only the other file's partial download", names)
	}
}
