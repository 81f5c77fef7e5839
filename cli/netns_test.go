package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/schedlag"
	"github.com/mpq/mpq/network/netns"
)

// The test binary is mpq for the processes the netns backend starts (both
// ends, the forwarder) and for the tests that run mpq as a process: with
// MPQ_TEST_AS_MPQ=1 it runs mpq's main.
func TestMain(m *testing.M) {
	if os.Getenv("MPQ_TEST_AS_MPQ") == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the netns backend creates network namespaces (CI runs as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
}

// netnsFile is the experiment of the namespace tests: two paths of 25 ms
// each way, a priority source and requests, round-robin so that both
// paths carry data.
const netnsFile = `name = "netns-ci"
duration = "10s"
seed = 4
[[path]]
rate = "20Mbit"
rtt = "50ms"
loss = "0.2%"
[[path]]
rate = "10Mbit"
rtt = "50ms"
[transport]
path_scheduler = "round-robin"
stream_scheduler = "priority-fifo"
[[source]]
name = "prio"
kind = "periodic"
interval = "50ms"
size = "10kB"
priority = true
[[source]]
name = "rr"
kind = "request-response"
interval = "100ms"
size = 500
reply_size = "20kB"
`

// oneWay is the configured one-way delay of netnsFile's paths.
const oneWay = 25.0 // ms

// leftovers lists what exists of a testbed: its namespaces, its state, the
// processes whose command line names it (or any of also: a run's output
// directory names its ends).
func leftovers(t *testing.T, tag string, also ...string) []string {
	t.Helper()
	var out []string
	list, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(list), "\n") {
		if strings.HasPrefix(l, tag+"-") {
			out = append(out, "namespace "+strings.Fields(l)[0])
		}
	}
	if _, err := os.Stat(filepath.Join(netns.StateDir, tag)); err == nil {
		out = append(out, "state "+filepath.Join(netns.StateDir, tag))
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		st, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
		named := bytes.Contains(b, []byte(tag))
		for _, a := range also {
			named = named || bytes.Contains(b, []byte(a))
		}
		if err == nil && named && !bytes.Contains(st, []byte(") Z ")) {
			out = append(out, "process "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// priorityMCTs reads the priority messages' completion times of a run.
func priorityMCTs(t *testing.T, dir string) []float64 {
	t.Helper()
	f, err := os.ReadFile(filepath.Join(dir, "messages.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(f)), "\n")
	head := strings.Split(lines[0], ",")
	col := func(name string) int {
		for i, h := range head {
			if h == name {
				return i
			}
		}
		t.Fatalf("messages.csv has no %s", name)
		return -1
	}
	prio, mct := col("priority"), col("mct_ms")
	var out []float64
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if f[prio] != "true" || f[mct] == "" {
			continue
		}
		v, err := strconv.ParseFloat(f[mct], 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	sort.Float64s(out)
	return out
}

// runDir returns the one run directory under out.
func runDir(t *testing.T, out string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(out, "netns-ci", "*", "summary.json"))
	if len(m) != 1 {
		t.Fatalf("runs under %s: %v", out, m)
	}
	return filepath.Dir(m[0])
}

// TestNetnsRun is the namespace testbed's test of issue 13: a 10 s
// two-path experiment through the userspace forwarder (this kernel has no
// netem; CI's neither) in which both paths carry data, no priority
// message completes faster than the configured one-way delay, the median
// completion time is within 2 ms of the simulator's for the same file,
// and nothing is left behind: no namespace, state or process of the run.
// maxCPUBusy is the share of the machine's CPU time, over the run, above
// which TestNetnsRun does not check its median: the run alone took 5-6 %
// of the development machine's two CPUs; with two CPU hogs beside it,
// 100 %. Under go test ./... other packages run beside it, so .ci/run
// also runs it alone, where the median is checked.
const maxCPUBusy = 0.5

func TestNetnsRun(t *testing.T) {
	needRoot(t)
	t.Setenv("MPQ_TEST_AS_MPQ", "1")
	dir := t.TempDir()
	file := writeFile(t, dir, "netns.toml", netnsFile)
	lagBefore := schedlag.Measure(20)
	// Other work beside the run (other test packages) takes CPU time from
	// its endpoints without the forwarder or a sleep's wake-up noticing
	// (two CPU hogs: sleeps woke 67 µs late, the median MCT 4 ms above
	// the simulator's): how busy the CPUs were over the run is read too.
	cpu0, cpuErr := schedlag.ReadCPU()
	start := time.Now()
	code, stdout, stderr := runCmd(t, "run", file, "--backend", "netns", "--emulator", "forwarder", "--out", filepath.Join(dir, "netns"))
	cpu1, cpuErr1 := schedlag.ReadCPU()
	cpuBusy := schedlag.BusyFraction(cpu0, cpu1)
	if cpuErr != nil || cpuErr1 != nil {
		cpuBusy = 1 // unknown: taken as busy
	}
	if code != 0 {
		t.Fatalf("netns run: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("netns run in %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(stdout))
	if code, stdout, stderr := runCmd(t, "run", file, "--out", filepath.Join(dir, "sim")); code != 0 {
		t.Fatalf("sim run: exit %d\n%s%s", code, stdout, stderr)
	} else {
		t.Logf("sim: %s", strings.TrimSpace(stdout))
	}
	if l := leftovers(t, fmt.Sprintf("mpqrun%d", os.Getpid()), filepath.Join(dir, "netns")); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
	run, sim := runDir(t, filepath.Join(dir, "netns")), runDir(t, filepath.Join(dir, "sim"))

	// Both paths carried data, by both ends' counts and the forwarder's.
	var sum struct {
		Backend    string `json:"backend"`
		Provenance struct {
			Emulator string `json:"emulator"`
		} `json:"provenance"`
		Paths []struct {
			ID             uint64
			Server, Client *struct {
				StreamBytesSent uint64 `json:"stream_bytes_sent"`
			}
		} `json:"paths"`
	}
	readJSON(t, filepath.Join(run, "summary.json"), &sum)
	if sum.Backend != "netns" || len(sum.Paths) != 2 {
		t.Fatalf("summary: backend %q, %d paths", sum.Backend, len(sum.Paths))
	}
	if sum.Provenance.Emulator != "forwarder" {
		t.Errorf("provenance.emulator %q, want forwarder", sum.Provenance.Emulator)
	}
	for _, p := range sum.Paths {
		if p.Server == nil || p.Client == nil || p.Server.StreamBytesSent < 100_000 || p.Client.StreamBytesSent < 10_000 {
			t.Errorf("path %d carried too little: server %+v client %+v", p.ID, p.Server, p.Client)
		}
	}
	var emu []struct {
		Path     int
		Up, Down struct {
			Delivered     uint64  `json:"delivered"`
			Foreign       uint64  `json:"foreign"`
			DroppedSocket uint64  `json:"dropped_socket"`
			LateMeanMS    float64 `json:"late_mean_ms"`
			LateMaxMS     float64 `json:"late_max_ms"`
		}
	}
	readJSON(t, filepath.Join(run, "emulator.json"), &emu)
	// fwLate is the forwarder's own account of a busy machine: its
	// largest mean lateness in releasing packets, over paths and
	// directions.
	var fwLate float64
	for _, p := range emu {
		fwLate = max(fwLate, p.Up.LateMeanMS, p.Down.LateMeanMS)
		if p.Up.Delivered < 500 || p.Down.Delivered < 500 || p.Up.Foreign+p.Down.Foreign != 0 {
			t.Errorf("forwarder path %d: %+v", p.Path, p)
		}
		t.Logf("forwarder path %d: late mean %.3f/%.3f ms, max %.3f/%.3f ms (up/down)", p.Path, p.Up.LateMeanMS, p.Down.LateMeanMS, p.Up.LateMaxMS, p.Down.LateMaxMS)
	}
	var clock struct {
		Start struct {
			OffsetMS float64 `json:"offset_ms"`
			RTTMS    float64 `json:"rtt_ms"`
		} `json:"start"`
	}
	readJSON(t, filepath.Join(run, "clock.json"), &clock)
	if o := clock.Start.OffsetMS; o < -1 || o > 1 || clock.Start.RTTMS < 50 {
		t.Errorf("clock offset %.3f ms over a round trip of %.3f ms (one host: 0)", o, clock.Start.RTTMS)
	}

	got, want := priorityMCTs(t, run), priorityMCTs(t, sim)
	if len(got) < 190 || len(want) < 190 {
		t.Fatalf("%d and %d priority messages completed, want about 200", len(got), len(want))
	}
	if got[0] < oneWay {
		t.Errorf("a priority message completed in %.3f ms, below the one-way delay of %.0f ms", got[0], oneWay)
	}
	mg, mw := got[len(got)/2], want[len(want)/2]
	t.Logf("median priority MCT %.3f ms over the forwarder, %.3f ms in the simulator; min %.3f and %.3f; CPUs %.0f %% busy over the run",
		mg, mw, got[0], want[0], 100*cpuBusy)
	if d := mg - mw; d < -2 || d > 2 {
		// A run on a machine too busy to keep time (shared development
		// machines) says nothing of the emulator; CI's machine is not.
		if raceEnabled {
			t.Logf("under the race detector the endpoints run several times slower: not failing on the median")
		} else if busy, lag := schedlag.Busy(2 * time.Millisecond); busy || lagBefore > 200*time.Microsecond || fwLate > 0.3 || cpuBusy > maxCPUBusy {
			t.Logf("the machine is too busy to check the median (sleeps wake %v late before the run, %v after; the CPUs were %.0f %% busy over the run; the forwarder released packets %.3f ms late on average): not failing on it",
				lagBefore, lag, 100*cpuBusy, fwLate)
		} else {
			t.Errorf("median priority MCT %.3f ms, the simulator's %.3f ms: more than 2 ms apart", mg, mw)
		}
	}
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// findProc waits up to timeout for a process whose command line holds
// every one of parts, and returns its PID.
func findProc(t *testing.T, timeout time.Duration, parts ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pid, err := lookupProc(ctx, parts...)
	if err != nil {
		t.Fatalf("no process with %q within %v", parts, timeout)
	}
	return pid
}

// lookupProc polls /proc for a process whose command line contains every
// part until ctx ends. Unlike findProc it may run in a goroutine of its
// own: it reports failure as an error instead of failing the test.
func lookupProc(ctx context.Context, parts ...string) (int, error) {
	for {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			all := true
			for _, part := range parts {
				all = all && bytes.Contains(b, []byte(part))
			}
			if all {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				return pid, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A run whose client dies fails (exit 1, saying so) and leaves nothing
// behind.
func TestNetnsRunFails(t *testing.T) {
	needRoot(t)
	t.Setenv("MPQ_TEST_AS_MPQ", "1")
	dir := t.TempDir()
	file := writeFile(t, dir, "netns.toml", netnsFile)
	out := filepath.Join(dir, "out")
	// The killer goroutine must not outlive the test nor fail it from
	// its own goroutine: it reports on killed, and stops when the run ends.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	killed := make(chan error, 1)
	go func() {
		pid, err := lookupProc(ctx, out, "--role\x00client")
		if err == nil {
			select { // let the client start its transfer
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(time.Second):
				err = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		killed <- err
	}()
	code, _, stderr := runCmd(t, "run", file, "--backend", "netns", "--emulator", "forwarder", "--out", out)
	cancel()
	if err := <-killed; err != nil {
		t.Fatalf("the client was not killed (%v); exit %d, stderr:\n%s", err, code, stderr)
	}
	if code != exitFailure || !strings.Contains(stderr, "the client failed") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if l := leftovers(t, fmt.Sprintf("mpqrun%d", os.Getpid()), out); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
	if m, _ := filepath.Glob(filepath.Join(out, "netns-ci", "*")); len(m) > 0 {
		t.Errorf("a failed run left %v", m)
	}
}

// After kill -9 of mpq run, its ends and its forwarder die with it (they
// are its children, with a parent-death signal); its namespaces remain
// until mpq testbed down, which removes them all.
func TestNetnsKill9ThenDown(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "netns.toml", netnsFile)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(self, "run", file, "--backend", "netns", "--emulator", "forwarder", "--out", out)
	cmd.Env = append(os.Environ(), "MPQ_TEST_AS_MPQ=1")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("mpqrun%d", cmd.Process.Pid)
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
		netns.Down(context.Background(), tag, netns.Options{})
	}()
	findProc(t, 20*time.Second, out, "--role\x00client")
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed = true
	deadline := time.Now().Add(5 * time.Second)
	var l []string
	for time.Now().Before(deadline) {
		l = leftovers(t, tag, out)
		procs := 0
		for _, x := range l {
			if strings.HasPrefix(x, "process ") {
				procs++
			}
		}
		if procs == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, x := range l {
		if strings.HasPrefix(x, "process ") {
			t.Errorf("outlived mpq run: %s", x)
		}
	}
	if len(l) == 0 {
		t.Fatalf("nothing of the killed run's testbed exists (stderr: %s)", errOut.String())
	}
	t.Logf("after kill -9: %v", l)
	code, stdout, stderr := runCmd(t, "testbed", "down", "--name", tag)
	if code != 0 {
		t.Fatalf("down: exit %d\n%s%s", code, stdout, stderr)
	}
	if l := leftovers(t, tag, out); len(l) > 0 {
		t.Errorf("left behind after down: %v", l)
	}
}

// Ctrl-C (SIGINT) and SIGTERM stop a netns run: mpq run exits 130 and
// takes its testbed down, with its ends and forwarder.
func TestNetnsInterrupted(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "netns.toml", netnsFile)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strconv.Itoa(int(sig)))
			cmd := exec.Command(self, "run", file, "--backend", "netns", "--emulator", "forwarder", "--out", out)
			cmd.Env = append(os.Environ(), "MPQ_TEST_AS_MPQ=1")
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			tag := fmt.Sprintf("mpqrun%d", cmd.Process.Pid)
			defer netns.Down(context.Background(), tag, netns.Options{})
			findProc(t, 20*time.Second, out, "--role\x00client")
			time.Sleep(500 * time.Millisecond)
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("mpq run did not stop within 30 s of %v", sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitInterrupted, errOut.String())
			}
			if l := leftovers(t, tag, out); len(l) > 0 {
				t.Errorf("left behind: %v", l)
			}
		})
	}
}

// Without root, mpq run --backend netns and mpq testbed up say that root
// is needed, exit 1 and make nothing.
func TestNetnsNeedsRoot(t *testing.T) {
	needRoot(t) // to run mpq as another user
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A copy of the test binary that user nobody may run.
	dir, err := os.MkdirTemp("", "mpq-noroot-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "mpq")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, dir, "netns.toml", netnsFile)
	os.Chmod(dir, 0o777)
	os.Chmod(file, 0o644)
	for _, args := range [][]string{
		{"run", file, "--backend", "netns", "--out", filepath.Join(dir, "out")},
		{"testbed", "up", file, "--name", "noroot"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "MPQ_TEST_AS_MPQ=1")
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != exitFailure || !strings.Contains(string(out), "needs root") {
			t.Errorf("mpq %s as nobody: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	if l := leftovers(t, "noroot"); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("mpq run made its results directory")
	}
}
