package core

import (
	"errors"
	"time"

	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
)

// Close closes the connection with an application error code and reason
// (RFC 9000 Section 10.2): a CONNECTION_CLOSE is sent at the next poll and
// the connection lingers in the closing state for three PTOs.
func (c *Conn) Close(code uint64, reason string) {
	if c.state >= stateClosing {
		return
	}
	c.closeWithError(c.now, &qerr.ApplicationError{Code: code, Reason: reason})
}

// closeWithError enters the closing state because of err: a local
// *qerr.TransportError, a local *qerr.ApplicationError, or an internal
// failure (sent as INTERNAL_ERROR).
func (c *Conn) closeWithError(now time.Time, err error) {
	if c.state >= stateClosing {
		return
	}
	f := &wire.ConnectionCloseFrame{}
	var te *qerr.TransportError
	var ae *qerr.ApplicationError
	switch {
	case errors.As(err, &te):
		f.ErrorCode, f.FrameType, f.Reason = uint64(te.Code), te.FrameType, []byte(te.Reason)
	case errors.As(err, &ae):
		f.IsApplication, f.ErrorCode, f.Reason = true, ae.Code, []byte(ae.Reason)
	default:
		f.ErrorCode, f.Reason = uint64(qerr.InternalError), []byte(err.Error())
	}
	if len(f.Reason) > 256 {
		f.Reason = f.Reason[:256]
	}
	c.closeFrame = f
	c.closeErr = err
	c.closeSend = true
	c.state = stateClosing
	c.closeUntil = now.Add(3 * c.maxPTO())
	c.qlog.ConnectionClosed(now, "local", f.ErrorCode, f.IsApplication, string(f.Reason), "")
	c.emit(Event{Kind: EventClosed, Err: err})
}

// enterDraining stops sending because the peer closed, reset or rejected
// the connection (RFC 9000 Section 10.2.2).
func (c *Conn) enterDraining(now time.Time, err error) {
	if c.state >= stateDraining {
		return
	}
	wasClosing := c.state == stateClosing
	c.state = stateDraining
	if !wasClosing {
		c.closeErr = err
		c.closeUntil = now.Add(3 * c.maxPTO())
		c.qlog.ConnectionClosed(now, "remote", 0, false, err.Error(), "")
		c.emit(Event{Kind: EventClosed, Err: err})
	}
}

// finish ends the connection for good.
func (c *Conn) finish() {
	if c.state == stateClosed {
		return
	}
	c.state = stateClosed
	c.releaseSendBuffers()
	if c.budget != nil {
		c.budget.close()
	}
	c.retireAllLocal()
	if c.routedODCID != nil {
		c.ids.host.retireConnID(c.routedODCID)
	}
	c.forgetPeerTokens()
	c.ids.host.connDone(c)
	if c.tls != nil {
		c.tls.Close()
	}
	if c.qlog != nil {
		c.qlog.Close()
	}
}

// buildClose assembles a datagram with CONNECTION_CLOSE at every level we
// can still write (RFC 9000 Section 10.2.3): before the handshake is
// confirmed the peer might not have 1-RTT keys yet. An application close is
// sent as a transport APPLICATION_ERROR in Initial and Handshake packets.
// Before the peer's address is validated it stays within the
// anti-amplification limit like every datagram (RFC 9000 Section 8.1):
// with too little room left it sends nothing.
func (c *Conn) buildClose(now time.Time, p *path, buf []byte) (Datagram, bool) {
	d := &dgram{b: buf[:0], limit: c.packetLimit(p, 0)}
	f := c.closeFrame
	for l := levelInitial; l <= levelHandshake; l++ {
		if !c.keys[l].haveSeal || c.confirmed {
			continue
		}
		lf := *f
		if f.IsApplication {
			lf = wire.ConnectionCloseFrame{ErrorCode: uint64(qerr.ApplicationErrorCode)}
		}
		c.buildFrameOnly(d, l, &c.spaces[l], c.ids.dcid(), &lf)
	}
	if c.app.haveSeal && (c.tlsDone || !c.isClient) {
		c.buildFrameOnly(d, levelApp, &p.app, c.closeDCID(p), f)
	}
	if d.n == 0 {
		return Datagram{}, false
	}
	return Datagram{Local: p.local, Remote: p.remote, Data: c.seal(now, p, d)}, true
}

// buildFrameOnly appends a packet carrying one frame.
func (c *Conn) buildFrameOnly(d *dgram, l level, sp *pnSpace, dcid []byte, f wire.Frame) {
	pk := c.startPacket(d, l, sp, dcid)
	if c.appendFrame(d, pk, f, d.left()) < 0 {
		d.abandon(pk)
		return
	}
	c.finishPayload(d, pk)
	d.n++
}

// closeDCID is the connection ID for the CONNECTION_CLOSE on path p: its
// current one, or, on a path whose IDs were retired because it was
// abandoned, the last one (the peer keeps them for a while).
func (c *Conn) closeDCID(p *path) []byte {
	if dcid, ok := c.ids.dcidFor(p.id); ok {
		return dcid
	}
	if s := c.ids.sets[p.id]; s != nil && len(s.remote) > 0 {
		return s.remote[s.active].cid
	}
	return c.ids.dcid()
}

// NextTimeout returns when HandleTimeout must be called next; the zero time
// means no timer is armed.
func (c *Conn) NextTimeout() time.Time {
	var t time.Time
	earliest := func(x time.Time) {
		if !x.IsZero() && (t.IsZero() || x.Before(t)) {
			t = x
		}
	}
	switch c.state {
	case stateClosed:
		return time.Time{}
	case stateClosing, stateDraining:
		return c.closeUntil
	}
	if c.evicted.Load() {
		return c.now
	}
	earliest(c.idleDeadline())
	earliest(c.nextSendTimer())
	now := c.now
	for _, p := range c.paths {
		lt, _, _ := c.lossTimer(now, p)
		earliest(lt)
		var buf [3]*pnSpace
		for _, sp := range c.spacesOf(p, buf[:0]) {
			earliest(sp.recv.AckDeadline())
		}
		// The pacer's time only when it is what holds the path back: a
		// pacer that would let a packet go now while the window is full
		// must not make a timer that fires now again and again (the ACK
		// that opens the window wakes the connection).
		if p.pacer != nil && c.hasNewData() {
			if nt := p.pacer.NextSendTime(now, c.maxPacketSize(p)); nt.After(now) {
				earliest(nt)
			}
		}
	}
	for _, p := range c.closing {
		earliest(p.app.recv.AckDeadline())
	}
	if c.waker != nil && c.hasNewData() {
		if w := c.waker.NextWakeup(now); w.After(now) {
			earliest(w)
		}
	}
	earliest(c.nextPathTimer())
	earliest(c.nextFailureTimer())
	if c.app.prevRead != nil {
		earliest(c.app.prevReadUntil)
	}
	return t
}

// idleDeadline is when the connection ends silently for lack of progress
// (RFC 9000 Section 10.1), zero if never. Before the handshake completes
// the client waits HandshakeTimeout after the last packet it processed,
// while the server bounds the whole handshake to HandshakeTimeout after its
// first packet, so that a peer trickling packets cannot keep a half-open
// connection, and to quietTimeout after the client's last packet, so that
// a client that went quiet frees its handshake slot within a few PTOs.
func (c *Conn) idleDeadline() time.Time {
	if c.idleTimeout <= 0 {
		return time.Time{}
	}
	if !c.tlsDone && !c.isClient {
		dl := c.created.Add(c.cfg.HandshakeTimeout)
		if q := c.quietDeadline(); q.Before(dl) {
			return q
		}
		return dl
	}
	return c.lastActivity.Add(c.idleTimeout)
}

// Handshake quiet timeout of a server: HandshakeQuietPTOs PTOs of the
// connection (RFC 9000 Section 10.1 asks at least three of an idle
// timeout), and no less than minHandshakeQuiet.
const (
	HandshakeQuietPTOs = 3
	minHandshakeQuiet  = time.Second
)

// quietDeadline is when a server connection in its handshake ends because
// its client sent nothing since lastReceived (or since its creation).
func (c *Conn) quietDeadline() time.Time {
	last := c.lastReceived
	if last.IsZero() {
		last = c.created
	}
	return last.Add(max(HandshakeQuietPTOs*c.maxPTO(), minHandshakeQuiet))
}

// HandleTimeout runs the timers that expired at now: loss detection and
// PTO, the idle timeout, the end of closing or draining, key discards.
func (c *Conn) HandleTimeout(now time.Time) {
	c.now = now
	switch c.state {
	case stateClosed:
		return
	case stateClosing, stateDraining:
		if !now.Before(c.closeUntil) {
			c.finish()
		}
		return
	}
	if c.evicted.Load() {
		// The endpoint gave the handshake's slot to a validated
		// client: end silently, as a timeout would.
		c.closeErr = ErrHandshakeEvicted
		c.qlog.ConnectionClosed(now, "local", 0, false, ErrHandshakeEvicted.Error(), "handshake_evicted")
		c.emit(Event{Kind: EventClosed, Err: ErrHandshakeEvicted})
		c.finish()
		return
	}
	if dl := c.idleDeadline(); !dl.IsZero() && !now.Before(dl) {
		// Silent close (RFC 9000 Section 10.1).
		c.quietClosed = !c.tlsDone && !c.isClient && now.Before(c.created.Add(c.cfg.HandshakeTimeout))
		err := &qerr.IdleTimeoutError{Handshake: !c.tlsDone}
		c.closeErr = err
		c.qlog.ConnectionClosed(now, "local", 0, false, err.Error(), "idle_timeout")
		c.emit(Event{Kind: EventClosed, Err: err})
		c.finish()
		return
	}
	if c.app.prevRead != nil && !now.Before(c.app.prevReadUntil) {
		c.app.prevRead = nil
	}
	c.sendTimers(now)
	if c.state >= stateClosing {
		return
	}
	for _, p := range c.paths {
		c.onLossTimeout(now, p)
	}
	c.checkPathFailures(now)
	c.failedPathTimers(now)
	c.pathTimers(now)
	c.processReplay(now)
}
