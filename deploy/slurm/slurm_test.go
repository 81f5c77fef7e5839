package slurm

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestJobArrayMergesToUnshardedRun runs run-local.sh: docs/guides/sweeps.md's Slurm
// recipe on a one-node cluster, the merged shards compared with the
// unsharded run. Exit status 77 is the script's skip.
func TestJobArrayMergesToUnshardedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Slurm cluster and runs a sweep")
	}
	cmd := exec.Command("./run-local.sh")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 77 {
		reason := strings.TrimSpace(string(out))
		if os.Getenv("MPQ_REQUIRE_SLURM") != "" {
			t.Fatalf("MPQ_REQUIRE_SLURM is set but the script skipped: %s", reason)
		}
		t.Skip(reason)
	}
	if err != nil {
		t.Fatalf("run-local.sh: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "OK: the 4 shards merged by mpq aggregate equal the unsharded run") {
		t.Fatalf("run-local.sh exited 0 without its OK line:\n%s", out)
	}
	t.Logf("%s", out)
}
