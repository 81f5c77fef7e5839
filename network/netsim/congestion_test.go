package netsim

import (
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/mpquic/core"
)

// TestControllersEndToEnd runs a 5 s download over two 20 Mbit/s paths
// (50 ms RTT, 0.1 % loss each way) with every registered congestion
// controller at the server: each must complete its handshake, use both
// paths' capacity to a fair degree (at least a quarter of the 25 MB the
// paths can carry) and stay within the simulator's step limit (no event
// storm from a controller's pacing or timers).
func TestControllersEndToEnd(t *testing.T) {
	link := Symmetric(LinkConfig{Rate: 20e6, Delay: 25 * time.Millisecond, Loss: Bernoulli{P: 0.001}})
	for _, name := range congestion.Names() {
		t.Run(name, func(t *testing.T) {
			got := bulkWith(t, 1, []PathSpec{link, link}, 5*time.Second, core.Config{Congestion: name})
			t.Logf("%s: %.1f Mbit/s", name, float64(got)*8/5/1e6)
			if got < 25_000_000/4 {
				t.Errorf("%s: %d bytes in 5 s over 2 x 20 Mbit/s", name, got)
			}
		})
	}
}

// TestHyStartStartupOvershoot downloads for 3 s over one path of
// 50 Mbit/s and 30 ms one way (a BDP of 375 kB) with a deep queue of four
// BDPs, newreno at the server, without and with pacing: standard slow
// start fills the queue before its first loss; HyStart++
// (transport.slow_start = "hystart++") sees the standing queue's delay in
// a round's minimum RTT, moves to Conservative Slow Start and loses at most
// half as many packets at the bottleneck, carrying as many bytes.
//
// With the queue of one BDP that experiments/failover.toml has, it changes
// little (docs/results/path-failure.md, "Path failure and handover", "HyStart++ traced"):
// slow start's flights leave with idle gaps between them, paced or not, so
// the first packets of a round find the queue (nearly) empty and the
// round's minimum RTT stays near the base RTT until the round that
// overflows the queue; when a round's first samples do show the queue, a
// later packet of the same round, sent after such a gap, brings the
// round's minimum back below the baseline and ends Conservative Slow
// Start as spurious (RFC 9406 Section 4.2).
func TestHyStartStartupOvershoot(t *testing.T) {
	link := Symmetric(LinkConfig{Rate: 50e6, Delay: 30 * time.Millisecond, QueueBytes: 4 * 375_000})
	for _, pacing := range []bool{false, true} {
		run := func(ss string) (int, uint64) {
			got, topo := bulkTopo(t, 1, []PathSpec{link}, 3*time.Second, core.Config{SimNullProtection: true, SlowStart: ss, Pacing: pacing})
			return got, topo.Down[0].DroppedQueue
		}
		stdBytes, stdDrops := run("standard")
		hsBytes, hsDrops := run("hystart++")
		t.Logf("pacing %v: standard: %d bytes, %d drops; hystart++: %d bytes, %d drops", pacing, stdBytes, stdDrops, hsBytes, hsDrops)
		if stdDrops == 0 {
			t.Fatalf("pacing %v: standard slow start lost nothing: the test no longer shows an overshoot", pacing)
		}
		if hsDrops*2 > stdDrops {
			t.Errorf("pacing %v: hystart++ dropped %d packets at the bottleneck, standard %d: want at most half", pacing, hsDrops, stdDrops)
		}
		if float64(hsBytes) < 0.95*float64(stdBytes) {
			t.Errorf("pacing %v: hystart++ carried %d bytes, standard %d", pacing, hsBytes, stdBytes)
		}
	}
}
