package scheduler

import (
	"testing"
	"time"
)

// TestCWRPlusRepay checks rule repay by hand: path 7 borrowed 2,700 bytes
// beyond its window; background data leave of its window none of them
// with "none", all of them with "rtt", and all of them with "queue" only
// while the path shows a queue (its latest RTT more than QueueGuard above
// its minimum with two packets or more in flight).
func TestCWRPlusRepay(t *testing.T) {
	ms := time.Millisecond
	idle := path(7, 50*ms, 40_000, 30_000)
	idle.HasRTTSample, idle.MinRTT, idle.LatestRTT = true, 50*ms, 51*ms
	queued := idle
	queued.LatestRTT = 60 * ms
	for _, tc := range []struct {
		repay string
		p     PathInfo
		want  uint64
	}{
		{RepayNone, idle, 0},
		{RepayNone, queued, 0},
		{RepayRTT, idle, 2700},
		{RepayRTT, queued, 2700},
		{RepayQueue, idle, 0},
		{RepayQueue, queued, 2700},
	} {
		s, err := NewPathSchedulerWith("cwr-plus", map[string]any{OptRepay: tc.repay})
		if err != nil {
			t.Fatal(err)
		}
		c := s.(*CWRPlus)
		c.ledger.borrowed[7] = 2700
		if got := c.owed(&tc.p); got != tc.want {
			t.Errorf("repay = %q, latest RTT %v: owed %d, want %d", tc.repay, tc.p.LatestRTT, got, tc.want)
		}
	}
}
