package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.csv")
	if err := Write(name, func(w io.Writer) error { _, err := io.WriteString(w, "a,b\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(name); err != nil || string(b) != "a,b\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	// A failing writer leaves the old file and no temporary file.
	boom := errors.New("boom")
	err := Write(name, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if b, _ := os.ReadFile(name); string(b) != "a,b\n" {
		t.Fatalf("old content replaced by %q", b)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("directory holds %d entries, want only out.csv", len(es))
	}
}
