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
