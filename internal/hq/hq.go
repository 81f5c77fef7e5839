// Package hq speaks hq-interop, the HTTP/0.9-style protocol of the QUIC
// interop runner: the client opens a bidirectional stream, sends
// "GET /path\r\n" and a FIN; the server answers with the file's bytes and a
// FIN. The functions work over any transport through small interfaces so
// that mpquic and quic-go share them in tests.
package hq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// openFile opens a regular file; a directory is fs.ErrNotExist.
func openFile(name string) (*os.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || st.IsDir() {
		f.Close()
		if err == nil {
			err = fs.ErrNotExist
		}
		return nil, err
	}
	return f, nil
}

// ALPN is the application protocol of hq-interop.
const ALPN = "hq-interop"

// ErrorNotFound is the application error code a server resets the stream
// with when the requested file does not exist.
const ErrorNotFound = 0x10

// maxRequest bounds the request line.
const maxRequest = 8 << 10

// Stream is what hq needs of a bidirectional QUIC stream.
type Stream interface {
	io.Reader
	io.Writer
	io.Closer // ends the sending direction
	CancelWrite(code uint64)
}

// ReadRequest reads "GET /path\r\n" up to the client's FIN and returns the
// cleaned path.
func ReadRequest(s io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(s, maxRequest+1))
	if err != nil {
		return "", fmt.Errorf("hq: read request: %w", err)
	}
	if len(b) > maxRequest {
		return "", errors.New("hq: request too long")
	}
	line := strings.TrimRight(string(b), "\r\n")
	p, ok := strings.CutPrefix(line, "GET ")
	if !ok || !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\r\n\x00") {
		return "", fmt.Errorf("hq: malformed request %q", line)
	}
	return path.Clean(p), nil
}

// Serve answers one request on s from the files under root. A missing file
// resets the stream with ErrorNotFound. It publishes no checksums (see
// Files).
func Serve(s Stream, root string) error {
	return serve(s, root, nil)
}

// sendChunk is the size of the buffer a file is copied through to a
// stream that is no io.ReaderFrom. A connection whose peer does not read
// holds it as long as its send buffer is full, so it is small: the
// stream's send buffer batches.
const sendChunk = 16 << 10

func serve(s Stream, root string, sums *Files) error {
	p, err := ReadRequest(s)
	if err != nil {
		s.CancelWrite(ErrorNotFound)
		return err
	}
	name := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(p, "/")))
	f, err := openFile(name)
	if err != nil && sums != nil && errors.Is(err, fs.ErrNotExist) && strings.HasSuffix(p, SumSuffix) {
		// GET /x.sha256 without such a file: the checksum of /x.
		var sum Sum
		if sum, err = sums.sum(strings.TrimSuffix(name, SumSuffix)); err == nil {
			if _, err := io.WriteString(s, sum.String()); err != nil {
				return fmt.Errorf("hq: send %s: %w", p, err)
			}
			return s.Close()
		}
	}
	if err != nil {
		s.CancelWrite(ErrorNotFound)
		return fmt.Errorf("hq: %s: %w", p, err)
	}
	defer f.Close()
	// Only the Reader of f: os.File's WriterTo would copy through a
	// buffer of its own choosing. A stream that reads from a Reader
	// itself (mpquic's, which holds a buffer only while it has room)
	// needs none of ours.
	var src io.Reader = struct{ io.Reader }{f}
	if rf, ok := s.(io.ReaderFrom); ok {
		_, err = rf.ReadFrom(src)
	} else {
		_, err = io.CopyBuffer(s, src, make([]byte, sendChunk))
	}
	if err != nil {
		return fmt.Errorf("hq: send %s: %w", p, err)
	}
	return s.Close()
}

// Get sends a request for path on s and copies the response to w.
func Get(ctx context.Context, s Stream, p string, w io.Writer) (int64, error) {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "GET %s\r\n", p)
	if _, err := s.Write(req.Bytes()); err != nil {
		return 0, fmt.Errorf("hq: send request: %w", err)
	}
	if err := s.Close(); err != nil {
		return 0, fmt.Errorf("hq: send request: %w", err)
	}
	n, err := io.Copy(w, s)
	if err != nil {
		return n, fmt.Errorf("hq: receive %s: %w", p, err)
	}
	return n, ctx.Err()
}
