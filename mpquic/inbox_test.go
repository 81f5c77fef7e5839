package mpquic

import (
	"sync/atomic"
	"testing"
)

// A connection in its handshake queues few datagrams, an established one
// many more; what does not fit is dropped and counted, and a closed inbox
// takes nothing.
func TestInboxGrowsAfterTheHandshake(t *testing.T) {
	var dropped atomic.Uint64
	b := newInbox(&dropped)
	push := func(n int) {
		var ins []inDatagram
		for range n {
			ins = append(ins, inDatagram{buf: getBuf(1200)})
		}
		b.pushAll(ins[:n/2])
		b.pushAll(ins[n/2:])
	}
	push(100)
	if q := b.take(nil); len(q) != inboxHandshake || int(dropped.Load()) != 100-inboxHandshake {
		t.Fatalf("in handshake: %d queued, %d dropped", len(q), dropped.Load())
	}
	b.setLimit(inboxEstablished)
	push(100)
	if q := b.take(nil); len(q) != 100 || int(dropped.Load()) != 100-inboxHandshake {
		t.Fatalf("established: %d queued, %d dropped", len(q), dropped.Load())
	}
	select {
	case <-b.sig:
	default:
		t.Fatal("no wake-up")
	}
	b.close()
	push(1)
	if q := b.take(nil); len(q) != 0 {
		t.Fatalf("closed inbox took %d", len(q))
	}
	select {
	case <-b.sig:
		t.Fatal("a wake-up for nothing queued")
	default:
	}
}
