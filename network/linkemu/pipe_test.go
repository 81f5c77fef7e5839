package linkemu

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/network/linkmodel"
)

// A Pipe hands every accepted packet on in order, never before the
// model's arrival time, and its counters add up: with a 2 Mbit/s link and
// a queue of five 1000-byte packets, a burst of 20 loses 15 to the queue,
// and the five others leave 4 ms apart after the 3 ms delay.
func TestPipeTiming(t *testing.T) {
	model, err := NewModel(experiment.Link{Rate: 2e6, Delay: 3 * time.Millisecond, QueueBytes: 5000}, 0, 1, "pipe")
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		seq byte
		at  time.Time
	}
	var mu sync.Mutex
	var got []out
	p := NewPipe(model, Limits{}, func(b []byte) error {
		mu.Lock()
		got = append(got, out{b[0], time.Now()})
		mu.Unlock()
		if b[0] == 4 {
			return errors.New("refused")
		}
		return nil
	})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.Run(done) }()
	start := time.Now()
	for i := range 20 {
		b := make([]byte, 1000)
		b[0] = byte(i)
		p.Offer(start, b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().InFlight > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(done)
	wg.Wait()
	if len(got) != 5 {
		t.Fatalf("%d packets handed on", len(got))
	}
	for i, o := range got {
		want := start.Add(3*time.Millisecond + time.Duration(i+1)*4*time.Millisecond)
		if o.seq != byte(i) {
			t.Errorf("packet %d is number %d", i, o.seq)
		}
		if o.at.Before(want) {
			t.Errorf("packet %d left %v early", i, want.Sub(o.at))
		}
	}
	s := p.Stats()
	if s.Sent != 20 || s.DroppedQueue != 15 || s.Delivered != 4 || s.WriteErrors != 1 || s.InFlight != 0 || s.BytesDelivered != 4000 {
		t.Errorf("stats %+v", s)
	}
	if s.LateMax <= 0 || s.LateMean > s.LateMax {
		t.Errorf("lateness mean %v max %v", s.LateMean, s.LateMax)
	}
	t.Logf("late mean %v max %v", s.LateMean, s.LateMax)
}

// Beyond its limits a pipe drops packets as overflow before the model
// sees them, and Run's end frees what it holds.
func TestPipeOverflow(t *testing.T) {
	model, err := linkmodel.New(linkmodel.Config{Delay: time.Hour}, linkmodel.Rand(1, "o"))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPipe(model, Limits{MaxPackets: 100, MaxBytes: 10 * (1000 + packetCost)}, func([]byte) error { return nil })
	for range 30 {
		p.Offer(time.Now(), make([]byte, 1000))
	}
	if s := p.Stats(); s.Sent != 30 || s.InFlight != 10 || s.DroppedOverflow != 20 {
		t.Fatalf("stats %+v", s)
	}
	done := make(chan struct{})
	close(done)
	p.Run(done)
	if len(p.held) != 0 {
		t.Errorf("%d packets still held", len(p.held))
	}
}

// While Run waits for a packet's arrival time it holds no processor of
// the Go runtime: it waits parked (in the network poller), never in a
// system call. A goroutine sleeping in a system call keeps its processor
// until the runtime's monitor takes it back, which takes up to 10 ms when
// the monitor has backed off; with one pipe per path and direction and as
// many processors as cores, the loopback emulator's pipes then kept every
// processor through a train of packets, and the experiment's client and
// server (in the same process) ran only between trains: the client
// acknowledged a whole train at once and the server answered with bursts.
func TestPipeWaitsParked(t *testing.T) {
	model, err := NewModel(experiment.Link{Delay: 3 * time.Millisecond}, 0, 1, "parked")
	if err != nil {
		t.Fatal(err)
	}
	var delivered atomic.Int32
	p := NewPipe(model, Limits{}, func([]byte) error { delivered.Add(1); return nil })
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.Run(done) }()
	defer func() { close(done); wg.Wait() }()
	const packets = 20
	waiting, inSyscall := 0, 0
	buf := make([]byte, 1<<20)
	for i := range packets {
		p.Offer(time.Now(), make([]byte, 100))
		// Look at Run's goroutine until the packet is delivered: every
		// time it is waiting, it must not be in a system call.
		for delivered.Load() == int32(i) {
			n := runtime.Stack(buf, true)
			for _, g := range strings.Split(string(buf[:n]), "\n\n") {
				if !strings.Contains(g, "linkemu.(*Pipe).Run(") || !strings.Contains(g, "linkemu.waitUntil(") {
					continue
				}
				waiting++
				if head, _, _ := strings.Cut(g, "\n"); strings.Contains(head, "syscall") {
					inSyscall++
				}
			}
			// Let Run's goroutine run: with one processor (GOMAXPROCS=1)
			// it would otherwise start only when this loop is preempted,
			// after the packet's arrival time, and never wait.
			runtime.Gosched()
		}
	}
	if waiting == 0 {
		t.Fatal("never saw Run waiting")
	}
	// A parked wait still enters the kernel briefly (the timerfd read that
	// finds nothing and parks, and the one that reads the expiry), so a
	// snapshot now and then lands in a system call; a wait that sleeps in
	// the kernel is seen there most of the time (757 of 1,364 snapshots
	// with nanosleep). One in ten separates the two.
	if inSyscall*10 > waiting {
		t.Errorf("Run was waiting in a system call %d times out of %d", inSyscall, waiting)
	}
	t.Logf("Run seen waiting %d times, in a system call %d times", waiting, inSyscall)
}
