package cli

import (
	"os"
	"path/filepath"
	"strings"
)

// removeStale removes what an earlier mpq, killed before it could clean
// up (kill -9, a power cut), left beside target: the temporary run
// directories ".NAME.tmp-*" of mpq run and the partial downloads
// ".NAME.mpq-get-*" of mpq get, kind being ".tmp-" or ".mpq-get-". It is
// called when the same target is written again: one mpq at a time
// writes a target (two would replace each other's result anyway).
// Errors are ignored: what cannot be removed stays, as before.
func removeStale(target, kind string) {
	dir, prefix := filepath.Dir(target), "."+filepath.Base(target)+kind
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), prefix) {
			os.RemoveAll(filepath.Join(dir, en.Name()))
		}
	}
}
