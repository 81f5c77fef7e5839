package mpquic

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

// ErrConnClosed is returned by operations on a connection that ended
// without a more specific error.
var ErrConnClosed = errors.New("mpquic: connection closed")

// Conn is a QUIC connection driven over UDP sockets. It is safe for
// concurrent use by multiple goroutines.
type Conn struct {
	mu      sync.Mutex
	c       *core.Conn
	sockets map[netip.AddrPort]*socket
	// ownSockets are closed when the connection ends (dialled conns).
	ownSockets []*socket
	// noGSO keeps GSO off on the sockets of paths it adds
	// (Config.DisableGSO).
	noGSO bool
	// ep is the client's endpoint, which routes the datagrams of every
	// path's socket; nil for server connections.
	ep          *core.Endpoint
	pathWaiters map[uint64]chan error
	pathsSig    chan struct{}

	in   *inbox
	wake chan struct{}
	// sendSize is the capacity of the send buffers, allocated as they
	// are first used: the largest datagram the connection sends.
	sendSize int

	streams    map[uint64]*Stream
	acceptBidi []*Stream
	acceptUni  []*Stream
	// acceptSig[0] wakes AcceptStream, acceptSig[1] AcceptUniStream: one
	// shared signal let a waiter of one kind swallow the wake-up of the
	// other and strand its stream.
	acceptSig [2]chan struct{}
	openSig   chan struct{}

	handshakeDone chan struct{}
	closed        chan struct{}
	closeErr      error
	ctx           context.Context
	cancel        context.CancelFunc
	// onHandshake is called, with c.mu held, when the handshake
	// completes; onClose when the connection has ended.
	onHandshake func()
	onClose     func()
	readyDone   bool
}

func newDriverConn(c *core.Conn, sendSize int, dropped *atomic.Uint64, socks ...*socket) *Conn {
	dc := &Conn{
		c:             c,
		sockets:       map[netip.AddrPort]*socket{},
		pathWaiters:   map[uint64]chan error{},
		pathsSig:      make(chan struct{}, 1),
		in:            newInbox(dropped),
		wake:          make(chan struct{}, 1),
		sendSize:      sendSize,
		streams:       map[uint64]*Stream{},
		acceptSig:     [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)},
		openSig:       make(chan struct{}, 1),
		handshakeDone: make(chan struct{}),
		closed:        make(chan struct{}),
	}
	dc.ctx, dc.cancel = context.WithCancel(context.Background())
	for _, s := range socks {
		dc.sockets[s.local] = s
		s.register(c, dc)
	}
	return dc
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run drives the sans-IO connection: datagrams in, timers, datagrams out.
func (c *Conn) run() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// batch holds the datagrams taken from the inbox, handled from pos on
	// at most handleMax at a time, with sending in between.
	var batch []inDatagram
	pos := 0
	for {
		c.flush()
		c.mu.Lock()
		done, _ := c.c.Closed()
		next := c.c.NextTimeout()
		c.mu.Unlock()
		if done {
			for _, in := range batch[pos:] {
				putBuf(in.buf)
			}
			c.shutdown()
			return
		}
		if pos < len(batch) {
			pos = c.handle(batch, pos)
			continue
		}
		if next.IsZero() {
			next = time.Now().Add(time.Hour)
		}
		timer.Reset(time.Until(next))
		select {
		case <-c.in.sig:
			batch = c.in.take(batch[:0])
			pos = c.handle(batch, 0)
		case <-timer.C:
			c.mu.Lock()
			c.c.HandleTimeout(time.Now())
			c.mu.Unlock()
		case <-c.wake:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// handleMax is how many datagrams are handled between two sends.
const handleMax = 64

// handle passes batch[pos:] to the connection, at most handleMax of them,
// and returns where it stopped.
func (c *Conn) handle(batch []inDatagram, pos int) int {
	end := min(len(batch), pos+handleMax)
	c.mu.Lock()
	for i := pos; i < end; i++ {
		c.c.HandleDatagram(time.Now(), batch[i].d)
		putBuf(batch[i].buf)
		batch[i] = inDatagram{}
	}
	c.mu.Unlock()
	return end
}

// sendBatch holds datagrams polled under the lock and written after it.
type sendBatch struct {
	bufs [][]byte
	to   []netip.AddrPort
	from []netip.AddrPort
	n    int
	// gsoBuf and oob are scratch space of GSO writes.
	gsoBuf, oob []byte
}

const batchSize = 32

// newSendBatch returns a batch whose buffers are allocated as they are
// first used.
func newSendBatch() *sendBatch {
	return &sendBatch{bufs: make([][]byte, batchSize), to: make([]netip.AddrPort, batchSize), from: make([]netip.AddrPort, batchSize)}
}

// sendBatches holds the send batches between two flushes: a connection
// holds one only while it sends, not its datagram buffers and GSO scratch
// space (tens of KiB once it sent a burst) for its whole life, which a
// server with many connections that wait would pay for each.
var sendBatches = sync.Pool{New: func() any { return newSendBatch() }}

// flush sends everything the connection has to send and dispatches events.
func (c *Conn) flush() {
	b := sendBatches.Get().(*sendBatch)
	defer sendBatches.Put(b)
	for {
		c.mu.Lock()
		now := time.Now()
		b.n = 0
		for b.n < batchSize {
			if cap(b.bufs[b.n]) < c.sendSize {
				// New, or of a connection that sends smaller datagrams.
				b.bufs[b.n] = make([]byte, 0, c.sendSize)
			}
			d, ok := c.c.PollDatagram(now, b.bufs[b.n][:0])
			if !ok {
				break
			}
			b.to[b.n], b.from[b.n] = d.Remote, d.Local
			b.bufs[b.n] = d.Data
			b.n++
		}
		c.dispatchEvents()
		c.mu.Unlock()
		c.send(b)
		if b.n < batchSize {
			return
		}
	}
}

// send writes the datagrams of the batch. Consecutive datagrams from one
// socket to one destination form runs for GSO: each datagram of a run but
// the last has the size of the first.
func (c *Conn) send(b *sendBatch) {
	for i := 0; i < b.n; {
		// AddPathTo adds sockets while batches are sent: look up under
		// the lock.
		c.mu.Lock()
		s := c.sockets[b.from[i]]
		if s == nil {
			for _, s = range c.sockets {
				break
			}
		}
		c.mu.Unlock()
		j, size, total := i+1, len(b.bufs[i]), len(b.bufs[i])
		for j < b.n && j-i < gsoMaxSegments && b.from[j] == b.from[i] && b.to[j] == b.to[i] &&
			len(b.bufs[j]) <= size && total+len(b.bufs[j]) <= gsoMaxBytes {
			total += len(b.bufs[j])
			j++
			if len(b.bufs[j-1]) < size {
				break // a shorter datagram ends the run
			}
		}
		if s != nil {
			b.gsoBuf, b.oob = s.writeRun(b.bufs[i:j], b.to[i], b.gsoBuf, b.oob)
		}
		for k := i; k < j; k++ {
			b.bufs[k] = b.bufs[k][:0]
		}
		i = j
	}
}

// dispatchEvents wakes the goroutines waiting for what changed. Called with
// c.mu held.
func (c *Conn) dispatchEvents() {
	for {
		e, ok := c.c.PollEvent()
		if !ok {
			return
		}
		switch e.Kind {
		case core.EventHandshakeDone:
			select {
			case <-c.handshakeDone:
			default:
				close(c.handshakeDone)
				c.in.setLimit(inboxEstablished)
				c.ready()
			}
		case core.EventEarlyData:
			c.ready()
		case core.EventStreamIncoming:
			if cs := c.c.AcceptStream(); cs != nil {
				s := c.wrapStream(cs)
				if cs.ID()&2 == 0 {
					c.acceptBidi = append(c.acceptBidi, s)
					signal(c.acceptSig[0])
				} else {
					c.acceptUni = append(c.acceptUni, s)
					signal(c.acceptSig[1])
				}
			}
		case core.EventStreamReadable:
			if s := c.streams[e.StreamID]; s != nil {
				signal(s.readSig)
			}
		case core.EventStreamWritable:
			if s := c.streams[e.StreamID]; s != nil {
				signal(s.writeSig)
			}
		case core.EventStreamsAvailable:
			signal(c.openSig)
		case core.EventClosed:
			c.markClosed(e.Err)
		case core.EventPathValidated, core.EventPathFailed, core.EventPathClosed, core.EventPathsAvailable:
			c.pathEvent(e)
		}
	}
}

// ready runs onHandshake once: when the handshake completes, or before,
// when the server accepted 0-RTT.
func (c *Conn) ready() {
	if c.onHandshake != nil && !c.readyDone {
		c.readyDone = true
		c.onHandshake()
	}
}

func (c *Conn) markClosed(err error) {
	select {
	case <-c.closed:
		return
	default:
	}
	if err == nil {
		err = ErrConnClosed
	}
	c.closeErr = err
	close(c.closed)
	c.cancel()
	for _, s := range c.streams {
		signal(s.readSig)
		signal(s.writeSig)
	}
}

func (c *Conn) shutdown() {
	c.mu.Lock()
	_, err := c.c.Closed()
	c.markClosed(err)
	for _, s := range c.sockets {
		s.unregister(c.c)
	}
	c.mu.Unlock()
	for _, s := range c.ownSockets {
		_ = s.close()
	}
	c.in.close()
	if c.onClose != nil {
		c.onClose()
	}
}

func (c *Conn) kick() { signal(c.wake) }

// unreachable passes an ICMP error received on the socket at local to the
// connection.
func (c *Conn) unreachable(local netip.AddrPort, e icmpError) {
	c.mu.Lock()
	c.c.HandleUnreachable(time.Now(), local, e.remote, e.quoted, e.reason)
	c.mu.Unlock()
	c.kick()
}

func (c *Conn) wrapStream(cs *core.Stream) *Stream {
	s := &Stream{conn: c, s: cs, readSig: make(chan struct{}, 1), writeSig: make(chan struct{}, 1)}
	c.streams[cs.ID()] = s
	return s
}

func (c *Conn) err() error {
	select {
	case <-c.closed:
		return c.closeErr
	default:
		return nil
	}
}

// OpenStream opens a bidirectional stream without waiting; it fails when
// the peer's stream limit is reached.
func (c *Conn) OpenStream() (*Stream, error) { return c.open(true) }

// OpenUniStream opens a unidirectional stream without waiting.
func (c *Conn) OpenUniStream() (*Stream, error) { return c.open(false) }

func (c *Conn) open(bidi bool) (*Stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.err(); err != nil {
		return nil, err
	}
	cs, err := c.c.OpenStream(bidi)
	if err != nil {
		return nil, err
	}
	return c.wrapStream(cs), nil
}

// OpenEarlyStream opens a stream whose data may go in 0-RTT packets, on a
// connection from DialEarly before its handshake completed (see
// core.Conn.OpenEarlyStream: that data can be replayed by an attacker, so
// use it only for requests that are safe to repeat). It fails with
// core.ErrHandshakeIncomplete when 0-RTT is not possible (no ticket, or
// the ticket or configuration does not allow it): wait for
// HandshakeComplete then. After the handshake it is OpenStream.
func (c *Conn) OpenEarlyStream(bidi bool) (*Stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.err(); err != nil {
		return nil, err
	}
	cs, err := c.c.OpenEarlyStream(bidi)
	if err != nil {
		return nil, err
	}
	return c.wrapStream(cs), nil
}

// HandshakeComplete is closed when the handshake completed.
func (c *Conn) HandshakeComplete() <-chan struct{} { return c.handshakeDone }

// EarlyData reports the state of session resumption and 0-RTT; Accepted is
// meaningful once the handshake completed.
func (c *Conn) EarlyData() core.EarlyDataState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.EarlyData()
}

// OpenStreamSync opens a bidirectional stream, waiting for the peer's
// stream limit if needed.
func (c *Conn) OpenStreamSync(ctx context.Context) (*Stream, error) { return c.openSync(ctx, true) }

// OpenUniStreamSync opens a unidirectional stream, waiting if needed.
func (c *Conn) OpenUniStreamSync(ctx context.Context) (*Stream, error) {
	return c.openSync(ctx, false)
}

func (c *Conn) openSync(ctx context.Context, bidi bool) (*Stream, error) {
	for {
		s, err := c.open(bidi)
		if !errors.Is(err, core.ErrStreamLimit) {
			if err == nil {
				c.kick() // STREAMS_BLOCKED may be queued
			}
			return s, err
		}
		c.kick()
		select {
		case <-c.openSig:
		case <-c.closed:
			return nil, c.closeErr
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// AcceptStream waits for the next bidirectional stream the peer opens.
func (c *Conn) AcceptStream(ctx context.Context) (*Stream, error) { return c.accept(ctx, true) }

// AcceptUniStream waits for the next unidirectional stream the peer opens.
func (c *Conn) AcceptUniStream(ctx context.Context) (*Stream, error) { return c.accept(ctx, false) }

func (c *Conn) accept(ctx context.Context, bidi bool) (*Stream, error) {
	for {
		c.mu.Lock()
		q, sig := &c.acceptUni, c.acceptSig[1]
		if bidi {
			q, sig = &c.acceptBidi, c.acceptSig[0]
		}
		if len(*q) > 0 {
			s := (*q)[0]
			*q = (*q)[1:]
			more := len(*q) > 0
			c.mu.Unlock()
			if more {
				signal(sig) // for another waiter of the same kind
			}
			return s, nil
		}
		c.mu.Unlock()
		select {
		case <-sig:
		case <-c.closed:
			return nil, c.closeErr
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// CloseWithError closes the connection with an application error code
// (RFC 9000 Section 10.2) and waits briefly for the CONNECTION_CLOSE to go.
func (c *Conn) CloseWithError(code uint64, reason string) error {
	c.mu.Lock()
	c.c.Advance(time.Now())
	c.c.Close(code, reason)
	c.mu.Unlock()
	c.kick()
	return nil
}

// Close closes the connection with application error code 0.
func (c *Conn) Close() error { return c.CloseWithError(0, "") }

// Context is done when the connection is closed.
func (c *Conn) Context() context.Context { return c.ctx }

// Done is closed when the connection ends; Err tells why.
func (c *Conn) Done() <-chan struct{} { return c.closed }

// Err returns why the connection closed, nil while it is open.
func (c *Conn) Err() error { return c.err() }

// ConnectionState returns the TLS state.
func (c *Conn) ConnectionState() tls.ConnectionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.ConnectionState()
}

// Paths returns the statistics of every path of the connection.
func (c *Conn) Paths() []PathStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.Paths()
}

// PathEvents returns the connection's path events (a path found broken,
// recovered, abandoned after failing), those of forgotten paths included.
func (c *Conn) PathEvents() []PathEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.PathEvents()
}

// LocalAddr is the local address of the first path.
func (c *Conn) LocalAddr() net.Addr {
	ps := c.Paths()
	return net.UDPAddrFromAddrPort(ps[0].Local)
}

// RemoteAddr is the peer's address on the first path.
func (c *Conn) RemoteAddr() net.Addr {
	ps := c.Paths()
	return net.UDPAddrFromAddrPort(ps[0].Remote)
}
