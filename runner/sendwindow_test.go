package runner

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

const sendWindowDoc = `name = "send-window"
duration = "500ms"
drain = "0s"
seed = 1
[[path]]
rate = "10Mbit"
rtt = "100ms"
queue = "10MB"
[transport]
multipath = false
%s
[[source]]
name = "bg"
kind = "bulk"
`

// TestSendBelowWindow: in the initial slow start of a lossless path, where
// the window only grows, a path's bytes in flight never exceed its
// congestion window (paths.csv, the server's rows, at every change);
// with transport.send_below_window (MPQUIC's test: bytes in flight at
// most the window) they do, by less than a 1350-byte datagram.
func TestSendBelowWindow(t *testing.T) {
	for _, tc := range []struct {
		set    string
		overLo int64 // the largest excess must be above this
		overHi int64 // and at most this
	}{
		{"", -1 << 62, 0},
		{"send_below_window = true", 0, 1349},
	} {
		_, dir := run(t, fmt.Sprintf(sendWindowDoc, tc.set))
		most := int64(-1 << 62)
		for _, r := range readCSV(t, filepath.Join(dir, "paths.csv")) {
			if r["vantage"] != "server" || r["state"] != "slow_start" {
				continue
			}
			cwnd, _ := strconv.ParseInt(r["cwnd"], 10, 64)
			inFlight, _ := strconv.ParseInt(r["bytes_in_flight"], 10, 64)
			most = max(most, inFlight-cwnd)
		}
		if most <= tc.overLo || most > tc.overHi {
			t.Errorf("%q: bytes in flight at most %d beyond the window in slow start, want within (%d, %d]", tc.set, most, tc.overLo, tc.overHi)
		}
	}
}
