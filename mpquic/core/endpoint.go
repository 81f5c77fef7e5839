package core

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/wire"
)

// EndpointConfig configures an Endpoint.
type EndpointConfig struct {
	// Server, when set, makes the endpoint accept connections with this
	// configuration.
	Server *Config
	// RequireRetry makes the server validate client addresses with a Retry
	// round trip before creating state (RFC 9000 Section 8.1.2).
	RequireRetry bool
	// Rand seeds the endpoint's secret keys and connection IDs. Default
	// crypto/rand.
	Rand io.Reader
}

// Endpoint routes datagrams to connections by connection ID, creates server
// connections, and answers what belongs to no connection: Version
// Negotiation (RFC 9000 Section 6), Retry (Section 8.1.2) and stateless
// resets (Section 10.3). It is sans-IO like Conn, but safe for concurrent
// use: a driver may route from one goroutine while connections run on
// others.
type Endpoint struct {
	mu        sync.Mutex
	conns     map[string]*Conn
	server    *Config
	retry     bool
	rand      io.Reader
	resetKey  [32]byte
	tokenAEAD cipher.AEAD
	closed    bool
}

// NewEndpoint creates an endpoint.
func NewEndpoint(cfg EndpointConfig) (*Endpoint, error) {
	e := &Endpoint{conns: map[string]*Conn{}, retry: cfg.RequireRetry, rand: cfg.Rand}
	if e.rand == nil {
		e.rand = cryptoRand{}
	}
	if cfg.Server != nil {
		s, err := cfg.Server.Validate()
		if err != nil {
			return nil, err
		}
		e.server = s
	}
	var tokenKey [16]byte
	if _, err := io.ReadFull(e.rand, e.resetKey[:]); err != nil {
		return nil, fmt.Errorf("mpquic: endpoint key: %w", err)
	}
	if _, err := io.ReadFull(e.rand, tokenKey[:]); err != nil {
		return nil, fmt.Errorf("mpquic: endpoint key: %w", err)
	}
	block, err := aes.NewCipher(tokenKey[:])
	if err != nil {
		return nil, err
	}
	e.tokenAEAD, err = cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Dial starts a client connection through the endpoint.
func (e *Endpoint) Dial(cfg *Config, local, remote netip.AddrPort, serverName string, now time.Time) (*Conn, error) {
	return newClientConn(cfg, e, local, remote, serverName, now)
}

// newConnID implements idHost.
func (e *Endpoint) newConnID(c *Conn) ([]byte, [16]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for range 16 {
		cid := make([]byte, ConnIDLen)
		if _, err := io.ReadFull(e.rand, cid); err != nil {
			return nil, [16]byte{}, err
		}
		if _, dup := e.conns[string(cid)]; dup {
			continue
		}
		e.conns[string(cid)] = c
		return cid, e.resetToken(cid), nil
	}
	return nil, [16]byte{}, errors.New("mpquic: no unique connection ID")
}

// retireConnID implements idHost.
func (e *Endpoint) retireConnID(cid []byte) {
	e.mu.Lock()
	delete(e.conns, string(cid))
	e.mu.Unlock()
}

// resetToken derives the stateless reset token of a connection ID
// (RFC 9000 Section 10.3.2): an HMAC under the endpoint's static key, so it
// can be recomputed after the connection's state is gone.
func (e *Endpoint) resetToken(cid []byte) [16]byte {
	m := hmac.New(sha256.New, e.resetKey[:])
	m.Write(cid)
	var t [16]byte
	copy(t[:], m.Sum(nil))
	return t
}

// Route is the result of routing one datagram.
type Route struct {
	// Conn is the connection the datagram belongs to; the driver passes
	// the datagram to its HandleDatagram.
	Conn *Conn
	// New reports that Conn was just created for a client's first Initial.
	New bool
	// Reply, if set, is a datagram to send back (Version Negotiation,
	// Retry or stateless reset); the input belongs to no connection.
	Reply *Datagram
}

// Route finds the connection of a datagram or decides what to answer.
func (e *Endpoint) Route(now time.Time, d Datagram) Route {
	dcid, isLong, err := wire.ParseConnIDs(d.Data, ConnIDLen)
	if err != nil {
		return Route{}
	}
	e.mu.Lock()
	c := e.conns[string(dcid)]
	server, closed := e.server, e.closed
	e.mu.Unlock()
	if c != nil {
		return Route{Conn: c}
	}
	if !isLong {
		return Route{Reply: e.statelessReset(d, dcid)}
	}
	if server == nil || closed {
		return Route{}
	}
	hdr, err := wire.ParseHeader(d.Data, ConnIDLen)
	if err != nil {
		return Route{}
	}
	if hdr.Version != wire.Version1 {
		if hdr.Type == wire.PacketVersionNegotiation || len(d.Data) < minInitialDatagram {
			return Route{}
		}
		vn := wire.AppendVersionNegotiation(nil, hdr.SrcConnID, hdr.DstConnID, []uint32{wire.Version1}, byte(now.UnixNano()))
		return Route{Reply: &Datagram{Local: d.Local, Remote: d.Remote, Data: vn}}
	}
	if hdr.Type != wire.PacketInitial || len(d.Data) < minInitialDatagram || len(hdr.DstConnID) < 8 {
		return Route{} // RFC 9000 Sections 7.2 and 14.1
	}
	var retrySCID, odcid []byte
	odcid = hdr.DstConnID
	if e.retry {
		if len(hdr.Token) == 0 {
			return Route{Reply: e.sendRetry(now, d, hdr)}
		}
		o, ok := e.checkToken(now, hdr.Token, d.Remote, hdr.DstConnID)
		if !ok {
			return Route{} // INVALID_TOKEN would need state; drop
		}
		odcid, retrySCID = o, append([]byte(nil), hdr.DstConnID...)
	}
	c, err = newServerConn(server, e, d.Local, d.Remote, odcid, hdr.SrcConnID, retrySCID, now)
	if err != nil {
		return Route{}
	}
	// Route the client's chosen DCID too, until the handshake ends.
	e.mu.Lock()
	if _, taken := e.conns[string(hdr.DstConnID)]; taken {
		e.mu.Unlock()
		return Route{}
	}
	e.conns[string(hdr.DstConnID)] = c
	e.mu.Unlock()
	c.routedODCID = append([]byte(nil), hdr.DstConnID...)
	return Route{Conn: c, New: true}
}

// statelessReset builds a stateless reset for a short-header datagram of an
// unknown connection (RFC 9000 Section 10.3), smaller than the trigger so
// that two endpoints cannot loop.
func (e *Endpoint) statelessReset(d Datagram, dcid []byte) *Datagram {
	size := len(d.Data) - 1
	if size < 21 {
		return nil
	}
	size = min(size, 43)
	b := make([]byte, size)
	if _, err := io.ReadFull(e.rand, b[:size-16]); err != nil {
		return nil
	}
	b[0] = 0x40 | b[0]&0x3f
	tok := e.resetToken(dcid)
	copy(b[size-16:], tok[:])
	return &Datagram{Local: d.Local, Remote: d.Remote, Data: b}
}

// Retry tokens: AES-GCM over (issue time, original DCID), bound to the
// client's address as associated data.
const tokenLifetime = 10 * time.Second

func (e *Endpoint) sendRetry(now time.Time, d Datagram, hdr wire.Header) *Datagram {
	scid := make([]byte, ConnIDLen)
	if _, err := io.ReadFull(e.rand, scid); err != nil {
		return nil
	}
	plain := binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano()))
	plain = append(plain, hdr.DstConnID...)
	nonce := make([]byte, e.tokenAEAD.NonceSize())
	if _, err := io.ReadFull(e.rand, nonce); err != nil {
		return nil
	}
	ad, _ := d.Remote.MarshalBinary()
	ad = append(ad, scid...)
	token := e.tokenAEAD.Seal(nonce, nonce, plain, ad)
	pkt := wire.AppendRetry(nil, wire.Version1, hdr.SrcConnID, scid, token)
	tag := protection.RetryIntegrityTag(hdr.DstConnID, pkt)
	pkt = append(pkt, tag[:]...)
	return &Datagram{Local: d.Local, Remote: d.Remote, Data: pkt}
}

// checkToken validates a Retry token: the client must come back from the
// same address, to the connection ID the Retry gave it, within the token's
// lifetime. It returns the original DCID.
func (e *Endpoint) checkToken(now time.Time, token []byte, remote netip.AddrPort, dcid []byte) ([]byte, bool) {
	ns := e.tokenAEAD.NonceSize()
	if len(token) < ns+16+8 {
		return nil, false
	}
	sealed := token
	ad, _ := remote.MarshalBinary()
	ad = append(ad, dcid...)
	plain, err := e.tokenAEAD.Open(nil, sealed[:ns], sealed[ns:], ad)
	if err != nil || len(plain) < 8 {
		return nil, false
	}
	issued := time.Unix(0, int64(binary.BigEndian.Uint64(plain)))
	if now.Sub(issued) > tokenLifetime || issued.After(now.Add(time.Second)) {
		return nil, false
	}
	return plain[8:], true
}

// Close stops accepting new connections.
func (e *Endpoint) Close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
}

// Conns returns the number of routed connection IDs (for tests).
func (e *Endpoint) routes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns)
}
