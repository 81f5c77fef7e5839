package netsim

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// The link model itself (timing, queue, losses, jitter) is tested in
// package linkmodel; these tests check how the simulator drives it:
// arrivals on the virtual clock, delivery order, counters, tracers and the
// seed.

func newTestLink(t *testing.T, sim *Sim, cfg LinkConfig) (*Link, *[]time.Time) {
	t.Helper()
	var arrivals []time.Time
	l, err := NewLink(sim, "test", cfg, func(*Packet) { arrivals = append(arrivals, sim.Now()) })
	if err != nil {
		t.Fatal(err)
	}
	return l, &arrivals
}

var pktSrc, pktDst = netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.0.2:2")

func pkt(size int) *Packet {
	return &Packet{Src: pktSrc, Dst: pktDst, Data: make([]byte, size)}
}

// drain runs the simulation until no event is left, failing after limit
// steps.
func drain(t *testing.T, sim *Sim, limit int) {
	t.Helper()
	for i := 0; sim.Step(); i++ {
		if i == limit {
			t.Fatalf("more than %d events", limit)
		}
	}
}

// A lone packet arrives on the virtual clock exactly when the model says,
// D + 8S/R after it was sent: not one nanosecond earlier.
func TestLonePacketTiming(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		rate  float64
		delay time.Duration
		idle  time.Duration // virtual time before the packet is sent
		want  time.Duration // after the send, computed by hand
	}{
		{"100M 25ms", 1350, 100e6, 25 * time.Millisecond, 0, 25*time.Millisecond + 108*time.Microsecond},
		{"after idle", 1000, 8e6, 5 * time.Millisecond, 3 * time.Second, 6 * time.Millisecond},
		{"infinite rate", 1350, 0, 20 * time.Millisecond, 0, 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := New(1)
			l, arr := newTestLink(t, sim, LinkConfig{Rate: tt.rate, Delay: tt.delay})
			sim.RunFor(tt.idle)
			sent := sim.Now()
			l.Send(pkt(tt.size))
			sim.RunUntil(sent.Add(tt.want - 1))
			if len(*arr) != 0 {
				t.Fatalf("arrived early, at %v", (*arr)[0].Sub(sent))
			}
			drain(t, sim, 10)
			if len(*arr) != 1 {
				t.Fatalf("%d arrivals", len(*arr))
			}
			if got := (*arr)[0].Sub(sent); got != tt.want {
				t.Errorf("arrived after %v, want %v", got, tt.want)
			}
			if l.Sent != 1 || l.Delivered != 1 || l.BytesDelivered != uint64(tt.size) {
				t.Errorf("counters sent %d delivered %d bytes %d", l.Sent, l.Delivered, l.BytesDelivered)
			}
		})
	}
}

// Drops reach the counters and the tracers with their reasons, and the
// other packets are delivered in order with their bytes counted.
func TestDropsCountedAndTraced(t *testing.T) {
	sim := New(1)
	var delivered []uint64
	l, err := NewLink(sim, "q", LinkConfig{Rate: 1e6, Delay: time.Millisecond, QueueBytes: 10000}, func(p *Packet) { delivered = append(delivered, p.ID) })
	if err != nil {
		t.Fatal(err)
	}
	var dropped []uint64
	var queued []int
	l.AddTracer(&Tracer{
		Drop: func(_ *Link, p *Packet, why DropReason) {
			if why != DropQueue {
				t.Errorf("drop reason %v", why)
			}
			dropped = append(dropped, p.ID)
		},
		Enqueue: func(_ *Link, _ *Packet, q int) { queued = append(queued, q) },
	})
	for i := range 25 {
		p := pkt(1000)
		p.ID = uint64(i)
		l.Send(p)
	}
	drain(t, sim, 1000)
	if len(dropped) != 15 || dropped[0] != 10 || len(delivered) != 10 || delivered[9] != 9 {
		t.Fatalf("dropped %v, delivered %v", dropped, delivered)
	}
	if queued[0] != 1000 || queued[9] != 10000 {
		t.Errorf("queue lengths traced %v", queued)
	}
	if l.Sent != 25 || l.DroppedQueue != 15 || l.DroppedLoss != 0 || l.Delivered != 10 || l.BytesDelivered != 10000 {
		t.Errorf("counters %+v", l)
	}
	lossy, _ := newTestLink(t, sim, LinkConfig{Loss: Bernoulli{P: 1}})
	lossy.Send(pkt(10))
	if lossy.DroppedLoss != 1 || lossy.DroppedQueue != 0 {
		t.Errorf("loss counters %+v", lossy)
	}
}

// Packets that jitter holds back arrive at the same instant as their
// predecessor; the event loop still delivers them in the order sent.
func TestJitterKeepsDeliveryOrder(t *testing.T) {
	sim := New(3)
	var got []uint64
	l, err := NewLink(sim, "j", LinkConfig{Rate: 100e6, Delay: 10 * time.Millisecond, Jitter: 20 * time.Millisecond},
		func(p *Packet) { got = append(got, p.ID) })
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for i := range n {
		p := pkt(200)
		p.ID = uint64(i)
		l.Send(p)
		sim.RunFor(50 * time.Microsecond)
	}
	drain(t, sim, 2*n)
	if len(got) != n {
		t.Fatalf("delivered %d", len(got))
	}
	for i, id := range got {
		if id != uint64(i) {
			t.Fatalf("reordered at %d: %d", i, id)
		}
	}
}

// The simulation's seed and the link's name choose the losses: the same
// seed gives the same loss positions, another seed other ones.
func TestSameSeedSameLosses(t *testing.T) {
	run := func(seed uint64) []uint64 {
		sim := New(seed)
		var got []uint64
		l, _ := NewLink(sim, "x", LinkConfig{Loss: Bernoulli{P: 0.05}}, func(p *Packet) { got = append(got, p.ID) })
		for i := 0; i < 2000; i++ {
			p := pkt(10)
			p.ID = uint64(i)
			l.Send(p)
		}
		for sim.Step() {
		}
		return got
	}
	a, b, c := run(1), run(1), run(2)
	if len(a) != len(b) {
		t.Fatal("same seed, different losses")
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different losses")
		}
	}
	same := len(a) == len(c)
	for i := 0; same && i < len(a); i++ {
		same = a[i] == c[i]
	}
	if same {
		t.Fatal("different seeds, same losses")
	}
}

// A configuration the model rejects is rejected with the link's name, and
// a rejected SetConfig leaves the link as it was.
func TestBadLinkConfig(t *testing.T) {
	sim := New(1)
	if _, err := NewLink(sim, "bad", LinkConfig{Rate: -1}, func(*Packet) {}); err == nil || !strings.Contains(err.Error(), "link bad") {
		t.Errorf("error %v", err)
	}
	l, err := NewLink(sim, "ok", LinkConfig{Rate: 1e6}, func(*Packet) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetConfig(LinkConfig{Delay: -1}); err == nil || !strings.Contains(err.Error(), "link ok") || l.Config().Rate != 1e6 {
		t.Errorf("error %v, config %+v", err, l.Config())
	}
}

// SetConfig applies to packets sent afterwards.
func TestSetConfig(t *testing.T) {
	sim := New(1)
	l, arr := newTestLink(t, sim, LinkConfig{Rate: 8e6})
	if err := l.SetConfig(LinkConfig{Rate: 16e6, Delay: 25 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if q := l.Config().QueueBytes; q != 100000 {
		t.Errorf("queue %d, want one BDP", q)
	}
	l.Send(pkt(2000)) // 1 ms at 16 Mbit/s
	drain(t, sim, 10)
	if len(*arr) != 1 || (*arr)[0].Sub(Epoch) != 26*time.Millisecond {
		t.Errorf("arrivals %v", *arr)
	}
}
