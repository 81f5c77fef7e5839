package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/experiment"
)

// referenceFiles are the reproductions of the reference papers 000-002,
// reference 000's high-frequency case (r0-high-frequency.toml) included.
func referenceFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../experiments/references/00[0-2]-*.toml")
	if err != nil || len(files) < 3 {
		t.Fatalf("reference files: %v, %v", files, err)
	}
	return append(files, "../experiments/references/r0-high-frequency.toml")
}

// TestReferencesLoad: every reference file loads as written (on the
// namespace backend, every transport of its sweep) and each of its runs
// names its transport.
func TestReferencesLoad(t *testing.T) {
	for _, f := range referenceFiles(t) {
		runs, err := experiment.Load(f, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		kinds := map[string]bool{}
		for _, r := range runs {
			kinds[r.Transport.Kind] = true
		}
		for _, k := range []string{"mpq", "quic-go", "tcp", "tls"} {
			if !kinds[k] {
				t.Errorf("%s: no run over %s", f, k)
			}
		}
	}
}

// TestReferencesShortSim runs every reference file shortened in the
// simulator over mpq (the other transports need the namespace backend,
// TestNetnsReferences).
func TestReferencesShortSim(t *testing.T) {
	for _, f := range referenceFiles(t) {
		out := t.TempDir()
		code, stdout, stderr := runCmd(t, "run", f, "--set", "duration=2s", "--set", "backend=sim", "--set", "transport.kind=mpq", "--set", "transport.connection=shared", "--out", out)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", f, code, stdout, stderr)
			continue
		}
		sums, _ := filepath.Glob(filepath.Join(out, "*", "*", "summary.json"))
		if len(sums) < 6 {
			t.Errorf("%s: %d runs", f, len(sums))
		}
	}
}

// TestNetnsReferences runs every reference file shortened on the
// namespace backend over every transport of its sweep, at one grid point
// of its other keys (the first value of each).
func TestNetnsReferences(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("a minute of namespace runs")
	}
	t.Setenv("MPQ_TEST_AS_MPQ", "1")
	for _, f := range referenceFiles(t) {
		out := t.TempDir()
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"run", f, "--set", "duration=2s", "--emulator", "forwarder", "--out", out}
		// The first value of every swept key but the transport's.
		for _, l := range strings.Split(string(b[strings.Index(string(b), "[sweep]"):]), "\n")[1:] {
			k, v, ok := strings.Cut(l, " = [")
			if !ok || strings.Contains(k, "transport.kind") {
				continue
			}
			first, _, _ := strings.Cut(v, ",")
			args = append(args, "--set", strings.Trim(k, `"`)+"="+strings.Trim(first, `" ]`))
		}
		code, stdout, stderr := runCmd(t, args...)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", f, code, stdout, stderr)
			continue
		}
		t.Log(strings.TrimSpace(stdout))
		if sums, _ := filepath.Glob(filepath.Join(out, "*", "*", "summary.json")); len(sums) != 4 {
			t.Errorf("%s: %d runs, want one per transport", f, len(sums))
		}
	}
}

// TestR3BaselinesLoad: reference 003's baselines file loads as written:
// per loss rate, mpq with and without 0-RTT, tls and tcp.
func TestR3BaselinesLoad(t *testing.T) {
	runs, err := experiment.Load("../experiments/references/r3-mqtt-baselines.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range runs {
		k := r.Transport.Kind
		if r.Transport.ZeroRTT {
			k += "-0rtt"
		}
		count[k]++
	}
	// Three loss rates, 20 repetitions each.
	want := map[string]int{"mpq": 60, "mpq-0rtt": 60, "tls": 60, "tcp": 60}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%d runs over %s, want %d (all: %v)", count[k], k, n, count)
		}
	}
}
