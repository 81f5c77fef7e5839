package scheduler_test

import (
	"fmt"
	"testing"
	"time"
)

// cwrPlusTransport is the [transport] table's lines of a cwr-plus run
// with options (a TOML inline table) and the extra lines.
func cwrPlusTransport(options, extra string) string {
	return fmt.Sprintf("path_scheduler = \"cwr-plus\"\nscheduler_options = %s\nstream_scheduler = \"priority-fifo\"\n%s", options, extra)
}

// rtt20x100Paths are the robustness grid's Figure 6 shape: 2 x
// 100 Mbit/s at 20 and 100 ms RTT, with each path's loss and queue (a
// TOML value: "1bdp", or bytes).
func rtt20x100Paths(loss, queue string) string {
	return fmt.Sprintf(`[[path]]
rate = "100Mbit"
rtt = "20ms"
loss = %[1]q
queue = %[2]s
[[path]]
rate = "100Mbit"
rtt = "100ms"
loss = %[1]q
queue = %[2]s
`, loss, queue)
}

// TestCWRPlusRatePace holds cwr-plus's rate_pace on the real core in the
// simulator at the robustness grid's lossless base point (2 x 100 Mbit/s,
// 50 ms RTT, 1 BDP queues, newreno, 10 kB every 50 ms beside bulk), from
// the start, with the receiver's connection window growing by itself
// (conn_window_follows_stream off, which cwr-plus otherwise turns on and
// which removes this stall): path 1's first slow start runs out the bulk stream's
// flow-control credit at about 840 ms, and when MAX_STREAM_DATA returns
// 14 ms later path 0 (held at its cap) has 175 kB of room. Unpaced, it
// sends them at once: a 14 ms queue that the acknowledgement clock keeps
// up for several round trips, and the messages created meanwhile arrive
// 11 to 17 ms late. Paced at the cap's rate, the room refills at the
// bottleneck's rate and no message is later than the point's limit
// (25.8 ms) plus 2 ms.
func TestCWRPlusRatePace(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	const limitMs = 25.8 + 2
	for _, tc := range []struct {
		options string
		holds   bool
	}{
		{`{}`, true},
		{`{ rate_pace = false }`, false},
	} {
		t.Run(tc.options, func(t *testing.T) {
			doc := prioBesideBulkDoc("ratepace", "3s", basePaths1BDP, cwrPlusTransport(tc.options, "conn_window_follows_stream = false\n"), false)
			dir := runDoc(t, "ratepace.toml", doc)
			late, n, worst := lateMessages(t, dir, 0, limitMs)
			gp := bulkGoodput(t, dir)
			t.Logf("%d of %d messages later than %.1f ms (worst %.1f ms); bulk goodput %.1f Mbit/s", late, n, limitMs, worst, gp)
			if n < 55 {
				t.Fatalf("%d messages, want about 59", n)
			}
			if holds := late == 0; holds != tc.holds {
				t.Errorf("no late message: %v, want %v", holds, tc.holds)
			}
		})
	}
}

// TestCWRPlusPipeRoom holds cwr-plus's pipe_room on the real core in the
// simulator at a point of the robustness grid (2 x 100 Mbit/s at 20 and
// 100 ms RTT, 0.05 % random loss, 1 BDP queues, newreno, 10 kB every
// 50 ms beside bulk), after the first second (the start-up's queue is
// another matter): when a loss halves path 0's window, more is in
// flight there than the window and a message's budget allow, and the
// message went on path 1, 40 ms later than the limit (10.8 ms). Path 0
// has no queue then (its bytes in flight are within its bandwidth-delay
// product), and with the rule the messages stay on it: none later than
// the limit plus 2 ms.
func TestCWRPlusPipeRoom(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	const (
		limitMs = 10.8 + 2
		settled = time.Second
	)
	for _, tc := range []struct {
		options string
		holds   bool
	}{
		{`{}`, true},
		{`{ pipe_room = false }`, false},
	} {
		t.Run(tc.options, func(t *testing.T) {
			doc := prioBesideBulkDoc("piperoom", "5s", rtt20x100Paths("0.05%", `"1bdp"`), cwrPlusTransport(tc.options, ""), false)
			dir := runDoc(t, "piperoom.toml", doc)
			late, n, worst := lateMessages(t, dir, settled, limitMs)
			t.Logf("%d of %d messages after %v later than %.1f ms (worst %.1f ms)", late, n, settled, limitMs, worst)
			if n < 75 {
				t.Fatalf("%d messages after %v, want about 80", n, settled)
			}
			if holds := late == 0; holds != tc.holds {
				t.Errorf("no late message: %v, want %v", holds, tc.holds)
			}
		})
	}
}

// TestCWRPlusRateProbe holds cwr-plus's rate_probe (off by default) on the real core in
// the simulator at a lossless point of the robustness grid (2 x
// 100 Mbit/s at 20 and 100 ms RTT, 50-packet queues, cubic, 10 kB every
// 50 ms beside bulk), 20 s: path 1's first slow start ends in its short
// queue well below the bottleneck's rate, and the cap at that estimate
// grows only by what it lets through (RateCapSlack of a 100 ms round
// trip). With the probe the estimate grows while the path shows no
// queue, and the bulk data carry at least 129 Mbit/s (132.5); without it
// 125.3.
func TestCWRPlusRateProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	for _, tc := range []struct {
		options string
		holds   bool
	}{
		{`{ rate_probe = true }`, true},
		{`{}`, false},
	} {
		t.Run(tc.options, func(t *testing.T) {
			doc := prioBesideBulkDoc("rateprobe", "20s", rtt20x100Paths("0%", "75000"), cwrPlusTransport(tc.options, "congestion = \"cubic\"\n"), false)
			dir := runDoc(t, "rateprobe.toml", doc)
			gp := bulkGoodput(t, dir)
			t.Logf("bulk goodput %.1f Mbit/s", gp)
			if holds := gp >= 129; holds != tc.holds {
				t.Errorf("bulk goodput >= 129 Mbit/s: %v, want %v", holds, tc.holds)
			}
		})
	}
}
