package netsim

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/mpq/mpq/network/linkmodel"
)

// The link model is package linkmodel's, shared with the real-time
// emulators; these names keep the simulator's API short.
type (
	// LinkConfig describes one direction of a link (linkmodel.Config).
	LinkConfig = linkmodel.Config
	// LossModel decides which packets a link loses.
	LossModel = linkmodel.LossModel
	// Bernoulli loses each packet independently with probability P.
	Bernoulli = linkmodel.Bernoulli
	// GilbertElliott is the two-state Markov loss model.
	GilbertElliott = linkmodel.GilbertElliott
	// DropReason says why a link dropped a packet.
	DropReason = linkmodel.DropReason
)

// Drop reasons.
const (
	DropQueue = linkmodel.DropQueue // drop-tail queue full
	DropLoss  = linkmodel.DropLoss  // random loss model
	DropDown  = linkmodel.DropDown  // link down (a scheduled change)
)

// Gilbert is linkmodel.Gilbert: the Gilbert model of a mean loss rate and
// burst length.
func Gilbert(rate, burst float64) *GilbertElliott { return linkmodel.Gilbert(rate, burst) }

// DefaultQueue is linkmodel.DefaultQueue: one bandwidth-delay product of
// the round trip, and at least 16 full-size packets.
func DefaultQueue(rate float64, delay time.Duration) int { return linkmodel.DefaultQueue(rate, delay) }

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

// Link is a unidirectional link of the simulated network: the link model
// (package linkmodel) driven by the virtual clock.
type Link struct {
	Name string
	// model is held by value: one indirection less on the hot path.
	model linkmodel.Link
	// sim is the part that sends on the link (and holds its queue), to
	// the part its packets arrive in (see Sim).
	sim, to *Sim
	deliver func(*Packet)
	tracers []*Tracer
	// head is the link's packet event in the simulator's heap, parked
	// the ones behind it, lastAt the time of the last of them (see
	// Sim.deliverAt).
	head   *event
	parked eventFIFO
	lastAt int64

	// Counters.
	Sent, Delivered, DroppedQueue, DroppedLoss uint64
	// DroppedDown counts the packets offered while a scheduled change
	// had the link down.
	DroppedDown    uint64
	BytesDelivered uint64
}

// NewLink creates a link whose packets are handed to deliver on arrival.
// Its losses and jitter come from linkmodel.Rand of the simulation's seed
// and the link's name.
func NewLink(sim *Sim, name string, cfg LinkConfig, deliver func(*Packet)) (*Link, error) {
	m, err := linkmodel.New(cfg, linkmodel.Rand(sim.seed, name))
	if err != nil {
		return nil, fmt.Errorf("netsim: link %s: %w", name, err)
	}
	return &Link{Name: name, model: *m, sim: sim, to: sim, deliver: deliver}, nil
}

// Config returns the link's configuration (with the default queue filled in).
func (l *Link) Config() LinkConfig { return l.model.Config() }

// SetConfig changes the link's rate, delay, loss, queue or jitter from now
// on; packets already accepted keep their schedule. It rejects what
// NewLink rejects and then leaves the link unchanged.
//
// A link between parts running in parallel (see Sim) keeps a delay of at
// least the window running: a shorter one is rejected.
func (l *Link) SetConfig(cfg LinkConfig) error {
	if g := l.sim.g; l.to != l.sim && g.running && int64(cfg.Delay) < g.window {
		return fmt.Errorf("netsim: link %s: delay %v below the %v the parallel parts rely on", l.Name, cfg.Delay, time.Duration(g.window))
	}
	if err := l.model.SetConfig(cfg); err != nil {
		return fmt.Errorf("netsim: link %s: %w", l.Name, err)
	}
	return nil
}

// Schedule gives the link scheduled changes (linkmodel.Step) whose times
// count from start, the start of the experiment.
func (l *Link) Schedule(steps []linkmodel.Step, start time.Time) error {
	if err := l.model.SetSchedule(steps); err != nil {
		return fmt.Errorf("netsim: link %s: %w", l.Name, err)
	}
	l.model.SetOrigin(sinceEpoch(start))
	return nil
}

// AddTracer registers packet-level hooks. The hooks run on the event loop
// and may keep the *Packet only until they return: the network recycles
// packets and their data.
//
// A simulation with tracers runs its parts one after the other.
func (l *Link) AddTracer(t *Tracer) {
	l.tracers = append(l.tracers, t)
	l.sim.g.serial = true
}

// QueuedBytes is the number of bytes accepted and not yet transmitted.
func (l *Link) QueuedBytes() int { return l.model.QueuedBytes(l.sim.nowNs) }

// Send offers a packet to the link at the current virtual time. It reports
// whether the link accepted it; a dropped packet is the caller's again.
func (l *Link) Send(p *Packet) bool {
	l.Sent++
	v := l.model.Offer(l.sim.nowNs, len(p.Data))
	if !v.OK {
		switch v.Drop {
		case DropLoss:
			l.DroppedLoss++
		case DropDown:
			l.DroppedDown++
		default:
			l.DroppedQueue++
		}
		for _, t := range l.tracers {
			if t.Drop != nil {
				t.Drop(l, p, v.Drop)
			}
		}
		return false
	}
	for _, t := range l.tracers {
		if t.Enqueue != nil {
			t.Enqueue(l, p, v.Queued)
		}
	}
	l.sim.deliverAt(v.Arrive, l, p)
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
