package acks

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

func TestRanges(t *testing.T) {
	tests := []struct {
		name string
		pns  []uint64
		want []Range
	}{
		{"in order", []uint64{0, 1, 2, 3}, []Range{{0, 3}}},
		{"gap", []uint64{0, 1, 5, 6}, []Range{{5, 6}, {0, 1}}},
		{"fill gap", []uint64{0, 2, 1}, []Range{{0, 2}}},
		{"reverse", []uint64{5, 4, 3}, []Range{{3, 5}}},
		{"join below", []uint64{10, 7, 8}, []Range{{10, 10}, {7, 8}}},
		{"join above", []uint64{10, 7, 9}, []Range{{9, 10}, {7, 7}}},
		{"duplicates", []uint64{1, 1, 3, 3}, []Range{{3, 3}, {1, 1}}},
		{"middle", []uint64{0, 10, 5}, []Range{{10, 10}, {5, 5}, {0, 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(25 * time.Millisecond)
			for _, pn := range tc.pns {
				tr.OnPacket(t0, pn, true, NotECT)
			}
			if got := tr.Ranges(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ranges %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRandomAgainstSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for iter := 0; iter < 200; iter++ {
		tr := NewTracker(time.Millisecond)
		seen := map[uint64]bool{}
		for range 100 {
			pn := uint64(r.IntN(150))
			if tr.IsDuplicate(pn) != seen[pn] {
				t.Fatalf("IsDuplicate(%d) = %v, want %v", pn, !seen[pn], seen[pn])
			}
			tr.OnPacket(t0, pn, true, NotECT)
			seen[pn] = true
		}
		rs := tr.Ranges()
		if len(rs) > MaxRanges {
			t.Fatalf("%d ranges", len(rs))
		}
		for i, rg := range rs {
			if rg.Smallest > rg.Largest {
				t.Fatalf("bad range %v", rg)
			}
			if i > 0 && rs[i-1].Smallest <= rg.Largest+1 {
				t.Fatalf("ranges not disjoint and separated: %v", rs)
			}
			for pn := rg.Smallest; pn <= rg.Largest; pn++ {
				if !seen[pn] {
					t.Fatalf("range %v reports unseen %d", rg, pn)
				}
			}
		}
		// Everything seen and not below the floor is in a range.
		for pn := range seen {
			if pn < tr.floor {
				continue
			}
			found := false
			for _, rg := range rs {
				if pn >= rg.Smallest && pn <= rg.Largest {
					found = true
				}
			}
			if !found {
				t.Fatalf("%d missing from %v", pn, rs)
			}
		}
	}
}

func TestAckTiming(t *testing.T) {
	const mad = 25 * time.Millisecond
	tests := []struct {
		name     string
		maxDelay time.Duration
		pkts     []struct {
			pn        uint64
			eliciting bool
		}
		want time.Time
	}{
		{"one eliciting waits max_ack_delay", mad, []struct {
			pn        uint64
			eliciting bool
		}{{0, true}}, t0.Add(mad)},
		{"two eliciting: at once", mad, []struct {
			pn        uint64
			eliciting bool
		}{{0, true}, {1, true}}, t0},
		{"non-eliciting: none", mad, []struct {
			pn        uint64
			eliciting bool
		}{{0, false}, {1, false}}, time.Time{}},
		{"gap: at once", mad, []struct {
			pn        uint64
			eliciting bool
		}{{0, false}, {2, true}}, t0},
		{"handshake space: at once", 0, []struct {
			pn        uint64
			eliciting bool
		}{{0, true}}, t0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(tc.maxDelay)
			for _, p := range tc.pkts {
				tr.OnPacket(t0, p.pn, p.eliciting, NotECT)
			}
			if got := tr.AckDeadline(); !got.Equal(tc.want) {
				t.Fatalf("deadline %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAckSentAndAcked(t *testing.T) {
	tr := NewTracker(25 * time.Millisecond)
	for _, pn := range []uint64{0, 1, 2, 5, 6, 9} {
		tr.OnPacket(t0, pn, true, NotECT)
	}
	if !tr.HasNewInfo() || tr.AckDeadline().IsZero() {
		t.Fatal("ACK should be due")
	}
	if d := tr.AckDelay(t0.Add(7 * time.Millisecond)); d != 7*time.Millisecond {
		t.Fatalf("ack delay %v", d)
	}
	tr.OnAckSent(t0)
	if tr.HasNewInfo() || !tr.AckDeadline().IsZero() {
		t.Fatal("ACK still due after sending")
	}
	// Our ACK (largest 6) was acknowledged: ranges below the one holding
	// 5..6 are forgotten, duplicates still recognised.
	tr.OnAckAcked(6)
	want := []Range{{9, 9}, {5, 6}}
	if got := tr.Ranges(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ranges %v, want %v", got, want)
	}
	for _, pn := range []uint64{0, 1, 2, 5, 9} {
		if !tr.IsDuplicate(pn) {
			t.Fatalf("%d not a duplicate", pn)
		}
	}
	if tr.IsDuplicate(7) || tr.IsDuplicate(10) {
		t.Fatal("unreceived packet treated as duplicate")
	}
}

func TestMaxRanges(t *testing.T) {
	tr := NewTracker(time.Millisecond)
	for i := uint64(0); i < 3*MaxRanges; i++ {
		tr.OnPacket(t0, 2*i, true, NotECT)
	}
	if n := len(tr.Ranges()); n != MaxRanges {
		t.Fatalf("%d ranges, want %d", n, MaxRanges)
	}
	if lr, _ := tr.LargestReceived(); lr != 2*(3*MaxRanges-1) {
		t.Fatalf("largest %d", lr)
	}
}

func TestECN(t *testing.T) {
	tr := NewTracker(time.Millisecond)
	tr.OnPacket(t0, 0, true, ECT0)
	tr.OnPacket(t0, 1, false, CE)
	e0, e1, ce, ok := tr.ECNCounts()
	if !ok || e0 != 1 || e1 != 0 || ce != 1 {
		t.Fatalf("ecn %d %d %d %v", e0, e1, ce, ok)
	}
}
