package mpquic

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
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
}

// ListenOptions are options of Listen beyond the connection Config.
type ListenOptions struct {
	// RequireRetry validates client addresses with Retry before keeping
	// state (RFC 9000 Section 8.1.2).
	RequireRetry bool
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
	cfg = withKeyLog(cfg)
	ep, err := core.NewEndpoint(core.EndpointConfig{Server: cfg, RequireRetry: opts.RequireRetry})
	if err != nil {
		uc.Close()
		return nil, err
	}
	l := &Listener{ep: ep, cfg: cfg, sig: make(chan struct{}, 1), closed: make(chan struct{}), conns: map[*Conn]struct{}{}}
	l.sock = newSocket(uc, ep)
	l.sock.disableGSO(cfg.DisableGSO)
	l.sock.accept = l.newConn
	go l.sock.readLoop()
	return l, nil
}

// newConn starts driving a server connection the endpoint created; it is
// queued for Accept once its handshake completes.
func (l *Listener) newConn(cc *core.Conn, s *socket) *Conn {
	c := newDriverConn(cc, s)
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	l.connsWG.Add(1)
	c.onClose = func() {
		l.mu.Lock()
		delete(l.conns, c)
		l.mu.Unlock()
		l.connsWG.Done()
	}
	go c.run()
	go func() {
		select {
		case <-c.handshakeDone:
			l.mu.Lock()
			l.ready = append(l.ready, c)
			l.mu.Unlock()
			signal(l.sig)
		case <-c.closed:
		case <-l.closed:
		}
	}()
	return c
}

// Accept waits for the next connection whose handshake completed.
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
	cfg = withKeyLog(cfg)
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
	c := newDriverConn(cc, sock)
	c.ownSockets = []*socket{sock}
	c.noGSO = cfg.DisableGSO
	c.ep = ep
	go sock.readLoop()
	go c.run()
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
