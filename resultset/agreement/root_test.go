package agreement

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mpq/mpq/resultset"
)

// agreementDuration is each run's length: three runs of 60 s pool 1800
// priority messages, enough for a pooled p99 with a bounded interval
// (MinPooledP99), and take about three and a half minutes on the
// forwarder. Fewer would make the check flaky: the forwarder measured 13
// of 1800 messages above 180 ms (the simulator 7), three of them the
// third message of each run; the pooled p99 crosses into them, beyond the
// bound, when more than 1 % of the messages are there, which a Poisson
// count of that rate gives about one run in 20 at 60 s and one in 4 at
// 40 s (docs/results/validation.md, "The p99: one message or the tail").
const agreementDuration = "60s"

// runPoint runs experiments/validation-lowrate.toml with mpq and args,
// three repetitions of agreementDuration, and returns what it measured.
func runPoint(t *testing.T, mpq string, args ...string) Point {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args = append([]string{"run", "../../experiments/validation-lowrate.toml", "--repeat", "3", "--set", "duration=" + agreementDuration, "--out", out}, args...)
	b, err := exec.CommandContext(ctx, mpq, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mpq %v: %v\n%s", args, err, b)
	}
	root := filepath.Join(out, "validation-lowrate")
	dirs, err := resultset.FindRuns(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range dirs {
		dirs[i] = filepath.Join(root, dirs[i])
	}
	p, err := FromRuns(dirs, "priority", "background")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The simulator and the namespace forwarder agree on issue 18's
// low-rate experiment (2 Mbit/s paths, cwr, a priority message every
// 100 ms beside bulk), three repetitions of 60 s each: the mean p50
// within 10 % + 2 ms and the mean goodput within 10 % (the issue's
// acceptance), and the p99 of the 1800 messages pooled over the runs
// within 25 % + 5 ms. The mean of the runs' own p99s is logged and not
// checked (each is a run's few largest messages). Real time (about four
// minutes) on a machine that should be quiet: opt-in with
// MPQ_AGREEMENT_TEST=1, root.
func TestAgreementForwarder(t *testing.T) {
	if os.Getenv("MPQ_AGREEMENT_TEST") != "1" {
		t.Skip("runs the simulator and the namespace forwarder for a minute in real time: set MPQ_AGREEMENT_TEST=1 (and run as root) to run it")
	}
	if os.Geteuid() != 0 {
		t.Fatal("MPQ_AGREEMENT_TEST=1 needs root (network namespaces)")
	}
	mpq := filepath.Join(t.TempDir(), "mpq")
	if b, err := exec.Command("go", "build", "-o", mpq, "../../cmd/mpq").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	sim := runPoint(t, mpq)
	fw := runPoint(t, mpq, "--backend", "netns", "--emulator", "forwarder")
	for _, e := range []struct {
		name string
		p    Point
	}{{"simulator", sim}, {"forwarder", fw}} {
		t.Logf("%s: p50 %.1f ms, p99 %.1f ms (mean of the runs'), goodput %.2f Mbit/s (%d runs); pooled p99 %.1f ms [%.1f, %.1f] of %d messages",
			e.name, e.p.P50MS, e.p.P99MS, e.p.GoodputMbps, e.p.Runs, e.p.PooledP99MS, e.p.PooledP99CI[0], e.p.PooledP99CI[1], e.p.PooledN)
	}
	for _, f := range Default.Check(sim, fw, P99) {
		t.Log("(not checked) " + f)
	}
	for _, f := range Default.Check(sim, fw, P50|Goodput|PooledP99) {
		t.Error(f)
	}
}
