package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// repairDoc is a short run of cwr-plus protecting each priority message by
// a parity on the other path (transport.repair), over two lossy paths.
const repairDoc = `
name = "repair"
duration = "3s"
seed = 1

[[path]]
rate = "100Mbit"
rtt = "50ms"
loss = "1%"

[[path]]
rate = "100Mbit"
rtt = "50ms"
loss = "1%"

[transport]
path_scheduler = "cwr-plus"
scheduler_options = { copies = false, parity = true }
repair = REPAIR
stream_scheduler = "priority-fifo"

[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"
priority = true

[output]
warmup = "0s"
`

// TestRepairCounts: with transport.repair, summary.json reports per end
// what REPAIR did: the server sent a parity for each priority message it
// was asked about (60 messages in 3 s; the parity of a message of 8
// packets is one packet's chunk, at least 1,000 bytes) and the client
// rebuilt the bytes of some of the packets the 1 % loss took (one range
// per message repaired), and negotiated = true; with transport.repair
// off, cwr-plus's parity is not negotiated, and the repair object says so
// (negotiated = false, nothing sent: cwr-plus copies instead).
func TestRepairCounts(t *testing.T) {
	for _, on := range []bool{true, false} {
		doc := strings.Replace(repairDoc, "REPAIR", strconv.FormatBool(on), 1)
		_, dir := run(t, doc)
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Repair map[string]map[string]any `json:"repair"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		srv, cli := s.Repair["server"], s.Repair["client"]
		if srv == nil || cli == nil {
			t.Fatalf("repair = %v, want both ends", s.Repair)
		}
		if srv["negotiated"] != on || cli["negotiated"] != on {
			t.Fatalf("repair = %v, want negotiated = %v at both ends", s.Repair, on)
		}
		if !on {
			if srv["parities_sent"] != 0.0 {
				t.Fatalf("repair off: %v, want no parity sent", srv)
			}
			continue
		}
		n := func(m map[string]any, k string) float64 {
			v, ok := m[k].(float64)
			if !ok {
				t.Fatalf("%s missing in %v", k, m)
			}
			return v
		}
		asked, sent, frames, bytes := n(srv, "bursts_asked"), n(srv, "parities_sent"), n(srv, "frames_sent"), n(srv, "parity_bytes_sent")
		if sent < 55 || sent > asked || frames < sent || bytes < 1000*sent {
			t.Errorf("server: %v: want about 60 parities (at most one per burst asked), a frame or more each, at least 1,000 bytes each", srv)
		}
		if rb, rr := n(cli, "rebuilt_bytes"), n(cli, "rebuilt_ranges"); rr < 1 || rb < rr {
			t.Errorf("client: %v: want bytes rebuilt from at least one range", cli)
		}
	}
}
