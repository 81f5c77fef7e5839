package core

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// ErrUnreachable is the error, wrapped with details, of a connection or a
// connection attempt that failed on ICMP destination unreachable errors.
var ErrUnreachable = errors.New("mpquic: peer unreachable")

// unreachableLimit is how many destination unreachable errors in a row,
// with no packet received on the path in between, make an established path
// fail. One is enough before the path has carried anything (a connection
// attempt, a path being validated): then the error is the only answer
// there will be.
const unreachableLimit = 3

// HandleUnreachable reports an ICMP or ICMPv6 destination unreachable error
// (port, host, network or administratively unreachable) that the socket at
// local received for a datagram sent to remote; quoted is the start of
// that datagram as the error quotes it, and reason says what the error
// was. An error that does not quote a connection ID the connection sends
// with is ignored, as an off-path attacker could forge it.
//
// Before the handshake completed, or on a path still being validated, one
// error fails the connection attempt or the path. On an established path,
// unreachableLimit errors in a row fail the path: it is abandoned if other
// paths remain, otherwise the connection ends without a CONNECTION_CLOSE
// that nobody would receive.
func (c *Conn) HandleUnreachable(now time.Time, local, remote netip.AddrPort, quoted []byte, reason string) {
	c.now = now
	if c.state >= stateClosing || !c.quotesOurPacket(quoted) {
		return
	}
	var p *path
	for _, q := range c.paths {
		if q.local == local && q.remote == remote {
			p = q
			break
		}
	}
	if p == nil {
		return
	}
	p.unreachable++
	err := fmt.Errorf("%w: %s from %v", ErrUnreachable, reason, remote)
	switch {
	case !c.tlsDone:
		c.closeSilently(now, err)
	case p.state == pathValidating:
		c.abandonPath(p, uint64(qerr.PathUnstableOrPoor), false)
	case p.unreachable < unreachableLimit:
	case len(c.paths) > 1 && c.mp.enabled:
		c.abandonPath(p, uint64(qerr.PathUnstableOrPoor), false)
	default:
		c.closeSilently(now, err)
	}
}

// quotesOurPacket reports whether quoted starts with a packet we sent:
// its destination connection ID is one the peer gave us (or, for a client
// before the server answered, the one it chose).
func (c *Conn) quotesOurPacket(quoted []byte) bool {
	if len(quoted) == 0 {
		return false
	}
	var dcid []byte // of a long header; nil for a short one
	if quoted[0]&0x80 != 0 {
		// Byte 0, the version, the DCID with its length (RFC 8999).
		if len(quoted) < 6 || len(quoted) < 6+int(quoted[5]) {
			return false
		}
		dcid = quoted[6 : 6+int(quoted[5])]
	}
	for _, s := range c.ids.sets {
		for _, r := range s.remote {
			if len(r.cid) == 0 {
				continue
			}
			if dcid != nil && bytes.Equal(dcid, r.cid) {
				return true
			}
			if dcid == nil && len(quoted) > len(r.cid) && bytes.Equal(quoted[1:1+len(r.cid)], r.cid) {
				return true
			}
		}
	}
	return dcid != nil && c.isClient && bytes.Equal(dcid, c.origDCID)
}

// closeSilently ends the connection at once, without a CONNECTION_CLOSE:
// the peer cannot be reached.
func (c *Conn) closeSilently(now time.Time, err error) {
	c.closeErr = err
	c.qlog.ConnectionClosed(now, "local", 0, false, err.Error(), "unreachable")
	c.emit(Event{Kind: EventClosed, Err: err})
	c.finish()
}

// UnreachableConn returns the connection that sent the long-header packet
// an ICMP error quotes, found by the source connection ID, which is ours;
// nil for other packets. A short header carries only the peer's connection
// ID: the driver asks the connections of the socket itself.
func (e *Endpoint) UnreachableConn(quoted []byte) *Conn {
	if len(quoted) < 6 || quoted[0]&0x80 == 0 {
		return nil
	}
	i := 6 + int(quoted[5])
	if len(quoted) <= i || len(quoted) < i+1+int(quoted[i]) {
		return nil
	}
	scid := quoted[i+1 : i+1+int(quoted[i])]
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.conns[string(scid)]
}
