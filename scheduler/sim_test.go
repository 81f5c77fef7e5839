package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// simConn drives a path and a stream scheduler the way mpquic/core's
// pollScheduled does, on fake paths and a fake clock: at a send
// opportunity it asks the stream scheduler for a stream, derives the class,
// asks the path scheduler, "sends" one full packet on every returned path
// and asks again, until the path scheduler returns nothing or no stream has
// data. Packets are acknowledged one smoothed RTT after they left, unless
// declared lost first. The test updates bytes in flight, nothing else does.
type simConn struct {
	t       *testing.T
	t0      time.Time
	paths   []PathInfo
	streams []*simStream
	ps      PathScheduler
	ss      StreamScheduler
	// inflight are the packets not yet acknowledged or lost, in sending
	// order.
	inflight []simPacket
	nextPN   map[uint64]uint64
	readySeq uint64
	log      []simSend
}

type simStream struct {
	id       uint64
	priority bool
	packets  int // full packets of data pending
	retx     int // lost packets waiting to be sent again
	readySeq uint64
}

type simPacket struct {
	path, pn, stream uint64
	size             int
	ackAt            time.Time
	retx             bool
}

// simSend is one packet decision in the log: when (offset from t0), which
// stream, on which paths.
type simSend struct {
	At     time.Duration
	Stream uint64
	Paths  string
}

func (s simSend) String() string { return fmt.Sprintf("%v s%d %s", s.At, s.Stream, s.Paths) }

const (
	simMPS      = 1350
	simOverhead = 50
	simPayload  = simMPS - simOverhead
)

func newSim(t *testing.T, ps PathScheduler, ss StreamScheduler, paths ...PathInfo) *simConn {
	for i := range paths {
		paths[i].PacketOverhead = simOverhead
	}
	return &simConn{t: t, t0: time.Unix(1000, 0), paths: paths, ps: ps, ss: ss, nextPN: map[uint64]uint64{}}
}

func (c *simConn) at(d time.Duration) time.Time { return c.t0.Add(d) }

func (c *simConn) path(id uint64) *PathInfo {
	for i := range c.paths {
		if c.paths[i].ID == id {
			return &c.paths[i]
		}
	}
	c.t.Fatalf("no path %d", id)
	return nil
}

// write makes packets more full packets of data ready on stream id.
func (c *simConn) write(id uint64, packets int, priority bool) {
	for _, s := range c.streams {
		if s.id == id {
			if s.packets == 0 && s.retx == 0 {
				s.readySeq = c.readySeq
				c.readySeq++
			}
			s.packets += packets
			return
		}
	}
	c.streams = append(c.streams, &simStream{id: id, priority: priority, packets: packets, readySeq: c.readySeq})
	c.readySeq++
}

// poll is a send opportunity at offset d.
func (c *simConn) poll(d time.Duration) {
	now := c.at(d)
	for range 1000 {
		var infos []StreamInfo
		var ready []*simStream
		var w Work
		for _, s := range c.streams {
			if s.packets == 0 && s.retx == 0 {
				continue
			}
			infos = append(infos, StreamInfo{ID: s.id, Priority: s.priority, HasRetransmission: s.retx > 0,
				ReadySeq: s.readySeq, Pending: uint64(s.packets * simPayload)})
			ready = append(ready, s)
			w.Waiting.Retransmission = w.Waiting.Retransmission || s.retx > 0
			if s.priority {
				w.Waiting.PriorityBytes += uint64(s.packets * simPayload)
			} else {
				w.Waiting.BackgroundBytes += uint64(s.packets * simPayload)
			}
		}
		if len(infos) == 0 {
			return
		}
		st := ready[c.ss.Next(now, infos)]
		w.StreamID, w.Priority, w.Size = st.id, st.priority, simMPS
		switch {
		case st.retx > 0:
			w.Class = ClassRetransmission
		case st.priority:
			w.Class = ClassPriority
		default:
			w.Class = ClassBackground
		}
		sel := c.ps.Select(now, slices.Clone(c.paths), w, nil)
		if len(sel) == 0 {
			return
		}
		for _, id := range sel {
			p := c.path(id)
			pn := c.nextPN[id]
			c.nextPN[id]++
			if o, ok := c.ps.(PacketObserver); ok {
				before := *p
				o.OnPacketSent(now, &before, pn, simMPS, w.Class)
			}
			p.BytesInFlight += simMPS
			p.PacketsSent++
			c.inflight = append(c.inflight, simPacket{path: id, pn: pn, stream: st.id, size: simMPS,
				ackAt: now.Add(p.SRTT), retx: w.Class == ClassRetransmission})
		}
		if w.Class == ClassRetransmission {
			st.retx--
		} else {
			st.packets--
		}
		c.log = append(c.log, simSend{At: d, Stream: st.id, Paths: fmt.Sprint(sel)})
	}
	c.t.Fatal("send loop did not end")
}

// ackUntil delivers, in time order, the acknowledgements due up to offset
// d; every distinct ack time is a send opportunity.
func (c *simConn) ackUntil(d time.Duration) {
	for {
		next := -1
		for i, pk := range c.inflight {
			if !pk.ackAt.After(c.at(d)) && (next < 0 || pk.ackAt.Before(c.inflight[next].ackAt)) {
				next = i
			}
		}
		if next < 0 {
			return
		}
		at := c.inflight[next].ackAt
		c.inflight = slices.DeleteFunc(c.inflight, func(pk simPacket) bool {
			if !pk.ackAt.Equal(at) {
				return false
			}
			c.path(pk.path).BytesInFlight -= uint64(pk.size)
			if o, ok := c.ps.(PacketObserver); ok {
				o.OnPacketAcked(at, pk.path, pk.pn)
			}
			return true
		})
		c.poll(at.Sub(c.t0))
	}
}

// lose declares the n oldest packets of stream in flight on path lost at
// offset d (their data waits for retransmission) and sets the path's window
// to cwnd, as a congestion controller reacting to the loss would.
func (c *simConn) lose(d time.Duration, path, stream uint64, n int, cwnd uint64) {
	now := c.at(d)
	c.inflight = slices.DeleteFunc(c.inflight, func(pk simPacket) bool {
		if pk.path != path || pk.stream != stream || n == 0 {
			return false
		}
		n--
		c.path(pk.path).BytesInFlight -= uint64(pk.size)
		c.path(pk.path).PacketsLost++
		if o, ok := c.ps.(PacketObserver); ok {
			o.OnPacketLost(now, pk.path, pk.pn)
		}
		for _, s := range c.streams {
			if s.id == pk.stream {
				s.retx++
			}
		}
		return true
	})
	c.path(path).CWND = cwnd
}

func (c *simConn) missed(path uint64) uint64 {
	return c.ps.(Counters).PathCounters(path)[CounterReservationsMissed]
}

func logString(l []simSend) string { return fmt.Sprint(l) }
