package streams

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestWriteZerosSameAsWrite drives two streams with the same random
// operations: one is written real zeros with Write, the other the same
// zeros with WriteZeros, both interleaved with patterned bytes written
// with Write. Every chunk (retransmissions and ring wraps included),
// every parity and every buffer state must be the same, although the
// second stream's ring holds stale patterned bytes where its zeros are.
func TestWriteZerosSameAsWrite(t *testing.T) {
	for seed := range uint64(40) {
		zerosModel(t, seed)
	}
}

func zerosModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	limit := minRingSize + rng.IntN(3*minRingSize)
	ref := NewSendStream(0, big, limit)
	zs := NewSendStream(0, big, limit)
	type sent struct {
		off uint64
		n   int
		fin bool
	}
	var inflight []sent
	var written uint64
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 3:
			n := 1 + rng.IntN(3000)
			var a, b int
			var ea, eb error
			if rng.IntN(2) == 0 {
				p := patternBytes(written, n)
				a, ea = ref.Write(p)
				b, eb = zs.Write(p)
			} else {
				a, ea = ref.Write(make([]byte, n))
				b, eb = zs.WriteZeros(n)
			}
			if a != b || ea != eb {
				t.Fatalf("seed %d step %d: writes took %d, %v and %d, %v", seed, step, a, ea, b, eb)
			}
			written += uint64(a)
		case op < 7:
			maxLen := rng.IntN(2000)
			credit := uint64(rng.IntN(5000))
			ca, oka := ref.NextChunk(maxLen, credit)
			cb, okb := zs.NextChunk(maxLen, credit)
			if oka != okb || ca.Offset != cb.Offset || ca.Fin != cb.Fin || ca.NewBytes != cb.NewBytes || !bytes.Equal(ca.Data, cb.Data) {
				t.Fatalf("seed %d step %d: chunks differ: %v %d+%d fin %v, %v %d+%d fin %v", seed, step,
					oka, ca.Offset, len(ca.Data), ca.Fin, okb, cb.Offset, len(cb.Data), cb.Fin)
			}
			if oka {
				inflight = append(inflight, sent{ca.Offset, len(ca.Data), ca.Fin})
			}
		case op < 9 && len(inflight) > 0:
			i := rng.IntN(len(inflight))
			f := inflight[i]
			inflight = append(inflight[:i], inflight[i+1:]...)
			if rng.IntN(4) == 0 {
				ref.OnLost(f.off, f.n, f.fin)
				zs.OnLost(f.off, f.n, f.fin)
			} else {
				ref.OnAcked(f.off, f.n, f.fin)
				zs.OnAcked(f.off, f.n, f.fin)
			}
		case op == 9 && written > ref.ackBase:
			off := ref.ackBase + uint64(rng.Int64N(int64(written-ref.ackBase)))
			end := off + 1 + uint64(rng.Int64N(int64(written-off)))
			pa := make([]byte, 1+rng.IntN(1500))
			pb := make([]byte, len(pa))
			if oka, okb := ref.Parity(off, end, pa), zs.Parity(off, end, pb); oka != okb || !bytes.Equal(pa, pb) {
				t.Fatalf("seed %d step %d: parities of [%d, %d) differ", seed, step, off, end)
			}
		}
		if ref.ackBase != zs.ackBase || ref.buf.n != zs.buf.n || ref.Writable() != zs.Writable() {
			t.Fatalf("seed %d step %d: states differ", seed, step)
		}
		// The zero ranges cover only what is buffered.
		if len(zs.zeros) > 0 && (zs.zeros[0].start < zs.ackBase || zs.zeros[len(zs.zeros)-1].end > zs.written) {
			t.Fatalf("seed %d step %d: zero ranges %v outside [%d, %d)", seed, step, zs.zeros, zs.ackBase, zs.written)
		}
	}
}

// TestWriteZerosNotCopied checks that WriteZeros leaves the send buffer
// untouched and hands the zeros out from zeroPage.
func TestWriteZerosNotCopied(t *testing.T) {
	s := NewSendStream(0, big, minRingSize)
	p := bytes.Repeat([]byte{0xff}, minRingSize)
	if n, _ := s.Write(p); n != minRingSize {
		t.Fatalf("Write took %d", n)
	}
	ch, _ := s.NextChunk(minRingSize, big)
	s.OnAcked(ch.Offset, len(ch.Data), false)
	if n, _ := s.WriteZeros(100); n != 100 {
		t.Fatalf("WriteZeros took %d", n)
	}
	if !bytes.Equal(s.buf.b, p) {
		t.Fatal("WriteZeros wrote into the send buffer")
	}
	ch, _ = s.NextChunk(1000, big)
	if len(ch.Data) != 100 || &ch.Data[0] != &zeroPage[0] {
		t.Fatalf("chunk of %d bytes not from zeroPage", len(ch.Data))
	}
}
