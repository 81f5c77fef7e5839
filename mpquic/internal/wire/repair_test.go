package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/mpq/mpq/mpquic/qerr"
)

func TestRepairFrameEncoding(t *testing.T) {
	f := &RepairFrame{StreamID: 4, Offset: 0, ChunkLen: 3, End: 7, Fin: true, Column: 1, Parity: []byte{0xaa, 0xbb}}
	// 0x3fec5 is a 4-byte varint: 0x80 0x03 0xfe 0xc5.
	want := []byte{0x80, 0x03, 0xfe, 0xc5, 4, 0, 3, 7, 1, 2, 0xaa, 0xbb}
	if got := f.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("Append = %x, want %x", got, want)
	}
	if f.Len() != len(want) || f.Chunks() != 3 {
		t.Fatalf("Len %d Chunks %d, want %d and 3", f.Len(), f.Chunks(), len(want))
	}
	g, n, err := ParseFrame(want)
	if err != nil || n != len(want) || !framesEqual(f, g) {
		t.Fatalf("ParseFrame = %#v, %d, %v", g, n, err)
	}
}

// TestRepairQFrame round-trips a REPAIR_Q frame (type 0x3fec7 with FIN, a
// 4-byte varint 0x80 0x03 0xfe 0xc7) and refuses one of 256 chunks.
func TestRepairQFrame(t *testing.T) {
	f := &RepairFrame{StreamID: 4, Offset: 0, ChunkLen: 3, End: 7, Fin: true, Q: true, Column: 1, Parity: []byte{0xaa, 0xbb}}
	want := []byte{0x80, 0x03, 0xfe, 0xc7, 4, 0, 3, 7, 1, 2, 0xaa, 0xbb}
	if got := f.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("Append = %x, want %x", got, want)
	}
	g, n, err := ParseFrame(want)
	if err != nil || n != len(want) || !framesEqual(f, g) {
		t.Fatalf("ParseFrame = %#v, %d, %v", g, n, err)
	}
	// [0, 256) in chunks of 1: 256 chunks, one too many.
	long := []byte{0x80, 0x03, 0xfe, 0xc6, 4, 0, 1, 0x41, 0x00, 0, 1, 9}
	var te *qerr.TransportError
	if _, _, err := ParseFrame(long); !errors.As(err, &te) || te.Code != qerr.FrameEncodingError || te.FrameType != FrameTypeRepairQ {
		t.Fatalf("ParseFrame(256 chunks) = %v, want FRAME_ENCODING_ERROR", err)
	}
	// 255 chunks pass.
	if _, _, err := ParseFrame([]byte{0x80, 0x03, 0xfe, 0xc6, 4, 0, 1, 0x40, 0xff, 0, 1, 9}); err != nil {
		t.Fatalf("ParseFrame(255 chunks): %v", err)
	}
}

func TestRepairFrameErrors(t *testing.T) {
	typ := []byte{0x80, 0x03, 0xfe, 0xc4}
	cases := []struct {
		name string
		body []byte
	}{
		{"truncated", []byte{4, 0, 3}},
		{"parity truncated", []byte{4, 0, 3, 7, 0, 3, 1, 2}},
		{"empty range", []byte{4, 5, 3, 5, 0, 1, 9}},
		{"end below offset", []byte{4, 5, 3, 4, 0, 1, 9}},
		{"span too long", []byte{4, 0, 3, 0x80, 0x01, 0x00, 0x01, 0, 1, 9}},
		{"zero chunk length", []byte{4, 0, 0, 7, 0, 1, 9}},
		{"no parity", []byte{4, 0, 3, 7, 0, 0}},
		{"column beyond chunk", []byte{4, 0, 3, 7, 3, 1, 9}},
		{"parity beyond chunk", []byte{4, 0, 3, 7, 2, 2, 9, 9}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			f, n, err := ParseFrame(append(append([]byte(nil), typ...), tt.body...))
			var te *qerr.TransportError
			if !errors.As(err, &te) || te.Code != qerr.FrameEncodingError || te.FrameType != FrameTypeRepair || f != nil || n != 0 {
				t.Fatalf("ParseFrame = %v, %d, %v; want FRAME_ENCODING_ERROR", f, n, err)
			}
		})
	}
}

func TestTransportParameterRepair(t *testing.T) {
	p := DefaultTransportParameters()
	p.Repair, p.RepairQ = true, true
	b := p.Append(nil)
	q, err := ParseTransportParameters(b, false)
	if err != nil || !q.Repair || !q.RepairQ {
		t.Fatalf("round trip: %v, Repair %v RepairQ %v", err, q.Repair, q.RepairQ)
	}
	d := DefaultTransportParameters()
	if q, err := ParseTransportParameters(d.Append(nil), false); err != nil || q.Repair || q.RepairQ {
		t.Fatalf("absent: %v, Repair %v RepairQ %v", err, q.Repair, q.RepairQ)
	}
	for name, bad := range map[string][]byte{
		"value":      {0x80, 0x03, 0xfe, 0xc4, 1, 0},
		"repeated":   {0x80, 0x03, 0xfe, 0xc4, 0, 0x80, 0x03, 0xfe, 0xc4, 0},
		"q value":    {0x80, 0x03, 0xfe, 0xc6, 1, 0},
		"q repeated": {0x80, 0x03, 0xfe, 0xc6, 0, 0x80, 0x03, 0xfe, 0xc6, 0},
	} {
		if _, err := ParseTransportParameters(bad, false); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if TPRepair%31 == 27 || TPRepairQ%31 == 27 {
		t.Fatal("TPRepair or TPRepairQ is a greasing ID (RFC 9000 Section 18.1)")
	}
}

func FuzzParseRepairFrame(f *testing.F) {
	f.Add(uint64(4), uint64(0), uint64(3), uint64(7), uint64(1), []byte{1, 2}, true)
	f.Add(uint64(0), uint64(1<<62-2), uint64(1), uint64(1<<62-1), uint64(0), []byte{9}, false)
	f.Fuzz(func(t *testing.T, sid, off, chunk, end, col uint64, parity []byte, fin bool) {
		sid, off, chunk, end, col = sid&(1<<62-1), off&(1<<62-1), chunk&(1<<62-1), end&(1<<62-1), col&(1<<62-1)
		enc := (&RepairFrame{StreamID: sid, Offset: off, ChunkLen: chunk, End: end, Fin: fin, Column: col, Parity: parity}).Append(nil)
		g, n, err := ParseFrame(enc)
		if err != nil {
			if g != nil || n != 0 {
				t.Fatalf("frame %#v with error %v", g, err)
			}
			return
		}
		r := g.(*RepairFrame)
		if n != len(enc) || r.End <= r.Offset || r.End-r.Offset > MaxRepairSpan || r.ChunkLen == 0 ||
			len(r.Parity) == 0 || r.Column+uint64(len(r.Parity)) > r.ChunkLen || r.Chunks() == 0 {
			t.Fatalf("accepted %#v from %x", r, enc)
		}
		for cut := 0; cut < len(enc); cut++ {
			if _, _, err := ParseFrame(enc[:cut]); err == nil {
				t.Fatalf("truncation to %d of %x parsed", cut, enc)
			}
		}
	})
}
