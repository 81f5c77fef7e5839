package cli

import (
	"path/filepath"
	"testing"
)

// poolFile is a one-path request-response experiment whose client keeps
// its connections in a pool (transport.connection = "pool"), a request
// every 5 ms (below the 20 ms RTT: requests overlap) and every 100 ms
// (above it: the one connection is idle when the next request comes).
const poolFile = `name = "pool"
duration = "3s"
backend = "netns"
[[path]]
rate = "20Mbit"
rtt = "20ms"
[transport]
connection = "pool"
[[source]]
name = "rr"
kind = "request-response"
interval = "100ms"
size = 128
[[sweep.t]]
name = "tls-5ms"
"transport.kind" = "tls"
"source.rr.interval" = "5ms"
[[sweep.t]]
name = "tcp-5ms"
"transport.kind" = "tcp"
"source.rr.interval" = "5ms"
[[sweep.t]]
name = "tls-100ms"
"transport.kind" = "tls"
[[sweep.t]]
name = "tcp-100ms"
"transport.kind" = "tcp"
`

// TestNetnsPool: with transport.connection = "pool" every request
// completes; while requests overlap (a request every 5 ms on a 20 ms RTT)
// the client opens more than one connection, and never more than one per
// request, and the server accepts what the client opened
// (transport.connections, connections_per_1000, max_connections agree);
// a request every 100 ms reuses the one connection.
func TestNetnsPool(t *testing.T) {
	out := runNetnsFile(t, "i23pool", "pool", poolFile)
	tests := []struct {
		run, kind   string
		minRequests int
		overlap     bool
	}{
		{"tls-5ms", "tls", 500, true},
		{"tcp-5ms", "tcp", 500, true},
		{"tls-100ms", "tls", 27, false},
		{"tcp-100ms", "tcp", 27, false},
	}
	for _, tt := range tests {
		var sum connSummary
		readJSON(t, filepath.Join(out, "t="+tt.run, "summary.json"), &sum)
		tr := sum.Transport
		t.Logf("%s: %+v", tt.run, tr)
		if tr.Kind != tt.kind || tr.Connection != "pool" {
			t.Errorf("%s: transport %+v", tt.run, tr)
		}
		if len(sum.Sources) != 1 {
			t.Fatalf("%s: %d sources", tt.run, len(sum.Sources))
		}
		s := sum.Sources[0]
		if s.Messages < tt.minRequests || s.Completed != s.Messages || s.Failed != 0 {
			t.Errorf("%s: %d requests, %d completed, %d failed", tt.run, s.Messages, s.Completed, s.Failed)
		}
		if want := 1000 * float64(tr.Connections) / float64(s.Messages); tr.ConnectionsPer1000 < want-1e-9 || tr.ConnectionsPer1000 > want+1e-9 {
			t.Errorf("%s: %v connections per 1000 requests, want %v", tt.run, tr.ConnectionsPer1000, want)
		}
		if tt.overlap {
			if tr.Connections < 2 || tr.Connections >= s.Messages || tr.MaxConnections < 2 || tr.MaxConnections > tr.Connections {
				t.Errorf("%s: %d connections, at most %d open at once, for %d overlapping requests", tt.run, tr.Connections, tr.MaxConnections, s.Messages)
			}
		} else if tr.Connections != 1 || tr.MaxConnections != 1 {
			t.Errorf("%s: %d connections, at most %d open at once, want 1 for requests 100 ms apart", tt.run, tr.Connections, tr.MaxConnections)
		}
	}
}
