package core

import (
	"bytes"
	"errors"
	"time"

	"github.com/mpq/mpq/mpquic/internal/acks"
	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
	"github.com/mpq/mpq/mpquic/qlog"
)

// maxUndecryptable bounds the packets kept while their keys are missing
// (RFC 9001 Section 5.7).
const maxUndecryptable = 16

// HandleDatagram processes one received UDP datagram: every coalesced packet
// in it (RFC 9000 Section 12.2). Malformed or undecryptable packets are
// dropped; protocol violations close the connection with the right error.
func (c *Conn) HandleDatagram(now time.Time, d Datagram) {
	c.now = now
	if c.state == stateClosed {
		return
	}
	data := d.Data
	var firstDCID []byte
	rx := rxDatagram{d: d, size: len(d.Data), first: true}
	for len(data) > 0 {
		hdr, err := wire.ParseHeader(data, ConnIDLen)
		if err != nil {
			c.qlog.PacketDropped(now, qlog.PacketHeader{}, len(data), "header_parse_error")
			return
		}
		pkt := data[:hdr.Length]
		data = data[hdr.Length:]
		if firstDCID == nil {
			firstDCID = hdr.DstConnID
		} else if !bytes.Equal(firstDCID, hdr.DstConnID) {
			// Coalesced packets must share the DCID (Section 12.2).
			c.qlog.PacketDropped(now, qlog.PacketHeader{}, len(pkt), "connection_id_mismatch")
			continue
		}
		if err := c.handlePacket(now, &rx, hdr, pkt); err != nil {
			c.closeWithError(now, err)
			return
		}
		if c.state >= stateDraining {
			return
		}
	}
	c.processReplay(now)
	c.checkPathFailures(now)
}

// rxDatagram is the datagram whose packets are being processed.
type rxDatagram struct {
	d    Datagram
	size int
	// first: no packet of the datagram was attributed to a path yet; the
	// first one that is counts the datagram's bytes on its path (for the
	// anti-amplification limit and statistics).
	first bool
	// early: the packet being processed is a 0-RTT packet.
	early bool
}

// account counts the datagram's bytes on the path of its first packet.
func (rx *rxDatagram) account(p *path) {
	if !rx.first || p == nil {
		return
	}
	rx.first = false
	p.bytesReceived += uint64(rx.size)
	p.bytesRecv += uint64(rx.size)
}

// pathFor finds the path a packet arrived on: with multipath, a 1-RTT
// packet's path is the path ID of its destination connection ID (nil if
// that path does not exist yet); otherwise, and for long headers, path 0.
func (c *Conn) pathFor(d Datagram, hdr wire.Header) *path {
	if hdr.Type == wire.Packet1RTT && c.mp.enabled {
		id, ok := c.ids.pathOf(hdr.DstConnID)
		if !ok {
			return nil
		}
		return c.pathByID(id)
	}
	for _, p := range c.paths {
		if p.local == d.Local && p.remote == d.Remote {
			return p
		}
	}
	// A single path without multipath: a changed remote address is a NAT
	// rebinding or a migration of the path (migrate.go).
	return c.pathByID(0)
}

func (c *Conn) handlePacket(now time.Time, rx *rxDatagram, hdr wire.Header, pkt []byte) error {
	p := c.pathFor(rx.d, hdr)
	switch hdr.Type {
	case wire.PacketVersionNegotiation:
		return c.handleVersionNegotiation(hdr)
	case wire.PacketRetry:
		return c.handleRetry(now, hdr, pkt)
	case wire.Packet0RTT:
		if hdr.Version != wire.Version1 || c.state != stateHandshake && c.state != stateActive {
			return nil
		}
		return c.handleEarlyPacket(now, rx, p, hdr, pkt)
	}
	if hdr.Type != wire.Packet1RTT && hdr.Version != wire.Version1 {
		c.qlog.PacketDropped(now, qlog.PacketHeader{}, len(pkt), "unsupported_version")
		return nil
	}
	if c.state == stateDraining {
		return nil
	}
	var l level
	switch hdr.Type {
	case wire.PacketInitial:
		l = levelInitial
	case wire.PacketHandshake:
		l = levelHandshake
	case wire.Packet1RTT:
		l = levelApp
	default:
		return nil
	}
	if c.state == stateClosing {
		// Answer with CONNECTION_CLOSE, at most once per received packet
		// burst (RFC 9000 Section 10.2.1).
		c.closeSend = true
		return nil
	}
	if l == levelApp {
		return c.handleShortPacket(now, rx, p, hdr, pkt)
	}
	if p == nil {
		c.qlog.PacketDropped(now, qlog.PacketHeader{PacketType: l.String()}, len(pkt), "unknown_path")
		return nil
	}
	rx.account(p)
	k := &c.keys[l]
	if !k.haveOpen {
		if !k.discarded {
			c.bufferUndecryptable(pkt, rx)
		}
		return nil
	}
	if l == levelInitial && c.isClient && c.gotInitial == false {
		// The server's first Initial: adopt its SCID as our DCID
		// (RFC 9000 Section 7.2).
		c.ids.p0().remote[0].cid = append([]byte(nil), hdr.SrcConnID...)
		c.gotInitial = true
	}
	sp := &c.spaces[l]
	pn, payload, ok, err := c.openLong(now, k.open, sp, l.String(), hdr, pkt)
	if !ok || err != nil {
		return err
	}
	if !c.isClient && l == levelHandshake {
		// A Handshake packet proves the client's address
		// (RFC 9000 Section 8.1) and ends the Initial level for the server
		// (RFC 9001 Section 4.9.1).
		if !p.validated {
			p.validated = true
			c.addressValidated = true
		}
		c.discardLevel(levelInitial)
	}
	return c.processPayload(now, rx, p, l, sp, hdr, pn, payload, len(pkt))
}

// openLong removes the protection of a long header packet of type
// typeName with keys k, its packet number decoded in space sp; ok is false
// for a packet dropped (undecryptable or duplicate), err a protocol
// violation.
func (c *Conn) openLong(now time.Time, k protection.Keys, sp *pnSpace, typeName string, hdr wire.Header, pkt []byte) (pn uint64, payload []byte, ok bool, err error) {
	pnLen, trunc, err := protection.UnprotectHeader(k.HP, pkt, hdr.PNOffset)
	if err != nil {
		c.qlog.PacketDropped(now, qlog.PacketHeader{PacketType: typeName}, len(pkt), "decryption_failure")
		return 0, nil, false, nil
	}
	largest := int64(-1)
	if lr, ok := sp.recv.LargestReceived(); ok {
		largest = int64(lr)
	}
	pn = wire.DecodePacketNumber(largest, trunc, pnLen)
	payload, err = protection.OpenPacket(k.AEAD, pkt, hdr.PNOffset+pnLen, 0, pn)
	if err != nil {
		c.qlog.PacketDropped(now, qlog.PacketHeader{PacketType: typeName, PacketNumber: pn, HasPacketNumber: true}, len(pkt), "decryption_failure")
		return 0, nil, false, nil
	}
	if pkt[0]&0x0c != 0 {
		return 0, nil, false, qerr.New(qerr.ProtocolViolation, "reserved bits set in long header")
	}
	if sp.recv.IsDuplicate(pn) {
		c.qlog.PacketDropped(now, qlog.PacketHeader{PacketType: typeName, PacketNumber: pn, HasPacketNumber: true}, len(pkt), "duplicate")
		return 0, nil, false, nil
	}
	return pn, payload, true, nil
}

// handleShortPacket decrypts a 1-RTT packet, following key updates
// (RFC 9001 Section 6.3). p is the packet's path, nil when the packet opens
// a new path (multipath, server side) or belongs to no known path.
func (c *Conn) handleShortPacket(now time.Time, rx *rxDatagram, p *path, hdr wire.Header, pkt []byte) error {
	k := &c.app
	if !k.haveOpen {
		if p != nil {
			rx.account(p)
			c.bufferUndecryptable(pkt, rx)
		}
		return nil
	}
	var pathID uint64
	sp := &pnSpace{}
	if p != nil {
		pathID, sp = p.id, &p.app
	} else {
		id, ok := c.ids.pathOf(hdr.DstConnID)
		if !ok || c.isClient || c.mp.used[id] || c.mp.abandoned[id] {
			if c.isStatelessReset(pkt) {
				c.enterDraining(now, qerr.StatelessResetError{})
				return nil
			}
			c.qlog.PacketDropped(now, qlog.PacketHeader{PacketType: "1RTT"}, len(pkt), "unknown_path")
			return nil
		}
		pathID = id
	}
	pnLen, trunc, err := protection.UnprotectHeader(k.openHP, pkt, hdr.PNOffset)
	if err != nil {
		c.qlog.PacketDropped(now, qlog.PacketHeader{PacketType: "1RTT"}, len(pkt), "decryption_failure")
		return nil
	}
	largest := int64(-1)
	if sp.recv != nil {
		if lr, ok := sp.recv.LargestReceived(); ok {
			largest = int64(lr)
		}
	}
	pn := wire.DecodePacketNumber(largest, trunc, pnLen)
	phase := pkt[0]&0x04 != 0
	hdrLen := hdr.PNOffset + pnLen
	var payload []byte
	rotate := false
	if phase == k.keyPhase() {
		payload, err = protection.OpenPacket(k.read, pkt, hdrLen, uint32(pathID), pn)
	} else {
		// The other phase: a late packet of the previous generation, or
		// the first of the next one. Packet numbers of different paths
		// cannot be compared, so try the previous keys while they are
		// kept, then the next ones. Decryption works in place: keep the
		// ciphertext for the second try.
		if k.prevRead != nil && now.Before(k.prevReadUntil) {
			saved := append([]byte(nil), pkt[hdrLen:]...)
			payload, err = protection.OpenPacket(k.prevRead, pkt, hdrLen, uint32(pathID), pn)
			if err != nil {
				copy(pkt[hdrLen:], saved)
			}
		}
		if payload == nil {
			payload, err = protection.OpenPacket(k.nextRead, pkt, hdrLen, uint32(pathID), pn)
			rotate = err == nil
		}
	}
	if err != nil {
		k.openFailures++
		if k.suite != nil && k.openFailures >= k.suite.IntegrityLimit() {
			return qerr.New(qerr.AEADLimitReached, "integrity limit of the AEAD reached")
		}
		if c.isStatelessReset(pkt) {
			c.enterDraining(now, qerr.StatelessResetError{})
			return nil
		}
		c.qlog.PacketDropped(now, qlog.PacketHeader{PacketType: "1RTT", PacketNumber: pn, HasPacketNumber: true}, len(pkt), "decryption_failure")
		return nil
	}
	if pkt[0]&0x18 != 0 {
		return qerr.New(qerr.ProtocolViolation, "reserved bits set in short header")
	}
	if p == nil {
		// A new path opened by the client (draft-ietf-quic-multipath-21
		// Section 3.1): valid once a packet on it decrypts.
		np, err := c.acceptPath(pathID, rx.d.Local, rx.d.Remote)
		if err != nil {
			return err
		}
		if np == nil {
			return nil
		}
		p, sp = np, &np.app
		c.qlogPathState(now, p)
	}
	rx.account(p)
	if sp.recv.IsDuplicate(pn) {
		return nil
	}
	if !c.isClient {
		// The client sends no 0-RTT after 1-RTT: the server may drop
		// its 0-RTT keys (RFC 9001 Section 4.9.3).
		c.discardEarly()
	}
	if rotate {
		// The peer initiated (or answered) a key update.
		if !c.confirmed {
			return qerr.New(qerr.KeyUpdateError, "key update before handshake confirmation")
		}
		if err := k.rotate(now.Add(3 * c.maxPTO())); err != nil {
			return qerr.New(qerr.InternalError, "key update: %v", err)
		}
		c.qlog.KeyUpdated(now, k.generation, "remote_update")
	} else if phase == k.keyPhase() && k.updateInitiated {
		k.updateInitiated = false
	}
	return c.processPayload(now, rx, p, levelApp, sp, hdr, pn, payload, len(pkt))
}

func (c *Conn) bufferUndecryptable(pkt []byte, rx *rxDatagram) {
	if len(c.undecryptable) >= maxUndecryptable {
		return
	}
	c.undecryptable = append(c.undecryptable, bufferedPacket{data: append([]byte(nil), pkt...), local: rx.d.Local, remote: rx.d.Remote, dgSize: rx.size})
}

// replayUndecryptable processes buffered packets after new read keys came.
func (c *Conn) replayUndecryptable() {
	if len(c.undecryptable) == 0 {
		return
	}
	pend := c.undecryptable
	c.undecryptable = nil
	c.replay = append(c.replay, pend...)
}

// processReplay runs the packets queued by replayUndecryptable; it is called
// outside TLS event processing to avoid re-entering crypto/tls.
func (c *Conn) processReplay(now time.Time) {
	for len(c.replay) > 0 && c.state < stateDraining {
		b := c.replay[0]
		c.replay = c.replay[1:]
		hdr, err := wire.ParseHeader(b.data, ConnIDLen)
		if err != nil {
			continue
		}
		// The datagram's bytes were counted when it arrived.
		rx := rxDatagram{d: Datagram{Local: b.local, Remote: b.remote, Data: b.data}, size: b.dgSize}
		if err := c.handlePacket(now, &rx, hdr, b.data[:hdr.Length]); err != nil {
			c.closeWithError(now, err)
			return
		}
	}
}

// processPayload parses and acts on the frames of a decrypted packet that
// arrived in rx.
func (c *Conn) processPayload(now time.Time, rx *rxDatagram, p *path, l level, sp *pnSpace, hdr wire.Header, pn uint64, payload []byte, size int) error {
	ackEliciting, nonProbing := false, false
	largest := int64(-1)
	if lr, ok := sp.recv.LargestReceived(); ok {
		largest = int64(lr)
	}
	var trace []qlog.Frame
	tracing := c.qlog != nil
	for len(payload) > 0 {
		// The parser's STREAM and ACK frames are valid until its next
		// Parse: handleFrame and qlog copy what they keep.
		f, n, err := c.frameParser.Parse(payload)
		if err != nil {
			return err
		}
		payload = payload[n:]
		if tracing {
			trace = append(trace, qlog.FrameFromWire(f))
		}
		if wire.AckEliciting(f) {
			ackEliciting = true
		}
		if !isProbingFrame(f) {
			nonProbing = true
		}
		if err := c.handleFrame(now, rx, p, l, hdr, f); err != nil {
			return err
		}
		if c.state >= stateDraining {
			break
		}
	}
	if tracing {
		pt := l.String()
		if rx.early {
			pt = "0RTT"
		}
		c.qlog.PacketReceived(now, p.id, qlog.PacketHeader{PacketType: pt, PacketNumber: pn, HasPacketNumber: true, DCID: hdr.DstConnID, SCID: hdr.SrcConnID}, size, trace)
	}
	if l == levelApp && c.state == stateActive {
		if err := c.maybeMigrate(now, p, rx, pn, largest, nonProbing, hdr.DstConnID); err != nil {
			return err
		}
	}
	p.packetsReceived++
	p.unreachable = 0
	sp.recv.OnPacket(now, pn, ackEliciting, acks.NotECT)
	// Idle timer restarts on every packet processed (Section 10.1).
	c.lastActivity = now
	c.lastReceived = now
	c.ackElicitingSince = false
	return nil
}

// handleFrame dispatches one frame; frames not allowed in the packet type
// are a PROTOCOL_VIOLATION (RFC 9000 Section 12.4, Table 3).
func (c *Conn) handleFrame(now time.Time, rx *rxDatagram, p *path, l level, hdr wire.Header, f wire.Frame) error {
	if _, ok := f.(*wire.RepairFrame); ok && !c.cfg.Repair {
		// An extension we did not offer: an unknown frame type.
		return qerr.NewFrame(qerr.FrameEncodingError, f.Type(), "unknown frame type 0x%x", f.Type())
	}
	if rx.early && !allowedInEarly(f) {
		return qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "frame not allowed in a 0-RTT packet")
	}
	if l != levelApp {
		switch f.(type) {
		case *wire.PaddingFrame, *wire.PingFrame, *wire.AckFrame, *wire.CryptoFrame:
		case *wire.ConnectionCloseFrame:
			if f.(*wire.ConnectionCloseFrame).IsApplication {
				return qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "application CONNECTION_CLOSE in a %s packet", l)
			}
		default:
			return qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "frame not allowed in a %s packet", l)
		}
	}
	switch f := f.(type) {
	case *wire.PaddingFrame, *wire.PingFrame:
	case *wire.AckFrame:
		if l == levelApp && c.mp.enabled {
			// With multipath, ACK acknowledges path 0's packets,
			// whichever path carried it (draft-ietf-quic-multipath-21
			// Section 2.2).
			if p = c.pathByID(0); p == nil {
				return nil
			}
		}
		return c.handleAck(now, p, l, f.Ranges, f.AckDelay, f.Type())
	case *wire.CryptoFrame:
		return c.handleCryptoFrame(l, f)
	case *wire.StreamFrame:
		return c.handleStreamFrame(f)
	case *wire.RepairFrame:
		return c.handleRepairFrame(f)
	case *wire.ResetStreamFrame:
		return c.handleResetStream(f)
	case *wire.StopSendingFrame:
		return c.handleStopSending(f)
	case *wire.MaxDataFrame:
		if c.streams.connSend.OnMaxData(f.Max) {
			for _, id := range c.streams.sendQueue {
				if s := c.streams.m[id]; s != nil {
					c.notifyWritable(s)
				}
			}
		}
	case *wire.MaxStreamDataFrame:
		return c.handleMaxStreamData(f)
	case *wire.MaxStreamsFrame:
		if f.Max > 1<<60 {
			return qerr.NewFrame(qerr.FrameEncodingError, f.Type(), "MAX_STREAMS above 2^60")
		}
		c.handleMaxStreams(f)
	case *wire.DataBlockedFrame:
		// Informational: our MAX_DATA follows reads.
	case *wire.StreamDataBlockedFrame:
		return c.handleStreamDataBlocked(f)
	case *wire.StreamsBlockedFrame:
		// Informational.
	case *wire.NewConnectionIDFrame:
		return c.handleNewConnectionID(0, f.Seq, f.RetirePriorTo, f.ConnID, f.ResetToken, f.Type())
	case *wire.RetireConnectionIDFrame:
		return c.handleRetireConnectionID(0, f.Seq, hdr.DstConnID, f.Type())
	case *wire.PathNewConnectionIDFrame:
		return c.handleNewConnectionID(f.PathID, f.Seq, f.RetirePriorTo, f.ConnID, f.ResetToken, f.Type())
	case *wire.PathRetireConnectionIDFrame:
		return c.handleRetireConnectionID(f.PathID, f.Seq, hdr.DstConnID, f.Type())
	case *wire.PathAckFrame:
		if err := c.mp.checkPathID(f.PathID, f.Type()); err != nil {
			return err
		}
		ap := c.pathByID(f.PathID)
		if ap == nil {
			return nil // unknown or forgotten path: ignored (Section 7)
		}
		return c.handleAck(now, ap, levelApp, f.Ranges, f.AckDelay, f.Type())
	case *wire.PathAbandonFrame, *wire.PathStatusFrame, *wire.MaxPathIDFrame,
		*wire.PathsBlockedFrame, *wire.PathCIDsBlockedFrame:
		return c.handleMultipathFrame(now, f)
	case *wire.PathChallengeFrame:
		// The answer goes back where the challenge came from, which
		// may not be the path's addresses (RFC 9000 Section 8.2.2).
		c.queuePathResponse(p, rx.d.Local, rx.d.Remote, f.Data, hdr.DstConnID)
	case *wire.PathResponseFrame:
		// Validates the path that sent the matching challenge; an
		// unsolicited response is ignored (RFC 9000 Section 8.2.3).
		c.handlePathResponse(now, f.Data)
	case *wire.ConnectionCloseFrame:
		c.handleConnectionClose(now, f)
	case *wire.HandshakeDoneFrame:
		if !c.isClient {
			return qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "HANDSHAKE_DONE from a client")
		}
		c.confirmHandshake()
	case *wire.NewTokenFrame:
		if !c.isClient {
			return qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "NEW_TOKEN from a client")
		}
		if len(f.Token) == 0 {
			return qerr.NewFrame(qerr.FrameEncodingError, f.Type(), "empty NEW_TOKEN")
		}
	default:
		// Multipath frames without negotiated multipath, or frames of
		// extensions we did not offer (RFC 9000 Section 19.21).
		return qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "frame type 0x%x not negotiated", f.Type())
	}
	return nil
}

// handleVersionNegotiation processes a Version Negotiation packet
// (RFC 9000 Section 6.2).
func (c *Conn) handleVersionNegotiation(hdr wire.Header) error {
	if !c.isClient || c.gotInitial || c.gotRetry {
		return nil
	}
	if !bytes.Equal(hdr.DstConnID, c.ids.srcCID()) || !bytes.Equal(hdr.SrcConnID, c.origDCID) {
		return nil
	}
	for _, v := range hdr.SupportedVersions {
		if v == wire.Version1 {
			return nil // must be ignored: it lists the version we use
		}
	}
	c.enterDraining(c.now, &qerr.VersionNegotiationError{Offered: hdr.SupportedVersions})
	c.state = stateClosed
	return nil
}

// handleRetry processes a Retry packet (RFC 9000 Section 17.2.5.2).
func (c *Conn) handleRetry(now time.Time, hdr wire.Header, pkt []byte) error {
	if !c.isClient || c.gotInitial || c.gotRetry || len(hdr.Token) == 0 {
		return nil
	}
	if !protection.VerifyRetryIntegrity(c.origDCID, pkt) {
		c.qlog.PacketDropped(now, qlog.PacketHeader{PacketType: "retry"}, len(pkt), "invalid_integrity_tag")
		return nil
	}
	if bytes.Equal(hdr.SrcConnID, c.origDCID) {
		return nil
	}
	c.gotRetry = true
	c.retrySCID = append([]byte(nil), hdr.SrcConnID...)
	c.token = append([]byte(nil), hdr.Token...)
	c.ids.p0().remote[0].cid = c.retrySCID
	c.setInitialKeys(c.retrySCID)
	// Send the ClientHello again in new Initial packets, and reset loss
	// recovery without a congestion signal (RFC 9002 Section 6.3).
	sp := &c.spaces[levelInitial]
	sp.sent.DeclareAllLost(func(sp0 *recovery.SentPacket) { c.onFramesLost(c.paths[0], levelInitial, sp0.Frames) })
	if c.early.keys.haveSeal {
		// The 0-RTT packets went to a server that kept no state: send
		// their data again in 0-RTT, to the new connection ID
		// (RFC 9000 Section 17.2.5.3).
		p0 := c.paths[0]
		p0.app.sent.DeclareAllLost(func(sp0 *recovery.SentPacket) { c.onFramesLost(p0, levelApp, sp0.Frames) })
	}
	c.paths[0].ptoCount = 0
	c.qlog.PacketReceived(now, 0, qlog.PacketHeader{PacketType: "retry", SCID: hdr.SrcConnID}, len(pkt), nil)
	return nil
}

// handleConnectionClose enters the draining state (RFC 9000 Section 10.2.2).
func (c *Conn) handleConnectionClose(now time.Time, f *wire.ConnectionCloseFrame) {
	var err error
	if f.IsApplication {
		err = &qerr.ApplicationError{Code: f.ErrorCode, Reason: string(f.Reason), Remote: true}
	} else {
		err = &qerr.TransportError{Code: qerr.TransportErrorCode(f.ErrorCode), FrameType: f.FrameType, Reason: string(f.Reason), Remote: true}
	}
	c.enterDraining(now, err)
}

var errNoPath = errors.New("mpquic: no usable path")
