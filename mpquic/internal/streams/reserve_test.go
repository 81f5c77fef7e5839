package streams

import "testing"

// poolAlloc is an Allocator of a fixed number of bytes shared by the
// streams given it.
type poolAlloc struct{ left int }

func (a *poolAlloc) Available() int { return a.left }

func (a *poolAlloc) Grow(n int) int {
	g := min(n, a.left)
	a.left -= g
	return g
}

func (a *poolAlloc) Free(n int) { a.left += n }

// TestReserveHoldsRoom: room Reserve returned is taken by the next Write
// even when another stream has taken everything left of the shared
// Allocator in between; Reserve returns 0 on a full buffer and after
// Close.
func TestReserveHoldsRoom(t *testing.T) {
	const pool, chunk = 64 << 10, 16 << 10
	alloc := &poolAlloc{left: pool}
	a := NewSendStream(0, 1<<30, 1<<20)
	b := NewSendStream(4, 1<<30, 1<<20)
	a.SetAllocator(alloc)
	b.SetAllocator(alloc)
	if got := a.Reserve(chunk); got != chunk {
		t.Fatalf("Reserve(%d) = %d on an empty pool of %d", chunk, got, pool)
	}
	// The other stream takes what the pool has left.
	if _, err := b.Write(make([]byte, pool)); err != nil {
		t.Fatal(err)
	}
	if alloc.left != 0 {
		t.Fatalf("pool has %d bytes left after the other stream's write", alloc.left)
	}
	if n, err := a.Write(make([]byte, chunk)); n != chunk || err != nil {
		t.Fatalf("Write after Reserve took %d of %d bytes (err %v)", n, chunk, err)
	}
	// Full: a's buffer holds what it was granted, the pool is empty.
	if room := len(a.buf.b) - a.buf.n; room > 0 {
		if _, err := a.Write(make([]byte, room)); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.Reserve(chunk); got != 0 {
		t.Fatalf("Reserve = %d on a full buffer and an empty pool", got)
	}
	if got := b.Reserve(chunk); got != 0 {
		t.Fatalf("Reserve = %d on the other stream's full buffer", got)
	}
	b.releaseBuf()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := a.Reserve(chunk); got != 0 {
		t.Fatalf("Reserve = %d after Close", got)
	}
}
