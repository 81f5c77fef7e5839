package mpquic

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

// Listener accepts QUIC connections on a UDP socket.
type Listener struct {
	sock    *socket
	ep      *core.Endpoint
	cfg     *Config
	mu      sync.Mutex
	ready   []*Conn
	sig     chan struct{}
	closed  chan struct{}
	once    sync.Once
	conns   map[*Conn]struct{}
	connsWG sync.WaitGroup
	// sendSize is the capacity of the connections' send buffers.
	sendSize int
	// queueDropped counts datagrams dropped at a full connection inbox.
	queueDropped atomic.Uint64
}

// ListenOptions are options of Listen beyond the connection Config. The
// limits protect the server from floods of connection attempts: see
// core.EndpointConfig, whose defaults apply to zero values.
type ListenOptions struct {
	// RequireRetry validates every client address with Retry before
	// keeping state (RFC 9000 Section 8.1.2).
	RequireRetry bool
	// RetryThreshold is the number of connections in their handshake
	// from which new clients must follow a Retry first.
	RetryThreshold int
	// MaxHandshakes is the number of connections in their handshake from
	// which new connections are refused (CONNECTION_REFUSED), except
	// that a client whose address a Retry validated takes the slot of
	// the oldest handshake of the source prefix holding the most.
	MaxHandshakes int
	// MaxHandshakesPerPrefix is the number of handshake slots one source
	// prefix (/24, /48) may hold; default MaxHandshakes/8.
	MaxHandshakesPerPrefix int
	// MaxConns is the number of connections from which new ones are
	// refused.
	MaxConns int
	// ResetKey is the secret stateless reset tokens derive from, at least
	// 16 bytes; the same key across restarts lets the server reset the
	// connections of its previous run (RFC 9000 Section 10.3). Default: a
	// key derived from the private key of the first certificate, so that
	// a server restarted with the same certificate keeps its tokens; a
	// random one without certificates.
	ResetKey []byte
	// ResetRate bounds the stateless resets sent per second.
	ResetRate int
}

// ListenerStats are a listener's counters: the endpoint's (connections
// accepted, retried, refused, datagrams dropped...) and the driver's.
type ListenerStats struct {
	core.EndpointStats
	// QueueDropped counts datagrams dropped because their connection had
	// a full inbox.
	QueueDropped uint64
}

// Listen listens for QUIC connections on the UDP address addr
// ("host:port").
func Listen(addr string, cfg *Config) (*Listener, error) {
	return ListenWithOptions(addr, cfg, ListenOptions{})
}

// ListenWithOptions is Listen with options.
func ListenWithOptions(addr string, cfg *Config, opts ListenOptions) (*Listener, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("mpquic: listen %s: %w", addr, err)
	}
	uc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("mpquic: listen %s: %w", addr, err)
	}
	return ListenUDP(uc, cfg, opts)
}

// ListenUDP serves QUIC on an existing UDP socket, which the listener owns.
func ListenUDP(uc *net.UDPConn, cfg *Config, opts ListenOptions) (*Listener, error) {
	cfg, sendSize, err := socketConfig(cfg, uc)
	if err != nil {
		uc.Close()
		return nil, err
	}
	resetKey := opts.ResetKey
	if resetKey == nil {
		resetKey = certResetKey(cfg.TLS)
	}
	ep, err := core.NewEndpoint(core.EndpointConfig{
		Server:         cfg,
		RequireRetry:   opts.RequireRetry,
		RetryThreshold: opts.RetryThreshold,
		MaxHandshakes:  opts.MaxHandshakes,
		MaxConns:       opts.MaxConns,
		ResetKey:       resetKey,
		ResetRate:      opts.ResetRate,

		MaxHandshakesPerPrefix: opts.MaxHandshakesPerPrefix,
	})
	if err != nil {
		uc.Close()
		return nil, err
	}
	l := &Listener{ep: ep, cfg: cfg, sig: make(chan struct{}, 1), closed: make(chan struct{}), conns: map[*Conn]struct{}{}, sendSize: sendSize}
	l.sock = newSocket(uc, ep)
	l.sock.disableGSO(cfg.DisableGSO)
	l.sock.accept = l.newConn
	go l.sock.readLoop()
	return l, nil
}

// errSimNullProtection refuses the simulator's null packet protection on a
// real socket.
var errSimNullProtection = errors.New("mpquic: SimNullProtection is for the simulator only: a real socket always uses the TLS cipher suite's packet protection")

// DefaultPacingBurst is the pacer's burst of connections on real sockets
// whose configuration leaves PacingBurst 0 (see Config.PacingBurst).
const DefaultPacingBurst = time.Millisecond

// socketConfig returns the configuration of connections on the socket uc:
// cfg with the TLS key log (SSLKEYLOGFILE), the max_udp_payload_size the
// socket receives and the driver's pacing burst, and the size of their
// send buffers.
func socketConfig(cfg *Config, uc *net.UDPConn) (*Config, int, error) {
	if cfg != nil && cfg.SimNullProtection {
		return nil, 0, errSimNullProtection
	}
	cfg = withKeyLog(cfg)
	v, err := cfg.Validate()
	if err != nil {
		return nil, 0, err
	}
	local := uc.LocalAddr().(*net.UDPAddr).AddrPort()
	n := *cfg
	n.MaxUDPPayloadSize = min(v.MaxUDPPayloadSize, maxUDPPayload(local))
	if n.PacingBurst == 0 {
		n.PacingBurst = DefaultPacingBurst
	}
	cfg = &n
	return cfg, v.MaxPacketSize, nil
}

// certResetKey derives a stateless reset key from the private key of the
// first certificate of tc, nil if there is none.
func certResetKey(tc *tls.Config) []byte {
	if tc == nil || len(tc.Certificates) == 0 || tc.Certificates[0].PrivateKey == nil {
		return nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(tc.Certificates[0].PrivateKey)
	if err != nil {
		return nil
	}
	k, err := hkdf.Key(sha256.New, der, nil, "mpquic stateless reset key from the certificate key", 32)
	if err != nil {
		return nil
	}
	return k
}

// Stats returns the listener's counters.
func (l *Listener) Stats() ListenerStats {
	return ListenerStats{EndpointStats: l.ep.Stats(), QueueDropped: l.queueDropped.Load()}
}

// newConn starts driving a server connection the endpoint created; it is
// queued for Accept once its handshake completes, or as soon as it accepted
// 0-RTT (Config.Allow0RTT).
func (l *Listener) newConn(cc *core.Conn, s *socket) *Conn {
	c := newDriverConn(cc, l.sendSize, &l.queueDropped, s)
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	l.connsWG.Add(1)
	c.onHandshake = func() {
		select {
		case <-l.closed:
			return
		default:
		}
		l.mu.Lock()
		l.ready = append(l.ready, c)
		l.mu.Unlock()
		signal(l.sig)
	}
	c.onClose = func() {
		l.mu.Lock()
		delete(l.conns, c)
		l.mu.Unlock()
		l.connsWG.Done()
	}
	go c.run()
	return c
}

// Accept waits for the next connection whose handshake completed, or, with
// Config.Allow0RTT, that accepted 0-RTT data: its streams may then arrive
// before the handshake completes (Conn.HandshakeComplete), and its
// answers go out in 0.5-RTT packets, within the anti-amplification limit.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	for {
		l.mu.Lock()
		if len(l.ready) > 0 {
			c := l.ready[0]
			l.ready = l.ready[1:]
			more := len(l.ready) > 0
			l.mu.Unlock()
			if more {
				signal(l.sig)
			}
			return c, nil
		}
		l.mu.Unlock()
		select {
		case <-l.sig:
		case <-l.closed:
			return nil, net.ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Addr is the listening address.
func (l *Listener) Addr() net.Addr { return l.sock.conn.LocalAddr() }

// Close stops accepting, closes every connection (application error 0) and
// the socket, waiting up to two seconds for the connections to end.
func (l *Listener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.ep.Close()
		l.mu.Lock()
		conns := make([]*Conn, 0, len(l.conns))
		for c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
		done := make(chan struct{})
		go func() { l.connsWG.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
	})
	return l.sock.close()
}

// DialOptions are options of Dial beyond the connection Config.
type DialOptions struct {
	// LocalAddr is the local UDP address; default ":0" of the remote's
	// family.
	LocalAddr string
	// ServerName overrides the TLS server name (default: the host of addr,
	// or the Config's ServerName).
	ServerName string
}

// Dial connects to a QUIC server at addr ("host:port") and returns once the
// handshake completed.
func Dial(ctx context.Context, addr string, cfg *Config) (*Conn, error) {
	return DialWithOptions(ctx, addr, cfg, DialOptions{})
}

// DialWithOptions is Dial with options.
func DialWithOptions(ctx context.Context, addr string, cfg *Config, opts DialOptions) (*Conn, error) {
	return dial(ctx, addr, cfg, opts, false)
}

// DialEarly is Dial returning as soon as the connection can carry 0-RTT
// data: at once when it resumes a session whose ticket allows 0-RTT
// (Config.Allow0RTT, and cfg.TLS.ClientSessionCache holding a ticket of an
// earlier connection to the server), after the handshake otherwise. Only
// streams opened with Conn.OpenEarlyStream carry data in 0-RTT;
// Conn.EarlyData reports whether the server accepted it (rejected 0-RTT
// data is sent again after the handshake).
func DialEarly(ctx context.Context, addr string, cfg *Config, opts DialOptions) (*Conn, error) {
	return dial(ctx, addr, cfg, opts, true)
}

func dial(ctx context.Context, addr string, cfg *Config, opts DialOptions, early bool) (*Conn, error) {
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("mpquic: dial %s: %w", addr, err)
	}
	remote := ra.AddrPort()
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	local := opts.LocalAddr
	if local == "" {
		if remote.Addr().Is4() {
			local = "0.0.0.0:0"
		} else {
			local = "[::]:0"
		}
	}
	la, err := net.ResolveUDPAddr("udp", local)
	if err != nil {
		return nil, fmt.Errorf("mpquic: local address %s: %w", local, err)
	}
	uc, err := net.ListenUDP("udp", la)
	if err != nil {
		return nil, fmt.Errorf("mpquic: dial %s: %w", addr, err)
	}
	cfg, sendSize, err := socketConfig(cfg, uc)
	if err != nil {
		uc.Close()
		return nil, err
	}
	ep, err := core.NewEndpoint(core.EndpointConfig{})
	if err != nil {
		uc.Close()
		return nil, err
	}
	sock := newSocket(uc, ep)
	sock.disableGSO(cfg.DisableGSO)
	serverName := opts.ServerName
	if serverName == "" && (cfg.TLS == nil || cfg.TLS.ServerName == "") {
		if h, _, err := net.SplitHostPort(addr); err == nil {
			serverName = h
		}
	}
	cc, err := ep.Dial(cfg, sock.local, remote, serverName, time.Now())
	if err != nil {
		uc.Close()
		return nil, err
	}
	c := newDriverConn(cc, sendSize, nil, sock)
	c.ownSockets = []*socket{sock}
	c.noGSO = cfg.DisableGSO
	c.ep = ep
	canEarly := early && cc.CanSendEarly()
	go sock.readLoop()
	go c.run()
	if canEarly {
		return c, nil
	}
	select {
	case <-c.handshakeDone:
		return c, nil
	case <-c.closed:
		return nil, fmt.Errorf("mpquic: dial %s: %w", addr, c.closeErr)
	case <-ctx.Done():
		c.CloseWithError(0, "dial cancelled")
		<-c.closed
		return nil, fmt.Errorf("mpquic: dial %s: %w", addr, ctx.Err())
	}
}
