package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mpq/mpq/internal/qlogcheck"
)

// traceName is the one naming scheme of qlog traces: the original
// destination connection ID in hex and the vantage point.
var traceName = regexp.MustCompile(`^([0-9a-f]{16,40})_(client|server)\.sqlog$`)

// checkTraces checks that dir holds exactly the traces of the given
// vantage points, named by the one scheme after the same connection, and
// that each loads as qvis loads it and follows the qlog drafts.
func checkTraces(t *testing.T, dir string, vantages ...string) map[string]*qlogcheck.Trace {
	t.Helper()
	names := dirNames(t, dir)
	if len(names) != len(vantages) {
		t.Fatalf("%s holds %v, want traces of %v", dir, names, vantages)
	}
	out := map[string]*qlogcheck.Trace{}
	for _, n := range names {
		m := traceName.FindStringSubmatch(n)
		if m == nil {
			t.Fatalf("trace %s is not named ODCID_VANTAGE.sqlog", n)
		}
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := qlogcheck.Check(data)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if tr.VantagePoint != m[2] {
			t.Fatalf("%s: vantage point %s", n, tr.VantagePoint)
		}
		for _, ev := range []string{"quic:packet_sent", "quic:packet_received", "quic:recovery_metrics_updated", "quic:parameters_set", "quic:connection_closed"} {
			if tr.Counts[ev] == 0 {
				t.Fatalf("%s has no %s: %v", n, ev, tr.Counts)
			}
		}
		out[m[2]] = tr
	}
	for _, v := range vantages {
		if out[v] == nil {
			t.Fatalf("no %s trace among %v", v, names)
		}
	}
	return out
}

// TestQlogSameSchemeEverywhere: mpq serve, mpq get and mpq run name their
// traces the same way and write traces qvis loads (issue 14: serve wrote
// <cid>_server.sqlog, run server_<cid>.sqlog, and qvis refused both
// for want of qlog_version and qlog_format).
func TestQlogSameSchemeEverywhere(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "index.html", strings.Repeat("hello qlog\n", 3000))
	sdir, cdir := filepath.Join(t.TempDir(), "s"), filepath.Join(t.TempDir(), "c")
	addr, stderr, stop := startServe(t, root, "--qlog", sdir)
	code, _, gerr := runCmd(t, "get", "--addr", addr, "--path", "/index.html", "--qlog", cdir)
	if code != 0 {
		t.Fatalf("get: exit %d: %s", code, gerr)
	}
	if c := stop(); c != 0 {
		t.Fatalf("serve: exit %d: %s", c, stderr)
	}
	checkTraces(t, sdir, "server")
	checkTraces(t, cdir, "client")
	if strings.TrimSuffix(dirNames(t, sdir)[0], "_server.sqlog") != strings.TrimSuffix(dirNames(t, cdir)[0], "_client.sqlog") {
		t.Fatalf("the two ends of one connection are named after different IDs: %v %v", dirNames(t, sdir), dirNames(t, cdir))
	}

	dir := t.TempDir()
	f := writeFile(t, dir, "cli.toml", strings.Replace(runFile, "[[path]]", "[[path]]\nrate = \"20Mbit\"\nrtt = \"30ms\"\n[[path]]", 1))
	code, _, rerr := runCmd(t, "run", f, "--out", dir, "--set", "duration=1s", "--set", "output.qlog=true")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, rerr)
	}
	trs := checkTraces(t, filepath.Join(dir, "cli", "duration=1s", "qlog"), "client", "server")
	// Two paths: both carry packets, and path events name their path.
	if trs["server"].Counts["quic:tuple_assigned"] == 0 {
		t.Fatalf("no path events in the run's server trace: %v", trs["server"].Counts)
	}
	onPath1 := 0
	for _, e := range trs["server"].Events {
		if d, _ := e["data"].(map[string]any); e["name"] == "quic:packet_sent" && d["path_id"] != nil && d["path_id"].(interface{ String() string }).String() == "1" {
			onPath1++
		}
	}
	if onPath1 == 0 {
		t.Fatal("the server's trace has no packet sent on path 1")
	}
}

// offersMultipath reports whether a trace's parameters_set of initiator
// ("local" or "remote") carries initial_max_path_id.
func offersMultipath(t *testing.T, tr *qlogcheck.Trace, initiator string) bool {
	t.Helper()
	for _, e := range tr.Events {
		d, _ := e["data"].(map[string]any)
		if e["name"] == "quic:parameters_set" && d["initiator"] == initiator {
			_, ok := d["initial_max_path_id"]
			return ok
		}
	}
	t.Fatalf("no %s parameters_set", initiator)
	return false
}

// TestNoMultipath: --no-multipath on serve or get keeps the multipath
// extension out of the transport parameters, so the connection is plain
// QUIC v1 (issue 14: there was no switch, and dissectors without the
// multipath frames show PATH_ACK as malformed).
func TestNoMultipath(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "f", "x")
	for _, tc := range []struct {
		name              string
		serveArgs, getArg []string
		client, server    bool // offered
	}{
		{"both offer", nil, nil, true, true},
		{"serve --no-multipath", []string{"--no-multipath"}, nil, true, false},
		{"get --no-multipath", nil, []string{"--no-multipath"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _, _ := startServe(t, root, tc.serveArgs...)
			cdir := filepath.Join(t.TempDir(), "q")
			code, _, stderr := runCmd(t, append([]string{"get", "--addr", addr, "--path", "/f", "--qlog", cdir}, tc.getArg...)...)
			if code != 0 {
				t.Fatalf("get: exit %d: %s", code, stderr)
			}
			tr := checkTraces(t, cdir, "client")["client"]
			if got := offersMultipath(t, tr, "local"); got != tc.client {
				t.Errorf("client offers multipath: %v, want %v", got, tc.client)
			}
			if got := offersMultipath(t, tr, "remote"); got != tc.server {
				t.Errorf("server offers multipath: %v, want %v", got, tc.server)
			}
		})
	}
	code, _, stderr := runCmd(t, "get", "--path", "/f", "--no-multipath", "--local", "127.0.0.1", "--local", "127.0.0.2")
	if code != exitUsage || !strings.Contains(stderr, "--no-multipath allows one path") {
		t.Fatalf("--no-multipath with two --local: exit %d, %s", code, stderr)
	}
}
