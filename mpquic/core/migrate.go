package core

import (
	"bytes"
	"io"
	"net/netip"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
)

// Peer address changes on an existing path (RFC 9000 Section 9.3): a NAT
// rebinding, or a client that migrates a path to a new address with the
// same path ID (draft-ietf-quic-multipath-21 Section 3.1.3: "MUST be
// treated as path migration"). The server follows the client to the
// address of the highest-numbered non-probing packet, validates it with
// PATH_CHALLENGE and, until the answer, sends at most three times what it
// received from it. The path keeps carrying data meanwhile.

// migration is a path's state while the peer's new address is validated.
type migration struct {
	// active: a PATH_CHALLENGE for the new address is outstanding.
	active bool
	// prevLocal, prevRemote are the last validated addresses, restored if
	// the new one fails validation (RFC 9000 Section 9.3.2); hasPrev
	// tells whether there are any.
	prevLocal, prevRemote netip.AddrPort
	hasPrev               bool
	// resetEstimators: the peer's IP address changed, not only its port,
	// so the congestion controller and RTT estimator start afresh once
	// the address is validated (RFC 9000 Section 9.4).
	resetEstimators bool
	// peerDCID is the destination connection ID (one of ours) of the
	// highest-numbered 1-RTT packet received on the path so far.
	peerDCID []byte
}

// isProbingFrame reports whether f is a probing frame (RFC 9000 Section
// 9.1). PATH_NEW_CONNECTION_ID counts as probing like NEW_CONNECTION_ID,
// of which it is the multipath form.
func isProbingFrame(f wire.Frame) bool {
	switch f.(type) {
	case *wire.PathChallengeFrame, *wire.PathResponseFrame, *wire.NewConnectionIDFrame,
		*wire.PathNewConnectionIDFrame, *wire.PaddingFrame:
		return true
	}
	return false
}

// maybeMigrate runs for a 1-RTT packet of the server's path p: if it
// arrived from other addresses than p's, is the highest-numbered packet of
// the path so far and carries a non-probing frame, the peer moved there
// (RFC 9000 Section 9.3) and p follows it. largest is the largest packet
// number received on p before this one (-1 if none), dcid the packet's
// destination connection ID.
func (c *Conn) maybeMigrate(now time.Time, p *path, rx *rxDatagram, pn uint64, largest int64, nonProbing bool, dcid []byte) error {
	if c.isClient || int64(pn) <= largest || rx.early || p.state == pathClosing {
		return nil
	}
	newDCID := c.newPeerDCID(p, dcid)
	if rx.d.Remote == p.remote && rx.d.Local == p.local {
		p.migration.peerDCID = append(p.migration.peerDCID[:0], dcid...)
		return nil
	}
	if !nonProbing {
		// A probe from other addresses (answered by
		// queuePathResponse) leaves the path where it is, and the
		// connection ID the peer uses at its addresses with it.
		return nil
	}
	p.migration.peerDCID = append(p.migration.peerDCID[:0], dcid...)
	if newDCID {
		// The peer moved with a new connection ID: so do we, so that
		// no connection ID of ours is seen at both addresses
		// (RFC 9000 Section 9.5). With none to spare we keep ours,
		// as after a NAT rebinding, where the peer's stays the same.
		c.rotateDCID(p.id)
	}
	if !p.migration.active && p.validated {
		p.migration.prevLocal, p.migration.prevRemote, p.migration.hasPrev = p.local, p.remote, true
	}
	if rx.d.Remote.Addr() != p.remote.Addr() {
		p.migration.resetEstimators = true
	}
	p.local, p.remote = rx.d.Local, rx.d.Remote
	// Anti-amplification for the new address (RFC 9000 Section 9.3.1):
	// count afresh from this datagram.
	p.validated = false
	p.bytesReceived, p.bytesSentPre = uint64(rx.size), 0
	if _, err := io.ReadFull(c.cfg.Rand, p.challengeData[:]); err != nil {
		return qerr.New(qerr.InternalError, "random: %v", err)
	}
	p.migration.active = true
	p.challengeSend = true
	p.challengeTries = 0
	p.challengeNext = time.Time{}
	p.challengeDeadline = now.Add(max(3*p.rtt.PTO(0), 6*recovery.DefaultInitialRTT))
	if c.qlog != nil {
		c.qlog.PathStateUpdated(now, p.id, "validating", p.local, p.remote)
	}
	return nil
}

// migrationValidated ends the validation of a migrated path's new address
// when data answers its challenge; it reports whether it did.
func (c *Conn) migrationValidated(now time.Time, p *path, data [8]byte) bool {
	if !p.migration.active || p.challengeTries == 0 || p.challengeData != data {
		return false
	}
	p.validated = true
	p.challengeSend = false
	p.challengeNext, p.challengeDeadline = time.Time{}, time.Time{}
	if p.migration.resetEstimators {
		c.resetEstimators(p)
	}
	p.migration = migration{}
	c.qlogPathState(now, p)
	return true
}

// migrationTimers repeats a migrated path's challenge and, at its
// deadline, goes back to the last validated addresses.
func (c *Conn) migrationTimers(now time.Time, p *path) {
	if !p.migration.active {
		return
	}
	if !p.challengeDeadline.IsZero() && !now.Before(p.challengeDeadline) {
		if p.migration.hasPrev {
			p.local, p.remote = p.migration.prevLocal, p.migration.prevRemote
			p.validated = true
		}
		p.challengeSend = false
		p.challengeNext, p.challengeDeadline = time.Time{}, time.Time{}
		p.migration = migration{}
		c.qlogPathState(now, p)
		return
	}
	if !p.challengeNext.IsZero() && !now.Before(p.challengeNext) {
		p.challengeSend = true
		p.challengeNext = time.Time{}
	}
}

// resetEstimators gives the path a new congestion controller, pacer and
// RTT estimator, as for a new path (RFC 9000 Section 9.4).
func (c *Conn) resetEstimators(p *path) {
	cc, err := c.newController()
	if err != nil {
		// The controller's name was checked when the path was made.
		return
	}
	c.ccGroup.Leave(p.cc)
	p.cc, p.ccState = cc, cc.State()
	p.rater, _ = cc.(congestion.PacingRater)
	p.appLim, _ = cc.(congestion.AppLimitedObserver)
	c.traceHyStart(p)
	p.rtt = recovery.NewRTT(c.cfg.InitialRTT)
	if p.pacer != nil {
		p.pacer = newPacer(c.cfg)
	}
}

// newPeerDCID reports whether dcid, the destination connection ID (one
// of ours) of a 1-RTT packet of the server's path p, is not the one the
// peer last used at p's addresses (the handshake's on path 0 before any
// 1-RTT packet); false when that is not known.
func (c *Conn) newPeerDCID(p *path, dcid []byte) bool {
	prev := p.migration.peerDCID
	if prev == nil && p.id == 0 && !c.isClient {
		prev = c.ids.srcCID()
	}
	return prev != nil && !bytes.Equal(prev, dcid)
}

// rotateDCID moves path pathID to another of the peer's connection IDs
// (spareDCID's) and retires the one in use, if the peer gave one to spare.
func (c *Conn) rotateDCID(pathID uint64) {
	s := c.ids.set(pathID)
	i, ok := c.ids.spareDCID(pathID)
	if !ok {
		return
	}
	old := &s.remote[s.active]
	c.retireRemote(old)
	c.ids.retireQueue = append(c.ids.retireQueue, cidKey(pathID, old.seq))
	c.ctrl.retire = true
	s.active = i
}
