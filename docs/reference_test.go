package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/plots"
	"github.com/mpq/mpq/runner" // registers the netns and hosts backends
	"github.com/mpq/mpq/scheduler"
)

var _ = runner.BackendHosts

// readDoc returns a page of docs/, relative to this directory.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tableMethods are the methods of package experiment's table type that
// read a key of an experiment file, its name their first argument.
var tableMethods = map[string]bool{
	"str": true, "name": true, "boolean": true, "integer": true, "duration": true,
	"size": true, "rate": true, "fraction": true, "figures": true, "sub": true,
	"array": true, "get": true, "read": true,
}

// experimentKeys returns the keys package experiment reads from an
// experiment file: the string literals its loader passes as the key to
// the table's readers (t.str("kind", …), t.sub("transport"), …).
func experimentKeys(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(root, "experiment")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	keys := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var name string
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			case *ast.Ident:
				name = fn.Name
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !tableMethods[name] || !ok || lit.Kind != token.STRING {
				return true
			}
			if k, err := strconv.Unquote(lit.Value); err == nil && k != "" {
				keys[k] = true
			}
			return true
		})
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	slices.Sort(out)
	if len(out) < 60 {
		t.Fatalf("found only %d keys in package experiment: %v", len(out), out)
	}
	return out
}

// TestReferenceComplete: the reference names every path and stream
// scheduler, congestion controller, transport kind, backend, plot kind
// and experiment-file key the code registers or reads, each as code
// (`name`), so that a new one cannot go undocumented. Scheduler options
// are documented by `mpq help schedulers`, not here.
func TestReferenceComplete(t *testing.T) {
	file := readDoc(t, "reference/experiment-file.md")
	cli := readDoc(t, "reference/cli.md")
	for _, c := range []struct {
		what, page, text string
		names            []string
		words            bool // a name may be a word of a code span
	}{
		{"path scheduler", "reference/experiment-file.md", file, scheduler.PathSchedulers(), false},
		{"stream scheduler", "reference/experiment-file.md", file, scheduler.StreamSchedulers(), false},
		{"congestion controller", "reference/experiment-file.md", file, congestion.Names(), false},
		{"transport kind", "reference/experiment-file.md", file, experiment.TransportKinds(), false},
		{"backend", "reference/experiment-file.md", file, experiment.Backends(), false},
		{"experiment-file key", "reference/experiment-file.md", file, experimentKeys(t), true},
		{"plot kind", "reference/cli.md", cli, plots.Kinds, false},
	} {
		if len(c.names) == 0 {
			t.Errorf("no %s registered", c.what)
		}
		for _, n := range missing(c.text, c.names, c.words) {
			t.Errorf("docs/%s does not name the %s %q (as `%s`)", c.page, c.what, n, n)
		}
	}
}
