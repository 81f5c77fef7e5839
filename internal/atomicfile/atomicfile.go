// Package atomicfile writes result files so that a reader never sees one
// half-written: the content goes to a temporary name in the same directory,
// which is renamed over the final name only once it is complete.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write calls write with a buffered writer on a temporary file next to
// name, then renames the file to name (mode 0644). On any error the
// temporary file is removed and name is left as it was.
func Write(name string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-")
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(tmp)
	if err := write(bw); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := errors.Join(bw.Flush(), tmp.Chmod(0o644), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
