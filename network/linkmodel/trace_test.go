package linkmodel

import (
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

// A trace-driven link sends at the trace's opportunities, 1500 bytes
// each, a packet at the one carrying its last byte, an opportunity's
// leftover to the packet behind it, none kept while idle; the trace
// repeats, also before the origin. Trace: 1, 2, 2, 5 ms (period 5 ms).
func TestTraceLink(t *testing.T) {
	tr, err := NewTrace(&experiment.Trace{MS: []int64{1, 2, 2, 5}})
	if err != nil {
		t.Fatal(err)
	}
	ms := func(v float64) int64 { return int64(v * float64(time.Millisecond)) }
	tests := []struct {
		name   string
		origin int64
		offers [][3]int64 // at, size, want departure (the delay is 10 ms)
	}{
		{"opportunities", 0, [][3]int64{
			{0, 1000, ms(1)},       // the 1 ms opportunity, 500 bytes left
			{0, 1000, ms(2)},       // those 500, then the first at 2 ms
			{0, 1500, ms(2)},       // 1000 left, then the second at 2 ms
			{ms(3), 1500, ms(5)},   // idle: the leftover is gone
			{ms(5), 100, ms(6)},    // the next period's 1 ms
			{ms(12), 100, ms(12)},  // idle until an opportunity at 10 + 2 ms
			{ms(12), 3000, ms(15)}, // 1400 left at 12 ms, the second 12 ms one, 100 at 15 ms
		}},
		{"before the origin", ms(10), [][3]int64{
			{ms(6), 100, ms(6)}, // the period before the origin: 10 - 5 + 1 ms
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLink(t, Config{Trace: tr, Delay: 10 * time.Millisecond, QueueBytes: 1 << 20}, 1)
			l.SetOrigin(tt.origin)
			for _, o := range tt.offers {
				v := l.Offer(o[0], int(o[1]))
				if !v.OK || v.Arrive != o[2]+ms(10) {
					t.Errorf("%d bytes at %v: %+v, want departure at %v", o[1], time.Duration(o[0]), v, time.Duration(o[2]))
				}
			}
		})
	}
}

// FromExperiment builds the trace of an experiment link; its queue of
// 1 BDP is of the trace's mean rate.
func TestTraceFromExperiment(t *testing.T) {
	l := experiment.Link{Trace: &experiment.Trace{MS: []int64{1, 2}}, QueueBDP: 1}
	l.Rate = l.Trace.MeanRate() // 2 x 1500 bytes in 2 ms: 12 Mbit/s
	c, err := FromExperiment(l, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if c.Trace == nil || c.Trace.Period != int64(2*time.Millisecond) || c.QueueBytes != 150000 {
		t.Errorf("config %+v", c)
	}
}
