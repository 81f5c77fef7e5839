package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// reproduceLines returns the command lines of the sh blocks of a page's
// "## Reproduce" section (comments dropped).
func reproduceLines(t *testing.T, page string) []string {
	t.Helper()
	var out []string
	in, block := false, false
	for _, l := range strings.Split(readDoc(t, page), "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			in = l == "## Reproduce"
		case in && l == "```sh":
			block = true
		case in && block && l == "```":
			block = false
		case in && block:
			if i := strings.Index(l, "  #"); i >= 0 {
				l = l[:i]
			}
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				out = append(out, l)
			}
		}
	}
	return out
}

var (
	repeatFlag   = regexp.MustCompile(`\s--(repeat|parallel)\s+\d+`)
	outFlag      = regexp.MustCompile(`\s--out\s+(\S+)`)
	needsMachine = regexp.MustCompile(`^(sudo|deploy/|go test|MPQ_|go run \./cmd/mpq paper)|--backend netns|experiments/analysis/late_causes`)
)

// shorten returns a Reproduce line as the test runs it: mpq runs with
// one repetition (and a sample of a long sweep's runs), or "" for a line
// the test leaves to others (root, a VM, go test, mpq paper, which
// TestPaper runs shortened, and the qlog analysis of late messages, which
// experiments/analysis/test_late_causes.py tests on a synthetic run). With short, a run also gets at most 1 s of
// traffic (which renames its run directories: not for runs a plot line
// reads one directory of).
func shorten(line string, short bool) (cmd string, sharded bool) {
	if needsMachine.MatchString(line) {
		return "", false
	}
	line = strings.Replace(line, "go run ./cmd/mpq ", "mpq ", 1)
	if !strings.HasPrefix(line, "mpq run ") {
		return line, false
	}
	line = repeatFlag.ReplaceAllString(line, "")
	line += " --repeat 1 --parallel 2"
	if short && !strings.Contains(line, "--sweep duration=") { // a sweep of the duration keeps its values
		line += " --set duration=1s"
	}
	// The CoNEXT'17 grids (experiments/conext17 and its MPQUIC variant)
	// are thousands of downloads that end when the file has arrived,
	// whatever the duration: one run in a hundred.
	if strings.Contains(line, "experiments/conext17") {
		line += " --shard 1/100"
		sharded = true
	}
	// The robustness grid: 108 or 144 points per scheduler; one run in
	// fifty.
	if strings.Contains(line, "experiments/robustness") {
		line += " --shard 1/50"
		sharded = true
	}
	return line, sharded
}

// readsRunOf says whether a box's plot lines read one run directory of
// the experiment file a run line runs (results/NAME/POINT).
func readsRunOf(run string, lines []string) bool {
	f := strings.Fields(run)
	if len(f) < 3 {
		return false
	}
	name := strings.TrimSuffix(filepath.Base(f[2]), ".toml")
	for _, l := range lines {
		if strings.Contains(l, "mpq plot ") && strings.Contains(l, "/"+name+"/") {
			return true
		}
	}
	return false
}

// TestReproduceBoxes runs every "Reproduce" box of docs/results in
// shortened form (one repetition, 1 s of traffic, the CoNEXT'17 grid
// sampled): each mpq run and mpq plot command must succeed as written,
// and each table the page marks as a command's output must have the
// header and rows of what that command wrote (checkGeneratedTables).
// Boxes that need root, a VM or minutes of benchmarks are left to their
// own tests.
func TestReproduceBoxes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mpq and runs every Reproduce box shortened")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "mpq"), "./cmd/mpq")
	build.Dir = abs
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pages, err := filepath.Glob("results/*.md")
	if err != nil {
		t.Fatal(err)
	}
	ran, tables := 0, 0
	for _, page := range pages {
		lines := reproduceLines(t, page)
		if len(lines) == 0 {
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(page), ".md"), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Symlink(filepath.Join(abs, "experiments"), filepath.Join(dir, "experiments")); err != nil {
				t.Fatal(err)
			}
			var shardedOut, notRun []string
			skipped := map[string]bool{} // -o files of lines not run
			for _, l := range lines {
				cmd, sharded := shorten(l, !readsRunOf(l, lines))
				if cmd == "" {
					t.Logf("left to its own test: %s", l)
					skipOutputs(skipped, l)
					if d := runDir(t, l); d != "" {
						notRun = append(notRun, d)
					}
					continue
				}
				if sharded {
					out := "results"
					if m := outFlag.FindStringSubmatch(cmd); m != nil {
						out = m[1]
					}
					shardedOut = append(shardedOut, out+"/")
				}
				if strings.HasPrefix(cmd, "mpq plot ") && readsAny(cmd, shardedOut) {
					t.Logf("reads a sampled sweep, not run: %s", l)
					skipOutputs(skipped, l)
					continue
				}
				if strings.HasPrefix(cmd, "mpq plot ") && readsAny(cmd, notRun) {
					t.Logf("reads the results of a line left to its own test: %s", l)
					skipOutputs(skipped, l)
					continue
				}
				out, err := runIn(dir, bin, cmd)
				if err != nil && strings.Contains(string(out), "is not before the end of the experiment") {
					// Scheduled changes or sources after 1 s: the file's own duration.
					cmd, _ = shorten(l, false)
					out, err = runIn(dir, bin, cmd)
				}
				if err != nil {
					t.Errorf("%s: %s\n%v\n%s", page, cmd, err, out)
					continue
				}
				ran++
			}
			tables += checkGeneratedTables(t, page, dir, skipped)
		})
	}
	if tables < 5 {
		t.Errorf("only %d generated tables compared with their commands' output", tables)
	}
	if ran < 20 {
		t.Errorf("only %d Reproduce commands ran", ran)
	}
}

// skipOutputs notes the .md files a line that is not run would write.
func skipOutputs(skipped map[string]bool, line string) {
	for _, m := range writesTableMD.FindAllStringSubmatch(line, -1) {
		skipped[m[1]] = true
	}
}

// envAssignment is a command line's leading NAME=VALUE.
var envAssignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// experimentName is the name line of an experiment file.
var experimentName = regexp.MustCompile(`(?m)^name\s*=\s*"([^"]+)"`)

// runDir is the directory of the results a line left to its own test
// would write ("OUT/NAME/", OUT its --out or results), when it is an mpq
// run of an experiment file of the repository (as root: sudo mpq run
// FILE; in the VM: deploy/vm/run FILE OUT); "" otherwise. The page's
// plot lines that read it are not run.
func runDir(t *testing.T, line string) string {
	t.Helper()
	f := strings.Fields(strings.TrimPrefix(line, "sudo "))
	for len(f) > 0 && envAssignment.MatchString(f[0]) {
		f = f[1:]
	}
	if len(f) >= 3 && f[0] == "deploy/vm/run" {
		// deploy/vm/run FILE OUT [flags]: mpq run FILE --out OUT.
		f = append([]string{"mpq", "run", f[1], "--out", f[2]}, f[3:]...)
		line = strings.Join(f, " ")
	}
	if len(f) < 3 || f[0] != "mpq" || f[1] != "run" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(root, f[2]))
	if err != nil {
		return ""
	}
	m := experimentName.FindSubmatch(b)
	if m == nil {
		return ""
	}
	out := "results"
	if o := outFlag.FindStringSubmatch(line); o != nil {
		out = o[1]
	}
	return out + "/" + string(m[1]) + "/"
}

// readsAny says whether an mpq plot line reads a directory below one of
// dirs, or one of dirs from a directory above it (an --out directory).
func readsAny(cmd string, dirs []string) bool {
	for _, f := range strings.Fields(cmd)[2:] {
		for _, d := range dirs {
			if strings.HasPrefix(f+"/", d) || strings.HasPrefix(d, f+"/") {
				return true
			}
		}
	}
	return false
}

// runIn runs a command line with bash in dir, mpq from bin.
func runIn(dir, bin, cmd string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Dir = dir
	c.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return c.CombinedOutput()
}

// TestRunDir: a line left to its own test names the results directory
// of its experiment file (by the file's name line, under --out), whose
// plot lines are then not run either.
func TestRunDir(t *testing.T) {
	for line, want := range map[string]string{
		"sudo mpq run experiments/cc-kernel.toml":                                            "results/cc-kernel/",
		"sudo mpq run experiments/cc-kernel.toml --out results-again":                        "results-again/cc-kernel/",
		"sudo mpq run experiments/references/001-file-transfer.toml":                         "results/ref001-file-transfer/",
		"deploy/vm/run experiments/validation-lowrate.toml results-vm":                       "results-vm/validation-lowrate/",
		"MPQ_VM_TIMEOUT=400 deploy/vm/run experiments/validation-base10.toml out --repeat 6": "out/validation-base10/",
		"go test ./runner -run TestCoupledShareUnderRandomLoss -v":                           "",
	} {
		if got := runDir(t, line); got != want {
			t.Errorf("runDir(%q) = %q, want %q", line, got, want)
		}
	}
	if !readsAny("mpq plot results/cc-kernel --kind metrics -o x.md", []string{"results/cc-kernel/"}) ||
		readsAny("mpq plot results/cc-kernel-other --kind metrics -o x.md", []string{"results/cc-kernel/"}) ||
		!readsAny("mpq plot ns-a ns-b --kind metrics -o x.md", []string{"ns-b/failover/"}) {
		t.Error("readsAny: a plot line of the directory, or of another one")
	}
}
