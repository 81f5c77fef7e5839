package buildinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
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
