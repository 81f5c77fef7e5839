package linkemu

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/network/linkmodel"
)

// ErrUnroutable is what a Pipe's output returns when a delivered packet
// has nowhere to go (counted as LinkStats.Unroutable, not as a write
// error).
var ErrUnroutable = errors.New("linkemu: no destination")

// Limits bound what a Pipe holds (queued in the model or propagating);
// beyond them packets are dropped and counted as DroppedOverflow. Zero
// values mean 16384 packets and 64 MiB (a packet counts its size plus 64
// bytes).
type Limits struct {
	MaxPackets int
	MaxBytes   int64
	// Charge, if set, is the bytes of a packet the link model charges
	// (its transmission time and queue space); by default the packet's
	// length. The namespace forwarder, which carries Ethernet frames,
	// charges a UDP datagram's payload, as the simulator does.
	Charge func([]byte) int
}

// packetCost is what a held packet costs beyond its bytes, for MaxBytes.
const packetCost = 64

// LinkStats are the counters of one direction of a path. Sent counts
// every packet offered to the link; once nothing is in flight, Sent =
// Delivered + DroppedLoss + DroppedQueue + DroppedOverflow + DroppedDown +
// Unroutable + WriteErrors.
type LinkStats struct {
	Sent, Delivered                            uint64
	BytesSent, BytesDelivered                  uint64
	DroppedLoss, DroppedQueue, DroppedOverflow uint64
	// DroppedDown: offered while a scheduled change had the link down.
	DroppedDown uint64
	// Unroutable: a delivered packet had nowhere to go (the loopback
	// emulator's downstream datagram before the client sent anything).
	Unroutable uint64
	// WriteErrors: the output refused a delivered packet.
	WriteErrors uint64
	// Foreign counts packets the driver ignored before offering them
	// (the loopback emulator's datagrams from strangers, the forwarder's
	// frames it cannot carry); they are not in Sent.
	Foreign uint64
	// DroppedSocket counts packets the kernel dropped before the driver
	// read them (its socket's receive buffer was full: the driver fell
	// behind); they are not in Sent either. The loopback emulator does
	// not count them.
	DroppedSocket uint64
	// InFlight is the packets held now, queued or propagating.
	InFlight uint64
	// LateMean and LateMax are how much later than the model's arrival
	// time packets were handed to the output, on average and at most:
	// the timing error of the real-time driver.
	LateMean, LateMax time.Duration
}

// Pipe drives one direction of a link in real time: Offer runs each packet
// through the link model (package linkmodel) when it is received, and Run
// hands the accepted ones to the output at their arrival times, in order.
// Offer must be called from one goroutine at a time, Run from another.
type Pipe struct {
	model *linkmodel.Link // owned by the offering goroutine
	// mu serialises the offers of OfferShared.
	mu     sync.Mutex
	origin time.Time
	held   chan *packet
	max    int64
	out    func([]byte) error
	charge func([]byte) int
	// count and bytes are the packets accepted and not yet handed on (in
	// the channel or in Run's hands), and their cost.
	count, bytes atomic.Int64

	sent, delivered, bytesSent, bytesDelivered  atomic.Uint64
	dropLoss, dropQueue, dropOverflow, dropDown atomic.Uint64
	// start is the start of the experiment in nanoseconds after origin,
	// the origin of the model's scheduled changes; startSet says it is
	// known and startSeen that the model was told.
	start                            atomic.Int64
	startSet, startSeen              atomic.Bool
	unroutable, writeErrors, foreign atomic.Uint64
	droppedSocket                    atomic.Uint64
	lateSum, lateMax                 atomic.Int64
}

// packet is a packet held by a pipe.
type packet struct {
	buf []byte // capacity pooledSize, or larger for big packets
	n   int
	at  time.Time
	// out is where the packet goes (nil: the pipe's output).
	out func([]byte) error
}

const pooledSize = 2048

var packetPool = sync.Pool{New: func() any { return &packet{buf: make([]byte, pooledSize)} }}

func getPacket(data []byte) *packet {
	p := packetPool.Get().(*packet)
	if len(data) > cap(p.buf) {
		p.buf = make([]byte, len(data))
	}
	p.n = copy(p.buf[:cap(p.buf)], data)
	return p
}

func putPacket(p *packet) {
	p.out = nil
	if cap(p.buf) == pooledSize {
		packetPool.Put(p)
	}
}

// NewPipe returns a pipe applying model and handing delivered packets to
// out, which runs on Run's goroutine and must not keep the slice.
func NewPipe(model *linkmodel.Link, lim Limits, out func([]byte) error) *Pipe {
	if lim.MaxPackets <= 0 {
		lim.MaxPackets = 16384
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = 64 << 20
	}
	return &Pipe{model: model, origin: time.Now(), held: make(chan *packet, lim.MaxPackets), max: lim.MaxBytes, out: out, charge: lim.Charge}
}

// Offer runs a packet received at now through the model and holds a copy
// for delivery if the model accepts it.
func (p *Pipe) Offer(now time.Time, data []byte) { p.offer(now, data, nil) }

// OfferShared is Offer for a pipe that several goroutines offer to (a
// bottleneck shared by paths): it takes the time of the offer and runs
// the model under a lock, so that the model sees the offers in the order
// of their times. out is where the packet goes once it arrives (nil: the
// pipe's output).
func (p *Pipe) OfferShared(data []byte, out func([]byte) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offer(time.Now(), data, out)
}

func (p *Pipe) offer(now time.Time, data []byte, out func([]byte) error) {
	p.sent.Add(1)
	p.bytesSent.Add(uint64(len(data)))
	cost := int64(len(data) + packetCost)
	// Only this goroutine adds to held, and count >= len(held), so a free
	// slot stays free.
	if p.count.Load() >= int64(cap(p.held)) || p.bytes.Load()+cost > p.max {
		p.dropOverflow.Add(1)
		return
	}
	if !p.startSeen.Load() && p.startSet.Load() {
		p.model.SetOrigin(p.start.Load())
		p.startSeen.Store(true)
	}
	n := len(data)
	if p.charge != nil {
		n = p.charge(data)
	}
	v := p.model.Offer(int64(now.Sub(p.origin)), n)
	if !v.OK {
		switch v.Drop {
		case linkmodel.DropLoss:
			p.dropLoss.Add(1)
		case linkmodel.DropDown:
			p.dropDown.Add(1)
		default:
			p.dropQueue.Add(1)
		}
		return
	}
	pk := getPacket(data)
	pk.at = p.origin.Add(time.Duration(v.Arrive))
	pk.out = out
	p.count.Add(1)
	p.bytes.Add(cost)
	p.held <- pk
}

// SetStart tells the pipe when the experiment starts: the origin of its
// model's scheduled changes (linkmodel.Step), which apply from then on.
// It may be called from any goroutine, once.
func (p *Pipe) SetStart(t time.Time) {
	p.start.Store(int64(t.Sub(p.origin)))
	p.startSet.Store(true)
}

// CountForeign counts a packet the driver ignored (LinkStats.Foreign).
func (p *Pipe) CountForeign() { p.foreign.Add(1) }

// CountSocketDrops counts n packets the kernel dropped before the driver
// read them (LinkStats.DroppedSocket).
func (p *Pipe) CountSocketDrops(n uint64) { p.droppedSocket.Add(n) }

// Run hands the held packets to the output at their arrival times until
// done is closed; then it drops what it holds. It never hands a packet on
// early; it waits on a kernel timer for the last stretch before an
// arrival so that packets leave within tens of microseconds of their
// time, parked, so that the goroutines of the same process (the
// experiment's ends, the other pipes) run while it waits.
func (p *Pipe) Run(done <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	sl := newSleeper()
	defer sl.close()
	defer p.drop()
	for {
		var pk *packet
		select {
		case pk = <-p.held:
		case <-done:
			return
		}
		if !waitUntil(pk.at, timer, sl, done) {
			putPacket(pk)
			return
		}
		late := int64(time.Since(pk.at))
		p.lateSum.Add(late)
		if late > p.lateMax.Load() {
			p.lateMax.Store(late) // only this goroutine stores
		}
		p.bytes.Add(-int64(pk.n + packetCost))
		p.count.Add(-1)
		out := p.out
		if pk.out != nil {
			out = pk.out
		}
		switch err := out(pk.buf[:pk.n]); {
		case err == nil:
			p.delivered.Add(1)
			p.bytesDelivered.Add(uint64(pk.n))
		case errors.Is(err, ErrUnroutable):
			p.unroutable.Add(1)
		default:
			p.writeErrors.Add(1)
		}
		putPacket(pk)
	}
}

// drop frees the packets still held once Run stopped.
func (p *Pipe) drop() {
	for {
		select {
		case pk := <-p.held:
			putPacket(pk)
		default:
			return
		}
	}
}

// precision is how long before an arrival Run stops waiting on a runtime
// timer (whose wake-ups on an idle runtime are about a millisecond late)
// and waits on the sleeper's kernel timer instead.
const precision = 2 * time.Millisecond

// waitUntil returns at or after at (true), or when done is closed (false).
func waitUntil(at time.Time, timer *time.Timer, sl *sleeper, done <-chan struct{}) bool {
	for {
		d := time.Until(at)
		if d <= 0 {
			return true
		}
		if d <= precision {
			sl.sleep(d)
			continue
		}
		timer.Reset(d - precision)
		select {
		case <-timer.C:
		case <-done:
			return false
		}
	}
}

// Stats returns the pipe's counters.
func (p *Pipe) Stats() LinkStats {
	s := LinkStats{
		Sent: p.sent.Load(), Delivered: p.delivered.Load(),
		BytesSent: p.bytesSent.Load(), BytesDelivered: p.bytesDelivered.Load(),
		DroppedLoss: p.dropLoss.Load(), DroppedQueue: p.dropQueue.Load(), DroppedOverflow: p.dropOverflow.Load(),
		DroppedDown: p.dropDown.Load(),
		Unroutable:  p.unroutable.Load(), WriteErrors: p.writeErrors.Load(), Foreign: p.foreign.Load(),
		DroppedSocket: p.droppedSocket.Load(),
		InFlight:      uint64(p.count.Load()),
		LateMax:       time.Duration(p.lateMax.Load()),
	}
	if n := s.Delivered + s.Unroutable + s.WriteErrors; n > 0 {
		s.LateMean = time.Duration(p.lateSum.Load() / int64(n))
	}
	return s
}
