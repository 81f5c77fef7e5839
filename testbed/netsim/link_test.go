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

// A lone packet of S bytes on a link of rate R and delay D arrives at
// exactly D + 8S/R (rounded to the nanosecond): not one nanosecond earlier,
// whenever it is sent on an idle link.
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
		{"10M 10ms", 1200, 10e6, 10 * time.Millisecond, 0, 10*time.Millisecond + 960*time.Microsecond},
		{"1G no delay", 64, 1e9, 0, 0, 512 * time.Nanosecond},
		{"1M 1s", 1500, 1e6, time.Second, 0, time.Second + 12*time.Millisecond},
		{"after idle", 1000, 8e6, 5 * time.Millisecond, 3 * time.Second, 6 * time.Millisecond},
		// 8000 bits / 3 Mbit/s = 2666666.67 ns, rounded to the nearest.
		{"rounded", 1000, 3e6, 0, 0, 2666667 * time.Nanosecond},
		{"infinite rate", 1350, 0, 20 * time.Millisecond, 0, 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := New(1)
			l, arr := newTestLink(t, sim, LinkConfig{Rate: tt.rate, Delay: tt.delay})
			sim.RunFor(tt.idle)
			sent := sim.Now()
			l.Send(pkt(tt.size))
			if tt.want > 0 {
				sim.RunUntil(sent.Add(tt.want - 1))
				if len(*arr) != 0 {
					t.Fatalf("arrived early, at %v", (*arr)[0].Sub(sent))
				}
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

// Back-to-back packets are serialized one after the other, and a packet
// sent while the transmitter is busy waits for it.
func TestSerialization(t *testing.T) {
	sim := New(1)
	l, arr := newTestLink(t, sim, LinkConfig{Rate: 8e6, Delay: 5 * time.Millisecond}) // 1 byte per µs
	for i := 0; i < 3; i++ {
		l.Send(pkt(1000))
	}
	sim.RunFor(2500 * time.Microsecond) // third packet in transmission
	l.Send(pkt(500))
	drain(t, sim, 10)
	want := []time.Duration{6 * time.Millisecond, 7 * time.Millisecond, 8 * time.Millisecond, 8*time.Millisecond + 500*time.Microsecond}
	if len(*arr) != len(want) {
		t.Fatalf("%d arrivals, want %d", len(*arr), len(want))
	}
	for i, a := range *arr {
		if a.Sub(Epoch) != want[i] {
			t.Errorf("packet %d at %v, want %v", i, a.Sub(Epoch), want[i])
		}
	}
}

// A burst larger than the queue loses exactly the excess: the drop-tail
// queue (bytes waiting or in transmission) admits packets while they fit
// and drops the rest, and frees room as packets finish transmission.
func TestQueueDropsExcess(t *testing.T) {
	type step struct {
		wait  time.Duration // virtual time to let pass before the burst
		sizes []int
	}
	rep := func(n, size int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = size
		}
		return s
	}
	tests := []struct {
		name  string
		cfg   LinkConfig
		steps []step
		// dropped lists the indexes (in sending order) of the packets the
		// queue must drop; every other packet must be delivered.
		dropped []int
		// lostBytes is the excess: bytes offered minus bytes delivered.
		lostBytes int
	}{
		{
			name:      "exact multiple",
			cfg:       LinkConfig{Rate: 1e6, Delay: time.Millisecond, QueueBytes: 10000},
			steps:     []step{{0, rep(25, 1000)}},
			dropped:   span(10, 25),
			lostBytes: 15000,
		},
		{
			name:      "partial packet of room",
			cfg:       LinkConfig{Rate: 1e6, Delay: time.Millisecond, QueueBytes: 10999},
			steps:     []step{{0, rep(25, 1000)}},
			dropped:   span(10, 25),
			lostBytes: 15000,
		},
		{
			name:      "mixed sizes fill the gaps",
			cfg:       LinkConfig{Rate: 1e6, QueueBytes: 5000},
			steps:     []step{{0, []int{3000, 3000, 1000, 1000, 500, 1}}},
			dropped:   []int{1, 4, 5},
			lostBytes: 3501,
		},
		{
			// 100 Mbit/s, 25 ms: one BDP of the 50 ms round trip is
			// 625,000 bytes, 500 packets of 1250 bytes.
			name:      "default queue is one BDP",
			cfg:       LinkConfig{Rate: 100e6, Delay: 25 * time.Millisecond},
			steps:     []step{{0, rep(600, 1250)}},
			dropped:   span(500, 600),
			lostBytes: 125000,
		},
		{
			// 1000 bytes take 1 ms at 8 Mbit/s: after 3 ms three packets
			// have left the queue, so three of the next five fit.
			name:      "room frees as packets leave",
			cfg:       LinkConfig{Rate: 8e6, Delay: 10 * time.Millisecond, QueueBytes: 10000},
			steps:     []step{{0, rep(10, 1000)}, {3 * time.Millisecond, rep(5, 1000)}},
			dropped:   []int{13, 14},
			lostBytes: 2000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := New(1)
			var delivered []uint64
			l, err := NewLink(sim, "q", tt.cfg, func(p *Packet) { delivered = append(delivered, p.ID) })
			if err != nil {
				t.Fatal(err)
			}
			var dropped []int
			l.AddTracer(&Tracer{Drop: func(_ *Link, p *Packet, why DropReason) {
				if why != DropQueue {
					t.Errorf("drop reason %v", why)
				}
				dropped = append(dropped, int(p.ID))
			}})
			id, offered := 0, 0
			for _, s := range tt.steps {
				sim.RunFor(s.wait)
				for _, size := range s.sizes {
					p := pkt(size)
					p.ID = uint64(id)
					l.Send(p)
					id++
					offered += size
				}
			}
			drain(t, sim, 10000)
			if !equalInts(dropped, tt.dropped) {
				t.Fatalf("dropped %v, want %v", dropped, tt.dropped)
			}
			if int(l.DroppedQueue) != len(tt.dropped) || int(l.Delivered)+len(tt.dropped) != id {
				t.Fatalf("counters: delivered %d dropped %d of %d", l.Delivered, l.DroppedQueue, id)
			}
			for i, want := 0, 0; want < id; want++ {
				if contains(tt.dropped, want) {
					continue
				}
				if i >= len(delivered) || delivered[i] != uint64(want) {
					t.Fatalf("delivered %v", delivered)
				}
				i++
			}
			if got := offered - int(l.BytesDelivered); got != tt.lostBytes {
				t.Fatalf("lost %d bytes, want %d", got, tt.lostBytes)
			}
		})
	}
}

func span(from, to int) []int {
	s := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// binomialInterval returns the central 1-alpha interval [lo, hi] of the
// binomial distribution B(n, p): P(X < lo) <= alpha/2 and P(X > hi) <=
// alpha/2, computed exactly from the probability mass function.
func binomialInterval(n int, p, alpha float64) (lo, hi int) {
	if p == 0 {
		return 0, 0
	}
	if p == 1 {
		return n, n
	}
	lgn, _ := math.Lgamma(float64(n + 1))
	pmf := func(k int) float64 {
		a, _ := math.Lgamma(float64(k + 1))
		b, _ := math.Lgamma(float64(n - k + 1))
		return math.Exp(lgn - a - b + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	}
	cdf := 0.0
	lo, hi = 0, n
	for k := 0; k <= n; k++ {
		next := cdf + pmf(k)
		if cdf <= alpha/2 && next > alpha/2 {
			lo = k // P(X < k) = cdf <= alpha/2
		}
		if next >= 1-alpha/2 {
			hi = k // P(X > k) = 1 - next <= alpha/2
			break
		}
		cdf = next
	}
	return lo, hi
}

func TestBinomialInterval(t *testing.T) {
	// Known quantiles: B(100000, 0.01) has mean 1000 and standard
	// deviation 31.46; its 99.9 % interval is about mean +- 3.29 sd.
	lo, hi := binomialInterval(100000, 0.01, 0.001)
	if lo < 893 || lo > 899 || hi < 1101 || hi > 1107 {
		t.Errorf("B(1e5, 0.01) 99.9%% interval [%d, %d]", lo, hi)
	}
	// B(100000, 0.0005): Poisson-like, mean 50, skewed to the right.
	lo, hi = binomialInterval(100000, 0.0005, 0.001)
	if lo < 27 || lo > 30 || hi < 74 || hi > 77 || 50-lo >= hi-50 {
		t.Errorf("B(1e5, 0.0005) 99.9%% interval [%d, %d]", lo, hi)
	}
}

// The loss measured over 100,000 packets lies inside the exact 99.9 %
// binomial interval of the configured rate, for several rates and seeds.
func TestBernoulliLossRate(t *testing.T) {
	const n = 100000
	for _, p := range []float64{0, 0.0005, 0.01, 0.1, 0.5, 1} {
		lo, hi := binomialInterval(n, p, 0.001)
		for seed := uint64(1); seed <= 3; seed++ {
			sim := New(seed)
			l, arr := newTestLink(t, sim, LinkConfig{Loss: Bernoulli{P: p}})
			pk := pkt(100) // the link neither changes nor keeps packets
			for i := 0; i < n; i++ {
				l.Send(pk)
			}
			drain(t, sim, n)
			lost := int(l.DroppedLoss)
			if l.DroppedQueue != 0 || lost+len(*arr) != n {
				t.Fatalf("p=%v: %d lost + %d delivered != %d (queue drops %d)", p, lost, len(*arr), n, l.DroppedQueue)
			}
			if lost < lo || lost > hi {
				t.Errorf("p=%v seed %d: lost %d, 99.9%% interval [%d, %d]", p, seed, lost, lo, hi)
			}
		}
	}
}

// The Gilbert-Elliott loss bursts match the model's parameters. With no
// loss in the Good state, a lost packet means the Bad state, and the next
// packet is lost with probability q = (1-R) x LossBad, so burst lengths are
// geometric with mean 1/(1-q) (1/R for the Gilbert model, LossBad 1) and
// variance q/(1-q)^2; the mean loss rate is LossBad x P/(P+R). Both are
// checked against 99.9 % confidence bounds (z = 3.29): the burst mean from
// the geometric variance, the loss rate from the spread of batch means.
func TestGilbertElliottBursts(t *testing.T) {
	const n, batches, z = 400000, 100, 3.29
	tests := []struct {
		name        string
		p, r, bad   float64
		seed        uint64
		wantMeanLen float64
	}{
		{"gilbert short bursts", 0.01, 0.5, 1, 7, 2},
		{"gilbert long bursts", 0.01, 0.25, 1, 8, 4},
		{"gilbert very long bursts", 0.002, 0.1, 1, 9, 10},
		{"elliott lossy bad state", 0.02, 0.2, 0.5, 10, 1 / (1 - 0.8*0.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := New(tt.seed)
			ge := &GilbertElliott{P: tt.p, R: tt.r, LossGood: 0, LossBad: tt.bad}
			l, _ := newTestLink(t, sim, LinkConfig{Loss: ge})
			lostSeq := make([]bool, 0, n)
			l.AddTracer(&Tracer{
				Drop:    func(*Link, *Packet, DropReason) { lostSeq = append(lostSeq, true) },
				Enqueue: func(*Link, *Packet, int) { lostSeq = append(lostSeq, false) },
			})
			pk := pkt(100)
			for i := 0; i < n; i++ {
				l.Send(pk)
			}
			if len(lostSeq) != n {
				t.Fatalf("traced %d packets", len(lostSeq))
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
			if run > 0 { // a burst cut off by the end counts with its length so far
				bursts++
			}
			q := 1 - 1/tt.wantMeanLen
			mean := float64(lost) / float64(bursts)
			se := math.Sqrt(q/((1-q)*(1-q))) / math.Sqrt(float64(bursts))
			if math.Abs(mean-tt.wantMeanLen) > z*se {
				t.Errorf("mean burst %.3f over %d bursts, want %.3f +- %.3f", mean, bursts, tt.wantMeanLen, z*se)
			}

			wantRate := tt.bad * tt.p / (tt.p + tt.r)
			var sum, sum2 float64
			per := n / batches
			for b := 0; b < batches; b++ {
				k := 0
				for _, x := range lostSeq[b*per : (b+1)*per] {
					if x {
						k++
					}
				}
				f := float64(k) / float64(per)
				sum += f
				sum2 += f * f
			}
			bm := sum / batches
			bse := math.Sqrt((sum2/batches - bm*bm) / (batches - 1))
			if rate := float64(lost) / n; math.Abs(rate-wantRate) > z*bse {
				t.Errorf("loss rate %.5f, want %.5f +- %.5f", rate, wantRate, z*bse)
			}
		})
	}
}

// Jitter delays every packet by [0, Jitter) on top of its transmission and
// propagation, yet never reorders: a packet that would overtake its
// predecessor arrives with it.
func TestJitterKeepsOrder(t *testing.T) {
	tests := []struct {
		name   string
		gap    time.Duration // between sends
		jitter time.Duration
	}{
		{"jitter below the gap", time.Millisecond, 500 * time.Microsecond},
		{"jitter far above the gap", 50 * time.Microsecond, 20 * time.Millisecond},
	}
	const n, size = 5000, 200
	const rate, delay = 100e6, 10 * time.Millisecond
	tx := 16 * time.Microsecond // 1600 bits at 100 Mbit/s
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := New(3)
			type arrival struct {
				id uint64
				at time.Time
			}
			var got []arrival
			l, err := NewLink(sim, "j", LinkConfig{Rate: rate, Delay: delay, Jitter: tt.jitter},
				func(p *Packet) { got = append(got, arrival{p.ID, sim.Now()}) })
			if err != nil {
				t.Fatal(err)
			}
			sent := make([]time.Time, n)
			for i := 0; i < n; i++ {
				p := pkt(size)
				p.ID = uint64(i)
				sent[i] = sim.Now()
				l.Send(p)
				sim.RunFor(tt.gap)
			}
			drain(t, sim, 2*n)
			if len(got) != n {
				t.Fatalf("delivered %d", len(got))
			}
			var extra time.Duration
			distinct := map[time.Duration]bool{}
			for i, a := range got {
				if a.id != uint64(i) {
					t.Fatalf("reordered at %d: %d", i, a.id)
				}
				if i > 0 && a.at.Before(got[i-1].at) {
					t.Fatalf("packet %d arrived before packet %d", i, i-1)
				}
				base := sent[i].Add(tx + delay)
				j := a.at.Sub(base)
				if j < 0 || j >= tt.jitter {
					t.Fatalf("packet %d: jitter %v outside [0, %v)", i, j, tt.jitter)
				}
				extra += j
				distinct[j] = true
			}
			mean := extra / n
			if len(distinct) < n/10 {
				t.Errorf("only %d distinct delays", len(distinct))
			}
			if tt.jitter < tt.gap {
				// Never held back: uniform on [0, J), mean J/2 with
				// standard error J/sqrt(12 n) (about 2 µs here).
				if d := mean - tt.jitter/2; d.Abs() > 10*time.Microsecond {
					t.Errorf("mean jitter %v, want %v", mean, tt.jitter/2)
				}
			} else if mean < tt.jitter/2 {
				// Held back behind earlier packets: later than J/2 on
				// average.
				t.Errorf("mean jitter %v below %v", mean, tt.jitter/2)
			}
		})
	}
}

// The same seed gives the same loss positions; another seed other ones.
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
	bad := []LinkConfig{{Rate: -1}, {Delay: -time.Second}, {Rate: math.Inf(1)}, {Rate: math.NaN()}, {Jitter: -1}, {QueueBytes: -1}}
	for _, cfg := range bad {
		if _, err := NewLink(sim, "bad", cfg, func(*Packet) {}); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	l, err := NewLink(sim, "ok", LinkConfig{Rate: 1e6}, func(*Packet) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range bad {
		if err := l.SetConfig(cfg); err == nil {
			t.Errorf("SetConfig(%+v) accepted", cfg)
		}
	}
	if l.Config().Rate != 1e6 {
		t.Errorf("rejected SetConfig changed the link: %+v", l.Config())
	}
}

// SetConfig fills in the default queue like NewLink, and the new rate
// applies to packets sent afterwards.
func TestSetConfig(t *testing.T) {
	sim := New(1)
	l, arr := newTestLink(t, sim, LinkConfig{Rate: 8e6})
	if err := l.SetConfig(LinkConfig{Rate: 0, Delay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if q := l.Config().QueueBytes; q != math.MaxInt {
		t.Errorf("infinite-rate queue %d", q)
	}
	if err := l.SetConfig(LinkConfig{Rate: 16e6, Delay: 25 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if q, want := l.Config().QueueBytes, DefaultQueue(16e6, 25*time.Millisecond); q != want || q != 100000 {
		t.Errorf("queue %d, want %d", q, want)
	}
	l.Send(pkt(2000)) // 1 ms at 16 Mbit/s
	drain(t, sim, 10)
	if len(*arr) != 1 || (*arr)[0].Sub(Epoch) != 26*time.Millisecond {
		t.Errorf("arrivals %v", *arr)
	}
}
