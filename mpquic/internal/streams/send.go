package streams

import (
	"errors"

	"github.com/mpq/mpq/mpquic/qerr"
)

// ErrWriteAfterClose is returned by SendStream.Write after Close.
var ErrWriteAfterClose = errors.New("streams: write on a closed stream")

// Chunk is the payload of one STREAM or CRYPTO frame chosen by
// SendStream.NextChunk.
type Chunk struct {
	// Offset is the stream offset of the first byte of Data.
	Offset uint64
	// Data may alias the stream's send buffer, its scratch buffer or a
	// page of zeros shared by every stream: it is read-only and stays
	// valid only until the next call on the stream (NextChunk and Parity
	// included).
	Data []byte
	// Fin is set when the chunk ends at the end of a closed stream.
	Fin bool
	// NewBytes counts the bytes of Data beyond the highest offset sent
	// before; the caller charges them to connection flow control.
	NewBytes int
}

// Allocator grants the memory of send buffers, shared with other streams
// (a server-wide budget). Its methods may be called with the stream's
// connection locked; they must not block.
type Allocator interface {
	// Available returns how many more bytes Grow would grant now.
	Available() int
	// Grow asks for n more bytes and returns how many it grants, 0 to n.
	Grow(n int) int
	// Free returns n bytes granted before.
	Free(n int)
}

// resetState tracks a RESET_STREAM frame (RFC 9000 Section 3.1).
type resetState uint8

const (
	resetNone    resetState = iota
	resetPending            // must be sent (again)
	resetSent               // in flight
	resetAcked              // the peer has it: terminal
)

// SendStream is the sending half of a stream (RFC 9000 Section 3.1): it
// buffers written data until the peer acknowledges it, chooses the next
// frame payload (retransmissions first, then new data within the peer's
// MAX_STREAM_DATA limit), and carries the FIN and RESET_STREAM logic.
//
// Offsets: bytes below ackBase are acknowledged and released; the send
// buffer holds [ackBase, written); [0, sentHigh) has been sent at least once.
type SendStream struct {
	id       uint64
	bufLimit int
	buf      sendRing
	// alloc, if set, grants the buffer's memory (len(buf.b)).
	alloc Allocator

	ackBase  uint64 // all bytes below are acknowledged and released
	written  uint64 // total bytes written by the application
	sentHigh uint64 // highest offset sent plus one
	peerMax  uint64 // the peer's MAX_STREAM_DATA

	acked     rangeSet // acknowledged ranges above ackBase
	lost      rangeSet // ranges awaiting retransmission
	lostBytes uint64   // lost.total()

	// zeros are the ranges of [ackBase, written) written by WriteZeros,
	// whose bytes are not in buf; scratch assembles the data of a range
	// partly in them (bytesAt).
	zeros   rangeSet
	scratch []byte

	closed   bool
	finSent  bool // a FIN is in flight or acknowledged
	finAcked bool

	reset     resetState
	resetCode uint64
	finalSize uint64 // for RESET_STREAM

	// err is what Write reports after the stream was aborted, locally
	// (Reset) or by the peer (STOP_SENDING).
	err error
}

// NewSendStream returns the sending half of stream id. peerMaxStreamData is
// the peer's initial MAX_STREAM_DATA limit for it; bufferLimit bounds the
// bytes buffered and not yet acknowledged (a limit of 0 or less accepts
// nothing).
func NewSendStream(id uint64, peerMaxStreamData uint64, bufferLimit int) *SendStream {
	return &SendStream{id: id, peerMax: peerMaxStreamData, bufLimit: bufferLimit}
}

// SetAllocator makes a grant the memory of the send buffer from now on
// (call it before the first Write).
func (s *SendStream) SetAllocator(a Allocator) { s.alloc = a }

// BufferSize is the memory the send buffer holds.
func (s *SendStream) BufferSize() int { return len(s.buf.b) }

// Buffered is the number of bytes written and not yet acknowledged.
func (s *SendStream) Buffered() uint64 { return s.written - s.ackBase }

// ReleaseBuffer frees the send buffer's memory (and returns it to the
// Allocator): the connection ended.
func (s *SendStream) ReleaseBuffer() { s.releaseBuf() }

// releaseBuf frees the buffer, returning its memory to the Allocator.
func (s *SendStream) releaseBuf() {
	if s.alloc != nil && len(s.buf.b) > 0 {
		s.alloc.Free(len(s.buf.b))
	}
	s.buf.release()
}

// growBuf makes room for n more bytes within what the Allocator grants
// and returns how many of them fit.
func (s *SendStream) growBuf(n int) int {
	need := s.buf.n + n
	if need <= len(s.buf.b) {
		return n
	}
	size := s.buf.target(need, s.bufLimit)
	if s.alloc != nil {
		extra := size - len(s.buf.b)
		if g := s.alloc.Grow(extra); g < extra {
			size = len(s.buf.b) + g
		}
		if size <= len(s.buf.b) {
			return min(n, len(s.buf.b)-s.buf.n)
		}
	}
	s.buf.resize(size)
	return min(n, size-s.buf.n)
}

// Reserve makes room in the send buffer for up to n more bytes now,
// taking their memory from the Allocator, and returns how many bytes the
// next Write takes whatever other streams take from the Allocator
// meanwhile: 0 after Close or Reset, or while the buffer is full.
func (s *SendStream) Reserve(n int) int {
	n, _ = s.admit(n)
	if n == 0 {
		return 0
	}
	return s.growBuf(n)
}

// Write buffers as much of p as fits the send buffer and returns how many
// bytes it took. It fails with ErrWriteAfterClose after Close and with a
// *qerr.StreamError after Reset (Remote false) or after the peer's
// STOP_SENDING (Remote true, with the peer's code).
func (s *SendStream) Write(p []byte) (int, error) {
	n, err := s.admit(len(p))
	if n == 0 {
		return 0, err
	}
	if n = s.growBuf(n); n == 0 {
		return 0, nil
	}
	s.buf.append(p[:n])
	s.written += uint64(n)
	return n, nil
}

// WriteZeros is Write of n zero bytes in every respect but the copy: the
// bytes take their room in the send buffer but are never written into it
// nor read from it (zeros records them; bytesAt hands them out). A bulk
// sender whose data is only counted saves two copies of every byte.
func (s *SendStream) WriteZeros(n int) (int, error) {
	n, err := s.admit(n)
	if n == 0 {
		return 0, err
	}
	if n = s.growBuf(n); n == 0 {
		return 0, nil
	}
	s.buf.reserve(n)
	s.zeros.add(s.written, s.written+uint64(n))
	s.written += uint64(n)
	return n, nil
}

// admit returns how many of want bytes a Write takes now, or the error
// of a stream that takes none any more.
func (s *SendStream) admit(want int) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.closed {
		return 0, ErrWriteAfterClose
	}
	return max(0, min(want, s.Writable())), nil
}

// zeroPage is what bytesAt hands out for ranges written by WriteZeros. It
// is never written.
var zeroPage [16 << 10]byte

// bytesAt returns up to n contiguous bytes of the stream from offset off
// (ackBase <= off < written): what buf.slice returns, shorter where the
// range wraps around the end of the ring, with the ranges written by
// WriteZeros as zeros. A range all zeros is a slice of zeroPage; a range
// partly zeros is assembled in scratch. Either way it is read-only and
// valid until the next call on the stream, as Chunk.Data.
func (s *SendStream) bytesAt(off uint64, n int) []byte {
	b := s.buf.slice(int(off-s.ackBase), n)
	if len(s.zeros) == 0 || len(b) == 0 {
		return b
	}
	end := off + uint64(len(b))
	i := s.zeros.firstEndAtLeast(off + 1)
	if i == len(s.zeros) || s.zeros[i].start >= end {
		return b
	}
	if z := s.zeros[i]; z.start <= off && z.end >= end && len(b) <= len(zeroPage) {
		return zeroPage[:len(b):len(b)]
	}
	s.scratch = append(s.scratch[:0], b...)
	for ; i < len(s.zeros) && s.zeros[i].start < end; i++ {
		z := s.zeros[i]
		clear(s.scratch[max(z.start, off)-off : min(z.end, end)-off])
	}
	return s.scratch[:len(s.scratch):len(s.scratch)]
}

// trimZeros drops the ranges of zeros below ackBase.
func (s *SendStream) trimZeros() {
	for len(s.zeros) > 0 && s.zeros[0].end <= s.ackBase {
		s.zeros.popFront()
	}
	if len(s.zeros) > 0 && s.zeros[0].start < s.ackBase {
		s.zeros[0].start = s.ackBase
	}
}

// Writable returns how many bytes Write would accept now: 0 after Close,
// Reset or STOP_SENDING.
func (s *SendStream) Writable() int {
	if s.closed || s.err != nil || s.reset != resetNone {
		return 0
	}
	// The buffer holds at most bufLimit bytes, and never more than the
	// largest offset QUIC can express.
	room := s.bufLimit - s.buf.n
	if room <= 0 {
		return 0
	}
	if left := MaxOffset - s.written; uint64(room) > left {
		room = int(left)
	}
	if s.alloc != nil {
		room = min(room, len(s.buf.b)-s.buf.n+s.alloc.Available())
	}
	return max(room, 0)
}

// Close marks the end of the stream: a FIN follows the buffered data.
// Closing twice is harmless; closing an aborted stream returns the abort's
// *qerr.StreamError.
func (s *SendStream) Close() error {
	if s.err != nil {
		return s.err
	}
	s.closed = true
	return nil
}

// NextOffset returns the offset of the chunk NextChunk would return now: the
// first lost byte if any, else the first byte never sent.
func (s *SendStream) NextOffset() uint64 {
	if len(s.lost) > 0 {
		return s.lost[0].start
	}
	return s.sentHigh
}

// NextChunk returns the next frame payload of at most maxLen bytes.
// Retransmissions of lost ranges come first and are not limited by flow
// control (they were within the limits when first sent); then new data,
// limited by the peer's MAX_STREAM_DATA and by connCredit, the
// connection-level credit for new bytes. A chunk that only carries the FIN
// is returned even when maxLen is 0. It returns false when nothing can be
// sent now.
func (s *SendStream) NextChunk(maxLen int, connCredit uint64) (Chunk, bool) {
	if s.reset != resetNone {
		return Chunk{}, false
	}
	if len(s.lost) > 0 {
		if maxLen <= 0 {
			return Chunk{}, false
		}
		sp := s.lost[0]
		n := int(min(sp.end-sp.start, uint64(maxLen)))
		data := s.bytesAt(sp.start, n)
		n = len(data)
		if s.lost[0].start += uint64(n); s.lost[0].start == s.lost[0].end {
			s.lost.popFront()
		}
		s.lostBytes -= uint64(n)
		ch := Chunk{Offset: sp.start, Data: data}
		if s.closed && sp.start+uint64(n) == s.written {
			ch.Fin = true
			s.finSent = true
		}
		return ch, true
	}
	n := s.newSendable(connCredit)
	if maxLen < 0 {
		maxLen = 0
	}
	n = min(n, uint64(maxLen))
	if n == 0 {
		if s.closed && !s.finSent && s.sentHigh == s.written {
			s.finSent = true
			return Chunk{Offset: s.written, Fin: true}, true
		}
		return Chunk{}, false
	}
	data := s.bytesAt(s.sentHigh, int(n))
	ch := Chunk{Offset: s.sentHigh, Data: data, NewBytes: len(data)}
	s.sentHigh += uint64(len(data))
	if s.closed && s.sentHigh == s.written {
		ch.Fin = true
		s.finSent = true
	}
	return ch, true
}

// newSendable returns how many new bytes flow control lets out now.
func (s *SendStream) newSendable(connCredit uint64) uint64 {
	n := s.written - s.sentHigh
	if s.peerMax <= s.sentHigh {
		return 0
	}
	return min(n, s.peerMax-s.sentHigh, connCredit)
}

// HasPendingData reports whether anything waits to be sent: lost data,
// data never sent (even if flow control blocks it now) or a FIN. It is false
// once the stream is reset.
func (s *SendStream) HasPendingData() bool {
	if s.reset != resetNone {
		return false
	}
	return len(s.lost) > 0 || s.sentHigh < s.written || s.closed && !s.finSent
}

// HasRetransmission reports whether lost data waits to be sent again.
func (s *SendStream) HasRetransmission() bool {
	return s.reset == resetNone && len(s.lost) > 0
}

// LostBytes returns how many lost bytes wait to be sent again.
func (s *SendStream) LostBytes() uint64 {
	if s.reset != resetNone {
		return 0
	}
	return s.lostBytes
}

// HasPendingFin reports whether a FIN can be sent now without data: the
// stream is closed, all its data was sent and nothing is to be
// retransmitted, and the FIN was never sent or was lost.
func (s *SendStream) HasPendingFin() bool {
	return s.reset == resetNone && s.closed && !s.finSent && len(s.lost) == 0 && s.sentHigh == s.written
}

// PendingBytes returns how many bytes could be sent now: the lost bytes plus
// the new bytes that both the stream limit and connCredit allow.
func (s *SendStream) PendingBytes(connCredit uint64) uint64 {
	if s.reset != resetNone {
		return 0
	}
	return s.lostBytes + s.newSendable(connCredit)
}

// clip restricts a range reported by the connection to what was sent and
// is still buffered.
func (s *SendStream) clip(offset uint64, length int) (uint64, uint64) {
	if length <= 0 {
		return 0, 0
	}
	end := min(offset+uint64(length), s.sentHigh)
	if end < offset { // overflow
		end = s.sentHigh
	}
	return max(offset, s.ackBase), end
}

// OnAcked records that the peer acknowledged a frame carrying [offset,
// offset+length), with the FIN when fin is set. Acknowledgements may arrive
// in any order, more than once and for overlapping ranges; the buffer is
// released as its acknowledged prefix grows.
func (s *SendStream) OnAcked(offset uint64, length int, fin bool) {
	if s.reset != resetNone {
		return
	}
	if fin && s.closed {
		s.finAcked, s.finSent = true, true
	}
	start, end := s.clip(offset, length)
	if start >= end {
		s.maybeRelease()
		return
	}
	s.lostBytes -= s.lost.remove(start, end)
	s.acked.add(start, end)
	if s.acked[0].start == s.ackBase {
		n := s.acked[0].end - s.ackBase
		s.acked.popFront()
		s.ackBase += n
		s.buf.discard(int(n))
		s.trimZeros()
	}
	s.maybeRelease()
}

// maybeRelease frees the buffer once everything was acknowledged.
func (s *SendStream) maybeRelease() {
	if s.closed && s.ackBase == s.written && s.buf.b != nil {
		s.releaseBuf()
	}
}

// OnLost records that a frame carrying [offset, offset+length) (and the FIN
// when fin is set) was lost: the bytes not acknowledged since are queued
// for retransmission, and so is the FIN.
func (s *SendStream) OnLost(offset uint64, length int, fin bool) {
	if s.reset != resetNone {
		return
	}
	if fin && s.closed && !s.finAcked {
		s.finSent = false
	}
	start, end := s.clip(offset, length)
	if start >= end {
		return
	}
	// Queue the parts of [start, end) that were not acknowledged.
	i := s.acked.firstEndAtLeast(start + 1)
	for ; i < len(s.acked) && start < end; i++ {
		a := s.acked[i]
		if a.start >= end {
			break
		}
		if a.start > start {
			s.lostBytes += s.lost.add(start, a.start)
		}
		start = max(start, a.end)
	}
	if start < end {
		s.lostBytes += s.lost.add(start, end)
	}
}

// OnMaxStreamData raises the peer's limit to max; a lower value is
// ignored (RFC 9000 Section 4.1).
func (s *SendStream) OnMaxStreamData(max uint64) {
	if max > s.peerMax {
		s.peerMax = max
	}
}

// SetMaxStreamData replaces the peer's limit, also with a lower one (the
// server's new parameters after it rejected 0-RTT sent under remembered
// ones). It reports false, changing nothing, when data beyond max was
// already sent.
func (s *SendStream) SetMaxStreamData(max uint64) bool {
	if s.sentHigh > max {
		return false
	}
	s.peerMax = max
	return true
}

// BlockedAt reports whether new data waits beyond the peer's stream limit,
// and that limit: the value of a STREAM_DATA_BLOCKED frame.
func (s *SendStream) BlockedAt() (limit uint64, ok bool) {
	if s.reset != resetNone || s.sentHigh >= s.written || s.sentHigh < s.peerMax {
		return 0, false
	}
	return s.peerMax, true
}

// Reset abandons the stream with an application error code (RFC 9000
// Section 3.1): no more data is sent or retransmitted, the buffer is freed,
// and a RESET_STREAM carrying the highest offset sent as the final size
// becomes pending. Later Writes fail with a *qerr.StreamError. It does
// nothing when the stream is already reset or all its data and FIN were
// acknowledged.
func (s *SendStream) Reset(code uint64) {
	if s.err == nil {
		s.err = &qerr.StreamError{StreamID: s.id, Code: code}
	}
	s.abort(code)
}

func (s *SendStream) abort(code uint64) {
	if s.reset != resetNone || s.Done() {
		return
	}
	s.reset = resetPending
	s.resetCode = code
	s.finalSize = s.sentHigh
	s.releaseBuf()
	s.lost = s.lost[:0]
	s.acked = s.acked[:0]
	s.zeros, s.scratch = nil, nil
	s.lostBytes = 0
	s.ackBase = s.sentHigh
}

// OnStopSending handles the peer's STOP_SENDING (RFC 9000 Section 3.5): the
// stream is reset with the peer's code unless it is already reset or all
// its data was acknowledged. Later Writes fail with a *qerr.StreamError
// with Remote set.
func (s *SendStream) OnStopSending(code uint64) {
	if s.err == nil {
		s.err = &qerr.StreamError{StreamID: s.id, Code: code, Remote: true}
	}
	s.abort(code)
}

// PendingReset returns the error code and final size of the RESET_STREAM
// frame to send; ok is false when none needs to be sent now.
func (s *SendStream) PendingReset() (code, finalSize uint64, ok bool) {
	if s.reset != resetPending {
		return 0, 0, false
	}
	return s.resetCode, s.finalSize, true
}

// OnResetSent records that the RESET_STREAM frame was sent.
func (s *SendStream) OnResetSent() {
	if s.reset == resetPending {
		s.reset = resetSent
	}
}

// OnResetAcked records that the RESET_STREAM frame was acknowledged.
func (s *SendStream) OnResetAcked() {
	if s.reset != resetNone {
		s.reset = resetAcked
	}
}

// OnResetLost records that the RESET_STREAM frame was lost: it is pending
// again unless acknowledged meanwhile.
func (s *SendStream) OnResetLost() {
	if s.reset == resetSent {
		s.reset = resetPending
	}
}

// Done reports whether the sending half reached a terminal state: all data
// and the FIN acknowledged, or the RESET_STREAM acknowledged.
func (s *SendStream) Done() bool {
	if s.reset != resetNone {
		return s.reset == resetAcked
	}
	return s.closed && s.finAcked && s.ackBase == s.written
}
