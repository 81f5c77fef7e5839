package linkemu

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/testbed/netsim"
)

// t0 is the fake clock's origin.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newModel(t *testing.T, cfg experiment.Link, rtt time.Duration, seed uint64) *Link {
	t.Helper()
	if cfg.LossModel == "" {
		cfg.LossModel = "bernoulli"
	}
	l, err := NewLink(cfg, rtt, LinkRand(seed, "test"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A lone datagram of S bytes on a link of rate R and delay D arrives at
// exactly D + 8S/R (rounded to the nanosecond) after it was offered to an
// idle link.
func TestLoneDatagramTiming(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		rate  float64
		delay time.Duration
		idle  time.Duration // since an earlier datagram, whose arrival is not checked
		want  time.Duration
	}{
		{"100M 25ms", 1350, 100e6, 25 * time.Millisecond, 0, 25*time.Millisecond + 108*time.Microsecond},
		{"10M 10ms", 1200, 10e6, 10 * time.Millisecond, 0, 10*time.Millisecond + 960*time.Microsecond},
		{"1G no delay", 64, 1e9, 0, 0, 512 * time.Nanosecond},
		{"1M 1s", 1500, 1e6, time.Second, 0, time.Second + 12*time.Millisecond},
		{"after idle", 1000, 8e6, 5 * time.Millisecond, 3 * time.Second, 6 * time.Millisecond},
		// 8000 bits / 3 Mbit/s = 2666666.67 ns, rounded to the nearest.
		{"rounded", 1000, 3e6, 0, 0, 2666667 * time.Nanosecond},
		{"unlimited rate", 1350, 0, 20 * time.Millisecond, 0, 20 * time.Millisecond},
		{"empty datagram", 0, 1e6, time.Millisecond, 0, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newModel(t, experiment.Link{Rate: tt.rate, Delay: tt.delay, QueueBDP: 1}, 2*tt.delay, 1)
			now := t0
			if tt.idle > 0 {
				l.Offer(now, 1000)
				now = now.Add(tt.idle)
			}
			v := l.Offer(now, tt.size)
			if !v.Accepted {
				t.Fatalf("dropped: %v", v.Drop)
			}
			if got := v.Deliver.Sub(now); got != tt.want {
				t.Errorf("arrives after %v, want %v", got, tt.want)
			}
		})
	}
}

// Back-to-back datagrams are serialized one after the other, and one
// offered while the transmitter is busy waits for it.
func TestSerialization(t *testing.T) {
	l := newModel(t, experiment.Link{Rate: 8e6, Delay: 5 * time.Millisecond, QueueBDP: 1}, 10*time.Millisecond, 1) // 1 byte per µs
	offers := []struct {
		at   time.Duration
		size int
		want time.Duration
	}{
		{0, 1000, 6 * time.Millisecond},
		{0, 1000, 7 * time.Millisecond},
		{0, 1000, 8 * time.Millisecond},
		{2500 * time.Microsecond, 500, 8*time.Millisecond + 500*time.Microsecond}, // third in transmission
		{20 * time.Millisecond, 100, 25*time.Millisecond + 100*time.Microsecond},  // idle again
	}
	for i, o := range offers {
		v := l.Offer(t0.Add(o.at), o.size)
		if !v.Accepted || v.Deliver.Sub(t0) != o.want {
			t.Errorf("datagram %d: %+v, want arrival at %v", i, v, o.want)
		}
	}
}

// A burst larger than the queue loses exactly the excess, and room frees
// as datagrams finish transmission: the cases of the simulator's test.
func TestQueueDropsExcess(t *testing.T) {
	type step struct {
		wait  time.Duration
		sizes []int
	}
	rep := func(n, size int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = size
		}
		return s
	}
	span := func(from, to int) []int {
		var s []int
		for i := from; i < to; i++ {
			s = append(s, i)
		}
		return s
	}
	tests := []struct {
		name    string
		cfg     experiment.Link
		rtt     time.Duration
		steps   []step
		dropped []int
		queued  int // bytes queued after the last offer
	}{
		{"exact multiple", experiment.Link{Rate: 1e6, Delay: time.Millisecond, QueueBytes: 10000}, 0,
			[]step{{0, rep(25, 1000)}}, span(10, 25), 10000},
		{"partial datagram of room", experiment.Link{Rate: 1e6, QueueBytes: 10999}, 0,
			[]step{{0, rep(25, 1000)}}, span(10, 25), 10000},
		{"mixed sizes fill the gaps", experiment.Link{Rate: 1e6, QueueBytes: 5000}, 0,
			[]step{{0, []int{3000, 3000, 1000, 1000, 500, 1}}}, []int{1, 4, 5}, 5000},
		// 100 Mbit/s, 50 ms RTT: one BDP is 625,000 bytes, 500 datagrams
		// of 1250 bytes.
		{"default queue is one BDP", experiment.Link{Rate: 100e6, Delay: 25 * time.Millisecond, QueueBDP: 1}, 50 * time.Millisecond,
			[]step{{0, rep(600, 1250)}}, span(500, 600), 625000},
		// A tiny BDP still queues 16 full-size packets.
		{"at least 16 packets", experiment.Link{Rate: 1e6, QueueBDP: 1}, time.Millisecond,
			[]step{{0, rep(20, 1500)}}, span(16, 20), 24000},
		// 1000 bytes take 1 ms at 8 Mbit/s: after 3 ms three have left,
		// so three of the next five fit.
		{"room frees as datagrams leave", experiment.Link{Rate: 8e6, Delay: 10 * time.Millisecond, QueueBytes: 10000}, 0,
			[]step{{0, rep(10, 1000)}, {3 * time.Millisecond, rep(5, 1000)}}, []int{13, 14}, 10000},
		{"unlimited rate never queues", experiment.Link{Delay: time.Millisecond, QueueBytes: 1000}, 0,
			[]step{{0, rep(100, 1500)}}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newModel(t, tt.cfg, tt.rtt, 1)
			now, id := t0, 0
			var dropped []int
			for _, s := range tt.steps {
				now = now.Add(s.wait)
				for _, size := range s.sizes {
					if v := l.Offer(now, size); !v.Accepted {
						if v.Drop != DropQueue {
							t.Errorf("datagram %d: drop reason %v", id, v.Drop)
						}
						dropped = append(dropped, id)
					}
					id++
				}
			}
			if !equalInts(dropped, tt.dropped) {
				t.Errorf("dropped %v, want %v", dropped, tt.dropped)
			}
			if q := l.QueuedBytes(now); q != tt.queued {
				t.Errorf("queued %d bytes, want %d", q, tt.queued)
			}
			if q := l.QueuedBytes(now.Add(time.Hour)); q != 0 {
				t.Errorf("queued %d bytes an hour later", q)
			}
		})
	}
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

// binomialBounds returns [lo, hi] with P(X < lo) <= alpha/2 and
// P(X > hi) <= alpha/2 for X ~ B(n, p), from the exact mass function.
func binomialBounds(n int, p, alpha float64) (lo, hi int) {
	switch p {
	case 0:
		return 0, 0
	case 1:
		return n, n
	}
	lgn, _ := math.Lgamma(float64(n + 1))
	cdf := 0.0
	lo, hi = 0, n
	for k := 0; k <= n; k++ {
		a, _ := math.Lgamma(float64(k + 1))
		b, _ := math.Lgamma(float64(n - k + 1))
		next := cdf + math.Exp(lgn-a-b+float64(k)*math.Log(p)+float64(n-k)*math.Log1p(-p))
		if cdf <= alpha/2 && next > alpha/2 {
			lo = k
		}
		if next >= 1-alpha/2 {
			return lo, k
		}
		cdf = next
	}
	return lo, hi
}

// Bernoulli losses over 100,000 datagrams lie inside the exact 99.9 %
// binomial interval of the configured rate, for several rates and seeds.
func TestBernoulliLossRate(t *testing.T) {
	const n = 100000
	for _, p := range []float64{0, 0.0005, 0.01, 0.1, 0.5, 1} {
		lo, hi := binomialBounds(n, p, 0.001)
		for seed := uint64(1); seed <= 3; seed++ {
			l := newModel(t, experiment.Link{Loss: p}, 0, seed)
			lost := 0
			for i := range n {
				if v := l.Offer(t0.Add(time.Duration(i)), 100); !v.Accepted {
					if v.Drop != DropLoss {
						t.Fatalf("drop reason %v", v.Drop)
					}
					lost++
				}
			}
			if lost < lo || lost > hi {
				t.Errorf("p=%v seed %d: lost %d, 99.9%% interval [%d, %d]", p, seed, lost, lo, hi)
			}
		}
	}
}

// The Gilbert model of an experiment link (loss rate L, mean burst B)
// loses a fraction L of the datagrams in bursts of mean length B, within
// 99.9 % bounds (z = 3.29): the burst mean from the geometric variance,
// the loss rate from the spread of batch means.
func TestGilbertBursts(t *testing.T) {
	const n, batches, z = 400000, 100, 3.29
	tests := []struct {
		loss, burst float64
		seed        uint64
	}{
		{0.01, 2, 7},
		{0.02, 4, 8},
		{0.005, 10, 9},
	}
	for _, tt := range tests {
		l := newModel(t, experiment.Link{Loss: tt.loss, LossModel: "gilbert", BurstLength: tt.burst}, 0, tt.seed)
		lostSeq := make([]bool, n)
		for i := range n {
			lostSeq[i] = !l.Offer(t0, 0).Accepted
		}
		bursts, lost, run := 0, 0, 0
		for _, x := range lostSeq {
			if x {
				lost++
				run++
			} else if run > 0 {
				bursts++
				run = 0
			}
		}
		if run > 0 {
			bursts++
		}
		q := 1 - 1/tt.burst
		mean := float64(lost) / float64(bursts)
		if se := math.Sqrt(q/((1-q)*(1-q))) / math.Sqrt(float64(bursts)); math.Abs(mean-tt.burst) > z*se {
			t.Errorf("loss %v burst %v: mean burst %.3f over %d bursts, want +- %.3f", tt.loss, tt.burst, mean, bursts, z*se)
		}
		var sum, sum2 float64
		per := n / batches
		for b := range batches {
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
		if rate := float64(lost) / n; math.Abs(rate-tt.loss) > z*bse {
			t.Errorf("loss %v burst %v: rate %.5f, want +- %.5f", tt.loss, tt.burst, rate, z*bse)
		}
	}
}

// Jitter delays every datagram by [0, Jitter) on top of its transmission
// and propagation, yet never reorders.
func TestJitterKeepsOrder(t *testing.T) {
	tests := []struct {
		name   string
		gap    time.Duration
		jitter time.Duration
	}{
		{"jitter below the gap", time.Millisecond, 500 * time.Microsecond},
		{"jitter far above the gap", 50 * time.Microsecond, 20 * time.Millisecond},
	}
	const n, size = 5000, 200
	const delay = 10 * time.Millisecond
	tx := 16 * time.Microsecond // 1600 bits at 100 Mbit/s
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newModel(t, experiment.Link{Rate: 100e6, Delay: delay, Jitter: tt.jitter, QueueBDP: 1}, 2*delay, 3)
			var prev time.Time
			var extra time.Duration
			distinct := map[time.Duration]bool{}
			for i := range n {
				now := t0.Add(time.Duration(i) * tt.gap)
				v := l.Offer(now, size)
				if !v.Accepted {
					t.Fatalf("datagram %d dropped", i)
				}
				if v.Deliver.Before(prev) {
					t.Fatalf("datagram %d arrives before its predecessor", i)
				}
				prev = v.Deliver
				j := v.Deliver.Sub(now.Add(tx + delay))
				if j < 0 || j >= tt.jitter {
					t.Fatalf("datagram %d: jitter %v outside [0, %v)", i, j, tt.jitter)
				}
				extra += j
				distinct[j] = true
			}
			mean := extra / n
			if len(distinct) < n/10 {
				t.Errorf("only %d distinct delays", len(distinct))
			}
			if tt.jitter < tt.gap {
				if d := mean - tt.jitter/2; d.Abs() > 10*time.Microsecond {
					t.Errorf("mean jitter %v, want %v", mean, tt.jitter/2)
				}
			} else if mean < tt.jitter/2 {
				t.Errorf("mean jitter %v below %v", mean, tt.jitter/2)
			}
		})
	}
}

// The model is the simulator's: the same offers to a netsim link and to a
// Link with the same seed and link name give the same drops, for the
// same reasons, and the same arrival times.
func TestSameAsSimulator(t *testing.T) {
	links := []experiment.Link{
		{Rate: 20e6, Delay: 15 * time.Millisecond, Loss: 0.02, LossModel: "bernoulli", QueueBytes: 30000, Jitter: 2 * time.Millisecond},
		{Rate: 5e6, Delay: 40 * time.Millisecond, Loss: 0.03, LossModel: "gilbert", BurstLength: 3, QueueBDP: 0.5},
		{Delay: 5 * time.Millisecond, Loss: 0.1, LossModel: "bernoulli"},
	}
	for i, cfg := range links {
		const seed, name = 42, "path1/down"
		rtt := 2 * cfg.Delay
		nc := netsim.LinkConfig{Rate: cfg.Rate, Delay: cfg.Delay, Jitter: cfg.Jitter, QueueBytes: int(cfg.QueueLimit(rtt))}
		switch cfg.LossModel {
		case "gilbert":
			r := 1 / cfg.BurstLength
			nc.Loss = &netsim.GilbertElliott{P: cfg.Loss * r / (1 - cfg.Loss), R: r, LossBad: 1}
		default:
			nc.Loss = netsim.Bernoulli{P: cfg.Loss}
		}
		if cfg.Rate == 0 {
			nc.QueueBytes = 0
		}
		sim := netsim.New(seed)
		var simArrivals []time.Duration
		sl, err := netsim.NewLink(sim, name, nc, func(*netsim.Packet) { simArrivals = append(simArrivals, sim.Now().Sub(netsim.Epoch)) })
		if err != nil {
			t.Fatal(err)
		}
		var simDrops []netsim.DropReason
		sl.AddTracer(&netsim.Tracer{Drop: func(_ *netsim.Link, _ *netsim.Packet, why netsim.DropReason) { simDrops = append(simDrops, why) }})
		ml, err := NewLink(cfg, rtt, LinkRand(seed, name))
		if err != nil {
			t.Fatal(err)
		}
		var arrivals []time.Duration
		var drops []netsim.DropReason
		traffic := rand.New(rand.NewPCG(uint64(i), 0))
		for range 20000 {
			sim.RunFor(time.Duration(traffic.IntN(400)) * time.Microsecond)
			size := 40 + traffic.IntN(1400)
			sl.Send(&netsim.Packet{Data: make([]byte, size)})
			v := ml.Offer(t0.Add(sim.Now().Sub(netsim.Epoch)), size)
			switch {
			case v.Accepted:
				arrivals = append(arrivals, v.Deliver.Sub(t0))
			case v.Drop == DropQueue:
				drops = append(drops, netsim.DropQueue)
			default:
				drops = append(drops, netsim.DropLoss)
			}
		}
		for sim.Step() {
		}
		if len(arrivals) != len(simArrivals) || len(drops) != len(simDrops) {
			t.Fatalf("link %d: %d arrivals and %d drops, the simulator %d and %d", i, len(arrivals), len(drops), len(simArrivals), len(simDrops))
		}
		for k := range arrivals {
			if arrivals[k] != simArrivals[k] {
				t.Fatalf("link %d: arrival %d at %v, the simulator's at %v", i, k, arrivals[k], simArrivals[k])
			}
		}
		queue := 0
		for k := range drops {
			if drops[k] != simDrops[k] {
				t.Fatalf("link %d: drop %d for %v, the simulator's for %v", i, k, drops[k], simDrops[k])
			}
			if drops[k] == netsim.DropQueue {
				queue++
			}
		}
		t.Logf("link %d: %d delivered, %d dropped (%d by the queue)", i, len(arrivals), len(drops), queue)
	}
}

func TestBadLinkConfig(t *testing.T) {
	bad := []experiment.Link{
		{Rate: -1}, {Rate: math.Inf(1)}, {Rate: math.NaN()}, {Delay: -time.Second}, {Jitter: -1},
		{QueueBytes: -1}, {QueueBDP: -1}, {Loss: -0.1}, {Loss: 1.5}, {Loss: math.NaN()},
		{Loss: 1, LossModel: "gilbert"}, {LossModel: "uniform"},
	}
	for _, cfg := range bad {
		if _, err := NewLink(cfg, time.Millisecond, LinkRand(1, "x")); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	if _, err := NewLink(experiment.Link{}, 0, nil); err == nil {
		t.Error("accepted a nil random source")
	}
}

func BenchmarkModelOffer(b *testing.B) {
	l, err := NewLink(experiment.Link{Rate: 100e6, Delay: 25 * time.Millisecond, Loss: 0.001, QueueBDP: 1, Jitter: time.Millisecond}, 50*time.Millisecond, LinkRand(1, "b"))
	if err != nil {
		b.Fatal(err)
	}
	now := t0
	for b.Loop() {
		now = now.Add(100 * time.Microsecond)
		l.Offer(now, 1350)
	}
}
