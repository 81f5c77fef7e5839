// Package bytemux carries streams over one reliable byte stream (a TCP,
// TLS or MPTCP connection) as length-prefixed frames, so that the traffic
// generator's one-stream-per-message protocol runs unchanged over the
// baselines' transports (package udpenv's Transport).
//
// Every frame is a type byte, the stream ID and the payload length
// (unsigned varints of encoding/binary), and the payload. Stream
// data goes in frames of at most MaxFrame bytes; a writer holds the
// connection for one frame at a time, so concurrent streams interleave
// frame by frame in the one byte stream, in the order their writers got
// the connection, and a frame waits behind every byte written before it:
// the head-of-line blocking of one TCP connection is real. There are no
// stream priorities (SetPriority does nothing) and no flow control of
// their own: the connection's reader goroutine takes every frame off the
// byte stream at once and keeps a stream's data until the stream is read,
// without a bound, so a stream nobody reads holds memory rather than
// stopping the byte stream (the underlying connection's flow control
// slows the sender only when the reader goroutine itself falls behind).
//
// Stream IDs follow QUIC's numbering (the client opens 0, 4, 8, … and the
// server 1, 5, 9, …; unidirectional streams 2 and 3 modulo 4).
package bytemux

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// MaxFrame is the largest payload of a data frame.
const MaxFrame = 16 << 10

// Frame types.
const (
	frameData  = 0 // stream data
	frameFin   = 1 // the sender's data on the stream ended
	frameReset = 2 // the sender abandoned the stream: payload the error code
	frameStop  = 3 // the receiver asks the sender to stop: payload the error code
	frameClose = 4 // the connection ends: payload the error code and the reason
)

// ApplicationError is how a connection the peer (or we) closed with
// CloseWithError ended.
type ApplicationError struct {
	Code   uint64
	Reason string
	Remote bool
}

func (e *ApplicationError) Error() string {
	who := "local"
	if e.Remote {
		who = "remote"
	}
	return fmt.Sprintf("bytemux: connection closed (%s): application error %#x: %s", who, e.Code, e.Reason)
}

// StreamError is how a stream the peer reset (or stopped) fails.
type StreamError struct {
	ID   uint64
	Code uint64
	// Stopped: the peer stopped our sending (STOP), else it reset its own.
	Stopped bool
}

func (e *StreamError) Error() string {
	if e.Stopped {
		return fmt.Sprintf("bytemux: stream %d stopped by the peer (code %#x)", e.ID, e.Code)
	}
	return fmt.Sprintf("bytemux: stream %d reset by the peer (code %#x)", e.ID, e.Code)
}

// Options configure a Conn.
type Options struct {
	// OnSent, if not nil, runs after a frame of stream data went into the
	// byte stream, with the stream and the bytes of its data (on the
	// writer's goroutine).
	OnSent func(stream uint64, n int)
}

// Conn is a multiplexed connection over a byte stream.
type Conn struct {
	nc     net.Conn
	client bool
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc

	wmu sync.Mutex // one frame at a time
	bw  *bufio.Writer

	mu       sync.Mutex
	streams  map[uint64]*Stream
	next     [2]uint64 // next ID we open: bidi, uni
	seen     [2]uint64 // number of peer streams seen: bidi, uni
	accepted [2]chan *Stream
	err      error
	rdone    chan struct{} // closed when the reader returned
}

// New starts multiplexing over nc; client says which end it is (the
// stream IDs it opens).
func New(nc net.Conn, client bool, opts Options) *Conn {
	c := &Conn{nc: nc, client: client, opts: opts, streams: map[uint64]*Stream{},
		bw: bufio.NewWriterSize(nc, MaxFrame+32), rdone: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for i := range c.accepted {
		c.accepted[i] = make(chan *Stream, 4096)
	}
	go c.readLoop()
	return c
}

// NetConn is the byte stream under the connection.
func (c *Conn) NetConn() net.Conn { return c.nc }

func (c *Conn) initiator() uint64 {
	if c.client {
		return 0
	}
	return 1
}

// OpenStream opens a bidirectional stream.
func (c *Conn) OpenStream() (*Stream, error) { return c.open(0) }

// OpenUniStream opens a unidirectional (send-only) stream.
func (c *Conn) OpenUniStream() (*Stream, error) { return c.open(1) }

func (c *Conn) open(uni uint64) (*Stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	id := c.next[uni]*4 + uni*2 + c.initiator()
	c.next[uni]++
	s := newStream(c, id, true, uni == 0)
	c.streams[id] = s
	return s, nil
}

// AcceptStream waits for the next bidirectional stream the peer opens.
func (c *Conn) AcceptStream(ctx context.Context) (*Stream, error) { return c.accept(ctx, 0) }

// AcceptUniStream waits for the next unidirectional stream the peer opens.
func (c *Conn) AcceptUniStream(ctx context.Context) (*Stream, error) { return c.accept(ctx, 1) }

func (c *Conn) accept(ctx context.Context, uni int) (*Stream, error) {
	select {
	case s := <-c.accepted[uni]:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, c.Err()
	}
}

// Context is done once the connection ended.
func (c *Conn) Context() context.Context { return c.ctx }

// Err is why the connection ended (nil while it runs).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// LocalAddr and RemoteAddr are the byte stream's addresses.
func (c *Conn) LocalAddr() net.Addr  { return c.nc.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// CloseWithError sends the peer a close frame (waiting at most a second
// for the byte stream to take it) and closes the byte stream.
func (c *Conn) CloseWithError(code uint64, reason string) error {
	if c.fail(&ApplicationError{Code: code, Reason: reason}) {
		p := binary.AppendUvarint(nil, code)
		p = append(p, reason...)
		c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		c.writeFrame(frameClose, 0, p, true)
		if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
			// Wait briefly for the peer to see the close and end its
			// side, so that our close does not reset the connection
			// under data still on its way to us.
			select {
			case <-time.After(time.Second):
			case <-c.readerDone():
			}
		}
	}
	return c.nc.Close()
}

// fail ends the connection with err unless it already ended; it reports
// whether it did.
func (c *Conn) fail(err error) bool {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return false
	}
	c.err = err
	// A copy: the map itself changes under c.mu (forget) while the
	// streams are woken.
	streams := make([]*Stream, 0, len(c.streams))
	for _, s := range c.streams {
		streams = append(streams, s)
	}
	c.mu.Unlock()
	c.cancel()
	for _, s := range streams {
		s.wake()
	}
	return true
}

// readerDone is closed once the reader goroutine returned.
func (c *Conn) readerDone() <-chan struct{} { return c.rdone }

// writeFrame writes one frame; force writes even after the connection
// ended (the close frame).
func (c *Conn) writeFrame(typ byte, id uint64, payload []byte, force bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !force {
		if err := c.Err(); err != nil {
			return err
		}
	}
	var hdr [1 + 2*binary.MaxVarintLen64]byte
	h := append(hdr[:0], typ)
	h = binary.AppendUvarint(h, id)
	h = binary.AppendUvarint(h, uint64(len(payload)))
	c.bw.Write(h)
	c.bw.Write(payload)
	if err := c.bw.Flush(); err != nil {
		c.fail(fmt.Errorf("bytemux: writing: %w", err))
		return c.Err()
	}
	return nil
}

// maxPayload bounds a frame's payload: data frames carry at most
// MaxFrame bytes, control frames a code and a reason.
const maxPayload = MaxFrame + 4096

// ReadFrame reads one frame from r: its type, stream ID and payload
// (a fresh slice). It fails on an unknown type or an oversized payload.
func ReadFrame(r *bufio.Reader) (typ byte, id uint64, payload []byte, err error) {
	typ, err = r.ReadByte()
	if err != nil {
		return 0, 0, nil, err
	}
	if typ > frameClose {
		return 0, 0, nil, fmt.Errorf("bytemux: unknown frame type %d", typ)
	}
	if id, err = binary.ReadUvarint(r); err != nil {
		return 0, 0, nil, noEOF(err)
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, 0, nil, noEOF(err)
	}
	if n > maxPayload {
		return 0, 0, nil, fmt.Errorf("bytemux: frame of %d bytes (at most %d)", n, maxPayload)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, 0, nil, noEOF(err)
	}
	return typ, id, payload, nil
}

// noEOF turns an end of the byte stream inside a frame into an error.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (c *Conn) readLoop() {
	defer close(c.rdone)
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		typ, id, payload, err := ReadFrame(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("bytemux: the peer closed the byte stream without a close frame")
			}
			c.fail(fmt.Errorf("bytemux: reading: %w", err))
			return
		}
		if typ == frameClose {
			code, k := binary.Uvarint(payload)
			if k <= 0 {
				code, k = 0, 0
			}
			c.fail(&ApplicationError{Code: code, Reason: string(payload[k:]), Remote: true})
			return
		}
		s, err := c.streamFor(id)
		if err != nil {
			c.fail(err)
			c.nc.Close()
			return
		}
		if s != nil {
			s.frame(typ, payload)
		}
	}
}

// streamFor returns the stream a frame is for, creating a stream the peer
// opens with it, or nil for a stream already forgotten.
func (c *Conn) streamFor(id uint64) (*Stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.streams[id]; s != nil {
		return s, nil
	}
	uni := (id >> 1) & 1
	if id&1 == c.initiator() {
		if id/4 >= c.next[uni] {
			return nil, fmt.Errorf("bytemux: frame for stream %d, which we did not open", id)
		}
		return nil, nil // ours, forgotten
	}
	if id/4 < c.seen[uni] {
		return nil, nil // the peer's, forgotten
	}
	var s *Stream
	for c.seen[uni] <= id/4 {
		sid := c.seen[uni]*4 + uni*2 + (1 - c.initiator())
		c.seen[uni]++
		s = newStream(c, sid, uni == 0, true)
		c.streams[sid] = s
		select {
		case c.accepted[uni] <- s:
		default:
			return nil, errors.New("bytemux: too many streams not accepted")
		}
	}
	return s, nil
}

// forget drops a stream whose both directions ended.
func (c *Conn) forget(id uint64) {
	c.mu.Lock()
	delete(c.streams, id)
	c.mu.Unlock()
}
