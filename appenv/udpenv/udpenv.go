// Package udpenv implements the application environment of package
// appenv over real UDP sockets with package mpquic. The blocking,
// goroutine-based connections and streams of mpquic are bridged into one
// event loop: helper goroutines do the blocking calls (Dial, Accept, Read,
// Write) and post their results to the loop, which alone runs application
// callbacks, one at a time.
package udpenv

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
)

// Config configures an Env.
type Config struct {
	// Client configures the connections Dial makes (nil: Dial fails).
	Client *mpquic.Config
	// Server configures the connections Listen accepts (nil: Listen fails).
	Server *mpquic.Config
	// Transport, if not nil, replaces mpquic (and Client and Server): the
	// baselines' transports (another QUIC implementation, streams over
	// TCP) run the same applications through it.
	Transport Transport
	// OnWritten, if not nil, runs on the loop each time the transport
	// took bytes of a stream (its Write returned), with whether the
	// stream's connection is one Dial made, the stream's ID and priority
	// flag: the hand-over count of transports that report no sent bytes
	// of their own.
	OnWritten func(dialed bool, stream uint64, priority bool, n int)
	// LocalAddr is the local UDP address Dial binds ("host:port", port 0
	// for any); default any address of the server's family.
	LocalAddr string
	// WriteBuffer bounds the bytes a stream's Write buffers ahead of
	// mpquic; default 256 KiB. ReadAhead bounds the bytes read from mpquic
	// ahead of the application's Read, in buffers of 16 KiB allocated as
	// needed; default 64 KiB.
	WriteBuffer, ReadAhead int
}

const readChunk = 16 << 10

// Env is the real-socket environment: wall-clock time and one goroutine
// running every callback.
type Env struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   []func()
	stopped bool
	wake    chan struct{}
	exited  chan struct{}

	// Owned by the loop.
	listeners []*listener
	conns     []*conn
}

var _ appenv.Env = (*Env)(nil)

// New starts an environment's event loop.
func New(cfg Config) *Env {
	if cfg.WriteBuffer <= 0 {
		cfg.WriteBuffer = 256 << 10
	}
	if cfg.ReadAhead <= 0 {
		cfg.ReadAhead = 64 << 10
	}
	if cfg.Transport == nil {
		cfg.Transport = mpquicTransport{client: cfg.Client, server: cfg.Server}
	}
	e := &Env{cfg: cfg, wake: make(chan struct{}, 1), exited: make(chan struct{})}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go e.loop()
	return e
}

func (e *Env) loop() {
	defer close(e.exited)
	var batch []func()
	for {
		e.mu.Lock()
		batch, e.queue = e.queue, batch[:0]
		stopped := e.stopped
		e.mu.Unlock()
		if stopped {
			return
		}
		for i, f := range batch {
			f()
			batch[i] = nil
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-e.wake:
		case <-e.ctx.Done():
			e.mu.Lock()
			e.stopped = true
			e.mu.Unlock()
		}
	}
}

// Post runs f on the event loop, after what is already queued; it may be
// called from any goroutine. After Close it does nothing.
func (e *Env) Post(f func()) {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.queue = append(e.queue, f)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Exec runs f on the event loop and waits until it returned; it is how
// code outside the loop starts applications. It must not be called from
// the loop.
func (e *Env) Exec(f func()) {
	done := make(chan struct{})
	e.Post(func() {
		defer close(done)
		f()
	})
	select {
	case <-done:
	case <-e.exited:
	}
}

// Close closes every listener and connection, and stops the loop (queued
// callbacks are dropped). It must not be called from the loop.
func (e *Env) Close() error {
	var ls []*listener
	var cs []*conn
	e.Exec(func() { ls, cs = e.listeners, e.conns })
	for _, c := range cs {
		c.c.CloseWithError(0, "environment closed")
	}
	for _, l := range ls {
		l.l.Close()
	}
	e.cancel()
	<-e.exited
	return nil
}

// Now implements appenv.Env: the wall clock.
func (e *Env) Now() time.Time { return time.Now() }

// AfterFunc implements appenv.Env with a runtime timer whose expiry is
// posted to the loop; cancelling on the loop wins over an expiry not yet
// run there.
func (e *Env) AfterFunc(d time.Duration, f func()) func() bool {
	const pending, fired, stopped = 0, 1, 2
	state := pending // owned by the loop
	t := time.AfterFunc(d, func() {
		e.Post(func() {
			if state == pending {
				state = fired
				f()
			}
		})
	})
	return func() bool {
		if state != pending {
			return false
		}
		state = stopped
		t.Stop()
		return true
	}
}

// Dial implements appenv.Env with the transport's Dial (mpquic.Dial by
// default) on a helper goroutine.
func (e *Env) Dial(addr string, done func(appenv.Conn, error)) { e.dial(addr, false, done) }

// DialEarly implements appenv.EarlyDialer with mpquic.DialEarly: the
// client's configuration needs Allow0RTT and a TLS ClientSessionCache
// holding a ticket of an earlier connection to the server. Transports
// without 0-RTT fail.
func (e *Env) DialEarly(addr string, done func(appenv.Conn, error)) { e.dial(addr, true, done) }

func (e *Env) dial(addr string, early bool, done func(appenv.Conn, error)) {
	dial := e.cfg.Transport.Dial
	if early {
		ed, ok := e.cfg.Transport.(earlyDialer)
		if !ok {
			e.Post(func() { done(nil, errors.New("udpenv: the transport has no 0-RTT")) })
			return
		}
		dial = ed.DialEarly
	}
	go func() {
		mc, err := dial(e.ctx, addr, e.cfg.LocalAddr)
		e.Post(func() {
			if err != nil {
				done(nil, err)
				return
			}
			c := e.newConn(mc)
			c.dialed = true
			c.early = early
			done(c, nil)
		})
	}()
}

// Listen implements appenv.Env with the transport's Listen (mpquic.Listen
// by default); a helper goroutine accepts.
func (e *Env) Listen(addr string, accept func(appenv.Conn)) (appenv.Listener, error) {
	ml, err := e.cfg.Transport.Listen(addr)
	if err != nil {
		return nil, err
	}
	l := &listener{e: e, l: ml}
	e.listeners = append(e.listeners, l)
	go func() {
		for {
			mc, err := ml.Accept(e.ctx)
			if err != nil {
				return
			}
			e.Post(func() {
				if l.closed {
					mc.CloseWithError(0x100, "not listening")
					return
				}
				accept(e.newConn(mc))
			})
		}
	}()
	return l, nil
}

type listener struct {
	e      *Env
	l      TransportListener
	closed bool
}

func (l *listener) Addr() string { return l.l.Addr().String() }

// Close stops accepting and closes the accepted connections; mpquic's
// Close waits for them, so it runs off the loop.
func (l *listener) Close() error {
	if !l.closed {
		l.closed = true
		go l.l.Close()
	}
	return nil
}

// conn adapts a TransportConn; its fields are owned by the loop.
type conn struct {
	e        *Env
	c        TransportConn
	onStream func(appenv.Stream)
	pending  []*stream
	onClosed func(error)
	closed   bool
	closeErr error
	// streams are those the application may still hear from.
	streams map[uint64]*stream
	// dialed: Dial made the connection (else Listen accepted it).
	dialed bool
	// early: dialled with DialEarly: streams opened before the handshake
	// completes send in 0-RTT packets.
	early bool
}

func (e *Env) newConn(mc TransportConn) *conn {
	c := &conn{e: e, c: mc, streams: map[uint64]*stream{}}
	e.conns = append(e.conns, c)
	accept := func(acc func(context.Context) (TransportStream, error), bidi bool) {
		for {
			ms, err := acc(mc.Context())
			if err != nil {
				return
			}
			e.Post(func() { c.incoming(c.wrap(ms, bidi, true)) })
		}
	}
	go accept(mc.AcceptStream, true)
	go accept(mc.AcceptUniStream, false)
	go func() {
		<-mc.Context().Done()
		e.Post(c.ended)
	}()
	return c
}

func (c *conn) incoming(s *stream) {
	if c.onStream != nil {
		c.onStream(s)
	} else {
		c.pending = append(c.pending, s)
	}
}

func (c *conn) ended() {
	if c.closed {
		return
	}
	c.closed, c.closeErr = true, c.c.Err()
	for _, s := range c.streams {
		s.notifyRead()
		s.notifyWrite()
	}
	if c.onClosed != nil {
		c.onClosed(c.closeErr)
	}
	for i, x := range c.e.conns {
		if x == c {
			c.e.conns = append(c.e.conns[:i], c.e.conns[i+1:]...)
			break
		}
	}
}

func (c *conn) open(bidi bool) (appenv.Stream, error) {
	var ms TransportStream
	var err error
	switch {
	case c.early:
		ms, err = c.c.(earlyConn).OpenEarlyStream(bidi)
	case bidi:
		ms, err = c.c.OpenStream()
	default:
		ms, err = c.c.OpenUniStream()
	}
	if err != nil {
		return nil, err
	}
	return c.wrap(ms, true, bidi), nil
}

func (c *conn) OpenStream() (appenv.Stream, error)    { return c.open(true) }
func (c *conn) OpenUniStream() (appenv.Stream, error) { return c.open(false) }

func (c *conn) OnStream(f func(appenv.Stream)) {
	c.onStream = f
	if len(c.pending) == 0 || f == nil {
		return
	}
	c.e.Post(func() {
		p := c.pending
		c.pending = nil
		for _, s := range p {
			if c.onStream != nil {
				c.onStream(s)
			}
		}
	})
}

// EarlyData reports the state of resumption and 0-RTT.
func (c *conn) EarlyData() core.EarlyDataState {
	if ec, ok := c.c.(earlyConn); ok {
		return ec.EarlyData()
	}
	return core.EarlyDataState{}
}

func (c *conn) OnClosed(f func(error))           { c.onClosed = f }
func (c *conn) Close(code uint64, reason string) { c.c.CloseWithError(code, reason) }
func (c *conn) LocalAddr() string                { return c.c.LocalAddr().String() }
func (c *conn) RemoteAddr() string               { return c.c.RemoteAddr().String() }
func (c *conn) wrap(ms TransportStream, send, recv bool) *stream {
	s := &stream{c: c, s: ms, canWrite: send, canRead: recv, readEnded: !recv, writeEnded: !send}
	c.streams[ms.StreamID()] = s
	if recv {
		n := max(1, c.e.cfg.ReadAhead/readChunk)
		s.free = make(chan []byte, n)
		for range n {
			s.free <- nil // a credit; the reader allocates on first use
		}
		go s.readLoop()
	}
	if send {
		s.wsig = make(chan struct{}, 1)
		go s.writeLoop()
	}
	return s
}

// stream adapts a TransportStream. A reader goroutine fills buffers from
// the free list and posts them; the loop returns them once read. A writer
// goroutine writes what the loop queued.
type stream struct {
	c                 *conn
	s                 TransportStream
	canRead, canWrite bool

	// Read side, owned by the loop (free is the goroutine's credit).
	free       chan []byte
	chunks     [][]byte
	roff       int
	rerr       error
	wantRead   bool
	onReadable func()

	// readEnded and writeEnded: the application saw the end of the
	// direction (or ended it); with both the stream is forgotten.
	readEnded, writeEnded bool

	// Write side: wq and wfin are shared with the writer goroutine.
	wmu        sync.Mutex
	wq         [][]byte
	wfin       bool
	wsig       chan struct{}
	buffered   int // loop: bytes queued, not yet written to mpquic
	werr       error
	wclosed    bool
	wantWrite  bool
	onWritable func()
	priority   bool // loop: the last SetPriority
}

func (s *stream) ID() uint64 { return s.s.StreamID() }

func (s *stream) readLoop() {
	done := s.c.c.Context().Done()
	for {
		var buf []byte
		select {
		case buf = <-s.free:
		case <-done:
			return
		}
		if buf == nil {
			buf = make([]byte, readChunk)
		}
		n, err := s.s.Read(buf)
		s.c.e.Post(func() { s.received(buf, n, err) })
		if err != nil {
			return
		}
	}
}

// received runs on the loop with what the reader goroutine read.
func (s *stream) received(buf []byte, n int, err error) {
	if n > 0 {
		s.chunks = append(s.chunks, buf[:n])
	} else {
		s.free <- buf[:cap(buf)]
	}
	if err != nil && s.rerr == nil {
		s.rerr = err
	}
	s.notifyRead()
}

func (s *stream) notifyRead() {
	if s.wantRead && s.onReadable != nil {
		s.wantRead = false
		s.onReadable()
	}
}

func (s *stream) Read(p []byte) (int, error) {
	if !s.canRead {
		return 0, errors.New("udpenv: stream has no receiving direction")
	}
	n := 0
	for n < len(p) && len(s.chunks) > 0 {
		c := s.chunks[0]
		k := copy(p[n:], c[s.roff:])
		n += k
		s.roff += k
		if s.roff == len(c) {
			s.free <- c[:cap(c)]
			s.chunks[0] = nil
			s.chunks = s.chunks[1:]
			s.roff = 0
		}
	}
	switch {
	case n > 0:
		return n, nil
	case s.rerr != nil:
		s.readEnded = true
		s.forget()
		return 0, s.rerr
	case s.c.closed:
		return 0, s.c.closeErr
	}
	s.wantRead = true
	return 0, nil
}

// forget drops the stream once the application is done with both
// directions.
func (s *stream) forget() {
	if s.readEnded && s.writeEnded {
		delete(s.c.streams, s.s.StreamID())
	}
}

func (s *stream) OnReadable(f func()) {
	s.onReadable = f
	if f == nil || !s.canRead {
		return
	}
	s.wantRead = true
	if len(s.chunks) > 0 || s.rerr != nil || s.c.closed {
		s.c.e.Post(s.notifyRead)
	}
}

func (s *stream) writeLoop() {
	done := s.c.c.Context().Done()
	for {
		s.wmu.Lock()
		q, fin := s.wq, s.wfin
		s.wq = nil
		s.wmu.Unlock()
		if len(q) == 0 {
			if fin {
				err := s.s.Close()
				if err != nil {
					s.c.e.Post(func() { s.wrote(0, err) })
				}
				return
			}
			select {
			case <-s.wsig:
				continue
			case <-done:
				return
			}
		}
		for _, b := range q {
			n, err := s.s.Write(b)
			s.c.e.Post(func() { s.wrote(n, err) })
			if err != nil {
				return
			}
		}
	}
}

// wrote runs on the loop when the writer goroutine handed n bytes to
// mpquic.
func (s *stream) wrote(n int, err error) {
	s.buffered -= n
	if n > 0 && s.c.e.cfg.OnWritten != nil {
		s.c.e.cfg.OnWritten(s.c.dialed, s.s.StreamID(), s.priority, n)
	}
	if err != nil && s.werr == nil {
		s.werr = err
	}
	s.notifyWrite()
}

func (s *stream) notifyWrite() {
	if s.wantWrite && s.onWritable != nil {
		s.wantWrite = false
		s.onWritable()
	}
}

func (s *stream) Write(p []byte) (int, error) {
	switch {
	case !s.canWrite:
		return 0, errors.New("udpenv: stream has no sending direction")
	case s.werr != nil:
		s.writeEnded = true
		s.forget()
		return 0, s.werr
	case s.c.closed:
		return 0, s.c.closeErr
	case s.wclosed:
		return 0, errors.New("udpenv: write after close")
	}
	n := min(len(p), s.c.e.cfg.WriteBuffer-s.buffered)
	if n > 0 {
		b := make([]byte, n)
		copy(b, p)
		s.wmu.Lock()
		s.wq = append(s.wq, b)
		s.wmu.Unlock()
		s.buffered += n
		signal(s.wsig)
	}
	if n < len(p) {
		s.wantWrite = true
	}
	return n, nil
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (s *stream) OnWritable(f func()) { s.onWritable = f }

func (s *stream) Close() error {
	if !s.canWrite {
		return errors.New("udpenv: stream has no sending direction")
	}
	if s.wclosed {
		return nil
	}
	s.wclosed, s.writeEnded = true, true
	s.forget()
	s.wmu.Lock()
	s.wfin = true
	s.wmu.Unlock()
	signal(s.wsig)
	return nil
}

func (s *stream) CancelWrite(code uint64) {
	if !s.canWrite {
		return
	}
	s.wclosed, s.writeEnded = true, true
	s.forget()
	s.wmu.Lock()
	s.wq, s.wfin = nil, false
	s.wmu.Unlock()
	s.s.CancelWrite(code)
}

func (s *stream) CancelRead(code uint64) {
	if s.canRead {
		s.readEnded = true
		s.forget()
		s.s.CancelRead(code)
	}
}

func (s *stream) SetPriority(p bool) {
	s.priority = p
	s.s.SetPriority(p)
}
