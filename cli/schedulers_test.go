package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/scheduler"
)

var updateReference = flag.Bool("update", false, "rewrite docs/reference/schedulers.md from the registered schedulers")

// schedulerReference is the generated reference of the schedulers.
var schedulerReference = filepath.Join("..", "docs", "reference", "schedulers.md")

// TestSchedulerReference: docs/reference/schedulers.md is what the
// registered schedulers' summaries and options (Option.Doc) generate, so
// that an option is documented in one place and the reference cannot
// drift from it. Rewrite it with -update.
func TestSchedulerReference(t *testing.T) {
	var b bytes.Buffer
	writeSchedulers(&b, true)
	if *updateReference {
		if err := os.MkdirAll(filepath.Dir(schedulerReference), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(schedulerReference, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(schedulerReference)
	if err != nil {
		t.Fatalf("%v (go test ./cli -run TestSchedulerReference -update writes it)", err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Fatalf("%s is not what the registered schedulers generate: go test ./cli -run TestSchedulerReference -update", schedulerReference)
	}
}

// TestHelpSchedulers: mpq help schedulers names every registered path and
// stream scheduler, marks the defaults and shows every option with its
// default and its Doc.
func TestHelpSchedulers(t *testing.T) {
	code, out, stderr := runCmd(t, "help", "schedulers")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, name := range scheduler.PathSchedulers() {
		if !strings.Contains(out, "\n"+name+"\n") && !strings.Contains(out, "\n"+name+" (default)\n") {
			t.Errorf("path scheduler %s missing", name)
		}
		for _, o := range scheduler.PathOptions(name) {
			if !strings.Contains(out, " "+o.Name+" = ") || !strings.Contains(flat, strings.Join(strings.Fields(o.Doc), " ")) {
				t.Errorf("%s's option %s or its doc missing", name, o.Name)
			}
		}
	}
	for _, name := range scheduler.StreamSchedulers() {
		if !strings.Contains(out, "\n"+name) {
			t.Errorf("stream scheduler %s missing", name)
		}
	}
	for _, d := range []string{scheduler.DefaultPath + " (default)", scheduler.DefaultStream + " (default)"} {
		if !strings.Contains(out, d) {
			t.Errorf("%q missing", d)
		}
	}
}
