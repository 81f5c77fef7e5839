package core

import (
	"sort"
	"time"

	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qlog"
	"github.com/mpq/mpq/scheduler"
)

// Copies: a path scheduler that returns several paths from Select asks for
// the packet on the first and for a copy of its 1-RTT packet on each of
// the others (a redundancy decision). A copy carries the same frames,
// sealed in its own path's packet number space with its own connection ID
// and packet number encoding; loss recovery tracks each copy on its path,
// and whichever copy is acknowledged first acknowledges the data. The
// original is built small enough that every copy fits its own path's
// datagram limit and the size the path scheduler approved (copyRoom), so
// a copy is never lost to a longer packet number encoding. A copy that
// cannot be sent at all is counted, with its reason (CopiesDropped).

// Reasons a copy is not sent (Conn.CopiesDropped).
const (
	// CopyUnknownPath: the scheduler named a path that is not open.
	CopyUnknownPath = "unknown_path"
	// CopyPathNotActive: the path is being validated or closed.
	CopyPathNotActive = "path_not_active"
	// CopySamePath: the scheduler named the original's path again.
	CopySamePath = "same_path"
	// CopyNoConnID: the peer has provided no connection ID for the path.
	CopyNoConnID = "no_connection_id"
	// CopyNoPacket: the datagram had no 1-RTT packet that may be copied
	// (none was built, or it carried frames bound to its path).
	CopyNoPacket = "no_copyable_packet"
	// CopyTooLarge: the copy would exceed its path's limit (never
	// expected: the original is sized for its copies).
	CopyTooLarge = "too_large"
)

// pktKey names a 1-RTT packet: its path and packet number.
type pktKey struct{ path, pn uint64 }

// copyTracker remembers which outstanding 1-RTT packets carry the same
// frames (a packet and its copies), so that loss handling can tell the
// path scheduler where a lost packet's data is still in flight; and counts
// copies sent per path and copies dropped per reason.
type copyTracker struct {
	group   map[pktKey]uint64   // outstanding packet -> its group
	members map[uint64][]pktKey // group -> its outstanding packets
	next    uint64
	sent    map[uint64]uint64 // path -> copies sent on it
	dropped map[string]uint64 // reason -> copies not sent
}

// add records that the packets of keys carry the same frames.
func (t *copyTracker) add(keys []pktKey) {
	if len(keys) < 2 {
		return
	}
	if t.group == nil {
		t.group, t.members = map[pktKey]uint64{}, map[uint64][]pktKey{}
	}
	t.next++
	for _, k := range keys {
		t.group[k] = t.next
	}
	t.members[t.next] = append([]pktKey(nil), keys...)
}

// others returns the outstanding packets that carry the same frames as k.
func (t *copyTracker) others(k pktKey) []pktKey {
	g, ok := t.group[k]
	if !ok {
		return nil
	}
	var out []pktKey
	for _, m := range t.members[g] {
		if m != k {
			out = append(out, m)
		}
	}
	return out
}

// settle forgets packet k: it was acknowledged or declared lost. A group
// left with one packet is forgotten too: that packet has no copies.
func (t *copyTracker) settle(k pktKey) {
	g, ok := t.group[k]
	if !ok {
		return
	}
	delete(t.group, k)
	ms := t.members[g]
	for i, m := range ms {
		if m == k {
			ms = append(ms[:i], ms[i+1:]...)
			break
		}
	}
	if len(ms) <= 1 {
		for _, m := range ms {
			delete(t.group, m)
		}
		delete(t.members, g)
		return
	}
	t.members[g] = ms
}

func (t *copyTracker) drop(reason string, n int) {
	if n <= 0 {
		return
	}
	if t.dropped == nil {
		t.dropped = map[string]uint64{}
	}
	t.dropped[reason] += uint64(n)
}

// CopiesDropped returns, per reason (the Copy* constants), how many copies
// a path scheduler asked for were not sent.
func (c *Conn) CopiesDropped() map[string]uint64 {
	out := make(map[string]uint64, len(c.copies.dropped))
	for r, n := range c.copies.dropped {
		out[r] = n
	}
	return out
}

// copyTarget returns the path a copy goes on, or why it cannot.
func (c *Conn) copyTarget(p *path, id uint64) (*path, []byte, string) {
	q := c.pathByID(id)
	if q == nil {
		return nil, nil, CopyUnknownPath
	}
	if q == p {
		return nil, nil, CopySamePath
	}
	if q.state != pathActive {
		return nil, nil, CopyPathNotActive
	}
	dcid, ok := c.ids.dcidFor(q.id)
	if !ok {
		return nil, nil, CopyNoConnID
	}
	return q, dcid, ""
}

// copyRoom is the largest 1-RTT payload that fits, as a packet of its
// own, every path of bp.dups that can take a copy: each with its own
// connection ID and packet number length, within its own datagram limit
// and the size the path scheduler approved (bp.sizeCap). Zero if no path
// can take a copy.
func (c *Conn) copyRoom(p *path, bp *buildParams) int {
	room := 0
	for _, id := range bp.dups {
		q, dcid, _ := c.copyTarget(p, id)
		if q == nil {
			continue
		}
		pnLen := wire.PacketNumberLen(q.app.nextPN, q.app.sent.LargestAcked())
		r := c.packetLimit(q, bp.sizeCap) - (1 + len(dcid) + pnLen) - aeadTag
		if room == 0 || r < room {
			room = max(r, 1)
		}
	}
	return room
}

// copySource is the 1-RTT packet of a datagram to copy onto other paths.
type copySource struct {
	orig                   pktKey
	payload                []byte
	refs                   []recovery.FrameRef
	frames                 []qlog.Frame
	ackEliciting, inFlight bool
}

// copySource takes the 1-RTT packet of datagram d, built on p, before it
// is sealed; nil (and the copies counted as dropped) if d has none that
// may be copied.
func (c *Conn) copySource(p *path, d *dgram) *copySource {
	pk := &d.pkts[d.n-1]
	if pk.l != levelApp || pk.pathBound {
		c.copies.drop(CopyNoPacket, len(d.bp.dups))
		return nil
	}
	return &copySource{
		orig:         pktKey{p.id, pk.pn},
		payload:      append([]byte(nil), d.b[pk.payloadOff:]...),
		refs:         append([]recovery.FrameRef(nil), pk.refs...),
		frames:       append([]qlog.Frame(nil), pk.frames...),
		ackEliciting: pk.ackEliciting,
		inFlight:     pk.inFlight,
	}
}

// sendCopies builds the copies of src on the paths of bp.dups and queues
// them for the next polls.
func (c *Conn) sendCopies(now time.Time, p *path, src *copySource, bp *buildParams) {
	group := []pktKey{src.orig}
	for _, id := range bp.dups {
		q, dcid, why := c.copyTarget(p, id)
		if q == nil {
			c.copies.drop(why, 1)
			continue
		}
		pn, ok := c.buildCopy(now, q, dcid, src, bp)
		if !ok {
			c.copies.drop(CopyTooLarge, 1)
			continue
		}
		group = append(group, pktKey{q.id, pn})
		if c.copies.sent == nil {
			c.copies.sent = map[uint64]uint64{}
		}
		c.copies.sent[q.id]++
	}
	if src.ackEliciting {
		c.copies.add(group)
	}
}

// buildCopy seals a copy of src on path q, in q's packet number space,
// and queues it; it returns the copy's packet number.
func (c *Conn) buildCopy(now time.Time, q *path, dcid []byte, src *copySource, bp *buildParams) (uint64, bool) {
	limit := c.packetLimit(q, bp.sizeCap)
	d := &dgram{b: make([]byte, 0, limit+aeadTag), limit: limit,
		bp: buildParams{mode: bp.mode, class: bp.class, sizeCap: bp.sizeCap, copyOf: &src.orig}}
	pk := c.startPacket(d, levelApp, &q.app, dcid)
	d.b = append(d.b, src.payload...)
	pk.refs = append(pk.refs, src.refs...)
	pk.frames = append(pk.frames, src.frames...)
	pk.ackEliciting, pk.inFlight = src.ackEliciting, src.inFlight
	c.finishPayload(d, pk)
	if len(d.b)+aeadTag > limit {
		return 0, false
	}
	d.n = 1
	pn := pk.pn
	out := c.seal(now, q, d)
	c.dupQueue = append(c.dupQueue, queuedDatagram{local: q.local, remote: q.remote, data: out})
	return pn, true
}

// lostPacket describes packet sp0 of path p for the path scheduler's
// LossPolicy.
func (c *Conn) lostPacket(p *path, sp0 *recovery.SentPacket, reason scheduler.LossReason) *scheduler.LostPacket {
	lp := &scheduler.LostPacket{
		PacketRef: scheduler.PacketRef{PathID: p.id, PacketNumber: sp0.Number, SentAt: sp0.TimeSent},
		Reason:    reason,
	}
	for _, r := range sp0.Frames {
		if r.Kind != refStream {
			continue
		}
		lp.StreamBytes += r.Length
		if s := c.streams.m[r.ID]; s != nil && s.priority {
			lp.Priority = true
		}
	}
	others := c.copies.others(pktKey{p.id, sp0.Number})
	sort.Slice(others, func(i, j int) bool {
		return others[i].path < others[j].path || others[i].path == others[j].path && others[i].pn < others[j].pn
	})
	for _, k := range others {
		ref := scheduler.PacketRef{PathID: k.path, PacketNumber: k.pn}
		if q := c.pathByID(k.path); q != nil {
			if t, ok := q.app.sent.SentTime(k.pn); ok {
				ref.SentAt = t
			}
		}
		lp.Copies = append(lp.Copies, ref)
	}
	return lp
}
