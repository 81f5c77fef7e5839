package streams

// minRingSize is the first allocation of a ring; it doubles from there.
const minRingSize = 4 << 10

// sendRing is the send buffer: a growable circular buffer holding the bytes
// of a stream from the first unacknowledged offset to the last written one.
// Bytes are copied in once by Write and handed out as subslices, so sending
// and retransmitting never copy.
type sendRing struct {
	b    []byte
	head int // position of the first byte
	n    int // bytes held
}

// grow makes room for need bytes in total, never allocating more than
// limit unless need itself is larger.
func (r *sendRing) grow(need, limit int) {
	if need <= len(r.b) {
		return
	}
	r.resize(r.target(need, limit))
}

// target is the size grow would give the ring for need bytes: double, at
// least minRingSize, no more than limit unless need is larger.
func (r *sendRing) target(need, limit int) int {
	size := max(2*len(r.b), minRingSize, need)
	if limit > 0 && size > limit {
		size = max(limit, need)
	}
	return size
}

// resize moves the ring's bytes into a buffer of size bytes (at least r.n).
func (r *sendRing) resize(size int) {
	nb := make([]byte, size)
	r.copyOut(nb, 0, r.n)
	r.b, r.head = nb, 0
}

// copyOut copies n bytes starting rel bytes after the head into dst.
func (r *sendRing) copyOut(dst []byte, rel, n int) {
	if n == 0 {
		return
	}
	pos := r.head + rel
	if pos >= len(r.b) {
		pos -= len(r.b)
	}
	c := copy(dst[:n], r.b[pos:])
	copy(dst[c:n], r.b)
}

// append adds p at the tail; the caller ensures room with grow.
func (r *sendRing) append(p []byte) {
	pos := r.head + r.n
	if pos >= len(r.b) {
		pos -= len(r.b)
	}
	c := copy(r.b[pos:], p)
	copy(r.b, p[c:])
	r.n += len(p)
}

// reserve adds n bytes at the tail without writing them (their content
// is what the positions held before); the caller ensures room with grow.
func (r *sendRing) reserve(n int) { r.n += n }

// slice returns up to n contiguous bytes starting rel bytes after the head;
// it is shorter than n when the range wraps around the end of the buffer.
func (r *sendRing) slice(rel, n int) []byte {
	pos := r.head + rel
	if pos >= len(r.b) {
		pos -= len(r.b)
	}
	end := min(pos+n, len(r.b))
	return r.b[pos:end:end]
}

// discard drops n bytes from the head.
func (r *sendRing) discard(n int) {
	r.n -= n
	if r.n == 0 {
		r.head = 0
		return
	}
	r.head += n
	if r.head >= len(r.b) {
		r.head -= len(r.b)
	}
}

// release frees the memory.
func (r *sendRing) release() { *r = sendRing{} }

// recvRing is the reassembly buffer: a growable circular buffer whose head
// is the first byte the application has not read. Data may be written
// anywhere within it; which bytes are valid is tracked separately.
type recvRing struct {
	b    []byte
	head int
}

// grow makes the buffer hold at least need bytes after the head, preferring
// to double but never beyond limit unless need itself is larger.
func (r *recvRing) grow(need, limit uint64) {
	if need <= uint64(len(r.b)) {
		return
	}
	size := max(2*uint64(len(r.b)), minRingSize)
	if size > limit {
		size = limit
	}
	size = max(size, need)
	nb := make([]byte, size)
	c := copy(nb, r.b[r.head:])
	copy(nb[c:], r.b[:r.head])
	r.b, r.head = nb, 0
}

// write copies p to rel bytes after the head; the caller ensures room with
// grow.
func (r *recvRing) write(rel uint64, p []byte) {
	pos := uint64(r.head) + rel
	if pos >= uint64(len(r.b)) {
		pos -= uint64(len(r.b))
	}
	c := copy(r.b[pos:], p)
	copy(r.b, p[c:])
}

// read copies the first len(p) bytes into p and advances the head past them.
func (r *recvRing) read(p []byte) {
	c := copy(p, r.b[r.head:])
	copy(p[c:], r.b)
	r.skip(len(p))
}

// skip advances the head past n bytes without copying them.
func (r *recvRing) skip(n int) {
	r.head += n
	if r.head >= len(r.b) {
		r.head -= len(r.b)
	}
}

// release frees the memory.
func (r *recvRing) release() { *r = recvRing{} }

// at returns the byte rel bytes after the head.
func (r *recvRing) at(rel uint64) byte {
	pos := uint64(r.head) + rel
	if pos >= uint64(len(r.b)) {
		pos -= uint64(len(r.b))
	}
	return r.b[pos]
}
