package robustness

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

// TestFilesCommitted: experiments/robustness/*.toml are the generator's
// output, and they load as the grid the issue asks for: 108 points with
// 10 kB every 50 ms and the base shape's 36 with 2 kB every 20 ms, each
// with the 8 schedulers, 3 repetitions of 30 s.
func TestFilesCommitted(t *testing.T) {
	dir := filepath.Join("..", "..", "experiments", "robustness")
	committed, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(committed) != len(Messages) {
		t.Errorf("%d files in %s, the generator writes %d", len(committed), dir, len(Messages))
	}
	wantPoints := map[string]int{"msg10kB-50ms": 108, "msg2kB-20ms": 36}
	for _, m := range Messages {
		name := filepath.Join(dir, m.File+".toml")
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, Experiment(m)) {
			t.Errorf("%s differs from the generator's output: go run ./experiment/robustness/gen experiments/robustness", name)
		}
		if m.Points() != wantPoints[m.File] {
			t.Errorf("%s: %d points, want %d", m.File, m.Points(), wantPoints[m.File])
		}
		runs, err := experiment.Load(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := wantPoints[m.File] * len(Schedulers) * 3; len(runs) != want {
			t.Fatalf("%s: %d runs, want %d", name, len(runs), want)
		}
		points := map[string]bool{}
		for _, r := range runs {
			if r.Duration != 30*time.Second || r.Repeat != 3 {
				t.Fatalf("%s: %v: duration %v, repeat %d", name, r.Label, r.Duration, r.Repeat)
			}
			points[strings.Join(r.Label, ",")] = true
		}
		if len(points) != wantPoints[m.File]*len(Schedulers) {
			t.Errorf("%s: %d distinct points, want %d", name, len(points), wantPoints[m.File]*len(Schedulers))
		}
	}
}

// TestPoints checks a few points of the 10 kB file by hand: their links,
// controller, scheduler and source.
func TestPoints(t *testing.T) {
	runs, err := experiment.Load(filepath.Join("..", "..", "experiments", "robustness", "msg10kB-50ms.toml"),
		[]experiment.Override{{Key: "repeat", Value: int64(1), Origin: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	byLabel := map[string]experiment.Experiment{}
	for _, r := range runs {
		byLabel[strings.Join(r.Label, ",")] = r
	}
	type link struct {
		rate  float64
		delay time.Duration
		loss  float64
		queue int64
	}
	for _, tc := range []struct {
		label     string
		cc, sched string
		p0, p1    link
	}{
		// 100 Mbit/s, 25 ms one way, 1 BDP = 625,000 bytes.
		{"shape=base,loss=loss0,queue=q1bdp,transport.congestion=newreno,transport.path_scheduler=lowrtt", "newreno", "lowrtt",
			link{100e6, 25 * time.Millisecond, 0, 625000}, link{100e6, 25 * time.Millisecond, 0, 625000}},
		// 20 ms RTT: 0.5 BDP = 125,000 bytes; 100 ms: 625,000.
		{"shape=rtt20-100,loss=loss0.05,queue=q0.5bdp,transport.congestion=cubic,transport.path_scheduler=cwr-plus", "cubic", "cwr-plus",
			link{100e6, 10 * time.Millisecond, 0.0005, 125000}, link{100e6, 50 * time.Millisecond, 0.0005, 625000}},
		// 20 Mbit/s, 50 ms: 2 BDP = 250,000 bytes.
		{"shape=rate20,loss=loss0.5,queue=q2bdp,transport.congestion=bbr,transport.path_scheduler=blest", "bbr", "blest",
			link{20e6, 25 * time.Millisecond, 0.005, 250000}, link{20e6, 25 * time.Millisecond, 0.005, 250000}},
		// Emulab's 50 packets of 1500 bytes.
		{"shape=rate20,loss=loss0,queue=q50pkt,transport.congestion=newreno,transport.path_scheduler=sr", "newreno", "sr",
			link{20e6, 25 * time.Millisecond, 0, 75000}, link{20e6, 25 * time.Millisecond, 0, 75000}},
	} {
		r, ok := byLabel[tc.label]
		if !ok {
			t.Fatalf("no run %s", tc.label)
		}
		if r.Transport.Congestion != tc.cc || r.Transport.PathScheduler != tc.sched || len(r.Paths) != 2 {
			t.Errorf("%s: %s %s, %d paths", tc.label, r.Transport.Congestion, r.Transport.PathScheduler, len(r.Paths))
		}
		for i, want := range []link{tc.p0, tc.p1} {
			p := r.Paths[i]
			for _, l := range []experiment.Link{p.Up, p.Down} {
				if got := (link{l.Rate, l.Delay, l.Loss, l.QueueLimit(p.RTT())}); got != want {
					t.Errorf("%s: path %d: %+v, want %+v", tc.label, i, got, want)
				}
			}
		}
		if s := r.Sources[0]; s.Size != 10000 || s.Interval != 50*time.Millisecond || !s.Priority {
			t.Errorf("%s: source %+v", tc.label, s)
		}
	}
}
