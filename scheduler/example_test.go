package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/runner"
	"github.com/mpq/mpq/scheduler"
)

// RateWRR is a weighted round-robin path scheduler: each path's weight is
// its estimated rate, cwnd/srtt, and packets go to the paths in proportion
// (smooth weighted round-robin) among the candidates whose window has room.
type RateWRR struct {
	credit map[uint64]float64
	cand   []int
}

// decisions counts the packets every RateWRR placed (to show that it
// ran). A RateWRR serves one connection and keeps its own state without
// locks, but a package variable is shared by all of them: by both ends of
// a simulated connection, and by a server's connections, whose schedulers
// run on separate goroutines. Anything shared must be safe for concurrent
// use (here an atomic counter); go test -race finds what is not.
var decisions atomic.Int64

// Name implements scheduler.PathScheduler.
func (*RateWRR) Name() string { return "rate-wrr" }

// Select implements scheduler.PathScheduler.
func (s *RateWRR) Select(_ time.Time, paths []scheduler.PathInfo, w scheduler.Work, dst []uint64) []uint64 {
	best, total := -1, 0.0
	s.cand = scheduler.Candidates(paths, s.cand) // no failed paths; backups last
	for _, i := range s.cand {
		p := &paths[i]
		if !p.CanSend(w.Size) || p.SRTT <= 0 {
			continue // CanSend: the window and the pacer have room
		}
		rate := float64(p.CWND) / p.SRTT.Seconds()
		s.credit[p.ID] += rate
		total += rate
		if best < 0 || s.credit[p.ID] > s.credit[paths[best].ID] {
			best = i
		}
	}
	if best < 0 {
		return dst // nothing fits: the core asks again later
	}
	s.credit[paths[best].ID] -= total
	decisions.Add(1)
	return append(dst, paths[best].ID)
}

func init() {
	scheduler.RegisterPath("rate-wrr", func() scheduler.PathScheduler {
		return &RateWRR{credit: map[uint64]float64{}}
	})
}

// Registering a scheduler makes it selectable by name in experiment files;
// runner.Run runs one on the real transport in the simulator, as mpq run
// does.
func Example_rateWRR() {
	runs, err := experiment.Parse("wrr.toml", []byte(`name = "wrr"
duration = "5s"
[[path]]
rate = "40Mbit"
[[path]]
rate = "10Mbit"
[transport]
path_scheduler = "rate-wrr"
[[source]]
kind = "bulk"
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "wrr")
	defer os.RemoveAll(dir)
	res, err := runner.Run(context.Background(), &runs[0], dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := res.Summary
	p0, p1 := s.Paths[0].Server.StreamBytesSent, s.Paths[1].Server.StreamBytesSent
	fmt.Printf("%s placed packets: %v; path 1 carried %.0f %% of the data\n", s.PathScheduler, decisions.Load() > 0, float64(100*p1)/float64(p0+p1))
	// Output: rate-wrr placed packets: true; path 1 carried 20 % of the data
}
