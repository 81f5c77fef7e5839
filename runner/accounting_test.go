package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// drainDoc has a message in flight at the end of the experiment: 100 kB
// over 10 Mbit/s and a 100 ms round trip, generated 1.75 s after the
// connection is ready (1.5 round trips after time zero, 150 ms in the
// simulator), 100 ms before the end.
const drainDoc = `name = "drain"
duration = "2s"
%s
[[path]]
rate = "10Mbit"
rtt = "100ms"
[transport]
multipath = false
[[source]]
name = "s1"
kind = "periodic"
interval = "1.75s"
size = "100kB"
`

// TestDrain: the run goes on after the duration until the message in
// flight is delivered; without a drain period it fails as a timeout and
// counts as +Inf. The same holds in real time (loopback): the drain ends
// once every message is done, and what is not done at the end of the
// drain fails with its reason.
func TestDrain(t *testing.T) {
	for _, backend := range []string{"sim", "loopback"} {
		t.Run(backend, func(t *testing.T) {
			if backend != "sim" && testing.Short() {
				t.Skip("real-time run")
			}
			testDrain(t, fmt.Sprintf("backend = %q", backend))
		})
	}
}

func testDrain(t *testing.T, backend string) {
	res, dir := run(t, fmt.Sprintf(drainDoc, backend))
	s := res.Summary
	src := s.Sources[0]
	if src.Messages != 2 || src.Completed != 2 || src.MCTMS.Max == trafficgen.Inf {
		t.Fatalf("with the default drain: %+v %+v", src, src.MCTMS)
	}
	if s.DrainS != 2 || s.DrainedS <= 0 || s.DrainedS >= 1 {
		t.Fatalf("drain %v s, drained %v s: want the run to stop early once the message is in", s.DrainS, s.DrainedS)
	}
	rows := readCSV(t, filepath.Join(dir, "messages.csv"))
	if d := num(t, rows[1]["delivered_ms"]); d <= 2000 {
		t.Fatalf("the last message was delivered at %v ms, within the duration: the test does not test the drain", d)
	}

	res, dir = run(t, fmt.Sprintf(drainDoc, backend+"\n"+`drain = "0s"`))
	src = res.Summary.Sources[0]
	if src.Completed != 1 || src.Failed != 1 || src.Failures[trafficgen.FailTimeout] != 1 || *src.DeliveredRatio != 0.5 {
		t.Fatalf("without a drain: %+v", src)
	}
	if src.MCTMS.N != 2 || src.MCTMS.Max != trafficgen.Inf || src.MCTMS.P50 == trafficgen.Inf {
		t.Fatalf("MCT %+v: the failed message must count as +Inf", *src.MCTMS)
	}
	rows = readCSV(t, filepath.Join(dir, "messages.csv"))
	if r := rows[1]; r["status"] != "failed" || r["failed"] != "timeout" || r["mct_ms"] != "+Inf" {
		t.Fatalf("row of the failed message: %v", r)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"max": "+Inf"`) {
		t.Fatalf("summary.json does not write the unbounded maximum as \"+Inf\":\n%s", b)
	}
}

// TestNoReply: a request delivered whose reply cannot arrive within the
// drain fails with "no reply"; its MCT is known, its response time +Inf.
func TestNoReply(t *testing.T) {
	res, _ := run(t, `name = "noreply"
duration = "1s"
drain = "1s"
[[path]]
rate = "10Mbit"
rtt = "20ms"
[transport]
multipath = false
[[source]]
name = "rr"
kind = "request-response"
interval = "1s"
count = 1
size = 100
reply_size = "10MB"
`)
	src := res.Summary.Sources[0]
	if src.Messages != 1 || src.Failures[trafficgen.FailNoReply] != 1 {
		t.Fatalf("%+v", src)
	}
	if src.MCTMS.Failed != 0 || src.ResponseMS.Failed != 1 || src.ResponseMS.P50 != trafficgen.Inf {
		t.Fatalf("MCT %+v, response %+v", *src.MCTMS, *src.ResponseMS)
	}
}

// framesDoc is the scenario: 30 kB frames every 1/30 s (priority)
// beside bulk data, priority-fifo, a 50 Mbit/s 20 ms path and a 10 Mbit/s
// 80 ms path with 1 % loss.
const framesDoc = `name = "frames"
duration = "%s"
[[path]]
rate = "50Mbit"
rtt = "20ms"
[[path]]
rate = "10Mbit"
rtt = "80ms"
loss = "1%%"
[transport]
stream_scheduler = "priority-fifo"
[[source]]
name = "ar"
kind = "frames"
size = "30kB"
priority = true
%s
[[source]]
name = "bg"
kind = "bulk"
`

// TestReplyPriority: the server's replies carry their frame's priority,
// so priority-fifo sends them before the bulk data: every frame gets its
// reply, and the response time quantiles count every frame. With
// reply_priority = false the replies queue behind the bulk stream.
func TestReplyPriority(t *testing.T) {
	res, _ := run(t, fmt.Sprintf(framesDoc, "10s", ""))
	ar := res.Summary.Sources[0]
	if ar.Messages < 300 || ar.Completed != ar.Messages || ar.Failed != 0 {
		t.Fatalf("%d frames, %d completed, failures %v", ar.Messages, ar.Completed, ar.Failures)
	}
	if ar.ResponseMS.N != ar.Messages || ar.ResponseMS.Failed != 0 || ar.ResponseMS.P99 > 500 {
		t.Fatalf("response %+v", *ar.ResponseMS)
	}
	if res.Summary.GoodputMbps.Server.Background < 20 {
		t.Fatalf("the bulk data starved: %+v", res.Summary.GoodputMbps)
	}
	t.Logf("frames: response %+v; bulk goodput %.1f Mbit/s", *ar.ResponseMS, res.Summary.Sources[1].GoodputMbps)

	res, _ = run(t, fmt.Sprintf(framesDoc, "3s", "reply_priority = false"))
	ar = res.Summary.Sources[0]
	if ar.ResponseMS.P50 < 500 {
		t.Fatalf("replies without priority: response %+v, want them behind the bulk data", *ar.ResponseMS)
	}
}

// TestOneTimeBase: the qlog traces count time from the experiment's time
// zero, as paths.csv does: every path state change in paths.csv (all
// kept with path_interval = "0") is a recovery_metrics_updated event of
// the same end's trace at the same time.
func TestOneTimeBase(t *testing.T) {
	_, dir := run(t, `name = "timebase"
duration = "1s"
[[path]]
rate = "20Mbit"
rtt = "30ms"
[[path]]
rate = "20Mbit"
rtt = "60ms"
[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"
[[source]]
name = "bg"
kind = "bulk"
[output]
qlog = true
path_interval = "0"
`)
	checkTimeBase(t, dir)
}

// checkTimeBase compares paths.csv with the qlog traces in dir: times
// must agree to the microsecond (paths.csv rounds to it).
func checkTimeBase(t *testing.T, dir string) {
	t.Helper()
	type key struct {
		vantage string
		path    uint64
		cwnd    uint64
	}
	events := map[key][]float64{} // qlog times in ms
	traces, _ := filepath.Glob(filepath.Join(dir, "qlog", "*.sqlog"))
	if len(traces) != 2 {
		t.Fatalf("traces %v", traces)
	}
	for _, tr := range traces {
		// ODCID_VANTAGE.sqlog (package qlogfile).
		vantage := strings.TrimSuffix(filepath.Base(tr)[strings.LastIndex(filepath.Base(tr), "_")+1:], ".sqlog")
		f, err := os.Open(tr)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev struct {
				Time float64 `json:"time"`
				Name string  `json:"name"`
				Data struct {
					PathID uint64 `json:"path_id"`
					Cwnd   uint64 `json:"congestion_window"`
				} `json:"data"`
			}
			if json.Unmarshal([]byte(strings.TrimLeft(sc.Text(), "\x1e")), &ev) != nil || ev.Name != "quic:recovery_metrics_updated" {
				continue
			}
			k := key{vantage, ev.Data.PathID, ev.Data.Cwnd}
			events[k] = append(events[k], ev.Time)
		}
		f.Close()
	}
	rows := readCSV(t, filepath.Join(dir, "paths.csv"))
	if len(rows) < 100 {
		t.Fatalf("%d rows in paths.csv", len(rows))
	}
	for _, r := range rows {
		k := key{r["vantage"], uint64(num(t, r["path_id"])), uint64(num(t, r["cwnd"]))}
		at := num(t, r["time_ms"])
		found := false
		for _, et := range events[k] {
			found = found || math.Abs(et-at) <= 0.0006
		}
		if !found {
			t.Fatalf("paths.csv row %v has no qlog event at the same time (qlog times of that path and window: %v)", r, events[k])
		}
	}
}

// TestPaperRunSize: a 60 s run of the paper's setup writes less than 3 MB
// by default (paths.csv sampled every 10 ms; every change is about 15 MB).
func TestPaperRunSize(t *testing.T) {
	if testing.Short() {
		t.Skip("a 60 s simulated run")
	}
	runs, err := experiment.Load("../experiments/paper-fig4.toml", []experiment.Override{
		{Key: "transport.path_scheduler", Value: "cwr-red"}, {Key: "source.s1.interval", Value: "50ms"}, {Key: "source.s1.size", Value: "10kB"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Run(context.Background(), &runs[0], dir); err != nil {
		t.Fatal(err)
	}
	var total int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		total += info.Size()
		t.Logf("%s: %d bytes", e.Name(), info.Size())
	}
	if total > 3<<20 {
		t.Fatalf("a 60 s run wrote %d bytes", total)
	}
}

// TestProvenance: summary.json says what produced the run: the build
// (module, version, Go), the backend, the seed and when it started.
func TestProvenance(t *testing.T) {
	before := time.Now().UTC().Add(-time.Second)
	res, _ := run(t, `name = "prov"
duration = "200ms"
seed = 42
[[path]]
[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "1kB"
`)
	p := res.Summary.Provenance
	if p == nil {
		t.Fatal("no provenance")
	}
	started, err := time.Parse(time.RFC3339Nano, p.Started)
	if err != nil || started.Before(before) || started.After(time.Now()) {
		t.Fatalf("started %q: %v", p.Started, err)
	}
	if p.Module != "github.com/mpq/mpq" || p.Version == "" || p.GoVersion != runtime.Version() || p.Backend != "sim" || p.Seed != 42 || p.Emulator != "" {
		t.Fatalf("provenance %+v", *p)
	}
	if res.Summary.WallS <= 0 {
		t.Fatalf("wall_s %v", res.Summary.WallS)
	}
}

// TestDeadPath: a second path that loses every packet cannot be validated.
// That is an outcome of the experiment, recorded in summary.json, not a
// failure of the run: the messages go over the first path, every one
// accounted for, and a sweep over loss rates keeps the repetitions in
// which a path failed instead of losing them.
func TestDeadPath(t *testing.T) {
	res, _ := run(t, deadPathDoc)
	checkDeadPath(t, res.Summary)
	// The same with the ends recording halves, as two hosts do.
	split, err := simulate(context.Background(), load(t, deadPathDoc), t.TempDir(), time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	checkDeadPath(t, split.Summary)
}

const deadPathDoc = `name = "dead"
duration = "6s"
[[path]]
rate = "20Mbit"
rtt = "20ms"
[[path]]
rate = "20Mbit"
rtt = "20ms"
loss = 1.0
[[source]]
name = "p"
kind = "periodic"
interval = "100ms"
size = "2kB"
[[source]]
name = "rr"
kind = "request-response"
interval = "100ms"
size = "1kB"
`

func checkDeadPath(t *testing.T, s *trafficgen.Summary) {
	t.Helper()
	if len(s.PathsFailed) != 1 || s.PathsFailed[0].Path != 1 || s.PathsFailed[0].Error == "" {
		t.Fatalf("paths failed %+v, want path 1", s.PathsFailed)
	}
	for _, src := range s.Sources {
		if src.Messages != 60 || src.Completed != 60 {
			t.Errorf("%s: %d of %d messages completed, want 60 of 60", src.Name, src.Completed, src.Messages)
		}
	}
}

// openFilesBelow lists the files below dir this process has open.
func openFilesBelow(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			open = append(open, target)
		}
	}
	return open
}

// TestFailedRunClosesTraces: a run that fails (the client cannot connect
// over a path that loses everything) leaves none of its qlog traces open.
func TestFailedRunClosesTraces(t *testing.T) {
	dir := t.TempDir()
	_, err := Run(context.Background(), load(t, `name = "noconn"
duration = "2s"
[[path]]
loss = 1.0
[[source]]
kind = "periodic"
interval = "100ms"
size = "1kB"
[output]
qlog = true
`), dir)
	if err == nil {
		t.Fatal("a run without a connection succeeded")
	}
	if traces, _ := filepath.Glob(filepath.Join(dir, "qlog", "*.sqlog")); len(traces) == 0 {
		t.Fatal("no trace was created: the test tests nothing")
	}
	if open := openFilesBelow(t, dir); len(open) > 0 {
		t.Fatalf("files left open after the run failed: %v", open)
	}
}
