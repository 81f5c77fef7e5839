package mpquic

import (
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

// Stream is a QUIC stream: an io.ReadWriteCloser with deadlines. Close ends
// the sending direction (FIN); CancelRead and CancelWrite abort a direction.
// Read and Write may be called from different goroutines.
type Stream struct {
	conn     *Conn
	s        *core.Stream
	readSig  chan struct{}
	writeSig chan struct{}

	dmu           sync.Mutex
	readDeadline  time.Time
	writeDeadline time.Time
	deadlineSig   chan struct{}
}

// StreamID returns the stream's ID (RFC 9000 Section 2.1).
func (s *Stream) StreamID() uint64 { return s.s.ID() }

// Read reads data, blocking until some is available, the stream ends
// (io.EOF), the peer resets it, the deadline passes (os.ErrDeadlineExceeded)
// or the connection closes.
func (s *Stream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		s.conn.mu.Lock()
		s.s.Advance(time.Now())
		n, err := s.s.Read(p)
		s.conn.mu.Unlock()
		if n > 0 {
			s.conn.kick() // window updates may be due
		}
		if n > 0 || err != nil {
			return n, err
		}
		if err := s.wait(s.readSig, true); err != nil {
			return 0, err
		}
	}
}

// Write writes all of p, blocking while the send buffer is full.
func (s *Stream) Write(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		s.conn.mu.Lock()
		s.s.Advance(time.Now())
		n, err := s.s.Write(p)
		s.conn.mu.Unlock()
		if n > 0 {
			s.conn.kick()
		}
		total += n
		p = p[n:]
		if err != nil {
			return total, err
		}
		if len(p) > 0 {
			if err := s.wait(s.writeSig, false); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// copyChunk is the size of the buffers ReadFrom copies through.
const copyChunk = 16 << 10

// copyBufs are ReadFrom's buffers, shared by every stream;
// copyBufsHeld counts those taken and not yet returned.
var (
	copyBufs     = sync.Pool{New: func() any { b := make([]byte, copyChunk); return &b }}
	copyBufsHeld atomic.Int64
)

// ReadFrom implements io.ReaderFrom: it writes what it reads from r until
// io.EOF, blocking like Write while the send buffer is full. It takes a
// buffer to read into only after reserving room in the send buffer for
// what it reads, so that a stream whose peer does not read holds none
// while it waits (a server of many such streams would otherwise hold a
// buffer for each).
func (s *Stream) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		s.conn.mu.Lock()
		s.s.Advance(time.Now())
		// Reserve, not Writable: the room must still be there when the
		// bytes read are written, whatever other connections take from
		// a shared SendBudget meanwhile.
		room := s.s.Reserve(copyChunk)
		var err error
		if room == 0 {
			// A closed or reset stream, or a full buffer: wait.
			if _, err = s.s.Write(nil); err == nil {
				s.s.WaitingWrite()
			}
		}
		s.conn.mu.Unlock()
		if err != nil {
			return total, err
		}
		if room == 0 {
			if err := s.wait(s.writeSig, false); err != nil {
				return total, err
			}
			continue
		}
		bp := copyBufs.Get().(*[]byte)
		copyBufsHeld.Add(1)
		n, rerr := r.Read((*bp)[:min(room, copyChunk)])
		var werr error
		if n > 0 {
			n, werr = s.Write((*bp)[:n])
			total += int64(n)
		}
		copyBufs.Put(bp)
		copyBufsHeld.Add(-1)
		switch {
		case werr != nil:
			return total, werr
		case rerr == io.EOF:
			return total, nil
		case rerr != nil:
			return total, rerr
		}
	}
}

// wait blocks until sig fires, the deadline passes or the connection ends.
func (s *Stream) wait(sig chan struct{}, read bool) error {
	for {
		s.dmu.Lock()
		dl := s.writeDeadline
		if read {
			dl = s.readDeadline
		}
		if s.deadlineSig == nil {
			s.deadlineSig = make(chan struct{}, 1)
		}
		dsig := s.deadlineSig
		s.dmu.Unlock()
		var timeout <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return os.ErrDeadlineExceeded
			}
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-sig:
			return nil
		case <-s.conn.closed:
			// Let the caller observe buffered data or the error.
			return nil
		case <-timeout:
			return os.ErrDeadlineExceeded
		case <-dsig:
			// Deadline changed: re-evaluate.
		}
	}
}

// Close ends the sending direction: a FIN follows the buffered data.
func (s *Stream) Close() error {
	s.conn.mu.Lock()
	s.s.Advance(time.Now())
	err := s.s.Close()
	s.conn.mu.Unlock()
	s.conn.kick()
	return err
}

// CancelWrite aborts sending with RESET_STREAM and an application error code.
func (s *Stream) CancelWrite(code uint64) {
	s.conn.mu.Lock()
	s.s.Advance(time.Now())
	s.s.CancelWrite(code)
	s.conn.mu.Unlock()
	s.conn.kick()
}

// CancelRead asks the peer to stop sending with STOP_SENDING.
func (s *Stream) CancelRead(code uint64) {
	s.conn.mu.Lock()
	s.s.Advance(time.Now())
	s.s.CancelRead(code)
	s.conn.mu.Unlock()
	s.conn.kick()
}

// SetPriority sets the stream's priority flag for priority stream
// schedulers.
func (s *Stream) SetPriority(p bool) {
	s.conn.mu.Lock()
	s.s.SetPriority(p)
	s.conn.mu.Unlock()
}

// SetDeadline sets both deadlines.
func (s *Stream) SetDeadline(t time.Time) error {
	s.SetReadDeadline(t)
	return s.SetWriteDeadline(t)
}

// SetReadDeadline sets the deadline of pending and future Reads.
func (s *Stream) SetReadDeadline(t time.Time) error {
	s.dmu.Lock()
	s.readDeadline = t
	s.notifyDeadline()
	s.dmu.Unlock()
	return nil
}

// SetWriteDeadline sets the deadline of pending and future Writes.
func (s *Stream) SetWriteDeadline(t time.Time) error {
	s.dmu.Lock()
	s.writeDeadline = t
	s.notifyDeadline()
	s.dmu.Unlock()
	return nil
}

func (s *Stream) notifyDeadline() {
	if s.deadlineSig == nil {
		s.deadlineSig = make(chan struct{}, 1)
	}
	signal(s.deadlineSig)
}

// WaitSent blocks until everything written and the FIN were acknowledged,
// or ctx ends.
func (s *Stream) WaitSent(ctx context.Context) error {
	for {
		s.conn.mu.Lock()
		done := s.s.SendDone()
		if !done {
			s.s.WaitingWrite()
		}
		s.conn.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-s.writeSig:
		case <-s.conn.closed:
			return s.conn.closeErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
