// Package quicgo is quic-go (github.com/quic-go/quic-go), a second,
// independent QUIC implementation, as a Transport of package udpenv: the
// single-path QUIC baseline. Streams map one to one; a priority stream
// gets urgency 0 of RFC 9218's scheme (quic-go's stream scheduler serves
// lower urgencies first), others quic-go's default, urgency 3.
package quicgo

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"

	quic "github.com/quic-go/quic-go"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/mpquic/core"
)

// Config configures a Transport.
type Config struct {
	// ClientTLS configures Dial, ServerTLS Listen.
	ClientTLS, ServerTLS *tls.Config
	// QUIC is quic-go's configuration (nil: its defaults).
	QUIC *quic.Config
}

// Transport dials and listens with quic-go.
type Transport struct{ cfg Config }

var _ udpenv.Transport = (*Transport)(nil)

// New returns the transport of cfg.
func New(cfg Config) *Transport { return &Transport{cfg: cfg} }

// Dial connects to addr from local ("host:port"; "" for any).
func (t *Transport) Dial(ctx context.Context, addr, local string) (udpenv.TransportConn, error) {
	laddr := &net.UDPAddr{}
	if local != "" {
		ap, err := netip.ParseAddrPort(local)
		if err != nil {
			return nil, fmt.Errorf("quicgo: local address %q: %w", local, err)
		}
		laddr = net.UDPAddrFromAddrPort(ap)
	}
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	pc, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: pc}
	c, err := tr.Dial(ctx, raddr, t.cfg.ClientTLS, t.cfg.QUIC)
	if err != nil {
		tr.Close()
		return nil, err
	}
	go func() {
		<-c.Context().Done()
		tr.Close()
	}()
	return &Conn{c: c}, nil
}

// Listen listens on addr.
func (t *Transport) Listen(addr string) (udpenv.TransportListener, error) {
	l, err := quic.ListenAddr(addr, t.cfg.ServerTLS, t.cfg.QUIC)
	if err != nil {
		return nil, err
	}
	return &listener{l: l}, nil
}

type listener struct{ l *quic.Listener }

func (l *listener) Addr() net.Addr { return l.l.Addr() }
func (l *listener) Close() error   { return l.l.Close() }

func (l *listener) Accept(ctx context.Context) (udpenv.TransportConn, error) {
	c, err := l.l.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c}, nil
}

// Conn adapts a quic-go connection.
type Conn struct{ c *quic.Conn }

func (c *Conn) OpenStream() (udpenv.TransportStream, error) {
	s, err := c.c.OpenStream()
	if err != nil {
		return nil, limit(err)
	}
	return &stream{s: s, send: s, recv: s}, nil
}

func (c *Conn) OpenUniStream() (udpenv.TransportStream, error) {
	s, err := c.c.OpenUniStream()
	if err != nil {
		return nil, limit(err)
	}
	return &stream{s: s, send: s}, nil
}

// limit wraps quic-go's stream limit error as appenv's.
func limit(err error) error {
	var sl quic.StreamLimitReachedError
	if errors.As(err, &sl) {
		return fmt.Errorf("%w: %w", appenv.ErrStreamLimit, err)
	}
	return err
}

func (c *Conn) AcceptStream(ctx context.Context) (udpenv.TransportStream, error) {
	s, err := c.c.AcceptStream(ctx)
	if err != nil {
		return nil, err
	}
	return &stream{s: s, send: s, recv: s}, nil
}

func (c *Conn) AcceptUniStream(ctx context.Context) (udpenv.TransportStream, error) {
	s, err := c.c.AcceptUniStream(ctx)
	if err != nil {
		return nil, err
	}
	return &stream{s: s, recv: s}, nil
}

func (c *Conn) Context() context.Context { return c.c.Context() }

// Err is why the connection ended.
func (c *Conn) Err() error { return context.Cause(c.c.Context()) }

func (c *Conn) CloseWithError(code uint64, reason string) error {
	return c.c.CloseWithError(quic.ApplicationErrorCode(code), reason)
}

func (c *Conn) LocalAddr() net.Addr  { return c.c.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr { return c.c.RemoteAddr() }

// Paths returns quic-go's statistics of its one path (ID 0). quic-go
// counts QUIC packet bytes (headers and retransmissions included).
func (c *Conn) Paths() []core.PathStats {
	st := c.c.ConnectionStats()
	ap := func(a net.Addr) netip.AddrPort {
		if u, ok := a.(*net.UDPAddr); ok {
			return u.AddrPort()
		}
		return netip.AddrPort{}
	}
	return []core.PathStats{{
		Local: ap(c.c.LocalAddr()), Remote: ap(c.c.RemoteAddr()),
		PacketsSent: st.PacketsSent, PacketsReceived: st.PacketsReceived, PacketsLost: st.PacketsLost,
		BytesSent: st.BytesSent, BytesReceived: st.BytesReceived, BytesLost: st.BytesLost,
		SmoothedRTT: st.SmoothedRTT, MinRTT: st.MinRTT, LatestRTT: st.LatestRTT, RTTVariance: st.MeanDeviation,
		CongestionWindow: st.CongestionWindow, Validated: true, Status: "available", State: "active",
	}}
}

// stream adapts quic-go's bidirectional and unidirectional streams.
type stream struct {
	s interface{ StreamID() quic.StreamID }
	// send and recv are the stream's directions (nil: none).
	send interface {
		Write([]byte) (int, error)
		Close() error
		CancelWrite(quic.StreamErrorCode)
		SetPriority(urgency int8, incremental bool)
	}
	recv interface {
		Read([]byte) (int, error)
		CancelRead(quic.StreamErrorCode)
	}
}

var errNoDirection = errors.New("quicgo: the stream has no such direction")

func (s *stream) StreamID() uint64 { return uint64(s.s.StreamID()) }

func (s *stream) Read(p []byte) (int, error) {
	if s.recv == nil {
		return 0, errNoDirection
	}
	return s.recv.Read(p)
}

func (s *stream) Write(p []byte) (int, error) {
	if s.send == nil {
		return 0, errNoDirection
	}
	return s.send.Write(p)
}

func (s *stream) Close() error {
	if s.send == nil {
		return errNoDirection
	}
	return s.send.Close()
}

func (s *stream) CancelWrite(code uint64) {
	if s.send != nil {
		s.send.CancelWrite(quic.StreamErrorCode(code))
	}
}

func (s *stream) CancelRead(code uint64) {
	if s.recv != nil {
		s.recv.CancelRead(quic.StreamErrorCode(code))
	}
}

// Urgencies of RFC 9218 for priority and other streams.
const (
	urgencyPriority = 0
	urgencyDefault  = 3
)

func (s *stream) SetPriority(p bool) {
	if s.send == nil {
		return
	}
	u := int8(urgencyDefault)
	if p {
		u = urgencyPriority
	}
	s.send.SetPriority(u, true)
}
