package streams

import (
	"errors"
	"math"
	"testing"

	"github.com/mpq/mpq/mpquic/qerr"
)

// pattern is the byte the tests write at a stream offset.
func pattern(off uint64) byte { return byte(off*7 + off>>8 + 3) }

func patternBytes(off uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern(off + uint64(i))
	}
	return b
}

// sendStep is one operation of a SendStream scenario, with its checks.
type sendStep func(t *testing.T, s *SendStream)

// write writes n pattern bytes and expects want accepted.
func write(n, want int) sendStep {
	return func(t *testing.T, s *SendStream) {
		t.Helper()
		got, err := s.Write(patternBytes(s.written, n))
		if err != nil || got != want {
			t.Fatalf("Write(%d) = %d, %v; want %d, nil", n, got, err, want)
		}
	}
}

func writeErr(check func(error) bool) sendStep {
	return func(t *testing.T, s *SendStream) {
		t.Helper()
		n, err := s.Write([]byte("x"))
		if n != 0 || !check(err) {
			t.Fatalf("Write = %d, %v: unexpected", n, err)
		}
	}
}

func closeStream() sendStep {
	return func(t *testing.T, s *SendStream) {
		t.Helper()
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

type wantChunk struct {
	off      uint64
	n        int
	fin      bool
	newBytes int
}

// chunk calls NextChunk and checks the chunk, including its bytes.
func chunk(maxLen int, credit uint64, want wantChunk) sendStep {
	return func(t *testing.T, s *SendStream) {
		t.Helper()
		if off := s.NextOffset(); off != want.off {
			t.Fatalf("NextOffset = %d, want %d", off, want.off)
		}
		ch, ok := s.NextChunk(maxLen, credit)
		if !ok {
			t.Fatalf("NextChunk(%d, %d): nothing, want %+v", maxLen, credit, want)
		}
		if ch.Offset != want.off || len(ch.Data) != want.n || ch.Fin != want.fin || ch.NewBytes != want.newBytes {
			t.Fatalf("NextChunk(%d, %d) = {off %d len %d fin %v new %d}, want %+v",
				maxLen, credit, ch.Offset, len(ch.Data), ch.Fin, ch.NewBytes, want)
		}
		for i, b := range ch.Data {
			if b != pattern(ch.Offset+uint64(i)) {
				t.Fatalf("chunk byte at %d corrupted", ch.Offset+uint64(i))
			}
		}
	}
}

func noChunk(maxLen int, credit uint64) sendStep {
	return func(t *testing.T, s *SendStream) {
		t.Helper()
		if ch, ok := s.NextChunk(maxLen, credit); ok {
			t.Fatalf("NextChunk(%d, %d) = %+v, want nothing", maxLen, credit, ch)
		}
	}
}

func ack(off uint64, n int, fin bool) sendStep {
	return func(t *testing.T, s *SendStream) { s.OnAcked(off, n, fin) }
}

func lose(off uint64, n int, fin bool) sendStep {
	return func(t *testing.T, s *SendStream) { s.OnLost(off, n, fin) }
}

func maxStreamData(m uint64) sendStep {
	return func(t *testing.T, s *SendStream) { s.OnMaxStreamData(m) }
}

// sendState is the observable state checked by expect.
type sendState struct {
	pending, retx, pendingFin, done bool
	pendingBytes                    uint64 // with credit
	credit                          uint64
	writable                        int
}

func expect(want sendState) sendStep {
	return func(t *testing.T, s *SendStream) {
		t.Helper()
		got := sendState{
			pending: s.HasPendingData(), retx: s.HasRetransmission(), pendingFin: s.HasPendingFin(), done: s.Done(),
			pendingBytes: s.PendingBytes(want.credit), credit: want.credit, writable: s.Writable(),
		}
		if got != want {
			t.Fatalf("state %+v, want %+v", got, want)
		}
	}
}

func blocked(limit uint64, ok bool) sendStep {
	return func(t *testing.T, s *SendStream) {
		t.Helper()
		l, o := s.BlockedAt()
		if l != limit || o != ok {
			t.Fatalf("BlockedAt = %d, %v; want %d, %v", l, o, limit, ok)
		}
	}
}

func buffered(n int) sendStep {
	return func(t *testing.T, s *SendStream) {
		t.Helper()
		if s.buf.n != n || uint64(n) != s.written-s.ackBase {
			t.Fatalf("buffered %d (written %d, ackBase %d), want %d", s.buf.n, s.written, s.ackBase, n)
		}
	}
}

func pendingReset(code, final uint64, ok bool) sendStep {
	return func(t *testing.T, s *SendStream) {
		t.Helper()
		c, f, o := s.PendingReset()
		if c != code || f != final || o != ok {
			t.Fatalf("PendingReset = %d, %d, %v; want %d, %d, %v", c, f, o, code, final, ok)
		}
	}
}

func do(f func(s *SendStream)) sendStep {
	return func(t *testing.T, s *SendStream) { f(s) }
}

func isStreamErr(code uint64, remote bool) func(error) bool {
	return func(err error) bool {
		var se *qerr.StreamError
		return errors.As(err, &se) && se.Code == code && se.Remote == remote && se.StreamID == 4
	}
}

const big = math.MaxUint64

func TestSendStream(t *testing.T) {
	tests := []struct {
		name    string
		peerMax uint64
		bufSize int
		steps   []sendStep
	}{
		{"write chunk ack close", 1000, 1000, []sendStep{
			expect(sendState{writable: 1000}),
			write(10, 10),
			expect(sendState{pending: true, pendingBytes: 10, credit: big, writable: 990}),
			chunk(100, big, wantChunk{0, 10, false, 10}),
			expect(sendState{credit: big, writable: 990}),
			noChunk(100, big),
			ack(0, 10, false),
			buffered(0),
			expect(sendState{writable: 1000}),
			closeStream(),
			expect(sendState{pending: true, pendingFin: true}),
			chunk(0, 0, wantChunk{10, 0, true, 0}),
			expect(sendState{}),
			ack(10, 0, true),
			expect(sendState{done: true}),
		}},
		{"empty stream", 1000, 1000, []sendStep{
			closeStream(),
			chunk(0, 0, wantChunk{0, 0, true, 0}),
			noChunk(100, big),
			ack(0, 0, true),
			expect(sendState{done: true}),
		}},
		{"fin with data", 1000, 1000, []sendStep{
			write(25, 25),
			closeStream(),
			expect(sendState{pending: true, pendingBytes: 25, credit: 100}),
			chunk(10, big, wantChunk{0, 10, false, 10}),
			chunk(10, big, wantChunk{10, 10, false, 10}),
			chunk(10, big, wantChunk{20, 5, true, 5}),
			expect(sendState{}),
			ack(20, 5, true),
			ack(0, 10, false),
			expect(sendState{}),
			buffered(15),
			ack(10, 10, false),
			buffered(0),
			expect(sendState{done: true}),
		}},
		{"data pending and maxLen 0", 1000, 1000, []sendStep{
			write(5, 5),
			closeStream(),
			noChunk(0, big),
			noChunk(-1, big),
			chunk(5, big, wantChunk{0, 5, true, 5}),
		}},
		{"out of order acks release the prefix", 1000, 1000, []sendStep{
			write(40, 40),
			chunk(10, big, wantChunk{0, 10, false, 10}),
			chunk(10, big, wantChunk{10, 10, false, 10}),
			chunk(10, big, wantChunk{20, 10, false, 10}),
			chunk(10, big, wantChunk{30, 10, false, 10}),
			ack(30, 10, false),
			ack(10, 10, false),
			buffered(40),
			expect(sendState{writable: 960}),
			ack(0, 10, false),
			buffered(20),
			ack(10, 10, false), // duplicate
			ack(5, 25, false),  // overlap, merges with [30, 40)
			buffered(0),
			expect(sendState{writable: 1000}),
		}},
		{"loss and retransmission", 1000, 1000, []sendStep{
			write(30, 30),
			chunk(10, big, wantChunk{0, 10, false, 10}),
			chunk(10, big, wantChunk{10, 10, false, 10}),
			chunk(10, big, wantChunk{20, 10, false, 10}),
			lose(10, 10, false),
			expect(sendState{pending: true, retx: true, pendingBytes: 10, writable: 970}),
			// Retransmissions ignore the connection credit.
			chunk(4, 0, wantChunk{10, 4, false, 0}),
			chunk(100, 0, wantChunk{14, 6, false, 0}),
			noChunk(100, big),
			ack(0, 30, false),
			buffered(0),
		}},
		{"overlapping losses minus acknowledged bytes", 1000, 1000, []sendStep{
			write(30, 30),
			chunk(30, big, wantChunk{0, 30, false, 30}),
			noChunk(0, 0),
			ack(5, 3, false),
			lose(0, 20, false),
			lose(10, 20, false),
			lose(0, 30, false),
			expect(sendState{pending: true, retx: true, pendingBytes: 27, writable: 970}),
			chunk(100, big, wantChunk{0, 5, false, 0}),
			chunk(100, big, wantChunk{8, 22, false, 0}),
			expect(sendState{writable: 970}),
		}},
		{"spurious loss then ack", 1000, 1000, []sendStep{
			write(20, 20),
			chunk(20, big, wantChunk{0, 20, false, 20}),
			lose(0, 20, false),
			ack(0, 10, false),
			expect(sendState{pending: true, retx: true, pendingBytes: 10, writable: 990}),
			ack(0, 20, false),
			expect(sendState{writable: 1000}),
			lose(0, 20, false), // late loss of acknowledged data
			expect(sendState{writable: 1000}),
		}},
		{"new data after retransmission", 1000, 1000, []sendStep{
			write(10, 10),
			chunk(10, big, wantChunk{0, 10, false, 10}),
			write(10, 10),
			lose(0, 10, false),
			expect(sendState{pending: true, retx: true, pendingBytes: 20, credit: big, writable: 980}),
			chunk(100, big, wantChunk{0, 10, false, 0}),
			chunk(100, big, wantChunk{10, 10, false, 10}),
		}},
		{"stream flow control", 15, 1000, []sendStep{
			write(30, 30),
			blocked(0, false),
			chunk(100, big, wantChunk{0, 15, false, 15}),
			blocked(15, true),
			expect(sendState{pending: true, credit: big, writable: 970}),
			noChunk(100, big),
			maxStreamData(10), // lower: ignored
			blocked(15, true),
			lose(0, 15, false),
			chunk(100, 0, wantChunk{0, 15, false, 0}),
			maxStreamData(25),
			blocked(0, false),
			expect(sendState{pending: true, pendingBytes: 10, credit: big, writable: 970}),
			chunk(100, big, wantChunk{15, 10, false, 10}),
			blocked(25, true),
			maxStreamData(100),
			closeStream(),
			chunk(100, big, wantChunk{25, 5, true, 5}),
			blocked(0, false),
		}},
		{"connection credit", 1000, 1000, []sendStep{
			write(30, 30),
			expect(sendState{pending: true, pendingBytes: 7, credit: 7, writable: 970}),
			chunk(100, 7, wantChunk{0, 7, false, 7}),
			noChunk(100, 0),
			blocked(0, false), // the stream itself is not blocked
			expect(sendState{pending: true, pendingBytes: 0, credit: 0, writable: 970}),
			chunk(100, 100, wantChunk{7, 23, false, 23}),
		}},
		{"fin lost with data", 1000, 1000, []sendStep{
			write(10, 10),
			closeStream(),
			chunk(100, big, wantChunk{0, 10, true, 10}),
			lose(0, 10, true),
			expect(sendState{pending: true, retx: true, pendingBytes: 10, credit: big}),
			chunk(100, big, wantChunk{0, 10, true, 0}),
			ack(0, 10, true),
			expect(sendState{done: true}),
		}},
		{"fin lost alone", 1000, 1000, []sendStep{
			write(10, 10),
			chunk(100, big, wantChunk{0, 10, false, 10}),
			closeStream(),
			chunk(100, big, wantChunk{10, 0, true, 0}),
			ack(0, 10, false),
			lose(10, 0, true),
			expect(sendState{pending: true, pendingFin: true}),
			chunk(0, 0, wantChunk{10, 0, true, 0}),
			ack(10, 0, true),
			expect(sendState{done: true}),
		}},
		{"fin lost after being acknowledged", 1000, 1000, []sendStep{
			write(10, 10),
			closeStream(),
			chunk(100, big, wantChunk{0, 10, true, 10}),
			ack(0, 10, true),
			lose(0, 10, true),
			expect(sendState{done: true}),
		}},
		{"fin lost while data retransmission pending", 1000, 1000, []sendStep{
			write(10, 10),
			chunk(100, big, wantChunk{0, 10, false, 10}),
			closeStream(),
			chunk(100, big, wantChunk{10, 0, true, 0}),
			lose(0, 10, false),
			lose(10, 0, true),
			expect(sendState{pending: true, retx: true, pendingBytes: 10}),
			noChunk(0, big),
			chunk(4, big, wantChunk{0, 4, false, 0}),
			chunk(100, big, wantChunk{4, 6, true, 0}),
			ack(0, 4, false),
			ack(4, 6, true),
			expect(sendState{done: true}),
		}},
		{"send buffer limit", 1000, 16, []sendStep{
			write(20, 16),
			expect(sendState{pending: true, pendingBytes: 16, credit: big}),
			write(5, 0),
			chunk(100, big, wantChunk{0, 16, false, 16}),
			ack(0, 8, false),
			expect(sendState{writable: 8}),
			write(20, 8),
			ack(8, 8, false),
			expect(sendState{pending: true, pendingBytes: 8, credit: big, writable: 8}),
		}},
		{"zero buffer", 1000, 0, []sendStep{
			write(20, 0),
			expect(sendState{}),
		}},
		{"write after close", 1000, 100, []sendStep{
			write(5, 5),
			closeStream(),
			closeStream(), // idempotent
			writeErr(func(err error) bool { return errors.Is(err, ErrWriteAfterClose) }),
			expect(sendState{pending: true, pendingBytes: 5, credit: big}),
		}},
		{"local reset", 1000, 100, []sendStep{
			write(20, 20),
			chunk(10, big, wantChunk{0, 10, false, 10}),
			lose(0, 10, false),
			do(func(s *SendStream) { s.Reset(7) }),
			pendingReset(7, 10, true),
			expect(sendState{}),
			noChunk(100, big),
			blocked(0, false),
			writeErr(isStreamErr(7, false)),
			do(func(s *SendStream) {
				if err := s.Close(); !isStreamErr(7, false)(err) {
					panic("Close after Reset succeeded")
				}
			}),
			do(func(s *SendStream) { s.Reset(8) }), // ignored
			do(func(s *SendStream) { s.OnStopSending(9) }),
			pendingReset(7, 10, true),
			writeErr(isStreamErr(7, false)),
			do(func(s *SendStream) { s.OnResetSent() }),
			pendingReset(0, 0, false),
			ack(0, 10, false), // late acks and losses are harmless
			lose(0, 10, true),
			do(func(s *SendStream) { s.OnResetLost() }),
			pendingReset(7, 10, true),
			do(func(s *SendStream) { s.OnResetSent() }),
			expect(sendState{}),
			do(func(s *SendStream) { s.OnResetAcked() }),
			pendingReset(0, 0, false),
			do(func(s *SendStream) { s.OnResetLost() }), // a late loss of an older copy
			pendingReset(0, 0, false),
			expect(sendState{done: true}),
		}},
		{"reset before sending", 1000, 100, []sendStep{
			write(20, 20),
			do(func(s *SendStream) { s.Reset(1) }),
			pendingReset(1, 0, true),
			do(func(s *SendStream) { s.OnResetAcked() }),
			expect(sendState{done: true}),
		}},
		{"stop sending in send state", 1000, 100, []sendStep{
			write(20, 20),
			chunk(100, big, wantChunk{0, 20, false, 20}),
			do(func(s *SendStream) { s.OnStopSending(42) }),
			pendingReset(42, 20, true),
			writeErr(isStreamErr(42, true)),
			expect(sendState{}),
			do(func(s *SendStream) { s.OnResetSent(); s.OnResetAcked() }),
			expect(sendState{done: true}),
		}},
		{"stop sending in data sent state", 1000, 100, []sendStep{
			write(20, 20),
			closeStream(),
			chunk(100, big, wantChunk{0, 20, true, 20}),
			ack(0, 10, false),
			do(func(s *SendStream) { s.OnStopSending(42) }),
			pendingReset(42, 20, true),
		}},
		{"stop sending after everything was acknowledged", 1000, 100, []sendStep{
			write(20, 20),
			closeStream(),
			chunk(100, big, wantChunk{0, 20, true, 20}),
			ack(0, 20, true),
			do(func(s *SendStream) { s.OnStopSending(42) }),
			pendingReset(0, 0, false),
			writeErr(isStreamErr(42, true)),
			expect(sendState{done: true}),
			do(func(s *SendStream) { s.Reset(3) }),
			pendingReset(0, 0, false),
			expect(sendState{done: true}),
		}},
		{"garbage ranges", 1000, 100, []sendStep{
			write(20, 20),
			chunk(10, big, wantChunk{0, 10, false, 10}),
			ack(50, 10, false),
			ack(math.MaxUint64-5, 100, false),
			lose(math.MaxUint64-5, 100, false),
			lose(5, -3, false),
			ack(5, -3, false),
			lose(15, 10, true), // never sent, not closed
			ack(0, 0, true),    // FIN of an open stream
			expect(sendState{pending: true, pendingBytes: 10, credit: big, writable: 80}),
			lose(5, 1000, false),
			chunk(100, big, wantChunk{5, 5, false, 0}),
			ack(0, 1000, false),
			buffered(10),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSendStream(4, tt.peerMax, tt.bufSize)
			for _, step := range tt.steps {
				step(t, s)
			}
		})
	}
}

// TestSendStreamWrap checks chunks across the end of the circular buffer.
func TestSendStreamWrap(t *testing.T) {
	s := NewSendStream(0, big, minRingSize)
	var off uint64
	var sent uint64
	for round := range 10 {
		n := minRingSize*2/3 + round
		w, err := s.Write(patternBytes(off, n))
		if err != nil || w != min(n, minRingSize) {
			t.Fatalf("Write = %d, %v", w, err)
		}
		off += uint64(w)
		if len(s.buf.b) != minRingSize {
			t.Fatalf("buffer grew to %d", len(s.buf.b))
		}
		for {
			ch, ok := s.NextChunk(1000, big)
			if !ok {
				break
			}
			if ch.Offset != sent {
				t.Fatalf("chunk at %d, want %d", ch.Offset, sent)
			}
			for i, b := range ch.Data {
				if b != pattern(ch.Offset+uint64(i)) {
					t.Fatalf("round %d: byte at %d corrupted", round, ch.Offset+uint64(i))
				}
			}
			sent += uint64(len(ch.Data))
			// Lose every chunk once to retransmit across the wrap too.
			s.OnLost(ch.Offset, len(ch.Data), false)
			re, ok := s.NextChunk(1000, big)
			if !ok || re.Offset != ch.Offset || len(re.Data) > len(ch.Data) {
				t.Fatalf("retransmission %+v, want offset %d", re, ch.Offset)
			}
			s.OnAcked(ch.Offset, len(ch.Data), false)
		}
		if sent != off || s.buf.n != 0 {
			t.Fatalf("round %d: sent %d of %d, buffered %d", round, sent, off, s.buf.n)
		}
	}
}

// TestSendStreamGrowth checks that the buffer grows to the limit only.
func TestSendStreamGrowth(t *testing.T) {
	const limit = 100_000
	s := NewSendStream(0, big, limit)
	var off uint64
	for off < limit {
		n, _ := s.Write(patternBytes(off, 3000))
		off += uint64(n)
	}
	if len(s.buf.b) != limit || s.Writable() != 0 {
		t.Fatalf("buffer %d, writable %d", len(s.buf.b), s.Writable())
	}
	var got []byte
	for {
		ch, ok := s.NextChunk(1<<20, big)
		if !ok {
			break
		}
		got = append(got, ch.Data...)
	}
	if string(got) != string(patternBytes(0, limit)) {
		t.Fatal("data corrupted")
	}
}
