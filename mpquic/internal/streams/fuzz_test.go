package streams

import (
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// fuzzByte is the byte pushed at offset off in variant v: overlapping
// pushes may carry different bytes, and a read must return one of them.
func fuzzByte(off uint64, v uint8) byte { return byte(off*13+off>>9) ^ v*0x55 }

// fuzzTracked bounds the offsets whose pushed variants are tracked.
const fuzzTracked = 1 << 18

// fuzzReader decodes operations from the fuzz input.
type fuzzReader struct{ b []byte }

func (f *fuzzReader) u8() uint8 {
	if len(f.b) == 0 {
		return 0
	}
	v := f.b[0]
	f.b = f.b[1:]
	return v
}

func (f *fuzzReader) u16() uint64 { return uint64(f.u8())<<8 | uint64(f.u8()) }

func (f *fuzzReader) u64() uint64 {
	var b [8]byte
	for i := range b {
		b[i] = f.u8()
	}
	return binary.BigEndian.Uint64(b[:])
}

func FuzzRecvStream(f *testing.F) {
	f.Add([]byte{0x10, 0, 0, 0, 20, 0, 0, 0, 20, 20, 3, 50})
	f.Add([]byte{0x40, 0, 0, 10, 30, 1, 0, 0, 0, 10, 0, 3, 100, 2, 0, 0, 0, 50, 3, 10})
	f.Add([]byte{0x08, 0, 0, 50, 10, 1, 5, 1, 3, 200, 0, 0, 0, 60, 0, 3, 255, 4, 10, 3, 20})
	f.Add([]byte{0x20, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0, 200, 0, 3, 10, 6, 0, 0, 0, 0, 0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		fr := &fuzzReader{b: in}
		window := uint64(fr.u8())*64 + 1
		r := NewRecvStream(7, window)
		pushed := map[uint64]uint8{} // offset -> bitmask of variants
		var (
			accounted  uint64
			lastLimit  = r.Limit()
			final      uint64
			finalKnown bool
			wasDone    bool
			now        = time.Unix(0, 0)
			buf        [512]byte
			data       [300]byte
		)
		for len(fr.b) > 0 {
			switch op := fr.u8() % 7; op {
			case 0, 1: // Push
				var off uint64
				if op == 0 {
					off = fr.u16()
				} else {
					off = fr.u64()
				}
				n := int(fr.u8())
				flags := fr.u8()
				fin, v := flags&1 != 0, flags>>1&3
				d := data[:n]
				for i := range d {
					d[i] = fuzzByte(off+uint64(i), v)
				}
				before := snapshot(r)
				nb, err := r.Push(off, d, fin)
				if err != nil {
					var te *qerr.TransportError
					if !errors.As(err, &te) || te.Code != qerr.FlowControlError && te.Code != qerr.FinalSizeError {
						t.Fatalf("Push: unexpected error %v", err)
					}
					if nb != 0 || snapshot(r) != before {
						t.Fatalf("failed Push changed the stream")
					}
					break
				}
				accounted += nb
				for i := range d {
					if o := off + uint64(i); o < fuzzTracked {
						pushed[o] |= 1 << v
					}
				}
				if fin {
					if finalKnown && final != off+uint64(n) {
						t.Fatalf("final size changed from %d to %d", final, off+uint64(n))
					}
					final, finalKnown = off+uint64(n), true
				}
				for i := range d {
					d[i] = 0 // the stream must have copied
				}
			case 2: // OnReset
				code := uint64(fr.u8())
				size := fr.u16()
				if fr.u8()&1 != 0 {
					size = fr.u64()
				}
				before := snapshot(r)
				nb, err := r.OnReset(code, size)
				if err != nil {
					var te *qerr.TransportError
					if !errors.As(err, &te) || te.Code != qerr.FlowControlError && te.Code != qerr.FinalSizeError {
						t.Fatalf("OnReset: unexpected error %v", err)
					}
					if nb != 0 || snapshot(r) != before {
						t.Fatalf("failed OnReset changed the stream")
					}
					break
				}
				if finalKnown && final != size {
					t.Fatalf("final size changed from %d to %d by a reset", final, size)
				}
				final, finalKnown = size, true
				accounted += nb
			case 3: // Read
				n := int(fr.u8())
				start := r.ReadOffset()
				readable := r.Readable()
				got, err := r.Read(buf[:n])
				if got < 0 || got > n || got > 0 && err != nil {
					t.Fatalf("Read(%d) = %d, %v", n, got, err)
				}
				for i, b := range buf[:got] {
					o := start + uint64(i)
					mask := pushed[o]
					ok := false
					for v := range uint8(4) {
						ok = ok || mask&(1<<v) != 0 && fuzzByte(o, v) == b
					}
					if !ok {
						t.Fatalf("Read returned %#x at offset %d, never pushed there (variants %04b)", b, o, mask)
					}
				}
				var se *qerr.StreamError
				switch {
				case err == io.EOF:
					if !finalKnown || r.ReadOffset() != final {
						t.Fatalf("EOF at %d, final size %d known %v", r.ReadOffset(), final, finalKnown)
					}
				case errors.As(err, &se):
					if se.StreamID != 7 || se.Remote != r.resetRecvd {
						t.Fatalf("Read error %v", err)
					}
				case err != nil:
					t.Fatalf("Read error %v", err)
				}
				if n > 0 && readable != (got > 0 || err != nil) {
					t.Fatalf("Readable was %v, Read(%d) = %d, %v", readable, n, got, err)
				}
			case 4: // WindowUpdate
				now = now.Add(time.Duration(fr.u8()) * time.Millisecond)
				srtt := time.Duration(fr.u8()%16) * time.Millisecond
				lim, ok := r.WindowUpdate(now, srtt)
				if ok && (lim != r.Limit() || lim <= lastLimit) {
					t.Fatalf("WindowUpdate = %d, limit %d, previous %d", lim, r.Limit(), lastLimit)
				}
			case 5: // StopSending
				r.StopSending(uint64(fr.u8()))
			case 6: // SetMaxWindow
				r.SetMaxWindow(fr.u16() * 64)
			}
			checkRecvInvariants(t, r, accounted)
			if r.Limit() < lastLimit {
				t.Fatalf("limit decreased from %d to %d", lastLimit, r.Limit())
			}
			lastLimit = r.Limit()
			if r.FinalSizeKnown() != finalKnown || finalKnown && r.finalSize != final {
				t.Fatalf("final size %d/%v, model %d/%v", r.finalSize, r.FinalSizeKnown(), final, finalKnown)
			}
			if wasDone && !r.Done() {
				t.Fatal("Done went back to false")
			}
			wasDone = r.Done()
		}
	})
}

// checkRecvInvariants checks the internal consistency of a RecvStream.
func checkRecvInvariants(t *testing.T, r *RecvStream, accounted uint64) {
	t.Helper()
	if r.highest != accounted {
		t.Fatalf("highest offset %d, newBytes summed to %d", r.highest, accounted)
	}
	if r.readOff > r.highest || r.highest > r.w.limit || r.w.limit > MaxOffset {
		t.Fatalf("offsets out of order: read %d highest %d limit %d", r.readOff, r.highest, r.w.limit)
	}
	if r.finalKnown && r.finalSize != r.highest {
		t.Fatalf("final size %d, highest %d", r.finalSize, r.highest)
	}
	prev := r.readOff
	for i, sp := range r.recvd {
		if sp.start >= sp.end || sp.start < prev || i > 0 && sp.start == prev || sp.end > r.highest {
			t.Fatalf("bad received ranges %v (read %d highest %d)", r.recvd, r.readOff, r.highest)
		}
		prev = sp.end
	}
	if !r.discarding() && len(r.recvd) > 0 && r.recvd[len(r.recvd)-1].end-r.readOff > uint64(len(r.buf.b)) {
		t.Fatalf("buffer of %d bytes for data up to %d", len(r.buf.b), r.recvd[len(r.recvd)-1].end-r.readOff)
	}
}
