// Package buildinfo says which mpq produced a result: the module version,
// the VCS revision with its dirty flag, and the Go toolchain. Results
// record it (provenance) and `mpq --version` prints it.
package buildinfo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mpq/mpq/internal/atomicfile"
)

// ModulePath is mpq's module path.
const ModulePath = "github.com/mpq/mpq"

// Info describes the running binary.
type Info struct {
	// Module is the main module's path and Version its version:
	// "(devel)" for a build from a checkout, a pseudo-version or tag for
	// `go install module@version`.
	Module  string `json:"module"`
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from ("" when
	// unknown), RevisionTime its commit time, and Dirty reports
	// uncommitted changes to tracked files at build time.
	Revision     string `json:"vcs_revision"`
	RevisionTime string `json:"vcs_time,omitempty"`
	Dirty        bool   `json:"vcs_dirty"`
	// RevisionFrom says where Revision comes from: "build" (stamped by the
	// go command), "git" (read from the checkout the binary runs in,
	// because the build carried no VCS stamp, as with `go run`, `go test`
	// or -buildvcs=false), or "" when unknown.
	RevisionFrom string `json:"vcs_source,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go_version"`
	// BinarySHA256 is the SHA-256 (hex) of the running executable ("" if
	// it cannot be read): it tells builds apart where the revision does
	// not (two builds of one dirty checkout, builds without a VCS stamp,
	// a binary older than the checkout it runs in).
	BinarySHA256 string `json:"binary_sha256,omitempty"`
	// Arch is the target the binary was built for, GOOS/GOARCH and the
	// architecture level where the go command records one ("linux/amd64
	// v1"); PGO is the name of the profile of a profile-guided build
	// ("default.pgo", "" without). Both decide which instructions the
	// compiler may use (fused multiply-adds among them), so they belong
	// with the results.
	Arch string `json:"arch,omitempty"`
	PGO  string `json:"pgo,omitempty"`
}

var (
	once   sync.Once
	cached Info
)

// Read returns the running binary's Info; it is computed once.
func Read() Info {
	once.Do(func() { cached = read() })
	return cached
}

func read() Info {
	info := Info{Module: ModulePath, Version: "(devel)", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if bi.Main.Path != "" {
			info.Module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			info.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		fromSettings(&info, bi.Settings)
	}
	if info.Revision == "" {
		if dir := checkout(); dir != "" {
			fromGit(&info, dir)
		}
	}
	info.BinarySHA256 = executableSHA256()
	return info
}

// executableSHA256 hashes the running executable; "" when it cannot be
// read. The hash is kept under the user's cache directory
// (cachedSHA256): hashing a 24 MB binary takes some 20 ms of CPU, a few
// per cent of a short simulation's process.
func executableSHA256() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = ""
	} else {
		dir = filepath.Join(dir, "mpq", "binary-sha256")
	}
	return cachedSHA256(exe, dir)
}

// cachedSHA256 is the SHA-256 (hex) of the file at path, "" when it
// cannot be read. With cacheDir set it is read from there if a file of
// the same device, inode, size and modification time (to the
// nanosecond) was hashed before, and written there (under a temporary
// name, then renamed) after hashing; a cache that cannot be read or
// written only costs the hashing.
func cachedSHA256(path, cacheDir string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	var entry string
	if key := fileKey(fi); cacheDir != "" && key != "" {
		entry = filepath.Join(cacheDir, key)
		if b, err := os.ReadFile(entry); err == nil {
			if sum := strings.TrimSpace(string(b)); isSHA256Hex(sum) {
				return sum
			}
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if entry != "" && os.MkdirAll(cacheDir, 0o755) == nil {
		atomicfile.Write(entry, func(w io.Writer) error {
			_, err := io.WriteString(w, sum+"\n")
			return err
		})
		pruneCache(cacheDir, maxCacheEntries)
	}
	return sum
}

// maxCacheEntries bounds the hash cache: every build of mpq, and every
// test binary that reads the build information, adds an entry.
const maxCacheEntries = 64

// pruneCache removes the least recently written entries of dir beyond
// keep.
func pruneCache(dir string, keep int) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) <= keep {
		return
	}
	type aged struct {
		name string
		mod  time.Time
	}
	var all []aged
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			all = append(all, aged{e.Name(), fi.ModTime()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod.After(all[j].mod) })
	for _, a := range all[min(keep, len(all)):] {
		os.Remove(filepath.Join(dir, a.name))
	}
}

// isSHA256Hex says whether s is a SHA-256 in lower-case hex.
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// fromSettings takes the VCS stamp, the target and the PGO profile of
// the go command's build settings.
func fromSettings(info *Info, settings []debug.BuildSetting) {
	var goos, goarch, level string
	for _, s := range settings {
		switch s.Key {
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		case "GOAMD64", "GOARM64", "GOARM", "GO386", "GOPPC64", "GORISCV64", "GOMIPS", "GOMIPS64", "GOWASM":
			level = s.Value
		case "-pgo":
			info.PGO = filepath.Base(s.Value)
		case "vcs.revision":
			info.Revision = s.Value
			info.RevisionFrom = "build"
		case "vcs.time":
			info.RevisionTime = s.Value
		case "vcs.modified":
			info.Dirty = s.Value == "true"
		}
	}
	if goarch != "" {
		info.Arch = strings.TrimSpace(goos + "/" + goarch + " " + level)
	}
}

// checkout returns the root of the mpq source tree that contains the
// working directory, or "" when there is none (the binary runs elsewhere).
func checkout() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// isModuleRoot reports whether the go.mod at p declares mpq's module.
func isModuleRoot(p string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" {
			return f[1] == ModulePath
		}
	}
	return false
}

// fromGit reads the revision, its time and the dirty flag from the git
// checkout at dir; it leaves info alone when git is missing or fails.
func fromGit(info *Info, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	git := func(args ...string) (string, bool) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err == nil
	}
	rev, ok := git("rev-parse", "HEAD")
	if !ok || rev == "" {
		return
	}
	info.Revision = rev
	info.RevisionFrom = "git"
	if t, ok := git("show", "-s", "--format=%cI", "HEAD"); ok {
		if ts, err := time.Parse(time.RFC3339, t); err == nil {
			info.RevisionTime = ts.UTC().Format(time.RFC3339)
		}
	}
	if st, ok := git("status", "--porcelain", "--untracked-files=no"); ok {
		info.Dirty = st != ""
	}
}

// String is a one-line description, e.g.
// "mpq (devel) 1672e02bb6ea+dirty (git) go1.26.8".
func (i Info) String() string {
	var b strings.Builder
	b.WriteString("mpq ")
	b.WriteString(i.Version)
	rev := i.Revision
	if rev == "" {
		rev = "unknown-revision"
	} else if len(rev) > 12 {
		rev = rev[:12]
	}
	b.WriteString(" ")
	b.WriteString(rev)
	if i.Dirty {
		b.WriteString("+dirty")
	}
	if i.RevisionFrom == "git" {
		b.WriteString(" (from the checkout)")
	}
	b.WriteString(" ")
	b.WriteString(i.GoVersion)
	if i.BinarySHA256 != "" {
		b.WriteString(" binary ")
		b.WriteString(i.BinarySHA256[:min(12, len(i.BinarySHA256))])
	}
	return b.String()
}
