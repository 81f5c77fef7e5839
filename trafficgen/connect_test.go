package trafficgen

import (
	"math"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

// TestStopAndWaitConnectTimes checks the stop-and-wait connection metrics on
// a hand-made log: the connection starts at 0, publishes of 64 bytes are
// generated at 40 ms (after a handshake) and written whole at 40.5 ms, the
// first acknowledged at 65.25 ms, the second at 90 ms; the third times out.
//
//	connect_to_first_ms     = 40.5 - 0        = 40.5
//	connect_to_first_ack_ms = 65.25 - 0       = 65.25
//	completion_ratio        = 2 / 3
//	completion_time_ms      = +Inf (not every publish was acknowledged)
func TestStopAndWaitConnectTimes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	tests := []struct {
		name                 string
		written, replied     [3]float64 // -1: never
		wantFirst, wantAck   float64
		wantRatio            float64
		wantCompletionFinite bool
	}{
		{"third times out", [3]float64{40.5, 66, 91}, [3]float64{65.25, 90, -1}, 40.5, 65.25, 2.0 / 3, false},
		// 0-RTT: written at the connection's start.
		{"all acknowledged", [3]float64{0, 30, 60}, [3]float64{26.5, 55, 80}, 0, 26.5, 1, true},
		{"first lost", [3]float64{40.5, 66, 91}, [3]float64{-1, 90, 120}, 40.5, math.Inf(1), 2.0 / 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srcs := []experiment.Source{{Name: "pub", Kind: experiment.KindStopAndWait, Count: 3, Size: 64}}
			r := NewRecorder(RecorderConfig{Sources: srcs, Start: t0, Duration: time.Second, Interval: 100 * time.Millisecond})
			r.ConnectStart = t0
			e := &experiment.Experiment{Name: "saw", Duration: time.Second, Drain: time.Second, Sources: srcs, Repeat: 1}
			for i := range 3 {
				m := r.generated(0, uint32(i), at(tt.written[i]), 64, 1, false, false)
				m.Written = at(tt.written[i])
				if tt.replied[i] >= 0 {
					r.replied(m, at(tt.replied[i]))
				} else {
					r.failWith(m, FailTimeout)
				}
			}
			r.Finish()
			ss := r.Summarise(e, SummaryInput{}).Sources[0]
			if ss.ConnectToFirstMS == nil || *ss.ConnectToFirstMS != tt.wantFirst {
				t.Errorf("connect_to_first_ms = %v, want %v", ss.ConnectToFirstMS, tt.wantFirst)
			}
			if ss.ConnectToFirstAckMS == nil || float64(*ss.ConnectToFirstAckMS) != tt.wantAck {
				t.Errorf("connect_to_first_ack_ms = %v, want %v", ss.ConnectToFirstAckMS, tt.wantAck)
			}
			if ss.CompletionRatio == nil || math.Abs(*ss.CompletionRatio-tt.wantRatio) > 1e-9 {
				t.Errorf("completion_ratio = %v, want %v", ss.CompletionRatio, tt.wantRatio)
			}
			if ss.CompletionTimeMS == nil || math.IsInf(float64(*ss.CompletionTimeMS), 1) == tt.wantCompletionFinite {
				t.Errorf("completion_time_ms = %v", ss.CompletionTimeMS)
			}
		})
	}
}
