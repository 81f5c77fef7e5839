package plots

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/trafficgen"
)

// fixtureTOML is the experiment of the synthetic runs: two paths of
// 100 Mbit/s, the second with 25 ms one-way delay (the fastest), a
// periodic priority source s1 and bulk data.
const fixtureTOML = `name = "fix"
duration = "10s"
[[path]]
rate = "100Mbit"
rtt = "80ms"
[[path]]
rate = "100Mbit"
rtt = "50ms"
[transport]
path_scheduler = "cwr"
[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"
[[source]]
name = "background"
kind = "bulk"
`

// fixture describes one synthetic run.
type fixture struct {
	point, rep int
	sched      string
	// kind is the transport's kind in summary.json ("": none written).
	kind string
	vary []string
	// times are s1's message completion times (+Inf: failed), the
	// first warmup of them created in the warm-up.
	times  []float64
	warmup int
	// baseSeed is the sweep's base seed; rep the repetition.
	baseSeed uint64
	// throughput of the server (total, priority) and the cwnd growth
	// of paths 0 and 1.
	total, prio float64
	growth      [2]float64
	// paths is paths.csv after its header ("" for none).
	paths string
	// throughput is throughput.csv after its header ("" for none).
	throughput string
	// changes are the run's scheduled link changes.
	changes []trafficgen.LinkChangeSummary
	// competitors are the run's competing connections.
	competitors []trafficgen.CompetitorSummary
	// sha is the configuration's hash ("": one per point).
	sha string
	// backend is summary.json's backend, emulator its provenance's.
	backend, emulator string
}

// writeFixture writes the run f into dir/<point>/rep<rep> as mpq run
// would, and returns its directory.
func writeFixture(t *testing.T, dir string, f fixture) string {
	t.Helper()
	rd := filepath.Join(dir, fmt.Sprintf("p%d", f.point), fmt.Sprintf("rep%d", f.rep))
	if err := os.MkdirAll(rd, 0o755); err != nil {
		t.Fatal(err)
	}
	sha := f.sha
	if sha == "" {
		sha = fmt.Sprintf("sha%d", f.point)
	}
	s := trafficgen.Summary{Name: "fix", Backend: f.backend, Point: f.point, Vary: f.vary, Repetition: f.rep, Repeat: 2, BaseSeed: f.baseSeed,
		ConfigSHA256: sha, DurationS: 10, PathScheduler: f.sched, StreamScheduler: "priority-fifo",
		Sources: []trafficgen.SourceSummary{
			{Name: "s1", Kind: "periodic", Sender: "server", Priority: true, Messages: len(f.times) - f.warmup, WarmupExcluded: f.warmup,
				MCTMS: trafficgen.DistributionOf(f.times[f.warmup:]), Failed: failedOf(f.times[f.warmup:])},
			{Name: "background", Kind: "bulk", Sender: "server"},
		},
		ThroughputMbps: trafficgen.Directions{Server: trafficgen.Throughput{Total: f.total, Priority: f.prio, Background: f.total - f.prio}},
		LinkChanges:    f.changes,
		Competitors:    f.competitors,
		Transport:      trafficgen.TransportSummary{Kind: f.kind},
	}
	if f.emulator != "" {
		s.Provenance = &trafficgen.Provenance{Backend: f.backend, Emulator: f.emulator}
	}
	for i, g := range f.growth {
		s.Paths = append(s.Paths, trafficgen.PathSummary{ID: uint64(i), RTTMS: 50, Server: &trafficgen.PathEnd{CwndGrowthCA: &g}})
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var msgs strings.Builder
	msgs.WriteString(trafficgen.MessagesHeader + "\n")
	for i, v := range f.times {
		created := 100 + 50*float64(i)
		status, failed, delivered, mct := "completed", "", fmt.Sprintf("%.3f", created+v), fmt.Sprintf("%.3f", v)
		if math.IsInf(v, 1) {
			status, failed, delivered, mct = "failed", "timeout", "", "+Inf"
		}
		fmt.Fprintf(&msgs, "s1,periodic,%d,true,false,10000,1,%.3f,%.3f,%.3f,%s,,%s,+Inf,%d,false,%s,%s,%t,0.000\n",
			i, created, created, created, delivered, mct, 1+8*i, status, failed, i < f.warmup)
	}
	files := map[string]string{"summary.json": string(b), "messages.csv": msgs.String(), "config.resolved.toml": fixtureTOML}
	if f.throughput != "" {
		files["throughput.csv"] = "time_ms,what,sender,path_id,class,bytes,mbps\n" + f.throughput
	}
	if f.paths != "" {
		files["paths.csv"] = "time_ms,vantage,path_id,cwnd,bytes_in_flight,ssthresh,srtt_ms,min_rtt_ms,latest_rtt_ms,state\n" + f.paths
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(rd, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return rd
}

// loadFixtures writes the runs and loads them back, labelled.
func loadFixtures(t *testing.T, fs ...fixture) []*Point {
	t.Helper()
	dir := t.TempDir()
	for _, f := range fs {
		writeFixture(t, dir, f)
	}
	points, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetLabels(points, nil); err != nil {
		t.Fatal(err)
	}
	return points
}

// failedOf counts the failed messages (+Inf) among times, as
// summary.json's failed does.
func failedOf(times []float64) int {
	n := 0
	for _, v := range times {
		if math.IsInf(v, 1) {
			n++
		}
	}
	return n
}
