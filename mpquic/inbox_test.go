package mpquic

import (
	"sync/atomic"
	"testing"
)

// A connection in its handshake queues few datagrams, an established one
// many more; what does not fit is dropped and counted, on the connection
// and on the listener's shared count, and a closed inbox takes nothing
// and counts nothing more.
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
	if q := b.take(nil); len(q) != inboxHandshake || int(dropped.Load()) != 100-inboxHandshake || int(b.dropped.Load()) != 100-inboxHandshake {
		t.Fatalf("in handshake: %d queued, %d dropped (%d on the connection)", len(q), dropped.Load(), b.dropped.Load())
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
	b.setLimit(inboxEstablished)
	push(1)
	if q := b.take(nil); len(q) != 0 {
		t.Fatalf("closed inbox took %d", len(q))
	}
	if int(b.dropped.Load()) != 100-inboxHandshake || int(dropped.Load()) != 100-inboxHandshake {
		t.Fatalf("closed inbox counted its drops: %d, %d", b.dropped.Load(), dropped.Load())
	}
	// A dialled connection has no shared count: its own still counts.
	d := newInbox(nil)
	ins := make([]inDatagram, inboxHandshake+3)
	for i := range ins {
		ins[i].buf = getBuf(1200)
	}
	d.pushAll(ins)
	if d.dropped.Load() != 3 {
		t.Fatalf("dialled: %d dropped, want 3", d.dropped.Load())
	}
	select {
	case <-b.sig:
		t.Fatal("a wake-up for nothing queued")
	default:
	}
}
