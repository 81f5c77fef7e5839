package streams

import (
	"errors"
	"io"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// RecvStream is the receiving half of a stream (RFC 9000 Section 3.2): it
// reassembles data arriving out of order, delivers it in order, enforces
// the final size (Section 4.5) and stream-level flow control, and tells when
// to raise MAX_STREAM_DATA.
//
// Offsets: the application has read [0, readOff); recvd holds the ranges
// received at or above readOff, whose bytes sit in buf at readOff-relative
// positions; highest is the largest offset received plus one.
type RecvStream struct {
	id      uint64
	buf     recvRing
	recvd   rangeSet
	readOff uint64
	highest uint64
	w       recvWindow

	finalKnown bool
	finalSize  uint64

	resetRecvd bool // the peer reset the stream: data is discarded
	resetCode  uint64
	stopped    bool // the application asked the peer to stop: data is discarded
	stopCode   uint64
	// sink (Sink): the application consumes the rest with Discard
	// only, so arriving data is accounted but not stored.
	sink bool

	// repair (EnableRepair): REPAIR parities are taken; hist holds the
	// last bytes read, [readOff-len(hist), readOff), for them.
	repair, rebuilding bool
	hist               []byte
	parities           []parityEntry
	counts             *RebuildCounts // CountRebuilds
}

// NewRecvStream returns the receiving half of stream id, advertising window
// bytes of credit (the initial MAX_STREAM_DATA).
func NewRecvStream(id uint64, window uint64) *RecvStream {
	return &RecvStream{id: id, w: newRecvWindow(window, window)}
}

// SetMaxWindow lets auto-tuning grow the window up to max bytes.
func (r *RecvStream) SetMaxWindow(max uint64) { r.w.setMax(max) }

// discarding reports whether arriving data is accounted but not stored.
func (r *RecvStream) discarding() bool { return r.resetRecvd || r.stopped }

// Aborted reports whether the receive side was reset by the peer or stopped
// by the application: its unread data will never be read.
func (r *RecvStream) Aborted() bool { return r.discarding() }

// checkFinal validates a frame ending at end (with the FIN when fin is set)
// against the flow control limit and the final size.
func (r *RecvStream) checkFinal(end uint64, fin bool, what string) error {
	if r.finalKnown {
		if end > r.finalSize {
			return qerr.New(qerr.FinalSizeError, "stream %d: %s ends at %d beyond the final size %d", r.id, what, end, r.finalSize)
		}
		if fin && end != r.finalSize {
			return qerr.New(qerr.FinalSizeError, "stream %d: final size changed from %d to %d", r.id, r.finalSize, end)
		}
	} else if fin && end < r.highest {
		return qerr.New(qerr.FinalSizeError, "stream %d: final size %d below data received up to %d", r.id, end, r.highest)
	}
	if end > r.w.limit {
		return qerr.New(qerr.FlowControlError, "stream %d: %s ends at %d beyond MAX_STREAM_DATA %d", r.id, what, end, r.w.limit)
	}
	return nil
}

// Push stores the data of a STREAM (or CRYPTO) frame at offset, the FIN
// with it when fin is set. Data is copied; bytes already received are
// ignored. It returns by how much the highest received offset grew, which
// the caller charges to connection flow control. Data beyond the advertised
// limit is a FLOW_CONTROL_ERROR; data beyond a known final size, a change of
// the final size, or a FIN below data already received is a
// FINAL_SIZE_ERROR. On error nothing changes. After a reset or StopSending
// data is checked and accounted but discarded.
func (r *RecvStream) Push(offset uint64, data []byte, fin bool) (newBytes uint64, err error) {
	if offset > MaxOffset || uint64(len(data)) > MaxOffset-offset {
		return 0, qerr.New(qerr.FlowControlError, "stream %d: data at %d+%d beyond 2^62-1", r.id, offset, len(data))
	}
	end := offset + uint64(len(data))
	if err := r.checkFinal(end, fin, "data"); err != nil {
		return 0, err
	}
	if len(data) == 0 && !fin {
		return 0, nil
	}
	if fin && !r.finalKnown {
		r.finalKnown, r.finalSize = true, end
	}
	if end > r.highest {
		newBytes = end - r.highest
		r.highest = end
	}
	start := max(offset, r.readOff)
	if r.resetRecvd || start >= end {
		r.maybeRelease()
		return newBytes, nil
	}
	if !r.stopped && !r.sink {
		r.store(start, end, data[start-offset:])
	}
	r.recvd.add(start, end)
	r.maybeRelease()
	if len(r.parities) > 0 {
		n, err := r.rebuild()
		newBytes += n
		if err != nil {
			return newBytes, err
		}
	}
	return newBytes, nil
}

// store copies the bytes of [start, end) not yet received into the buffer;
// data holds them from start on.
func (r *RecvStream) store(start, end uint64, data []byte) {
	r.buf.grow(end-r.readOff, r.w.limit-r.readOff)
	r.eachGap(start, end, func(a, b uint64) { r.buf.write(a-r.readOff, data[a-start:b-start]) })
}

// eachGap calls f with every range of [lo, end) not received, in order;
// lo is at least readOff.
func (r *RecvStream) eachGap(lo, end uint64, f func(a, b uint64)) {
	cur := lo
	for i := r.recvd.firstEndAtLeast(lo + 1); i < len(r.recvd) && cur < end; i++ {
		sp := r.recvd[i]
		if sp.start >= end {
			break
		}
		if sp.start > cur {
			f(cur, sp.start)
		}
		cur = max(cur, sp.end)
	}
	if cur < end {
		f(cur, end)
	}
}

// maybeRelease frees the buffer once no more data can be read.
func (r *RecvStream) maybeRelease() {
	if r.buf.b != nil && (r.discarding() || r.finalKnown && r.readOff == r.finalSize) {
		r.buf.release()
	}
	if r.discarding() || r.finalKnown && r.readOff == r.finalSize {
		r.hist, r.parities = nil, nil
	}
}

// ErrSink is what Read returns on a stream given to Sink.
var ErrSink = errors.New("streams: Read on a stream whose data is only discarded (Sink)")

// Sink tells the stream that the application consumes the rest of it
// with Discard only, as a receiver that counts bulk data does: data
// arriving from now on is accounted, acknowledged and credited as before
// but not stored, the bytes buffered are dropped, and Read fails with
// ErrSink. Discard returns what it would have returned without Sink. It
// reports whether it took effect: a stream with repair enabled keeps its
// bytes (its parities rebuild from them) and ignores it.
func (r *RecvStream) Sink() bool {
	if r.repair {
		return false
	}
	r.sink = true
	r.buf.release()
	return true
}

// Read copies in-order data into p. It returns io.EOF once all data up to
// the FIN was read, a *qerr.StreamError after the peer reset the stream
// (Remote true) or after StopSending (Remote false), and 0, nil when no data
// is available yet.
func (r *RecvStream) Read(p []byte) (int, error) { return r.take(p, len(p)) }

// Discard is Read of up to max bytes that drops them instead of copying
// them out: the stream's state, flow control included, changes as with
// Read of a buffer of max bytes.
func (r *RecvStream) Discard(max int) (int, error) { return r.take(nil, max) }

// take reads up to max bytes into p, or drops them if p is nil.
func (r *RecvStream) take(p []byte, max int) (int, error) {
	switch {
	case r.resetRecvd:
		return 0, &qerr.StreamError{StreamID: r.id, Code: r.resetCode, Remote: true}
	case r.stopped:
		return 0, &qerr.StreamError{StreamID: r.id, Code: r.stopCode}
	case r.finalKnown && r.readOff == r.finalSize:
		return 0, io.EOF
	case max <= 0 || len(r.recvd) == 0 || r.recvd[0].start != r.readOff:
		return 0, nil
	}
	n := min(uint64(max), r.recvd[0].end-r.readOff)
	var got []byte
	switch {
	case r.sink && p != nil:
		return 0, ErrSink
	case r.sink:
		// Nothing is stored: the bytes are only counted.
	case p != nil:
		got = p[:n]
		r.buf.read(got)
	case r.repair:
		// The repair history keeps the bytes read: a Discard copies
		// them out for it as a Read would.
		got = make([]byte, n)
		r.buf.read(got)
	default:
		r.buf.skip(int(n))
	}
	r.readOff += n
	r.keepHistory(got)
	if r.recvd[0].start = r.readOff; r.recvd[0].start == r.recvd[0].end {
		r.recvd.popFront()
	}
	r.maybeRelease()
	return int(n), nil
}

// Readable reports whether Read would return data or an error now.
func (r *RecvStream) Readable() bool {
	return r.discarding() || r.finalKnown && r.readOff == r.finalSize ||
		len(r.recvd) > 0 && r.recvd[0].start == r.readOff
}

// OnReset handles the peer's RESET_STREAM (RFC 9000 Section 3.2): unread
// data is discarded and Read fails with a *qerr.StreamError. finalSize is
// checked like a FIN (Section 4.5); the result is the growth of the highest
// received offset, as for Push. A reset arriving after the application read
// everything up to the FIN changes nothing; a repeated reset is ignored.
func (r *RecvStream) OnReset(code, finalSize uint64) (newBytes uint64, err error) {
	if err := r.checkFinal(finalSize, true, "RESET_STREAM"); err != nil {
		return 0, err
	}
	// In the "Data Read" state the application has seen everything up to
	// the FIN: the reset changes nothing.
	dataRead := r.finalKnown && r.readOff == r.finalSize
	r.finalKnown, r.finalSize = true, finalSize
	if finalSize > r.highest {
		newBytes = finalSize - r.highest
		r.highest = finalSize
	}
	if r.resetRecvd || dataRead {
		return newBytes, nil
	}
	r.resetRecvd, r.resetCode = true, code
	r.recvd = r.recvd[:0]
	r.buf.release()
	return newBytes, nil
}

// FinalSizeKnown reports whether the final size is known: a FIN or a
// RESET_STREAM arrived.
func (r *RecvStream) FinalSizeKnown() bool { return r.finalKnown }

// FinalSize returns the final size of the stream once it is known.
func (r *RecvStream) FinalSize() (uint64, bool) { return r.finalSize, r.finalKnown }

// ReadOffset returns how many bytes the application has read. After a
// reset or StopSending, the bytes from there to the final size will never
// be read; the caller can count them as consumed for connection flow
// control.
func (r *RecvStream) ReadOffset() uint64 { return r.readOff }

// Limit returns the MAX_STREAM_DATA value currently advertised.
func (r *RecvStream) Limit() uint64 { return r.w.limit }

// Window returns the size of the window the stream's limit slides by,
// as auto-tuning has grown it.
func (r *RecvStream) Window() uint64 { return r.w.window }

// WindowUpdate raises the limit after reads: once the application has
// consumed more than half the window since the last advertised limit, the
// limit becomes the consumed offset plus the window, and the new limit is
// returned for a MAX_STREAM_DATA frame. When the previous update was less
// than 2*srtt ago the window doubles first, up to the maximum window;
// srtt 0 disables this auto-tuning. Nothing is updated once the final size
// is known or the stream was abandoned.
func (r *RecvStream) WindowUpdate(now time.Time, srtt time.Duration) (newLimit uint64, ok bool) {
	if r.finalKnown || r.discarding() {
		return 0, false
	}
	return r.w.update(r.readOff, now, srtt)
}

// StopSending records that the application no longer wants the stream's
// data (RFC 9000 Section 3.5): buffered and arriving data is discarded and
// Read fails with a *qerr.StreamError. Only the first call counts.
func (r *RecvStream) StopSending(code uint64) {
	if r.stopped || r.resetRecvd {
		return
	}
	r.stopped, r.stopCode = true, code
	r.buf.release()
}

// allReceived reports whether every byte up to the final size arrived.
func (r *RecvStream) allReceived() bool {
	if !r.finalKnown {
		return false
	}
	if r.readOff == r.finalSize {
		return true
	}
	return len(r.recvd) == 1 && r.recvd[0].start == r.readOff && r.recvd[0].end == r.finalSize
}

// StopSendingCode returns the code of the STOP_SENDING frame to send; ok is
// false when none is needed: StopSending was not called, the peer reset the
// stream, or all data up to the FIN has arrived.
func (r *RecvStream) StopSendingCode() (code uint64, ok bool) {
	if !r.stopped || r.resetRecvd || r.allReceived() {
		return 0, false
	}
	return r.stopCode, true
}

// Done reports whether the receiving half is finished: the application read
// all data up to the FIN, the peer reset the stream, or the application
// stopped it and the final size is known.
func (r *RecvStream) Done() bool {
	return r.resetRecvd || r.finalKnown && r.readOff == r.finalSize || r.stopped && r.finalKnown
}
