package mpquic

import (
	"sync"
	"sync/atomic"

	"github.com/mpq/mpq/mpquic/core"
)

// Inbox limits: a connection in its handshake queues few datagrams (a
// client's handshake flights are a handful), an established one enough to
// ride out a scheduling delay at a high rate.
const (
	inboxHandshake   = 32
	inboxEstablished = 1024
)

type inDatagram struct {
	d   core.Datagram
	buf *[]byte
}

// inbox queues the datagrams routed to a connection until its goroutine
// takes them. It grows with use up to its limit, beyond which datagrams
// are dropped as a full socket buffer would; dropped counts them, and
// shared, if set (a listener's count over its connections), too.
type inbox struct {
	mu      sync.Mutex
	q       []inDatagram
	limit   int
	sig     chan struct{}
	dropped atomic.Uint64
	shared  *atomic.Uint64
	closed  bool
}

func newInbox(shared *atomic.Uint64) *inbox {
	return &inbox{limit: inboxHandshake, sig: make(chan struct{}, 1), shared: shared}
}

// pushAll queues datagrams in order, with one wake-up of the connection's
// goroutine; those beyond the limit are dropped and their buffers returned
// to the pool.
func (b *inbox) pushAll(ins []inDatagram) {
	b.mu.Lock()
	room := max(0, min(len(ins), b.limit-len(b.q)))
	b.q = append(b.q, ins[:room]...)
	closed := b.closed
	b.mu.Unlock()
	for _, in := range ins[room:] {
		putBuf(in.buf)
	}
	if n := uint64(len(ins) - room); n > 0 && !closed {
		b.dropped.Add(n)
		if b.shared != nil {
			b.shared.Add(n)
		}
	}
	if room > 0 {
		signal(b.sig)
	}
}

// take returns every queued datagram, handing the inbox spare, an empty
// slice the caller is done with, as its next queue.
func (b *inbox) take(spare []inDatagram) []inDatagram {
	b.mu.Lock()
	q := b.q
	b.q = spare[:0]
	b.mu.Unlock()
	return q
}

// setLimit changes how many datagrams may wait (none once closed).
func (b *inbox) setLimit(n int) {
	b.mu.Lock()
	if !b.closed {
		b.limit = n
	}
	b.mu.Unlock()
}

// close drops every queued datagram and any that comes later (those are
// not counted: the connection is gone).
func (b *inbox) close() {
	b.mu.Lock()
	b.limit, b.closed = 0, true
	b.mu.Unlock()
	for _, in := range b.take(nil) {
		putBuf(in.buf)
	}
}
