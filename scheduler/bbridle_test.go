package scheduler_test

import (
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
	dir := runDoc(t, "bbr-idle.toml", `name = "bbr-idle"
duration = "10s"
seed = 1
[[path]]
rate = "100Mbit"
rtt = "50ms"
queue = "1bdp"
[[path]]
rate = "100Mbit"
rtt = "50ms"
queue = "1bdp"
[transport]
path_scheduler = "cwr-plus"
stream_scheduler = "priority-fifo"
congestion = "bbr"
[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"
priority = true
[[source]]
name = "background"
kind = "bulk"
[output]
series = false
`)
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
