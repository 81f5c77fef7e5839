package core

import (
	"crypto/tls"
	"time"

	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/internal/streams"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
	"github.com/mpq/mpq/mpquic/qlog"
)

// Session resumption and 0-RTT (RFC 9001 Section 4.6, RFC 9000 Section
// 7.4.1).
//
// A server with Config.SessionTickets or Config.Allow0RTT sends one session
// ticket after its handshake, carrying the transport parameters it sent
// (wire.Remembered, in the ticket's Extra). A client stores every ticket it
// receives in its TLS ClientSessionCache with the server's parameters
// appended, and crypto/tls resumes with it on the next connection to the
// same server name.
//
// 0-RTT: when the ticket allows early data and both ends set Allow0RTT, the
// client gets 0-RTT keys at its first flight. Only streams the application
// opens with OpenEarlyStream before the handshake completes exist then, so
// 0-RTT packets carry nothing the application did not mark. They carry
// STREAM frames only (no ACK, RFC 9000 Section 12.4), within the remembered
// flow control limits, in path 0's application packet number space, which
// 1-RTT packets continue. The server accepts 0-RTT only when its current
// limits are at least the ones in the ticket; otherwise, or when TLS
// rejects the early data, the client declares its 0-RTT packets lost and
// their data goes again in 1-RTT packets. The client drops its 0-RTT keys
// when it installs the 1-RTT ones, the server when the first 1-RTT packet
// arrives (RFC 9001 Section 4.9.3). No path other than path 0 opens before
// the handshake completes (multipath is enabled then).

// earlyState is the connection's 0-RTT state.
type earlyState struct {
	keys levelKeys // seal (client) or open (server)
	// offered: the client's resumed ticket allows 0-RTT and Allow0RTT is
	// set (crypto/tls then offers early data).
	offered bool
	// remembered are the server's parameters stored with the ticket.
	remembered wire.Remembered
	// rejected: the server declined the early data (client), or the
	// client's ticket did not allow it (server).
	rejected bool
	// accepted: the server's TLS accepted early data (server: 0-RTT read
	// keys installed; client: the handshake completed without rejection).
	accepted bool
	// installed: the client installed 0-RTT keys (and applied the
	// remembered limits).
	installed bool
	// deferredLimits: the client received the server's new transport
	// parameters while sending 0-RTT; they apply at handshake completion.
	deferredLimits bool
	// packetsSent and packetsReceived count 0-RTT packets, streamBytes
	// the stream bytes the client's 0-RTT packets carried.
	packetsSent, packetsReceived, streamBytes uint64
	// ticketsStored counts the session tickets the client stored.
	ticketsStored int
}

// EarlyDataState says what became of 0-RTT on a connection.
type EarlyDataState struct {
	// Offered: the client had a ticket allowing 0-RTT and offered early
	// data (client), or the client offered it (server: a 0-RTT packet
	// arrived or early keys were installed).
	Offered bool
	// Accepted: the server accepted the early data. Meaningful once the
	// handshake completed.
	Accepted bool
	// Resumed: the TLS handshake resumed a session.
	Resumed bool
	// PacketsSent and PacketsReceived count 0-RTT packets; StreamBytesSent
	// is the stream data the client's 0-RTT packets carried (with
	// retransmissions).
	PacketsSent, PacketsReceived, StreamBytesSent uint64
}

// EarlyData reports the state of session resumption and 0-RTT.
func (c *Conn) EarlyData() EarlyDataState {
	s := EarlyDataState{
		Offered:         c.early.offered,
		Accepted:        c.early.accepted,
		PacketsSent:     c.early.packetsSent,
		PacketsReceived: c.early.packetsReceived,
		StreamBytesSent: c.early.streamBytes,
	}
	if c.tlsDone {
		s.Resumed = c.tls.ConnectionState().DidResume
	}
	return s
}

// CanSendEarly reports whether a stream opened now with OpenEarlyStream
// may carry data in 0-RTT packets (the client has 0-RTT keys and the
// handshake has not completed).
func (c *Conn) CanSendEarly() bool {
	return c.isClient && !c.tlsDone && c.early.keys.haveSeal
}

// sendingEarly reports whether the client's sending limits are the
// remembered ones: it has 0-RTT keys and the handshake is not complete.
func (c *Conn) sendingEarly() bool { return c.CanSendEarly() }

// resumeSession handles crypto/tls's QUICResumeSession event. A client
// looks for the parameters it stored with the ticket and declines 0-RTT
// without them; a server declines 0-RTT unless Allow0RTT is set and its
// current limits are at least those it sent with the ticket.
func (c *Conn) resumeSession(s *tls.SessionState) {
	r, ok := wire.FindRemembered(s.Extra)
	if c.isClient {
		if !ok || !c.cfg.Allow0RTT {
			s.EarlyData = false
		}
		if s.EarlyData {
			c.early.offered, c.early.remembered = true, r
		}
		return
	}
	if !s.EarlyData {
		return
	}
	now := wire.RememberedOf(&c.localParams)
	if !ok || !c.cfg.Allow0RTT || now.Reduced(&r) != "" {
		s.EarlyData = false
		c.early.rejected = true
	}
}

// storeSession handles QUICStoreSession (client): the ticket is stored
// with the server's transport parameters of this connection.
func (c *Conn) storeSession(s *tls.SessionState) error {
	if !c.havePeerTP {
		return nil
	}
	r := wire.RememberedOf(&c.peerParams)
	s.Extra = append(s.Extra, r.Append(nil))
	if err := c.tls.StoreSession(s); err != nil {
		return qerr.New(qerr.InternalError, "storing the session ticket: %v", err)
	}
	c.early.ticketsStored++
	return nil
}

// sendSessionTicket sends the server's ticket once the handshake completed.
func (c *Conn) sendSessionTicket() error {
	if c.isClient || !(c.cfg.SessionTickets || c.cfg.Allow0RTT) || c.cfg.TLS.SessionTicketsDisabled {
		return nil
	}
	r := wire.RememberedOf(&c.localParams)
	err := c.tls.SendSessionTicket(tls.QUICSessionTicketOptions{EarlyData: c.cfg.Allow0RTT, Extra: [][]byte{r.Append(nil)}})
	if err != nil {
		return qerr.New(qerr.InternalError, "session ticket: %v", err)
	}
	return nil
}

// installEarlySecret installs the 0-RTT write (client) or read (server)
// key.
func (c *Conn) installEarlySecret(e tls.QUICEvent) error {
	suite, err := protection.SuiteByID(e.Suite)
	if err != nil {
		return qerr.New(qerr.InternalError, "%v", err)
	}
	keys, err := protection.NewKeys(suite, append([]byte(nil), e.Data...))
	if err != nil {
		return qerr.New(qerr.InternalError, "%v", err)
	}
	k := &c.early.keys
	if k.discarded {
		return nil
	}
	if e.Kind == tls.QUICSetWriteSecret {
		if !c.isClient {
			return qerr.New(qerr.InternalError, "0-RTT write key on a server")
		}
		k.seal, k.haveSeal = keys, true
		c.early.installed = true
		// Until the handshake completes, streams and flow control follow
		// the remembered parameters (RFC 9000 Section 7.4.1).
		c.peerParams = wire.DefaultTransportParameters()
		c.early.remembered.Apply(&c.peerParams)
		c.applyPeerStreamLimits()
		return nil
	}
	if c.isClient {
		return qerr.New(qerr.InternalError, "0-RTT read key on a client")
	}
	k.open, k.haveOpen = keys, true
	c.early.offered, c.early.accepted = true, true
	c.emit(Event{Kind: EventEarlyData})
	c.replayUndecryptable()
	return nil
}

// discardEarly drops the 0-RTT keys (RFC 9001 Section 4.9.3).
func (c *Conn) discardEarly() {
	k := &c.early.keys
	if k.discarded || !k.haveSeal && !k.haveOpen {
		k.discarded = true
		return
	}
	k.discarded, k.haveSeal, k.haveOpen = true, false, false
	c.qlog.KeyDiscarded(c.now, "0RTT")
}

// rejectEarly handles QUICRejectedEarlyData (client): the 0-RTT keys go,
// and every 0-RTT packet is declared lost without a congestion signal, so
// that its data goes again in 1-RTT packets.
// The server's new transport parameters, when they came, replace the
// remembered ones at once, lower ones included: nothing goes in 0-RTT any
// more, and the client must not keep the larger remembered limits
// (RFC 9000 Section 7.4.1).
func (c *Conn) rejectEarly() error {
	c.early.rejected = true
	c.discardEarly()
	if p0 := c.pathByID(0); p0 != nil {
		p0.app.sent.DeclareAllLost(func(sp *recovery.SentPacket) { c.onFramesLost(p0, levelApp, sp.Frames) })
		p0.ptoCount = 0
	}
	if !c.early.deferredLimits {
		return nil
	}
	c.early.deferredLimits = false
	return c.applyRejectedLimits()
}

// applyRejectedLimits sets the client's stream and flow control limits to
// the server's transport parameters after the server rejected 0-RTT. The
// data sent in 0-RTT goes again in 1-RTT packets, whatever the flow control
// limits (as retransmissions), so a server whose new limits are below what
// was already sent ends the connection here with an error naming the
// limit, rather than with the server's FLOW_CONTROL_ERROR or
// STREAM_LIMIT_ERROR.
func (c *Conn) applyRejectedLimits() error {
	pp, sm := &c.peerParams, &c.streams
	for d, lim := range [2]uint64{pp.InitialMaxStreamsBidi, pp.InitialMaxStreamsUni} {
		if sm.nextLocal[d] > lim {
			return qerr.New(qerr.InternalError, "0-RTT rejected and the server's stream limit %d is below the %d streams opened", lim, sm.nextLocal[d])
		}
		sm.localLimit[d] = lim
	}
	if !sm.connSend.SetMax(pp.InitialMaxData) {
		return qerr.New(qerr.InternalError, "0-RTT rejected and the server's initial_max_data %d is below the data sent in 0-RTT", pp.InitialMaxData)
	}
	for _, s := range sm.m {
		if s.send == nil {
			continue
		}
		lim := pp.InitialMaxStreamDataUni
		if streams.IsBidi(s.id) {
			lim = pp.InitialMaxStreamDataBidiRemote
		}
		if !s.send.SetMaxStreamData(lim) {
			return qerr.New(qerr.InternalError, "0-RTT rejected and the server's stream data limit %d is below the data sent in 0-RTT on stream %d", lim, s.id)
		}
	}
	return nil
}

// finishEarly runs when the client's handshake completes after it sent
// 0-RTT: the server's new parameters replace the remembered ones. A server
// that accepted 0-RTT must not have reduced them (RFC 9000 Section 7.4.1).
func (c *Conn) finishEarly() error {
	if !c.isClient || !c.early.offered {
		return nil
	}
	c.early.accepted = !c.early.rejected
	if !c.early.deferredLimits {
		return nil
	}
	c.early.deferredLimits = false
	now := wire.RememberedOf(&c.peerParams)
	if c.early.accepted {
		if name := now.Reduced(&c.early.remembered); name != "" && name != "max_udp_payload_size" {
			return qerr.New(qerr.ProtocolViolation, "server accepted 0-RTT and reduced %s", name)
		}
	}
	sm := &c.streams
	for d, lim := range [2]uint64{c.peerParams.InitialMaxStreamsBidi, c.peerParams.InitialMaxStreamsUni} {
		if sm.nextLocal[d] > lim {
			return qerr.New(qerr.InternalError, "0-RTT rejected and the server's stream limit %d is below the %d streams opened", lim, sm.nextLocal[d])
		}
		sm.localLimit[d] = max(sm.localLimit[d], lim)
	}
	sm.connSend.OnMaxData(c.peerParams.InitialMaxData)
	for _, s := range sm.m {
		if s.send == nil {
			continue
		}
		if streams.IsBidi(s.id) {
			s.send.OnMaxStreamData(c.peerParams.InitialMaxStreamDataBidiRemote)
		} else {
			s.send.OnMaxStreamData(c.peerParams.InitialMaxStreamDataUni)
		}
		c.notifyWritable(s)
	}
	return nil
}

// handleEarlyPacket decrypts a 0-RTT packet (server) and processes its
// frames in path 0's application packet number space (RFC 9000 Section
// 12.3). Clients drop 0-RTT packets; so does a server without 0-RTT keys
// (buffered while the keys may still come).
func (c *Conn) handleEarlyPacket(now time.Time, rx *rxDatagram, p *path, hdr wire.Header, pkt []byte) error {
	drop := func(reason string) error {
		c.qlog.PacketDropped(now, qlog.PacketHeader{PacketType: "0RTT"}, len(pkt), reason)
		return nil
	}
	if c.isClient || p == nil || p.id != 0 {
		return drop("unexpected")
	}
	k := &c.early.keys
	if !k.haveOpen {
		if !k.discarded && !c.tlsDone && !c.early.rejected {
			rx.account(p)
			c.bufferUndecryptable(pkt, rx)
			return nil
		}
		return drop("key_unavailable")
	}
	rx.account(p)
	sp := &p.app
	pn, payload, ok, err := c.openLong(now, k.open, sp, "0RTT", hdr, pkt)
	if !ok || err != nil {
		return err
	}
	c.early.packetsReceived++
	rx.early = true
	defer func() { rx.early = false }()
	return c.processPayload(now, rx, p, levelApp, sp, hdr, pn, payload, len(pkt))
}

// allowedInEarly reports whether a frame may come in a 0-RTT packet: not
// ACK, CRYPTO, HANDSHAKE_DONE, NEW_TOKEN, PATH_RESPONSE and
// RETIRE_CONNECTION_ID (RFC 9000 Section 12.4, Table 3), nor the frames of
// the multipath extension, which are 1-RTT only
// (draft-ietf-quic-multipath-21 Section 4).
func allowedInEarly(f wire.Frame) bool {
	switch f.(type) {
	case *wire.AckFrame, *wire.CryptoFrame, *wire.HandshakeDoneFrame, *wire.NewTokenFrame,
		*wire.PathResponseFrame, *wire.RetireConnectionIDFrame,
		*wire.PathAckFrame, *wire.PathAbandonFrame, *wire.PathStatusFrame,
		*wire.PathNewConnectionIDFrame, *wire.PathRetireConnectionIDFrame,
		*wire.MaxPathIDFrame, *wire.PathsBlockedFrame, *wire.PathCIDsBlockedFrame,
		*wire.RepairFrame:
		return false
	}
	return true
}
