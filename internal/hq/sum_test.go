package hq

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// memStream is a Stream over a request and a buffer for the response.
type memStream struct {
	req      io.Reader
	resp     bytes.Buffer
	closed   bool
	canceled uint64
}

func (m *memStream) Read(b []byte) (int, error)  { return m.req.Read(b) }
func (m *memStream) Write(b []byte) (int, error) { return m.resp.Write(b) }
func (m *memStream) Close() error                { m.closed = true; return nil }
func (m *memStream) CancelWrite(code uint64)     { m.canceled = code }

func request(t *testing.T, f *Files, p string) *memStream {
	t.Helper()
	s := &memStream{req: strings.NewReader("GET " + p + "\r\n")}
	f.Serve(s)
	return s
}

func TestParseSum(t *testing.T) {
	h := sha256.Sum256([]byte("x"))
	hx := hex.EncodeToString(h[:])
	tests := []struct {
		name, in string
		want     Sum
		err      string
	}{
		{"ours", "sha256 " + hx + "\nsize 12\n", Sum{SHA256: h, Size: 12}, ""},
		{"sha256sum's format", hx + "  file\n", Sum{SHA256: h, Size: -1}, ""},
		{"no hash", "size 12\n", Sum{}, "no SHA-256"},
		{"short hash", "sha256 abcd\n", Sum{}, "bad SHA-256"},
		{"bad size", "sha256 " + hx + "\nsize -1\n", Sum{}, "bad size"},
		{"other line", "sha256 " + hx + "\nname x\n", Sum{}, "unexpected line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSum([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseSum = %+v, %v; want %+v", got, err, tt.want)
			}
			if again, err := ParseSum([]byte(got.String())); err != nil || again != got {
				t.Fatalf("round trip of %q: %+v, %v", got.String(), again, err)
			}
		})
	}
}

// TestFilesSum: GET /x.sha256 answers x's checksum, follows changes of x,
// gives way to a real x.sha256 file, and is not found for a missing x, a
// directory, or with Serve (no checksums).
func TestFilesSum(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mtime time.Time) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write("a", "hello", t0)
	write("b.sha256", "published by hand\n", t0)
	write("b", "b", t0)
	f := &Files{Root: dir}
	sumOf := func(s string) string { return Sum{SHA256: sha256.Sum256([]byte(s)), Size: int64(len(s))}.String() }
	tests := []struct {
		name, path, want string
		before           func()
	}{
		{"published", "/a.sha256", sumOf("hello"), nil},
		{"the file itself", "/a", "hello", nil},
		{"after a change", "/a.sha256", sumOf("hello, world"), func() { write("a", "hello, world", t0.Add(time.Second)) }},
		{"a real .sha256 file wins", "/b.sha256", "published by hand\n", nil},
		{"missing file", "/none.sha256", "", nil},
		{"directory", "/sub.sha256", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before()
			}
			s := request(t, f, tt.path)
			if tt.want == "" {
				if s.canceled != ErrorNotFound {
					t.Fatalf("GET %s: %q, want the stream reset with ErrorNotFound", tt.path, s.resp.String())
				}
				return
			}
			if got := s.resp.String(); got != tt.want || !s.closed {
				t.Fatalf("GET %s: %q (closed %v), want %q", tt.path, got, s.closed, tt.want)
			}
		})
	}
	s := &memStream{req: strings.NewReader("GET /a.sha256\r\n")}
	if err := Serve(s, dir); err == nil || s.canceled != ErrorNotFound {
		t.Fatalf("Serve publishes checksums: %q, %v", s.resp.String(), err)
	}
}

// discardStream is a Stream over a request that discards the response,
// counting its bytes.
type discardStream struct {
	req io.Reader
	n   int64
}

func (d *discardStream) Read(b []byte) (int, error)  { return d.req.Read(b) }
func (d *discardStream) Write(b []byte) (int, error) { d.n += int64(len(b)); return len(b), nil }
func (d *discardStream) Close() error                { return nil }
func (d *discardStream) CancelWrite(uint64)          {}

// readerFromStream is a discardStream that reads what it sends itself,
// through a buffer of its own.
type readerFromStream struct {
	discardStream
	buf []byte
}

func (d *readerFromStream) ReadFrom(r io.Reader) (int64, error) {
	return io.CopyBuffer(&d.discardStream, struct{ io.Reader }{r}, d.buf)
}

// serveAllocs serves a 1 MiB file on s, whose discardStream is d, and
// returns the bytes allocated meanwhile.
func serveAllocs(t *testing.T, s Stream, d *discardStream) uint64 {
	t.Helper()
	dir := t.TempDir()
	const size = 1 << 20
	if err := os.WriteFile(filepath.Join(dir, "f"), bytes.Repeat([]byte{7}, size), 0o644); err != nil {
		t.Fatal(err)
	}
	d.req = strings.NewReader("GET /f\r\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := Serve(s, dir); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if d.n != size {
		t.Fatalf("sent %d bytes, want %d", d.n, size)
	}
	return after.TotalAlloc - before.TotalAlloc
}

// TestServeReaderFrom: to a stream that reads from a Reader itself
// (mpquic's, which holds no buffer while its send buffer is full), a
// file is sent without a buffer of Serve's.
func TestServeReaderFrom(t *testing.T) {
	s := &readerFromStream{buf: make([]byte, 4<<10)}
	if got := serveAllocs(t, s, &s.discardStream); got >= sendChunk {
		t.Errorf("serving allocated %d bytes, want less than sendChunk %d", got, sendChunk)
	}
}

// TestServeMemory: sending a file allocates a buffer of sendChunk, not
// a 64 KiB bufio.Reader and os.File's 32 KiB copy buffer besides: a
// server holds it for every connection whose peer does not read.
func TestServeMemory(t *testing.T) {
	s := &discardStream{}
	if got := serveAllocs(t, s, s); got > sendChunk+8<<10 {
		t.Errorf("serving allocated %d bytes, want at most %d", got, sendChunk+8<<10)
	}
}
