package core

import (
	"net/netip"

	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/scheduler"
)

// left is how many payload bytes the packet being built may still take,
// keeping room for its tag and the tags of the packets before it.
func (d *dgram) left() int { return d.limit - len(d.b) - aeadTag*(d.n+1) }

// queuePathResponse answers a PATH_CHALLENGE on the network path it came
// from (RFC 9000 Section 8.2.2): the addresses it arrived on (local,
// remote), with a connection ID of its path ID p
// (draft-ietf-quic-multipath-21 Section 3.1). dcid is the challenge's
// packet's destination connection ID: if it came from other addresses than
// p's with one the peer had not used at p's (a peer probing a new address,
// not a NAT rebinding), the answer takes the peer's connection ID that p
// would move to (spareDCID), not the one p uses at its addresses: an
// endpoint "MUST NOT reuse a connection ID when sending to more than one
// destination address" (RFC 9000 Section 9.5). With none to spare it takes
// p's, as after a NAT rebinding.
func (c *Conn) queuePathResponse(p *path, local, remote netip.AddrPort, data [8]byte, dcid []byte) {
	if len(c.pathResponses) >= 8 {
		return
	}
	r := pathResponse{pathID: p.id, local: local, remote: remote, data: data}
	if !r.onTuple(p) && c.newPeerDCID(p, dcid) {
		if i, ok := c.ids.spareDCID(p.id); ok {
			r.dcid = c.ids.get(p.id).remote[i].cid
		}
	}
	c.pathResponses = append(c.pathResponses, r)
}

type pathResponse struct {
	pathID        uint64
	local, remote netip.AddrPort
	data          [8]byte
	// dcid, if not nil, is the destination connection ID to send it
	// with instead of the path's.
	dcid []byte
}

// onTuple reports whether the response goes to path p's own addresses.
func (r *pathResponse) onTuple(p *path) bool { return r.local == p.local && r.remote == p.remote }

// appendPathResponses writes the PATH_RESPONSEs due on path p to the
// datagram's destination: p's addresses, or those bp.tuple names. They
// are not retransmitted (RFC 9000 Section 8.2.2).
func (c *Conn) appendPathResponses(d *dgram, pk *pktBuild, p *path, room int) int {
	out := c.pathResponses[:0]
	for _, r := range c.pathResponses {
		here := r.onTuple(p)
		if t := d.bp.tuple; t != nil {
			here = r.local == t.local && r.remote == t.remote
		}
		if r.pathID == p.id && here {
			if left := c.appendFrame(d, pk, &wire.PathResponseFrame{Data: r.data}, room); left >= 0 {
				room = left
				pk.pathBound = true
				continue
			}
		}
		out = append(out, r)
	}
	c.pathResponses = out
	return room
}

// putControl writes a retransmittable control frame with its record if it
// fits in *room, which it reduces.
func (c *Conn) putControl(d *dgram, pk *pktBuild, f wire.Frame, ref recovery.FrameRef, room *int) bool {
	left := c.appendFrame(d, pk, f, *room)
	if left < 0 {
		return false
	}
	*room = left
	pk.refs = append(pk.refs, ref)
	return true
}

// appendPathControl writes the pending multipath control frames; ok is
// false when the packet is full.
func (c *Conn) appendPathControl(d *dgram, pk *pktBuild, room int) (int, bool) {
	q := &c.ctrl
	put := func(f wire.Frame, ref recovery.FrameRef) bool { return c.putControl(d, pk, f, ref, &room) }
	for len(q.pathAbandon.list) > 0 {
		id := q.pathAbandon.list[0]
		code := uint64(0)
		if p := c.pathByID(id); p != nil {
			code = p.abandonCode
		}
		if !put(&wire.PathAbandonFrame{PathID: id, ErrorCode: code}, recovery.FrameRef{Kind: refPathAbandon, ID: id}) {
			return room, false
		}
		q.pathAbandon.remove(id)
	}
	for len(q.pathStatus.list) > 0 {
		id := q.pathStatus.list[0]
		p := c.openPath(id)
		if p == nil {
			q.pathStatus.remove(id)
			continue
		}
		f := &wire.PathStatusFrame{Backup: p.status == scheduler.StatusBackup, PathID: id, StatusSeq: p.statusSeq}
		if !put(f, recovery.FrameRef{Kind: refPathStatus, ID: id, Offset: p.statusSeq}) {
			return room, false
		}
		q.pathStatus.remove(id)
	}
	if q.maxPathID {
		if !put(&wire.MaxPathIDFrame{MaxPathID: c.mp.localMax}, recovery.FrameRef{Kind: refMaxPathID, Offset: c.mp.localMax}) {
			return room, false
		}
		c.mp.localMaxSent = c.mp.localMax
		q.maxPathID = false
	}
	if q.pathsBlocked {
		if !put(&wire.PathsBlockedFrame{MaxPathID: c.mp.peerMax}, recovery.FrameRef{Kind: refPathsBlocked, Offset: c.mp.peerMax}) {
			return room, false
		}
		q.pathsBlocked = false
	}
	for len(q.pathCIDsBlocked.list) > 0 {
		id := q.pathCIDsBlocked.list[0]
		next := uint64(0)
		if s := c.ids.sets[id]; s != nil {
			for _, r := range s.remote {
				next = max(next, r.seq+1)
			}
		}
		if !put(&wire.PathCIDsBlockedFrame{PathID: id, NextSeq: next}, recovery.FrameRef{Kind: refPathCIDsBlocked, ID: id}) {
			return room, false
		}
		q.pathCIDsBlocked.remove(id)
	}
	return room, true
}

// appendControl writes pending control frames from the current state
// (see controlQueue).
func (c *Conn) appendControl(d *dgram, pk *pktBuild, room int) int {
	q := &c.ctrl
	if !q.pending() {
		return room
	}
	put := func(f wire.Frame, ref recovery.FrameRef) bool { return c.putControl(d, pk, f, ref, &room) }
	if q.handshakeDone && put(&wire.HandshakeDoneFrame{}, recovery.FrameRef{Kind: refHandshakeDone}) {
		q.handshakeDone = false
	}
	for len(q.resetStream.list) > 0 {
		id := q.resetStream.list[0]
		s := c.streams.m[id]
		if s == nil || s.send == nil {
			q.resetStream.remove(id)
			continue
		}
		code, final, ok := s.send.PendingReset()
		if !ok {
			q.resetStream.remove(id)
			continue
		}
		if !put(&wire.ResetStreamFrame{StreamID: id, ErrorCode: code, FinalSize: final}, recovery.FrameRef{Kind: refResetStream, ID: id}) {
			return room
		}
		s.send.OnResetSent()
		q.resetStream.remove(id)
	}
	for len(q.stopSending.list) > 0 {
		id := q.stopSending.list[0]
		s := c.streams.m[id]
		code, ok := uint64(0), false
		if s != nil && s.recv != nil {
			code, ok = s.recv.StopSendingCode()
		}
		if !ok {
			q.stopSending.remove(id)
			continue
		}
		if !put(&wire.StopSendingFrame{StreamID: id, ErrorCode: code}, recovery.FrameRef{Kind: refStopSending, ID: id}) {
			return room
		}
		q.stopSending.remove(id)
	}
	if q.maxData {
		lim := c.streams.connRecv.Limit()
		if !put(&wire.MaxDataFrame{Max: lim}, recovery.FrameRef{Kind: refMaxData, Offset: lim}) {
			return room
		}
		q.maxData = false
	}
	for len(q.maxStreamData.list) > 0 {
		id := q.maxStreamData.list[0]
		s := c.streams.m[id]
		if s == nil || s.recv == nil || s.recv.FinalSizeKnown() {
			q.maxStreamData.remove(id)
			continue
		}
		lim := s.recv.Limit()
		if !put(&wire.MaxStreamDataFrame{StreamID: id, Max: lim}, recovery.FrameRef{Kind: refMaxStreamData, ID: id, Offset: lim}) {
			return room
		}
		q.maxStreamData.remove(id)
	}
	for d := range 2 {
		if q.maxStreams[d] {
			lim := c.streams.peerLimit[d]
			if !put(&wire.MaxStreamsFrame{Bidi: d == 0, Max: lim}, recovery.FrameRef{Kind: refMaxStreams, ID: uint64(d), Offset: lim}) {
				return room
			}
			c.streams.peerLimitSent[d] = lim
			q.maxStreams[d] = false
		}
		if q.streamsBlocked[d] {
			lim := c.streams.localLimit[d]
			if !put(&wire.StreamsBlockedFrame{Bidi: d == 0, Limit: lim}, recovery.FrameRef{Kind: refStreamsBlocked, ID: uint64(d), Offset: lim}) {
				return room
			}
			q.streamsBlocked[d] = false
		}
	}
	if q.dataBlocked {
		if lim, ok := c.streams.connSend.BlockedAt(); ok {
			if !put(&wire.DataBlockedFrame{Limit: lim}, recovery.FrameRef{Kind: refDataBlocked, Offset: lim}) {
				return room
			}
		}
		q.dataBlocked = false
	}
	for len(q.streamDataBlocked.list) > 0 {
		id := q.streamDataBlocked.list[0]
		s := c.streams.m[id]
		if s != nil && s.send != nil {
			if lim, ok := s.send.BlockedAt(); ok {
				if !put(&wire.StreamDataBlockedFrame{StreamID: id, Limit: lim}, recovery.FrameRef{Kind: refStreamDataBlocked, ID: id, Offset: lim}) {
					return room
				}
			}
		}
		q.streamDataBlocked.remove(id)
	}
	for len(q.newConnIDs.list) > 0 {
		key := q.newConnIDs.list[0]
		l := c.ids.localByKey(key)
		pathID, _ := splitCIDKey(key)
		if l == nil || l.retired || pathID != 0 && c.mp.retired(pathID) {
			q.newConnIDs.remove(key)
			continue
		}
		// With multipath, every path's IDs (path 0's too) go in
		// PATH_NEW_CONNECTION_ID, as deployed peers expect.
		var f wire.Frame = &wire.NewConnectionIDFrame{Seq: l.seq, ConnID: l.cid, ResetToken: l.token}
		if c.mp.enabled {
			f = &wire.PathNewConnectionIDFrame{PathID: pathID, Seq: l.seq, ConnID: l.cid, ResetToken: l.token}
		}
		if !put(f, recovery.FrameRef{Kind: refNewConnID, ID: key}) {
			return room
		}
		q.newConnIDs.remove(key)
	}
	if q.retire {
		for len(c.ids.retireQueue) > 0 {
			key := c.ids.retireQueue[0]
			pathID, seq := splitCIDKey(key)
			var f wire.Frame = &wire.RetireConnectionIDFrame{Seq: seq}
			if c.mp.enabled {
				f = &wire.PathRetireConnectionIDFrame{PathID: pathID, Seq: seq}
			}
			if !put(f, recovery.FrameRef{Kind: refRetireConnID, ID: key}) {
				return room
			}
			c.ids.retireQueue = c.ids.retireQueue[1:]
		}
		q.retire = false
	}
	room, ok := c.appendPathControl(d, pk, room)
	if !ok {
		return room
	}
	if q.ping && put(&wire.PingFrame{}, recovery.FrameRef{Kind: refPing}) {
		q.ping = false
	}
	return room
}
