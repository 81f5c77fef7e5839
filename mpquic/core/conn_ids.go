package core

import (
	"bytes"
	"crypto/subtle"
	"io"

	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
)

// ConnIDLen is the length of the connection IDs this stack issues. A fixed
// length lets endpoints find the DCID of short-header packets.
const ConnIDLen = 8

// idHost issues connection IDs and routes datagrams carrying them to the
// connection: the sans-IO Endpoint implements it.
type idHost interface {
	// newConnID returns a fresh connection ID routed to c, and its
	// stateless reset token (RFC 9000 Section 10.3.2).
	newConnID(c *Conn) (cid []byte, token [16]byte, err error)
	// retireConnID stops routing cid.
	retireConnID(cid []byte)
}

// randomIDs is the idHost of a connection without an endpoint: random IDs
// and tokens, nothing to route.
type randomIDs struct{ r io.Reader }

func (h randomIDs) newConnID(*Conn) ([]byte, [16]byte, error) {
	cid := make([]byte, ConnIDLen)
	var tok [16]byte
	if _, err := io.ReadFull(h.r, cid); err != nil {
		return nil, tok, err
	}
	_, err := io.ReadFull(h.r, tok[:])
	return cid, tok, err
}

func (randomIDs) retireConnID([]byte) {}

type localCID struct {
	seq     uint64
	cid     []byte
	token   [16]byte
	retired bool
}

type remoteCID struct {
	seq      uint64
	cid      []byte
	token    [16]byte
	hasToken bool
	retired  bool
}

// connIDs holds the connection IDs of both ends (RFC 9000 Section 5.1).
type connIDs struct {
	host idHost

	local      []localCID // ours, given to the peer
	nextLocal  uint64     // next sequence number to issue
	remote     []remoteCID
	active     int    // index in remote of the DCID in use
	retirePrio uint64 // largest Retire Prior To received
	// retireQueue lists peer sequence numbers to retire, sent in
	// RETIRE_CONNECTION_ID frames.
	retireQueue []uint64
}

func (ids *connIDs) dcid() []byte { return ids.remote[ids.active].cid }

// srcCID is the connection ID we put in long headers: our first one.
func (ids *connIDs) srcCID() []byte {
	for i := range ids.local {
		if !ids.local[i].retired {
			return ids.local[i].cid
		}
	}
	return ids.local[0].cid
}

// issue creates our next connection ID.
func (c *Conn) issueConnID() (*localCID, error) {
	cid, tok, err := c.ids.host.newConnID(c)
	if err != nil {
		return nil, err
	}
	c.ids.local = append(c.ids.local, localCID{seq: c.ids.nextLocal, cid: cid, token: tok})
	c.ids.nextLocal++
	return &c.ids.local[len(c.ids.local)-1], nil
}

func (ids *connIDs) activeLocal() int {
	n := 0
	for i := range ids.local {
		if !ids.local[i].retired {
			n++
		}
	}
	return n
}

// issueConnIDs tops up the IDs the peer holds to its
// active_connection_id_limit (capped by ours), queueing NEW_CONNECTION_ID.
func (c *Conn) issueConnIDs() error {
	limit := min(c.peerParams.ActiveConnectionIDLimit, c.cfg.ActiveConnectionIDLimit)
	for uint64(c.ids.activeLocal()) < limit {
		l, err := c.issueConnID()
		if err != nil {
			return err
		}
		c.ctrl.newConnIDs.add(l.seq)
	}
	return nil
}

func (ids *connIDs) localBySeq(seq uint64) *localCID {
	for i := range ids.local {
		if ids.local[i].seq == seq {
			return &ids.local[i]
		}
	}
	return nil
}

// handleNewConnectionID processes NEW_CONNECTION_ID (RFC 9000 Section 19.15).
func (c *Conn) handleNewConnectionID(f *wire.NewConnectionIDFrame) error {
	ids := &c.ids
	if len(ids.dcid()) == 0 {
		return qerr.NewFrame(qerr.ProtocolViolation, wire.FrameTypeNewConnectionID, "NEW_CONNECTION_ID while using a zero-length connection ID")
	}
	for i := range ids.remote {
		r := &ids.remote[i]
		if r.seq == f.Seq {
			if !bytes.Equal(r.cid, f.ConnID) || r.token != f.ResetToken {
				return qerr.NewFrame(qerr.ProtocolViolation, wire.FrameTypeNewConnectionID, "sequence number %d reused for another connection ID", f.Seq)
			}
			return nil // retransmission
		}
		if !r.retired && bytes.Equal(r.cid, f.ConnID) {
			return qerr.NewFrame(qerr.ProtocolViolation, wire.FrameTypeNewConnectionID, "connection ID issued twice")
		}
	}
	if f.Seq < ids.retirePrio {
		// Already retired by an earlier Retire Prior To: retire at once.
		ids.retireQueue = append(ids.retireQueue, f.Seq)
		c.ctrl.retire = true
		return nil
	}
	ids.remote = append(ids.remote, remoteCID{seq: f.Seq, cid: append([]byte(nil), f.ConnID...), token: f.ResetToken, hasToken: true})
	if f.RetirePriorTo > ids.retirePrio {
		ids.retirePrio = f.RetirePriorTo
		for i := range ids.remote {
			r := &ids.remote[i]
			if !r.retired && r.seq < f.RetirePriorTo {
				r.retired = true
				ids.retireQueue = append(ids.retireQueue, r.seq)
				c.ctrl.retire = true
			}
		}
		if ids.remote[ids.active].retired {
			if err := c.switchDCID(); err != nil {
				return err
			}
		}
	}
	active := 0
	for i := range ids.remote {
		if !ids.remote[i].retired {
			active++
		}
	}
	if uint64(active) > c.cfg.ActiveConnectionIDLimit {
		return qerr.NewFrame(qerr.ConnectionIDLimitError, wire.FrameTypeNewConnectionID, "%d active connection IDs exceed our limit %d", active, c.cfg.ActiveConnectionIDLimit)
	}
	ids.compactRemote()
	return nil
}

// switchDCID moves to an unretired peer connection ID.
func (c *Conn) switchDCID() error {
	for i := range c.ids.remote {
		if !c.ids.remote[i].retired {
			c.ids.active = i
			return nil
		}
	}
	return qerr.New(qerr.ProtocolViolation, "peer retired every connection ID we hold")
}

// compactRemote forgets retired IDs whose retirement has been queued.
func (ids *connIDs) compactRemote() {
	if len(ids.remote) < 16 {
		return
	}
	activeCID := ids.remote[ids.active].cid
	out := ids.remote[:0]
	for _, r := range ids.remote {
		if !r.retired {
			out = append(out, r)
		}
	}
	ids.remote = out
	for i := range ids.remote {
		if bytes.Equal(ids.remote[i].cid, activeCID) {
			ids.active = i
		}
	}
}

// handleRetireConnectionID processes RETIRE_CONNECTION_ID (Section 19.16).
func (c *Conn) handleRetireConnectionID(f *wire.RetireConnectionIDFrame, packetDCID []byte) error {
	if f.Seq >= c.ids.nextLocal {
		return qerr.NewFrame(qerr.ProtocolViolation, wire.FrameTypeRetireConnectionID, "retiring sequence number %d never issued", f.Seq)
	}
	l := c.ids.localBySeq(f.Seq)
	if l == nil || l.retired {
		return nil
	}
	if bytes.Equal(l.cid, packetDCID) {
		return qerr.NewFrame(qerr.ProtocolViolation, wire.FrameTypeRetireConnectionID, "retiring the connection ID of the packet carrying the frame")
	}
	l.retired = true
	c.ids.host.retireConnID(l.cid)
	return c.issueConnIDs()
}

// isStatelessReset reports whether a datagram that failed to decrypt ends
// with a stateless reset token of one of the peer's connection IDs
// (RFC 9000 Section 10.3.1).
func (c *Conn) isStatelessReset(d []byte) bool {
	if len(d) < 21 {
		return false
	}
	tail := d[len(d)-16:]
	for i := range c.ids.remote {
		r := &c.ids.remote[i]
		if r.hasToken && subtle.ConstantTimeCompare(r.token[:], tail) == 1 {
			return true
		}
	}
	return false
}

// retireAllLocal stops routing every ID of the connection (on close).
func (c *Conn) retireAllLocal() {
	for i := range c.ids.local {
		if !c.ids.local[i].retired {
			c.ids.local[i].retired = true
			c.ids.host.retireConnID(c.ids.local[i].cid)
		}
	}
}
