package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// userModule is a module of a user's own, as docs/guides/schedulers.md ("An mpq
// with your scheduler") describes it: a scheduler package registering
// "first-fit", and a main that calls Main with one blank import of it.
var userModule = map[string]string{
	"go.mod": "module example.com/mysched\n\ngo 1.26\n\nrequire github.com/mpq/mpq v0.0.0\n\nreplace github.com/mpq/mpq => CHECKOUT\n",
	"firstfit/firstfit.go": `// Package firstfit registers the path scheduler "first-fit".
package firstfit

import (
	"time"

	"github.com/mpq/mpq/scheduler"
)

type firstFit struct{ cand []int }

func (*firstFit) Name() string { return "first-fit" }

func (f *firstFit) Select(_ time.Time, paths []scheduler.PathInfo, w scheduler.Work, dst []uint64) []uint64 {
	f.cand = scheduler.Candidates(paths, f.cand)
	for _, i := range f.cand {
		if paths[i].CanSend(w.Size) {
			return append(dst, paths[i].ID)
		}
	}
	return dst
}

func init() {
	scheduler.RegisterPath("first-fit", func() scheduler.PathScheduler { return &firstFit{} })
}
`,
	"main.go": `// Command mpq is mpq with the first-fit scheduler.
package main

import (
	"os"

	"github.com/mpq/mpq/cli"

	_ "example.com/mysched/firstfit" // registers "first-fit"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
`,
	"first-fit.toml": `name = "user"
duration = "2s"
[[path]]
rtt = "20ms"
[[path]]
rtt = "40ms"
[transport]
path_scheduler = "first-fit"
[[source]]
kind = "bulk"
`,
}

// TestUserMain builds a user's module whose main calls Main and imports a
// scheduler package of its own, with a replace directive pointing to this
// checkout (offline: the module cache holds mpq's dependencies and this
// checkout's go.sum their hashes), and runs an experiment file that
// selects the user's scheduler with it; this mpq without the import must
// refuse the name.
func TestUserMain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	checkout, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, text := range userModule {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "CHECKOUT", checkout)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "mpq")
	build := exec.Command("go", "build", "-mod=mod", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the user's module: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	run := exec.Command(bin, "run", filepath.Join(dir, "first-fit.toml"), "--out", out)
	stdout, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the user's mpq run: %v\n%s", err, stdout)
	}
	if !strings.Contains(string(stdout), "first-fit/round-robin") {
		t.Errorf("the user's mpq run printed\n%s\nwithout the scheduler first-fit", stdout)
	}
	b, err := os.ReadFile(filepath.Join(out, "user", "run", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		PathScheduler string `json:"path_scheduler"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.PathScheduler != "first-fit" {
		t.Errorf("summary.json: path_scheduler %q (%v), want first-fit", s.PathScheduler, err)
	}
	// Without the import the name is unknown: a usage error.
	if code, _, stderr := runCmd(t, "run", filepath.Join(dir, "first-fit.toml"), "--out", t.TempDir()); code != exitUsage || !strings.Contains(stderr, `unknown path scheduler "first-fit"`) {
		t.Errorf("this mpq: exit %d, stderr %q; want %d and an unknown scheduler", code, stderr, exitUsage)
	}
}
