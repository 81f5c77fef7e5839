package cli

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// commandNames lists mpq's subcommands, sorted.
func commandNames() []string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestHelpPerCommand: "mpq help CMD", "mpq CMD --help" and "mpq CMD -h"
// print that command's usage, flags and examples on stdout and exit 0
// (issue 14: "mpq help run" printed the general help, "serve --help"
// Go's bare "Usage of serve:").
func TestHelpPerCommand(t *testing.T) {
	for _, name := range commandNames() {
		t.Run(name, func(t *testing.T) {
			code, want, stderr := runCmd(t, "help", name)
			if code != 0 || stderr != "" {
				t.Fatalf("mpq help %s: exit %d, stderr %q", name, code, stderr)
			}
			fs, _ := commands[name].flagSet(name)
			nflags := 0
			fs.VisitAll(func(*flag.Flag) { nflags++ })
			for _, s := range []string{"usage: mpq " + name, "examples:\n  mpq " + name, "\nflags:\n"} {
				if s == "\nflags:\n" && nflags == 0 {
					continue // a command without flags (aggregate)
				}
				if !strings.Contains(want, s) {
					t.Fatalf("mpq help %s does not contain %q:\n%s", name, s, want)
				}
			}
			// The pacing defaults differ between serve/get and experiment
			// files: every command that has one says so.
			if name == "run" || name == "serve" || name == "get" {
				if !strings.Contains(want, "transport.pacing = true") || !strings.Contains(want, "pace") {
					t.Fatalf("mpq help %s does not state the pacing defaults:\n%s", name, want)
				}
			}
			if strings.Contains(want, "Usage of") {
				t.Fatalf("mpq help %s prints the flag package's bare usage:\n%s", name, want)
			}
			for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {name, "-help"}, {name, "x", "--help"}} {
				code, got, stderr := runCmd(t, args...)
				if code != 0 || got != want || stderr != "" {
					t.Fatalf("mpq %s: exit %d, stderr %q, stdout differs from mpq help %s:\n%s", strings.Join(args, " "), code, stderr, name, got)
				}
			}
		})
	}
	code, stdout, _ := runCmd(t, "help")
	if code != 0 || !strings.Contains(stdout, "usage: mpq COMMAND") {
		t.Fatalf("mpq help: exit %d\n%s", code, stdout)
	}
	for _, name := range commandNames() {
		if !strings.Contains(stdout, "\n  "+name+" ") {
			t.Fatalf("mpq help does not list %s:\n%s", name, stdout)
		}
	}
	if code, _, stderr := runCmd(t, "help", "fly"); code != exitUsage || !strings.Contains(stderr, `unknown command "fly"`) {
		t.Fatalf("mpq help fly: exit %d, stderr %q", code, stderr)
	}
}

// TestBadFlagShowsSynopsis: a bad flag names itself and the command's
// usage line, and points to the help.
func TestBadFlagShowsSynopsis(t *testing.T) {
	for _, name := range commandNames() {
		code, stdout, stderr := runCmd(t, name, "--bogus")
		if code != exitUsage || stdout != "" {
			t.Fatalf("mpq %s --bogus: exit %d, stdout %q", name, code, stdout)
		}
		for _, s := range []string{"mpq " + name + ": flag provided but not defined: -bogus", "usage: mpq " + name, "mpq help " + name} {
			if !strings.Contains(stderr, s) {
				t.Fatalf("mpq %s --bogus: stderr %q lacks %q", name, stderr, s)
			}
		}
	}
}

// examples returns the example command lines of a command's help text.
func examples(t *testing.T, name string) [][]string {
	t.Helper()
	var out [][]string
	in := false
	sc := bufio.NewScanner(strings.NewReader(helpText(name)))
	for sc.Scan() {
		line := sc.Text()
		if line == "examples:" {
			in = true
			continue
		}
		if in && strings.HasPrefix(line, "  mpq ") {
			args := strings.Fields(line)[1:]
			if args[0] != name {
				t.Fatalf("example of %s runs %s: %s", name, args[0], line)
			}
			out = append(out, args)
		}
	}
	if len(out) == 0 {
		t.Fatalf("help/%s.txt has no examples", name)
	}
	return out
}

// TestHelpExamplesParse: every example in the help texts is a valid
// command line: its flags exist and take the values given, and the
// experiment files it names load (checked from the repository's root).
func TestHelpExamplesParse(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	for _, name := range commandNames() {
		for _, args := range examples(t, name) {
			fs, _ := commands[name].flagSet(name)
			pos, err := parseArgs(fs, args[1:])
			if err != nil {
				t.Errorf("example %q: %v", strings.Join(args, " "), err)
				continue
			}
			switch name {
			case "run":
			case "plot":
				if len(pos) == 0 {
					t.Errorf("example %q: no RESULTS_DIR", strings.Join(args, " "))
				}
				continue
			case "aggregate":
				if len(pos) != 1 {
					t.Errorf("example %q: %d directories", strings.Join(args, " "), len(pos))
				}
				continue
			case "merge":
				continue // directories of results, made by the examples before
			case "testbed":
				// up, down or status, and an experiment file.
				if len(pos) == 0 || len(pos) > 2 || !slices.Contains([]string{"up", "down", "status"}, pos[0]) {
					t.Errorf("example %q: arguments %v", strings.Join(args, " "), pos)
					continue
				}
				pos = pos[1:]
				if len(pos) == 0 {
					continue
				}
			default:
				if len(pos) > 0 {
					t.Errorf("example %q: stray arguments %v", strings.Join(args, " "), pos)
				}
				continue
			}
			var sets []string
			if f := fs.Lookup("set"); f != nil {
				sets = *f.Value.(*setFlags)
			}
			// mpq run takes several files (a shell glob in an
			// example), the others one.
			var files []string
			for _, p := range pos {
				m, _ := filepath.Glob(p)
				if len(m) == 0 {
					m = []string{p}
				}
				files = append(files, m...)
			}
			if len(files) == 0 || len(files) > 1 && name != "run" {
				t.Errorf("example %q: %d files", strings.Join(args, " "), len(files))
				continue
			}
			backend := ""
			if f := fs.Lookup("backend"); f != nil {
				backend = f.Value.String()
			}
			for _, f := range files {
				if _, probs := loadRuns(f, sets, nil, backend, 0); len(probs) > 0 {
					t.Errorf("example %q: %s", strings.Join(args, " "), strings.Join(probs, "\n"))
				}
			}
		}
	}
}

// TestFlagsAnywhereEveryCommand: for every command a flag takes effect
// wherever it stands, and a stray argument of a command without
// positional arguments is an error (exit 2) wherever it stands, never
// silently ignored with the flags after it.
func TestFlagsAnywhereEveryCommand(t *testing.T) {
	for _, name := range commandNames() {
		if name == "run" || name == "aggregate" || name == "plot" || name == "testbed" || name == "merge" {
			continue // TestRunFlagsAnywhere; aggregate takes a directory (and no flags); TestPlotFlagsAnywhere; testbed and merge take arguments
		}
		for _, tc := range []struct {
			pos  string
			args []string
		}{
			{"first", []string{"extra", "--timeout", "1s", "--root", "."}},
			{"between", []string{"--timeout", "1s", "extra", "--root", "."}},
			{"last", []string{"--timeout", "1s", "--root", ".", "extra"}},
			{"after --", []string{"--timeout", "1s", "--root", ".", "--", "extra"}},
		} {
			fs, _ := commands[name].flagSet(name)
			var args []string
			for i := 0; i < len(tc.args); i++ {
				a := tc.args[i]
				if strings.HasPrefix(a, "--") && a != "--" && fs.Lookup(a[2:]) == nil {
					i++ // a flag of another command
					continue
				}
				args = append(args, a)
			}
			pos, err := parseArgs(fs, args)
			if err != nil || !slices.Equal(pos, []string{"extra"}) {
				t.Fatalf("mpq %s %s: positional %v, error %v", name, strings.Join(args, " "), pos, err)
			}
			for _, f := range []string{"timeout", "root"} {
				if fl := fs.Lookup(f); fl != nil && fl.Value.String() == fl.DefValue {
					t.Fatalf("mpq %s %s: --%s not taken", name, strings.Join(args, " "), f)
				}
			}
			code, stdout, stderr := runCmd(t, append([]string{name}, args...)...)
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, `unexpected argument "extra"`) {
				t.Fatalf("mpq %s %s (%s): exit %d, stderr %q", name, strings.Join(args, " "), tc.pos, code, stderr)
			}
		}
	}
}

// TestHelpTextsMatchCommands: every command has a help text and every
// help text a command.
func TestHelpTextsMatchCommands(t *testing.T) {
	entries, err := os.ReadDir("help")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range entries {
		texts = append(texts, strings.TrimSuffix(e.Name(), ".txt"))
	}
	if !slices.Equal(texts, commandNames()) {
		t.Fatalf("help texts %v, commands %v", texts, commandNames())
	}
}

// TestHelpDefaultsReadable: no flag's help shows a sentinel as its
// default (issue 37: --from and --to printed "(default -1ns)").
func TestHelpDefaultsReadable(t *testing.T) {
	for _, name := range commandNames() {
		code, out, _ := runCmd(t, "help", name)
		if code != 0 {
			t.Fatalf("mpq help %s: exit %d", name, code)
		}
		for _, bad := range []string{"(default -", "(default )"} {
			if strings.Contains(out, bad) {
				t.Errorf("mpq help %s shows %q:\n%s", name, bad, out)
			}
		}
		// The flag package names a flag's argument after the first
		// `word` of its usage and prints the others with their
		// backticks; a string flag without one reads "-title string".
		_, flags, _ := strings.Cut(out, "\nflags:\n")
		for _, l := range strings.Split(flags, "\n") {
			if strings.Contains(l, "`") || strings.HasSuffix(l, " string") {
				t.Errorf("mpq help %s: %q: name the flag's argument with one `WORD` in its usage", name, strings.TrimSpace(l))
			}
		}
	}
}
