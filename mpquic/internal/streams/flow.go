package streams

import (
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// recvWindow is the receive-side flow control limit shared by streams and
// the connection: the limit advertised to the peer and the window it slides
// by as the application consumes data (RFC 9000 Section 4.2).
type recvWindow struct {
	limit      uint64 // the advertised limit, absolute
	window     uint64
	maxWindow  uint64
	lastUpdate time.Time // when the limit was last raised
}

func newRecvWindow(window, maxWindow uint64) recvWindow {
	window = min(window, MaxOffset)
	return recvWindow{limit: window, window: window, maxWindow: max(window, min(maxWindow, MaxOffset))}
}

// setMax changes the bound of auto-tuning; the window never shrinks.
func (w *recvWindow) setMax(max uint64) { w.maxWindow = min(max, MaxOffset) }

// update raises the limit to consumed+window once the application consumed
// more than half a window since the last advertised limit, that is once
// less than half a window of credit is left. When the previous raise was
// less than two smoothed RTTs ago, flow control is what limits the sender,
// so the window doubles first (up to maxWindow). srtt 0 disables
// auto-tuning.
func (w *recvWindow) update(consumed uint64, now time.Time, srtt time.Duration) (uint64, bool) {
	if consumed > w.limit || 2*(w.limit-consumed) >= w.window {
		return 0, false
	}
	if srtt > 0 && !w.lastUpdate.IsZero() && now.Sub(w.lastUpdate) < 2*srtt && w.window < w.maxWindow {
		w.window = min(2*w.window, w.maxWindow)
	}
	nl := min(consumed+w.window, MaxOffset)
	if nl <= w.limit {
		return 0, false
	}
	w.limit = nl
	w.lastUpdate = now
	return nl, true
}

// ConnSendFlow is connection-level send flow control (RFC 9000 Section
// 4.1): the peer's MAX_DATA limit and the bytes charged against it. The
// zero value allows nothing.
type ConnSendFlow struct {
	max  uint64 // the peer's MAX_DATA
	used uint64 // new stream bytes sent
}

// NewConnSendFlow returns the flow control state for the peer's initial
// MAX_DATA limit max.
func NewConnSendFlow(max uint64) ConnSendFlow { return ConnSendFlow{max: max} }

// Credit returns how many new stream bytes may be sent now.
func (f *ConnSendFlow) Credit() uint64 {
	if f.used >= f.max {
		return 0
	}
	return f.max - f.used
}

// Consume charges n new bytes.
func (f *ConnSendFlow) Consume(n uint64) { f.used += n }

// OnMaxData handles a MAX_DATA frame and reports whether the limit rose;
// lower values are ignored.
func (f *ConnSendFlow) OnMaxData(max uint64) bool {
	if max <= f.max {
		return false
	}
	f.max = max
	return true
}

// SetMax replaces the peer's limit, also with a lower one: the server's
// new initial_max_data after it rejected 0-RTT sent under a remembered one
// (RFC 9000 Section 7.4.1). It reports false, changing nothing, when more
// than max bytes were already sent.
func (f *ConnSendFlow) SetMax(max uint64) bool {
	if f.used > max {
		return false
	}
	f.max = max
	return true
}

// BlockedAt reports whether the credit is exhausted, and the limit reached:
// the value of a DATA_BLOCKED frame.
func (f *ConnSendFlow) BlockedAt() (uint64, bool) {
	if f.used < f.max {
		return 0, false
	}
	return f.max, true
}

// ConnRecvFlow is connection-level receive flow control (RFC 9000 Section
// 4.1): the sum of the highest offsets received on all streams, checked
// against the advertised MAX_DATA, which slides as the application consumes
// data and auto-tunes its window like RecvStream.
type ConnRecvFlow struct {
	w        recvWindow
	received uint64
	consumed uint64
}

// NewConnRecvFlow returns the state for an initial limit of window bytes,
// which auto-tuning may grow up to maxWindow.
func NewConnRecvFlow(window, maxWindow uint64) ConnRecvFlow {
	return ConnRecvFlow{w: newRecvWindow(window, maxWindow)}
}

// OnReceived charges n bytes by which a stream's highest received offset
// grew. It fails with FLOW_CONTROL_ERROR when the total exceeds the
// advertised limit.
func (f *ConnRecvFlow) OnReceived(n uint64) error {
	if n > f.w.limit || f.received > f.w.limit-n {
		return qerr.New(qerr.FlowControlError, "connection data %d+%d beyond MAX_DATA %d", f.received, n, f.w.limit)
	}
	f.received += n
	return nil
}

// OnConsumed records that the application consumed n bytes (read them or,
// for an abandoned stream, gave them up). Consumption never exceeds what was
// received.
func (f *ConnRecvFlow) OnConsumed(n uint64) {
	f.consumed = min(f.consumed+min(n, f.received), f.received)
}

// Limit returns the MAX_DATA value currently advertised.
func (f *ConnRecvFlow) Limit() uint64 { return f.w.limit }

// Window returns the size of the window the limit slides by.
func (f *ConnRecvFlow) Window() uint64 { return f.w.window }

// EnsureWindow grows the window to at least w, within its maximum; the
// next WindowUpdate advertises it without doubling it first (a window
// just grown for a stream is not grown again by auto-tuning at once, as
// quic-go's and MPQUIC's connection windows are not).
func (f *ConnRecvFlow) EnsureWindow(w uint64) {
	if w = min(w, f.w.maxWindow); w > f.w.window {
		f.w.window = w
		f.w.lastUpdate = time.Time{}
	}
}

// WindowUpdate raises the limit once more than half the window was consumed
// since the last update, with the auto-tuning of RecvStream.WindowUpdate,
// and returns the new MAX_DATA value.
func (f *ConnRecvFlow) WindowUpdate(now time.Time, srtt time.Duration) (uint64, bool) {
	return f.w.update(f.consumed, now, srtt)
}
