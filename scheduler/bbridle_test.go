package scheduler_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestCWRPlusBBRIdlePath: cwr-plus's stagger_startup keeps path 1 idle
// while path 0 is in its start-up (scheduler.IdleKeeper), and path 1's
// bbr counts those rounds as application limited. The base point
// without loss (2 x 100 Mbit/s, 50 ms RTT, 1 BDP queues, 10 kB every
// 50 ms beside bulk), 10 s: bulk goodput at least 170 Mbit/s and no
// message after the first 3 s later than the point's limit (25.8 ms)
// plus 2 ms. Without the idle path counted so, path 1's bbr leaves its
// start-up on the rounds of priority data alone, with a bandwidth
// estimate it raises by ProbeBW's 1.25 gain a cycle: the bulk goodput
// stays near half of lowrtt's (52.5 % over 30 s on the robustness grid
// before the rule; 105 Mbit/s here). Counting every path the scheduler
// holds data off as application limited (its rate cap's holds too) is
// wrong the other way: bbr's start-ups then never end, and their queues
// make 41 of the 140 messages late (worst 228 ms).
func TestCWRPlusBBRIdlePath(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	const (
		limitMs = 25.8 + 2
		settled = 3 * time.Second
	)
	dir := runDoc(t, "bbr-idle.toml", prioBesideBulkDoc("bbr-idle", "10s", basePaths1BDP, `path_scheduler = "cwr-plus"
stream_scheduler = "priority-fifo"
congestion = "bbr"
`, false))
	late, n, worst := lateMessages(t, dir, settled, limitMs)
	gp := bulkGoodput(t, dir)
	t.Logf("%d of %d messages after %v later than %.1f ms (worst %.1f ms); bulk goodput %.1f Mbit/s", late, n, settled, limitMs, worst, gp)
	if n < 130 {
		t.Fatalf("%d messages after %v, want about 140", n, settled)
	}
	if late > 0 || gp < 170 {
		t.Errorf("%d late messages, bulk goodput %.1f Mbit/s; want none and at least 170", late, gp)
	}
}

// TestBBRSendBufferLimited: a bulk sender whose send buffer (4 MiB) is
// full of unacknowledged data has more to write than the buffer takes;
// it is not application limited. At 2 x 100 Mbit/s with 20 and 100 ms
// RTTs and 1 BDP queues (lowrtt, bbr, 10 kB every 50 ms beside bulk) the
// 100 ms path's bbr then leaves Startup within 3 s (1.68 s). Counted as
// application limited, it stays in Startup for the whole run with a
// standing queue of a BDP (latest RTT 200 ms), and bulk goodput falls
// from 171 to 141 Mbit/s (15 s).
func TestBBRSendBufferLimited(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	dir := runDoc(t, "bbr-sndbuf.toml", prioBesideBulkDoc("bbr-sndbuf", "4s", `[[path]]
rate = "100Mbit"
rtt = "20ms"
queue = "1bdp"
[[path]]
rate = "100Mbit"
rtt = "100ms"
queue = "1bdp"
`, `path_scheduler = "lowrtt"
stream_scheduler = "priority-fifo"
congestion = "bbr"
`, true))
	rows, col := readCSV(t, filepath.Join(dir, "paths.csv"))
	left := -1.0
	for _, r := range rows[1:] {
		if r[col["vantage"]] == "server" && r[col["path_id"]] == "1" && r[col["state"]] != "startup" {
			left, _ = strconv.ParseFloat(r[col["time_ms"]], 64)
			break
		}
	}
	t.Logf("path 1 (100 ms) left startup at %.0f ms", left)
	if left < 0 || left > 3000 {
		t.Errorf("path 1's bbr left startup at %.0f ms (-1: never in 4 s), want within 3 s", left)
	}
}
