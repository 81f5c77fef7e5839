package trafficgen

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/mpquic/qerr"
)

// synthetic builds a recorder and feeds it a message log whose statistics
// are computed by hand in TestSyntheticLog: a periodic priority source and
// a request-response source (replies without priority) beside bulk data,
// a 1 s window, events in the drain period after it.
func synthetic(t *testing.T) (*Recorder, *experiment.Experiment) {
	t.Helper()
	srcs := []experiment.Source{
		{Name: "p", Kind: experiment.KindPeriodic, Priority: true},
		{Name: "rr", Kind: experiment.KindRequestResponse},
		{Name: "bg", Kind: experiment.KindBulk},
	}
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	r := NewRecorder(RecorderConfig{Sources: srcs, Start: t0, Duration: time.Second, Interval: 100 * time.Millisecond})
	e := &experiment.Experiment{Name: "synthetic", Duration: time.Second, Drain: time.Second, Sources: srcs, Repeat: 1}

	// The periodic source: 1000-byte messages; the third is delivered in
	// the drain, the fourth never.
	hdr := func(src int, seq uint32, length uint64, flags uint8) Header {
		return Header{Source: uint16(src), Seq: seq, Length: length, Flags: flags}
	}
	for i, c := range []struct{ created, delivered float64 }{{0, 30}, {100, 150}, {200, 1100}, {900, -1}} {
		m := r.generated(0, uint32(i), at(c.created), 1000, 1, true, false)
		if c.delivered >= 0 {
			r.delivered(hdr(0, uint32(i), 1000, FlagPriority), at(c.delivered))
			r.received(at(c.delivered), "server", ClassPriority, 0, false, 1000)
		}
		_ = m
	}
	// Request-response: 250-byte requests, 500-byte replies. 0: replied;
	// 1: delivered, no reply; 2: reset; 3: replied.
	rr := func(seq uint32, created float64) *MessageRecord {
		return r.generated(1, seq, at(created), 250, 500, false, false)
	}
	deliver := func(seq uint32, t float64) {
		r.delivered(hdr(1, seq, 250, 0), at(t))
		r.received(at(t), "client", ClassBackground, 1, false, 250)
	}
	reply := func(m *MessageRecord, t float64) {
		r.received(at(t), "server", ClassBackground, 1, true, 500)
		r.replied(m, at(t))
	}
	m0 := rr(0, 0)
	deliver(0, 10)
	reply(m0, 25)
	rr(1, 100)
	deliver(1, 110)
	m2 := rr(2, 200)
	r.fail(m2, &qerr.StreamError{StreamID: 4, Code: 1, Remote: true})
	m3 := rr(3, 300)
	deliver(3, 320)
	reply(m3, 345)
	// Bulk: 50 kB read in the window, 10 kB in the drain.
	r.received(at(500), "server", ClassBackground, 2, false, 50_000)
	r.received(at(1050), "server", ClassBackground, 2, false, 10_000)

	// Stream bytes sent, per end and path; the last one in the drain.
	so, co := r.Observer("server"), r.Observer("client")
	so.StreamDataSent(at(5), 0, 1, true, 1000)
	so.StreamDataSent(at(105), 0, 1, true, 1000)
	so.StreamDataSent(at(400), 0, 3, false, 60_000)
	so.StreamDataSent(at(600), 1, 3, false, 40_000)
	so.StreamDataSent(at(1005), 1, 1, true, 1000)
	// Path 0 stays in slow start.
	so.PathMetricsUpdated(at(5), core.PathMetrics{PathID: 0, CongestionWindow: 13500, SSThresh: math.MaxUint64, CongestionState: "slow_start"})
	so.PathMetricsUpdated(at(400), core.PathMetrics{PathID: 0, CongestionWindow: 80000, SSThresh: math.MaxUint64, CongestionState: "slow_start"})
	for _, ms := range []float64{1, 101, 201, 301} {
		co.StreamDataSent(at(ms), 0, 0, false, 250)
	}
	if n := r.Outstanding(); n != 2 {
		t.Fatalf("%d messages outstanding before Finish, want 2 (p 3 and rr 1)", n)
	}
	r.Finish()
	// Events after Finish are ignored.
	r.delivered(hdr(0, 3, 1000, FlagPriority), at(2500))
	return r, e
}

func TestSyntheticLog(t *testing.T) {
	r, e := synthetic(t)
	if r.Outstanding() != 0 {
		t.Fatal("messages outstanding after Finish")
	}
	sum := r.Summarise(e, SummaryInput{
		Server:        []core.PathStats{{ID: 0}, {ID: 1, CopiesSent: 7}},
		Client:        []core.PathStats{{ID: 0, CopiesSent: 2}},
		CopiesDropped: map[string]uint64{"same_path": 3, "unknown_path": 1, "too_large": 0},
	})
	// Copies: sent per path and end, dropped per run and reason.
	if sum.CopiesDropped != 4 || len(sum.CopiesDroppedByReason) != 2 || sum.CopiesDroppedByReason["same_path"] != 3 {
		t.Errorf("copies dropped %d %v, want 4 (3 same_path, 1 unknown_path)", sum.CopiesDropped, sum.CopiesDroppedByReason)
	}
	if c := [3]uint64{sum.Paths[0].Server.CopiesSent, sum.Paths[1].Server.CopiesSent, sum.Paths[0].Client.CopiesSent}; c != [3]uint64{0, 7, 2} {
		t.Errorf("copies sent %v, want [0 7 2]", c)
	}
	p, rr, bg := sum.Sources[0], sum.Sources[1], sum.Sources[2]

	// Periodic: MCTs 30, 50, 900 (delivered in the drain) and +Inf.
	if p.Messages != 4 || p.Completed != 3 || p.Failed != 1 || p.Failures[FailTimeout] != 1 || *p.DeliveredRatio != 0.75 {
		t.Errorf("periodic counts %+v", p)
	}
	wantP := Dist{N: 4, Failed: 1, Min: 30, P50: 50, P90: Inf, P99: Inf, P999: Inf, Max: Inf, Mean: Inf, MeanCompleted: 326.667}
	if *p.MCTMS != wantP {
		t.Errorf("periodic MCT %+v, want %+v", *p.MCTMS, wantP)
	}
	if p.ResponseMS != nil {
		t.Errorf("periodic sources have no response-time metric")
	}
	// Request-response: response times 25, 45 and two +Inf (no reply,
	// reset); MCTs 10, 10, 20 and +Inf (the reset one).
	if rr.Messages != 4 || rr.Completed != 2 || rr.Failures[FailNoReply] != 1 || rr.Failures[FailReset] != 1 || *rr.DeliveredRatio != 0.5 {
		t.Errorf("request-response counts %+v", rr)
	}
	wantR := Dist{N: 4, Failed: 2, Min: 25, P50: 45, P90: Inf, P99: Inf, P999: Inf, Max: Inf, Mean: Inf, MeanCompleted: 35}
	if *rr.ResponseMS != wantR {
		t.Errorf("response %+v, want %+v", *rr.ResponseMS, wantR)
	}
	if rr.MCTMS.P50 != 10 || rr.MCTMS.Max != Inf || rr.MCTMS.Failed != 1 {
		t.Errorf("request MCT %+v", *rr.MCTMS)
	}
	// Jitter of 25 and 45: |45-25| / mean 35.
	if math.Abs(*rr.Jitter-0.5714) > 1e-9 {
		t.Errorf("jitter %v", *rr.Jitter)
	}

	// Goodput over the 1 s window, per sending end: the server's priority
	// data is p's 2 × 1000 bytes (the third came in the drain): 16 kbit/s;
	// its background the 50 kB of bulk and the 2 × 500 bytes of replies:
	// 408 kbit/s. The client's: 3 × 250 bytes of requests, 6 kbit/s.
	wantGood := Directions{
		Server: Throughput{Total: 0.424, Priority: 0.016, Background: 0.408},
		Client: Throughput{Total: 0.006, Priority: 0, Background: 0.006},
	}
	if sum.GoodputMbps != wantGood {
		t.Errorf("goodput %+v, want %+v", sum.GoodputMbps, wantGood)
	}
	// Throughput: the server sent 2000 priority and 100,000 background
	// bytes in the window (not the 1000 in the drain), the client 1000.
	wantThr := Directions{
		Server: Throughput{Total: 0.816, Priority: 0.016, Background: 0.8},
		Client: Throughput{Total: 0.008, Priority: 0, Background: 0.008},
	}
	if sum.ThroughputMbps != wantThr {
		t.Errorf("throughput %+v, want %+v", sum.ThroughputMbps, wantThr)
	}
	// Per source: messages and replies read in the window.
	if p.GoodputMbps != 0.016 || *p.ReplyGoodputMbps != 0 || rr.GoodputMbps != 0.006 || *rr.ReplyGoodputMbps != 0.008 || bg.GoodputMbps != 0.4 {
		t.Errorf("per-source goodput p %v/%v rr %v/%v bg %v", p.GoodputMbps, *p.ReplyGoodputMbps, rr.GoodputMbps, *rr.ReplyGoodputMbps, bg.GoodputMbps)
	}
	// No path was in congestion avoidance: its growth is no value (null
	// in JSON), not a growth of 0.
	for _, ps := range sum.Paths {
		if ps.Server.CwndGrowthCA != nil {
			t.Errorf("path %d: cwnd growth %v without congestion avoidance, want none", ps.ID, *ps.Server.CwndGrowthCA)
		}
	}
	if js, _ := json.Marshal(sum.Paths[0].Server); !strings.Contains(string(js), `"cwnd_growth_ca_bytes_per_rtt":null`) {
		t.Errorf("path JSON %s", js)
	}
	// Per path, each end's own counters.
	if len(sum.Paths) != 2 || sum.Paths[0].Server.StreamBytesSent != 62_000 || sum.Paths[1].Server.StreamBytesSent != 40_000 ||
		sum.Paths[0].Client.StreamBytesSent != 1000 || sum.Paths[1].Client != nil {
		t.Errorf("paths %+v", sum.Paths)
	}
}

// TestMessagesCSVAccountsForEveryMessage: every message has a row with
// its status and reason, and +Inf where its time counts as unbounded.
func TestMessagesCSVAccountsForEveryMessage(t *testing.T) {
	r, _ := synthetic(t)
	var buf bytes.Buffer
	if err := r.WriteMessagesCSV(&buf); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != MessagesHeader || len(rows) != 9 {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	col := map[string]int{}
	for i, k := range rows[0] {
		col[k] = i
	}
	want := []struct{ src, seq, mct, resp, status, failed string }{
		{"p", "0", "30.000", "+Inf", "completed", ""},
		{"p", "1", "50.000", "+Inf", "completed", ""},
		{"p", "2", "900.000", "+Inf", "completed", ""},
		{"p", "3", "+Inf", "+Inf", "failed", "timeout"},
		{"rr", "0", "10.000", "25.000", "completed", ""},
		{"rr", "1", "10.000", "+Inf", "failed", "no reply"},
		{"rr", "2", "+Inf", "+Inf", "failed", "reset"},
		{"rr", "3", "20.000", "45.000", "completed", ""},
	}
	for i, w := range want {
		row := rows[i+1]
		got := []string{row[col["source"]], row[col["seq"]], row[col["mct_ms"]], row[col["response_ms"]], row[col["status"]], row[col["failed"]]}
		if strings.Join(got, "|") != strings.Join([]string{w.src, w.seq, w.mct, w.resp, w.status, w.failed}, "|") {
			t.Errorf("row %d: %v, want %+v", i+1, got, w)
		}
	}
}

// TestPathSampling: paths.csv keeps at most one row per path and end per
// PathInterval, every congestion state change with the sample before it,
// and the congestion window growth is computed from every sample.
func TestPathSampling(t *testing.T) {
	t0 := time.Unix(0, 0)
	feed := func(interval time.Duration) *Recorder {
		r := NewRecorder(RecorderConfig{Start: t0, Duration: time.Hour, Interval: time.Second, PathInterval: interval})
		o := r.Observer("server")
		// A sample every ms for 100 ms in congestion avoidance, growing
		// 10 bytes per ms; recovery at 50.5 ms.
		for i := 0; i <= 100; i++ {
			state := "congestion_avoidance"
			at := time.Duration(i) * time.Millisecond
			if i > 50 && i < 60 {
				state = "recovery"
			}
			o.PathMetricsUpdated(t0.Add(at), core.PathMetrics{PathID: 0, CongestionWindow: uint64(10000 + 10*i), CongestionState: state})
			if i == 50 {
				o.PathMetricsUpdated(t0.Add(at+time.Millisecond/2), core.PathMetrics{PathID: 0, CongestionWindow: 5000, CongestionState: "recovery"})
			}
		}
		return r
	}
	times := func(r *Recorder) []float64 {
		var out []float64
		for _, s := range r.Samples() {
			out = append(out, float64(s.At.Sub(t0))/1e6)
		}
		return out
	}
	all := feed(0)
	if n := len(all.Samples()); n != 102 {
		t.Fatalf("path_interval 0 kept %d of 102 samples", n)
	}
	got := times(feed(10 * time.Millisecond))
	// Every 10 ms; at the state change at 50.5 ms the sample before it
	// (50 ms, already due) and the change; the next change (back to
	// congestion avoidance at 60 ms) with the sample before it (59 ms).
	want := []float64{0, 10, 20, 30, 40, 50, 50.5, 59, 60, 70, 80, 90, 100}
	if len(got) != len(want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("kept %v, want %v", got, want)
		}
	}
	// A path that goes quiet: a burst of changes within 10 ms, then
	// nothing for 3 s. The burst's last change is kept when the next
	// row comes, else paths.csv would show the burst's first state
	// (41850 bytes in flight) through the quiet time.
	q := NewRecorder(RecorderConfig{Start: t0, Duration: time.Hour, Interval: time.Second, PathInterval: 10 * time.Millisecond})
	o := q.Observer("server")
	for i, inflight := range []uint64{41850, 20250, 0} {
		o.PathMetricsUpdated(t0.Add(time.Duration(i)*time.Millisecond), core.PathMetrics{PathID: 0, BytesInFlight: inflight, CongestionState: "congestion_avoidance"})
	}
	o.PathMetricsUpdated(t0.Add(3*time.Second), core.PathMetrics{PathID: 0, BytesInFlight: 1350, CongestionState: "congestion_avoidance"})
	var kept []string
	for _, s := range q.Samples() {
		kept = append(kept, fmt.Sprintf("%v:%d", s.At.Sub(t0), s.BytesInFlight))
	}
	if want := "0s:41850 2ms:0 3s:1350"; strings.Join(kept, " ") != want {
		t.Fatalf("quiet path: kept %v, want %s", kept, want)
	}
	// The growth per RTT comes from every sample, whatever is kept.
	r := feed(10 * time.Millisecond)
	var g caGrowth
	for _, s := range all.Samples() {
		g.add(&s)
	}
	if a, b := r.paths[pathKey{"server", 0}].ca.perRTT(50*time.Millisecond), g.perRTT(50*time.Millisecond); a != b || !(a > 0) {
		t.Fatalf("growth %v from the sampled recorder, %v from every sample", a, b)
	}
	// A negative interval keeps none, Finish included, and the growth
	// is the same.
	none := feed(-1)
	none.Finish()
	if n := len(none.Samples()); n != 0 {
		t.Fatalf("path_interval -1 kept %d samples", n)
	}
	if a, b := none.paths[pathKey{"server", 0}].ca.perRTT(50*time.Millisecond), g.perRTT(50*time.Millisecond); a != b {
		t.Fatalf("growth %v without samples, %v from every sample", a, b)
	}
}

// TestFailReason: a reset or stopped stream fails a message as "reset",
// any other error (the connection ended) as "connection closed".
func TestFailReason(t *testing.T) {
	if r := failReason(fmt.Errorf("writing: %w", &qerr.StreamError{StreamID: 4, Code: 0})); r != FailReset {
		t.Errorf("stream error: %q", r)
	}
	if r := failReason(&qerr.ApplicationError{Code: 0}); r != FailClosed {
		t.Errorf("connection error: %q", r)
	}
}

// TestWarmup: with a warm-up of 150 ms the synthetic log's messages
// created at 0 and 100 ms leave every per-source statistic and are
// counted in warmup_excluded; messages.csv still has them, marked.
func TestWarmup(t *testing.T) {
	r, e := synthetic(t)
	r.cfg.Warmup = 150 * time.Millisecond
	sum := r.Summarise(e, SummaryInput{})
	if sum.WarmupS != 0.15 {
		t.Errorf("warmup_s %v, want 0.15", sum.WarmupS)
	}
	p, rr := sum.Sources[0], sum.Sources[1]
	// Periodic: left are the messages created at 200 ms (MCT 900) and
	// 900 ms (never delivered).
	if p.WarmupExcluded != 2 || p.Messages != 2 || p.Completed != 1 || p.Failed != 1 || *p.DeliveredRatio != 0.5 {
		t.Errorf("periodic counts %+v", p)
	}
	wantP := Dist{N: 2, Failed: 1, Min: 900, P50: 900, P90: Inf, P99: Inf, P999: Inf, Max: Inf, Mean: Inf, MeanCompleted: 900}
	if *p.MCTMS != wantP {
		t.Errorf("periodic MCT %+v, want %+v", *p.MCTMS, wantP)
	}
	// Request-response: left are 2 (reset) and 3 (response 45 ms, MCT
	// 20 ms); one response, no jitter.
	if rr.WarmupExcluded != 2 || rr.Messages != 2 || rr.Completed != 1 || rr.Failures[FailReset] != 1 || rr.Jitter != nil {
		t.Errorf("request-response %+v", rr)
	}
	wantR := Dist{N: 2, Failed: 1, Min: 45, P50: 45, P90: Inf, P99: Inf, P999: Inf, Max: Inf, Mean: Inf, MeanCompleted: 45}
	if *rr.ResponseMS != wantR {
		t.Errorf("response %+v, want %+v", *rr.ResponseMS, wantR)
	}
	var b bytes.Buffer
	if err := r.WriteMessagesCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, h := range rows[0] {
		if h == "warmup" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("no warmup column in %v", rows[0])
	}
	var marked []string
	for _, row := range rows[1:] {
		if row[col] == "true" {
			marked = append(marked, row[0]+"/"+row[2])
		}
	}
	if got := strings.Join(marked, " "); len(rows) != 9 || got != "p/0 p/1 rr/0 rr/1" {
		t.Errorf("%d rows, warm-up rows %q, want 8 rows and p/0 p/1 rr/0 rr/1", len(rows)-1, got)
	}
}

// TestRecorderBin: the bin of a time (with the last bin remembered) is
// the bin computed from scratch, for times in order, back in time, on
// bin boundaries, before the start and far after it, with and without a
// monotonic clock reading.
func TestRecorderBin(t *testing.T) {
	for _, start := range []time.Time{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Now()} {
		r := NewRecorder(RecorderConfig{Start: start, Duration: 10 * time.Second, Interval: 100 * time.Millisecond})
		want := func(at time.Time) int {
			if at.Before(start) {
				return 0
			}
			return int(at.Sub(start) / (100 * time.Millisecond))
		}
		ms := time.Millisecond
		for _, d := range []time.Duration{0, 1, 99*ms + 999999, 100 * ms, 100*ms - 1, 150 * ms, 50 * ms, -1, -ms, 0,
			199 * ms, 200 * ms, 200*ms - 1, 9999 * ms, 10 * time.Second, 3 * time.Hour, 250 * ms, 250 * ms} {
			at := start.Add(d)
			if got := r.bin(at); got != want(at) {
				t.Errorf("start %v, bin at %v = %d, want %d", start, d, got, want(at))
			}
		}
	}
}
