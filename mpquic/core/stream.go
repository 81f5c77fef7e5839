package core

import "time"

// Stream is the application's handle on one stream of a Conn. Its methods
// never block: Read returns (0, nil) when no data is available yet and Write
// accepts only what fits the send buffer; the driver turns that into
// blocking io.ReadWriteCloser semantics using the connection's events. Like
// the Conn, a Stream is not safe for concurrent use.
type Stream struct {
	c *Conn
	s *stream
}

// ID returns the stream ID (RFC 9000 Section 2.1).
func (s *Stream) ID() uint64 { return s.s.id }

// Read copies received data into p. At the end of the stream it returns
// io.EOF; after a reset by the peer, a *StreamError. With nothing to read
// yet it returns 0, nil and an EventStreamReadable follows when data comes.
func (s *Stream) Read(p []byte) (int, error) {
	if s.s.recv == nil {
		return 0, errNoRecv
	}
	return s.take(s.s.recv.Read(p))
}

// Discard is Read of up to max bytes that drops them instead of copying
// them out (an application that only counts what it receives).
func (s *Stream) Discard(max int) (int, error) {
	if s.s.recv == nil {
		return 0, errNoRecv
	}
	return s.take(s.s.recv.Discard(max))
}

// Sink tells the stream that the application consumes the rest of it with
// Discard only: what arrives is no longer kept, and a Read that would
// return data fails. It
// reports whether it took effect (not on a stream with repair enabled,
// whose bytes its parities need); Discard works the same either way.
func (s *Stream) Sink() bool {
	if s.s.recv == nil {
		return false
	}
	return s.s.recv.Sink()
}

// take finishes a Read or Discard that returned n and err.
func (s *Stream) take(n int, err error) (int, error) {
	st := s.s
	if n == 0 && err == nil {
		if cerr := s.c.Err(); cerr != nil {
			return 0, cerr
		}
		st.wantRead = true
	}
	s.c.afterRead(st, n, s.c.now)
	return n, err
}

// Write buffers as much of p as the stream's send buffer admits and returns
// how much it took. When it took less than len(p), an EventStreamWritable
// follows when room frees up. After the peer asked to stop (STOP_SENDING) it
// returns a *StreamError.
func (s *Stream) Write(p []byte) (int, error) { return s.write(p, 0) }

// WriteZeros is Write of n zero bytes in every respect but the copies: the
// stream keeps no copy of them (an application that only needs bytes
// counted, like a bulk sender).
func (s *Stream) WriteZeros(n int) (int, error) { return s.write(nil, n) }

// write is Write of p followed by zeros zero bytes; one of them is empty.
func (s *Stream) write(p []byte, zeros int) (int, error) {
	st := s.s
	if st.send == nil {
		return 0, errNoSend
	}
	if err := s.c.Err(); err != nil {
		return 0, err
	}
	var n int
	var err error
	if zeros > 0 {
		n, err = st.send.WriteZeros(zeros)
	} else {
		n, err = st.send.Write(p)
	}
	if n > 0 {
		s.c.queueSend(st)
	}
	st.writeShort = n < len(p)+zeros && err == nil
	if st.writeShort {
		st.wantWrite = true
	}
	return n, err
}

// Close ends the sending direction with a FIN once buffered data is sent.
func (s *Stream) Close() error {
	st := s.s
	if st.send == nil {
		return errNoSend
	}
	if err := st.send.Close(); err != nil {
		return err
	}
	st.writeShort = false
	s.c.queueSend(st)
	return nil
}

// CancelWrite abandons the sending direction with RESET_STREAM
// (RFC 9000 Section 3.1).
func (s *Stream) CancelWrite(code uint64) {
	st := s.s
	if st.send == nil {
		return
	}
	st.send.Reset(code)
	st.writeShort = false // nothing more will be written
	s.c.ctrl.resetStream.add(st.id)
}

// CancelRead tells the peer to stop sending with STOP_SENDING
// (RFC 9000 Section 3.5); data that still arrives is discarded.
func (s *Stream) CancelRead(code uint64) {
	st := s.s
	if st.recv == nil {
		return
	}
	st.recv.StopSending(code)
	s.c.ctrl.stopSending.add(st.id)
	s.c.settleAbortedFlow(st)
	s.c.maybeForget(st)
}

// SetPriority sets the stream's priority flag, read by stream schedulers
// such as priority-fifo.
func (s *Stream) SetPriority(priority bool) { s.s.priority = priority }

// Priority reports the stream's priority flag.
func (s *Stream) Priority() bool { return s.s.priority }

// Writable is how many bytes Write would accept now.
func (s *Stream) Writable() int {
	if s.s.send == nil {
		return 0
	}
	return s.s.send.Writable()
}

// Reserve makes room in the send buffer for up to n more bytes, taking
// their memory from the connection's SendBudget now, and returns how many
// bytes the next Write takes (0 when closed, reset or full). A writer that
// must hold data only while it can be written (Stream.ReadFrom of package
// mpquic) reserves before it reads.
func (s *Stream) Reserve(n int) int {
	if s.s.send == nil {
		return 0
	}
	return s.s.send.Reserve(n)
}

// Readable reports whether Read would return data or an error now.
func (s *Stream) Readable() bool { return s.s.recv != nil && s.s.recv.Readable() }

// WaitingRead and WaitingWrite mark that the application waits for the
// stream (so that the next change emits an event) without reading or
// writing first.
func (s *Stream) WaitingRead()  { s.s.wantRead = true }
func (s *Stream) WaitingWrite() { s.s.wantWrite = true }

// SendDone reports whether everything written, and the FIN or reset, was
// acknowledged by the peer.
func (s *Stream) SendDone() bool { return s.s.send == nil || s.s.send.Done() }

// Advance tells the stream's connection the current time before an
// application call (see Conn.Advance).
func (s *Stream) Advance(now time.Time) { s.c.Advance(now) }
