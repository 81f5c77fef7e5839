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

// SmallestFirst is a stream scheduler that serves lost data first and
// then the stream with the fewest bytes waiting (shortest remaining
// first; equal: the stream whose data became ready first). Like
// priority-fifo it puts one STREAM frame in a packet.
type SmallestFirst struct{}

// picks counts the choices every SmallestFirst made (to show that it
// ran); shared by both ends of a connection, hence atomic.
var picks atomic.Int64

// Name implements scheduler.StreamScheduler.
func (SmallestFirst) Name() string { return "smallest-first" }

// MaxStreamFrames implements scheduler.StreamScheduler.
func (SmallestFirst) MaxStreamFrames() int { return 1 }

// Next implements scheduler.StreamScheduler.
func (SmallestFirst) Next(_ time.Time, streams []scheduler.StreamInfo) int {
	picks.Add(1)
	before := func(a, b *scheduler.StreamInfo) bool {
		if a.HasRetransmission != b.HasRetransmission {
			return a.HasRetransmission
		}
		if a.Pending != b.Pending {
			return a.Pending < b.Pending
		}
		return a.ReadySeq < b.ReadySeq
	}
	best := 0
	for i := 1; i < len(streams); i++ {
		if before(&streams[i], &streams[best]) {
			best = i
		}
	}
	return best
}

func init() {
	scheduler.RegisterStream("smallest-first", func() scheduler.StreamScheduler { return SmallestFirst{} })
}

// A stream scheduler registers like a path scheduler and is selected by
// transport.stream_scheduler; runner.Run runs it on the real transport in
// the simulator, here with 10 kB messages beside bulk data. (Over one
// path whose queue the bulk data fills, the order in which the sender
// serves streams changes little of the messages' completion times: they
// wait in the network's queue whatever the order.)
func Example_smallestFirst() {
	runs, err := experiment.Parse("sf.toml", []byte(`name = "sf"
duration = "5s"
[[path]]
rate = "20Mbit"
rtt = "40ms"
[transport]
stream_scheduler = "smallest-first"
[[source]]
name = "s1"
kind = "periodic"
interval = "100ms"
size = "10kB"
[[source]]
name = "bulk"
kind = "bulk"
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "sf")
	defer os.RemoveAll(dir)
	res, err := runner.Run(context.Background(), &runs[0], dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := res.Summary
	m := s.Sources[0].MCTMS
	fmt.Printf("%s chose streams: %v; %s: %d messages, %d failed\n",
		s.StreamScheduler, picks.Load() > 0, s.Sources[0].Name, m.N, m.Failed)
	// Output: smallest-first chose streams: true; s1: 50 messages, 0 failed
}
