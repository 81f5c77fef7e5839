package core

import (
	"time"

	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/internal/streams"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
	"github.com/mpq/mpq/scheduler"
)

// Repair: the experimental REPAIR extension (mpquic/internal/wire/repair.go),
// stream-level XOR parity. Config.Repair offers it (transport parameter
// wire.TPRepair); it is negotiated when both ends offer it. The receiving
// side (handleRepairFrame) rebuilds the bytes a parity can
// (streams.RecvStream.AddRepair). The sending side carries out the
// decisions of a path scheduler that implements scheduler.Repairer: once
// every byte the application wrote on a stream was sent, the core asks it
// about the burst sent since the last time, and sends the parity of those
// bytes on the path it names, at once.

// Reasons a parity is not sent (RepairStats.Dropped).
const (
	// RepairTooLong: the burst is longer than streams.MaxRepairHistory.
	RepairTooLong = "too_long"
	// RepairReleased: some of its bytes were acknowledged and released
	// before the parity could be computed.
	RepairReleased = "released"
	// RepairPathGone: the path the policy named is not active.
	RepairPathGone = "path_not_active"
	// RepairNotBuilt: no packet could be built on that path.
	RepairNotBuilt = "not_built"
	// RepairTooManyChunks: a second parity for a burst of more than
	// wire.MaxRepairQChunks chunks.
	RepairTooManyChunks = "too_many_chunks"
)

// RepairStats counts the parities of a connection.
type RepairStats struct {
	// Asked: bursts the path scheduler was asked about; Sent: parities
	// it asked for and the core sent (completely), of which SecondSent
	// second (REPAIR_Q) parities; Frames and Bytes: the REPAIR and
	// REPAIR_Q frames sent and their parity bytes.
	Asked, Sent, SecondSent, Frames, Bytes uint64
	// Dropped counts the parities asked for and not sent, by reason.
	Dropped map[string]uint64
	// RebuiltBytes and RebuiltRanges count the receiving side: the
	// stream bytes rebuilt from the peer's parities (missing bytes
	// delivered without a retransmission) and the parity ranges (one per
	// burst the peer protected) from which at least one byte was
	// rebuilt (streams.RebuildCounts).
	RebuiltBytes, RebuiltRanges uint64
	// Negotiated reports that both ends offered the extension,
	// SecondNegotiated that both offered REPAIR_Q frames too.
	Negotiated, SecondNegotiated bool
}

// repairJob is a parity waiting to be sent on path.
type repairJob struct {
	path   uint64
	frame  wire.RepairFrame // Parity holds every column
	column uint64           // the first column not sent yet
}

// repairState is a connection's REPAIR sending state.
type repairState struct {
	policy scheduler.Repairer
	// second is policy when it gives second parities.
	second scheduler.SecondRepairer
	// ask are the bursts just sent whole.
	ask   []scheduler.RepairRequest
	queue []repairJob
	stats RepairStats
	// rebuilt counts what the peer's parities rebuilt on our streams.
	rebuilt streams.RebuildCounts
}

// repairBurst is a stream's burst being sent: the bytes sent once since
// its last burst.
type repairBurst struct {
	open  bool
	from  uint64
	chunk uint64
	paths []uint64
}

// repairNegotiated reports whether both ends offered REPAIR frames.
func (c *Conn) repairNegotiated() bool { return c.cfg.Repair && c.peerParams.Repair }

// repairQNegotiated reports whether both ends offered REPAIR_Q frames
// beside REPAIR frames.
func (c *Conn) repairQNegotiated() bool { return c.repairNegotiated() && c.peerParams.RepairQ }

// RepairStats returns the connection's parity counts.
func (c *Conn) RepairStats() RepairStats {
	s := c.repair.stats
	s.RebuiltBytes, s.RebuiltRanges = c.repair.rebuilt.Bytes, c.repair.rebuilt.Ranges
	s.Negotiated, s.SecondNegotiated = c.repairNegotiated(), c.repairQNegotiated()
	if s.Dropped != nil {
		m := make(map[string]uint64, len(s.Dropped))
		for k, v := range s.Dropped {
			m[k] = v
		}
		s.Dropped = m
	}
	return s
}

func (c *Conn) repairDrop(reason string) {
	if c.repair.stats.Dropped == nil {
		c.repair.stats.Dropped = map[string]uint64{}
	}
	c.repair.stats.Dropped[reason]++
}

// noteStreamSent records, for the REPAIR policy, a STREAM frame of s just
// put in a packet on path p.
func (c *Conn) noteStreamSent(s *stream, p *path, ch streams.Chunk) {
	if c.repair.policy == nil || !c.repairNegotiated() || ch.NewBytes == 0 {
		return
	}
	b := &s.burst
	if !b.open {
		end := ch.Offset + uint64(len(ch.Data))
		*b = repairBurst{open: true, from: end - uint64(ch.NewBytes), paths: b.paths[:0]}
	}
	b.chunk = max(b.chunk, uint64(len(ch.Data)))
	if p != nil && !containsID(b.paths, p.id) {
		b.paths = append(b.paths, p.id)
	}
	if from, to := s.send.Unsent(); from == to {
		b.open = false
		c.repair.ask = append(c.repair.ask, scheduler.RepairRequest{StreamID: s.id, Priority: s.priority,
			Offset: b.from, End: from, ChunkLen: b.chunk, DataPaths: append([]uint64(nil), b.paths...)})
	}
}

func containsID(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// askRepairs asks the policy about the streams whose FIN just left and
// queues the parities it asks for.
func (c *Conn) askRepairs(now time.Time) {
	if len(c.repair.ask) == 0 {
		return
	}
	ask := c.repair.ask
	c.repair.ask = c.repair.ask[:0]
	c.pathInfos(c.paths, now)
	for _, req := range ask {
		s := c.streams.m[req.StreamID]
		if s == nil || s.send == nil || req.End <= req.Offset || req.ChunkLen == 0 {
			continue
		}
		c.repair.stats.Asked++
		pid, ok := c.repair.policy.Repair(now, c.pathBuf, req)
		if !ok {
			continue
		}
		n := req.End - req.Offset
		if n > streams.MaxRepairHistory {
			c.repairDrop(RepairTooLong)
			continue
		}
		if !c.queueParity(s, req, pid, false) || c.repair.second == nil || !c.repairQNegotiated() {
			continue
		}
		pid, ok = c.repair.second.SecondRepair(now, c.pathBuf, req)
		if !ok {
			continue
		}
		if chunk := min(req.ChunkLen, n); (n+chunk-1)/chunk > wire.MaxRepairQChunks {
			c.repairDrop(RepairTooManyChunks)
			continue
		}
		c.queueParity(s, req, pid, true)
	}
}

// queueParity computes the parity of req's burst of s (q: its REPAIR_Q
// parity) and queues it for path pid; it reports whether it could.
func (c *Conn) queueParity(s *stream, req scheduler.RepairRequest, pid uint64, q bool) bool {
	parity := make([]byte, min(req.ChunkLen, req.End-req.Offset))
	if !s.send.Parity(req.Offset, req.End, parity, q) {
		c.repairDrop(RepairReleased)
		return false
	}
	fin := s.send.Closed() && s.send.Written() == req.End
	c.repair.queue = append(c.repair.queue, repairJob{path: pid, frame: wire.RepairFrame{
		StreamID: req.StreamID, Offset: req.Offset, ChunkLen: uint64(len(parity)), End: req.End, Fin: fin, Q: q, Parity: parity}})
	return true
}

// pollRepair builds a datagram with the parity first in the queue on its
// path.
func (c *Conn) pollRepair(now time.Time, buf []byte) (Datagram, bool) {
	c.askRepairs(now)
	for len(c.repair.queue) > 0 {
		j := &c.repair.queue[0]
		p := c.openPath(j.path)
		if p == nil || p.state != pathActive {
			c.repairDrop(RepairPathGone)
			c.repair.queue = c.repair.queue[1:]
			continue
		}
		col := j.column
		d, ok := c.buildOn(now, p, buf, &buildParams{mode: modeNormal, class: scheduler.ClassPriority, noStreams: true, repair: true})
		if ok && j.column > col {
			return d, true
		}
		c.repairDrop(RepairNotBuilt)
		c.repair.queue = c.repair.queue[1:]
		if ok {
			return d, true
		}
	}
	return Datagram{}, false
}

// appendRepairs writes as much of the first queued parity as fits, if it
// is for path p, in REPAIR frames.
func (c *Conn) appendRepairs(d *dgram, pk *pktBuild, p *path, room int) int {
	if len(c.repair.queue) == 0 || c.repair.queue[0].path != p.id {
		return room
	}
	j := &c.repair.queue[0]
	f := j.frame
	left := uint64(len(f.Parity)) - j.column
	n := room - wire.RepairHeaderLen(f.StreamID, f.Offset, f.ChunkLen, f.End, j.column, int(min(left, uint64(room))))
	if n <= 0 {
		return room
	}
	n = int(min(uint64(n), left))
	f.Column, f.Parity = j.column, f.Parity[j.column:j.column+uint64(n)]
	if r := c.appendFrame(d, pk, &f, room); r >= 0 {
		room = r
		pk.refs = append(pk.refs, recovery.FrameRef{Kind: refRepair, ID: f.StreamID})
		j.column += uint64(n)
		c.repair.stats.Frames++
		c.repair.stats.Bytes += uint64(n)
		if j.column == uint64(len(j.frame.Parity)) {
			c.repair.stats.Sent++
			if f.Q {
				c.repair.stats.SecondSent++
			}
			c.repair.queue = c.repair.queue[1:]
		}
	}
	return room
}

// handleRepairFrame processes a REPAIR frame. A frame the endpoint did
// not offer is an unknown frame type, FRAME_ENCODING_ERROR (RFC 9000
// Section 12.4, checked in handleFrame); one the peer did not offer, a
// PROTOCOL_VIOLATION.
func (c *Conn) handleRepairFrame(f *wire.RepairFrame) error {
	if !c.peerParams.Repair || f.Q && !c.peerParams.RepairQ {
		return qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "REPAIR frame without the peer's repair transport parameter")
	}
	s, err := c.getStream(f.StreamID, f.Type(), false, true)
	if err != nil || s == nil {
		return err
	}
	n, err := s.recv.AddRepair(f.Offset, f.End, f.ChunkLen, f.Fin, f.Q, f.Column, f.Parity)
	if err != nil {
		return withFrameType(err, f.Type())
	}
	if err := c.streams.connRecv.OnReceived(n); err != nil {
		return withFrameType(err, f.Type())
	}
	c.settleAbortedFlow(s)
	c.notifyReadable(s)
	c.maybeForget(s)
	return nil
}
