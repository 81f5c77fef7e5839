package trafficgen

import (
	"math"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

func TestHeaderRoundTrip(t *testing.T) {
	h := Header{Source: 3, Flags: FlagBulk, Seq: 77, Length: 1 << 40, Reply: 9, Created: time.Unix(1700000000, 123456789)}
	b := h.Append(nil)
	if len(b) != HeaderLen {
		t.Fatalf("header of %d bytes", len(b))
	}
	got, err := ParseHeader(b)
	if err != nil || got != h && !(got.Created.Equal(h.Created) && got.Seq == h.Seq) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range [][]byte{nil, b[:HeaderLen-1], append([]byte{0, 0}, b[2:]...)} {
		if _, err := ParseHeader(bad); err == nil {
			t.Fatalf("accepted %x", bad)
		}
	}
	// A bounded message shorter than its header is malformed.
	short := Header{Length: 10, Reply: 1}
	if _, err := ParseHeader(short.Append(nil)); err == nil {
		t.Fatal("accepted a message shorter than its header")
	}
}

func TestDistribution(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 1000; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	d := Distribution(ds)
	want := Dist{N: 1000, Min: 1, P50: 500, P90: 900, P99: 990, P999: 999, Max: 1000, Mean: 500.5}
	if *d != want {
		t.Fatalf("%+v", *d)
	}
	if Distribution(nil) != nil {
		t.Fatal("distribution of nothing")
	}
	one := Distribution([]time.Duration{25 * time.Millisecond})
	if one.P50 != 25 || one.P999 != 25 {
		t.Fatalf("%+v", *one)
	}
}

func TestJitter(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		ds   []time.Duration
		want float64
	}{
		{[]time.Duration{10 * ms, 10 * ms, 10 * ms}, 0},
		{[]time.Duration{10 * ms, 20 * ms}, 10.0 / 15},
		{[]time.Duration{10 * ms, 20 * ms, 10 * ms, 20 * ms}, 10.0 / 15},
	}
	for _, tc := range tests {
		if got := Jitter(tc.ds); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Jitter(%v) = %v, want %v", tc.ds, got, tc.want)
		}
	}
	if !math.IsNaN(Jitter([]time.Duration{ms})) {
		t.Error("jitter of one delay")
	}
}

// TestCwndGrowthCA checks the Table I computation on a synthetic trace:
// slow start (ignored), congestion avoidance growing 1350 bytes per 50 ms,
// a recovery period (ignored), and congestion avoidance again.
func TestCwndGrowthCA(t *testing.T) {
	t0 := time.Unix(0, 0)
	var s []PathSample
	add := func(at time.Duration, cwnd uint64, state string) {
		s = append(s, PathSample{At: t0.Add(at), Vantage: "server", PathMetrics: core.PathMetrics{PathID: 1, CongestionWindow: cwnd, CongestionState: state}})
	}
	ms := time.Millisecond
	add(0, 13500, "slow_start")
	add(100*ms, 200000, "slow_start")
	add(150*ms, 100000, "recovery")
	add(200*ms, 100000, "congestion_avoidance")
	for i := 1; i <= 20; i++ { // 1350 bytes per 50 ms for a second
		add(200*ms+time.Duration(i)*50*ms, 100000+uint64(i)*1350, "congestion_avoidance")
	}
	add(1250*ms, 60000, "recovery")
	add(1400*ms, 60000, "congestion_avoidance")
	add(1900*ms, 60000+6750, "congestion_avoidance") // 1350 per 100 ms
	// Another path and vantage do not count.
	s = append(s, PathSample{At: t0.Add(2 * time.Second), Vantage: "client", PathMetrics: core.PathMetrics{PathID: 1, CongestionWindow: 1, CongestionState: "congestion_avoidance"}})
	got := CwndGrowthCA(s, "server", 1, 50*time.Millisecond)
	// (27000 + 6750) bytes over (1.0 + 0.5) s, times 50 ms.
	want := (27000.0 + 6750) / 1.5 * 0.05
	if math.Abs(got-want) > 1e-6 {
		t.Fatalf("growth %v, want %v", got, want)
	}
	if g := CwndGrowthCA(s, "server", 7, 50*time.Millisecond); g != 0 {
		t.Fatalf("growth %v of a path without samples", g)
	}
}
