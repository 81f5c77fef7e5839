package plots

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/trafficgen"
)

// TestMetricsFrom: a pooled quantile or late count whose name ends in
// _from_X counts the messages created at or after X only. The fixture's
// ten messages of each of cwr-red's three runs are created at 100, 150,
// ..., 550 ms and took 10, 20, ..., 100 ms.
func TestMetricsFrom(t *testing.T) {
	points := loadFixtures(t, tenTimes()...)
	for _, tc := range []struct {
		metric, want string
	}{
		// From 300 ms: the messages of 300 to 550 ms, 50 to 100 ms
		// each, 18 pooled. The p50 is rank 9 of 50, 50, 50, 60, 60, 60,
		// 70, ...: 70 ms. Its interval, B ~ Bin(18, 0.5): P(B <= 4) =
		// 4048/2^18 = 0.015 is the last within 0.025 from below, rank
		// 5 (60 ms), and P(B >= 14) = 0.015 from above, rank 14 (90 ms).
		{"s1.pooled_mct_p50_ms_from_300ms", "70.0 [60.0, 90.0]"},
		{"s1.pooled_mct_min_ms_from_300ms", "50.0"},
		{"s1.pooled_mct_max_ms_from_0.3s", "100.0"},
		// Over 45 ms: 50 to 100 ms, six a run, 18; from 400 ms (the
		// messages of 70 to 100 ms) four a run, 12; from 400.5 ms
		// (those of 80 to 100 ms) three a run, 9.
		{"s1.pooled_mct_over_45ms", "18"},
		{"s1.pooled_mct_over_45ms_from_400ms", "12"},
		{"s1.pooled_mct_over_45ms_from_400.5ms", "9"},
		// Every message is created after 0 s; none after 1 s.
		{"s1.pooled_mct_over_45ms_from_0s", "18"},
		{"s1.pooled_mct_over_45ms_from_1s", "0"},
		{"s1.pooled_mct_max_ms_from_1s", "–"},
	} {
		t.Run(tc.metric, func(t *testing.T) {
			md := metricsMD(t, points, "", tc.metric)
			if want := "| cwr-red | 3 | " + tc.want + " |\n"; !strings.Contains(md, want) {
				t.Errorf("markdown:\n%s\nwant the row %q", md, want)
			}
		})
	}
}

// TestSummaryFacts: the facts of a run's sources and paths in its
// summary.json, on hand-made values.
func TestSummaryFacts(t *testing.T) {
	ms := trafficgen.Millis(113.25)
	late := 53
	down, up := true, false
	rate := 10.0
	s := &trafficgen.Summary{DurationS: 30,
		Sources: []trafficgen.SourceSummary{
			{Name: "s1", Kind: "periodic", Failed: 2, DisruptionMS: &ms, LateAfterChange: &late},
			{Name: "s2", Kind: "periodic"},
			{Name: "bg", Kind: "bulk"},
		},
		LinkChanges: []trafficgen.LinkChangeSummary{
			{Path: 0, AtS: 10, Direction: "both", Down: &down},
			{Path: 0, AtS: 12, Direction: "both", RateMbps: &rate}, // not a down or up
			{Path: 0, AtS: 15, Direction: "both", Down: &up},
			{Path: 0, AtS: 20, Direction: "both", Down: &down}, // a second outage: not counted
			{Path: 1, AtS: 5, Direction: "down", Down: &up},    // up before any down: not counted
		},
		Paths: []trafficgen.PathSummary{
			{ID: 0, Server: &trafficgen.PathEnd{BytesSent: 37_500_000}, Client: &trafficgen.PathEnd{BytesSent: 750_000},
				Events: map[string][]trafficgen.PathEventSummary{
					// A failure before the outage does not count; the
					// first failed and recovered after its changes do.
					"server": {{Event: "failed", TimeS: 2.5}, {Event: "recovered", TimeS: 2.75}, {Event: "failed", TimeS: 10.125},
						{Event: "recovered", TimeS: 15.5}, {Event: "failed", TimeS: 20.25}},
					"client": {{Event: "failed", TimeS: 10.25}},
				}},
			{ID: 1, Server: &trafficgen.PathEnd{BytesSent: 3_750_000},
				Events: map[string][]trafficgen.PathEventSummary{"server": {{Event: "recovered", TimeS: 5.5}}}},
		},
	}
	r := &Run{Dir: t.TempDir(), Summary: s}
	got := map[string]float64{}
	for _, m := range r.metrics() {
		got[m.Name] = m.Value
	}
	nan := math.NaN()
	for name, want := range map[string]float64{
		"s1.failed": 2, "s1.disruption_ms": 113.25, "s1.late_after_change": 53,
		"s2.failed": 0, "s2.disruption_ms": nan, "s2.late_after_change": nan,
		"path.0.server.failed_after_ms": 125, "path.0.server.recovered_after_ms": 500,
		"path.0.client.failed_after_ms": 250, "path.0.client.recovered_after_ms": nan,
		"path.1.server.failed_after_ms": nan, "path.1.server.recovered_after_ms": nan,
		// 37.5 MB in 30 s: 10 Mbit/s; 750 kB: 0.2; path 1's client: none.
		"path.0.server.bytes_sent_mbps": 10, "path.0.client.bytes_sent_mbps": 0.2,
		"path.1.server.bytes_sent_mbps": 1, "path.1.client.bytes_sent_mbps": nan,
	} {
		v, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: no such fact", name)
		case math.IsNaN(want) != math.IsNaN(v) || math.Abs(v-want) > 1e-9:
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if _, ok := got["bg.failed"]; ok {
		t.Error("a bulk source has a failed count")
	}
}

// TestSentPercentFrom: path.ID.E.sent_percent_from_X is path ID's share
// of what end E sent in throughput.csv's bins from X to the end of the
// window (the fixture's 10 s), both classes.
func TestSentPercentFrom(t *testing.T) {
	f := fixture{sched: "cwr", times: []float64{25}, throughput: "" +
		"4900.000,sent,server,0,background,5000,0.4\n" + // before 5 s
		"5000.000,sent,server,0,priority,100,0.008\n" +
		"5000.000,sent,server,0,background,200,0.016\n" +
		"5000.000,sent,server,1,background,500,0.04\n" +
		"5000.000,sent,client,0,background,7000,0.56\n" + // the client's
		"5000.000,delivered,server,,background,9000,0.72\n" + // not sent
		"9900.000,sent,server,1,background,400,0.032\n" +
		"9900.000,sent,server,0,priority,0,0\n" +
		"10000.000,sent,server,0,background,8000,0.64\n"} // the drain
	points := loadFixtures(t, f)
	// Server, from 5 s: path 0 300 of 1200 bytes, 25 %; path 1 75 %.
	// The client: all on path 0; from 9.9 s it sent nothing.
	md := metricsMD(t, points, "", "path.0.server.sent_percent_from_5s", "path.1.server.sent_percent_from_5000ms",
		"path.0.client.sent_percent_from_5s", "path.0.client.sent_percent_from_9.9s", "path.0.server.sent_percent_from_4.9s")
	// From 4.9 s: path 0 5300 of 6200 bytes, 85.48 %.
	if want := "| cwr | 1 of 2 | 25.00 | 75.00 | 100.0 | – (0 of 1 runs) | 85.48 |\n"; !strings.Contains(md, want) {
		t.Errorf("markdown:\n%s\nwant the row %q", md, want)
	}
	// A run without throughput.csv: an error naming the file.
	points = loadFixtures(t, fixture{sched: "cwr", times: []float64{25}})
	o := DefaultOptions()
	o.Metrics = []string{"path.0.server.sent_percent_from_5s"}
	if _, err := Tabulate("metrics", points, o); err == nil || !strings.Contains(err.Error(), "throughput.csv") {
		t.Errorf("without throughput.csv: %v", err)
	}
}

// TestCwndMeanFrom: path.ID.E.cwnd_mean_kb_from_X weighs each sample of
// paths.csv by the time until the next, from X to the end of the window
// (10 s), leaving out samples after it.
func TestCwndMeanFrom(t *testing.T) {
	f := fixture{sched: "cwr", times: []float64{25}, paths: "" +
		"0.000,server,0,10000,0,,50,50,50,slow_start\n" +
		"0.000,client,0,5000,0,,50,50,50,slow_start\n" +
		"4000.000,server,0,20000,0,,50,50,50,congestion_avoidance\n" +
		"8000.000,server,0,40000,0,,50,50,50,congestion_avoidance\n" +
		"12000.000,server,0,99999,0,,50,50,50,congestion_avoidance\n"} // after the window
	// From 5 s: 20 kB for 3 s, 40 kB for 2 s: 28 kB. From 0 s: 10 kB
	// for 4 s, 20 for 4, 40 for 2: 20 kB. The client: 5 kB throughout.
	md := metricsMD(t, loadFixtures(t, f), "", "path.0.server.cwnd_mean_kb_from_5s", "path.0.server.cwnd_mean_kb_from_0s",
		"path.0.client.cwnd_mean_kb_from_2s", "path.1.server.cwnd_mean_kb_from_0s")
	if want := "| cwr | 1 of 2 | 28.00 | 20.00 | 5.00 | – (0 of 1 runs) |\n"; !strings.Contains(md, want) {
		t.Errorf("markdown:\n%s\nwant the row %q", md, want)
	}
}

// TestTraceCapacity: path.ID.trace_down_capacity_mbps counts the trace's
// opportunities in [0, duration), the trace repeating from time 0, 1500
// bytes each.
func TestTraceCapacity(t *testing.T) {
	dir := t.TempDir()
	// Opportunities at 3, 7 and 400 ms, repeating every 400 ms: in [0,
	// 1 s) those at 3, 7, 400, 403, 407, 800, 803 and 807 ms, and the
	// last of the period before time 0 at 0 ms: 9, 13.5 kB in 1 s,
	// 0.108 Mbit/s (the trace's mean rate is 0.09 Mbit/s).
	if err := os.WriteFile(filepath.Join(dir, "t.trace"), []byte("3\n7\n400\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := `name = "t"
duration = "1s"
[[path]]
rtt = "40ms"
rate = "10Mbit"
trace_down = "t.trace"
[[path]]
rtt = "40ms"
rate = "10Mbit"
[[source]]
name = "bg"
kind = "bulk"
`
	if err := os.WriteFile(filepath.Join(dir, "config.resolved.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Run{Dir: dir, Summary: &trafficgen.Summary{DurationS: 1}}
	for name, want := range map[string]float64{
		"path.0.trace_down_capacity_mbps": 0.108,
		"path.0.trace_up_capacity_mbps":   math.NaN(), // no trace
		"path.1.trace_down_capacity_mbps": math.NaN(),
	} {
		v, err := runMetric(r, name)
		if err != nil || math.IsNaN(want) != math.IsNaN(v) || math.Abs(v-want) > 1e-9 {
			t.Errorf("%s = %v (%v), want %v", name, v, err, want)
		}
	}
	if _, err := runMetric(r, "path.2.trace_down_capacity_mbps"); err == nil || !strings.Contains(err.Error(), "has 2 paths") {
		t.Errorf("a path the run does not have: %v", err)
	}
}
