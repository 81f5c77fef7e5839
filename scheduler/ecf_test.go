package scheduler

import (
	"reflect"
	"testing"
	"time"
)

// TestECF checks Algorithm 1's decisions on hand-made states. Unless a
// case says otherwise: the fast path 0 has srtt 10 ms, rttvar 1 ms and a
// full window of 13500 bytes; the slow path 1 has srtt 40 ms, rttvar 2 ms
// and an empty window of 27000 bytes; so δ = 2 ms, rtt_s + δ = 42 ms and
// 2·rtt_f + δ = 22 ms. k is the background bytes waiting.
func TestECF(t *testing.T) {
	ms := time.Millisecond
	fast := path(0, 10*ms, 13500, 13500)
	fast.RTTVar = 1 * ms
	slow := path(1, 40*ms, 27000, 0)
	slow.RTTVar = 2 * ms
	fastRoom := fast
	fastRoom.BytesInFlight = 0
	fastFailed := fastRoom
	fastFailed.Failed = true
	slowFull := slow
	slowFull.BytesInFlight = 27000
	slowVar := slow
	slowVar.RTTVar = 10 * ms
	slowNear := slow
	slowNear.SRTT = 15 * ms
	tests := []struct {
		name         string
		paths        []PathInfo
		k            uint64
		waiting      bool
		want         []uint64
		waitsNow     bool
		proportional bool
	}{
		// x_f = max(1350, 13500): n = 2; 20 < 42, and x_s = 27000:
		// (27000/27000)·40 = 40 ≥ 22: a single RTT of the slow path is
		// already too long, wait.
		{"little data waits for fast", []PathInfo{fast, slow}, 1350, false, nil, true, false},
		// transfer_time = proportional: n = 1 + 1350/13500 = 1.1; 11 <
		// 42, but (1350/27000)·40 = 2 < 22: slow.
		{"little data goes on slow (proportional)", []PathInfo{fast, slow}, 1350, false, []uint64{1}, false, true},
		// rtt_s = 15 ms: n·rtt_f = 20 ≥ 15 + 2: slow, waiting cleared.
		{"little data on a slow path nearly as fast", []PathInfo{fast, slowNear}, 1350, false, []uint64{1}, false, false},
		// n = 1 + 27000/13500 = 3; 30 < 42 and (27000/27000)·40 =
		// 40 ≥ 22: wait for the fast path.
		{"wait for fast", []PathInfo{fast, slow}, 27000, false, nil, true, false},
		// Waiting: n = 1 + 67500/13500 = 6; 60 ≥ 1.25·42 = 52.5:
		// slow, waiting cleared.
		{"much data goes on slow", []PathInfo{fast, slow}, 67500, true, []uint64{1}, false, false},
		// n = 1 + 47250/13500 = 4.5; 45 ≥ 42: slow.
		{"no hysteresis when not waiting", []PathInfo{fast, slow}, 47250, false, []uint64{1}, false, false},
		// waiting: 45 < 1.25·42 = 52.5 and (47250/27000)·40 = 70 ≥
		// 22: keep waiting.
		{"hysteresis while waiting", []PathInfo{fast, slow}, 47250, true, nil, true, false},
		// δ = 10 ms: 45 < 40 + 10 = 50 and 70 ≥ 2·10 + 10 = 30: wait.
		{"rtt variation counts", []PathInfo{fast, slowVar}, 47250, false, nil, true, false},
		{"fast with room", []PathInfo{fastRoom, slow}, 27000, false, []uint64{0}, false, false},
		{"failed fast avoided", []PathInfo{fastFailed, slow}, 27000, false, []uint64{1}, false, false},
		{"no room anywhere", []PathInfo{fast, slowFull}, 54000, false, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &ECF{waiting: tt.waiting, proportional: tt.proportional}
			w := Work{Class: ClassBackground, Size: 1350, Waiting: Waiting{BackgroundBytes: tt.k}}
			got := e.Select(time.Time{}, tt.paths, w, nil)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if tt.want != nil && tt.want[0] == 0 || tt.want == nil && !tt.waitsNow {
				return // waiting left as it was
			}
			if e.waiting != tt.waitsNow {
				t.Fatalf("waiting = %v, want %v", e.waiting, tt.waitsNow)
			}
		})
	}
}

// TestBLEST checks BLEST's decisions on hand-made states. Unless a case
// says otherwise: the fast path 0 has srtt 10 ms and a full window of
// 13500 bytes (10 packets of 1350), the slow path 1 srtt 40 ms and an
// empty window; the packet is 1350 bytes. Then r = 4 and X = 1350·(10 +
// 3/2)·4 = 62100, and the window left is SendWindow + 13500 − 1350 =
// SendWindow + 12150: BLEST waits iff SendWindow < 49950.
func TestBLEST(t *testing.T) {
	ms := time.Millisecond
	fast := path(0, 10*ms, 13500, 13500)
	slow := path(1, 40*ms, 27000, 0)
	slowEqual := path(1, 10*ms, 27000, 0)
	fastRoom := fast
	fastRoom.BytesInFlight = 0
	fastFailed := fastRoom
	fastFailed.Failed = true
	fastNoRTT := fast
	fastNoRTT.SRTT = 0
	tests := []struct {
		name   string
		paths  []PathInfo
		window uint64
		want   []uint64
	}{
		{"window large: slow", []PathInfo{fast, slow}, 1 << 20, []uint64{1}},
		{"window exactly enough: slow", []PathInfo{fast, slow}, 49950, []uint64{1}},
		{"window one byte short: wait", []PathInfo{fast, slow}, 49949, nil},
		// Without f's window growth (r−1)/2 the estimate would be
		// 1350·10·4 = 54000 ≤ 45000 + 12150 = 57150; with it, 62100 >
		// 57150.
		{"window growth counts", []PathInfo{fast, slow}, 45000, nil},
		// r = 1: X = 13500 > SendWindow + 12150 iff SendWindow < 1350.
		{"equal rtts, window for the packet", []PathInfo{fast, slowEqual}, 1350, []uint64{1}},
		{"equal rtts, no window", []PathInfo{fast, slowEqual}, 0, nil},
		{"fast with room", []PathInfo{fastRoom, slow}, 0, []uint64{0}},
		{"failed fast avoided", []PathInfo{fastFailed, slow}, 0, []uint64{1}},
		{"fast without rtt: slow", []PathInfo{fastNoRTT, slow}, 0, []uint64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Work{Class: ClassBackground, Size: 1350, Waiting: Waiting{BackgroundBytes: 1 << 20, SendWindow: tt.window}}
			got := (&BLEST{}).Select(time.Time{}, tt.paths, w, nil)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
