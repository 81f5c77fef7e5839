package buildinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestFromSettings(t *testing.T) {
	var info Info
	fromSettings(&info, []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "1672e02bb6ea4e11e6d6701eefbecf8fc474c281"},
		{Key: "vcs.time", Value: "2026-11-22T18:54:00Z"},
		{Key: "vcs.modified", Value: "true"},
		{Key: "-pgo", Value: "/home/me/mpq/cmd/mpq/default.pgo"},
		{Key: "GOARCH", Value: "amd64"},
		{Key: "GOOS", Value: "linux"},
		{Key: "GOAMD64", Value: "v3"},
	})
	want := Info{Revision: "1672e02bb6ea4e11e6d6701eefbecf8fc474c281", RevisionTime: "2026-11-22T18:54:00Z", Dirty: true, RevisionFrom: "build",
		Arch: "linux/amd64 v3", PGO: "default.pgo"}
	if info != want {
		t.Fatalf("got %+v, want %+v", info, want)
	}
	info.Version, info.GoVersion = "(devel)", "go1.26.8"
	if s := info.String(); s != "mpq (devel) 1672e02bb6ea+dirty go1.26.8" {
		t.Fatalf("String() = %q", s)
	}
}

// TestReadInCheckout runs inside the source tree (go test's working
// directory is the package's): without a VCS stamp the revision comes from
// git, and it is the checkout's HEAD.
func TestReadInCheckout(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	info := Read()
	if info.Module != ModulePath || info.GoVersion == "" {
		t.Fatalf("info %+v", info)
	}
	if info.Revision != strings.TrimSpace(string(head)) {
		t.Fatalf("revision %q, HEAD %q", info.Revision, head)
	}
	if info.RevisionFrom == "" {
		t.Fatalf("revision without a source: %+v", info)
	}
}

func TestOutsideCheckout(t *testing.T) {
	t.Chdir(t.TempDir())
	if d := checkout(); d != "" {
		t.Fatalf("checkout() = %q outside the source tree", d)
	}
}

// TestBinarySHA256: the running executable's hash tells builds apart
// where the revision cannot (two builds of one dirty checkout, builds
// without a VCS stamp).
func TestBinarySHA256(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Skip(err)
	}
	sum := sha256.Sum256(b)
	info := Read()
	if info.BinarySHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("binary_sha256 %q, want the executable's %x", info.BinarySHA256, sum)
	}
	if s := info.String(); !strings.HasSuffix(s, " binary "+info.BinarySHA256[:12]) {
		t.Fatalf("String() = %q", s)
	}
}

// TestCachedSHA256: the first hash of a file is written to the cache,
// the next read from it (a planted entry proves it), and a file changed
// in size or modification time is hashed again; an unwritable cache
// only costs the hashing.
func TestCachedSHA256(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	path := filepath.Join(dir, "bin")
	if err := os.WriteFile(path, []byte("abc"), 0o755); err != nil {
		t.Fatal(err)
	}
	// SHA-256("abc"), FIPS 180-2's example.
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := cachedSHA256(path, cache); got != abc {
		t.Fatalf("first hash %q, want %q", got, abc)
	}
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache after one hash: %v, %v", entries, err)
	}
	planted := strings.Repeat("0", 64)
	if err := os.WriteFile(filepath.Join(cache, entries[0].Name()), []byte(planted+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := cachedSHA256(path, cache); got != planted {
		t.Fatalf("second hash %q, want the cached %q", got, planted)
	}
	// The same size, another modification time: hashed again.
	if err := os.WriteFile(path, []byte("abd"), 0o755); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("abd"))
	if got := cachedSHA256(path, cache); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("hash after a change %q, want %x", got, sum)
	}
	// A cache entry that is not a hash is not believed.
	entries, _ = os.ReadDir(cache)
	for _, e := range entries {
		os.WriteFile(filepath.Join(cache, e.Name()), []byte("garbage\n"), 0o644)
	}
	if got := cachedSHA256(path, cache); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("hash over a garbled entry %q", got)
	}
	// A cache directory that cannot be made (a file in its way).
	if got := cachedSHA256(path, filepath.Join(path, "cache")); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("hash with an unusable cache %q", got)
	}
}

// TestPruneCache: beyond its bound the cache keeps its newest entries.
func TestPruneCache(t *testing.T) {
	dir := t.TempDir()
	base := time.Now()
	for i := range 5 {
		p := filepath.Join(dir, fmt.Sprintf("e%d", i))
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	pruneCache(dir, 3)
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "e2 e3 e4" {
		t.Fatalf("kept %v, want the three newest e2 e3 e4", names)
	}
}
