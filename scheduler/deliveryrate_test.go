package scheduler

import (
	"testing"
	"time"
)

// TestDeliveryRate checks cwr-plus's delivery-rate estimate on samples
// whose rates are computed by hand (minimum RTT 40 ms, so samples are kept
// at least 5 ms apart and a rate spans at least 40 ms).
func TestDeliveryRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := &PathInfo{MinRTT: 40 * time.Millisecond, HasRTTSample: true}
	var r deliveryRate
	steps := []struct {
		atMS  int
		acked uint64
		kept  int     // samples kept after it
		max   float64 // bytes per second after it
	}{
		{0, 0, 1, 0},
		{3, 1000, 1, 0},        // 3 ms after the last kept: not kept
		{5, 5000, 2, 0},        // kept; nothing 40 ms old yet
		{20, 20000, 3, 0},      //
		{40, 50000, 4, 1.25e6}, // against 0 ms: 50,000 B / 0.040 s
		{45, 52000, 5, 1.25e6}, // against 5 ms: 47,000 / 0.040 = 1.175e6, below the max
		{60, 100000, 6, 2e6},   // against 20 ms: 80,000 / 0.040
		{64, 200000, 6, 2e6},   // 4 ms after the last kept: not kept
	}
	for _, s := range steps {
		p.BytesAcked = s.acked
		r.sample(t0.Add(time.Duration(s.atMS)*time.Millisecond), p)
		if r.n != s.kept || r.max != s.max {
			t.Fatalf("at %d ms: %d samples, max %g B/s; want %d, %g", s.atMS, r.n, r.max, s.kept, s.max)
		}
	}
	// The ring keeps its newest 16: 20 more samples 5 ms apart at 1e6
	// B/s (5,000 bytes each) leave 16, and the max stays 2e6.
	for k := 1; k <= 20; k++ {
		p.BytesAcked = 100000 + uint64(k)*5000
		r.sample(t0.Add(time.Duration(60+5*k)*time.Millisecond), p)
	}
	if r.n != 16 || r.max != 2e6 {
		t.Fatalf("after 20 more: %d samples, max %g; want 16, 2e6", r.n, r.max)
	}
	// Then 3e6 B/s for 40 ms (15,000 bytes per 5 ms): the estimate is
	// measured against the sample 40 ms before, across the ring's wrap.
	base := p.BytesAcked
	for k := 1; k <= 8; k++ {
		p.BytesAcked = base + uint64(k)*15000
		r.sample(t0.Add(time.Duration(160+5*k)*time.Millisecond), p)
	}
	if r.max != 3e6 {
		t.Fatalf("after 40 ms at 3e6 B/s: max %g", r.max)
	}
	// Without an RTT sample nothing is recorded.
	var fresh deliveryRate
	fresh.sample(t0, &PathInfo{MinRTT: 40 * time.Millisecond, BytesAcked: 1})
	if fresh.n != 0 {
		t.Fatalf("sample without an RTT sample kept")
	}
}
