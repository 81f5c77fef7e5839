package runner

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

func load(t *testing.T, doc string) *experiment.Experiment {
	t.Helper()
	runs, err := experiment.Parse("test.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &runs[0]
}

func run(t *testing.T, doc string) (*Result, string) {
	t.Helper()
	dir := t.TempDir()
	res, err := Run(context.Background(), load(t, doc), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Summary.Problems {
		t.Errorf("problem: %s", p)
	}
	return res, dir
}

func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, k := range rows[0] {
			m[k] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// TestMCTOnIdlePath: with nothing else on a lossless path, a message's
// completion time is the one-way delay plus the serialization of its
// packets (10 kB in 8 packets of at most 1350 bytes at 100 Mbit/s: about
// 0.9 ms).
func TestMCTOnIdlePath(t *testing.T) {
	res, _ := run(t, `name = "idle"
duration = "3s"
[[path]]
rate = "100Mbit"
rtt = "50ms"
[transport]
multipath = false
[[source]]
name = "s1"
kind = "periodic"
interval = "100ms"
size = "10kB"
start = "500ms"
`)
	s := res.Summary.Sources[0]
	if s.Messages != 25 || s.Completed != 25 {
		t.Fatalf("%d messages sent, %d completed", s.Messages, s.Completed)
	}
	if s.MCTMS.Min < 25.8 || s.MCTMS.Max > 26.2 {
		t.Fatalf("MCT %+v, want 25 ms plus about 0.9 ms", *s.MCTMS)
	}
}

// TestStreamReuse: messages outlast the interval, so several streams are
// in use; a stream carries its next message only after the reply to the
// previous one arrived.
func TestStreamReuse(t *testing.T) {
	_, dir := run(t, `name = "reuse"
duration = "4s"
[[path]]
rate = "10Mbit"
rtt = "40ms"
[transport]
multipath = false
[[source]]
name = "big"
kind = "periodic"
interval = "20ms"
size = "20kB"
`)
	rows := readCSV(t, filepath.Join(dir, "messages.csv"))
	byStream := map[string][]map[string]string{}
	for _, r := range rows {
		if r["started_ms"] != "" {
			byStream[r["stream_id"]] = append(byStream[r["stream_id"]], r)
		}
	}
	if len(byStream) < 3 {
		t.Fatalf("%d streams used; messages should overlap", len(byStream))
	}
	reused := 0
	for id, ms := range byStream {
		sort.Slice(ms, func(i, j int) bool { return num(t, ms[i]["started_ms"]) < num(t, ms[j]["started_ms"]) })
		for i := 1; i < len(ms); i++ {
			prev := ms[i-1]["replied_ms"]
			if prev == "" || num(t, ms[i]["started_ms"]) < num(t, prev) {
				t.Fatalf("stream %s: message %s started at %s before the reply to %s (%s)", id, ms[i]["seq"], ms[i]["started_ms"], ms[i-1]["seq"], prev)
			}
			reused++
		}
	}
	if reused == 0 {
		t.Fatal("no stream was reused")
	}
}

// TestWorkloads runs every kind of source and checks its metrics.
func TestWorkloads(t *testing.T) {
	res, _ := run(t, `name = "workloads"
duration = "5s"
[[path]]
rate = "50Mbit"
rtt = "40ms"
[[path]]
rate = "50Mbit"
rtt = "40ms"
[[source]]
name = "rr"
kind = "request-response"
interval = "100ms"
size = 200
reply_size = "2kB"
[[source]]
name = "file"
kind = "file"
size = "1MB"
count = 3
interval = "200ms"
[[source]]
name = "frames"
kind = "frames"
size = "20kB"
[[source]]
name = "saw"
kind = "stop-and-wait"
size = 100
count = 20
[[source]]
name = "bg"
kind = "bulk"
`)
	by := map[string]trafficgen.SourceSummary{}
	for _, s := range res.Summary.Sources {
		by[s.Name] = s
	}
	if s := by["rr"]; s.Completed < 45 || s.ResponseMS == nil || s.ResponseMS.P50 < 40 || s.Jitter == nil {
		t.Fatalf("request-response %+v", s)
	}
	if s := by["file"]; s.Completed != 3 || s.ResponseMS == nil || s.ResponseMS.Min < 40 {
		t.Fatalf("file %+v", s)
	}
	// The files are replies: 3 MB read by the client in 5 s is
	// 4.8 Mbit/s of goodput, which the server sent.
	if s := by["file"]; s.ReplyGoodputMbps == nil || *s.ReplyGoodputMbps < 4.7 || *s.ReplyGoodputMbps > 4.9 {
		t.Fatalf("file reply goodput %v, want 3 MB in 5 s", s.ReplyGoodputMbps)
	}
	if g := res.Summary.GoodputMbps; g.Server.Total < res.Summary.Sources[4].GoodputMbps+4.7 || g.Client.Total < 4 {
		t.Fatalf("goodput per sender %+v: the server's must include the files, the client's the frames", g)
	}
	if s := by["frames"]; s.Completed < 140 || s.GoodputMbps < 4 {
		t.Fatalf("frames %+v (30 Hz of 20 kB is 4.8 Mbit/s)", s)
	}
	// Connection to the first publish (reference 003): the handshake's
	// round trip, not a second one for the publish's acknowledgement.
	if s := by["saw"]; s.CompletionRatio == nil || *s.CompletionRatio != 1 || s.ConnectToFirstMS == nil || *s.ConnectToFirstMS < 40 || *s.ConnectToFirstMS >= 80 {
		t.Fatalf("stop-and-wait %+v, connect to first publish %s ms", s, fmtOpt(s.ConnectToFirstMS))
	}
	// 20 publishes one after the other, each at least a 40 ms round trip.
	if s := by["saw"]; s.CompletionTimeMS == nil || *s.CompletionTimeMS < 20*40 || *s.CompletionTimeMS > 5000 {
		t.Fatalf("stop-and-wait completion time %v", s.CompletionTimeMS)
	}
	if res.Summary.GoodputMbps.Server.Background < 10 {
		t.Fatalf("bulk goodput %v", res.Summary.GoodputMbps)
	}
}

func fmtOpt(p *float64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatFloat(*p, 'f', 3, 64)
}

// TestDeterministic: the same file and seed give byte-identical results.
func TestDeterministic(t *testing.T) {
	doc := `name = "det"
duration = "3s"
seed = 5
[[path]]
rate = "20Mbit"
rtt = "30ms"
loss = "0.5%"
[[path]]
rate = "20Mbit"
rtt = "60ms"
loss = "0.5%"
[transport]
path_scheduler = "cwr"
stream_scheduler = "priority-fifo"
[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"
[[source]]
name = "bg"
kind = "bulk"
`
	_, d1 := run(t, doc)
	_, d2 := run(t, doc)
	for _, f := range []string{"messages.csv", "paths.csv", "throughput.csv", "summary.json"} {
		a := withoutWallClock(t, filepath.Join(d1, f))
		b := withoutWallClock(t, filepath.Join(d2, f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s differs between two runs with the same seed (%d and %d bytes)", f, len(a), len(b))
		}
	}
	other := bytes.Replace([]byte(doc), []byte("seed = 5"), []byte("seed = 6"), 1)
	_, d3 := run(t, string(other))
	a, _ := os.ReadFile(filepath.Join(d1, "messages.csv"))
	c, _ := os.ReadFile(filepath.Join(d3, "messages.csv"))
	if bytes.Equal(a, c) {
		t.Fatal("another seed gave the same messages.csv")
	}
}

// withoutWallClock reads a result file; of summary.json without the
// fields that tell the wall clock (provenance.started, wall_s and the
// machine it was measured on), which no seed fixes.
func withoutWallClock(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "summary.json" {
		return b
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	prov, ok := m["provenance"].(map[string]any)
	if !ok || prov["started"] == "" || m["wall_s"] == nil {
		t.Fatalf("summary.json without provenance.started or wall_s: %s", b)
	}
	// The machine goes with wall_s (it tells where it was measured).
	if mach, ok := m["machine"].(map[string]any); !ok || mach["cpus"] == nil || mach["cpus"].(float64) < 1 {
		t.Fatalf("summary.json without machine.cpus beside wall_s: %s", b)
	}
	delete(prov, "started")
	delete(m, "wall_s")
	delete(m, "machine")
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, load(t, `name = "c"
duration = "60s"
[[path]]
[[source]]
kind = "bulk"
`), t.TempDir())
	if err == nil {
		t.Fatal("cancelled run succeeded")
	}
}

var _ = time.Second

// TestLoopback runs a short experiment over real UDP sockets through the
// link emulator: a periodic priority source beside bulk data on two
// paths. It checks what real time cannot shift: the messages complete,
// both paths carry data, and the result files are written.
func TestLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run")
	}
	res, dir := run(t, `name = "loopback"
duration = "3s"
backend = "loopback"
[[path]]
rate = "20Mbit"
rtt = "30ms"
[[path]]
rate = "20Mbit"
rtt = "40ms"
[transport]
path_scheduler = "lowrtt"
stream_scheduler = "priority-fifo"
[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"
priority = true
[[source]]
name = "bg"
kind = "bulk"
[output]
qlog = true
path_interval = "0"
`)
	s := res.Summary
	// Real time too: the traces and the result files share time zero.
	checkTimeBase(t, dir)
	if s.Backend != "loopback" || !s.Multipath {
		t.Errorf("backend %q, multipath %v", s.Backend, s.Multipath)
	}
	if p := s.Provenance; p == nil || p.Emulator != "linkemu" || p.Backend != "loopback" {
		t.Errorf("provenance %+v: want the loopback backend's emulator, linkemu", p)
	}
	src := s.Sources[0]
	// The messages are due every 50 ms from when the connection was
	// ready (message 0's due time: its creation less its lateness) up to
	// 3 s, as in the simulator; the drain completes the last ones.
	rows := readCSV(t, filepath.Join(dir, "messages.csv"))
	ready := num(t, rows[0]["created_ms"]) - num(t, rows[0]["late_ms"])
	if want := int(math.Ceil((3000 - ready) / 50)); src.Messages != want || src.Completed != src.Messages || src.Failed != 0 {
		t.Errorf("%d messages sent, %d completed, %d failed; want %d (ready after %v ms)", src.Messages, src.Completed, src.Failed, want, ready)
	}
	if src.MCTMS == nil || src.MCTMS.Min < 15 {
		t.Errorf("MCT %+v: below the one-way delay", src.MCTMS)
	}
	if len(s.Paths) != 2 {
		t.Fatalf("%d paths", len(s.Paths))
	}
	for _, p := range s.Paths {
		if p.Server == nil || p.Server.StreamBytesSent < 100_000 || p.Server.MinRTTMS < 30 {
			t.Errorf("path %d: %+v", p.ID, p.Server)
		}
	}
	if s.GoodputMbps.Server.Background < 5 {
		t.Errorf("bulk goodput %v", s.GoodputMbps)
	}
	// Both ends' receive-queue drops are reported (a count, usually 0).
	if q := s.ReceiveQueueDropped; len(q) != 2 {
		t.Errorf("receive_queue_dropped %v: want the client's and the server's", q)
	}
	for _, f := range []string{"config.resolved.toml", "summary.json", "messages.csv", "paths.csv", "throughput.csv", "emulator.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	t.Logf("MCT %+v, goodput %+v, wall %v", *src.MCTMS, s.GoodputMbps, res.Wall)
}

// A loopback run stops promptly when its context is cancelled.
func TestLoopbackCancel(t *testing.T) {
	e := load(t, `name = "c"
duration = "60s"
backend = "loopback"
[[path]]
rate = "10Mbit"
rtt = "20ms"
[[source]]
kind = "bulk"
`)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Run(ctx, e, t.TempDir())
	if err == nil {
		t.Fatal("cancelled run succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v to stop", took)
	}
	t.Logf("stopped after %v: %v", time.Since(start), err)
}

// TestDrainCheckedAtOnce: a loopback run whose download was done before
// the window's end reports no drain, not the drainStep waited before the
// first look.
func TestDrainCheckedAtOnce(t *testing.T) {
	res, _ := run(t, `name = "done-early"
duration = "1s"
drain = "10s"
backend = "loopback"
[[path]]
rate = 0
rtt = "0s"
[transport]
multipath = false
[[source]]
name = "download"
kind = "file"
size = "100kB"
count = 1
`)
	s := res.Summary
	if len(s.Sources) != 1 || s.Sources[0].Completed != 1 {
		t.Fatalf("sources %+v: want the download completed", s.Sources)
	}
	if s.DrainedS >= drainStep.Seconds() {
		t.Errorf("drained %v s, want less than the %v of a wait before the first look", s.DrainedS, drainStep)
	}
}

// TestPacingBurstConfig: experiments pace in bursts of 10 datagrams on
// every backend (a negative PacingBurst, which the UDP driver keeps), so
// that the testbed paces as the simulator.
func TestPacingBurstConfig(t *testing.T) {
	e := load(t, strings.Replace(seriesDoc, "[transport]\n", "[transport]\npacing = true\n", 1))
	if c := coreConfig(e); c.PacingBurst >= 0 {
		t.Fatalf("PacingBurst %v, want negative (10 datagrams)", c.PacingBurst)
	}
}
