package core

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
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
	// RequireRetry makes the server validate every client's address with
	// a Retry round trip before creating state (RFC 9000 Section 8.1.2).
	RequireRetry bool
	// RetryThreshold is the number of connections in their handshake from
	// which the server validates new clients' addresses with Retry before
	// creating state for them (RFC 9000 Section 8.1.2 allows it under
	// load). Default 64; negative: never (unless RequireRetry).
	RetryThreshold int
	// MaxHandshakes is the number of connections in their handshake from
	// which the server refuses new connections, with a stateless
	// CONNECTION_CLOSE of code CONNECTION_REFUSED, even from validated
	// addresses. Default 512; negative: no limit. When they are all
	// taken, a client that followed a Retry (its address validated)
	// takes the slot of the oldest handshake of the source prefix that
	// holds the most; a server connection whose client went quiet in its
	// handshake frees its slot after HandshakeQuietPTOs PTOs.
	MaxHandshakes int
	// MaxHandshakesPerPrefix is the number of handshake slots one source
	// prefix (a /24 for IPv4, a /48 for IPv6) may hold: from there, its
	// new connections are refused with CONNECTION_REFUSED. Default
	// MaxHandshakes/8, at least 1; negative: no limit.
	MaxHandshakesPerPrefix int
	// MaxConns is the number of server connections (in their handshake
	// or established, until their state is gone) from which new
	// connections are refused likewise. Default 4096; negative: no limit.
	MaxConns int
	// ResetKey, when set, is the secret the stateless reset tokens derive
	// from (RFC 9000 Section 10.3.2), so that a server restarted with the
	// same key can still reset the connections of its previous run. At
	// least 16 bytes; default a random key.
	ResetKey []byte
	// ResetRate bounds the stateless resets sent, per second, with bursts
	// of as many (RFC 9000 Section 10.3.3). Default 100; negative: none
	// are sent.
	ResetRate int
	// Rand seeds the endpoint's secret keys and connection IDs. Default
	// crypto/rand.
	Rand io.Reader
}

// ErrHandshakeEvicted is why a server connection ended whose handshake
// slot went to a validated client (EndpointConfig.MaxHandshakes).
var ErrHandshakeEvicted = errors.New("mpquic: handshake evicted: its slot went to a validated client")

// Endpoint defaults.
const (
	DefaultRetryThreshold = 64
	DefaultMaxHandshakes  = 512
	DefaultMaxConns       = 4096
	DefaultResetRate      = 100
)

// EndpointStats are the endpoint's counters since it was created, and its
// connection counts now.
type EndpointStats struct {
	// Accepted counts the server connections created.
	Accepted uint64
	// Retried counts the Retry packets sent (RFC 9000 Section 8.1.2).
	Retried uint64
	// Refused counts the new connections refused with CONNECTION_REFUSED
	// because of MaxHandshakes, MaxHandshakesPerPrefix or MaxConns;
	// PrefixRefused those because their source prefix held its share.
	Refused, PrefixRefused uint64
	// BudgetRefused counts the new connections refused because the
	// server's SendBudget affords no more (SendBudget.Admits); they
	// count in Refused too.
	BudgetRefused uint64
	// Reclaimed counts the connections closed to return send buffer
	// memory to the SendBudget (ErrSendReclaimed).
	Reclaimed uint64
	// Evicted counts the handshakes ended to give their slot to a
	// validated client when MaxHandshakes were taken.
	Evicted uint64
	// QuietTimeouts counts the handshakes ended because their client
	// went quiet (HandshakeQuietPTOs PTOs without a packet).
	QuietTimeouts uint64
	// Rejected counts the first Initial packets answered with another
	// stateless CONNECTION_CLOSE: an invalid Retry token
	// (INVALID_TOKEN), frames a client cannot send first
	// (FRAME_ENCODING_ERROR, PROTOCOL_VIOLATION), data that is not a
	// ClientHello (CRYPTO_ERROR with the TLS alert).
	Rejected uint64
	// Dropped counts the datagrams that belong to no connection and were
	// not answered: unparsable, too short, not decryptable, or a
	// stateless reset over the rate limit.
	Dropped uint64
	// Resets counts the stateless resets sent.
	Resets uint64
	// VersionNegotiations counts the Version Negotiation packets sent.
	VersionNegotiations uint64
	// Handshakes is the number of server connections in their handshake
	// now, Conns of all server connections.
	Handshakes, Conns int
}

// Endpoint routes datagrams to connections by connection ID, creates server
// connections, and answers what belongs to no connection: Version
// Negotiation (RFC 9000 Section 6), Retry (Section 8.1.2), stateless
// CONNECTION_CLOSE and stateless resets (Section 10.3). It is sans-IO like
// Conn, but safe for concurrent use: a driver may route from one goroutine
// while connections run on others.
//
// A client's first Initial costs no state until it is known to be one: the
// endpoint removes its Initial protection and parses its frames first
// (admit.go), so that garbage costs a decryption and nothing else.
type Endpoint struct {
	mu    sync.Mutex
	conns map[string]*Conn
	// peerTokens maps the stateless reset tokens of the peers' connection
	// IDs to their connection.
	peerTokens map[[16]byte]*Conn
	server     *Config
	closed     bool
	// servers maps each server connection to whether it is still in its
	// handshake (and so counted in handshakes and in its prefix's slots).
	servers    map[*Conn]bool
	handshakes int
	// prefixes holds, per source prefix, the handshake slots it holds;
	// admitted counts the server connections created (their slotSeq).
	prefixes  map[netip.Prefix]*prefixSlots
	admitted  uint64
	limits    admission
	rand      io.Reader
	resetKey  [32]byte
	resets    tokenBucket
	tokenAEAD cipher.AEAD
	stats     EndpointStats
	// scratch holds a copy of the first Initial while it is decrypted.
	scratch sync.Pool
}

// SetQlogReferenceTime sets the qlog reference time (Config.QlogReferenceTime)
// of the server connections created from now on: an experiment whose time
// zero comes after a first connection (0-RTT's warm-up) sets it then.
func (e *Endpoint) SetQlogReferenceTime(t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.server != nil {
		e.server.QlogReferenceTime = t
	}
}

// admission holds the limits on new server connections.
type admission struct {
	requireRetry                          bool
	retryThreshold, maxHandshakes, maxAll int
	perPrefix                             int
}

// prefixSlots are the handshake slots a source prefix holds: n of them,
// counting those reserved while a connection is created; conns are its
// connections in their handshake, oldest first.
type prefixSlots struct {
	n     int
	conns []*Conn
}

// sourcePrefix is the prefix that shares handshake slots: the /24 of an
// IPv4 address (IPv4-mapped IPv6 included), the /48 of an IPv6 address.
func sourcePrefix(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := 48
	if a.Is4() {
		bits = 24
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return netip.Prefix{}
	}
	return p
}

// NewEndpoint creates an endpoint.
func NewEndpoint(cfg EndpointConfig) (*Endpoint, error) {
	e := &Endpoint{conns: map[string]*Conn{}, peerTokens: map[[16]byte]*Conn{}, servers: map[*Conn]bool{},
		prefixes: map[netip.Prefix]*prefixSlots{}, rand: cfg.Rand}
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
	limit := func(v, def int) int {
		switch {
		case v == 0:
			return def
		case v < 0:
			return math.MaxInt
		}
		return v
	}
	e.limits = admission{
		requireRetry:   cfg.RequireRetry,
		retryThreshold: limit(cfg.RetryThreshold, DefaultRetryThreshold),
		maxHandshakes:  limit(cfg.MaxHandshakes, DefaultMaxHandshakes),
		maxAll:         limit(cfg.MaxConns, DefaultMaxConns),
	}
	e.limits.perPrefix = limit(cfg.MaxHandshakesPerPrefix, max(1, e.limits.maxHandshakes/8))
	rate := cfg.ResetRate
	if rate == 0 {
		rate = DefaultResetRate
	}
	e.resets = tokenBucket{rate: max(rate, 0)}
	switch {
	case len(cfg.ResetKey) >= 16:
		k, err := hkdf.Key(sha256.New, cfg.ResetKey, nil, "mpquic stateless reset", len(e.resetKey))
		if err != nil {
			return nil, fmt.Errorf("mpquic: reset key: %w", err)
		}
		copy(e.resetKey[:], k)
	case len(cfg.ResetKey) > 0:
		return nil, fmt.Errorf("mpquic: reset key of %d bytes, want at least 16", len(cfg.ResetKey))
	default:
		if _, err := io.ReadFull(e.rand, e.resetKey[:]); err != nil {
			return nil, fmt.Errorf("mpquic: endpoint key: %w", err)
		}
	}
	var tokenKey [16]byte
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
	e.scratch.New = func() any { b := make([]byte, 0, 2048); return &b }
	return e, nil
}

// Stats returns the endpoint's counters.
func (e *Endpoint) Stats() EndpointStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Handshakes, s.Conns = e.handshakes, len(e.servers)
	if e.server != nil && e.server.SendBudget != nil {
		s.Reclaimed = e.server.SendBudget.Reclaimed()
	}
	return s
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

// handshakeDone implements idHost: a server connection left its handshake.
func (e *Endpoint) handshakeDone(c *Conn) {
	e.mu.Lock()
	if e.servers[c] {
		e.servers[c] = false
		e.releaseSlot(c)
	}
	e.mu.Unlock()
}

// connDone implements idHost: a connection's state is gone.
func (e *Endpoint) connDone(c *Conn) {
	e.mu.Lock()
	if inHandshake, ok := e.servers[c]; ok {
		delete(e.servers, c)
		if inHandshake {
			e.releaseSlot(c)
		}
		if c.quietClosed {
			e.stats.QuietTimeouts++
		}
	}
	e.mu.Unlock()
}

// releaseSlot gives back the handshake slot of server connection c, in
// handshakes and in its prefix. Called with e.mu held.
func (e *Endpoint) releaseSlot(c *Conn) {
	e.handshakes--
	p := c.slotPrefix
	ps := e.prefixes[p]
	if ps == nil {
		return
	}
	ps.n--
	if i := slices.Index(ps.conns, c); i >= 0 {
		ps.conns = slices.Delete(ps.conns, i, i+1)
	}
	if ps.n <= 0 {
		delete(e.prefixes, p)
	}
}

// evictLocked ends the oldest handshake of the source prefix holding the
// most slots (of those with a connection in its handshake; ties go to the
// prefix whose oldest was admitted first) and returns it, nil if there is none. The
// connection ends at its next HandleTimeout. Called with e.mu held.
func (e *Endpoint) evictLocked() *Conn {
	var victim *prefixSlots
	for _, ps := range e.prefixes {
		if len(ps.conns) == 0 {
			continue
		}
		if victim == nil || ps.n > victim.n || ps.n == victim.n && ps.conns[0].slotSeq < victim.conns[0].slotSeq {
			victim = ps
		}
	}
	if victim == nil {
		return nil
	}
	c := victim.conns[0]
	e.servers[c] = false
	e.releaseSlot(c)
	c.evicted.Store(true)
	e.stats.Evicted++
	return c
}

// peerToken implements idHost.
func (e *Endpoint) peerToken(c *Conn, token [16]byte) {
	e.mu.Lock()
	e.peerTokens[token] = c
	e.mu.Unlock()
}

// peerTokenGone implements idHost.
func (e *Endpoint) peerTokenGone(c *Conn, token [16]byte) {
	e.mu.Lock()
	if e.peerTokens[token] == c {
		delete(e.peerTokens, token)
	}
	e.mu.Unlock()
}

// resetOf returns the connection whose peer's stateless reset token ends
// d, nil if none.
func (e *Endpoint) resetOf(d []byte) *Conn {
	if len(d) < 21 {
		return nil
	}
	var tail [16]byte
	copy(tail[:], d[len(d)-16:])
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.peerTokens[tail]
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
	// Evicted, if set, is a server connection whose handshake slot went
	// to Conn: the driver wakes it (its NextTimeout is now) and it ends at
	// HandleTimeout.
	Evicted *Conn
}

// Route finds the connection of a datagram or decides what to answer.
func (e *Endpoint) Route(now time.Time, d Datagram) Route {
	dcid, isLong, err := wire.ParseConnIDs(d.Data, ConnIDLen)
	if err != nil {
		e.count(&e.stats.Dropped)
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
		// A stateless reset from a peer that lost our connection, or
		// a packet of a connection we do not know (Section 10.3.1).
		if c := e.resetOf(d.Data); c != nil {
			return Route{Conn: c}
		}
		return e.statelessReset(now, d, dcid)
	}
	if server == nil || closed {
		e.count(&e.stats.Dropped)
		return Route{}
	}
	hdr, err := wire.ParseHeader(d.Data, ConnIDLen)
	if err != nil {
		e.count(&e.stats.Dropped)
		return Route{}
	}
	if hdr.Version != wire.Version1 {
		if hdr.Type == wire.PacketVersionNegotiation || len(d.Data) < minInitialDatagram {
			e.count(&e.stats.Dropped)
			return Route{}
		}
		e.count(&e.stats.VersionNegotiations)
		vn := wire.AppendVersionNegotiation(nil, hdr.SrcConnID, hdr.DstConnID, []uint32{wire.Version1}, byte(now.UnixNano()))
		return Route{Reply: &Datagram{Local: d.Local, Remote: d.Remote, Data: vn}}
	}
	if hdr.Type != wire.PacketInitial || len(d.Data) < minInitialDatagram || len(hdr.DstConnID) < 8 {
		e.count(&e.stats.Dropped)
		return Route{} // RFC 9000 Sections 7.2 and 14.1
	}
	return e.admit(now, server, d, hdr)
}

// count adds one to a counter of e.stats.
func (e *Endpoint) count(n *uint64) {
	e.mu.Lock()
	*n++
	e.mu.Unlock()
}

// statelessReset answers a short-header datagram of an unknown connection
// with a stateless reset (RFC 9000 Section 10.3), smaller than the trigger
// so that two endpoints cannot loop, and within the rate limit.
func (e *Endpoint) statelessReset(now time.Time, d Datagram, dcid []byte) Route {
	size := len(d.Data) - 1
	e.mu.Lock()
	ok := size >= 21 && e.resets.take(now)
	if ok {
		e.stats.Resets++
	} else {
		e.stats.Dropped++
	}
	e.mu.Unlock()
	if !ok {
		return Route{}
	}
	size = min(size, 43)
	b := make([]byte, size)
	if _, err := io.ReadFull(e.rand, b[:size-16]); err != nil {
		return Route{}
	}
	b[0] = 0x40 | b[0]&0x3f
	tok := e.resetToken(dcid)
	copy(b[size-16:], tok[:])
	return Route{Reply: &Datagram{Local: d.Local, Remote: d.Remote, Data: b}}
}

// tokenBucket is a rate limit of rate events per second with bursts of as
// many, on the caller's clock.
type tokenBucket struct {
	rate   int
	tokens float64
	last   time.Time
}

// take reports whether an event may happen at now, and counts it.
func (b *tokenBucket) take(now time.Time) bool {
	if b.rate <= 0 {
		return false
	}
	if b.last.IsZero() {
		b.tokens = float64(b.rate)
	} else if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(float64(b.rate), b.tokens+dt.Seconds()*float64(b.rate))
	}
	if now.After(b.last) {
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Retry tokens: AES-GCM over (issue time, original DCID), bound to the
// client's address as associated data.
const tokenLifetime = 10 * time.Second

func (e *Endpoint) retryPacket(now time.Time, d Datagram, hdr wire.Header) *Datagram {
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
