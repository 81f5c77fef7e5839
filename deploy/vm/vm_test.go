package vm

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/resultset/agreement"
)

// needVM skips the test unless MPQ_VM_TEST=1 (CI sets it: a boot takes
// a minute or two of both cores, too much for every go test ./... on a
// shared machine) and the tools the script needs are installed; with
// MPQ_VM_TEST=1 a missing tool is a failure, not a skip.
func needVM(t *testing.T) {
	t.Helper()
	if os.Getenv("MPQ_VM_TEST") != "1" {
		t.Skip("boots a QEMU virtual machine for a minute or two: set MPQ_VM_TEST=1 to run it (CI does)")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	for _, tool := range []string{"qemu-system-x86_64", "busybox", "apt-get", "ip", "tc", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("MPQ_VM_TEST=1 but %s is not installed (Debian: apt-get install qemu-system-x86 busybox-static iproute2)", tool)
		}
	}
}

// runVM runs deploy/vm/run on testdata/small.toml with emulator and
// returns the run's directory.
func runVM(t *testing.T, emulator string) string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command("./run", "testdata/small.toml", out, "--emulator", emulator)
	cmd.Env = append(os.Environ(), "MPQ_VM_TIMEOUT=300")
	start := time.Now()
	b, err := cmd.CombinedOutput()
	t.Logf("deploy/vm/run (%v):\n%s", time.Since(start).Round(time.Second), b)
	if err != nil {
		if c, rerr := os.ReadFile(filepath.Join(out, "vm-console.log")); rerr == nil {
			t.Logf("console:\n%s", c)
		}
		t.Fatalf("deploy/vm/run: %v", err)
	}
	runs, _ := filepath.Glob(filepath.Join(out, "vm-small", "*", "summary.json"))
	if len(runs) != 1 {
		t.Fatalf("%d runs in %s, want 1", len(runs), out)
	}
	return filepath.Dir(runs[0])
}

// The VM boots, builds a netem testbed (the kernel's netem, not the
// forwarder) and runs the experiment, and its results come back: the
// priority messages were delivered, the netem qdiscs (with the paths'
// rate) carried the experiment's packets and dropped some on the lossy
// path.
func TestVMNetem(t *testing.T) {
	needVM(t)
	dir := runVM(t, "netem")
	var sum struct {
		Backend string `json:"backend"`
		Sources []struct {
			Name      string `json:"name"`
			Messages  int    `json:"messages"`
			Completed int    `json:"completed"`
		} `json:"sources"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Backend != "netns" {
		t.Errorf("backend %q, want netns", sum.Backend)
	}
	for _, s := range sum.Sources {
		// 30 fall due in 3 s at 100 ms; the source starts when the
		// connection is ready, which the VM's emulated CPU delays by up
		// to a second (19 messages seen).
		if s.Name == "priority" && (s.Messages < 10 || s.Completed < s.Messages*9/10) {
			t.Errorf("priority: %d of %d messages completed", s.Completed, s.Messages)
		}
	}
	log, err := os.ReadFile(filepath.Join(dir, "testbed.log"))
	if err != nil {
		t.Fatal(err)
	}
	l := string(log)
	if !strings.Contains(l, ": netem mode,") || strings.Contains(l, "testbed forward") {
		t.Errorf("the testbed was not in netem mode:\n%s", l)
	}
	// Each end's netem on each path, at the path's rate, carried
	// packets; on path 0 (1 % loss) they dropped some.
	sent := regexp.MustCompile(`qdisc (netem) \S+ dev (p\d) .* rate 2Mbit.*\n Sent (\d+) bytes (\d+) pkt \(dropped (\d+)`)
	found := map[string]bool{}
	lost := 0
	for _, m := range sent.FindAllStringSubmatch(l, -1) {
		if m[3] != "0" {
			found[m[1]+" "+m[2]] = true
		}
		if m[1] == "netem" && m[2] == "p0" && m[5] != "0" {
			lost++
		}
	}
	// About 7 of the 700-odd packets each way; none lost has a
	// probability below 1e-3 (netem's draws are the kernel's, not seeded).
	if lost == 0 {
		t.Errorf("netem lost nothing on path 0 (1 %% loss):\n%s", l)
	}
	for _, want := range []string{"netem p0", "netem p1"} {
		if !found[want] {
			t.Errorf("no %s qdisc that carried packets in testbed.log:\n%s", want, l)
		}
	}
	vm, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(dir)), "vm.txt"))
	if err != nil || !strings.Contains(string(vm), "kernel package: linux-image-") {
		t.Errorf("vm.txt: %s %v", vm, err)
	}
}

// issue 18's acceptance, in CI: the low-rate validation experiment (two
// paths of 2 Mbit/s, 20 and 40 ms one way, 0.5 % loss on the first; cwr;
// a 2 kB priority message every 100 ms beside bulk) on netem in the VM,
// three repetitions of 60 s, agrees with the simulator within issue 18's
// bounds on the mean p50 of the priority messages (10 % + 2 ms) and the
// mean background goodput (10 %). The simulator's side is the mean over
// 30 seeds: a run's p50 moves with where its losses fall, by a standard
// deviation of 7.1 ms over 30 seeds of 20 s runs and 3.0 ms of 60 s runs
// (docs/results/validation.md, "Validation on real kernels"), so the three 20 s runs
// this test compared before put the mean of three 4.1 ms either way of
// its own, and (if netem's runs spread as the simulator's) the two
// sides' difference past the 8.5 ms bound about one time in seven on
// noise alone: it failed so once, netem 55.4 against the simulator's
// first three seeds' 64.9 ms, where 30 seeds give 60.8. With
// 3 x 60 s against 30 x 60 s the difference's standard deviation from
// the seeds is about 1.8 ms against a bound of about 8 ms.
// The pooled p99 is logged, not checked: netem draws its own losses,
// and the p99 sits on the edge of the messages that waited for a
// retransmission (docs/results/validation.md, "The p99: one message or the tail").
// The emulated CPU keeps up at this rate, not at 10 Mbit/s a path
// (docs/results/validation.md, "Validation on real kernels").
func TestVMAgreementLowRate(t *testing.T) {
	needVM(t)
	const file = "../../experiments/validation-lowrate.toml"
	const netemRuns, simRuns = 3, 30
	flags := func(runs int) []string {
		return []string{"--repeat", fmt.Sprint(runs), "--set", "duration=60s"}
	}
	out := t.TempDir()
	args := append([]string{file, filepath.Join(out, "netem"), "--emulator", "netem"}, flags(netemRuns)...)
	cmd := exec.Command("./run", args...)
	cmd.Env = append(os.Environ(), "MPQ_VM_TIMEOUT=600")
	start := time.Now()
	b, err := cmd.CombinedOutput()
	t.Logf("deploy/vm/run (%v):\n%s", time.Since(start).Round(time.Second), b)
	if err != nil {
		t.Fatalf("deploy/vm/run: %v", err)
	}
	mpq := filepath.Join(out, "mpq")
	if b, err := exec.Command("go", "build", "-o", mpq, "../../cmd/mpq").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	simArgs := append([]string{"run", file, "--out", filepath.Join(out, "sim")}, flags(simRuns)...)
	if b, err := exec.Command(mpq, simArgs...).CombinedOutput(); err != nil {
		t.Fatalf("mpq %v: %v\n%s", simArgs, err, b)
	}
	point := func(kind string) agreement.Point {
		root := filepath.Join(out, kind, "validation-lowrate")
		dirs, err := resultset.FindRuns(root)
		if err != nil {
			t.Fatal(err)
		}
		for i := range dirs {
			dirs[i] = filepath.Join(root, dirs[i])
		}
		p, err := agreement.FromRuns(dirs, "priority", "background")
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		t.Logf("%s: p50 %.1f ms, goodput %.3f Mbit/s (%d runs); pooled p99 %.1f ms [%.1f, %.1f] of %d messages",
			kind, p.P50MS, p.GoodputMbps, p.Runs, p.PooledP99MS, p.PooledP99CI[0], p.PooledP99CI[1], p.PooledN)
		return p
	}
	sim, netem := point("sim"), point("netem")
	if netem.Runs != netemRuns || sim.Runs != simRuns {
		t.Fatalf("runs: netem %d, simulator %d; want %d and %d", netem.Runs, sim.Runs, netemRuns, simRuns)
	}
	for _, f := range agreement.Default.Check(sim, netem, agreement.PooledP99) {
		t.Log("(not checked) " + f)
	}
	for _, f := range agreement.Default.Check(sim, netem, agreement.P50|agreement.Goodput) {
		t.Error(f)
	}
}

// TestRehearseRefusesBadSettings: deploy/vm/rehearse checks its
// environment before it needs root or any tool, and exits 2 naming the
// setting (the machines' niceness among them).
func TestRehearseRefusesBadSettings(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, tc := range []struct{ env, want string }{
		{"MPQ_REHEARSE_NICE=x", "MPQ_REHEARSE_NICE=x: want a niceness from -20 to 19"},
		{"MPQ_REHEARSE_NICE=-21", "MPQ_REHEARSE_NICE=-21: want a niceness"},
		{"MPQ_REHEARSE_NICE=20", "MPQ_REHEARSE_NICE=20: want a niceness"},
		{"MPQ_REHEARSE_REPEAT=two", "MPQ_REHEARSE_REPEAT=two: want a whole number"},
		{"MPQ_REHEARSE_DURATION=1h", "MPQ_REHEARSE_DURATION=1h: want a duration"},
	} {
		cmd := exec.Command(bash, "rehearse", filepath.Join(t.TempDir(), "out"))
		// No tools on the PATH: should a check let the setting through,
		// the script stops at its root and tool checks instead of
		// building disks and booting machines.
		cmd.Env = append(os.Environ(), "PATH=/nonexistent", tc.env)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: exit %d (%v), want 2 with %q:\n%s", tc.env, code, err, tc.want, out)
		}
	}
}
