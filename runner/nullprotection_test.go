package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/mpq/mpq/experiment"
)

// lossyDoc is a lossy two-path run: random loss and jitter on one path,
// bursty loss on the other, CWR, periodic priority messages, requests
// with replies and bulk data.
const lossyDoc = `name = "lossy"
duration = "4s"
seed = 9
[[path]]
rate = "20Mbit"
rtt = "30ms"
loss = "2%"
jitter = "3ms"
[[path]]
rate = "30Mbit"
rtt = "80ms"
loss = "1%"
loss_model = "gilbert"
burst = 4
[transport]
path_scheduler = "cwr"
stream_scheduler = "priority-fifo"
[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"
priority = true
[[source]]
name = "rr"
kind = "request-response"
interval = "100ms"
size = "1kB"
reply_size = "20kB"
[[source]]
name = "bg"
kind = "bulk"
`

// parseRuns parses an experiment file's text with --set overrides into
// its runs.
func parseRuns(t *testing.T, file string, data []byte, sets ...string) []experiment.Experiment {
	t.Helper()
	var ovs []experiment.Override
	for _, s := range sets {
		o, err := experiment.ParseOverride(s)
		if err != nil {
			t.Fatal(err)
		}
		ovs = append(ovs, o)
	}
	es, err := experiment.Parse(file, data, ovs)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// experimentFile reads a file of the experiments/ directory.
func experimentFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "experiments", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSimNullProtectionSameResults runs experiments with the simulator's
// null packet protection (transport.sim_null_protection, the simulator's
// default) and with AES-GCM, and finds every result file byte for byte the
// same but for the wall clock and the provenance's packet_protection: the
// quickstart with every scheduler of its sweep (redundant copies
// included), a lossy run (lossyDoc) and the failover (a path down for 5 s, qlog traces on).
func TestSimNullProtectionSameResults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10 simulated experiments")
	}
	var runs []experiment.Experiment
	add := func(file string, data []byte, sets ...string) {
		runs = append(runs, parseRuns(t, file, data, sets...)...)
	}
	read := func(name string) []byte { return experimentFile(t, name) }
	add("quickstart.toml", read("quickstart.toml"), "duration=3s")
	add("lossy.toml", []byte(lossyDoc))
	add("failover.toml", read("failover.toml"), "duration=17s", "transport.path_scheduler=lowrtt")
	for _, e := range runs {
		if !e.Transport.SimNullProtection {
			t.Fatalf("%s: the simulator's default is not the null protection", e.Name)
		}
		off := e
		off.Transport.SimNullProtection = false
		dNull, dTLS := t.TempDir(), t.TempDir()
		for _, r := range []struct {
			e   *experiment.Experiment
			dir string
			pp  string
		}{{&e, dNull, "sim-null"}, {&off, dTLS, "tls"}} {
			res, err := Run(context.Background(), r.e, r.dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Summary.Provenance.PacketProtection; got != r.pp {
				t.Fatalf("%s: provenance says %q, want %q", e.Name, got, r.pp)
			}
		}
		files := resultFiles(t, dNull)
		if other := resultFiles(t, dTLS); !slices.Equal(files, other) {
			t.Fatalf("%s: result files %v and %v", e.Name, files, other)
		}
		same := 0
		for _, f := range files {
			a, b := comparable(t, filepath.Join(dNull, f)), comparable(t, filepath.Join(dTLS, f))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("%s (%s): %s differs with the null protection (%d and %d bytes)", e.Name, e.Transport.PathScheduler, f, len(a), len(b))
				continue
			}
			same++
		}
		t.Logf("%s (%s): %d of %d result files identical: %v", e.Name, e.Transport.PathScheduler, same, len(files), files)
	}
}

// resultFiles lists the files a run wrote under dir, relative to it.
func resultFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// comparable is a result file as the comparison sees it: summary.json
// without the wall clock (withoutWallClock) and without what says which
// protection ran (provenance.packet_protection, and config_sha256, the
// hash of the resolved configuration), config.resolved.toml without its
// sim_null_protection line; every other file as written.
func comparable(t *testing.T, path string) []byte {
	t.Helper()
	b := withoutWallClock(t, path)
	switch filepath.Base(path) {
	case "config.resolved.toml":
		var out []byte
		for _, line := range bytes.SplitAfter(b, []byte("\n")) {
			if !bytes.Contains(line, []byte("sim_null_protection")) {
				out = append(out, line...)
			}
		}
		return out
	case "summary.json":
	default:
		return b
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m["provenance"].(map[string]any), "packet_protection")
	delete(m, "config_sha256")
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
