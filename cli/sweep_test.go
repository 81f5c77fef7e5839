package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mpq/mpq/trafficgen"
)

// sweepFile: 2 grid points x 2 repetitions of short simulated runs.
const sweepFile = `name = "sweep"
duration = "1s"
repeat = 2
[[path]]
rate = "20Mbit"
rtt = "20ms"
loss = "1%"
[[path]]
rate = "20Mbit"
rtt = "40ms"
[transport]
stream_scheduler = "priority-fifo"
[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "5kB"
[[source]]
name = "bg"
kind = "bulk"
[sweep]
"transport.path_scheduler" = ["lowrtt", "cwr"]
`

// treeFiles maps every file below dir (relative, slash-separated) to its
// contents, with the fields that tell the wall clock removed from the
// JSON files (summary.json's provenance.started and wall_s,
// aggregate.json's provenance.started): no seed fixes them.
func treeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch d.Name() {
		case "summary.json", "aggregate.json":
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			prov, _ := m["provenance"].(map[string]any)
			if prov == nil || prov["started"] == nil {
				t.Fatalf("%s has no provenance.started", p)
			}
			delete(prov, "started")
			delete(m, "wall_s")
			if b, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyTree copies the files below src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestShardsMergeToTheUnshardedRun: a sweep run in three shards (as on
// three machines), their directories copied together and merged with mpq
// aggregate, equals the sweep run at once, file by file and byte for byte
// (wall-clock fields aside).
func TestShardsMergeToTheUnshardedRun(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "sweep.toml", sweepFile)
	whole := filepath.Join(dir, "whole")
	if code, _, stderr := runCmd(t, "run", f, "--out", whole); code != 0 {
		t.Fatalf("unsharded: exit %d: %s", code, stderr)
	}
	merged := filepath.Join(dir, "merged")
	lines := 0
	for _, k := range []string{"1/3", "2/3", "3/3"} {
		out := filepath.Join(dir, "shard"+k[:1])
		code, stdout, stderr := runCmd(t, "run", f, "--out", out, "--shard", k)
		if code != 0 || !strings.Contains(stderr, "mpq aggregate") {
			t.Fatalf("shard %s: exit %d: %s", k, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(out, "sweep", "aggregate.csv")); !os.IsNotExist(err) {
			t.Fatalf("shard %s wrote a partial aggregate", k)
		}
		lines += strings.Count(stdout, "\n")
		copyTree(t, out, merged)
	}
	if lines != 4 {
		t.Fatalf("the shards ran %d runs, want 4", lines)
	}
	code, stdout, stderr := runCmd(t, "aggregate", filepath.Join(merged, "sweep"))
	if code != 0 || !strings.Contains(stdout, "4 runs aggregated") {
		t.Fatalf("mpq aggregate: exit %d: %s %s", code, stdout, stderr)
	}
	a, b := treeFiles(t, filepath.Join(whole, "sweep")), treeFiles(t, filepath.Join(merged, "sweep"))
	for _, name := range []string{"runs.csv", "aggregate.csv", "aggregate.json",
		"transport.path_scheduler=cwr/rep1/messages.csv", "transport.path_scheduler=cwr/rep1/summary.json"} {
		if a[name] == nil {
			t.Fatalf("the unsharded run has no %s", name)
		}
	}
	if len(a) != len(b) {
		t.Fatalf("%d files unsharded, %d merged", len(a), len(b))
	}
	for name, content := range a {
		if !bytes.Equal(content, b[name]) {
			t.Errorf("%s differs between the unsharded run and the merged shards", name)
		}
	}
}

// TestResumeAfterInterrupt: Ctrl-C after the first run of a sweep, then
// --resume: the finished run is kept as it is, only the rest runs, and
// the aggregate covers all.
func TestResumeAfterInterrupt(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "sweep.toml", sweepFile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelAfter{s: "[1/4]", cancel: cancel}
	var out bytes.Buffer
	if code := run(ctx, []string{"run", f, "--out", dir, "--parallel", "1"}, &out, stderr); code != exitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, exitInterrupted, stderr.buf.String())
	}
	first := filepath.Join(dir, "sweep", "transport.path_scheduler=lowrtt", "rep0")
	marker := filepath.Join(first, "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatalf("the first run was not kept: %v", err)
	}
	code, stdout, errs := runCmd(t, "run", f, "--out", dir, "--parallel", "1", "--resume")
	if code != 0 {
		t.Fatalf("--resume: exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "1 of 4 runs already complete, 3 to run") || strings.Count(stdout, "\n") != 3 || strings.Contains(stdout, "lowrtt/rep0") {
		t.Fatalf("--resume ran:\n%s\n%s", stdout, errs)
	}
	// The kept run's directory was not replaced (runs are written
	// elsewhere and renamed over the old directory).
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the kept run was run again: %v", err)
	}
	rows := strings.Count(readString(t, filepath.Join(dir, "sweep", "runs.csv")), "\n")
	if rows != 5 {
		t.Fatalf("runs.csv has %d lines, want a header and 4 runs", rows)
	}
	// Nothing left: --resume runs nothing. A run whose resolved
	// configuration changed (here every run: an [output] key, which does
	// not rename the directories) runs again.
	code, stdout, errs = runCmd(t, "run", f, "--out", dir, "--resume")
	if code != 0 || stdout != "" || !strings.Contains(errs, "4 of 4 runs already complete, 0 to run") {
		t.Fatalf("second --resume: exit %d\n%s\n%s", code, stdout, errs)
	}
	code, stdout, errs = runCmd(t, "run", f, "--out", dir, "--resume", "--set", "output.path_interval=0")
	if code != 0 || strings.Count(stdout, "\n") != 4 || !strings.Contains(errs, "0 of 4 runs already complete") {
		t.Fatalf("--resume with another configuration: exit %d\n%s\n%s", code, stdout, errs)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the run of the old configuration was kept: %v", err)
	}
}

// TestResumeRerunsStaleRuns: --resume keeps only runs that are whole and
// of this sweep. A run directory with a summary.json that does not read
// (a copy cut short), one without messages.csv, and runs of the same
// configuration but of another sweep (the sweep's values reordered, so
// that their summaries name other grid points; run with another
// --repeat) are run again, and the aggregate is right.
func TestResumeRerunsStaleRuns(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "sweep.toml", sweepFile)
	if code, _, errs := runCmd(t, "run", f, "--out", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	base := filepath.Join(dir, "sweep")
	if err := os.WriteFile(filepath.Join(base, "transport.path_scheduler=lowrtt", "rep0", "summary.json"), []byte("{\"name\": \"swe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(base, "transport.path_scheduler=cwr", "rep1", "messages.csv")); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := runCmd(t, "run", f, "--out", dir, "--resume")
	if code != 0 || !strings.Contains(errs, "2 of 4 runs already complete, 2 to run") ||
		!strings.Contains(stdout, "lowrtt/rep0") || !strings.Contains(stdout, "cwr/rep1") {
		t.Fatalf("--resume of damaged runs: exit %d\n%s\n%s", code, stdout, errs)
	}
	// The sweep's values in the other order: same directories and
	// configurations, other grid points.
	swapped := writeFile(t, dir, "swapped.toml", strings.Replace(sweepFile, `["lowrtt", "cwr"]`, `["cwr", "lowrtt"]`, 1))
	code, stdout, errs = runCmd(t, "run", swapped, "--out", dir, "--resume")
	if code != 0 || !strings.Contains(errs, "0 of 4 runs already complete") {
		t.Fatalf("--resume of a reordered sweep: exit %d\n%s\n%s", code, stdout, errs)
	}
	agg := readString(t, filepath.Join(base, "aggregate.csv"))
	if !strings.Contains(agg, "\n0,2,2,transport.path_scheduler=cwr,cwr,") {
		t.Fatalf("aggregate.csv after the reordered sweep:\n%s", agg)
	}
	// --repeat 3 over repeat = 2: rep0 and rep1 are the same runs, but
	// their summaries say repeat 2 and the aggregate would mix them with
	// runs that say 3.
	code, _, errs = runCmd(t, "run", swapped, "--out", dir, "--resume", "--repeat", "3")
	if code != 0 || !strings.Contains(errs, "0 of 6 runs already complete") {
		t.Fatalf("--resume --repeat 3 over repeat = 2: exit %d\n%s", code, errs)
	}
}

// TestReplacedRunsAreReported: a run replaces what its directory held,
// and says so: a run of the same name, and the repetitions of an earlier
// sweep run with another repeat (whose directories lie inside).
func TestReplacedRunsAreReported(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "sweep.toml", sweepFile)
	if code, _, errs := runCmd(t, "run", f, "--out", dir); code != 0 || strings.Contains(errs, "replaced") {
		t.Fatalf("first run: exit %d: %s", code, errs)
	}
	code, _, errs := runCmd(t, "run", f, "--out", dir, "--repeat", "1")
	want := "transport.path_scheduler=cwr: replaced the 2 earlier runs in it (rep0, rep1)"
	if code != 0 || !strings.Contains(errs, want) {
		t.Fatalf("--repeat 1 over repeat = 2: exit %d, want %q in\n%s", code, want, errs)
	}
	code, _, errs = runCmd(t, "run", f, "--out", dir, "--repeat", "1")
	if code != 0 || strings.Count(errs, "replaced the earlier run in it\n") != 2 {
		t.Fatalf("the same runs again: exit %d\n%s", code, errs)
	}
}

func readString(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSweepFlags: bad --shard, --repeat and --parallel values exit 2 with
// nothing run (--repeat 0 and --parallel 0 are not taken for the
// defaults); so does a repeat of 0 in the file.
func TestSweepFlags(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "sweep.toml", sweepFile)
	for _, bad := range []string{"0/3", "4/3", "1", "a/b", "1/0"} {
		if code, _, stderr := runCmd(t, "run", f, "--out", dir, "--shard", bad); code != exitUsage || !strings.Contains(stderr, "--shard") {
			t.Errorf("--shard %s: exit %d, %s", bad, code, stderr)
		}
	}
	for _, bad := range [][]string{{"--repeat", "-1"}, {"--repeat", "0"}, {"--repeat=0"}, {"--parallel", "0"}, {"--parallel", "-2"}} {
		args := append([]string{"run", f, "--out", dir}, bad...)
		if code, _, stderr := runCmd(t, args...); code != exitUsage || !strings.Contains(stderr, strings.Replace(strings.Join(bad, " "), "=", " ", 1)) {
			t.Errorf("%s: exit %d, %s", strings.Join(bad, " "), code, stderr)
		}
	}
	zero := writeFile(t, dir, "zero.toml", strings.Replace(sweepFile, "repeat = 2", "repeat = 0", 1))
	if code, _, stderr := runCmd(t, "run", zero, "--out", dir); code != exitUsage || !strings.Contains(stderr, "zero.toml:3: repeat: 0 outside [1, 10000]") {
		t.Errorf("repeat = 0: exit %d, %s", code, stderr)
	}
	if names := runDirs(t, dir); len(names) != 0 {
		t.Errorf("runs written: %v", names)
	}
}

// runDirs lists the directories in dir (the runs of a sweep, beside its
// aggregate files).
func runDirs(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestAggregateArguments: mpq aggregate takes one directory.
func TestAggregateArguments(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"aggregate"}, {"aggregate", dir, dir}, {"aggregate", filepath.Join(dir, "missing")}} {
		if code, stdout, stderr := runCmd(t, args...); code != exitUsage || stdout != "" || !strings.Contains(stderr, "mpq aggregate: ") {
			t.Errorf("mpq %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
		}
	}
	// A directory without runs: nothing to aggregate.
	if code, _, stderr := runCmd(t, "aggregate", dir); code != exitFailure || !strings.Contains(stderr, "no runs") {
		t.Errorf("mpq aggregate of an empty directory: exit %d, stderr %q", code, stderr)
	}
}

// TestConsoleHeadlines: the console line shows each kind's headline
// metric: MCT for periodic sources, response time for request-response
// and frames, completion time for files, completion ratio and time for
// stop-and-wait, goodput for bulk; +Inf when failures reach the quantile.
func TestConsoleHeadlines(t *testing.T) {
	d := func(p50, p99, max float64) *trafficgen.Dist {
		return &trafficgen.Dist{P50: trafficgen.Millis(p50), P99: trafficgen.Millis(p99), Max: trafficgen.Millis(max)}
	}
	ratio, ct := 0.95, trafficgen.Millis(1234.5)
	s := &trafficgen.Summary{PathScheduler: "cwr", StreamScheduler: "priority-fifo",
		ThroughputMbps: trafficgen.Directions{Server: trafficgen.Throughput{Total: 20.04}, Client: trafficgen.Throughput{Total: 7.25}},
		Sources: []trafficgen.SourceSummary{
			{Name: "p", Kind: "periodic", Messages: 10, Completed: 10, MCTMS: d(25.8, 51.9, 60), ResponseMS: d(1, 1, 1)},
			{Name: "rr", Kind: "request-response", Messages: 5, Completed: 4, MCTMS: d(1, 1, 1), ResponseMS: d(40, math.Inf(1), math.Inf(1))},
			{Name: "ar", Kind: "frames", Messages: 300, Completed: 300, MCTMS: d(1, 1, 1), ResponseMS: d(32.3, 56, 58)},
			{Name: "f", Kind: "file", Messages: 3, Completed: 3, MCTMS: d(10, 10, 10), ResponseMS: d(413, 500, 516)},
			{Name: "saw", Kind: "stop-and-wait", Messages: 20, Completed: 19, CompletionRatio: &ratio, CompletionTimeMS: &ct},
			{Name: "bg", Kind: "bulk", GoodputMbps: 18.44},
		}}
	want := "dir: cwr/priority-fifo  p mct p50 25.8ms p99 51.9ms (10/10)  rr response p50 40.0ms p99 +Inf (4/5)" +
		"  ar response p50 32.3ms p99 56.0ms (300/300)  f completion p50 413.0ms max 516.0ms (3/3)" +
		"  saw completion ratio 0.950 time 1234.5ms (19/20)  bg goodput 18.4 Mbit/s  throughput server 20.0 client 7.2 Mbit/s"
	if got := oneLine("dir", s); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	s.PathsFailed = []trafficgen.PathFailure{{Path: 1, Error: "validation failed"}}
	if got := oneLine("dir", s); got != want+"  path 1 failed" {
		t.Fatalf("with a failed path: %s", got)
	}
	// Receive-queue drops are shown only where there are some.
	s.ReceiveQueueDropped = map[string]uint64{"client": 12, "server": 0}
	if got := oneLine("dir", s); got != want+"  path 1 failed  client receive queue dropped 12 datagrams" {
		t.Fatalf("with receive-queue drops: %s", got)
	}
	// Competitors' goodput, and a stop-and-wait source's time to its first
	// acknowledgement (issue 37: the console line left them out).
	ack := trafficgen.Millis(120.25)
	s2 := *s
	s2.PathsFailed, s2.ReceiveQueueDropped = nil, nil
	s2.Sources = append([]trafficgen.SourceSummary(nil), s.Sources...)
	s2.Sources[4].ConnectToFirstAckMS = &ack
	s2.Competitors = []trafficgen.CompetitorSummary{{Name: "single", GoodputMbps: 6.87}}
	if got, w := oneLine("dir", &s2), "saw completion ratio 0.950 time 1234.5ms first ack 120.2ms (19/20)  bg goodput 18.4 Mbit/s  competitor single goodput 6.9 Mbit/s  throughput"; !strings.Contains(got, w) {
		t.Fatalf("with a competitor and a first acknowledgement:\n%s\nwant it to contain\n%s", got, w)
	}
	// Messages of the warm-up are counted apart.
	s.Sources[0].WarmupExcluded = 3
	if got := oneLine("dir", s); !strings.Contains(got, "p mct p50 25.8ms p99 51.9ms (10/10, 3 in warm-up)") {
		t.Fatalf("with a warm-up: %s", got)
	}
}

// TestStaleTemporariesRemoved: what a killed mpq run left (the temporary
// directory of a run under way) is removed when the same run is written
// again, or kept by --resume; another target's is not touched.
func TestStaleTemporariesRemoved(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "sweep.toml", sweepFile)
	point := filepath.Join(dir, "sweep", "transport.path_scheduler=lowrtt")
	stale := []string{filepath.Join(point, ".rep0.tmp-123"), filepath.Join(point, ".rep1.tmp-456")}
	other := filepath.Join(point, ".rep10.tmp-789")
	for _, d := range append(stale, other) {
		if err := os.MkdirAll(filepath.Join(d, "qlog"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := runCmd(t, "run", f, "--out", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, d := range stale {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left after its run was written again: %v", d, err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another target's temporary directory removed: %v", err)
	}
	// --resume keeps the complete runs and removes their leftovers too.
	if err := os.MkdirAll(stale[0], 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCmd(t, "run", f, "--out", dir, "--resume"); code != 0 || !strings.Contains(errs, "4 of 4 runs already complete") {
		t.Fatalf("--resume: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(stale[0]); !os.IsNotExist(err) {
		t.Errorf("%s left after --resume kept its run: %v", stale[0], err)
	}
}

// TestRerunAggregatesTheWholeDirectory: the aggregate after a run
// describes every run in the directory. A second invocation whose runs
// cannot be aggregated with the first's (--set duration=2s: other
// configurations at the same grid points) leaves no runs.csv or
// aggregate describing only its own runs, and says why.
func TestRerunAggregatesTheWholeDirectory(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "sweep.toml", sweepFile)
	base := filepath.Join(dir, "sweep")
	if code, _, errs := runCmd(t, "run", f, "--out", dir, "--repeat", "1"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if rows := strings.Count(readString(t, filepath.Join(base, "runs.csv")), "\n"); rows != 3 {
		t.Fatalf("runs.csv has %d lines, want a header and 2 runs", rows)
	}
	code, _, errs := runCmd(t, "run", f, "--out", dir, "--repeat", "1", "--set", "duration=2s")
	if code != exitFailure || !strings.Contains(errs, "holds runs of another invocation") {
		t.Fatalf("second invocation: exit %d: %s", code, errs)
	}
	for _, name := range []string{"runs.csv", "aggregate.csv", "aggregate.json"} {
		if _, err := os.Stat(filepath.Join(base, name)); !os.IsNotExist(err) {
			t.Errorf("%s left after the second invocation: %v", name, err)
		}
	}
}

// TestFailedRerunRemovesTheAggregate: a second invocation into the same
// directory whose runs fail (the file edited: every packet lost) replaces
// the earlier runs it reaches; the earlier runs.csv and aggregate, which
// describe runs no longer there, go, and so does a shard's.
func TestFailedRerunRemovesTheAggregate(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "sweep.toml", strings.Replace(sweepFile, "repeat = 2", "repeat = 1", 1))
	base := filepath.Join(dir, "sweep")
	aggregates := []string{"runs.csv", "aggregate.csv", "aggregate.json"}
	present := func() (n int) {
		for _, name := range aggregates {
			if _, err := os.Stat(filepath.Join(base, name)); err == nil {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		name string
		file string
		args []string
		code int
	}{
		{"runs failed", strings.Replace(strings.Replace(sweepFile, "repeat = 2", "repeat = 1", 1), `loss = "1%"`, `loss = "100%"`, 1),
			nil, exitFailure},
		{"a shard", "", []string{"--shard", "1/2"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, dir, "sweep.toml", strings.Replace(sweepFile, "repeat = 2", "repeat = 1", 1))
			if code, _, errs := runCmd(t, "run", f, "--out", dir); code != 0 || present() != 3 {
				t.Fatalf("first invocation: exit %d, %d of 3 aggregate files: %s", code, present(), errs)
			}
			if tc.file != "" {
				writeFile(t, dir, "sweep.toml", tc.file)
			}
			code, _, errs := runCmd(t, append([]string{"run", f, "--out", dir}, tc.args...)...)
			if code != tc.code || present() != 0 || !strings.Contains(errs, "removed the earlier runs.csv, aggregate.csv, aggregate.json") {
				t.Fatalf("second invocation: exit %d, %d aggregate files left: %s", code, present(), errs)
			}
		})
	}
}

// TestLongRunNames: a run whose label (the sweep's values and the
// overrides) would make a directory name longer than file systems allow
// is written under a shortened name that ends in a hash of the whole
// label, so two such runs stay apart; a short label is the name as it
// was.
func TestLongRunNames(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "sweep.toml", strings.Replace(sweepFile, "repeat = 2", "repeat = 1", 1))
	var sets []string
	for _, s := range []string{"path.0.rate=21Mbit", "path.1.rate=22Mbit", "path.0.rtt=21ms", "path.1.rtt=41ms",
		"path.0.loss=0.5%", "source.s1.interval=51ms", "source.s1.size=4kB", "transport.max_packet_size=1300",
		"transport.congestion=cubic", "path.0.queue=50kB", "path.1.queue=60kB", "transport.receive_window=4MB"} {
		sets = append(sets, "--set", s)
	}
	args := append([]string{"run", f, "--out", dir}, sets...)
	if code, _, stderr := runCmd(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	runs := runDirs(t, filepath.Join(dir, "sweep"))
	if len(runs) != 2 {
		t.Fatalf("runs %v, want 2", runs)
	}
	for _, r := range runs {
		if len(r) > maxRunName || !regexp.MustCompile(`~[0-9a-f]{16}$`).MatchString(r) {
			t.Errorf("run directory %q (%d bytes): want at most %d ending in ~ and a hash", r, len(r), maxRunName)
		}
	}
	if runs[0][:maxRunName-17] != runs[1][:maxRunName-17] || runs[0] == runs[1] {
		t.Errorf("two labels with a common start: %q and %q", runs[0], runs[1])
	}
	if got := shorten("transport.path_scheduler=cwr"); got != "transport.path_scheduler=cwr" {
		t.Errorf("a short name changed: %q", got)
	}
}

// TestInterruptedRunLeavesNoEmptyDirectory: a run interrupted before it
// completes leaves neither its temporary directory nor the grid point's
// directory made for it (issue 37: an interrupted sweep left an empty
// run directory); a point directory that held something stays.
func TestInterruptedRunLeavesNoEmptyDirectory(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "sweep.toml", sweepFile)
	runs, probs := loadRuns(f, nil, nil, "", 0)
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	point := filepath.Join(dir, "out", "point")
	if _, _, err := runOne(ctx, &runs[0], filepath.Join(point, "rep0")); err == nil {
		t.Fatal("a run with its context cancelled succeeded")
	}
	if _, err := os.Stat(point); !os.IsNotExist(err) {
		t.Errorf("the interrupted run left %s: %v", point, err)
	}
	kept := filepath.Join(point, "rep1")
	if err := os.MkdirAll(kept, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runOne(ctx, &runs[0], filepath.Join(point, "rep0")); err == nil {
		t.Fatal("a run with its context cancelled succeeded")
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("another run's directory went: %v", err)
	}
}

// TestInterruptedSweepLeavesNoEmptyDirectory: a sweep interrupted before
// any run finished leaves neither the sweep's directory nor the --out
// directory it made, and keeps a --out directory that was there before.
func TestInterruptedSweepLeavesNoEmptyDirectory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outKept bool // --out existed before the run
	}{
		{"new --out", false},
		{"existing --out", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f := writeFile(t, dir, "sweep.toml", sweepFile)
			out := filepath.Join(dir, "out")
			if tc.outKept {
				if err := os.Mkdir(out, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var stdout, stderr bytes.Buffer
			if code := run(ctx, []string{"run", f, "--out", out}, &stdout, &stderr); code != exitInterrupted {
				t.Fatalf("exit %d, want %d (interrupted)\n%s", code, exitInterrupted, stderr.String())
			}
			if _, err := os.Stat(filepath.Join(out, "sweep")); !os.IsNotExist(err) {
				t.Errorf("the interrupted sweep left its directory: %v", err)
			}
			if _, err := os.Stat(out); tc.outKept != (err == nil) {
				t.Errorf("--out directory: %v, want it kept: %v", err, tc.outKept)
			}
		})
	}
}
