package core

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/streams"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
	"github.com/mpq/mpq/scheduler"
)

// maxCryptoBuffer bounds out-of-order CRYPTO data per level
// (CRYPTO_BUFFER_EXCEEDED beyond it, RFC 9000 Section 7.5).
const maxCryptoBuffer = 64 << 10

func newConn(cfg *Config, isClient bool, host idHost, now time.Time) (*Conn, error) {
	c := &Conn{cfg: cfg, isClient: isClient, now: now, created: now, lastActivity: now}
	if host == nil {
		host = randomIDs{cfg.Rand}
	}
	c.ids.init(host)
	c.mp.init()
	for l := range numLevels {
		c.crypto[l] = newCryptoStream()
	}
	for l := range c.spaces {
		c.spaces[l] = newPNSpace(0) // handshake packets are acknowledged at once
	}
	if _, err := c.issueConnID(0); err != nil {
		return nil, fmt.Errorf("mpquic: connection ID: %w", err)
	}
	ps, err := newSchedulers(cfg)
	if err != nil {
		return nil, err
	}
	c.pathSch, c.strSch = ps.path, ps.stream
	c.pktObs, _ = ps.path.(scheduler.PacketObserver)
	c.waker, _ = ps.path.(scheduler.Waker)
	c.lossPol, _ = ps.path.(scheduler.LossPolicy)
	c.rtxSizer, _ = ps.path.(scheduler.RetransmissionSizer)
	c.skipHeld, _ = ps.path.(scheduler.HeldBackSkipper)
	c.idleKeeper, _ = ps.path.(scheduler.IdleKeeper)
	c.repair.policy, _ = ps.path.(scheduler.Repairer)
	c.repair.second, _ = ps.path.(scheduler.SecondRepairer)
	c.initStreams()
	c.idleTimeout = cfg.HandshakeTimeout
	c.lastStreamAck = now
	if cfg.SendBudget != nil {
		c.budget = newBudgetConn(cfg.SendBudget)
	}
	return c, nil
}

// NewClientConn starts a client connection from local to remote. serverName
// overrides the TLS ServerName when non-empty. The first flight is ready to
// be polled when it returns.
func NewClientConn(cfg *Config, local, remote netip.AddrPort, serverName string, now time.Time) (*Conn, error) {
	return newClientConn(cfg, nil, local, remote, serverName, now)
}

func newClientConn(cfg *Config, host idHost, local, remote netip.AddrPort, serverName string, now time.Time) (*Conn, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	c, err := newConn(cfg, true, host, now)
	if err != nil {
		return nil, err
	}
	c.origDCID = make([]byte, ConnIDLen)
	if _, err := io.ReadFull(cfg.Rand, c.origDCID); err != nil {
		return nil, fmt.Errorf("mpquic: random: %w", err)
	}
	c.ids.p0().remote = []remoteCID{{seq: 0, cid: c.origDCID}}
	c.setInitialKeys(c.origDCID)
	p, err := c.newPath(0, local, remote)
	if err != nil {
		return nil, err
	}
	p.validated = true
	c.paths = []*path{p}
	c.qlog = cfg.newTrace("client", c.origDCID, now)
	if cfg.Observer != nil {
		c.obs = cfg.Observer("client")
	}
	c.traceHyStart(p)
	c.qlog.ConnectionStarted(now, local, remote, c.ids.srcCID(), c.origDCID)
	tc := cfg.TLS
	if serverName != "" {
		tc = tc.Clone()
		tc.ServerName = serverName
	}
	c.tls = tls.QUICClient(&tls.QUICConfig{TLSConfig: tc, EnableSessionEvents: true})
	if err := c.startTLS(); err != nil {
		return nil, err
	}
	return c, nil
}

// newServerConn creates the server end of a connection for a client Initial
// packet whose DCID was odcid and SCID scid. retrySCID is set when the
// client came back after a Retry.
func newServerConn(cfg *Config, host idHost, local, remote netip.AddrPort, odcid, scid, retrySCID []byte, now time.Time) (*Conn, error) {
	c, err := newConn(cfg, false, host, now)
	if err != nil {
		return nil, err
	}
	c.origDCID = append([]byte(nil), odcid...)
	c.retrySCID = retrySCID
	c.ids.p0().remote = []remoteCID{{seq: 0, cid: append([]byte(nil), scid...)}}
	initialDCID := odcid
	if retrySCID != nil {
		initialDCID = retrySCID
	}
	c.setInitialKeys(initialDCID)
	p, err := c.newPath(0, local, remote)
	if err != nil {
		return nil, err
	}
	p.validated = retrySCID != nil // a Retry token validated the address
	c.addressValidated = p.validated
	c.paths = []*path{p}
	c.qlog = cfg.newTrace("server", odcid, now)
	if cfg.Observer != nil {
		c.obs = cfg.Observer("server")
	}
	c.traceHyStart(p)
	c.qlog.ConnectionStarted(now, local, remote, c.ids.srcCID(), scid)
	c.tls = tls.QUICServer(&tls.QUICConfig{TLSConfig: cfg.TLS, EnableSessionEvents: true})
	if err := c.startTLS(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Conn) setInitialKeys(dcid []byte) {
	seal, open := protection.NewInitialKeys(dcid, c.isClient)
	k := &c.keys[levelInitial]
	k.seal, k.open, k.haveSeal, k.haveOpen = seal, open, true, true
}

// buildLocalParams fills the transport parameters we send
// (RFC 9000 Section 18.2).
func (c *Conn) buildLocalParams() {
	p := wire.DefaultTransportParameters()
	p.MaxIdleTimeout = c.cfg.MaxIdleTimeout
	p.MaxUDPPayloadSize = uint64(c.cfg.MaxUDPPayloadSize)
	p.InitialMaxData = c.cfg.InitialConnWindow
	p.InitialMaxStreamDataBidiLocal = c.cfg.InitialStreamWindow
	p.InitialMaxStreamDataBidiRemote = c.cfg.InitialStreamWindow
	p.InitialMaxStreamDataUni = c.cfg.InitialStreamWindow
	p.InitialMaxStreamsBidi = uint64(c.cfg.MaxIncomingStreams)
	p.InitialMaxStreamsUni = uint64(c.cfg.MaxIncomingUniStreams)
	p.AckDelayExponent = uint64(c.cfg.AckDelayExponent)
	p.MaxAckDelay = c.cfg.MaxAckDelay
	p.ActiveConnectionIDLimit = c.cfg.ActiveConnectionIDLimit
	p.InitialSourceConnectionID = c.ids.srcCID()
	p.HasInitialSourceConnectionID = true
	if !c.isClient {
		p.OriginalDestinationConnectionID = c.origDCID
		p.HasOriginalDestinationConnectionID = true
		tok := c.ids.p0().local[0].token
		p.StatelessResetToken = &tok
		if c.retrySCID != nil {
			p.RetrySourceConnectionID = c.retrySCID
			p.HasRetrySourceConnectionID = true
		}
	}
	p.Repair, p.RepairQ = c.cfg.Repair, c.cfg.Repair
	if !c.cfg.DisableMultipath {
		p.InitialMaxPathID, p.HasInitialMaxPathID = c.cfg.MaxPathID, true
		c.mp.offered = true
		c.mp.localMax, c.mp.localMaxSent = c.cfg.MaxPathID, c.cfg.MaxPathID
	}
	c.localParams = p
}

func (c *Conn) startTLS() error {
	c.buildLocalParams()
	c.tls.SetTransportParameters(c.localParams.Append(nil))
	c.qlogParams("local", &c.localParams)
	if err := c.tls.Start(context.Background()); err != nil {
		return fmt.Errorf("mpquic: TLS start: %w", err)
	}
	return c.processTLSEvents()
}

// processTLSEvents drains the events of crypto/tls's QUIC API.
func (c *Conn) processTLSEvents() error {
	for {
		e := c.tls.NextEvent()
		switch e.Kind {
		case tls.QUICNoEvent:
			return nil
		case tls.QUICSetReadSecret, tls.QUICSetWriteSecret:
			if err := c.installSecret(e); err != nil {
				return err
			}
		case tls.QUICWriteData:
			l, ok := levelOf(e.Level)
			if !ok {
				return qerr.New(qerr.InternalError, "TLS wrote data at level %v", e.Level)
			}
			if _, err := c.crypto[l].send.Write(e.Data); err != nil {
				return qerr.New(qerr.InternalError, "crypto stream: %v", err)
			}
		case tls.QUICTransportParameters:
			if err := c.handlePeerParams(e.Data); err != nil {
				return err
			}
		case tls.QUICTransportParametersRequired:
			c.tls.SetTransportParameters(c.localParams.Append(nil))
		case tls.QUICHandshakeDone:
			if err := c.onHandshakeComplete(); err != nil {
				return err
			}
		case tls.QUICErrorEvent:
			return tlsError(e.Err)
		case tls.QUICResumeSession:
			c.resumeSession(e.SessionState)
		case tls.QUICStoreSession:
			if err := c.storeSession(e.SessionState); err != nil {
				return err
			}
		case tls.QUICRejectedEarlyData:
			if err := c.rejectEarly(); err != nil {
				return err
			}
		}
	}
}

// tlsError maps a TLS failure to CRYPTO_ERROR with its alert
// (RFC 9001 Section 4.8).
func tlsError(err error) error {
	var alert tls.AlertError
	if errors.As(err, &alert) {
		return &qerr.TransportError{Code: qerr.CryptoError(uint8(alert)), Reason: err.Error()}
	}
	return &qerr.TransportError{Code: qerr.CryptoError(80), Reason: err.Error()} // internal_error alert
}

func levelOf(l tls.QUICEncryptionLevel) (level, bool) {
	switch l {
	case tls.QUICEncryptionLevelInitial:
		return levelInitial, true
	case tls.QUICEncryptionLevelHandshake:
		return levelHandshake, true
	case tls.QUICEncryptionLevelApplication:
		return levelApp, true
	}
	return 0, false
}

func (c *Conn) installSecret(e tls.QUICEvent) error {
	if e.Level == tls.QUICEncryptionLevelEarly {
		return c.installEarlySecret(e)
	}
	suite, err := protection.SuiteByID(e.Suite)
	if err != nil {
		return qerr.New(qerr.InternalError, "%v", err)
	}
	secret := append([]byte(nil), e.Data...)
	write := e.Kind == tls.QUICSetWriteSecret
	l, _ := levelOf(e.Level)
	switch l {
	case levelHandshake:
		keys, err := protection.NewKeys(suite, secret)
		if err != nil {
			return qerr.New(qerr.InternalError, "%v", err)
		}
		k := &c.keys[levelHandshake]
		if write {
			k.seal, k.haveSeal = keys, true
		} else {
			k.open, k.haveOpen = keys, true
		}
	case levelApp:
		c.app.null = c.cfg.SimNullProtection
		if write {
			err = c.app.installSeal(suite, secret)
			if c.isClient {
				// 1-RTT replaces 0-RTT (RFC 9001 Section 4.9.3).
				c.discardEarly()
			}
		} else {
			err = c.app.installOpen(suite, secret)
		}
		if err != nil {
			return qerr.New(qerr.InternalError, "%v", err)
		}
	}
	if !write {
		c.replayUndecryptable()
	}
	return nil
}

// handlePeerParams validates and applies the peer's transport parameters,
// including the connection ID authentication of RFC 9000 Section 7.3.
func (c *Conn) handlePeerParams(b []byte) error {
	p, err := wire.ParseTransportParameters(b, c.isClient)
	if err != nil {
		return err
	}
	if !p.HasInitialSourceConnectionID {
		return qerr.New(qerr.TransportParameterError, "missing initial_source_connection_id")
	}
	if !bytes.Equal(p.InitialSourceConnectionID, c.ids.p0().remote[0].cid) {
		return qerr.New(qerr.ProtocolViolation, "initial_source_connection_id does not match the packets")
	}
	if c.isClient {
		if !p.HasOriginalDestinationConnectionID {
			return qerr.New(qerr.TransportParameterError, "missing original_destination_connection_id")
		}
		if !bytes.Equal(p.OriginalDestinationConnectionID, c.origDCID) {
			return qerr.New(qerr.ProtocolViolation, "original_destination_connection_id mismatch")
		}
		if c.gotRetry != p.HasRetrySourceConnectionID {
			return qerr.New(qerr.TransportParameterError, "retry_source_connection_id presence does not match the handshake")
		}
		if c.gotRetry && !bytes.Equal(p.RetrySourceConnectionID, c.retrySCID) {
			return qerr.New(qerr.ProtocolViolation, "retry_source_connection_id mismatch")
		}
		if p.StatelessResetToken != nil {
			r0 := &c.ids.p0().remote[0]
			r0.token, r0.hasToken = *p.StatelessResetToken, true
			c.ids.host.peerToken(c, r0.token)
		}
	}
	if p.HasInitialMaxPathID && len(p.InitialSourceConnectionID) == 0 {
		// draft-ietf-quic-multipath-21 Section 2: multipath needs
		// non-empty connection IDs.
		return qerr.New(qerr.ProtocolViolation, "initial_max_path_id with a zero-length connection ID")
	}
	c.peerParams, c.havePeerTP = p, true
	c.qlogParams("remote", &p)
	if c.isClient && c.early.installed {
		if c.early.rejected {
			return c.applyRejectedLimits()
		}
		// 0-RTT packets keep the remembered limits until the
		// handshake completes (RFC 9000 Section 7.4.1).
		c.early.deferredLimits = true
		return nil
	}
	c.applyPeerStreamLimits()
	return nil
}

// effectiveIdleTimeout is the minimum of both idle timeouts, at least three
// PTOs (RFC 9000 Section 10.1).
func (c *Conn) effectiveIdleTimeout() time.Duration {
	t := c.cfg.MaxIdleTimeout
	if c.havePeerTP && c.peerParams.MaxIdleTimeout > 0 && (t == 0 || c.peerParams.MaxIdleTimeout < t) {
		t = c.peerParams.MaxIdleTimeout
	}
	if t == 0 {
		return 0
	}
	return max(t, 3*c.paths[0].rtt.PTO(c.peerMaxAckDelay()))
}

// peerMaxAckDelay is the peer's max_ack_delay (its default until known).
func (c *Conn) peerMaxAckDelay() time.Duration {
	if c.havePeerTP {
		return c.peerParams.MaxAckDelay
	}
	return 25 * time.Millisecond
}

func (c *Conn) onHandshakeComplete() error {
	c.tlsDone = true
	if c.state == stateHandshake {
		c.state = stateActive
	}
	c.idleTimeout = c.effectiveIdleTimeout()
	if err := c.finishEarly(); err != nil {
		return err
	}
	c.enableMultipath()
	c.emit(Event{Kind: EventHandshakeDone})
	if !c.isClient {
		c.ids.host.handshakeDone(c)
		// The server's handshake is confirmed as soon as it completes
		// (RFC 9001 Section 4.1.2).
		c.ctrl.handshakeDone = true
		c.confirmHandshake()
		if err := c.sendSessionTicket(); err != nil {
			return err
		}
	}
	return c.issueConnIDs()
}

// confirmHandshake discards the Handshake keys (RFC 9001 Section 4.9.2).
func (c *Conn) confirmHandshake() {
	if c.confirmed {
		return
	}
	c.confirmed = true
	c.discardLevel(levelInitial)
	c.discardLevel(levelHandshake)
}

// discardLevel drops the keys and packet state of the Initial or Handshake
// level (RFC 9002 Section 6.4).
func (c *Conn) discardLevel(l level) {
	k := &c.keys[l]
	if k.discarded {
		return
	}
	k.discarded, k.haveSeal, k.haveOpen = true, false, false
	sp := &c.spaces[l]
	sp.sent.Discard()
	sp.discarded = true
	sp.probes = 0
	c.handshakeSpacesGone = c.spaces[levelInitial].discarded && c.spaces[levelHandshake].discarded
	// The level's CRYPTO data is done with: free its buffers.
	c.crypto[l] = newCryptoStream()
	if p := c.pathByID(0); p != nil {
		p.ptoCount = 0
	}
	c.qlog.KeyDiscarded(c.now, l.String())
}

func newCryptoStream() cryptoStream {
	return cryptoStream{
		send: streams.NewSendStream(0, 1<<62, 1<<30),
		recv: streams.NewRecvStream(0, maxCryptoBuffer),
	}
}

// handleCryptoFrame feeds CRYPTO data to TLS (RFC 9001 Section 4.1.3).
func (c *Conn) handleCryptoFrame(l level, f *wire.CryptoFrame) error {
	cs := &c.crypto[l]
	if _, err := cs.recv.Push(f.Offset, f.Data, false); err != nil {
		var te *qerr.TransportError
		if errors.As(err, &te) && te.Code == qerr.FlowControlError {
			return qerr.NewFrame(qerr.CryptoBufferExceeded, wire.FrameTypeCrypto, "CRYPTO data beyond %d buffered bytes", maxCryptoBuffer)
		}
		return withFrameType(err, wire.FrameTypeCrypto)
	}
	var buf [4096]byte
	for {
		n, _ := cs.recv.Read(buf[:])
		if n == 0 {
			break
		}
		// The crypto stream's window only bounds buffering: slide it.
		cs.recv.WindowUpdate(c.now, 0)
		if err := cs.framing.check(buf[:n]); err != nil {
			return err
		}
		if err := c.tls.HandleData(l.tls(), buf[:n]); err != nil {
			return tlsError(err)
		}
	}
	return c.processTLSEvents()
}
