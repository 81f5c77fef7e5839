package netsim

import (
	"math"
	"net/netip"
	"testing"
	"time"
)

func newTestLink(t *testing.T, sim *Sim, cfg LinkConfig) (*Link, *[]time.Time) {
	t.Helper()
	var arrivals []time.Time
	l, err := NewLink(sim, "test", cfg, func(*Packet) { arrivals = append(arrivals, sim.Now()) })
	if err != nil {
		t.Fatal(err)
	}
	return l, &arrivals
}

func pkt(size int) *Packet {
	return &Packet{Src: netip.MustParseAddrPort("10.0.0.1:1"), Dst: netip.MustParseAddrPort("10.0.0.2:2"), Data: make([]byte, size)}
}

// A lone packet of S bytes on a link of rate R and delay D arrives at
// D + 8S/R.
func TestLonePacketTiming(t *testing.T) {
	tests := []struct {
		size  int
		rate  float64
		delay time.Duration
	}{
		{1350, 100e6, 25 * time.Millisecond},
		{1200, 10e6, 10 * time.Millisecond},
		{64, 1e9, 0},
		{1500, 1e6, time.Second},
	}
	for _, tt := range tests {
		sim := New(1)
		l, arr := newTestLink(t, sim, LinkConfig{Rate: tt.rate, Delay: tt.delay})
		l.Send(pkt(tt.size))
		for sim.Step() {
		}
		want := tt.delay + time.Duration(float64(tt.size)*8/tt.rate*1e9)
		if len(*arr) != 1 || (*arr)[0].Sub(Epoch) != want {
			t.Errorf("size %d rate %v delay %v: arrived %v, want %v", tt.size, tt.rate, tt.delay, (*arr)[0].Sub(Epoch), want)
		}
	}
}

// Back-to-back packets are serialized one after the other.
func TestSerialization(t *testing.T) {
	sim := New(1)
	l, arr := newTestLink(t, sim, LinkConfig{Rate: 8e6, Delay: 5 * time.Millisecond}) // 1 byte per µs
	for i := 0; i < 3; i++ {
		l.Send(pkt(1000))
	}
	for sim.Step() {
	}
	for i, a := range *arr {
		want := 5*time.Millisecond + time.Duration(i+1)*time.Millisecond
		if a.Sub(Epoch) != want {
			t.Errorf("packet %d at %v, want %v", i, a.Sub(Epoch), want)
		}
	}
}

// A burst larger than the queue loses exactly the excess.
func TestQueueDropsExcess(t *testing.T) {
	sim := New(1)
	l, arr := newTestLink(t, sim, LinkConfig{Rate: 1e6, Delay: time.Millisecond, QueueBytes: 10 * 1000})
	dropped := 0
	l.AddTracer(&Tracer{Drop: func(_ *Link, _ *Packet, why DropReason) {
		if why != DropQueue {
			t.Errorf("drop reason %v", why)
		}
		dropped++
	}})
	for i := 0; i < 25; i++ {
		l.Send(pkt(1000))
	}
	for sim.Step() {
	}
	if len(*arr) != 10 || dropped != 15 || l.DroppedQueue != 15 {
		t.Fatalf("delivered %d dropped %d, want 10 and 15", len(*arr), dropped)
	}
	// Once the queue drained, the link accepts again.
	l.Send(pkt(1000))
	for sim.Step() {
	}
	if len(*arr) != 11 {
		t.Fatal("link did not accept after draining")
	}
}

// The measured Bernoulli loss over 100,000 packets lies inside the 99.9 %
// binomial interval of the configured rate.
func TestBernoulliLossRate(t *testing.T) {
	for _, p := range []float64{0.0005, 0.01, 0.1} {
		sim := New(42)
		l, arr := newTestLink(t, sim, LinkConfig{Loss: Bernoulli{P: p}})
		const n = 100000
		for i := 0; i < n; i++ {
			l.Send(pkt(100))
		}
		for sim.Step() {
		}
		lost := n - len(*arr)
		// Normal approximation of the binomial, z(0.9995) = 3.2905.
		sd := math.Sqrt(n * p * (1 - p))
		lo, hi := n*p-3.2905*sd, n*p+3.2905*sd
		if float64(lost) < lo || float64(lost) > hi {
			t.Errorf("p=%v: lost %d, 99.9%% interval [%.0f, %.0f]", p, lost, lo, hi)
		}
	}
}

// The Gilbert-Elliott mean burst length matches 1/R and the loss rate
// P/(P+R).
func TestGilbertElliottBursts(t *testing.T) {
	sim := New(7)
	ge := &GilbertElliott{P: 0.01, R: 0.25, LossGood: 0, LossBad: 1}
	l, _ := newTestLink(t, sim, LinkConfig{Loss: ge})
	const n = 400000
	lostSeq := make([]bool, 0, n)
	l.AddTracer(&Tracer{
		Drop:    func(*Link, *Packet, DropReason) { lostSeq = append(lostSeq, true) },
		Enqueue: func(*Link, *Packet, int) { lostSeq = append(lostSeq, false) },
	})
	for i := 0; i < n; i++ {
		l.Send(pkt(100))
	}
	bursts, lost, run := 0, 0, 0
	for _, x := range lostSeq {
		if x {
			lost++
			run++
			continue
		}
		if run > 0 {
			bursts++
			run = 0
		}
	}
	meanBurst := float64(lost) / float64(bursts)
	if want := 1 / ge.R; math.Abs(meanBurst-want)/want > 0.05 {
		t.Errorf("mean burst %.3f, want %.3f +- 5%%", meanBurst, want)
	}
	rate := float64(lost) / n
	if want := ge.P / (ge.P + ge.R); math.Abs(rate-want)/want > 0.05 {
		t.Errorf("loss rate %.4f, want %.4f +- 5%%", rate, want)
	}
}

// Jitter never reorders packets.
func TestJitterKeepsOrder(t *testing.T) {
	sim := New(3)
	var ids []uint64
	l, err := NewLink(sim, "j", LinkConfig{Rate: 100e6, Delay: 10 * time.Millisecond, Jitter: 20 * time.Millisecond},
		func(p *Packet) { ids = append(ids, p.ID) })
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5000; i++ {
		p := pkt(200)
		p.ID = uint64(i)
		l.Send(p)
		sim.RunFor(50 * time.Microsecond)
	}
	for sim.Step() {
	}
	if len(ids) != 5000 {
		t.Fatalf("delivered %d", len(ids))
	}
	for i := range ids {
		if ids[i] != uint64(i) {
			t.Fatalf("reordered at %d: %d", i, ids[i])
		}
	}
}

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

func TestBadLinkConfig(t *testing.T) {
	sim := New(1)
	for _, cfg := range []LinkConfig{{Rate: -1}, {Delay: -time.Second}, {Rate: math.Inf(1)}} {
		if _, err := NewLink(sim, "bad", cfg, func(*Packet) {}); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
