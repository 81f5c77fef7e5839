package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/runner"
)

// perRequestFile is a one-path request-response experiment whose client
// opens a connection per request, swept over the baselines that have the
// option, and shared once over tcp.
const perRequestFile = `name = "perrequest"
duration = "3s"
backend = "netns"
[[path]]
rate = "20Mbit"
rtt = "20ms"
[transport]
connection = "per-request"
[[source]]
name = "rr"
kind = "request-response"
interval = "100ms"
size = 1024
reply_size = 4096
[[sweep.t]]
name = "tcp"
"transport.kind" = "tcp"
[[sweep.t]]
name = "tls"
"transport.kind" = "tls"
[[sweep.t]]
name = "quic-go"
"transport.kind" = "quic-go"
[[sweep.t]]
name = "mptcp"
"transport.kind" = "mptcp"
[[sweep.t]]
name = "tcp-shared"
"transport.kind" = "tcp"
"transport.connection" = "shared"
`

// TestNetnsPerRequest: with transport.connection = "per-request" every
// request completes over tcp, tls, quic-go and mptcp, the server accepts
// one connection per request (summary.json's transport.connections,
// counted by the server), and each request's time holds its handshake:
// its median response time is at least two RTTs over tcp (SYN, then the
// request) and three over tls (TLS 1.3 adds one), against one RTT on a
// shared connection, which the server accepts once.
func TestNetnsPerRequest(t *testing.T) {
	out := runNetnsFile(t, "i23conn", "perrequest", perRequestFile)
	tests := []struct {
		run, kind, mode string
		minRTTs         float64 // least median response time, in RTTs
		maxRTTs         float64
	}{
		{"tcp", "tcp", "per-request", 2, 3},
		{"tls", "tls", "per-request", 3, 4},
		{"quic-go", "quic-go", "per-request", 2, 3},
		{"mptcp", "mptcp", "per-request", 2, 3},
		{"tcp-shared", "tcp", "shared", 1, 2},
	}
	for _, tt := range tests {
		var sum connSummary
		readJSON(t, filepath.Join(out, "t="+tt.run, "summary.json"), &sum)
		if sum.Transport.Kind != tt.kind || sum.Transport.Connection != tt.mode {
			t.Errorf("%s: transport %+v", tt.run, sum.Transport)
		}
		if len(sum.Sources) != 1 {
			t.Fatalf("%s: %d sources", tt.run, len(sum.Sources))
		}
		s := sum.Sources[0]
		// A request every 100 ms for 3 s.
		if s.Messages < 27 || s.Completed != s.Messages || s.Failed != 0 {
			t.Errorf("%s: %d requests, %d completed, %d failed", tt.run, s.Messages, s.Completed, s.Failed)
		}
		want := 1
		if tt.mode == "per-request" {
			want = s.Messages
		}
		if sum.Transport.Connections != want {
			t.Errorf("%s: the server accepted %d connections for %d requests, want %d", tt.run, sum.Transport.Connections, s.Messages, want)
		}
		if s.ResponseMS == nil {
			t.Errorf("%s: no response times", tt.run)
			continue
		}
		const rtt = 20.0
		if raceEnabled {
			// The race detector slows the endpoints' handshakes by
			// milliseconds: the plain test run checks the bound.
			t.Logf("%s: median response time %.1f ms (not checked under the race detector)", tt.run, s.ResponseMS.P50)
			continue
		}
		if p50 := s.ResponseMS.P50; p50 < tt.minRTTs*rtt || p50 > tt.maxRTTs*rtt {
			t.Errorf("%s: median response time %.1f ms, want %.0f-%.0f RTTs of %.0f ms", tt.run, p50, tt.minRTTs, tt.maxRTTs, rtt)
		}
	}
}

// runNetnsFile runs the experiment file doc named name on the namespace
// backend, its namespaces tagged tag, through the forwarder, and returns
// the directory of its runs (root only).
func runNetnsFile(t *testing.T, tag, name, doc string) string {
	t.Helper()
	needRoot(t)
	t.Setenv("MPQ_TEST_AS_MPQ", "1")
	had := runner.Netns.Tag
	runner.Netns.Tag = tag
	t.Cleanup(func() { runner.Netns.Tag = had })
	dir := t.TempDir()
	file := writeFile(t, dir, name+".toml", doc)
	code, stdout, stderr := runCmd(t, "run", file, "--emulator", "forwarder", "--out", filepath.Join(dir, "out"))
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	t.Log(strings.TrimSpace(stdout))
	return filepath.Join(dir, "out", name)
}

// connSummary is what the connection tests read of summary.json.
type connSummary struct {
	Transport struct {
		Kind               string  `json:"kind"`
		Connection         string  `json:"connection"`
		Connections        int     `json:"connections"`
		MaxConnections     int     `json:"max_connections"`
		ConnectionsPer1000 float64 `json:"connections_per_1000"`
	} `json:"transport"`
	Sources []struct {
		Messages   int `json:"messages"`
		Completed  int `json:"completed"`
		Failed     int `json:"failed"`
		ResponseMS *struct {
			P50 float64 `json:"p50"`
		} `json:"response_ms"`
	} `json:"sources"`
}
