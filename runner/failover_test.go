package runner

import (
	"context"
	"math"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// TestFailover runs experiments/failover.toml in the simulator (path 0
// down in both directions from 10 s to 15 s, 30 s, lowrtt, cwr, cwr-red)
// and checks the criteria that the stack meets: no priority
// message fails; lowrtt's largest MCT is under 1 s; the server sends at
// least 20 % of its stream bytes after 17 s on path 0 (it came back); the
// server (and the client if it notices) reports path 0 failed within the
// detection bound after 10 s and recovered within the probes' largest
// interval after 15 s. It also runs them with the detection off
// (transport.path_failure = false), which it only checks for the absence
// of path events, and cwr and cwr-red with
// transport.scheduler_options.skip_held_back = true, for which it checks
// cwr-red's MCT p99 from 5 s on (under 40 ms). These are the runs of
// docs/results/path-failure.md's table failover.md, which its Reproduce
// box makes with mpq run and mpq plot; the test logs their numbers too
// (go test ./runner/ -run TestFailover -v).
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("six 30 s simulated runs")
	}
	runs, err := experiment.Load("../experiments/failover.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := experiment.ParseOverride("transport.path_failure=false")
	if err != nil {
		t.Fatal(err)
	}
	off, err := experiment.Load("../experiments/failover.toml", []experiment.Override{o})
	if err != nil {
		t.Fatal(err)
	}
	runs = append(runs, off...)
	o, err = experiment.ParseOverride("transport.scheduler_options.skip_held_back=true")
	if err != nil {
		t.Fatal(err)
	}
	skip, err := experiment.Load("../experiments/failover.toml", []experiment.Override{o})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range skip {
		if e.Transport.PathScheduler != "lowrtt" {
			runs = append(runs, e)
		}
	}
	const (
		down = 10 * time.Second
		up   = 15 * time.Second
	)
	for i := range runs {
		e := &runs[i]
		name := e.Transport.PathScheduler
		if !e.Transport.PathFailure {
			name += "/path_failure=false"
		}
		skipHeld := e.Transport.SchedulerOptions["skip_held_back"] == "true"
		if skipHeld {
			name += "/skip_held_back"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			res, err := Run(context.Background(), e, dir)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			src := s.Sources[0]
			detect := e.Transport.PathFailure
			if src.Failed != 0 || src.Completed != src.Messages {
				t.Errorf("%d of %d priority messages failed (%v)", src.Failed, src.Messages, src.Failures)
			}
			if detect && e.Transport.PathScheduler == "lowrtt" && float64(src.MCTMS.Max) >= 1000 {
				t.Errorf("lowrtt's largest MCT %v ms, want under 1 s", src.MCTMS.Max)
			}
			// Stream bytes the server sent per path from 17 s to the end
			// of the window.
			var sent [2]float64
			for _, r := range readCSV(t, filepath.Join(dir, "throughput.csv")) {
				at := num(t, r["time_ms"])
				if r["what"] == "sent" && r["sender"] == "server" && at >= 17000 && at < 30000 {
					sent[int(num(t, r["path_id"]))] += num(t, r["bytes"])
				}
			}
			share := sent[0] / (sent[0] + sent[1])
			if detect && share < 0.2 {
				t.Errorf("path 0 carried %.1f %% of the server's bytes after 17 s, want at least 20 %%", 100*share)
			}
			var p0 *trafficgen.PathSummary
			for i := range s.Paths {
				if s.Paths[i].ID == 0 {
					p0 = &s.Paths[i]
				}
			}
			if p0 == nil {
				t.Fatal("no path 0 in summary.json")
			}
			times := map[string]float64{}
			for _, end := range []string{"server", "client"} {
				var kinds []string
				for _, ev := range p0.Events[end] {
					kinds = append(kinds, ev.Event)
					times[end+" "+ev.Event] = ev.TimeS
				}
				if !detect {
					if len(kinds) > 0 {
						t.Errorf("%s reported path events %v with the detection off", end, kinds)
					}
					continue
				}
				// The client sends few ack-eliciting packets (acknowledgements
				// do not count), and none on path 0 when its scheduler puts
				// its flow control updates on path 1: it may have nothing
				// to notice. The server, which sends the data, must.
				if end == "client" && len(kinds) == 0 {
					continue
				}
				if len(kinds) != 2 || kinds[0] != "failed" || kinds[1] != "recovered" {
					t.Errorf("%s's path 0 events %v, want failed then recovered", end, kinds)
					continue
				}
				// Detection: D = max(3 srtt, 2 PTO) after the first lost
				// packet; with queues of one BDP the smoothed RTT stays
				// under 120 ms, so 500 ms is a loose bound here.
				if d := times[end+" failed"] - down.Seconds(); d < 0 || d > 0.5 {
					t.Errorf("%s declared path 0 failed %.3f s after it went down", end, d)
				}
				// Recovery: a probe at most 1 s after the last (the
				// backoff's cap), then its round trip.
				if d := times[end+" recovered"] - up.Seconds(); d < 0 || d > 1.5 {
					t.Errorf("%s saw path 0 recover %.3f s after it came back", end, d)
				}
			}
			// From 5 s on: past the bulk transfer's first slow start.
			var late []float64
			for _, r := range readCSV(t, filepath.Join(dir, "messages.csv")) {
				if num(t, r["created_ms"]) >= 5000 {
					late = append(late, num(t, r["mct_ms"]))
				}
			}
			sort.Float64s(late)
			p99from5 := trafficgen.NearestRank(late, 0.99)
			over40 := 0
			for _, v := range late {
				if v > 40 {
					over40++
				}
			}
			// The issue's bound on cwr-red's p99 (docs/results/path-failure.md, "Path
			// failure and handover"): met from 5 s on with skip_held_back
			// (the other messages over 40 ms there are the one on path 0
			// when it went down and priority packets lost at random while
			// path 1 was alone); not with the paper's strict order, where
			// priority messages wait behind lost background data.
			if detect && skipHeld && e.Transport.PathScheduler == "cwr-red" && p99from5 >= 40 {
				t.Errorf("cwr-red with skip_held_back: MCT p99 from 5 s on %.1f ms, want under 40 ms", p99from5)
			}
			t.Logf("%s: failed at +%.0f ms (server) / +%.0f ms (client) after 10 s, recovered at +%.0f / +%.0f ms after 15 s; "+
				"MCT p50 %v p99 %v max %v ms (from 5 s on: p99 %.1f ms, %d of %d over 40 ms); disruption_ms %v, late_after_change %v; "+
				"path 0 share of the server's bytes after 17 s %.1f %%; goodput %.1f Mbit/s",
				name,
				1000*(times["server failed"]-down.Seconds()), 1000*(times["client failed"]-down.Seconds()),
				1000*(times["server recovered"]-up.Seconds()), 1000*(times["client recovered"]-up.Seconds()),
				src.MCTMS.P50, src.MCTMS.P99, src.MCTMS.Max, p99from5, over40, len(late),
				derefMillis(src.DisruptionMS), derefInt(src.LateAfterChange), 100*share, s.GoodputMbps.Server.Total)
		})
	}
}

func derefMillis(m *trafficgen.Millis) float64 {
	if m == nil {
		return math.NaN()
	}
	return float64(*m)
}

func derefInt(n *int) int {
	if n == nil {
		return -1
	}
	return *n
}
