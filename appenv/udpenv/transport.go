package udpenv

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
)

// Transport is a blocking, goroutine-based transport that an Env bridges
// into its event loop: mpquic by default, another QUIC implementation or
// streams multiplexed over a byte stream (TCP, TLS, MPTCP) for the
// baselines. Its connections and streams have the shape of package net
// and quic-go: calls block, and any goroutine may make them.
type Transport interface {
	// Dial connects to addr ("host:port") from local ("" for any).
	Dial(ctx context.Context, addr, local string) (TransportConn, error)
	// Listen accepts connections on addr.
	Listen(addr string) (TransportListener, error)
}

// TransportListener accepts a Transport's connections.
type TransportListener interface {
	Accept(ctx context.Context) (TransportConn, error)
	Addr() net.Addr
	// Close stops accepting and closes the accepted connections.
	Close() error
}

// TransportConn is a connection of a Transport.
type TransportConn interface {
	// OpenStream and OpenUniStream open a stream without blocking; they
	// fail with an error wrapping appenv.ErrStreamLimit while the peer's
	// limit is reached.
	OpenStream() (TransportStream, error)
	OpenUniStream() (TransportStream, error)
	AcceptStream(ctx context.Context) (TransportStream, error)
	AcceptUniStream(ctx context.Context) (TransportStream, error)
	// Context is done once the connection ended; Err is then why.
	Context() context.Context
	Err() error
	CloseWithError(code uint64, reason string) error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
}

// TransportStream is a stream of a TransportConn.
type TransportStream interface {
	StreamID() uint64
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
	Close() error
	CancelWrite(code uint64)
	CancelRead(code uint64)
	// SetPriority sets the stream's priority where the transport has
	// priorities; others ignore it.
	SetPriority(priority bool)
}

// Optional interfaces of a TransportConn, which the Env's connections
// pass on (see multipath.go).
type (
	pathStatser   interface{ Paths() []core.PathStats }
	pathEventer   interface{ PathEvents() []core.PathEvent }
	multipather   interface{ MultipathEnabled() bool }
	copyDropper   interface{ CopiesDropped() map[string]uint64 }
	queueDropper  interface{ ReceiveQueueDropped() uint64 }
	repairCounter interface{ RepairStats() core.RepairStats }
	pathOpener    interface {
		AddPathTo(ctx context.Context, local, remote string) (uint64, error)
	}
)

// earlyDialer is a Transport with 0-RTT (mpquic's); earlyConn its
// connections dialled so.
type (
	earlyDialer interface {
		DialEarly(ctx context.Context, addr, local string) (TransportConn, error)
	}
	earlyConn interface {
		OpenEarlyStream(bidi bool) (TransportStream, error)
		EarlyData() core.EarlyDataState
	}
)

// mpquicTransport is the default Transport: package mpquic with the
// configurations of Config.
type mpquicTransport struct{ client, server *mpquic.Config }

func (t mpquicTransport) Dial(ctx context.Context, addr, local string) (TransportConn, error) {
	if t.client == nil {
		return nil, errors.New("udpenv: no client configuration")
	}
	c, err := mpquic.DialWithOptions(ctx, addr, t.client, mpquic.DialOptions{LocalAddr: local})
	if err != nil {
		return nil, err
	}
	return mpquicConn{c}, nil
}

// DialEarly dials with mpquic.DialEarly (0-RTT with a session ticket of
// an earlier connection).
func (t mpquicTransport) DialEarly(ctx context.Context, addr, local string) (TransportConn, error) {
	if t.client == nil {
		return nil, errors.New("udpenv: no client configuration")
	}
	c, err := mpquic.DialEarly(ctx, addr, t.client, mpquic.DialOptions{LocalAddr: local})
	if err != nil {
		return nil, err
	}
	return mpquicConn{c}, nil
}

func (t mpquicTransport) Listen(addr string) (TransportListener, error) {
	if t.server == nil {
		return nil, errors.New("udpenv: no server configuration")
	}
	l, err := mpquic.Listen(addr, t.server)
	if err != nil {
		return nil, err
	}
	return mpquicListener{l}, nil
}

type mpquicListener struct{ *mpquic.Listener }

func (l mpquicListener) Accept(ctx context.Context) (TransportConn, error) {
	c, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return mpquicConn{c}, nil
}

// mpquicConn adapts an mpquic.Conn; its optional methods (paths,
// statistics, source announcements) come with the embedded connection.
type mpquicConn struct{ *mpquic.Conn }

func (c mpquicConn) OpenStream() (TransportStream, error)    { return c.open(true) }
func (c mpquicConn) OpenUniStream() (TransportStream, error) { return c.open(false) }

// OpenEarlyStream opens a stream of a connection dialled with DialEarly,
// in 0-RTT packets until the handshake completes.
func (c mpquicConn) OpenEarlyStream(bidi bool) (TransportStream, error) {
	return streamOrLimit(c.Conn.OpenEarlyStream(bidi))
}

func (c mpquicConn) open(bidi bool) (TransportStream, error) {
	if bidi {
		return streamOrLimit(c.Conn.OpenStream())
	}
	return streamOrLimit(c.Conn.OpenUniStream())
}

// streamOrLimit returns an opened stream, or the error, wrapping
// appenv.ErrStreamLimit where the peer's limit is reached.
func streamOrLimit(s *mpquic.Stream, err error) (TransportStream, error) {
	if err != nil {
		if errors.Is(err, core.ErrStreamLimit) {
			return nil, fmt.Errorf("%w: %w", appenv.ErrStreamLimit, err)
		}
		return nil, err
	}
	return s, nil
}

func (c mpquicConn) AcceptStream(ctx context.Context) (TransportStream, error) {
	return accepted(c.Conn.AcceptStream(ctx))
}

func (c mpquicConn) AcceptUniStream(ctx context.Context) (TransportStream, error) {
	return accepted(c.Conn.AcceptUniStream(ctx))
}

func accepted(s *mpquic.Stream, err error) (TransportStream, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}
