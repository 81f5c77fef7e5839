package netsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"time"
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
// loss rate P/(P+R).
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

// LinkConfig describes one direction of a link.
type LinkConfig struct {
	// Rate is the transmission rate in bits per second; 0 means infinite.
	Rate float64
	// Delay is the propagation delay.
	Delay time.Duration
	// QueueBytes bounds the drop-tail queue (bytes waiting or in
	// transmission); 0 means DefaultQueue.
	QueueBytes int
	// Loss is the random loss model (nil: none). It decides when a packet
	// is offered, before the queue, as netem does: a lost packet takes
	// neither queue space nor transmission time.
	Loss LossModel
	// Jitter adds a uniform random delay in [0, Jitter) to each packet
	// without reordering: a packet never overtakes an earlier one.
	Jitter time.Duration
}

// DefaultQueue is the queue of a link whose QueueBytes is zero: one
// bandwidth-delay product of the round trip (2 x Delay at Rate), and at
// least 16 full-size packets.
func DefaultQueue(rate float64, delay time.Duration) int {
	bdp := rate * (2 * delay).Seconds() / 8
	return max(int(bdp), 16*1500)
}

// DropReason says why a link dropped a packet.
type DropReason uint8

// Drop reasons.
const (
	DropQueue DropReason = iota // drop-tail queue full
	DropLoss                    // random loss model
)

func (d DropReason) String() string {
	if d == DropQueue {
		return "queue_full"
	}
	return "random_loss"
}

// Packet is a datagram in flight on the simulated network.
type Packet struct {
	Src, Dst netip.AddrPort
	Data     []byte
	// ID numbers packets in the order the network accepted them.
	ID uint64
}

// Tracer receives the packet-level events of a link; any field may be nil.
type Tracer struct {
	Enqueue func(l *Link, p *Packet, queued int)
	Drop    func(l *Link, p *Packet, why DropReason)
	Deliver func(l *Link, p *Packet)
}

// Link is a unidirectional link: a drop-tail queue feeding a transmitter of
// a fixed rate, followed by a propagation delay.
type Link struct {
	Name string
	cfg  LinkConfig
	sim  *Sim
	rng  *rand.Rand
	// busyUntil is when the transmitter finishes the last accepted packet,
	// in nanoseconds since Epoch.
	busyUntil int64
	// inQueue[qhead:] lists (finish time, size) of accepted packets not yet
	// fully transmitted, oldest first.
	inQueue     []queued
	qhead       int
	queuedBytes int
	lastArrival int64
	deliver     func(*Packet)
	tracers     []*Tracer

	// Counters.
	Sent, Delivered, DroppedQueue, DroppedLoss uint64
	BytesDelivered                             uint64
}

type queued struct {
	done int64
	size int
}

// NewLink creates a link whose packets are handed to deliver on arrival.
func NewLink(sim *Sim, name string, cfg LinkConfig, deliver func(*Packet)) (*Link, error) {
	cfg, err := cfg.normalize(name)
	if err != nil {
		return nil, err
	}
	return &Link{Name: name, cfg: cfg, sim: sim, rng: sim.Rand("link/" + name), deliver: deliver, busyUntil: sim.nowNs}, nil
}

// normalize checks a configuration and fills in the default queue: one
// bandwidth-delay product, unbounded on a link of infinite rate.
func (cfg LinkConfig) normalize(name string) (LinkConfig, error) {
	if cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0) {
		return cfg, fmt.Errorf("netsim: link %s: bad rate %v", name, cfg.Rate)
	}
	if cfg.Delay < 0 || cfg.Jitter < 0 || cfg.QueueBytes < 0 {
		return cfg, fmt.Errorf("netsim: link %s: negative delay, jitter or queue", name)
	}
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = DefaultQueue(cfg.Rate, cfg.Delay)
		if cfg.Rate == 0 {
			cfg.QueueBytes = math.MaxInt
		}
	}
	return cfg, nil
}

// Config returns the link's configuration (with the default queue filled in).
func (l *Link) Config() LinkConfig { return l.cfg }

// SetConfig changes the link's rate, delay, loss, queue or jitter from now
// on; packets already accepted keep their schedule. It rejects what
// NewLink rejects and then leaves the link unchanged.
func (l *Link) SetConfig(cfg LinkConfig) error {
	cfg, err := cfg.normalize(l.Name)
	if err != nil {
		return err
	}
	l.cfg = cfg
	return nil
}

// AddTracer registers packet-level hooks. The hooks run on the event loop
// and may keep the *Packet only until they return: the network recycles
// packets and their data.
func (l *Link) AddTracer(t *Tracer) { l.tracers = append(l.tracers, t) }

// QueuedBytes is the number of bytes accepted and not yet transmitted.
func (l *Link) QueuedBytes() int {
	l.expire(l.sim.nowNs)
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

// txTime is the serialization delay of size bytes in nanoseconds, rounded
// to the nearest.
func (l *Link) txTime(size int) int64 {
	if l.cfg.Rate == 0 {
		return 0
	}
	return int64(math.Round(float64(size) * 8 / l.cfg.Rate * 1e9))
}

// Send offers a packet to the link at the current virtual time. It reports
// whether the link accepted it; a dropped packet is the caller's again.
func (l *Link) Send(p *Packet) bool {
	now := l.sim.nowNs
	l.Sent++
	size := len(p.Data)
	if l.cfg.Loss != nil && l.cfg.Loss.Lose(l.rng) {
		l.DroppedLoss++
		for _, t := range l.tracers {
			if t.Drop != nil {
				t.Drop(l, p, DropLoss)
			}
		}
		return false
	}
	l.expire(now)
	if l.queuedBytes+size > l.cfg.QueueBytes {
		l.DroppedQueue++
		for _, t := range l.tracers {
			if t.Drop != nil {
				t.Drop(l, p, DropQueue)
			}
		}
		return false
	}
	done := max(l.busyUntil, now) + l.txTime(size)
	l.busyUntil = done
	l.inQueue = append(l.inQueue, queued{done, size})
	l.queuedBytes += size
	for _, t := range l.tracers {
		if t.Enqueue != nil {
			t.Enqueue(l, p, l.queuedBytes)
		}
	}
	arrive := done + int64(l.cfg.Delay)
	if l.cfg.Jitter > 0 {
		arrive += l.rng.Int64N(int64(l.cfg.Jitter))
	}
	arrive = max(arrive, l.lastArrival) // jitter never reorders
	l.lastArrival = arrive
	l.sim.deliverAt(arrive, l, p)
	return true
}

// arrive hands a packet to the far end of the link.
func (l *Link) arrive(p *Packet) {
	l.Delivered++
	l.BytesDelivered += uint64(len(p.Data))
	for _, t := range l.tracers {
		if t.Deliver != nil {
			t.Deliver(l, p)
		}
	}
	l.deliver(p)
}
