package bytemux

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
)

// Stream is one multiplexed stream. Read and Write block; any goroutine
// may call them (one reader and one writer at a time).
type Stream struct {
	c  *Conn
	id uint64

	// wmu serialises the stream's writers; werr is why writing fails
	// (the peer stopped the stream, we closed or reset it).
	wmu      sync.Mutex
	canWrite bool

	mu     sync.Mutex
	sig    chan struct{}
	chunks [][]byte
	fin    bool  // the peer's data ended (after chunks)
	rerr   error // the peer reset the stream, or we stopped reading
	werr   error
	// readDone and writeDone: the direction ended for us; with both the
	// stream is forgotten.
	readDone, writeDone bool
}

func newStream(c *Conn, id uint64, send, recv bool) *Stream {
	return &Stream{c: c, id: id, canWrite: send, sig: make(chan struct{}, 1), readDone: !recv, writeDone: !send}
}

// StreamID is the stream's ID.
func (s *Stream) StreamID() uint64 { return s.id }

func (s *Stream) wake() {
	select {
	case s.sig <- struct{}{}:
	default:
	}
}

// frame takes a frame the peer sent on the stream (on the reader
// goroutine).
func (s *Stream) frame(typ byte, payload []byte) {
	s.mu.Lock()
	switch typ {
	case frameData:
		if !s.fin && s.rerr == nil && len(payload) > 0 {
			s.chunks = append(s.chunks, payload)
		}
	case frameFin:
		s.fin = true
	case frameReset:
		code, _ := binary.Uvarint(payload)
		if s.rerr == nil {
			s.rerr = &StreamError{ID: s.id, Code: code}
		}
		s.chunks = nil
	case frameStop:
		code, _ := binary.Uvarint(payload)
		if s.werr == nil {
			s.werr = &StreamError{ID: s.id, Code: code, Stopped: true}
		}
	}
	s.mu.Unlock()
	s.wake()
}

// Read reads the stream's data; it returns io.EOF after the peer's last
// byte, a *StreamError if the peer reset the stream, and the connection's
// error once it ended.
func (s *Stream) Read(p []byte) (int, error) {
	for {
		s.mu.Lock()
		n := 0
		for n < len(p) && len(s.chunks) > 0 {
			k := copy(p[n:], s.chunks[0])
			n += k
			if k == len(s.chunks[0]) {
				s.chunks[0] = nil
				s.chunks = s.chunks[1:]
			} else {
				s.chunks[0] = s.chunks[0][k:]
			}
		}
		var err error
		switch {
		case n > 0:
		case s.rerr != nil:
			err = s.rerr
		case s.fin:
			err = io.EOF
		}
		if err != nil {
			s.endRead()
		}
		s.mu.Unlock()
		if n > 0 || err != nil || len(p) == 0 {
			return n, err
		}
		select {
		case <-s.sig:
		case <-s.c.ctx.Done():
			s.mu.Lock()
			ready := len(s.chunks) > 0 || s.fin || s.rerr != nil
			s.mu.Unlock()
			if !ready {
				return 0, s.c.Err()
			}
		}
	}
}

// endRead marks the receiving direction done (s.mu held).
func (s *Stream) endRead() {
	if !s.readDone {
		s.readDone = true
		if s.writeDone {
			go s.c.forget(s.id)
		}
	}
}

// endWrite marks the sending direction done (s.mu held).
func (s *Stream) endWrite() {
	if !s.writeDone {
		s.writeDone = true
		if s.readDone {
			go s.c.forget(s.id)
		}
	}
}

// Write writes p in frames of at most MaxFrame bytes, each into the byte
// stream as the connection's writer lock allows; it returns once all of p
// is in the byte stream (the kernel's send buffer) or writing failed.
func (s *Stream) Write(p []byte) (int, error) {
	if !s.canWrite {
		return 0, errors.New("bytemux: stream has no sending direction")
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n := 0
	for n < len(p) {
		if err := s.writeErr(); err != nil {
			return n, err
		}
		k := min(len(p)-n, MaxFrame)
		if err := s.c.writeFrame(frameData, s.id, p[n:n+k], false); err != nil {
			return n, err
		}
		n += k
		if s.c.opts.OnSent != nil {
			s.c.opts.OnSent(s.id, k)
		}
	}
	return n, nil
}

func (s *Stream) writeErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.werr
}

// Close ends the sending direction after the data written.
func (s *Stream) Close() error {
	if !s.canWrite {
		return errors.New("bytemux: stream has no sending direction")
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if s.werr != nil {
		s.mu.Unlock()
		return nil
	}
	s.werr = errors.New("bytemux: write after close")
	s.endWrite()
	s.mu.Unlock()
	return s.c.writeFrame(frameFin, s.id, nil, false)
}

// CancelWrite abandons sending: the peer's reads fail with code.
func (s *Stream) CancelWrite(code uint64) {
	if !s.canWrite {
		return
	}
	s.mu.Lock()
	if s.writeDone {
		s.mu.Unlock()
		return
	}
	s.werr = errors.New("bytemux: write after CancelWrite")
	s.endWrite()
	s.mu.Unlock()
	// Not under wmu: a writer blocked in the byte stream holds it; the
	// reset follows its frame.
	go s.c.writeFrame(frameReset, s.id, binary.AppendUvarint(nil, code), false)
}

// CancelRead stops receiving: further data is dropped and the peer's
// writes fail with code.
func (s *Stream) CancelRead(code uint64) {
	s.mu.Lock()
	if s.readDone {
		s.mu.Unlock()
		return
	}
	s.chunks = nil
	s.rerr = errors.New("bytemux: read after CancelRead")
	s.endRead()
	s.mu.Unlock()
	go s.c.writeFrame(frameStop, s.id, binary.AppendUvarint(nil, code), false)
}

// SetPriority does nothing: one byte stream has no priorities.
func (s *Stream) SetPriority(bool) {}
