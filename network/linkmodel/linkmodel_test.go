package linkmodel

import (
	"math"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

func newLink(t *testing.T, cfg Config, seed uint64) *Link {
	t.Helper()
	l, err := New(cfg, Rand(seed, "test"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A lone packet of S bytes on a link of rate R and delay D arrives at
// exactly D + 8S/R (rounded to the nanosecond) after it was offered to an
// idle link: not one nanosecond earlier.
func TestLonePacketTiming(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		rate  float64
		delay time.Duration
		idle  time.Duration // since an earlier packet, whose arrival is not checked
		want  time.Duration // computed by hand
	}{
		{"100M 25ms", 1350, 100e6, 25 * time.Millisecond, 0, 25*time.Millisecond + 108*time.Microsecond},
		{"10M 10ms", 1200, 10e6, 10 * time.Millisecond, 0, 10*time.Millisecond + 960*time.Microsecond},
		{"1G no delay", 64, 1e9, 0, 0, 512 * time.Nanosecond},
		{"1M 1s", 1500, 1e6, time.Second, 0, time.Second + 12*time.Millisecond},
		{"after idle", 1000, 8e6, 5 * time.Millisecond, 3 * time.Second, 6 * time.Millisecond},
		// 8000 bits / 3 Mbit/s = 2666666.67 ns, rounded to the nearest.
		{"rounded", 1000, 3e6, 0, 0, 2666667 * time.Nanosecond},
		{"infinite rate", 1350, 0, 20 * time.Millisecond, 0, 20 * time.Millisecond},
		{"empty packet", 0, 1e6, time.Millisecond, 0, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLink(t, Config{Rate: tt.rate, Delay: tt.delay}, 1)
			now := int64(12345)
			if tt.idle > 0 {
				l.Offer(now, 1000)
				now += int64(tt.idle)
			}
			v := l.Offer(now, tt.size)
			if !v.OK {
				t.Fatalf("dropped: %v", v.Drop)
			}
			if got := time.Duration(v.Arrive - now); got != tt.want {
				t.Errorf("arrives after %v, want %v", got, tt.want)
			}
		})
	}
}

// Back-to-back packets are serialized one after the other, and one
// offered while the transmitter is busy waits for it.
func TestSerialization(t *testing.T) {
	l := newLink(t, Config{Rate: 8e6, Delay: 5 * time.Millisecond}, 1) // 1 byte per µs
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
		v := l.Offer(int64(o.at), o.size)
		if !v.OK || time.Duration(v.Arrive) != o.want {
			t.Errorf("packet %d: %+v, want arrival at %v", i, v, o.want)
		}
	}
}

func span(from, to int) []int {
	var s []int
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

// A burst larger than the queue loses exactly the excess: the drop-tail
// queue (bytes waiting or in transmission) admits packets while they fit
// and drops the rest, and frees room as packets finish transmission.
func TestQueueDropsExcess(t *testing.T) {
	type step struct {
		wait  time.Duration // time to let pass before the burst
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
		cfg   Config
		steps []step
		// dropped lists the indexes (in offering order) of the packets
		// the queue must drop.
		dropped []int
		queued  int // bytes queued after the last offer
	}{
		{"exact multiple", Config{Rate: 1e6, Delay: time.Millisecond, QueueBytes: 10000},
			[]step{{0, rep(25, 1000)}}, span(10, 25), 10000},
		{"partial packet of room", Config{Rate: 1e6, QueueBytes: 10999},
			[]step{{0, rep(25, 1000)}}, span(10, 25), 10000},
		{"mixed sizes fill the gaps", Config{Rate: 1e6, QueueBytes: 5000},
			[]step{{0, []int{3000, 3000, 1000, 1000, 500, 1}}}, []int{1, 4, 5}, 5000},
		// 100 Mbit/s, 25 ms: one BDP of the 50 ms round trip is 625,000
		// bytes, 500 packets of 1250 bytes.
		{"default queue is one BDP", Config{Rate: 100e6, Delay: 25 * time.Millisecond},
			[]step{{0, rep(600, 1250)}}, span(500, 600), 625000},
		// A tiny BDP still queues 16 full-size packets.
		{"at least 16 packets", Config{Rate: 1e6},
			[]step{{0, rep(20, 1500)}}, span(16, 20), 24000},
		// 1000 bytes take 1 ms at 8 Mbit/s: after 3 ms three packets have
		// left the queue, so three of the next five fit.
		{"room frees as packets leave", Config{Rate: 8e6, Delay: 10 * time.Millisecond, QueueBytes: 10000},
			[]step{{0, rep(10, 1000)}, {3 * time.Millisecond, rep(5, 1000)}}, []int{13, 14}, 10000},
		{"infinite rate never queues", Config{Delay: time.Millisecond},
			[]step{{0, rep(100, 1500)}}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLink(t, tt.cfg, 1)
			var now int64
			id := 0
			var dropped []int
			for _, s := range tt.steps {
				now += int64(s.wait)
				for _, size := range s.sizes {
					if v := l.Offer(now, size); !v.OK {
						if v.Drop != DropQueue {
							t.Errorf("packet %d: drop reason %v", id, v.Drop)
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
			if q := l.QueuedBytes(now + int64(time.Hour)); q != 0 {
				t.Errorf("queued %d bytes an hour later", q)
			}
		})
	}
}

// binomialInterval returns the central 1-alpha interval [lo, hi] of the
// binomial distribution B(n, p): P(X < lo) <= alpha/2 and P(X > hi) <=
// alpha/2, computed exactly from the probability mass function.
func binomialInterval(n int, p, alpha float64) (lo, hi int) {
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
			lo = k // P(X < k) = cdf <= alpha/2
		}
		if next >= 1-alpha/2 {
			return lo, k // P(X > k) = 1 - next <= alpha/2
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
			l := newLink(t, Config{Loss: Bernoulli{P: p}}, seed)
			lost := 0
			for i := range n {
				if v := l.Offer(int64(i), 100); !v.OK {
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

// The Gilbert-Elliott loss bursts match the model's parameters. With no
// loss in the Good state, a lost packet means the Bad state, and the next
// packet is lost with probability q = (1-R) x LossBad, so burst lengths are
// geometric with mean 1/(1-q) (1/R for the Gilbert model, LossBad 1) and
// variance q/(1-q)^2; the mean loss rate is LossBad x P/(P+R). Both are
// checked against 99.9 % confidence bounds (z = 3.29): the burst mean from
// the geometric variance, the loss rate from the spread of batch means.
// Gilbert(rate, burst) gives the model of that rate and mean burst.
func TestGilbertElliottBursts(t *testing.T) {
	const n, batches, z = 400000, 100, 3.29
	tests := []struct {
		name        string
		ge          *GilbertElliott
		seed        uint64
		wantMeanLen float64
		wantRate    float64
	}{
		{"gilbert short bursts", &GilbertElliott{P: 0.01, R: 0.5, LossBad: 1}, 7, 2, 0.01 / 0.51},
		{"gilbert long bursts", &GilbertElliott{P: 0.01, R: 0.25, LossBad: 1}, 8, 4, 0.01 / 0.26},
		{"gilbert very long bursts", &GilbertElliott{P: 0.002, R: 0.1, LossBad: 1}, 9, 10, 0.002 / 0.102},
		{"elliott lossy bad state", &GilbertElliott{P: 0.02, R: 0.2, LossBad: 0.5}, 10, 1 / (1 - 0.8*0.5), 0.5 * 0.02 / 0.22},
		{"Gilbert(1%, 2)", Gilbert(0.01, 2), 7, 2, 0.01},
		{"Gilbert(2%, 4)", Gilbert(0.02, 4), 8, 4, 0.02},
		{"Gilbert(0.5%, 10)", Gilbert(0.005, 10), 9, 10, 0.005},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLink(t, Config{Loss: tt.ge}, tt.seed)
			lostSeq := make([]bool, n)
			for i := range n {
				lostSeq[i] = !l.Offer(0, 100).OK
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
			if run > 0 { // a burst cut off by the end counts with its length so far
				bursts++
			}
			q := 1 - 1/tt.wantMeanLen
			mean := float64(lost) / float64(bursts)
			if se := math.Sqrt(q/((1-q)*(1-q))) / math.Sqrt(float64(bursts)); math.Abs(mean-tt.wantMeanLen) > z*se {
				t.Errorf("mean burst %.3f over %d bursts, want %.3f +- %.3f", mean, bursts, tt.wantMeanLen, z*se)
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
			if rate := float64(lost) / n; math.Abs(rate-tt.wantRate) > z*bse {
				t.Errorf("loss rate %.5f, want %.5f +- %.5f", rate, tt.wantRate, z*bse)
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
		gap    time.Duration // between offers
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
			l := newLink(t, Config{Rate: 100e6, Delay: delay, Jitter: tt.jitter}, 3)
			var prev int64
			var extra time.Duration
			distinct := map[time.Duration]bool{}
			for i := range n {
				now := int64(i) * int64(tt.gap)
				v := l.Offer(now, size)
				if !v.OK {
					t.Fatalf("packet %d dropped", i)
				}
				if v.Arrive < prev {
					t.Fatalf("packet %d arrives before its predecessor", i)
				}
				prev = v.Arrive
				j := time.Duration(v.Arrive-now) - tx - delay
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

// The same seed and link name give the same losses; another seed or
// another name other ones.
func TestRandSameSeedSameLosses(t *testing.T) {
	run := func(seed uint64, name string) []int {
		l, err := New(Config{Loss: Bernoulli{P: 0.05}, Jitter: time.Millisecond}, Rand(seed, name))
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for i := range 2000 {
			if v := l.Offer(int64(i)*int64(time.Millisecond), 10); v.OK {
				got = append(got, i, int(v.Arrive))
			}
		}
		return got
	}
	a, b := run(1, "path0/up"), run(1, "path0/up")
	if !equalInts(a, b) {
		t.Fatal("same seed and name, different draws")
	}
	if equalInts(a, run(2, "path0/up")) || equalInts(a, run(1, "path0/down")) {
		t.Fatal("different seeds or names, same draws")
	}
}

func TestBadConfig(t *testing.T) {
	bad := []Config{{Rate: -1}, {Delay: -time.Second}, {Rate: math.Inf(1)}, {Rate: math.NaN()}, {Jitter: -1}, {QueueBytes: -1}}
	for _, cfg := range bad {
		if _, err := New(cfg, Rand(1, "x")); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Error("accepted a nil random source")
	}
	l := newLink(t, Config{Rate: 1e6}, 1)
	for _, cfg := range bad {
		if err := l.SetConfig(cfg); err == nil {
			t.Errorf("SetConfig(%+v) accepted", cfg)
		}
	}
	if l.Config().Rate != 1e6 {
		t.Errorf("rejected SetConfig changed the link: %+v", l.Config())
	}
}

// SetConfig fills in the default queue like New, and the new rate applies
// to packets offered afterwards.
func TestSetConfig(t *testing.T) {
	l := newLink(t, Config{Rate: 8e6}, 1)
	if err := l.SetConfig(Config{Rate: 0, Delay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if q := l.Config().QueueBytes; q != math.MaxInt {
		t.Errorf("infinite-rate queue %d", q)
	}
	if err := l.SetConfig(Config{Rate: 16e6, Delay: 25 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if q, want := l.Config().QueueBytes, DefaultQueue(16e6, 25*time.Millisecond); q != want || q != 100000 {
		t.Errorf("queue %d, want %d", q, want)
	}
	if v := l.Offer(0, 2000); !v.OK || v.Arrive != int64(26*time.Millisecond) { // 1 ms at 16 Mbit/s
		t.Errorf("verdict %+v", v)
	}
}

// An experiment link becomes the model with its queue resolved (bytes, or
// BDPs of the path's round trip with at least 16 packets; unbounded at
// unlimited rate) and its loss model; what the loader rejects is rejected.
func TestFromExperiment(t *testing.T) {
	rtt := 50 * time.Millisecond
	tests := []struct {
		name  string
		link  experiment.Link
		queue int
		loss  string
	}{
		{"bytes", experiment.Link{Rate: 10e6, QueueBytes: 30000}, 30000, ""},
		// 100 Mbit/s x 50 ms / 8 = 625,000 bytes; half of it.
		{"half a BDP", experiment.Link{Rate: 100e6, QueueBDP: 0.5}, 312500, ""},
		{"16 packets at least", experiment.Link{Rate: 1e6, QueueBDP: 1}, 24000, ""},
		{"unlimited rate", experiment.Link{QueueBytes: 1000}, math.MaxInt, ""},
		{"bernoulli", experiment.Link{Rate: 1e6, QueueBytes: 5000, Loss: 0.01, LossModel: "bernoulli"}, 5000, "bernoulli"},
		{"default model", experiment.Link{Rate: 1e6, QueueBytes: 5000, Loss: 0.01}, 5000, "bernoulli"},
		{"gilbert", experiment.Link{Rate: 1e6, QueueBytes: 5000, Loss: 0.01, LossModel: "gilbert", BurstLength: 4}, 5000, "gilbert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromExperiment(tt.link, rtt)
			if err != nil {
				t.Fatal(err)
			}
			if c.Rate != tt.link.Rate || c.Delay != tt.link.Delay || c.Jitter != tt.link.Jitter {
				t.Errorf("config %+v", c)
			}
			l, err := New(c, Rand(1, "x"))
			if err != nil {
				t.Fatal(err)
			}
			if q := l.Config().QueueBytes; q != tt.queue {
				t.Errorf("queue %d, want %d", q, tt.queue)
			}
			switch m := c.Loss.(type) {
			case nil:
				if tt.loss != "" {
					t.Errorf("no loss model, want %s", tt.loss)
				}
			case Bernoulli:
				if tt.loss != "bernoulli" || m.P != tt.link.Loss {
					t.Errorf("bernoulli %+v, want %s", m, tt.loss)
				}
			case *GilbertElliott:
				if g := Gilbert(tt.link.Loss, tt.link.BurstLength); tt.loss != "gilbert" || *m != *g {
					t.Errorf("gilbert %+v, want %s", m, tt.loss)
				}
			}
		})
	}
	bad := []experiment.Link{
		{Rate: -1}, {Rate: math.Inf(1)}, {Rate: math.NaN()}, {Delay: -time.Second}, {Jitter: -1},
		{QueueBytes: -1}, {QueueBDP: -1}, {Loss: -0.1}, {Loss: 1.5}, {Loss: math.NaN()},
		{Loss: 1, LossModel: "gilbert"}, {LossModel: "uniform"},
	}
	for _, l := range bad {
		if _, err := FromExperiment(l, rtt); err == nil {
			t.Errorf("%+v accepted", l)
		}
	}
	// Every call has a loss model of its own: Gilbert's state is not
	// shared between links.
	g := experiment.Link{Loss: 0.1, LossModel: "gilbert", BurstLength: 2}
	a, _ := FromExperiment(g, rtt)
	b, _ := FromExperiment(g, rtt)
	if a.Loss == b.Loss {
		t.Error("two links share one Gilbert state")
	}
}

// Offer allocates nothing in the steady state.
func TestOfferAllocatesNothing(t *testing.T) {
	l := newLink(t, Config{Rate: 100e6, Delay: 25 * time.Millisecond, Loss: Bernoulli{P: 0.001}, Jitter: time.Millisecond}, 1)
	var now int64
	for range 10000 { // grow the queue's bookkeeping
		now += int64(100 * time.Microsecond)
		l.Offer(now, 1350)
	}
	if n := testing.AllocsPerRun(1000, func() {
		now += int64(100 * time.Microsecond)
		l.Offer(now, 1350)
	}); n != 0 {
		t.Errorf("%v allocations per offer", n)
	}
}

func BenchmarkOffer(b *testing.B) {
	l, err := New(Config{Rate: 100e6, Delay: 25 * time.Millisecond, Loss: Bernoulli{P: 0.001}, Jitter: time.Millisecond}, Rand(1, "b"))
	if err != nil {
		b.Fatal(err)
	}
	var now int64
	for b.Loop() {
		now += int64(100 * time.Microsecond)
		l.Offer(now, 1350)
	}
}
