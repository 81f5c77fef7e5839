package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/network/linkemu"
)

// resultsDoc is the reference page of the result files.
const resultsDoc = "../docs/reference/results.md"

// TestEmulatorJSONDocumented: every field emulator.json has is explained
// in docs/reference/results.md (issue 14: write_errors was explained nowhere).
func TestEmulatorJSONDocumented(t *testing.T) {
	name := filepath.Join(t.TempDir(), "emulator.json")
	if err := linkemu.WriteStats(name, []linkemu.PathStats{{}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var paths []map[string]any
	if err := json.Unmarshal(b, &paths); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for k, v := range paths[0] {
		keys[k] = true
		if m, ok := v.(map[string]any); ok {
			for k := range m {
				keys[k] = true
			}
		}
	}
	doc, err := os.ReadFile(resultsDoc)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(doc), "`emulator.json`")
	if i < 0 {
		t.Fatal(resultsDoc + " does not describe emulator.json")
	}
	section := string(doc[i:])
	if len(keys) < 10 {
		t.Fatalf("only %d keys: %v", len(keys), keys)
	}
	for k := range keys {
		if !strings.Contains(section, "`"+k+"`") {
			t.Errorf("emulator.json field %q is not explained in %s", k, resultsDoc)
		}
	}
}
