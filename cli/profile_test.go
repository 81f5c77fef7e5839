package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// MPQ_CPUPROFILE and MPQ_MEMPROFILE write their profiles when the command
// ends; a profile that cannot be written is reported, not fatal; unset,
// nothing is written.
func TestProfilesFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	t.Setenv(envCPUProfile, cpu)
	t.Setenv(envMemProfile, mem)
	var stderr bytes.Buffer
	stop := startProfiles(&stderr)
	x := 0
	for i := range 1_000_000 {
		x += i
	}
	stop()
	for _, f := range []string{cpu, mem} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	t.Setenv(envCPUProfile, filepath.Join(dir, "missing", "cpu.prof"))
	t.Setenv(envMemProfile, "")
	stderr.Reset()
	startProfiles(&stderr)()
	if !bytes.Contains(stderr.Bytes(), []byte(envCPUProfile)) {
		t.Errorf("unwritable profile not reported: %q", stderr.String())
	}
	t.Setenv(envCPUProfile, "")
	stderr.Reset()
	startProfiles(&stderr)()
	if stderr.Len() != 0 {
		t.Errorf("unset: stderr %q", stderr.String())
	}
}
