package streams

import "github.com/mpq/mpq/mpquic/qerr"

// Stream-level XOR parity (the experimental REPAIR frame,
// mpquic/internal/wire/repair.go). The parity of the range [off, end) in
// chunks of chunk bytes has chunk columns; column c is the XOR of the
// bytes off + i*chunk + c below end. A receiver rebuilds a missing byte
// when it is the only missing byte of its column and it has that column
// of the parity.

// MaxRepairHistory is how many bytes a stream with repair enabled keeps
// after the application read them (until all its data arrived), so that a
// parity arriving later can still rebuild a missing byte from them.
const MaxRepairHistory = 1 << 16

// maxParityEntries bounds the parities a receiving stream holds at once
// (a burst's REPAIR and REPAIR_Q parities are two); the oldest goes
// first.
const maxParityEntries = 16

// Parity writes into dst the XOR parity of the stream's bytes [offset,
// end) in chunks of len(dst) bytes (the last chunk zero-padded), with q
// the REPAIR_Q parity instead (column c: the sum of 2^i times byte c of
// chunk i, in GF(2^8)), and reports whether it could: false when the
// range is empty, not all written yet, or partly acknowledged and
// released from the send buffer.
func (s *SendStream) Parity(offset, end uint64, dst []byte, q bool) bool {
	if len(dst) == 0 || offset >= end || offset < s.ackBase || end > s.written || s.reset != resetNone || s.buf.b == nil {
		return false
	}
	clear(dst)
	chunk := uint64(len(dst))
	for x := offset; x < end; {
		col := (x - offset) % chunk
		n := min(end-x, chunk-col)
		b := s.bytesAt(x, int(n))
		if q {
			g := gfPow2((x - offset) / chunk)
			for i, v := range b {
				dst[col+uint64(i)] ^= gfMul(g, v)
			}
		} else {
			for i, v := range b {
				dst[col+uint64(i)] ^= v
			}
		}
		x += uint64(len(b))
	}
	return true
}

// Closed reports whether the application closed the stream: its final
// size is Written.
func (s *SendStream) Closed() bool { return s.closed }

// Written returns how many bytes the application wrote.
func (s *SendStream) Written() uint64 { return s.written }

// Unsent returns the offsets of the written bytes never sent yet:
// [SentHigh, written).
func (s *SendStream) Unsent() (from, to uint64) { return s.sentHigh, s.written }

// parityEntry is a parity the receiver holds: of [off, end) in chunks of
// len(parity) bytes, with its columns in have; q: the REPAIR_Q parity.
type parityEntry struct {
	off, end uint64
	fin, q   bool
	parity   []byte
	have     rangeSet
	// used: some byte was rebuilt from it (counted in RebuildCounts).
	used bool
}

// RebuildCounts counts what REPAIR parities rebuilt on the streams that
// share it (CountRebuilds).
type RebuildCounts struct {
	// Bytes are the stream bytes rebuilt from a parity (missing bytes
	// delivered as if received), Ranges the parity ranges (a parity's
	// [offset, end), one per burst, as the sender sends them) from which
	// at least one byte was rebuilt.
	Bytes, Ranges uint64
}

// EnableRepair makes the stream keep up to MaxRepairHistory bytes after
// the application read them, until all its data arrived, for AddRepair.
func (r *RecvStream) EnableRepair() { r.repair = true }

// CountRebuilds makes the stream add what its parities rebuild to c
// (nil: count nothing).
func (r *RecvStream) CountRebuilds(c *RebuildCounts) { r.counts = c }

// keepHistory appends bytes the application just read to the history.
func (r *RecvStream) keepHistory(p []byte) {
	if !r.repair || r.allReceived() {
		r.hist = nil
		return
	}
	r.hist = append(r.hist, p...)
	if len(r.hist) > 2*MaxRepairHistory {
		r.hist = r.hist[:copy(r.hist, r.hist[len(r.hist)-MaxRepairHistory:])]
	}
}

// byteAt returns the byte at offset x if the stream still has it: read
// and in the history, or received and not read.
func (r *RecvStream) byteAt(x uint64) (byte, bool) {
	if x < r.readOff {
		h := uint64(len(r.hist))
		if r.readOff-x > h {
			return 0, false
		}
		return r.hist[h-(r.readOff-x)], true
	}
	if !r.recvd.contains(x, x+1) {
		return 0, false
	}
	return r.buf.at(x - r.readOff), true
}

// AddRepair takes the columns [column, column+len(parity)) of the parity
// of [offset, end) in chunks of chunk bytes (fin: end is the final size;
// q: the REPAIR_Q parity) and rebuilds what it can: every missing byte of
// the range that is the only missing byte of its column, once that
// column of either parity arrived, and both missing bytes of a column
// with two, once that column of both parities arrived, is delivered as
// if received (Push). It returns the growth of the highest received
// offset, as Push does. The range is checked like a STREAM frame's: beyond
// the advertised limit is a FLOW_CONTROL_ERROR, beyond or changing a known
// final size a FINAL_SIZE_ERROR. Nothing is rebuilt beyond end. The caller
// ensures 0 < chunk, column+len(parity) <= chunk, offset < end (the frame
// parser does).
func (r *RecvStream) AddRepair(offset, end, chunk uint64, fin, q bool, column uint64, parity []byte) (newBytes uint64, err error) {
	if end > MaxOffset || chunk == 0 || offset >= end || column+uint64(len(parity)) > chunk {
		return 0, qerr.New(qerr.FrameEncodingError, "stream %d: malformed repair", r.id)
	}
	if err := r.checkFinal(end, fin, "REPAIR"); err != nil {
		return 0, err
	}
	if r.discarding() || end <= r.readOff || r.allReceived() || !r.repair {
		return 0, nil
	}
	var e *parityEntry
	for i := range r.parities {
		p := &r.parities[i]
		if p.off == offset && p.end == end && p.fin == fin && p.q == q && uint64(len(p.parity)) == chunk {
			e = p
			break
		}
	}
	if e == nil {
		if len(r.parities) == maxParityEntries {
			r.parities = append(r.parities[:0], r.parities[1:]...)
		}
		r.parities = append(r.parities, parityEntry{off: offset, end: end, fin: fin, q: q, parity: make([]byte, chunk)})
		e = &r.parities[len(r.parities)-1]
	}
	copy(e.parity[column:], parity)
	e.have.add(column, column+uint64(len(parity)))
	return r.rebuild()
}

// rebuild runs every parity held over the missing bytes and forgets the
// parities with nothing left to rebuild.
func (r *RecvStream) rebuild() (newBytes uint64, err error) {
	if r.rebuilding {
		return 0, nil // a Push of rebuilt bytes
	}
	r.rebuilding = true
	defer func() { r.rebuilding = false }()
	kept := r.parities[:0]
	for i := range r.parities {
		e := r.parities[i]
		n, done, err := r.rebuildWith(&e)
		newBytes += n
		if err != nil {
			return newBytes, err
		}
		if !done {
			kept = append(kept, e)
		}
	}
	clear(r.parities[len(kept):])
	r.parities = kept
	if r.discarding() || r.allReceived() {
		r.parities = nil
	}
	return newBytes, nil
}

// rebuildWith rebuilds the bytes parity e can, and reports whether e is
// done: nothing of its range is missing any more.
func (r *RecvStream) rebuildWith(e *parityEntry) (newBytes uint64, done bool, err error) {
	if r.discarding() {
		return 0, true, nil
	}
	lo := max(e.off, r.readOff)
	missing := r.missingIn(lo, e.end)
	if len(missing) > 0 {
		chunk := uint64(len(e.parity))
		count := make([]uint8, chunk)
		for _, m := range missing {
			for x := m.start; x < m.end; x++ {
				if c := (x - e.off) % chunk; count[c] < 3 {
					count[c]++
				}
			}
		}
		var run []byte
		var runStart uint64
		flush := func() error {
			if len(run) == 0 {
				return nil
			}
			n, err := r.Push(runStart, run, e.fin && runStart+uint64(len(run)) == e.end)
			newBytes += n
			if err == nil && r.counts != nil {
				r.counts.Bytes += uint64(len(run))
				if !e.used {
					r.counts.Ranges++
				}
			}
			e.used = true
			run = run[:0]
			return err
		}
		for _, m := range missing {
			for x := m.start; x < m.end; x++ {
				v, ok := r.rebuildByte(e, x, count)
				if !ok {
					if err := flush(); err != nil {
						return newBytes, false, err
					}
					continue
				}
				if len(run) == 0 {
					runStart = x
				}
				run = append(run, v)
			}
			if err := flush(); err != nil {
				return newBytes, false, err
			}
		}
		missing = r.missingIn(max(e.off, r.readOff), e.end)
	}
	if len(missing) == 0 && e.fin && !r.finalKnown {
		n, err := r.Push(e.end, nil, true)
		newBytes += n
		if err != nil {
			return newBytes, false, err
		}
	}
	return newBytes, len(missing) == 0, nil
}

// rebuildByte returns the missing byte at x from parity e: when x is
// the only missing byte of its column (count: the column's missing
// bytes when the pass began, 3 standing for more) and e has that column,
// from e alone; when it is one of two, from e and the stream's other
// parity of the same range (REPAIR and REPAIR_Q) with that column. Every
// other byte of the column must still be at hand.
func (r *RecvStream) rebuildByte(e *parityEntry, x uint64, count []uint8) (byte, bool) {
	chunk := uint64(len(e.parity))
	c := (x - e.off) % chunk
	if count[c] > 2 || !e.have.contains(c, c+1) {
		return 0, false
	}
	// The column's sums over the bytes at hand: XOR (sp) and with the
	// chunks' coefficients (sq); other, the second missing byte.
	var sp, sq byte
	other, missing := uint64(0), 0
	for y := e.off + c; y < e.end; y += chunk {
		if y == x {
			continue
		}
		b, ok := r.byteAt(y)
		if !ok {
			if missing++; missing > 1 {
				return 0, false
			}
			other = y
			continue
		}
		sp ^= b
		sq ^= gfMul(gfPow2((y-e.off)/chunk), b)
	}
	ix := (x - e.off) / chunk
	if missing == 0 {
		if e.q {
			return gfDiv(e.parity[c]^sq, gfPow2(ix)), true
		}
		return e.parity[c] ^ sp, true
	}
	f := r.partner(e, c)
	if f == nil {
		return 0, false
	}
	p, q := e.parity[c], f.parity[c]
	if e.q {
		p, q = q, p
	}
	// D_x ^ D_o = p ^ sp, and 2^ix D_x ^ 2^io D_o = q ^ sq.
	gx, gy := gfPow2(ix), gfPow2((other-e.off)/chunk)
	dp, dq := p^sp, q^sq
	return gfDiv(dq^gfMul(gy, dp), gx^gy), true
}

// partner returns the stream's other parity of e's range (REPAIR for a
// REPAIR_Q one and the other way round) when it has column c, else nil.
func (r *RecvStream) partner(e *parityEntry, c uint64) *parityEntry {
	for i := range r.parities {
		f := &r.parities[i]
		if f.q != e.q && f.off == e.off && f.end == e.end && len(f.parity) == len(e.parity) && f.have.contains(c, c+1) {
			return f
		}
	}
	return nil
}

// missingIn returns the ranges of [lo, end) not received; lo is at least
// readOff.
func (r *RecvStream) missingIn(lo, end uint64) []span {
	var out []span
	r.eachGap(lo, end, func(a, b uint64) { out = append(out, span{a, b}) })
	return out
}

// RepairPending reports how many parities the stream holds.
func (r *RecvStream) RepairPending() int { return len(r.parities) }
