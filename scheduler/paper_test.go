package scheduler_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/runner"
	"github.com/mpq/mpq/trafficgen"
)

// The paper's properties, end to end: experiments run by the runner (the
// traffic generator over the real core in the simulator), as `mpq run`
// does, over several seeds.
//
// The messages of every seed are pooled per scheduler (and source), and
// those generated in the first paperWarmup are left out: the paper
// assumes "that the congestion windows of the paths have a sufficient size
// at all times" (Section IV-A), which slow start at the beginning of a
// connection does not give. The runs are shorter than the paper's 60 s to
// keep the suite fast; pooling the seeds keeps about 1,000 messages per
// distribution.

var paperSeeds = []uint64{1, 2, 3}

const (
	paperDuration = 20 * time.Second
	paperWarmup   = 2 * time.Second
)

// paperRun is what one run measured.
type paperRun struct {
	sum *trafficgen.Summary
	// mct are the completion times in ms of each source's messages
	// generated after the warm-up (+Inf for a message not delivered).
	mct map[string][]float64
	// dir holds the run's results.
	dir string
}

// runPaper runs the paper's setup: two paths of 100 Mbit/s with 0.05 %
// loss and RTTs rtt0 and rtt1, bulk background data, priority sources
// given as TOML [[source]] tables, priority-fifo, packets of 1350 bytes,
// no pacing.
func runPaper(t *testing.T, sched string, seed uint64, rtt0, rtt1 string, sources string) paperRun {
	t.Helper()
	return runPaperWith(t, sched, "", seed, rtt0, rtt1, sources)
}

// runPaperWith is runPaper with the scheduler's options as a TOML inline
// table ("" for none).
func runPaperWith(t *testing.T, sched, options string, seed uint64, rtt0, rtt1 string, sources string) paperRun {
	t.Helper()
	if options != "" {
		options = "scheduler_options = " + options
	}
	doc := fmt.Sprintf(`name = "paper"
duration = %q
seed = %d
[[path]]
rate = "100Mbit"
rtt = %q
loss = "0.05%%"
[[path]]
rate = "100Mbit"
rtt = %q
loss = "0.05%%"
[transport]
path_scheduler = %q
%s
stream_scheduler = "priority-fifo"
max_packet_size = 1350
pacing = false
%s
[[source]]
name = "background"
kind = "bulk"
`, paperDuration, seed, rtt0, rtt1, sched, options, sources)
	runs, err := experiment.Parse("paper.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := runner.Run(context.Background(), &runs[0], dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Summary.Problems {
		t.Errorf("%s seed %d: problem: %s", sched, seed, p)
	}
	if res.Summary.CopiesDropped != 0 {
		t.Errorf("%s seed %d: %d copies dropped %v", sched, seed, res.Summary.CopiesDropped, res.Summary.CopiesDroppedByReason)
	}
	return paperRun{sum: res.Summary, mct: readMCTs(t, filepath.Join(dir, "messages.csv"), paperWarmup), dir: dir}
}

// readMCTs reads from messages.csv the completion times of the priority
// messages generated at or after from, per source (+Inf for one that did
// not complete).
func readMCTs(t *testing.T, path string, from time.Duration) map[string][]float64 {
	t.Helper()
	rows, col := readCSV(t, path)
	out := map[string][]float64{}
	for _, r := range rows[1:] {
		created, err := strconv.ParseFloat(r[col["created_ms"]], 64)
		if err != nil {
			t.Fatalf("created_ms %q: %v", r[col["created_ms"]], err)
		}
		if created < float64(from)/float64(time.Millisecond) || r[col["priority"]] != "true" {
			continue
		}
		mct := math.Inf(1)
		if s := r[col["mct_ms"]]; s != "" && s != "+Inf" {
			if mct, err = strconv.ParseFloat(s, 64); err != nil {
				t.Fatalf("mct_ms %q: %v", s, err)
			}
		}
		src := r[col["source"]]
		out[src] = append(out[src], mct)
	}
	return out
}

// quantile is the nearest-rank quantile q of v (sorted in place).
func quantile(v []float64, q float64) float64 {
	slices.Sort(v)
	return v[max(int(math.Ceil(q*float64(len(v))))-1, 0)]
}

// TestPaperBasePoint: the paper's Figure 4 at its base point (RTT 50 ms on
// both paths, 10 kB every 50 ms): cwr's median MCT is one one-way delay
// plus the message's serialization (within 1 ms); lowrtt's p99 is above
// cwr's and cwr-red's is at most cwr's; the throughput (copies included)
// is lowrtt >= cwr >= cwr-red.
func TestPaperBasePoint(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	const source = `[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"`
	scheds := []string{"lowrtt", "cwr", "cwr-red"}
	mct := map[string][]float64{}
	thr := map[string]float64{}
	for _, sched := range scheds {
		for _, seed := range paperSeeds {
			r := runPaper(t, sched, seed, "50ms", "50ms", source)
			mct[sched] = append(mct[sched], r.mct["s1"]...)
			thr[sched] += r.sum.ThroughputMbps.Server.Total / float64(len(paperSeeds))
			if sched == "cwr-red" && r.sum.Paths[0].Server.CopiesSent+r.sum.Paths[1].Server.CopiesSent == 0 {
				t.Errorf("cwr-red seed %d: no copies sent", seed)
			}
		}
	}
	p50 := quantile(mct["cwr"], 0.5)
	// 25 ms one way; 8 packets of at most 1350 bytes at 100 Mbit/s.
	ideal := 25 + 8*1350*8/100e6*1e3
	p99 := map[string]float64{}
	for _, s := range scheds {
		p99[s] = quantile(mct[s], 0.99)
		t.Logf("%s: %d messages, p50 %.1f ms, p99 %.1f ms; throughput %.1f Mbit/s", s, len(mct[s]), quantile(mct[s], 0.5), p99[s], thr[s])
	}
	if math.Abs(p50-ideal) > 1 {
		t.Errorf("cwr's median MCT %.2f ms, want %.2f ms (one-way delay and serialization) within 1 ms", p50, ideal)
	}
	if p99["lowrtt"] <= p99["cwr"] {
		t.Errorf("lowrtt's p99 %.1f ms not above cwr's %.1f ms", p99["lowrtt"], p99["cwr"])
	}
	if p99["cwr-red"] > p99["cwr"] {
		t.Errorf("cwr-red's p99 %.1f ms above cwr's %.1f ms", p99["cwr-red"], p99["cwr"])
	}
	if thr["lowrtt"] < thr["cwr"] || thr["cwr"] < thr["cwr-red"] {
		t.Errorf("throughput lowrtt %.2f, cwr %.2f, cwr-red %.2f Mbit/s: want them in that order", thr["lowrtt"], thr["cwr"], thr["cwr-red"])
	}
}

// TestPaperDifferentRTTs: the paper's Figure 6 at RTT1 = 20 ms, RTT2 = 100
// ms with the three sources of Table II: for every source, cwr-red-fast's
// p99 MCT is below the slow path's one-way delay (50 ms): with
// wait_for_fast_path it does not leave priority data alone on the slow
// path while the fast one frees room sooner; sending a message that does
// not fit both windows on the lowest-RTT path with room, as the paper's
// cwr-red does ("operates like LowRTT"), puts S1's and S2's p99 above
// 50 ms.
//
// cwr's and cwr-red's p99 are logged, not compared: the paper finds their
// distributions "nearly identical" here, and at the 99th percentile each
// sits on one of two modes (the fast path's one-way delay, or the slow
// path's for the messages that take it), so which of the two is lower
// changes with the seeds (over seeds 1-24 in triples, cwr-red's p99 was
// above cwr's for some source in most triples).
func TestPaperDifferentRTTs(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	const sources = tableII
	const slowOWD = 50 // ms
	mct := map[string]map[string][]float64{}
	for _, sched := range []string{"cwr", "cwr-red", "cwr-red-fast"} {
		mct[sched] = map[string][]float64{}
		for _, seed := range paperSeeds {
			r := runPaper(t, sched, seed, "20ms", "100ms", sources)
			for src, v := range r.mct {
				mct[sched][src] = append(mct[sched][src], v...)
			}
		}
	}
	for _, src := range []string{"S1", "S2", "S3"} {
		cwr, red, fast := quantile(mct["cwr"][src], 0.99), quantile(mct["cwr-red"][src], 0.99), quantile(mct["cwr-red-fast"][src], 0.99)
		t.Logf("%s: p99 cwr %.1f ms, cwr-red %.1f ms, cwr-red-fast %.1f ms (%d messages)", src, cwr, red, fast, len(mct["cwr"][src]))
		if fast >= slowOWD {
			t.Errorf("%s: cwr-red-fast's p99 %.1f ms, want it below the slow path's one-way delay (%d ms)", src, fast, slowOWD)
		}
	}
}

// tableII are the paper's three priority sources (Table II).
const tableII = `[[source]]
name = "S1"
kind = "periodic"
interval = "100ms"
size = "10kB"
[[source]]
name = "S2"
kind = "periodic"
interval = "70ms"
size = "7kB"
[[source]]
name = "S3"
kind = "periodic"
interval = "135ms"
size = "5kB"`
