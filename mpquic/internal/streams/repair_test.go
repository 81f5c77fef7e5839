package streams

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/mpq/mpq/mpquic/qerr"
)

// "ABCDEFG" in chunks of 3: "ABC", "DEF", "G\0\0". Column 0: A^D^G =
// 0x41^0x44^0x47 = 0x42; column 1: B^E = 0x42^0x45 = 0x07; column 2:
// C^F = 0x43^0x46 = 0x05.
var (
	repairData   = []byte("ABCDEFG")
	repairParity = []byte{0x42, 0x07, 0x05}
)

func TestSendStreamParity(t *testing.T) {
	s := NewSendStream(0, 1<<20, 1<<20)
	if _, err := s.Write(repairData); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 3)
	if !s.Parity(0, 7, dst, false) || !bytes.Equal(dst, repairParity) {
		t.Fatalf("Parity = %x, want %x", dst, repairParity)
	}
	// [1, 7) in chunks of 4: "BCDE", "FG\0\0": B^F = 0x04, C^G = 0x04,
	// D = 0x44, E = 0x45.
	dst = make([]byte, 4)
	if !s.Parity(1, 7, dst, false) || !bytes.Equal(dst, []byte{0x04, 0x04, 0x44, 0x45}) {
		t.Fatalf("Parity(1, 7) = %x", dst)
	}
	if s.Parity(0, 8, dst, false) || s.Parity(3, 3, dst, false) || s.Parity(0, 7, nil, false) {
		t.Fatal("parity of bytes not written, an empty range or no chunk")
	}
	// Acknowledged bytes leave the buffer: no parity over them.
	s.NextChunk(100, 1<<20)
	s.OnAcked(0, 3, false)
	if s.Parity(0, 7, make([]byte, 3), false) {
		t.Fatal("parity over released bytes")
	}
}

// recvWith pushes the listed ranges of repairData (fin on the one ending at
// 7) into a fresh stream with repair enabled.
func recvWith(t *testing.T, ranges ...[2]uint64) *RecvStream {
	t.Helper()
	r := NewRecvStream(0, 1<<20)
	r.EnableRepair()
	for _, g := range ranges {
		if _, err := r.Push(g[0], repairData[g[0]:g[1]], g[1] == 7); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func readAll(r *RecvStream) ([]byte, error) {
	var out []byte
	buf := make([]byte, 16)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if n == 0 || err != nil {
			return out, err
		}
	}
}

func TestRecvStreamRepair(t *testing.T) {
	cases := []struct {
		name     string
		got      [][2]uint64 // ranges received before the parity
		column   uint64
		parity   []byte
		fin      bool
		newBytes uint64
		want     []byte // read afterwards
		eof      bool
		// rebuilt bytes and parity ranges used (CountRebuilds)
		rebuilt, ranges uint64
	}{
		{"chunk DEF lost", [][2]uint64{{0, 3}, {6, 7}}, 0, repairParity, true, 0, repairData, true, 3, 1},
		{"CDE lost across chunks", [][2]uint64{{0, 2}, {5, 7}}, 0, repairParity, true, 0, repairData, true, 3, 1},
		// [1, 5) lost: columns 1, 2, 0, 1: B and E share column 1 and
		// stay missing; C and D come back.
		{"BCDE lost: two in a column", [][2]uint64{{0, 1}, {5, 7}}, 0, repairParity, true, 0, []byte("A"), false, 2, 1},
		// G and the FIN lost: the parity's FIN gives the final size.
		{"last byte and FIN lost", [][2]uint64{{0, 6}}, 0, repairParity, true, 1, repairData, true, 1, 1},
		// Only columns 0 and 1 of the parity: D and E come back, F not.
		{"fragment", [][2]uint64{{0, 3}, {6, 7}}, 0, repairParity[:2], true, 0, []byte("ABCDE"), false, 2, 1},
		{"fragment column 2", [][2]uint64{{0, 5}, {6, 7}}, 2, repairParity[2:], true, 0, repairData, true, 1, 1},
		{"nothing missing", [][2]uint64{{0, 7}}, 0, repairParity, true, 0, repairData, true, 0, 0},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			r := recvWith(t, tt.got...)
			var counts RebuildCounts
			r.CountRebuilds(&counts)
			n, err := r.AddRepair(0, 7, 3, tt.fin, false, tt.column, tt.parity)
			if err != nil || n != tt.newBytes {
				t.Fatalf("AddRepair = %d, %v; want %d", n, err, tt.newBytes)
			}
			if counts != (RebuildCounts{Bytes: tt.rebuilt, Ranges: tt.ranges}) {
				t.Fatalf("counts %+v, want %d bytes rebuilt from %d ranges", counts, tt.rebuilt, tt.ranges)
			}
			out, err := readAll(r)
			if !bytes.Equal(out, tt.want) || (err == io.EOF) != tt.eof {
				t.Fatalf("read %q, %v; want %q (EOF %v)", out, err, tt.want, tt.eof)
			}
		})
	}
}

func TestRecvStreamRepairPartialThenMore(t *testing.T) {
	r := recvWith(t, [2]uint64{0, 1}, [2]uint64{5, 7})
	var counts RebuildCounts
	r.CountRebuilds(&counts)
	if _, err := r.AddRepair(0, 7, 3, true, false, 0, repairParity); err != nil {
		t.Fatal(err)
	}
	if r.RepairPending() != 1 {
		t.Fatalf("%d parities held, want 1 (B and E missing)", r.RepairPending())
	}
	if counts != (RebuildCounts{Bytes: 2, Ranges: 1}) {
		t.Fatalf("counts %+v, want C and D from one range", counts)
	}
	// E arrives: B is alone in column 1 now and comes back.
	if _, err := r.Push(4, repairData[4:5], false); err != nil {
		t.Fatal(err)
	}
	if counts != (RebuildCounts{Bytes: 3, Ranges: 1}) {
		t.Fatalf("counts %+v, want B, C and D from one range (counted once)", counts)
	}
	if out, err := readAll(r); !bytes.Equal(out, repairData) || err != io.EOF {
		t.Fatalf("read %q, %v", out, err)
	}
	if r.RepairPending() != 0 {
		t.Fatal("parity held after the end")
	}
}

func TestRecvStreamRepairBeforeData(t *testing.T) {
	r := recvWith(t)
	if n, err := r.AddRepair(0, 7, 3, true, false, 0, repairParity); err != nil || n != 0 {
		t.Fatalf("AddRepair = %d, %v", n, err)
	}
	for _, g := range [][2]uint64{{0, 3}, {6, 7}} {
		if _, err := r.Push(g[0], repairData[g[0]:g[1]], g[1] == 7); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := readAll(r); !bytes.Equal(out, repairData) || err != io.EOF {
		t.Fatalf("read %q, %v", out, err)
	}
}

func TestRecvStreamRepairFromHistory(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		r := NewRecvStream(0, 1<<20)
		if enabled {
			r.EnableRepair()
		}
		r.Push(0, repairData[:3], false)
		if out, _ := readAll(r); string(out) != "ABC" {
			t.Fatalf("read %q", out)
		}
		r.Push(6, repairData[6:], true)
		r.AddRepair(0, 7, 3, true, false, 0, repairParity)
		out, err := readAll(r)
		if enabled && (string(out) != "DEFG" || err != io.EOF) || !enabled && len(out) != 0 {
			t.Fatalf("enabled %v: read %q, %v", enabled, out, err)
		}
	}
}

func TestRecvStreamRepairErrors(t *testing.T) {
	code := func(err error) qerr.TransportErrorCode {
		var te *qerr.TransportError
		if errors.As(err, &te) {
			return te.Code
		}
		return 0
	}
	r := NewRecvStream(0, 100)
	r.EnableRepair()
	if _, err := r.AddRepair(0, 101, 3, false, false, 0, repairParity); code(err) != qerr.FlowControlError {
		t.Fatalf("beyond the limit: %v", err)
	}
	r.Push(0, repairData[:5], true) // final size 5
	if _, err := r.AddRepair(0, 7, 3, true, false, 0, repairParity); code(err) != qerr.FinalSizeError {
		t.Fatalf("another final size: %v", err)
	}
	if _, err := r.AddRepair(0, 7, 3, false, false, 0, repairParity); code(err) != qerr.FinalSizeError {
		t.Fatalf("beyond the final size: %v", err)
	}
	if _, err := r.AddRepair(0, 5, 3, false, false, 2, repairParity); code(err) != qerr.FrameEncodingError {
		t.Fatalf("parity beyond the chunk: %v", err)
	}
}

// FuzzRecvStreamRepair delivers pieces of a 3,000-byte stream in the
// order the input says, and parities of its ranges (REPAIR or REPAIR_Q;
// honest, computed with
// SendStream.Parity, possibly in fragments) in between; the application
// reads at times. Whatever the order, nothing panics and every byte read
// is the stream's; a parity never makes the stream fail.
//
//	go test ./mpquic/internal/streams -run '^$' -fuzz '^FuzzRecvStreamRepair$' -fuzztime 60s -fuzzminimizetime 10s
//
// (-fuzzminimizetime bounds the minimisation of each new interesting
// input; without it the runs stalled there.)
func FuzzRecvStreamRepair(f *testing.F) {
	f.Add([]byte{0, 0, 100, 1, 0, 0, 200, 2, 0, 0, 1, 0, 3, 10})
	f.Add([]byte{2, 0, 0, 11, 184, 0, 200, 0, 0, 0, 0, 50, 1, 3, 0})
	f.Add([]byte{0, 0, 0, 0, 100, 0, 0, 1, 44, 0, 100, 1, 0, 0, 0, 11, 184, 0, 100, 1, 0, 0, 0, 0, 0, 0, 11, 184, 0, 100, 0, 0, 0, 0, 0, 100})
	f.Fuzz(func(t *testing.T, in []byte) {
		const size = 3000
		s, content := closedStream(size, func(i int) byte { return byte(i*7 + i>>8) })
		r := NewRecvStream(0, 1<<20)
		r.EnableRepair()
		fr := &fuzzReader{b: in}
		var got []byte
		buf := make([]byte, 700)
		for len(fr.b) > 0 {
			switch fr.u8() % 3 {
			case 0: // data [off, off+n)
				off, n := fr.u16()%size, fr.u16()%700
				end := min(off+n, size)
				if _, err := r.Push(off, content[off:end], end == size); err != nil {
					t.Fatalf("Push(%d, %d): %v", off, end-off, err)
				}
			case 1: // parity of [off, end) in chunks of chunk, columns [col, col+m)
				off, n, chunk := fr.u16()%size, fr.u16()%2000+1, fr.u16()%1400+1
				end := min(off+n, size)
				if off >= end {
					continue
				}
				q := fr.u8()%2 == 1 && (end-off+chunk-1)/chunk <= 255 // a REPAIR_Q parity
				p := make([]byte, chunk)
				if !s.Parity(off, end, p, q) {
					t.Fatalf("Parity(%d, %d)", off, end)
				}
				col := fr.u16() % chunk
				m := fr.u16()%(chunk-col) + 1
				if _, err := r.AddRepair(off, end, chunk, end == size, q, col, p[col:col+m]); err != nil {
					t.Fatalf("AddRepair: %v", err)
				}
			case 2: // read
				n, err := r.Read(buf[:fr.u16()%700])
				got = append(got, buf[:n]...)
				if err != nil && err != io.EOF {
					t.Fatal(err)
				}
			}
		}
		if !bytes.Equal(got, content[:len(got)]) {
			t.Fatalf("read bytes that are not the stream's")
		}
	})
}

// closedStream is a send stream holding size bytes, byte i pattern(i),
// closed after them; it returns the bytes too.
func closedStream(size int, pattern func(int) byte) (*SendStream, []byte) {
	content := make([]byte, size)
	for i := range content {
		content[i] = pattern(i)
	}
	s := NewSendStream(0, 1<<20, 1<<20)
	s.Write(content)
	s.Close()
	return s, content
}
