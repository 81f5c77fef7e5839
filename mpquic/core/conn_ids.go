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
	// handshakeDone tells that c completed its handshake, connDone that
	// its state is gone (for the endpoint's connection limits).
	handshakeDone(c *Conn)
	connDone(c *Conn)
	// peerToken and peerTokenGone maintain the stateless reset tokens of
	// the peer's unretired connection IDs, so that a reset, which carries
	// none of our connection IDs, still finds the connection
	// (RFC 9000 Section 10.3.1).
	peerToken(c *Conn, token [16]byte)
	peerTokenGone(c *Conn, token [16]byte)
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

func (randomIDs) retireConnID([]byte)           {}
func (randomIDs) handshakeDone(*Conn)           {}
func (randomIDs) connDone(*Conn)                {}
func (randomIDs) peerToken(*Conn, [16]byte)     {}
func (randomIDs) peerTokenGone(*Conn, [16]byte) {}

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

// cidSet holds the connection IDs of one path ID, both ours and the peer's,
// each side with its own sequence number space
// (draft-ietf-quic-multipath-21 Section 4.2). Without multipath only path
// ID 0 exists and this is RFC 9000 Section 5.1.
type cidSet struct {
	local      []localCID // ours, given to the peer
	nextLocal  uint64     // next sequence number to issue
	remote     []remoteCID
	active     int    // index in remote of the DCID in use
	retirePrio uint64 // largest Retire Prior To received
}

// cidKey names one connection ID of a path in control queues and frame
// records: the path ID in the high 32 bits, the sequence number below.
func cidKey(pathID, seq uint64) uint64 { return pathID<<32 | seq&0xffffffff }

func splitCIDKey(k uint64) (pathID, seq uint64) { return k >> 32, k & 0xffffffff }

// connIDs holds the connection IDs of both ends for every path ID.
type connIDs struct {
	host idHost
	sets map[uint64]*cidSet
	// small holds the sets of path IDs below maxSmallPathID too, by
	// index: dcidFor runs several times per packet (sets are never
	// removed, so it cannot go stale).
	small []*cidSet
	// byCID maps our unretired connection IDs to their path ID, to find
	// the path of a short-header packet.
	byCID map[string]uint64
	// retireQueue lists peer connection IDs (cidKey) to retire with
	// RETIRE_CONNECTION_ID or PATH_RETIRE_CONNECTION_ID.
	retireQueue []uint64
}

func (ids *connIDs) init(host idHost) {
	ids.host = host
	ids.sets = map[uint64]*cidSet{}
	ids.byCID = map[string]uint64{}
}

// set returns the connection IDs of a path ID, creating them.
func (ids *connIDs) set(pathID uint64) *cidSet {
	s := ids.sets[pathID]
	if s == nil {
		s = &cidSet{}
		ids.sets[pathID] = s
		if pathID < maxSmallPathID {
			for uint64(len(ids.small)) <= pathID {
				ids.small = append(ids.small, nil)
			}
			ids.small[pathID] = s
		}
	}
	return s
}

// maxSmallPathID bounds connIDs.small.
const maxSmallPathID = 64

// get returns the set of a path ID, nil if there is none.
func (ids *connIDs) get(pathID uint64) *cidSet {
	if pathID < uint64(len(ids.small)) {
		return ids.small[pathID]
	}
	if pathID < maxSmallPathID {
		return nil // small holds every set below maxSmallPathID
	}
	return ids.sets[pathID]
}

// p0 is the set of the handshake path.
func (ids *connIDs) p0() *cidSet { return ids.set(0) }

// dcid is the destination connection ID in use on path 0.
func (ids *connIDs) dcid() []byte { return ids.p0().remote[ids.p0().active].cid }

// dcidFor returns the destination connection ID to use on a path, if the
// peer gave one that is not retired.
func (ids *connIDs) dcidFor(pathID uint64) ([]byte, bool) {
	s := ids.get(pathID)
	if s == nil || len(s.remote) == 0 || s.remote[s.active].retired {
		return nil, false
	}
	return s.remote[s.active].cid, true
}

// spareDCID returns the index (in its set's remote) of the peer's
// connection ID of path pathID that the path would move to next: the first
// unretired one besides the one in use.
func (ids *connIDs) spareDCID(pathID uint64) (int, bool) {
	s := ids.get(pathID)
	if s == nil {
		return 0, false
	}
	for i := range s.remote {
		if i != s.active && !s.remote[i].retired {
			return i, true
		}
	}
	return 0, false
}

// hasUnusedRemote reports whether the peer gave an unretired connection ID
// for a path ID.
func (ids *connIDs) hasUnusedRemote(pathID uint64) bool {
	s := ids.sets[pathID]
	if s == nil {
		return false
	}
	for i := range s.remote {
		if !s.remote[i].retired {
			return true
		}
	}
	return false
}

// srcCID is the connection ID we put in long headers: our first one.
func (ids *connIDs) srcCID() []byte {
	s := ids.p0()
	for i := range s.local {
		if !s.local[i].retired {
			return s.local[i].cid
		}
	}
	return s.local[0].cid
}

// pathOf returns the path ID of one of our connection IDs.
func (ids *connIDs) pathOf(cid []byte) (uint64, bool) {
	id, ok := ids.byCID[string(cid)]
	return id, ok
}

// issueConnID creates our next connection ID for a path ID.
func (c *Conn) issueConnID(pathID uint64) (*localCID, error) {
	cid, tok, err := c.ids.host.newConnID(c)
	if err != nil {
		return nil, err
	}
	s := c.ids.set(pathID)
	s.local = append(s.local, localCID{seq: s.nextLocal, cid: cid, token: tok})
	s.nextLocal++
	c.ids.byCID[string(cid)] = pathID
	return &s.local[len(s.local)-1], nil
}

func (s *cidSet) activeLocal() int {
	n := 0
	for i := range s.local {
		if !s.local[i].retired {
			n++
		}
	}
	return n
}

func (s *cidSet) localBySeq(seq uint64) *localCID {
	for i := range s.local {
		if s.local[i].seq == seq {
			return &s.local[i]
		}
	}
	return nil
}

// localByKey finds one of our connection IDs by its cidKey.
func (ids *connIDs) localByKey(k uint64) *localCID {
	pathID, seq := splitCIDKey(k)
	s := ids.sets[pathID]
	if s == nil {
		return nil
	}
	return s.localBySeq(seq)
}

// issueConnIDs tops up the IDs the peer holds for path ID 0 and, with
// multipath, for every path ID we and the peer allow that is not
// abandoned, to the peer's active_connection_id_limit (capped by ours),
// queueing NEW_CONNECTION_ID or PATH_NEW_CONNECTION_ID frames.
func (c *Conn) issueConnIDs() error {
	limit := min(c.peerParams.ActiveConnectionIDLimit, c.cfg.ActiveConnectionIDLimit)
	if err := c.issueFor(0, limit); err != nil {
		return err
	}
	if !c.mp.enabled {
		return nil
	}
	for id := uint64(1); id <= min(c.mp.localMax, c.mp.peerMax); id++ {
		if c.mp.retired(id) {
			continue
		}
		if err := c.issueFor(id, limit); err != nil {
			return err
		}
	}
	return nil
}

func (c *Conn) issueFor(pathID, limit uint64) error {
	for uint64(c.ids.set(pathID).activeLocal()) < limit {
		l, err := c.issueConnID(pathID)
		if err != nil {
			return err
		}
		c.ctrl.newConnIDs.add(cidKey(pathID, l.seq))
	}
	return nil
}

// handleNewConnectionID processes NEW_CONNECTION_ID (RFC 9000 Section
// 19.15) and PATH_NEW_CONNECTION_ID (draft-ietf-quic-multipath-21 Section
// 7.4); NEW_CONNECTION_ID always concerns path ID 0.
func (c *Conn) handleNewConnectionID(pathID, seq, retirePriorTo uint64, cid []byte, token [16]byte, ft uint64) error {
	if retirePriorTo > seq {
		return qerr.NewFrame(qerr.FrameEncodingError, ft, "Retire Prior To %d above sequence number %d", retirePriorTo, seq)
	}
	if pathID != 0 || ft == wire.FrameTypePathNewConnectionID {
		if err := c.mp.checkPathID(pathID, ft); err != nil {
			return err
		}
		if c.mp.retired(pathID) {
			return nil // abandoned path: ignore (Section 7)
		}
	}
	ids := &c.ids
	if len(ids.dcid()) == 0 {
		return qerr.NewFrame(qerr.ProtocolViolation, ft, "NEW_CONNECTION_ID while using a zero-length connection ID")
	}
	// Connection IDs are unique across all path IDs.
	for pid, s := range ids.sets {
		for i := range s.remote {
			r := &s.remote[i]
			if pid == pathID && r.seq == seq {
				if !bytes.Equal(r.cid, cid) || r.token != token {
					return qerr.NewFrame(qerr.ProtocolViolation, ft, "sequence number %d of path %d reused for another connection ID", seq, pathID)
				}
				return nil // retransmission
			}
			if !r.retired && bytes.Equal(r.cid, cid) {
				return qerr.NewFrame(qerr.ProtocolViolation, ft, "connection ID issued twice")
			}
		}
	}
	s := ids.set(pathID)
	if seq < s.retirePrio {
		// Already retired by an earlier Retire Prior To: retire at once.
		ids.retireQueue = append(ids.retireQueue, cidKey(pathID, seq))
		c.ctrl.retire = true
		return nil
	}
	s.remote = append(s.remote, remoteCID{seq: seq, cid: append([]byte(nil), cid...), token: token, hasToken: true})
	ids.host.peerToken(c, token)
	if len(s.remote) == 1 {
		s.active = 0
	}
	if retirePriorTo > s.retirePrio {
		s.retirePrio = retirePriorTo
		for i := range s.remote {
			r := &s.remote[i]
			if !r.retired && r.seq < retirePriorTo {
				c.retireRemote(r)
				ids.retireQueue = append(ids.retireQueue, cidKey(pathID, r.seq))
				c.ctrl.retire = true
			}
		}
		if s.remote[s.active].retired {
			if err := c.switchDCID(pathID); err != nil {
				return err
			}
		}
	}
	active := 0
	for i := range s.remote {
		if !s.remote[i].retired {
			active++
		}
	}
	if uint64(active) > c.cfg.ActiveConnectionIDLimit {
		return qerr.NewFrame(qerr.ConnectionIDLimitError, ft, "%d active connection IDs for path %d exceed our limit %d", active, pathID, c.cfg.ActiveConnectionIDLimit)
	}
	s.compactRemote()
	c.onRemoteCIDs(pathID)
	return nil
}

// switchDCID moves a path to an unretired peer connection ID.
func (c *Conn) switchDCID(pathID uint64) error {
	s := c.ids.set(pathID)
	for i := range s.remote {
		if !s.remote[i].retired {
			s.active = i
			return nil
		}
	}
	if pathID != 0 && c.mp.enabled {
		// The path cannot be used until new IDs arrive.
		c.ctrl.pathCIDsBlocked.add(pathID)
		return nil
	}
	return qerr.New(qerr.ProtocolViolation, "peer retired every connection ID we hold for path %d", pathID)
}

// compactRemote forgets retired IDs whose retirement has been queued.
func (s *cidSet) compactRemote() {
	if len(s.remote) < 16 {
		return
	}
	activeCID := s.remote[s.active].cid
	out := s.remote[:0]
	for _, r := range s.remote {
		if !r.retired {
			out = append(out, r)
		}
	}
	s.remote = out
	s.active = 0
	for i := range s.remote {
		if bytes.Equal(s.remote[i].cid, activeCID) {
			s.active = i
		}
	}
}

// handleRetireConnectionID processes RETIRE_CONNECTION_ID (RFC 9000
// Section 19.16) and PATH_RETIRE_CONNECTION_ID; RETIRE_CONNECTION_ID
// always concerns path ID 0.
func (c *Conn) handleRetireConnectionID(pathID, seq uint64, packetDCID []byte, ft uint64) error {
	if pathID != 0 || ft == wire.FrameTypePathRetireConnectionID {
		if err := c.mp.checkPathID(pathID, ft); err != nil {
			return err
		}
	}
	s := c.ids.sets[pathID]
	if s == nil || seq >= s.nextLocal {
		return qerr.NewFrame(qerr.ProtocolViolation, ft, "retiring sequence number %d of path %d never issued", seq, pathID)
	}
	l := s.localBySeq(seq)
	if l == nil || l.retired {
		return nil
	}
	if bytes.Equal(l.cid, packetDCID) {
		return qerr.NewFrame(qerr.ProtocolViolation, ft, "retiring the connection ID of the packet carrying the frame")
	}
	c.retireLocal(l)
	if pathID != 0 && c.mp.retired(pathID) {
		return nil
	}
	return c.issueConnIDs()
}

func (c *Conn) retireLocal(l *localCID) {
	l.retired = true
	delete(c.ids.byCID, string(l.cid))
	c.ids.host.retireConnID(l.cid)
}

// retirePathRemote treats every connection ID the peer gave for a path as
// retired, without RETIRE frames: what abandoning a path implies
// (draft-ietf-quic-multipath-21 Section 3.4).
func (c *Conn) retirePathRemote(pathID uint64) {
	s := c.ids.sets[pathID]
	if s == nil {
		return
	}
	for i := range s.remote {
		c.retireRemote(&s.remote[i])
	}
}

// retireRemote marks a peer connection ID retired; its reset token no
// longer counts.
func (c *Conn) retireRemote(r *remoteCID) {
	if !r.retired && r.hasToken {
		c.ids.host.peerTokenGone(c, r.token)
	}
	r.retired = true
}

// forgetPeerTokens withdraws every reset token of the peer from the host
// (on close).
func (c *Conn) forgetPeerTokens() {
	for _, s := range c.ids.sets {
		for i := range s.remote {
			if r := &s.remote[i]; !r.retired && r.hasToken {
				c.ids.host.peerTokenGone(c, r.token)
			}
		}
	}
}

// retirePathLocal stops routing our connection IDs of an abandoned path
// whose state is removed.
func (c *Conn) retirePathLocal(pathID uint64) {
	s := c.ids.sets[pathID]
	if s == nil {
		return
	}
	for i := range s.local {
		if !s.local[i].retired {
			c.retireLocal(&s.local[i])
		}
	}
}

// isStatelessReset reports whether a datagram that failed to decrypt ends
// with a stateless reset token of one of the peer's unretired connection
// IDs (RFC 9000 Section 10.3.1).
func (c *Conn) isStatelessReset(d []byte) bool {
	if len(d) < 21 {
		return false
	}
	tail := d[len(d)-16:]
	for _, s := range c.ids.sets {
		for i := range s.remote {
			r := &s.remote[i]
			if r.hasToken && !r.retired && subtle.ConstantTimeCompare(r.token[:], tail) == 1 {
				return true
			}
		}
	}
	return false
}

// retireAllLocal stops routing every ID of the connection (on close).
func (c *Conn) retireAllLocal() {
	for _, s := range c.ids.sets {
		for i := range s.local {
			if !s.local[i].retired {
				c.retireLocal(&s.local[i])
			}
		}
	}
}
