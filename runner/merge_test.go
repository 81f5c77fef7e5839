package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/trafficgen"
)

// splitDoc has every kind of source, both ends sending, two paths, loss
// and a drain: the halves of each end, merged, must give what one
// recorder gives.
const splitDoc = `name = "split"
duration = "4s"
seed = 3
[[path]]
rate = "20Mbit"
rtt = "40ms"
loss = "0.5%"
[[path]]
rate = "10Mbit"
rtt = "60ms"
[transport]
path_scheduler = "lowrtt"
stream_scheduler = "priority-fifo"
[[source]]
name = "prio"
kind = "periodic"
interval = "50ms"
size = "10kB"
priority = true
[[source]]
name = "rr"
kind = "request-response"
interval = "100ms"
size = 200
reply_size = "2kB"
[[source]]
name = "file"
kind = "file"
size = "300kB"
count = 3
interval = "200ms"
[[source]]
name = "frames"
kind = "frames"
size = "5kB"
[[source]]
name = "saw"
kind = "stop-and-wait"
size = 100
count = 20
[[source]]
name = "bg"
kind = "bulk"
[output]
qlog = false
`

// In the simulator, a run whose ends record their own halves, written
// as JSON and merged, gives the files of a run with one recorder: the
// same messages, rates, path samples and summary (but for the drain,
// which two processes cannot end early, and the problems' side).
func TestMergedHalvesMatchOneRecorder(t *testing.T) {
	e := load(t, splitDoc)
	one, split := t.TempDir(), t.TempDir()
	ctx := context.Background()
	if _, err := simulate(ctx, e, one, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	if _, err := simulate(ctx, e, split, time.Now(), true); err != nil {
		t.Fatal(err)
	}
	sa, sb := summaryMap(t, one), summaryMap(t, split)
	// The split run drains for the whole drain period, the other stops
	// when every message is done: compare the samples until then.
	until := (sa["duration_s"].(float64) + sa["drained_s"].(float64)) * 1000
	for _, f := range []string{"messages.csv", "throughput.csv", "paths.csv", "config.resolved.toml"} {
		a, err := os.ReadFile(filepath.Join(one, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(split, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "paths.csv" {
			// Samples of both ends at one instant may come in either
			// order.
			a, b = sortedLines(a, until), sortedLines(b, until)
		}
		if string(a) != string(b) {
			t.Errorf("%s differs:\n%s", f, firstDiff(string(a), string(b)))
		}
	}
	for _, k := range []string{"drained_s", "wall_s", "provenance"} {
		delete(sa, k)
		delete(sb, k)
	}
	ja, _ := json.MarshalIndent(sa, "", " ")
	jb, _ := json.MarshalIndent(sb, "", " ")
	if string(ja) != string(jb) {
		t.Errorf("summary.json differs:\n%s", firstDiff(string(ja), string(jb)))
	}
	if !strings.Contains(string(ja), `"completed"`) {
		t.Fatal("no messages in the summary")
	}
}

// sortedLines sorts the lines of a CSV file whose first field is a time
// in milliseconds, keeping those before until.
func sortedLines(b []byte, until float64) []byte {
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if ms, err := strconv.ParseFloat(strings.SplitN(l, ",", 2)[0], 64); err != nil || ms < until {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, "\n"))
}

func summaryMap(t *testing.T, dir string) map[string]any {
	t.Helper()
	var m map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return "line " + itoa(i+1) + ":\n- " + la[i] + "\n+ " + lb[i]
		}
	}
	return "lengths " + itoa(len(la)) + " and " + itoa(len(lb))
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestConnectionsPer1000: connections per 1000 of the client's messages,
// the warm-up's included, the server's messages not.
func TestConnectionsPer1000(t *testing.T) {
	tests := []struct {
		name    string
		conns   int
		sources []trafficgen.SourceSummary
		want    float64
	}{
		// 150 connections for 600 + 200 messages: 187.5 per 1000.
		{"warm-up included", 150, []trafficgen.SourceSummary{{Sender: "client", Messages: 600, WarmupExcluded: 200}}, 187.5},
		// 3 for 1000 + 500 + 500 client messages, the server's 700 not: 1.5.
		{"client's sources only", 3, []trafficgen.SourceSummary{{Sender: "client", Messages: 1000}, {Sender: "server", Messages: 700},
			{Sender: "client", Messages: 500, WarmupExcluded: 500}}, 1.5},
		{"no messages", 1, nil, 0},
	}
	for _, tc := range tests {
		sum := &trafficgen.Summary{Sources: tc.sources}
		sum.Transport.Connections = tc.conns
		if got := connectionsPer1000(sum); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
