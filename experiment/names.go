package experiment

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/mpq/mpq/internal/names"
)

// Names an experiment file can use are checked when it loads, against the
// registries of the packages that implement them: path and stream
// schedulers (package scheduler), congestion controllers (package
// congestion), backends (below) and source kinds. A misspelt name is
// reported with the file's line like any other error, not run by run.

var (
	backendsMu sync.RWMutex
	// backends are the backends runs can use.
	backends = map[string]bool{BackendSim: true, BackendLoopback: true}
	// plannedBackends are backend names that will exist but cannot run
	// yet, with the reason shown when a file asks for one.
	plannedBackends = map[string]string{
		BackendNetns: "not available yet (network namespaces with netem are being added, issue 13)",
	}
)

// RegisterBackend makes name a backend experiment files may ask for; the
// package that runs it (runner) registers it. sim and loopback
// are always registered.
func RegisterBackend(name string) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	backends[name] = true
}

// Backends lists the backends runs can use, sorted.
func Backends() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	out := make([]string, 0, len(backends))
	for n := range backends {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// checkBackend returns the problem with a backend name, or "".
func checkBackend(name string) string {
	backendsMu.RLock()
	ok := backends[name]
	why := plannedBackends[name]
	backendsMu.RUnlock()
	switch {
	case ok:
		return ""
	case why != "":
		return fmt.Sprintf("backend %q is %s; use %s", name, why, strings.Join(Backends(), " or "))
	}
	return names.Unknown("backend", name, Backends())
}

// sourceKinds lists the source kinds in the order the docs give them.
var sourceKinds = []string{KindPeriodic, KindBulk, KindRequestResponse, KindFile, KindFrames, KindStopAndWait}

var (
	figuresMu sync.RWMutex
	// figureKinds and figureFormats are what output.figures may name;
	// oneRunKinds the kinds that draw one run only.
	figureKinds, figureFormats, oneRunKinds []string
)

// RegisterOneRunFigures names the figure kinds that draw one run: an
// output.figures entry of one is refused at load when the file has more
// than one run, not after they ran.
func RegisterOneRunFigures(kinds []string) {
	figuresMu.Lock()
	defer figuresMu.Unlock()
	oneRunKinds = slices.Clone(kinds)
}

// oneRunFigure reports whether a figure file draws one run only.
func oneRunFigure(name string) bool {
	figuresMu.RLock()
	defer figuresMu.RUnlock()
	return slices.Contains(oneRunKinds, strings.TrimSuffix(name, filepath.Ext(name)))
}

// RegisterFigures sets the figure kinds and file formats (extensions
// without the dot) output.figures may name; the package that draws them
// (plots) registers them. Without a registration, as in a program that
// does not draw figures, an entry is only checked to be a file name.
func RegisterFigures(kinds, formats []string) {
	figuresMu.Lock()
	defer figuresMu.Unlock()
	figureKinds, figureFormats = slices.Clone(kinds), slices.Clone(formats)
}

// checkFigure returns the problem with an output.figures entry, or "".
func checkFigure(name string) string {
	figuresMu.RLock()
	kinds, formats := figureKinds, figureFormats
	figuresMu.RUnlock()
	if name != filepath.Base(name) || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return fmt.Sprintf("%q: want a file name in the sweep's directory, such as ratio.pdf", name)
	}
	ext := filepath.Ext(name)
	if len(kinds) == 0 {
		return "" // a program that draws none (only the name is checked)
	}
	if p := names.Check("figure format", strings.ToLower(strings.TrimPrefix(ext, ".")), formats); p != "" {
		return fmt.Sprintf("%q: %s", name, p)
	}
	if p := names.Check("figure kind", strings.TrimSuffix(name, ext), kinds); p != "" {
		return fmt.Sprintf("%q: %s", name, p)
	}
	return ""
}
