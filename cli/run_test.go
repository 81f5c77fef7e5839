package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const runFile = `name = "cli"
duration = "1s"
[[path]]
rate = "20Mbit"
rtt = "20ms"
[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "5kB"
[sweep]
"duration" = ["1s", "60s"]
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunBadFile(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "bad.toml", "name = \"x\"\n[[path]]\nrate = \"fast\"\n[[source]]\nkind = \"bulk\"\n")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"run", f, "--out", dir}, &out, &errOut); code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitUsage, errOut.String())
	}
	if want := f + ":3: path.0.rate: bad rate"; !strings.Contains(errOut.String(), want) {
		t.Fatalf("stderr %q does not contain %q", errOut.String(), want)
	}
	var out2, errOut2 bytes.Buffer
	if code := run(context.Background(), []string{"run", f, "--set", "nokey"}, &out2, &errOut2); code != exitUsage {
		t.Fatalf("--set without = : exit %d", code)
	}
}

func TestRunSweepWritesEveryRun(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "cli.toml", strings.Replace(runFile, `["1s", "60s"]`, `["1s", "2s"]`, 1))
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"run", f, "--out", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, r := range []string{"duration=1s", "duration=2s"} {
		for _, name := range []string{"config.resolved.toml", "summary.json", "messages.csv", "paths.csv", "throughput.csv"} {
			if _, err := os.Stat(filepath.Join(dir, "cli", r, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Fatalf("%d result lines:\n%s", n, out.String())
	}
	assertNoTemp(t, filepath.Join(dir, "cli"))
}

// cancelAfter cancels a context once the text it receives contains s.
type cancelAfter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	s      string
	cancel func()
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.s) {
		c.cancel()
	}
	return len(p), nil
}

// TestRunInterrupted: Ctrl-C during the second run of a sweep keeps the
// first run's results and leaves no partial directory.
func TestRunInterrupted(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "cli.toml", runFile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelAfter{s: "[1/2]", cancel: cancel}
	var out bytes.Buffer
	code := run(ctx, []string{"run", f, "--out", dir, "--parallel", "1"}, &out, stderr)
	if code != 130 {
		t.Fatalf("exit %d, want 130: %s", code, stderr.buf.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "cli", "duration=1s", "summary.json")); err != nil {
		t.Fatalf("the finished run was not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cli", "duration=60s")); !os.IsNotExist(err) {
		t.Fatalf("the interrupted run left a directory: %v", err)
	}
	assertNoTemp(t, filepath.Join(dir, "cli"))
	if !strings.Contains(stderr.buf.String(), "1 of 2 runs finished and kept") {
		t.Fatalf("stderr: %s", stderr.buf.String())
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary directory %s left behind", e.Name())
		}
	}
}

// TestRunFlagsAnywhere runs the same command line with the flags before,
// around and after FILE: every flag must take effect wherever it stands
// (the flag package alone drops every flag after the first positional
// argument, which once ran a whole sweep into ./results).
func TestRunFlagsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(file, out string) []string
	}{
		{"flags after FILE", func(f, o string) []string {
			return []string{f, "--parallel", "1", "--set", "duration=1s", "--out", o}
		}},
		{"flags before FILE", func(f, o string) []string {
			return []string{"--parallel", "1", "--set", "duration=1s", "--out", o, f}
		}},
		{"flags around FILE", func(f, o string) []string {
			return []string{"--parallel", "1", f, "--set", "duration=1s", "--out", o}
		}},
		{"FILE after --", func(f, o string) []string {
			return []string{"--set", "duration=1s", "--out", o, "--", f}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir) // a dropped --out would write to ./results here
			f := writeFile(t, dir, "cli.toml", runFile)
			out := filepath.Join(dir, "out")
			code, stdout, stderr := runCmd(t, append([]string{"run"}, tc.args(f, out)...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			// --set fixed the swept duration: one run of 1 s, under --out.
			runs := runDirs(t, filepath.Join(out, "cli"))
			if len(runs) != 1 {
				t.Fatalf("runs %v under --out, want one (the --set fixes the sweep)", runs)
			}
			if n := strings.Count(stdout, "\n"); n != 1 {
				t.Fatalf("%d result lines:\n%s", n, stdout)
			}
			cfg, err := os.ReadFile(filepath.Join(out, "cli", runs[0], "config.resolved.toml"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(cfg), `duration = "1s"`) {
				t.Fatalf("resolved configuration without the --set duration:\n%s", cfg)
			}
		})
	}
}

// TestRunSeveralFiles: several files run one after the other, each into
// its own directory, once all loaded; a problem in any of them, or two
// files of one name, runs none (exit 2).
func TestRunSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.toml", runFile)
	b := writeFile(t, dir, "b.toml", strings.Replace(runFile, `name = "cli"`, `name = "cli2"`, 1))
	same := writeFile(t, dir, "same.toml", runFile)
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{{a, b, filepath.Join(dir, "missing.toml")}, {a, same}} {
		code, _, stderr := runCmd(t, append([]string{"run", "--out", out, "--set", "duration=1s"}, args...)...)
		if code != exitUsage {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%v: something ran: %s exists", args, out)
		}
	}
	code, stdout, stderr := runCmd(t, "run", "--out", out, "--set", "duration=1s", a, b)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, n := range []string{"cli", "cli2"} {
		if runs := runDirs(t, filepath.Join(out, n)); len(runs) == 0 {
			t.Fatalf("no runs of %s", n)
		}
		if _, err := os.Stat(filepath.Join(out, n, "aggregate.json")); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(stderr, "file 2 of 2: "+b) || strings.Count(stdout, "\n") != 2 ||
		!strings.Contains(stderr, "; all files: 1/2, about ") || !strings.Contains(stderr, "; all files: 2/2\n") {
		t.Fatalf("stderr %q\nstdout %q", stderr, stdout)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		code, stdout, _ := runCmd(t, arg)
		if code != 0 || !strings.HasPrefix(stdout, "mpq ") || !strings.Contains(stdout, "go1.") {
			t.Fatalf("mpq %s: exit %d, stdout %q", arg, code, stdout)
		}
	}
}
