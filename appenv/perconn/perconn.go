// Package perconn carries every stream a client opens on a connection of
// its own (transport.connection = "per-request"), over another of package
// udpenv's transports (kernel TCP, TLS, MPTCP, quic-go): what a client
// that opens a connection for each request and closes it after the reply
// does, HTTP/1.0-style, handshake included in each request's time. With a
// pool (transport.connection = "pool", NewPool) a stream goes on an idle
// connection where there is one, one stream at a time per connection, as
// an HTTP/1.1 client without pipelining (see pool.go).
//
// To the environment above it looks like one connection. On the client,
// Dial connects nothing: each OpenStream dials a new connection of the
// inner transport (or takes an idle one of the pool) and opens one stream
// on it; the stream's reads and writes wait for that connection (its
// handshake), and Close, once the application is done with the stream (it
// read the whole reply), ends the sending direction and closes the
// connection (or returns it to the pool). On the server the listener
// hands out one connection that gathers the streams of every connection
// the inner listener accepts: one client per listener, as in an
// experiment. Only bidirectional streams opened by the client exist.
//
// Stream IDs are the logical connection's own, in QUIC's numbering: the
// client's n-th stream is 4n, the server numbers the streams in the order
// it accepts them. Connections counts the connections opened (client) or
// accepted (server).
package perconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/mpq/mpq/appenv/udpenv"
)

// errNoServerStreams is how the streams no end opens here fail.
var errNoServerStreams = errors.New("perconn: one connection per request carries the client's bidirectional streams only")

// errClosed ends a connection closed locally.
var errClosed = errors.New("perconn: connection closed")

// Transport opens a connection of Inner per client stream, or keeps them
// in a pool.
type Transport struct {
	inner udpenv.Transport
	pool  *PoolConfig // nil: a connection per stream
}

var _ udpenv.Transport = (*Transport)(nil)

// New wraps inner: a connection per stream.
func New(inner udpenv.Transport) *Transport { return &Transport{inner: inner} }

// NewPool wraps inner: the client's streams go on a pool of connections
// configured by cfg.
func NewPool(inner udpenv.Transport, cfg PoolConfig) *Transport {
	return &Transport{inner: inner, pool: &cfg}
}

// addr is the address of a logical connection before it has one.
type addr string

func (a addr) Network() string { return "per-request" }
func (a addr) String() string  { return string(a) }

// group is what both ends' logical connections share: the live
// connections under them, their count and the logical connection's end.
type group struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	live   map[udpenv.TransportConn]bool
	first  udpenv.TransportConn
	count  int
	closed bool
	// onEnd, if set, learns of every connection that ended.
	onEnd func(udpenv.TransportConn)
}

func newGroup() *group {
	g := &group{live: map[udpenv.TransportConn]bool{}}
	g.ctx, g.cancel = context.WithCancelCause(context.Background())
	return g
}

// add registers a new connection; false if the logical connection ended
// (the caller closes c).
// The server closes a connection that ended (the client closed it): the
// client's own close is under way already.
func (g *group) add(c udpenv.TransportConn, server bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.live[c] = true
	g.count++
	if g.first == nil {
		g.first = c
	}
	go func() {
		<-c.Context().Done()
		if server {
			c.CloseWithError(0, "closed by the client")
		}
		g.mu.Lock()
		delete(g.live, c)
		g.mu.Unlock()
		if g.onEnd != nil {
			g.onEnd(c)
		}
	}()
	return true
}

// Connections is the number of connections opened or accepted.
func (g *group) Connections() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.count
}

// Sample is the first connection (nil before there is one), for what
// every connection of the transport shares (its kind, its kernel's
// congestion controller).
func (g *group) Sample() udpenv.TransportConn {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.first
}

// Context is done once the logical connection ended.
func (g *group) Context() context.Context { return g.ctx }

// Err is why the logical connection ended (nil while it runs).
func (g *group) Err() error {
	if g.ctx.Err() == nil {
		return nil
	}
	return context.Cause(g.ctx)
}

// CloseWithError closes every live connection and ends the logical one.
func (g *group) CloseWithError(code uint64, reason string) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	live := make([]udpenv.TransportConn, 0, len(g.live))
	for c := range g.live {
		live = append(live, c)
	}
	g.mu.Unlock()
	g.cancel(fmt.Errorf("%w (application error %#x: %s)", errClosed, code, reason))
	var wg sync.WaitGroup
	for _, c := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.CloseWithError(code, reason)
		}()
	}
	wg.Wait()
	return nil
}

// Dial returns the client's logical connection to addr; it connects
// nothing until a stream is opened.
func (t *Transport) Dial(ctx context.Context, to, local string) (udpenv.TransportConn, error) {
	c := &clientConn{group: newGroup(), t: t, to: to, local: local, pool: newPool(t.pool)}
	c.onEnd = c.pool.ended
	return c, nil
}

// clientConn is the client's logical connection.
type clientConn struct {
	*group
	t         *Transport
	to, local string
	pool      *pool

	nmu  sync.Mutex
	next uint64 // streams opened
}

// OpenStream opens a stream on an idle connection of the pool, or on a
// new connection, which it starts dialling; the stream's calls wait for
// it.
func (c *clientConn) OpenStream() (udpenv.TransportStream, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	c.nmu.Lock()
	id := c.next * 4
	c.next++
	c.nmu.Unlock()
	s := &clientStream{c: c, id: id, ready: make(chan struct{})}
	if conn := c.pool.take(); conn != nil {
		s.open(conn)
		close(s.ready)
		return s, nil
	}
	go s.connect()
	return s, nil
}

// CloseWithError stops the pool and closes every connection.
func (c *clientConn) CloseWithError(code uint64, reason string) error {
	c.pool.close()
	return c.group.CloseWithError(code, reason)
}

// PoolStats are the counts of the client's connections.
func (c *clientConn) PoolStats() PoolStats { return c.pool.stats() }

func (c *clientConn) OpenUniStream() (udpenv.TransportStream, error) {
	return nil, errNoServerStreams
}

// AcceptStream waits for the end of the connection: the server opens no
// streams.
func (c *clientConn) AcceptStream(ctx context.Context) (udpenv.TransportStream, error) {
	return c.waitEnd(ctx)
}

func (c *clientConn) AcceptUniStream(ctx context.Context) (udpenv.TransportStream, error) {
	return c.waitEnd(ctx)
}

func (g *group) waitEnd(ctx context.Context) (udpenv.TransportStream, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-g.ctx.Done():
		return nil, g.Err()
	}
}

func (c *clientConn) LocalAddr() net.Addr {
	if s := c.Sample(); s != nil {
		return s.LocalAddr()
	}
	return addr(c.local)
}

func (c *clientConn) RemoteAddr() net.Addr {
	if s := c.Sample(); s != nil {
		return s.RemoteAddr()
	}
	return addr(c.to)
}

// clientStream is a stream on a connection of its own.
type clientStream struct {
	c     *clientConn
	id    uint64
	ready chan struct{} // closed once conn and inner, or err, are set
	conn  udpenv.TransportConn
	inner udpenv.TransportStream
	err   error
}

// connect dials the stream's connection and opens the stream on it.
func (s *clientStream) connect() {
	defer close(s.ready)
	conn, err := s.c.t.inner.Dial(s.c.ctx, s.c.to, s.c.local)
	if err != nil {
		s.c.pool.dialled(nil)
		s.err = fmt.Errorf("perconn: connecting for stream %d: %w", s.id, err)
		return
	}
	s.c.pool.dialled(conn)
	if !s.c.add(conn, false) {
		s.c.pool.ended(conn)
		conn.CloseWithError(0, "connection closed")
		s.err = s.c.Err()
		return
	}
	s.open(conn)
}

// open opens the stream on conn; a connection that cannot open it is
// closed.
func (s *clientStream) open(conn udpenv.TransportConn) {
	inner, err := conn.OpenStream()
	if err != nil {
		s.c.pool.ended(conn)
		conn.CloseWithError(0, "no stream")
		s.err = err
		return
	}
	s.conn, s.inner = conn, inner
}

// wait waits for the stream's connection.
func (s *clientStream) wait() error {
	<-s.ready
	return s.err
}

func (s *clientStream) StreamID() uint64 { return s.id }

func (s *clientStream) Read(p []byte) (int, error) {
	if err := s.wait(); err != nil {
		return 0, err
	}
	return s.inner.Read(p)
}

func (s *clientStream) Write(p []byte) (int, error) {
	if err := s.wait(); err != nil {
		return 0, err
	}
	return s.inner.Write(p)
}

// Close ends the stream's sending direction and closes its connection
// or returns it to the pool: the application closes a stream once it
// read the whole reply.
func (s *clientStream) Close() error {
	if err := s.wait(); err != nil {
		return err
	}
	err := s.inner.Close()
	s.c.pool.put(s.conn)
	return err
}

func (s *clientStream) CancelWrite(code uint64) {
	if s.wait() == nil {
		s.inner.CancelWrite(code)
	}
}

func (s *clientStream) CancelRead(code uint64) {
	if s.wait() == nil {
		s.inner.CancelRead(code)
	}
}

// SetPriority does nothing: the stream has its connection to itself.
func (s *clientStream) SetPriority(bool) {}

// Listen listens on addr with the inner transport; its one logical
// connection gathers the streams of every connection accepted.
func (t *Transport) Listen(a string) (udpenv.TransportListener, error) {
	l, err := t.inner.Listen(a)
	if err != nil {
		return nil, err
	}
	sl := &listener{inner: l, conn: &serverConn{group: newGroup(), streams: make(chan udpenv.TransportStream, 4096)},
		first: make(chan struct{})}
	go sl.acceptLoop()
	return sl, nil
}

type listener struct {
	inner  udpenv.TransportListener
	conn   *serverConn
	first  chan struct{} // closed when the first connection arrived or accepting ended
	once   sync.Once
	handed bool
	mu     sync.Mutex
}

func (l *listener) acceptLoop() {
	defer l.once.Do(func() { close(l.first) })
	for {
		c, err := l.inner.Accept(l.conn.ctx)
		if err != nil {
			return
		}
		if !l.conn.add(c, true) {
			c.CloseWithError(0, "connection closed")
			return
		}
		go l.conn.acceptStreams(c)
		l.once.Do(func() { close(l.first) })
	}
}

// Accept returns the logical connection once the first connection
// arrived; later calls wait until the listener is closed.
func (l *listener) Accept(ctx context.Context) (udpenv.TransportConn, error) {
	select {
	case <-l.first:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l.mu.Lock()
	handed := l.handed
	l.handed = true
	l.mu.Unlock()
	if !handed && l.conn.Connections() > 0 {
		return l.conn, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.conn.ctx.Done():
		return nil, net.ErrClosed
	}
}

func (l *listener) Addr() net.Addr { return l.inner.Addr() }

// Close stops accepting and closes the logical connection.
func (l *listener) Close() error {
	err := l.inner.Close()
	l.conn.CloseWithError(0, "listener closed")
	return err
}

// serverConn is the server's logical connection.
type serverConn struct {
	*group
	streams chan udpenv.TransportStream

	nmu  sync.Mutex
	next uint64 // streams accepted
}

// acceptStreams hands the streams of connection c to the logical
// connection, numbered in the order they come.
func (c *serverConn) acceptStreams(pc udpenv.TransportConn) {
	for {
		s, err := pc.AcceptStream(pc.Context())
		if err != nil {
			return
		}
		c.nmu.Lock()
		id := c.next * 4
		c.next++
		c.nmu.Unlock()
		select {
		case c.streams <- &serverStream{TransportStream: s, id: id}:
		case <-c.ctx.Done():
			return
		}
	}
}

func (c *serverConn) OpenStream() (udpenv.TransportStream, error)    { return nil, errNoServerStreams }
func (c *serverConn) OpenUniStream() (udpenv.TransportStream, error) { return nil, errNoServerStreams }

func (c *serverConn) AcceptStream(ctx context.Context) (udpenv.TransportStream, error) {
	select {
	case s := <-c.streams:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, c.Err()
	}
}

func (c *serverConn) AcceptUniStream(ctx context.Context) (udpenv.TransportStream, error) {
	return c.waitEnd(ctx)
}

func (c *serverConn) LocalAddr() net.Addr {
	if s := c.Sample(); s != nil {
		return s.LocalAddr()
	}
	return addr("")
}

func (c *serverConn) RemoteAddr() net.Addr {
	if s := c.Sample(); s != nil {
		return s.RemoteAddr()
	}
	return addr("")
}

// serverStream is an accepted stream under its logical ID.
type serverStream struct {
	udpenv.TransportStream
	id uint64
}

func (s *serverStream) StreamID() uint64 { return s.id }
