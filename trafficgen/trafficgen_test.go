package trafficgen

import (
	"encoding/json"
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
	d := Distribution(ds, 0)
	want := Dist{N: 1000, Min: 1, P50: 500, P90: 900, P99: 990, P999: 999, Max: 1000, Mean: 500.5, MeanCompleted: 500.5}
	if *d != want {
		t.Fatalf("%+v", *d)
	}
	if Distribution(nil, 0) != nil {
		t.Fatal("distribution of nothing")
	}
	one := Distribution([]time.Duration{25 * time.Millisecond}, 0)
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
	if g := CwndGrowthCA(s, "server", 7, 50*time.Millisecond); !math.IsNaN(g) {
		t.Fatalf("growth %v of a path without samples", g)
	}
}

// TestCwndGrowthCAApplicationLimited: with newreno-cwl the controller
// reports the sender application limited between ACKs that grow the
// window (a reservation scheduler leaving window unused); those periods
// are congestion avoidance too. Here the window grows 1350 bytes every
// 100 ms for a second, each growth followed by 90 ms application limited:
// 675 bytes per 50 ms, where counting only the stretches reported as
// congestion_avoidance gave ten times that, above the one packet per RTT
// NewReno can grow. Application limited in slow start (below ssthresh)
// does not count.
func TestCwndGrowthCAApplicationLimited(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := time.Millisecond
	var s []PathSample
	add := func(at time.Duration, cwnd, ssthresh uint64, state string) {
		s = append(s, PathSample{At: t0.Add(at), Vantage: "server", PathMetrics: core.PathMetrics{PathID: 0,
			CongestionWindow: cwnd, SSThresh: ssthresh, CongestionState: state}})
	}
	const ss = 100000
	add(0, 20000, math.MaxUint64, "application_limited") // slow start, limited
	add(50*ms, 90000, ss, "slow_start")
	for i := range 10 {
		at := time.Second + time.Duration(i)*100*ms
		w := uint64(ss + i*1350)
		add(at, w, ss, "congestion_avoidance")
		add(at+10*ms, w+1350, ss, "congestion_avoidance")
		add(at+10*ms, w+1350, ss, "application_limited")
	}
	add(2*time.Second, ss+13500, ss, "congestion_avoidance")
	got := CwndGrowthCA(s, "server", 0, 50*ms)
	if want := 13500.0 / 1.0 * 0.05; math.Abs(got-want) > 1e-6 {
		t.Fatalf("growth %v bytes per RTT, want %v", got, want)
	}
}

// TestCwndGrowthCABBR: for bbr the congestion avoidance stretches are
// ProbeBW's. Startup, Drain and ProbeRTT do not count: ProbeBW from 1 s
// to 1.5 s grows 2700 bytes, ProbeRTT drops the window (not counted),
// ProbeBW from 2 s to 2.5 s grows 1350: 4050 bytes in 1 s, 202.5 per
// 50 ms.
func TestCwndGrowthCABBR(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := time.Millisecond
	var s []PathSample
	add := func(at time.Duration, cwnd uint64, state string) {
		s = append(s, PathSample{At: t0.Add(at), Vantage: "server", PathMetrics: core.PathMetrics{PathID: 0,
			CongestionWindow: cwnd, SSThresh: math.MaxUint64, CongestionState: state}})
	}
	add(0, 13500, "startup")
	add(500*ms, 400000, "startup")
	add(700*ms, 400000, "drain")
	add(1000*ms, 300000, "probe_bw")
	add(1500*ms, 302700, "probe_bw")
	add(1600*ms, 5400, "probe_rtt")
	add(2000*ms, 300000, "probe_bw")
	add(2500*ms, 301350, "probe_bw")
	got := CwndGrowthCA(s, "server", 0, 50*ms)
	if want := 4050.0 / 1.0 * 0.05; !(math.Abs(got-want) <= 1e-6) {
		t.Fatalf("growth %v bytes per RTT, want %v", got, want)
	}
}

// TestNearestRankWithFailures pins the quantiles on values computed by
// hand: a failed message counts as +Inf, so a quantile whose rank reaches
// the failures is +Inf, and the mean is too (mean_completed is not).
func TestNearestRankWithFailures(t *testing.T) {
	inf := math.Inf(1)
	d := DistributionOf([]float64{40, inf, 10, 30, 20})
	// Sorted: 10 20 30 40 +Inf. p50: rank ceil(2.5) = 3; p90: rank
	// ceil(4.5) = 5.
	want := Dist{N: 5, Failed: 1, Min: 10, P50: 30, P90: Inf, P99: Inf, P999: Inf, Max: Inf, Mean: Inf, MeanCompleted: 25}
	if *d != want {
		t.Fatalf("got %+v\nwant %+v", *d, want)
	}
	// 1000 values 1..1000 and one failure: p99.9 is rank ceil(999.999) =
	// 1000, the value 1000; with a second failure rank ceil(1000.998) =
	// 1001, +Inf.
	var vals []float64
	for i := 1; i <= 1000; i++ {
		vals = append(vals, float64(i))
	}
	d = DistributionOf(append(vals, inf))
	if d.P999 != 1000 || d.P99 != 991 || d.Max != Inf || d.Failed != 1 {
		t.Fatalf("one failure in 1001: %+v", *d)
	}
	d = DistributionOf(append(vals, inf, inf))
	if d.P999 != Inf || d.P99 != 992 {
		t.Fatalf("two failures in 1002: %+v", *d)
	}
	// All failed.
	d = DistributionOf([]float64{inf, inf})
	if d.Min != Inf || d.P50 != Inf || !math.IsNaN(float64(d.MeanCompleted)) {
		t.Fatalf("all failed: %+v", *d)
	}
	// Ranks on exact products: p7 of 100 values is the 7th, although 0.07·100
	// is 7.000000000000001 in floating point.
	var hundred []float64
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, float64(i))
	}
	if q := NearestRank(hundred, 0.07); q != 7 {
		t.Fatalf("p7 of 1..100 = %v, want 7", q)
	}
}

// TestMillisJSON: +Inf is written as "+Inf", a missing value as null, and
// both read back.
func TestMillisJSON(t *testing.T) {
	d := DistributionOf([]float64{5, math.Inf(1)})
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":2,"failed":1,"min":5,"p50":5,"p90":"+Inf","p99":"+Inf","p999":"+Inf","max":"+Inf","mean":"+Inf","mean_completed":5}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
	var back Dist
	if err := json.Unmarshal(b, &back); err != nil || back != *d {
		t.Fatalf("read back %+v, %v", back, err)
	}
	var m Millis
	if err := json.Unmarshal([]byte("null"), &m); err != nil || !math.IsNaN(float64(m)) {
		t.Fatalf("null: %v %v", m, err)
	}
	if FormatCSV(math.Inf(1)) != "+Inf" || FormatCSV(math.NaN()) != "" || FormatCSV(2.5) != "2.500" {
		t.Fatal("CSV formatting")
	}
	if v, err := ParseCSV("+Inf"); err != nil || !math.IsInf(v, 1) {
		t.Fatalf("ParseCSV(+Inf) = %v, %v", v, err)
	}
}

// TestQuantileCI: order-statistic intervals computed by hand from the
// binomial distribution. n = 10, the median: P(B ≤ 1) = 11/1024 ≤ 0.025
// < P(B ≤ 2) = 56/1024, so l = 2, and symmetrically u = 9. n = 100, p99:
// with A = 100 − B ~ Binomial(100, 0.01), P(B ≤ 96) = P(A ≥ 4) =
// 0.01837 ≤ 0.025 < P(A ≥ 3) = 0.07937, so l = 97; P(B ≥ 100) = 0.99^100
// = 0.366 > 0.025: no upper bound. n = 1000, p99 (A close to Poisson(10)):
// P(A ≥ 18) ≈ 0.014 ≤ 0.025 < P(A ≥ 17) ≈ 0.027 gives l = 983, P(A ≤ 3)
// ≈ 0.010 ≤ 0.025 < P(A ≤ 4) ≈ 0.029 gives u = 997.
func TestQuantileCI(t *testing.T) {
	seq := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i + 1)
		}
		return v
	}
	tests := []struct {
		n          int
		p          float64
		lo, hi     float64
		loR, hiR   int
		beyondHere int
	}{
		{10, 0.5, 2, 9, 2, 9, 5},
		{100, 0.99, 97, math.Inf(1), 97, 0, 1},
		{1000, 0.99, 983, 997, 983, 997, 10},
	}
	for _, tc := range tests {
		s := seq(tc.n)
		lo, hi, l, u := QuantileCI(s, tc.p, 0.95)
		if lo != tc.lo || hi != tc.hi || l != tc.loR || u != tc.hiR {
			t.Errorf("n %d p %v: [%v, %v] ranks %d %d, want [%v, %v] ranks %d %d", tc.n, tc.p, lo, hi, l, u, tc.lo, tc.hi, tc.loR, tc.hiR)
		}
		if b := Beyond(s, NearestRank(s, tc.p)); b != tc.beyondHere {
			t.Errorf("n %d p %v: %d beyond the quantile, want %d", tc.n, tc.p, b, tc.beyondHere)
		}
	}
	// A failed message (+Inf) is beyond every finite quantile; nothing
	// is beyond +Inf.
	s := []float64{1, 2, 3, math.Inf(1)}
	if Beyond(s, 2) != 2 || Beyond(s, math.Inf(1)) != 0 {
		t.Errorf("beyond with a failure: %d %d", Beyond(s, 2), Beyond(s, math.Inf(1)))
	}
	if lo, hi, _, _ := QuantileCI(nil, 0.99, 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("interval of nothing [%v, %v]", lo, hi)
	}
}
