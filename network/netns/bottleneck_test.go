package netns

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

const bottleneckDoc = `name = "bn"
seed = 5
[[bottleneck]]
name = "b"
rate = "50Mbit"
delay = "10ms"
[[path]]
rate = "50Mbit"
rtt = "20ms"
bottleneck = "b"
[[path]]
rate = "50Mbit"
rtt = "20ms"
bottleneck = "b"
[[source]]
name = "s"
kind = "bulk"
`

// netem cannot build a bottleneck shared by paths: --emulator netem is
// refused before anything is made, and the automatic choice takes the
// forwarder.
func TestBottleneckMode(t *testing.T) {
	runs, err := experiment.Parse("bn.toml", []byte(bottleneckDoc), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &runs[0]
	if err := CheckMode(e, ModeNetem); err == nil || !strings.Contains(err.Error(), `bn.toml: the netem emulator cannot build it (bottleneck "b" is shared by paths`) {
		t.Errorf("netem: %v", err)
	}
	if _, err := FromExperiment(e, "bn", ModeNetem); err == nil {
		t.Error("netem topology built")
	}
	topo, err := FromExperiment(e, "bn", "")
	if err != nil || topo.Mode != ModeForwarder || len(topo.Bottlenecks) != 1 || topo.Paths[1].Bottleneck != "b" {
		t.Errorf("auto: %+v, %v", topo, err)
	}
	e.Paths[0].Bottleneck, e.Paths[1].Bottleneck = "", ""
	if err := CheckMode(e, ModeNetem); err != nil {
		t.Errorf("without a bottleneck: %v", err)
	}
}

// Through the forwarder both paths pass the shared bottleneck: their round
// trips include its delay both ways (20 + 2 x 10 ms), and its counters
// count every echo of both paths.
func TestForwarderBottleneck(t *testing.T) {
	needRoot(t)
	topo, _ := upForwarder(t, bottleneckDoc, "bn")
	for _, from := range []string{"10.0.0.1", "10.1.0.1"} {
		to := strings.TrimSuffix(from, "1") + "2"
		rtts := echoRTTs(t, topo, from, to, 10)
		for _, r := range rtts {
			if r < 40*time.Millisecond {
				t.Errorf("%s: a round trip of %v, below the 40 ms through the bottleneck", from, r)
			}
		}
		if q := quantile(rtts, 0.25); q > 45*time.Millisecond && keepsTime(t, time.Millisecond) {
			t.Errorf("%s: first quartile %v, want 40 ms", from, q)
		}
	}
	if err := StopForwarder(topo.Tag); err != nil {
		t.Fatal(err)
	}
	var stats []struct {
		Path       *int   `json:"path"`
		Bottleneck string `json:"bottleneck"`
		Up, Down   struct{ Sent, Delivered uint64 }
	}
	b, err := os.ReadFile(filepath.Join(stateDir(topo.Tag), StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &stats); err != nil {
		t.Fatal(err)
	}
	if len(stats) != 3 || stats[2].Bottleneck != "b" || stats[2].Path != nil {
		t.Fatalf("stats %s", b)
	}
	if s := stats[2]; s.Up.Sent != 20 || s.Up.Delivered != 20 || s.Down.Sent != 20 || s.Down.Delivered != 20 {
		t.Errorf("bottleneck counters %+v, want 20 each way", s)
	}
}

// The forwarder times a traced direction by the trace: with one
// 1500-byte opportunity every 10 ms on the way down, five 1000-byte
// echoes sent at once come back over at least 30 ms (opportunities at 10,
// 20, 20, 30 and 40 ms after the first), two of them together, and
// netem refuses the trace.
func TestForwarderTrace(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.trace")
	if err := os.WriteFile(trace, []byte("10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "name = \"tr\"\n[[path]]\nrtt = \"10ms\"\ntrace_down = \"" + trace + "\"\n[[source]]\nkind = \"bulk\"\n"
	runs, err := experiment.Parse("tr.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckMode(&runs[0], ModeNetem); err == nil || !strings.Contains(err.Error(), "path 0 is driven by a trace") {
		t.Errorf("netem: %v", err)
	}
	topo, _ := upForwarder(t, doc, "tr")
	cli, dst, done := echoSockets(t, topo, "10.0.0.1", "10.0.0.2")
	defer done()
	start := time.Now()
	for range 5 {
		if _, err := cli.WriteToUDP(make([]byte, 1000), dst); err != nil {
			t.Fatal(err)
		}
	}
	var at []time.Duration
	buf := make([]byte, 2048)
	for range 5 {
		cli.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := cli.Read(buf); err != nil {
			t.Fatalf("after %v: %v", at, err)
		}
		at = append(at, time.Since(start))
	}
	// Never early: the first opportunity is at least the up delay after
	// the send, the last 30 ms after it, then the down delay. Two echoes
	// share an opportunity: they come back together, where a link of the
	// trace's mean rate would space them all by 7 ms.
	if at[4] < 40*time.Millisecond || minGap(at) > 3*time.Millisecond {
		t.Errorf("echoes back at %v, want the last after 40 ms and two together", at)
	}
	t.Logf("echoes after the send: %v", at)
}

// minGap is the least time between consecutive arrivals.
func minGap(at []time.Duration) time.Duration {
	g := time.Duration(1<<62 - 1)
	for i := 1; i < len(at); i++ {
		g = min(g, at[i]-at[i-1])
	}
	return g
}
