package streams

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
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
			if oka, okb := ref.Parity(off, end, pa, false), zs.Parity(off, end, pb, false); oka != okb || !bytes.Equal(pa, pb) {
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
	// A reset drops the zero ranges with the buffer and ends both alike.
	ref.Reset(5)
	zs.Reset(5)
	ca, fa, oka := ref.PendingReset()
	cb, fb, okb := zs.PendingReset()
	if ca != cb || fa != fb || oka != okb || zs.zeros != nil || zs.HasPendingData() {
		t.Fatalf("seed %d: resets differ (%d %d %v, %d %d %v) or zeros kept %v", seed, ca, fa, oka, cb, fb, okb, zs.zeros)
	}
	if _, err := zs.WriteZeros(10); err == nil {
		t.Fatalf("seed %d: WriteZeros after Reset succeeded", seed)
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

// TestSinkSameAsDiscard drives two receiving streams with the same
// frames, out of order, overlapping and duplicated, both consumed with
// Discard; one becomes a sink at a random moment. Every Push, Discard,
// Readable and window update must be the same, the sink must hold no
// buffer, and its Read must fail.
func TestSinkSameAsDiscard(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 9))
		const total = 200_000
		ref := NewRecvStream(0, 64<<10)
		sk := NewRecvStream(0, 64<<10)
		ref.SetMaxWindow(1 << 20)
		sk.SetMaxWindow(1 << 20)
		now := time.Unix(0, 0)
		sinkAt := rng.IntN(2000)
		for step := range 4000 {
			if step == sinkAt && !sk.Sink() {
				t.Fatal("Sink did not take effect")
			}
			now = now.Add(time.Millisecond)
			if rng.IntN(3) > 0 {
				// A frame around the read offset (duplicates
				// included), within the window.
				off := max(0, int64(ref.readOff)+int64(rng.IntN(30_000))-15_000)
				n := uint64(1 + rng.IntN(1400))
				if uint64(off) >= total {
					continue
				}
				o := uint64(off)
				n = min(n, total-o, ref.w.limit-min(o, ref.w.limit))
				fin := o+n == total
				a, ea := ref.Push(o, patternBytes(o, int(n)), fin)
				b, eb := sk.Push(o, patternBytes(o, int(n)), fin)
				if a != b || (ea == nil) != (eb == nil) {
					t.Fatalf("seed %d step %d: Push %d, %v and %d, %v", seed, step, a, ea, b, eb)
				}
			} else {
				max := rng.IntN(70_000)
				a, ea := ref.Discard(max)
				b, eb := sk.Discard(max)
				if a != b || ea != eb {
					t.Fatalf("seed %d step %d: Discard %d, %v and %d, %v", seed, step, a, ea, b, eb)
				}
			}
			la, oka := ref.WindowUpdate(now, 10*time.Millisecond)
			lb, okb := sk.WindowUpdate(now, 10*time.Millisecond)
			if la != lb || oka != okb || ref.Readable() != sk.Readable() || ref.readOff != sk.readOff {
				t.Fatalf("seed %d step %d: states differ", seed, step)
			}
			if step >= sinkAt {
				if sk.buf.b != nil {
					t.Fatalf("seed %d step %d: the sink holds a buffer of %d bytes", seed, step, len(sk.buf.b))
				}
				if sk.Readable() && !(sk.finalKnown && sk.readOff == sk.finalSize) {
					if _, err := sk.Read(make([]byte, 10)); err != ErrSink {
						t.Fatalf("seed %d step %d: Read on a sink: %v", seed, step, err)
					}
				}
			}
		}
		if ref.readOff < total/4 {
			t.Fatalf("seed %d: %d bytes read: the test shows little", seed, ref.readOff)
		}
		// The peer's reset or the application's STOP_SENDING ends both
		// alike.
		var ea, eb error
		if seed%2 == 0 {
			_, ea = ref.OnReset(7, max(ref.highest, ref.readOff))
			_, eb = sk.OnReset(7, max(sk.highest, sk.readOff))
		} else {
			ref.StopSending(7)
			sk.StopSending(7)
		}
		_, ra := ref.Discard(100)
		_, rb := sk.Discard(100)
		if (ea == nil) != (eb == nil) || (ra == nil) != (rb == nil) || ra != nil && ra.Error() != rb.Error() || ref.Readable() != sk.Readable() {
			t.Fatalf("seed %d: after the abort: %v %v, Discard %v %v", seed, ea, eb, ra, rb)
		}
	}
	// With repair enabled the bytes are kept.
	r := NewRecvStream(0, 1000)
	r.EnableRepair()
	if r.Sink() || r.sink {
		t.Fatal("a repairing stream became a sink")
	}
}
