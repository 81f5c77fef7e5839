package runner

import (
	"strings"
	"testing"
)

// recvWindowDoc is a 2 MB download over one 100 Mbit/s path of 100 ms
// RTT with a queue of 1 MB, from an initial congestion window of 32
// packets: the receive window is what holds the first round trips back
// when it starts small.
const recvWindowDoc = `name = "recvwindow"
duration = "1s"
drain = "60s"
[[path]]
rate = "100Mbit"
delay = "50ms"
queue = "1MB"
[transport]
multipath = false
initial_window = 32
[[source]]
name = "dl"
kind = "file"
size = "2MB"
`

// TestInitialReceiveWindowRun: transport.initial_receive_window reaches
// the connection. Starting at MPQUIC's 32 KiB instead of 512 KiB, the
// client's windows take round trips to grow, and the download takes at
// least one more of them (100 ms; two, measured); it still completes.
func TestInitialReceiveWindowRun(t *testing.T) {
	done := func(set string) float64 {
		t.Helper()
		doc := recvWindowDoc
		if set != "" {
			doc = strings.Replace(doc, "[transport]\n", "[transport]\n"+set+"\n", 1)
		}
		res, _ := run(t, doc)
		src := res.Summary.Sources[0]
		if src.Completed != 1 {
			t.Fatalf("%q: %d of %d downloads completed", set, src.Completed, src.Messages)
		}
		return float64(src.ResponseMS.Mean)
	}
	def := done("")
	small := done(`initial_receive_window = "32KiB"`)
	t.Logf("2 MB download: %.1f ms from the default windows, %.1f ms from 32 KiB", def, small)
	if small < def+100 {
		t.Fatalf("download %.1f ms from 32 KiB windows against %.1f ms from the default: want at least 100 ms more", small, def)
	}
}
