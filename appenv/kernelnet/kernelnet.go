// Package kernelnet is the baselines' kernel transports for package
// udpenv: TCP, TLS 1.3 over TCP (crypto/tls) and MPTCP (IPPROTO_MPTCP
// sockets), each one connection carrying the application's streams as
// frames (package bytemux). It sets the congestion controller by name
// (TCP_CONGESTION) and reads the kernel's statistics of the connection
// (TCP_INFO; per subflow for MPTCP) as path statistics.
package kernelnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"

	"github.com/mpq/mpq/appenv/bytemux"
	"github.com/mpq/mpq/appenv/udpenv"
)

// Kinds of kernel transports.
const (
	TCP   = "tcp"
	TLS   = "tls"
	MPTCP = "mptcp"
)

// Config configures a Transport.
type Config struct {
	// Kind is TCP, TLS or MPTCP.
	Kind string
	// TLS is the TLS configuration of kind TLS (a client's for Dial, a
	// server's for Listen); TLS 1.3 is required.
	TLS *tls.Config
	// Congestion is the kernel's congestion controller (TCP_CONGESTION);
	// "" keeps the kernel's default.
	Congestion string
	// OnSent, if not nil, receives every frame of stream data written into
	// the connection (on the writer's goroutine).
	OnSent func(stream uint64, n int)
}

// Transport dials and listens with kernel sockets.
type Transport struct{ cfg Config }

var _ udpenv.Transport = (*Transport)(nil)

// New returns the transport of cfg.
func New(cfg Config) (*Transport, error) {
	switch cfg.Kind {
	case TCP, MPTCP:
	case TLS:
		if cfg.TLS == nil {
			return nil, errors.New("kernelnet: kind tls needs a TLS configuration")
		}
		cfg.TLS = cfg.TLS.Clone()
		cfg.TLS.MinVersion = tls.VersionTLS13
	default:
		return nil, fmt.Errorf("kernelnet: unknown kind %q (want tcp, tls or mptcp)", cfg.Kind)
	}
	return &Transport{cfg: cfg}, nil
}

// control sets the congestion controller on a socket before it connects
// or listens.
func (t *Transport) control(_, _ string, rc syscall.RawConn) error {
	if t.cfg.Congestion == "" {
		return nil
	}
	var serr error
	err := rc.Control(func(fd uintptr) { serr = setCongestion(int(fd), t.cfg.Congestion) })
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("TCP_CONGESTION %q: %w (available: %s)", t.cfg.Congestion, err, Available())
	}
	return nil
}

// Available lists the kernel's congestion controllers.
func Available() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// Dial connects to addr from local ("host:port", port 0 or "" for any).
func (t *Transport) Dial(ctx context.Context, addr, local string) (udpenv.TransportConn, error) {
	d := &net.Dialer{Control: t.control}
	d.SetMultipathTCP(t.cfg.Kind == MPTCP)
	if local != "" {
		ap, err := netip.ParseAddrPort(local)
		if err != nil {
			return nil, fmt.Errorf("kernelnet: local address %q: %w", local, err)
		}
		d.LocalAddr = net.TCPAddrFromAddrPort(ap)
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return t.wrap(ctx, nc.(*net.TCPConn), true)
}

// Listen listens on addr.
func (t *Transport) Listen(addr string) (udpenv.TransportListener, error) {
	lc := &net.ListenConfig{Control: t.control}
	lc.SetMultipathTCP(t.cfg.Kind == MPTCP)
	l, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ln := &listener{t: t, l: l.(*net.TCPListener), ctx: ctx, cancel: cancel, conns: make(chan *Conn), done: make(chan struct{})}
	go ln.acceptLoop()
	return ln, nil
}

// wrap checks the socket, runs the TLS handshake for kind TLS and starts
// the multiplexer.
func (t *Transport) wrap(ctx context.Context, tc *net.TCPConn, client bool) (*Conn, error) {
	if t.cfg.Kind == MPTCP {
		// Go falls back to plain TCP when MPTCP is unavailable: a run
		// asked for MPTCP must not report TCP's numbers as MPTCP's.
		if on, err := tc.MultipathTCP(); err != nil || !on {
			tc.Close()
			return nil, fmt.Errorf("kernelnet: the connection fell back to plain TCP (MPTCP unavailable: sysctl net.mptcp.enabled, or the peer does not speak it): %v", err)
		}
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		tc.Close()
		return nil, err
	}
	var nc net.Conn = tc
	if t.cfg.Kind == TLS {
		var tconn *tls.Conn
		if client {
			tconn = tls.Client(tc, t.cfg.TLS)
		} else {
			tconn = tls.Server(tc, t.cfg.TLS)
		}
		if err := tconn.HandshakeContext(ctx); err != nil {
			tc.Close()
			return nil, fmt.Errorf("kernelnet: TLS handshake: %w", err)
		}
		nc = tconn
	}
	c := &Conn{Conn: bytemux.New(nc, client, bytemux.Options{OnSent: t.cfg.OnSent}), raw: raw, tc: tc, kind: t.cfg.Kind, client: client}
	c.congestion, _ = getCongestion(raw)
	return c, nil
}

// listener accepts TCP connections and runs each one's TLS handshake in
// a goroutine of its own, as a server does: a client whose handshake is
// slow (or never comes) does not hold up the others. (Handshaking in
// Accept, one connection at a time, made every connection of a burst
// wait one RTT per connection ahead of it.)
type listener struct {
	t      *Transport
	l      *net.TCPListener
	ctx    context.Context
	cancel context.CancelFunc
	conns  chan *Conn    // connections ready
	done   chan struct{} // closed when accepting ended, err then says why
	err    error
}

func (l *listener) Addr() net.Addr { return l.l.Addr() }

func (l *listener) Close() error {
	l.cancel()
	return l.l.Close()
}

func (l *listener) acceptLoop() {
	defer close(l.done)
	for {
		tc, err := l.l.AcceptTCP()
		if err != nil {
			l.err = err
			return
		}
		go func() {
			c, err := l.t.wrap(l.ctx, tc, false)
			if err != nil {
				// One failed handshake does not end the listener.
				return
			}
			select {
			case l.conns <- c:
			case <-l.ctx.Done():
				c.CloseWithError(0, "listener closed")
			}
		}()
	}
}

func (l *listener) Accept(ctx context.Context) (udpenv.TransportConn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
