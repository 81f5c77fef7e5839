package streams

import (
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// recvStep is one operation of a RecvStream scenario, with its checks.
type recvStep func(t *testing.T, r *RecvStream)

// push pushes pattern bytes [off, off+n) and expects newBytes.
func push(off uint64, n int, fin bool, newBytes uint64) recvStep {
	return func(t *testing.T, r *RecvStream) {
		t.Helper()
		data := patternBytes(off, n)
		got, err := r.Push(off, data, fin)
		if err != nil || got != newBytes {
			t.Fatalf("Push(%d, %d, %v) = %d, %v; want %d, nil", off, n, fin, got, err, newBytes)
		}
		// The stream must have copied the data.
		for i := range data {
			data[i] = 0xee
		}
	}
}

func isTransportErr(code qerr.TransportErrorCode) func(error) bool {
	return func(err error) bool {
		var te *qerr.TransportError
		return errors.As(err, &te) && te.Code == code
	}
}

// pushErr expects Push to fail with a transport error code and to change
// nothing.
func pushErr(off uint64, n int, fin bool, code qerr.TransportErrorCode) recvStep {
	return func(t *testing.T, r *RecvStream) {
		t.Helper()
		before := snapshot(r)
		got, err := r.Push(off, patternBytes(off, n), fin)
		if got != 0 || !isTransportErr(code)(err) {
			t.Fatalf("Push(%d, %d, %v) = %d, %v; want %v", off, n, fin, got, err, code)
		}
		if after := snapshot(r); after != before {
			t.Fatalf("failed Push changed the stream: %+v -> %+v", before, after)
		}
	}
}

func resetStep(code, final, newBytes uint64) recvStep {
	return func(t *testing.T, r *RecvStream) {
		t.Helper()
		got, err := r.OnReset(code, final)
		if err != nil || got != newBytes {
			t.Fatalf("OnReset(%d, %d) = %d, %v; want %d, nil", code, final, got, err, newBytes)
		}
	}
}

func resetErr(final uint64, code qerr.TransportErrorCode) recvStep {
	return func(t *testing.T, r *RecvStream) {
		t.Helper()
		before := snapshot(r)
		got, err := r.OnReset(1, final)
		if got != 0 || !isTransportErr(code)(err) {
			t.Fatalf("OnReset(%d) = %d, %v; want %v", final, got, err, code)
		}
		if after := snapshot(r); after != before {
			t.Fatalf("failed OnReset changed the stream: %+v -> %+v", before, after)
		}
	}
}

type recvSnapshot struct {
	readOff, highest, finalSize, limit uint64
	finalKnown, reset                  bool
	nranges                            int
}

func snapshot(r *RecvStream) recvSnapshot {
	return recvSnapshot{r.readOff, r.highest, r.finalSize, r.w.limit, r.finalKnown, r.resetRecvd, len(r.recvd)}
}

// read reads up to max bytes and expects the pattern bytes [off, off+n).
func read(max int, off uint64, n int) recvStep {
	return func(t *testing.T, r *RecvStream) {
		t.Helper()
		p := make([]byte, max)
		got, err := r.Read(p)
		if err != nil || got != n {
			t.Fatalf("Read(%d) = %d, %v; want %d, nil", max, got, err, n)
		}
		if string(p[:got]) != string(patternBytes(off, n)) {
			t.Fatalf("Read(%d) returned wrong bytes", max)
		}
	}
}

func readErr(check func(error) bool) recvStep {
	return func(t *testing.T, r *RecvStream) {
		t.Helper()
		n, err := r.Read(make([]byte, 100))
		if n != 0 || !check(err) {
			t.Fatalf("Read = %d, %v: unexpected", n, err)
		}
	}
}

func isEOF(err error) bool { return err == io.EOF }

type recvState struct {
	readable, finalKnown, done bool
	stopCode                   uint64
	stopOK                     bool
}

func expectRecv(want recvState) recvStep {
	return func(t *testing.T, r *RecvStream) {
		t.Helper()
		got := recvState{readable: r.Readable(), finalKnown: r.FinalSizeKnown(), done: r.Done()}
		got.stopCode, got.stopOK = r.StopSendingCode()
		if got != want {
			t.Fatalf("state %+v, want %+v", got, want)
		}
	}
}

func stop(code uint64) recvStep {
	return func(t *testing.T, r *RecvStream) { r.StopSending(code) }
}

func isRecvStreamErr(code uint64, remote bool) func(error) bool {
	return func(err error) bool {
		var se *qerr.StreamError
		return errors.As(err, &se) && se.Code == code && se.Remote == remote && se.StreamID == 3
	}
}

func TestRecvStream(t *testing.T) {
	tests := []struct {
		name   string
		window uint64
		steps  []recvStep
	}{
		{"in order", 100, []recvStep{
			expectRecv(recvState{}),
			read(10, 0, 0),
			push(0, 10, false, 10),
			expectRecv(recvState{readable: true}),
			push(10, 10, false, 10),
			read(15, 0, 15),
			read(15, 15, 5),
			expectRecv(recvState{}),
			read(15, 20, 0),
			push(20, 5, true, 5),
			expectRecv(recvState{readable: true, finalKnown: true}),
			read(0, 20, 0),
			read(100, 20, 5),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
			readErr(isEOF),
			readErr(isEOF),
		}},
		{"out of order with overlaps and duplicates", 100, []recvStep{
			push(20, 10, false, 30),
			push(40, 10, true, 20),
			expectRecv(recvState{finalKnown: true}),
			read(100, 0, 0),
			push(25, 10, false, 0), // overlaps [20,30)
			push(20, 10, false, 0), // duplicate
			push(0, 5, false, 0),
			read(100, 0, 5),
			push(0, 22, false, 0), // partly read, partly new, partly duplicate
			read(100, 5, 30),
			push(36, 10, false, 0),
			read(100, 35, 0),
			push(30, 20, true, 0),
			read(7, 35, 7),
			read(100, 42, 8),
			readErr(isEOF),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
			push(10, 40, true, 0), // retransmission after the end
			readErr(isEOF),
		}},
		{"fin before data", 100, []recvStep{
			push(50, 0, true, 50),
			expectRecv(recvState{finalKnown: true}),
			push(0, 50, false, 0),
			read(100, 0, 50),
			readErr(isEOF),
		}},
		{"empty stream", 100, []recvStep{
			push(0, 0, true, 0),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
			readErr(isEOF),
		}},
		{"empty frames", 100, []recvStep{
			push(30, 0, false, 0), // no data: nothing counted
			push(100, 0, false, 0),
			pushErr(101, 0, false, qerr.FlowControlError),
			expectRecv(recvState{}),
		}},
		{"flow control", 100, []recvStep{
			push(0, 100, false, 100),
			pushErr(100, 1, false, qerr.FlowControlError),
			pushErr(90, 11, false, qerr.FlowControlError),
			pushErr(101, 0, true, qerr.FlowControlError),
			pushErr(math.MaxUint64-3, 10, false, qerr.FlowControlError),
			pushErr(MaxOffset, 1, false, qerr.FlowControlError),
			pushErr(MaxOffset+1, 0, false, qerr.FlowControlError),
		}},
		{"final size errors", 100, []recvStep{
			push(10, 10, false, 20),
			pushErr(0, 15, true, qerr.FinalSizeError), // FIN below data received
			push(0, 30, true, 10),
			pushErr(0, 31, false, qerr.FinalSizeError), // beyond final size
			pushErr(0, 29, true, qerr.FinalSizeError),  // final size shrinks
			pushErr(30, 1, true, qerr.FinalSizeError),  // final size grows
			pushErr(30, 1, false, qerr.FinalSizeError),
			push(0, 30, true, 0),  // same final size again
			push(29, 1, true, 0),  // same final size again
			push(30, 0, false, 0), // empty at the final size
			resetErr(31, qerr.FinalSizeError),
			resetErr(29, qerr.FinalSizeError),
		}},
		{"reset discards unread data", 100, []recvStep{
			push(0, 20, false, 20),
			push(30, 10, false, 20),
			read(5, 0, 5),
			resetErr(39, qerr.FinalSizeError), // below data received
			resetErr(101, qerr.FlowControlError),
			resetStep(9, 50, 10),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
			readErr(isRecvStreamErr(9, true)),
			push(20, 10, false, 0), // accounted and discarded
			push(40, 10, true, 0),
			pushErr(45, 10, false, qerr.FinalSizeError),
			resetStep(10, 50, 0), // repeated: ignored
			readErr(isRecvStreamErr(9, true)),
			resetErr(51, qerr.FinalSizeError),
			do2(func(t *testing.T, r *RecvStream) {
				if r.buf.b != nil || len(r.recvd) != 0 {
					t.Fatal("buffer kept after reset")
				}
				if _, ok := r.WindowUpdate(time.Now(), 0); ok {
					t.Fatal("window update after reset")
				}
			}),
		}},
		{"reset of an untouched stream", 100, []recvStep{
			resetStep(1, 70, 70),
			readErr(isRecvStreamErr(1, true)),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
		}},
		{"reset with final size 0", 100, []recvStep{
			resetStep(1, 0, 0),
			readErr(isRecvStreamErr(1, true)),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
		}},
		{"reset at the read offset without FIN", 100, []recvStep{
			push(0, 10, false, 10),
			read(100, 0, 10),
			resetStep(2, 10, 0),
			readErr(isRecvStreamErr(2, true)),
		}},
		{"reset with all data received", 100, []recvStep{
			push(0, 30, true, 30),
			read(10, 0, 10),
			resetStep(4, 30, 0),
			readErr(isRecvStreamErr(4, true)),
		}},
		{"reset after all data was read", 100, []recvStep{
			push(0, 30, true, 30),
			read(100, 0, 30),
			resetStep(4, 30, 0),
			readErr(isEOF),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
		}},
		{"stop sending", 100, []recvStep{
			push(0, 20, false, 20),
			stop(6),
			expectRecv(recvState{readable: true, stopCode: 6, stopOK: true}),
			readErr(isRecvStreamErr(6, false)),
			stop(7), // only the first counts
			push(20, 10, false, 10),
			pushErr(20, 100, false, qerr.FlowControlError),
			expectRecv(recvState{readable: true, stopCode: 6, stopOK: true}),
			push(40, 10, true, 20),
			// The final size is known but data is missing: the peer may
			// still send, so STOP_SENDING is still due.
			expectRecv(recvState{readable: true, finalKnown: true, done: true, stopCode: 6, stopOK: true}),
			push(30, 10, false, 0),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
			readErr(isRecvStreamErr(6, false)),
		}},
		{"stop sending then reset", 100, []recvStep{
			push(0, 20, false, 20),
			stop(6),
			resetStep(8, 20, 0),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
			readErr(isRecvStreamErr(8, true)),
		}},
		{"stop sending after reset", 100, []recvStep{
			resetStep(8, 20, 20),
			stop(6),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
		}},
		{"stop sending with everything received", 100, []recvStep{
			push(0, 20, true, 20),
			stop(6),
			expectRecv(recvState{readable: true, finalKnown: true, done: true}),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecvStream(3, tt.window)
			for _, step := range tt.steps {
				step(t, r)
			}
		})
	}
}

func do2(f func(t *testing.T, r *RecvStream)) recvStep { return f }

// TestRecvStreamWindow checks the half-window rule and auto-tuning.
func TestRecvStreamWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	type step struct {
		push     int           // bytes to push in order before reading
		read     int           // bytes to read
		at       time.Duration // time of the WindowUpdate call after t0
		srtt     time.Duration
		wantOK   bool
		wantLim  uint64
		wantWind uint64
	}
	tests := []struct {
		name           string
		window, maxWin uint64
		steps          []step
	}{
		{"half window rule", 100, 100, []step{
			{push: 100, read: 40, at: 0, wantLim: 100, wantWind: 100},
			{read: 10, at: 0, wantLim: 100, wantWind: 100}, // exactly half
			{read: 1, at: 0, wantOK: true, wantLim: 151, wantWind: 100},
			{push: 51, read: 51, at: 0, wantOK: true, wantLim: 202, wantWind: 100},
		}},
		{"auto-tuning doubles when updates are frequent", 100, 350, []step{
			{push: 100, read: 60, at: 0, srtt: 10 * ms, wantOK: true, wantLim: 160, wantWind: 100},
			// 15 ms later < 2*srtt: double.
			{push: 60, read: 60, at: 15 * ms, srtt: 10 * ms, wantOK: true, wantLim: 320, wantWind: 200},
			{push: 160, read: 101, at: 20 * ms, srtt: 10 * ms, wantOK: true, wantLim: 571, wantWind: 350},
			// Capped at the maximum window.
			{push: 150, read: 180, at: 25 * ms, srtt: 10 * ms, wantOK: true, wantLim: 751, wantWind: 350},
		}},
		{"no tuning when updates are rare", 100, 1000, []step{
			{push: 100, read: 60, at: 0, srtt: 10 * ms, wantOK: true, wantLim: 160, wantWind: 100},
			{push: 60, read: 60, at: 20 * ms, srtt: 10 * ms, wantOK: true, wantLim: 220, wantWind: 100},
		}},
		{"no tuning with srtt 0", 100, 1000, []step{
			{push: 100, read: 60, at: 0, wantOK: true, wantLim: 160, wantWind: 100},
			{push: 60, read: 60, at: 0, wantOK: true, wantLim: 220, wantWind: 100},
		}},
		{"max window below window", 100, 10, []step{
			{push: 100, read: 60, at: 0, srtt: 10 * ms, wantOK: true, wantLim: 160, wantWind: 100},
			{push: 60, read: 60, at: ms, srtt: 10 * ms, wantOK: true, wantLim: 220, wantWind: 100},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecvStream(3, tt.window)
			r.SetMaxWindow(tt.maxWin)
			buf := make([]byte, 1000)
			for i, s := range tt.steps {
				if s.push > 0 {
					if _, err := r.Push(r.highest, patternBytes(r.highest, s.push), false); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
				if n, err := r.Read(buf[:s.read]); n != s.read || err != nil {
					t.Fatalf("step %d: Read = %d, %v", i, n, err)
				}
				lim, ok := r.WindowUpdate(t0.Add(s.at), s.srtt)
				if ok != s.wantOK || ok && lim != s.wantLim || r.Limit() != s.wantLim || r.w.window != s.wantWind {
					t.Fatalf("step %d: WindowUpdate = %d, %v; limit %d window %d; want %d, %v, window %d",
						i, lim, ok, r.Limit(), r.w.window, s.wantLim, s.wantOK, s.wantWind)
				}
			}
		})
	}
}

func TestRecvStreamNoUpdateAfterFin(t *testing.T) {
	r := NewRecvStream(0, 100)
	if _, err := r.Push(0, patternBytes(0, 80), true); err != nil {
		t.Fatal(err)
	}
	r.Read(make([]byte, 80))
	if _, ok := r.WindowUpdate(time.Now(), 0); ok {
		t.Fatal("window update after the final size is known")
	}
	r = NewRecvStream(0, 100)
	r.Push(0, patternBytes(0, 80), false)
	r.StopSending(0)
	if _, ok := r.WindowUpdate(time.Now(), 0); ok {
		t.Fatal("window update after StopSending")
	}
}

// TestRecvStreamLargeReassembly pushes a large window in reverse order and
// reads it back through a growing, wrapping buffer.
func TestRecvStreamLargeReassembly(t *testing.T) {
	const window = 1 << 20
	r := NewRecvStream(0, window)
	r.SetMaxWindow(4 * window)
	var total uint64
	var off uint64
	buf := make([]byte, 3000)
	now := time.Unix(0, 0)
	for round := range 8 {
		lim := r.Limit()
		const seg = 1000
		for end := lim; end > off; {
			o := off
			if end-off > seg {
				o = end - seg
			}
			n, err := r.Push(o, patternBytes(o, int(end-o)), false)
			if err != nil {
				t.Fatal(err)
			}
			total += n
			end = o
		}
		if total != lim {
			t.Fatalf("round %d: accounted %d, want %d", round, total, lim)
		}
		for off < lim {
			n, err := r.Read(buf)
			if err != nil || n == 0 {
				t.Fatalf("Read = %d, %v at %d", n, err, off)
			}
			if string(buf[:n]) != string(patternBytes(off, n)) {
				t.Fatalf("round %d: wrong bytes at %d", round, off)
			}
			off += uint64(n)
			now = now.Add(time.Millisecond)
			r.WindowUpdate(now, time.Second)
		}
		if len(r.buf.b) > int(2*r.w.window) {
			t.Fatalf("buffer of %d bytes for a window of %d", len(r.buf.b), r.w.window)
		}
	}
	if r.w.window != 4*window {
		t.Fatalf("window %d did not auto-tune to %d", r.w.window, 4*window)
	}
}

// TestRecvStreamAbandonedBytes checks the accessors a connection uses to
// return the credit of an abandoned stream: the bytes from ReadOffset to the
// final size will never be read.
func TestRecvStreamAbandonedBytes(t *testing.T) {
	r := NewRecvStream(0, 100)
	if _, ok := r.FinalSize(); ok {
		t.Fatal("final size known at start")
	}
	r.Push(0, patternBytes(0, 30), false)
	r.Read(make([]byte, 12))
	if _, err := r.OnReset(1, 60); err != nil {
		t.Fatal(err)
	}
	if fs, ok := r.FinalSize(); !ok || fs != 60 || r.ReadOffset() != 12 {
		t.Fatalf("FinalSize %d %v, ReadOffset %d", fs, ok, r.ReadOffset())
	}
}

// Discard is Read without the copy: two streams given the same data, one
// read and one discarded in the same steps, return the same counts and
// errors and stay in the same state (flow control included), and what
// follows a discard reads as it would after a read, across the ring's
// wrap.
func TestRecvDiscardIsRead(t *testing.T) {
	for _, repair := range []bool{false, true} {
		testRecvDiscardIsRead(t, repair)
	}
}

func testRecvDiscardIsRead(t *testing.T, repair bool) {
	const window = 4096
	a, b := NewRecvStream(0, window), NewRecvStream(0, window)
	if repair {
		// With repair the history of the bytes read is the same too.
		a.EnableRepair()
		b.EnableRepair()
	}
	now := time.Unix(0, 0)
	var off uint64
	for i, n := range []int{1000, 3000, 2500, 1, 4000, 700} {
		data := patternBytes(off, n)
		na, ea := a.Push(off, data, i == 5)
		nb, eb := b.Push(off, data, i == 5)
		if na != nb || (ea == nil) != (eb == nil) {
			t.Fatalf("step %d: Push %d %v vs %d %v", i, na, ea, nb, eb)
		}
		off += uint64(n)
		// Discard a part on b (read it on a), then read the rest on
		// both and compare the bytes.
		part := n / 3
		p := make([]byte, part)
		ra, rea := a.Read(p)
		rb, reb := b.Discard(part)
		if ra != rb || rea != reb {
			t.Fatalf("step %d: Read %d %v, Discard %d %v", i, ra, rea, rb, reb)
		}
		if snapshot(a) != snapshot(b) {
			t.Fatalf("step %d: %+v after Read, %+v after Discard", i, snapshot(a), snapshot(b))
		}
		if string(a.hist) != string(b.hist) || repair && i == 0 && len(b.hist) == 0 {
			t.Fatalf("step %d (repair %v): history of %d bytes after Read, %d after Discard", i, repair, len(a.hist), len(b.hist))
		}
		pa, pb := make([]byte, window), make([]byte, window)
		ra, rea = a.Read(pa)
		rb, reb = b.Read(pb)
		if ra != rb || rea != reb || string(pa[:ra]) != string(pb[:rb]) {
			t.Fatalf("step %d: reads differ after a discard: %d %v, %d %v", i, ra, rea, rb, reb)
		}
		la, oka := a.WindowUpdate(now, time.Millisecond)
		lb, okb := b.WindowUpdate(now, time.Millisecond)
		if la != lb || oka != okb {
			t.Fatalf("step %d: window update %d %v vs %d %v", i, la, oka, lb, okb)
		}
	}
	if n, err := b.Discard(10); n != 0 || err != io.EOF {
		t.Fatalf("Discard at the end = %d, %v; want 0, EOF", n, err)
	}
	if n, err := NewRecvStream(0, window).Discard(0); n != 0 || err != nil {
		t.Fatalf("Discard(0) = %d, %v", n, err)
	}
}
