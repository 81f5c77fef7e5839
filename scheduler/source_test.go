package scheduler

import (
	"reflect"
	"testing"
	"time"
)

func TestSourceDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	tests := []struct {
		name     string
		src      Source
		from, to time.Duration
		want     []time.Duration
	}{
		{"window holds two", Source{Interval: 50 * ms, Next: t0.Add(10 * ms)}, 0, 100 * ms, []time.Duration{10 * ms, 60 * ms}},
		{"from is exclusive, to inclusive", Source{Interval: 50 * ms, Next: t0.Add(10 * ms)}, 10 * ms, 60 * ms, []time.Duration{60 * ms}},
		{"next in the past is skipped forward", Source{Interval: 50 * ms, Next: t0}, 1000 * ms, 1100 * ms, []time.Duration{1050 * ms, 1100 * ms}},
		{"single message", Source{Next: t0.Add(5 * ms)}, 0, time.Second, []time.Duration{5 * ms}},
		{"single message outside", Source{Next: t0.Add(5 * ms)}, 5 * ms, time.Second, nil},
		{"nothing due", Source{Interval: 50 * ms, Next: t0.Add(200 * ms)}, 0, 100 * ms, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []time.Duration
			tc.src.Due(t0.Add(tc.from), t0.Add(tc.to), func(at time.Time) { got = append(got, at.Sub(t0)) })
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("due %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWireBytes(t *testing.T) {
	p := &PathInfo{MaxPacketSize: 1350, PacketOverhead: 50}
	tests := []struct{ size, want int }{
		{0, 0}, {1, 51}, {1300, 1350}, {1301, 1401}, {10000, 10000 + 8*50},
	}
	for _, tc := range tests {
		if got := WireBytes(tc.size, p); got != tc.want {
			t.Errorf("WireBytes(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

func TestCWRNextWakeup(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	for _, s := range []interface {
		Waker
		SourceAware
	}{NewCWR(), NewCWRRed()} {
		if w := s.NextWakeup(t0); !w.IsZero() {
			t.Fatalf("wake-up %v without sources", w)
		}
		s.Announce(Source{ID: 1, Size: 1000, Interval: 50 * ms, Next: t0.Add(20 * ms)})
		s.Announce(Source{ID: 2, Size: 1000, Interval: 30 * ms, Next: t0.Add(40 * ms)})
		// Each reservation ends ReservationGrace after its message's
		// generation time (nothing was reserved here, so a message in
		// the past holds nothing).
		g := ReservationGrace
		tests := []struct{ now, want time.Duration }{
			{0, 20*ms + g}, {20 * ms, 40*ms + g}, {40 * ms, 70*ms + g}, {71 * ms, 100*ms + g},
		}
		for _, tc := range tests {
			if got := s.NextWakeup(t0.Add(tc.now)); !got.Equal(t0.Add(tc.want)) {
				t.Errorf("NextWakeup(%v) = %v, want %v", tc.now, got.Sub(t0), tc.want)
			}
		}
	}
}
