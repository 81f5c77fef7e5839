package vm

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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

// runVM runs testbed/vm/run on testdata/small.toml with emulator and
// returns the run's directory.
func runVM(t *testing.T, emulator string) string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command("./run", "testdata/small.toml", out, "--emulator", emulator)
	cmd.Env = append(os.Environ(), "MPQ_VM_TIMEOUT=300")
	start := time.Now()
	b, err := cmd.CombinedOutput()
	t.Logf("testbed/vm/run (%v):\n%s", time.Since(start).Round(time.Second), b)
	if err != nil {
		if c, rerr := os.ReadFile(filepath.Join(out, "vm-console.log")); rerr == nil {
			t.Logf("console:\n%s", c)
		}
		t.Fatalf("testbed/vm/run: %v", err)
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
