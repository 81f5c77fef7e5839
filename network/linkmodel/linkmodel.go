// Package linkmodel is the link model every emulator of mpq applies: the
// deterministic simulator (network/netsim), the loopback emulator
// (network/linkemu) and the forwarder of the namespace testbed
// (network/netns/forward). One direction of a path is a Link: a random
// loss model decides first (a lost packet takes neither queue space nor
// transmission time, as with netem), then a drop-tail queue bounded in
// bytes (waiting or in transmission) admits the packet if it fits; the
// packet is transmitted after the ones ahead of it at the link's rate and
// arrives a propagation delay later, plus a uniform jitter in [0, Jitter)
// that never lets it overtake its predecessor.
//
// A Link has no clock: Offer takes the current time, in nanoseconds on any
// time base that does not go backwards, and answers when the packet
// arrives or why it is dropped. The drivers (virtual time in the
// simulator, the monotonic clock in the emulators) hold the packet until
// then. Offer allocates nothing once the queue's bookkeeping has grown to
// the link's working size.
package linkmodel

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/mpq/mpq/experiment"
)

// LossModel decides which packets a link loses.
type LossModel interface {
	// Lose reports whether the next packet is lost.
	Lose(r *rand.Rand) bool
}

// Bernoulli loses each packet independently with probability P.
type Bernoulli struct{ P float64 }

// Lose implements LossModel.
func (b Bernoulli) Lose(r *rand.Rand) bool { return b.P > 0 && r.Float64() < b.P }

// GilbertElliott is the two-state Markov loss model of bursty channels: in
// the Good state packets are lost with probability LossGood, in the Bad
// state with LossBad; after each packet the state moves Good->Bad with
// probability P and Bad->Good with probability R. With LossGood 0 and
// LossBad 1 (the Gilbert model) the mean burst length is 1/R and the mean
// loss rate P/(P+R). It has state: give every link its own.
type GilbertElliott struct {
	P, R              float64
	LossGood, LossBad float64
	bad               bool
}

// Lose implements LossModel.
func (g *GilbertElliott) Lose(r *rand.Rand) bool {
	p := g.LossGood
	if g.bad {
		p = g.LossBad
	}
	lost := p > 0 && r.Float64() < p
	if g.bad {
		if r.Float64() < g.R {
			g.bad = false
		}
	} else if r.Float64() < g.P {
		g.bad = true
	}
	return lost
}

// Gilbert returns the Gilbert model (a Bad state that loses every packet,
// a Good state that loses none) of a mean loss rate and a mean loss burst
// length in packets: R = 1/burst, P = rate*R/(1-rate), so that the mean
// loss rate P/(P+R) is rate. rate must be below 1.
func Gilbert(rate, burst float64) *GilbertElliott {
	r := 1 / max(burst, 1)
	return &GilbertElliott{P: rate * r / (1 - rate), R: r, LossBad: 1}
}

// Config describes one direction of a link.
type Config struct {
	// Rate is the transmission rate in bits per second; 0 means infinite.
	Rate float64
	// Delay is the propagation delay.
	Delay time.Duration
	// QueueBytes bounds the drop-tail queue (bytes waiting or in
	// transmission); 0 means DefaultQueue, and unbounded at infinite rate
	// (where nothing waits).
	QueueBytes int
	// Loss is the random loss model (nil: none).
	Loss LossModel
	// Jitter adds a uniform random delay in [0, Jitter) to each packet
	// without reordering.
	Jitter time.Duration
	// Trace, if not nil, times the transmissions instead of Rate: a
	// packet leaves at the trace's delivery opportunities.
	Trace *Trace
}

// DefaultQueue is the queue of a link whose QueueBytes is zero: one
// bandwidth-delay product of the round trip (2 x Delay at Rate), and at
// least 16 full-size packets.
func DefaultQueue(rate float64, delay time.Duration) int {
	bdp := rate * (2 * delay).Seconds() / 8
	return max(int(bdp), 16*1500)
}

// Normalize checks a configuration and fills in the default queue.
func (c Config) Normalize() (Config, error) {
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		return c, fmt.Errorf("bad rate %v", c.Rate)
	}
	if c.Delay < 0 || c.Jitter < 0 || c.QueueBytes < 0 {
		return c, errors.New("negative delay, jitter or queue")
	}
	if c.QueueBytes == 0 {
		c.QueueBytes = DefaultQueue(c.Rate, c.Delay)
		if c.Rate == 0 {
			c.QueueBytes = math.MaxInt
		}
	}
	return c, nil
}

// FromExperiment is the model of an experiment link on a path of
// round-trip propagation delay rtt (which sizes a queue given in BDPs,
// see experiment.Link.QueueLimit), with a fresh loss model. It rejects
// what the experiment loader rejects, for links built by hand.
func FromExperiment(l experiment.Link, rtt time.Duration) (Config, error) {
	switch {
	case l.Rate < 0 || math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0):
		return Config{}, fmt.Errorf("bad rate %v", l.Rate)
	case l.Delay < 0 || l.Jitter < 0 || l.QueueBytes < 0 || l.QueueBDP < 0 || rtt < 0:
		return Config{}, errors.New("negative delay, jitter or queue")
	case !(l.Loss >= 0 && l.Loss <= 1):
		return Config{}, fmt.Errorf("loss %v outside [0, 1]", l.Loss)
	case l.LossModel == "gilbert" && l.Loss >= 1:
		return Config{}, errors.New("a Gilbert-Elliott loss rate must be below 100%")
	case l.LossModel != "" && l.LossModel != "bernoulli" && l.LossModel != "gilbert":
		return Config{}, fmt.Errorf("unknown loss model %q", l.LossModel)
	}
	c := Config{Rate: l.Rate, Delay: l.Delay, Jitter: l.Jitter}
	if l.Rate > 0 {
		c.QueueBytes = int(min(l.QueueLimit(rtt), math.MaxInt32))
	}
	if l.Trace != nil {
		tr, err := NewTrace(l.Trace)
		if err != nil {
			return Config{}, err
		}
		c.Trace = tr
	}
	switch {
	case l.Loss == 0:
	case l.LossModel == "gilbert":
		c.Loss = Gilbert(l.Loss, l.BurstLength)
	default:
		c.Loss = Bernoulli{P: l.Loss}
	}
	return c, nil
}

// Rand returns the random source of the link named name ("path0/up") in a
// run of seed. Every emulator draws a link's losses and jitter from it, so
// that the same experiment file gives the same draws everywhere.
func Rand(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte("link/"))
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// DropReason says why a link dropped a packet.
type DropReason uint8

// Drop reasons.
const (
	DropQueue DropReason = iota // drop-tail queue full
	DropLoss                    // random loss model
	DropDown                    // the link is down (a scheduled change)
)

func (d DropReason) String() string {
	switch d {
	case DropQueue:
		return "queue_full"
	case DropLoss:
		return "random_loss"
	case DropDown:
		return "link_down"
	}
	return fmt.Sprintf("drop_reason_%d", uint8(d))
}

// Verdict is the fate of a packet offered to a link.
type Verdict struct {
	// OK: the packet arrives at Arrive (nanoseconds, on the time base of
	// the offers). Otherwise Drop says why it is lost.
	OK     bool
	Drop   DropReason
	Arrive int64
	// Queued is the bytes in the queue (waiting or in transmission) once
	// an accepted packet joined it.
	Queued int
}

// Link is the model of one direction of a path. It is not safe for
// concurrent use.
type Link struct {
	cfg Config
	rng *rand.Rand
	// busyUntil is when the transmitter finishes the last accepted packet.
	busyUntil int64
	// inQueue[qhead:] lists (finish time, size) of accepted packets not
	// yet fully transmitted, oldest first.
	inQueue     []queued
	qhead       int
	queuedBytes int
	lastArrival int64
	// steps are the scheduled changes, times relative to origin; next is
	// the first not applied yet. Until SetOrigin none applies.
	steps     []Step
	next      int
	origin    int64
	originSet bool
	down      bool
	// A trace-driven link's next unused opportunity (once oppSet), and
	// the bytes the last one used left (see Trace).
	nextOpp int64
	oppSet  bool
	credit  int
}

type queued struct {
	done int64
	size int
}

// New returns a link of configuration cfg (normalized) drawing its losses
// and jitter from rng.
func New(cfg Config, rng *rand.Rand) (*Link, error) {
	cfg, err := cfg.Normalize()
	if err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, errors.New("no random source")
	}
	return &Link{cfg: cfg, rng: rng, busyUntil: math.MinInt64, lastArrival: math.MinInt64}, nil
}

// Config returns the link's configuration (with the default queue filled in).
func (l *Link) Config() Config { return l.cfg }

// MinDelay is the least propagation delay a packet offered from now on
// can meet: the configuration's, or a scheduled change's not applied yet
// (a change that takes the link down delivers nothing). No packet
// arrives sooner than MinDelay after it is offered.
func (l *Link) MinDelay() time.Duration {
	d := l.cfg.Delay
	for _, s := range l.steps[l.next:] {
		if !s.Down {
			d = min(d, s.Config.Delay)
		}
	}
	return d
}

// SetConfig changes the link's rate, delay, loss, queue or jitter for the
// packets offered from now on; packets already accepted keep their
// schedule. It rejects what New rejects and then leaves the link unchanged.
func (l *Link) SetConfig(cfg Config) error {
	cfg, err := cfg.Normalize()
	if err != nil {
		return err
	}
	l.cfg = cfg
	return nil
}

// QueuedBytes is the number of bytes accepted and not yet transmitted at now.
func (l *Link) QueuedBytes(now int64) int {
	l.expire(now)
	return l.queuedBytes
}

// expire forgets the packets whose transmission finished by now.
func (l *Link) expire(now int64) {
	q := l.inQueue
	i := l.qhead
	for i < len(q) && q[i].done <= now {
		l.queuedBytes -= q[i].size
		i++
	}
	switch {
	case i == len(q):
		l.inQueue, l.qhead = q[:0], 0
	case i > 1024 && i > len(q)/2:
		l.inQueue, l.qhead = q[:copy(q, q[i:])], 0
	default:
		l.qhead = i
	}
}

// TxTime is the serialization delay of size bytes in nanoseconds, rounded
// to the nearest.
func (l *Link) TxTime(size int) int64 {
	if l.cfg.Rate == 0 {
		return 0
	}
	return int64(math.Round(float64(size) * 8 / l.cfg.Rate * 1e9))
}

// Offer decides the fate of a packet of size bytes offered at now, which
// must not be before the previous offer's.
func (l *Link) Offer(now int64, size int) Verdict {
	size = max(size, 0)
	if l.next < len(l.steps) && l.originSet {
		l.advance(now)
	}
	if l.down {
		return Verdict{Drop: DropDown}
	}
	if l.cfg.Loss != nil && l.cfg.Loss.Lose(l.rng) {
		return Verdict{Drop: DropLoss}
	}
	l.expire(now)
	if size > l.cfg.QueueBytes-l.queuedBytes {
		return Verdict{Drop: DropQueue}
	}
	var done int64
	if l.cfg.Trace != nil {
		done = l.traceDone(max(l.busyUntil, now), size)
	} else {
		done = max(l.busyUntil, now) + l.TxTime(size)
	}
	l.busyUntil = done
	l.inQueue = append(l.inQueue, queued{done, size})
	l.queuedBytes += size
	arrive := done + int64(l.cfg.Delay)
	if l.cfg.Jitter > 0 {
		arrive += l.rng.Int64N(int64(l.cfg.Jitter))
	}
	arrive = max(arrive, l.lastArrival) // jitter never reorders
	l.lastArrival = arrive
	return Verdict{OK: true, Arrive: arrive, Queued: l.queuedBytes}
}
