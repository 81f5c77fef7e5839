// Package linkemu is a userspace link emulator for experiments over real
// UDP sockets on loopback, without root: each path of an experiment gets a
// front socket the client sends to and a back socket that forwards to the
// server, and each direction of a path is a link with the simulator's
// model (package testbed/netsim): serialization at the link's rate, a
// propagation delay, a drop-tail queue bounded in bytes, random loss
// decided before the queue (Bernoulli or Gilbert-Elliott, from a seeded
// generator), and jitter that never reorders.
//
// The model (Link) is a pure state machine without a clock: Offer takes
// the current time and says whether a datagram is dropped, and why, or
// when it arrives at the far end. The emulator (Emulator) is a thin
// real-time driver around it: reader goroutines offer what the sockets
// receive, delivery goroutines hold each datagram until its arrival time
// and send it on.
//
// # Limits
//
// The driver never sends a datagram before the model's arrival time, but
// it sends it late by the precision of the Go runtime's timers and the
// scheduling of its goroutines: on Linux an idle runtime sleeps in whole
// milliseconds, so datagrams leave about 0.5 to 1 ms late on average
// (BenchmarkForward reports the mean and the maximum; so do the
// emulator's LinkStats), and a link's datagrams leave in bursts of up to
// a millisecond, although its rate holds on average. A loaded machine adds
// stalls of tens of milliseconds. Arrival times are taken when a reader
// goroutine returns from the socket, not from the kernel. One goroutine
// forwards each direction of each path with one system call per
// datagram, which bounds the rate a link sustains (several hundred Mbit/s
// of full-size datagrams on a 2-core machine, see BenchmarkForward).
package linkemu

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/testbed/netsim"
)

// DropReason says why a link dropped a datagram.
type DropReason uint8

// Drop reasons. The model drops for the simulator's reasons (queue and
// loss); the emulator adds DropOverflow.
const (
	DropQueue DropReason = iota // drop-tail queue full
	DropLoss                    // random loss model
	// DropOverflow: the emulator's bound on the datagrams and bytes it
	// holds for a link was reached (Config.MaxInFlightPackets and
	// MaxInFlightBytes). The model never returns it.
	DropOverflow
)

func (d DropReason) String() string {
	switch d {
	case DropQueue:
		return "queue_full"
	case DropLoss:
		return "random_loss"
	case DropOverflow:
		return "emulator_overflow"
	}
	return fmt.Sprintf("drop_reason_%d", uint8(d))
}

// Verdict is the fate of a datagram offered to a link.
type Verdict struct {
	// Accepted: the datagram arrives at Deliver. Otherwise Drop says why
	// it is lost.
	Accepted bool
	Drop     DropReason
	Deliver  time.Time
	// Queued is the bytes in the queue (waiting or in transmission) once
	// an accepted datagram joined it.
	Queued int
}

// Link is the model of one direction of a path, the same as the
// simulator's netsim.Link: a random loss model decides first (a lost
// datagram takes neither queue space nor transmission time), then a
// drop-tail queue of the link's bytes waiting or in transmission admits
// the datagram if it fits; it is transmitted after the datagrams ahead of
// it at the link's rate and arrives a propagation delay later, plus a
// uniform jitter in [0, Jitter) that never lets it overtake its
// predecessor.
//
// A Link has no clock: every call takes the current time, which must not
// go backwards. It is not safe for concurrent use.
type Link struct {
	rate       float64
	delay      time.Duration
	jitter     time.Duration
	queueLimit int
	loss       netsim.LossModel
	rng        *rand.Rand

	// busyUntil is when the transmitter finishes the last accepted
	// datagram.
	busyUntil time.Time
	// inQueue[qhead:] lists (finish time, size) of accepted datagrams not
	// yet fully transmitted, oldest first.
	inQueue     []queued
	qhead       int
	queuedBytes int
	lastArrival time.Time
}

type queued struct {
	done time.Time
	size int
}

// LinkRand returns the random source of the link named name ("path0/up")
// of an experiment with seed: the one the simulator's topology gives the
// link of that name, so that a link's loss and jitter draws follow the
// same sequence in both.
func LinkRand(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte("link/" + name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// NewLink returns the model of an experiment link on a path of round-trip
// propagation delay rtt (which sizes the default queue, see
// experiment.Link.QueueLimit), drawing its losses and jitter from rng.
func NewLink(cfg experiment.Link, rtt time.Duration, rng *rand.Rand) (*Link, error) {
	switch {
	case cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0):
		return nil, fmt.Errorf("linkemu: bad rate %v", cfg.Rate)
	case cfg.Delay < 0 || cfg.Jitter < 0 || cfg.QueueBytes < 0 || cfg.QueueBDP < 0 || rtt < 0:
		return nil, errors.New("linkemu: negative delay, jitter or queue")
	case !(cfg.Loss >= 0 && cfg.Loss <= 1):
		return nil, fmt.Errorf("linkemu: loss %v outside [0, 1]", cfg.Loss)
	case cfg.LossModel == "gilbert" && cfg.Loss >= 1:
		return nil, errors.New("linkemu: a Gilbert-Elliott loss rate must be below 100%")
	case cfg.LossModel != "" && cfg.LossModel != "bernoulli" && cfg.LossModel != "gilbert":
		return nil, fmt.Errorf("linkemu: unknown loss model %q", cfg.LossModel)
	case rng == nil:
		return nil, errors.New("linkemu: no random source")
	}
	l := &Link{rate: cfg.Rate, delay: cfg.Delay, jitter: cfg.Jitter, rng: rng, queueLimit: math.MaxInt}
	if cfg.Rate > 0 {
		l.queueLimit = int(cfg.QueueLimit(rtt))
	}
	switch {
	case cfg.Loss == 0:
	case cfg.LossModel == "gilbert":
		l.loss = netsim.Gilbert(cfg.Loss, cfg.BurstLength)
	default:
		l.loss = netsim.Bernoulli{P: cfg.Loss}
	}
	return l, nil
}

// QueueLimit is the queue bound in bytes (math.MaxInt on a link of
// unlimited rate, where nothing waits).
func (l *Link) QueueLimit() int { return l.queueLimit }

// QueuedBytes is the number of bytes accepted and not yet transmitted at
// now.
func (l *Link) QueuedBytes(now time.Time) int {
	l.expire(now)
	return l.queuedBytes
}

// expire forgets the datagrams whose transmission finished by now.
func (l *Link) expire(now time.Time) {
	q := l.inQueue
	i := l.qhead
	for i < len(q) && !q[i].done.After(now) {
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

// txTime is the serialization delay of size bytes, rounded to the
// nanosecond.
func (l *Link) txTime(size int) time.Duration {
	if l.rate == 0 {
		return 0
	}
	return time.Duration(math.Round(float64(size) * 8 / l.rate * 1e9))
}

// Offer decides the fate of a datagram of size bytes offered at now.
func (l *Link) Offer(now time.Time, size int) Verdict {
	size = max(size, 0)
	if l.loss != nil && l.loss.Lose(l.rng) {
		return Verdict{Drop: DropLoss}
	}
	l.expire(now)
	if size > l.queueLimit-l.queuedBytes {
		return Verdict{Drop: DropQueue}
	}
	start := now
	if l.busyUntil.After(now) {
		start = l.busyUntil
	}
	done := start.Add(l.txTime(size))
	l.busyUntil = done
	l.inQueue = append(l.inQueue, queued{done, size})
	l.queuedBytes += size
	arrive := done.Add(l.delay)
	if l.jitter > 0 {
		arrive = arrive.Add(time.Duration(l.rng.Int64N(int64(l.jitter))))
	}
	if arrive.Before(l.lastArrival) {
		arrive = l.lastArrival // jitter never reorders
	}
	l.lastArrival = arrive
	return Verdict{Accepted: true, Deliver: arrive, Queued: l.queuedBytes}
}
