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
