package core

import (
	"crypto/tls"
	"errors"
	"time"

	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
)

// A client's first Initial packet is authenticated, as far as Initial
// packets can be (their keys derive from the client's destination
// connection ID, RFC 9001 Section 5.2), before the server spends memory on
// it: the endpoint removes its protection and parses its frames in scratch
// space. Random bytes fail the AEAD and cost a key derivation and a
// decryption; a packet that decrypts but is not the start of a handshake is
// answered with a stateless CONNECTION_CLOSE; a genuine ClientHello then
// passes the admission limits (connections in handshake, connections in
// all) or is answered with a Retry or a refusal, all without state.

// admit decides what to do with the first Initial of a client, hdr being
// the header of the datagram's first packet: create a connection, answer
// statelessly, or drop it.
func (e *Endpoint) admit(now time.Time, server *Config, d Datagram, hdr wire.Header) Route {
	cs, ss := protection.InitialSecrets(hdr.DstConnID)
	suite, _ := protection.SuiteByID(tls.TLS_AES_128_GCM_SHA256)
	open, err := protection.NewKeys(suite, cs)
	if err != nil {
		e.count(&e.stats.Dropped)
		return Route{}
	}
	bp := e.scratch.Get().(*[]byte)
	defer e.scratch.Put(bp)
	*bp = append((*bp)[:0], d.Data[:hdr.Length]...)
	verdict := checkFirstInitial(open, *bp, hdr)
	if verdict.drop {
		e.count(&e.stats.Dropped)
		return Route{}
	}
	answer := func(code qerr.TransportErrorCode, frameType uint64, reason string) Route {
		r, err := e.statelessClose(suite, ss, d, hdr, code, frameType, reason)
		if err != nil {
			e.count(&e.stats.Dropped)
		}
		return r
	}
	if verdict.err != nil {
		e.count(&e.stats.Rejected)
		return answer(verdict.err.Code, verdict.err.FrameType, verdict.err.Reason)
	}

	var retrySCID []byte
	odcid := hdr.DstConnID
	validated := false
	if len(hdr.Token) > 0 {
		o, ok := e.checkToken(now, hdr.Token, d.Remote, hdr.DstConnID)
		if !ok {
			// The client will not accept another Retry: tell it now
			// rather than let it time out (RFC 9000 Section 8.1.2).
			e.count(&e.stats.Rejected)
			return answer(qerr.InvalidToken, 0, "invalid or expired token")
		}
		odcid, retrySCID, validated = o, append([]byte(nil), hdr.DstConnID...), true
	}

	prefix := sourcePrefix(d.Remote.Addr())
	e.mu.Lock()
	if _, taken := e.conns[string(hdr.DstConnID)]; taken {
		e.stats.Dropped++
		e.mu.Unlock()
		return Route{}
	}
	refuse := func() Route {
		e.stats.Refused++
		e.mu.Unlock()
		return answer(qerr.ConnectionRefused, 0, "server busy")
	}
	ps := e.prefixes[prefix]
	var evicted *Conn
	switch {
	case len(e.servers) >= e.limits.maxAll:
		return refuse()
	case e.server.SendBudget != nil && !e.server.SendBudget.Admits():
		// The memory budget affords no more connections.
		e.stats.BudgetRefused++
		return refuse()
	case !validated && (e.limits.requireRetry || e.handshakes >= e.limits.retryThreshold):
		e.stats.Retried++
		e.mu.Unlock()
		reply := e.retryPacket(now, d, hdr)
		if reply == nil {
			e.count(&e.stats.Dropped)
		}
		return Route{Reply: reply}
	case ps != nil && ps.n >= e.limits.perPrefix:
		// No source prefix holds more than its share of the slots.
		e.stats.PrefixRefused++
		return refuse()
	case e.handshakes >= e.limits.maxHandshakes:
		// A client that proved its address takes the slot of the
		// oldest handshake of the prefix holding the most; one that
		// did not (Retry disabled) is refused.
		if !validated {
			return refuse()
		}
		if evicted = e.evictLocked(); evicted == nil {
			return refuse()
		}
	}
	// Hold the connection's place in the limits while it is created.
	e.handshakes++
	if ps = e.prefixes[prefix]; ps == nil {
		ps = &prefixSlots{}
		e.prefixes[prefix] = ps
	}
	ps.n++
	e.mu.Unlock()

	c, err := newServerConn(server, e, d.Local, d.Remote, odcid, hdr.SrcConnID, retrySCID, now)
	e.mu.Lock()
	_, taken := e.conns[string(hdr.DstConnID)]
	if err != nil || taken {
		e.handshakes--
		if ps.n--; ps.n <= 0 && len(ps.conns) == 0 {
			delete(e.prefixes, prefix)
		}
		e.stats.Dropped++
		e.mu.Unlock()
		if c != nil {
			c.finish()
		}
		return Route{Evicted: evicted}
	}
	// Route the client's chosen DCID too, until the connection ends.
	e.conns[string(hdr.DstConnID)] = c
	c.routedODCID = append([]byte(nil), hdr.DstConnID...)
	c.slotPrefix = prefix
	e.admitted++
	c.slotSeq = e.admitted
	e.servers[c] = true
	ps.conns = append(ps.conns, c)
	e.stats.Accepted++
	e.mu.Unlock()
	return Route{Conn: c, New: true, Evicted: evicted}
}

// firstVerdict is what checkFirstInitial found: drop the datagram silently,
// or answer it with a stateless CONNECTION_CLOSE carrying err, or (neither)
// it starts a handshake.
type firstVerdict struct {
	drop bool
	err  *qerr.TransportError
}

// checkFirstInitial removes the protection of a client's first Initial
// packet, pkt (a copy: it is decrypted in place), and checks its frames:
// only those allowed in Initial packets (RFC 9000 Section 12.4), no
// acknowledgement (the server sent nothing yet), and CRYPTO data that, where
// it starts the stream, starts a ClientHello of a size TLS accepts. A
// ClientHello of several packets may arrive out of order, so a packet with
// CRYPTO data further on is accepted too.
func checkFirstInitial(open protection.Keys, pkt []byte, hdr wire.Header) firstVerdict {
	pnLen, trunc, err := protection.UnprotectHeader(open.HP, pkt, hdr.PNOffset)
	if err != nil {
		return firstVerdict{drop: true}
	}
	pn := wire.DecodePacketNumber(-1, trunc, pnLen)
	payload, err := protection.OpenPacket(open.AEAD, pkt, hdr.PNOffset+pnLen, 0, pn)
	if err != nil {
		return firstVerdict{drop: true}
	}
	if pkt[0]&0x0c != 0 {
		return firstVerdict{err: qerr.New(qerr.ProtocolViolation, "reserved bits set in long header")}
	}
	crypto := false
	for len(payload) > 0 {
		f, n, err := wire.ParseFrame(payload)
		if err != nil {
			var te *qerr.TransportError
			if errors.As(err, &te) {
				return firstVerdict{err: te}
			}
			return firstVerdict{drop: true}
		}
		payload = payload[n:]
		switch f := f.(type) {
		case *wire.PaddingFrame, *wire.PingFrame:
		case *wire.AckFrame:
			return firstVerdict{err: qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "acknowledgement before the server sent anything")}
		case *wire.ConnectionCloseFrame:
			return firstVerdict{drop: true} // the client gave up already
		case *wire.CryptoFrame:
			crypto = true
			if f.Offset+uint64(len(f.Data)) > maxCryptoBuffer {
				return firstVerdict{err: qerr.NewFrame(qerr.CryptoBufferExceeded, f.Type(), "CRYPTO data beyond %d bytes", maxCryptoBuffer)}
			}
			if f.Offset != 0 || len(f.Data) == 0 {
				continue
			}
			if f.Data[0] != hsTypeClientHello {
				return firstVerdict{err: qerr.New(qerr.CryptoError(alertUnexpectedMessage), "first handshake message of type %d, not a ClientHello", f.Data[0])}
			}
			var fr hsFramer
			if err := fr.check(f.Data); err != nil {
				var te *qerr.TransportError
				errors.As(err, &te)
				return firstVerdict{err: te}
			}
		default:
			return firstVerdict{err: qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "frame not allowed in an Initial packet")}
		}
	}
	if !crypto {
		return firstVerdict{drop: true}
	}
	return firstVerdict{}
}

// statelessClose answers a client's first Initial with an Initial packet
// carrying CONNECTION_CLOSE (RFC 9000 Section 10.2.3), protected with the
// server's Initial secret ss: the client learns at once why there will be
// no connection. The reply is far smaller than the 1200 bytes or more that
// triggered it.
func (e *Endpoint) statelessClose(suite *protection.Suite, ss []byte, d Datagram, hdr wire.Header, code qerr.TransportErrorCode, frameType uint64, reason string) (Route, error) {
	seal, err := protection.NewKeys(suite, ss)
	if err != nil {
		return Route{}, err
	}
	const pnLen = 1
	b, lengthOff, pnOff := wire.AppendLongHeader(make([]byte, 0, 128), wire.PacketInitial, wire.Version1, hdr.SrcConnID, hdr.DstConnID, nil, 0, pnLen)
	hdrLen := len(b)
	f := &wire.ConnectionCloseFrame{ErrorCode: uint64(code), FrameType: frameType, Reason: []byte(reason)}
	b = f.Append(b)
	if !wire.PutLongHeaderLength(b, lengthOff, len(b)-pnOff+seal.AEAD.Overhead()) {
		return Route{}, errors.New("mpquic: close packet length")
	}
	b, err = protection.SealPacket(seal.AEAD, seal.HP, b, hdrLen, pnOff, pnLen, 0, 0)
	if err != nil {
		return Route{}, err
	}
	return Route{Reply: &Datagram{Local: d.Local, Remote: d.Remote, Data: b}}, nil
}
