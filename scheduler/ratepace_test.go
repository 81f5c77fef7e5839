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

// gridPaths are two paths of the robustness grid with each path's loss
// and queue (a TOML value: "1bdp", or bytes): by default its Figure 6
// shape, 2 x 100 Mbit/s at 20 and 100 ms RTT; with shape (rate, path
// 0's RTT, path 1's RTT) another of the grid's shapes.
func gridPaths(loss, queue string, shape ...string) string {
	rate, rtt0, rtt1 := "100Mbit", "20ms", "100ms"
	if len(shape) == 3 {
		rate, rtt0, rtt1 = shape[0], shape[1], shape[2]
	}
	return fmt.Sprintf(`[[path]]
rate = %[3]q
rtt = %[4]q
loss = %[1]q
queue = %[2]s
[[path]]
rate = %[3]q
rtt = %[5]q
loss = %[1]q
queue = %[2]s
`, loss, queue, rate, rtt0, rtt1)
}

// lateCase is one run of a late-message test: the experiment's paths,
// the [transport] table's extra lines and cwr-plus's options, and whether
// no priority message created at or after from should complete later
// than limitMs.
type lateCase struct {
	options string
	holds   bool
}

// checkLate runs prioBesideBulkDoc for each case (name, duration, paths,
// extra [transport] lines) and checks that no message created at or
// after from is later than limitMs, and (minGoodput > 0) the bulk data
// carry at least minGoodput Mbit/s, exactly when the case holds, with at
// least minN such messages.
func checkLate(t *testing.T, name, duration, paths, extra string, from time.Duration, limitMs, minGoodput float64, minN int, cases []lateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.options, func(t *testing.T) {
			doc := prioBesideBulkDoc(name, duration, paths, cwrPlusTransport(tc.options, extra), false)
			dir := runDoc(t, name+".toml", doc)
			late, n, worst := lateMessages(t, dir, from, limitMs)
			gp := bulkGoodput(t, dir)
			t.Logf("%d of %d messages after %v later than %.1f ms (worst %.1f ms); bulk goodput %.1f Mbit/s", late, n, from, limitMs, worst, gp)
			if n < minN {
				t.Fatalf("%d messages after %v, want at least %d", n, from, minN)
			}
			if holds := late == 0 && gp >= minGoodput; holds != tc.holds {
				t.Errorf("no late message and bulk goodput >= %.0f Mbit/s: %v, want %v", minGoodput, holds, tc.holds)
			}
		})
	}
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
	checkLate(t, "ratepace", "3s", basePaths1BDP, "conn_window_follows_stream = false\n", 0, 25.8+2, 0, 55,
		[]lateCase{{`{}`, true}, {`{ rate_pace = false }`, false}})
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
	checkLate(t, "piperoom", "5s", gridPaths("0.05%", `"1bdp"`), "", time.Second, 10.8+2, 0, 75,
		[]lateCase{{`{}`, true}, {`{ pipe_room = false }`, false}})
}

// TestCWRPlusRateProbe holds cwr-plus's rate_probe on the real core in
// the simulator at a lossless point of the robustness grid (2 x
// 100 Mbit/s at 20 and 100 ms RTT, 50-packet queues, cubic, 10 kB every
// 50 ms beside bulk), 20 s: path 1's first slow start ends in its short
// queue well below the bottleneck's rate, and the cap at that estimate
// grows only by what it lets through (RateCapSlack of a 100 ms round
// trip). With the probe (path 1 is the slower path, which it probes) the
// estimate grows while the path shows no queue, and the bulk data carry at least 122 Mbit/s (125.3); without it
// 118.6. (With careful_start off, 132.3 and 125.3: path 0's careful
// start lets path 1 start at once, beside it, and end its slow start
// lower.)
func TestCWRPlusRateProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	for _, tc := range []struct {
		options string
		holds   bool
	}{
		{`{}`, true},
		{`{ rate_probe = false }`, false},
	} {
		t.Run(tc.options, func(t *testing.T) {
			doc := prioBesideBulkDoc("rateprobe", "20s", gridPaths("0%", "75000"), cwrPlusTransport(tc.options, "congestion = \"cubic\"\n"), false)
			dir := runDoc(t, "rateprobe.toml", doc)
			gp := bulkGoodput(t, dir)
			t.Logf("bulk goodput %.1f Mbit/s", gp)
			if holds := gp >= 122; holds != tc.holds {
				t.Errorf("bulk goodput >= 122 Mbit/s: %v, want %v", holds, tc.holds)
			}
		})
	}
}

// TestCWRPlusCarefulStart holds cwr-plus's careful_start on the real core
// in the simulator at lossless points of the robustness grid's Figure 6
// shape (2 x 100 Mbit/s at 20 and 100 ms RTT, newreno, 10 kB every 50 ms
// beside bulk, 6 s), from the start: path 0's first slow start doubles
// its window a round trip into its queue, and the message created at
// 180 ms waits behind it (27.8 ms with 1 BDP queues, 50.8 ms with 2,
// against a limit of 10.8 ms), while a copy on path 1 takes its 50 ms
// one-way delay. Started carefully, path 0 reaches its rate with under
// a millisecond of queue: no message is later than the limit plus 2 ms,
// and the bulk data still carry at least 150 Mbit/s over the 6 s.
func TestCWRPlusCarefulStart(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	for _, queue := range []string{`"1bdp"`, `"2bdp"`} {
		t.Run(queue, func(t *testing.T) {
			checkLate(t, "careful", "6s", gridPaths("0%", queue), "", 0, 10.8+2, 150, 115,
				[]lateCase{{`{}`, true}, {`{ careful_start = false }`, false}})
		})
	}
}

// TestCWRPlusCarefulDrain holds careful_start's option careful_drain
// (off by default) on the real core in the simulator (the robustness
// grid's 2 x 20 Mbit/s, 50 ms RTT, 2 BDP queues, newreno, lossless,
// 10 kB every 50 ms beside bulk, 3 s): path 0's first slow start
// overshoots into its 100 ms of queue while path 1, held by the stagger,
// carries the messages; once path 0's slow start ends, the stagger lets
// path 1 go, and its own slow start queues path 1 while path 0's
// overshoot still drains: two messages take up to 47.1 ms against a
// limit of 29 ms. With careful_drain path 1 holds what it has in flight, growing
// carefully, until path 0 has shown no queue, and no message is later
// than the limit plus 2 ms.
func TestCWRPlusCarefulDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	checkLate(t, "carefuldrain", "3s", gridPaths("0%", `"2bdp"`, "20Mbit", "50ms", "50ms"), "", 0, 29+2, 0, 55,
		[]lateCase{{`{ careful_drain = true }`, true}, {`{}`, false}})
}

// TestCWRPlusPipeRoomBBR holds pipe_room's rule for bbr on the real core
// in the simulator at a lossless point of the Figure 6 shape (2 x
// 100 Mbit/s at 20 and 100 ms RTT, 1 BDP queues, bbr, 10 kB every 50 ms
// beside bulk, 25 s): once in a while (about 21.7 s here) path 0 enters
// ProbeRTT, a window of four packets for 200 ms, and a message held out
// of it takes path 1, 40 ms beyond the limit (10.8 ms). Since path 1 is slower than path 0 by
// more than a queue, pipe_room lets the messages beyond ProbeRTT's window
// on path 0, which has no queue then: none later than the limit plus
// 2 ms after the first 2 s.
func TestCWRPlusPipeRoomBBR(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	checkLate(t, "piperoombbr", "25s", gridPaths("0%", `"1bdp"`), "congestion = \"bbr\"\n", 2*time.Second, 10.8+2, 0, 450,
		[]lateCase{{`{}`, true}, {`{ pipe_room = false }`, false}})
}
