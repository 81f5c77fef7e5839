package plots

import (
	"bytes"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/mpq/mpq/trafficgen"
)

func TestChangeLabel(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	yes, no := true, false
	q := int64(64000)
	tests := []struct {
		ch   trafficgen.LinkChangeSummary
		want string
	}{
		{trafficgen.LinkChangeSummary{Path: 0, Direction: "both", Down: &yes}, "p0 down"},
		{trafficgen.LinkChangeSummary{Path: 2, Direction: "both", Down: &no}, "p2 up"},
		{trafficgen.LinkChangeSummary{Path: 1, Direction: "down", RateMbps: f(2.5)}, "p1↓ 2.5 Mbit/s"},
		{trafficgen.LinkChangeSummary{Path: 1, Direction: "up", RateMbps: f(0), DelayMS: f(40)}, "p1↑ unlimited rate 40 ms"},
		{trafficgen.LinkChangeSummary{Path: 0, Direction: "both", Loss: f(0.01), JitterMS: f(2), QueueBytes: &q}, "p0 1 % loss jitter 2 ms queue 64 kB"},
		{trafficgen.LinkChangeSummary{Path: 0, Direction: "both", QueueBDP: f(0.5)}, "p0 queue 0.5 BDP"},
	}
	for _, tt := range tests {
		if got := ChangeLabel(tt.ch); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// binSteps: each bin a flat step over its width, a missing bin zero,
// clipped to the window; values by hand.
func TestBinSteps(t *testing.T) {
	got := binSteps(map[float64]float64{0: 8, 100: 4, 300: 2}, 100, 50, 350)
	want := plotter.XYs{{X: 0.05, Y: 8}, {X: 0.1, Y: 8}, {X: 0.1, Y: 4}, {X: 0.2, Y: 4}, {X: 0.2, Y: 0}, {X: 0.3, Y: 0}, {X: 0.3, Y: 2}, {X: 0.35, Y: 2}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("point %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// The throughput-over-time figure draws the sender's paths and goodput,
// and every figure over time marks the run's link changes.
func TestChangeMarksDrawn(t *testing.T) {
	yes := true
	thr := "0.000,sent,server,0,background,100000,8.000\n0.000,sent,server,1,priority,50000,4.000\n" +
		"0.000,delivered,server,,background,90000,7.200\n100.000,sent,server,1,background,50000,4.000\n"
	paths := "0.000,server,0,13500,1350,,333,0,0,slow_start\n0.000,server,1,13500,0,,333,0,0,slow_start\n"
	points := loadFixtures(t, fixture{sched: "cwr", times: []float64{30}, throughput: thr, paths: paths,
		changes: []trafficgen.LinkChangeSummary{{Path: 0, AtS: 0.05, Direction: "both", Down: &yes}}})
	o := DefaultOptions()
	for _, kind := range []string{"throughput-time", "cwnd"} {
		f, err := Draw(kind, points, o)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		var svg bytes.Buffer
		if err := f.Write(&svg, "svg"); err != nil {
			t.Fatal(err)
		}
		want := []string{"p0 down"}
		if kind == "throughput-time" {
			want = append(want, "goodput", "path 0", "path 1", "throughput, server")
		}
		for _, s := range want {
			if !strings.Contains(svg.String(), s) {
				t.Errorf("%s lacks %q", kind, s)
			}
		}
	}
	none := loadFixtures(t, fixture{sched: "cwr", times: []float64{30}})
	if _, err := ThroughputTimeFigure(none, o); err == nil || !strings.Contains(err.Error(), "throughput.csv") {
		t.Errorf("without throughput.csv: %v", err)
	}
}
