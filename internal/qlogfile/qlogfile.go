// Package qlogfile writes the qlog traces of mpquic connections into a
// directory, one file per connection end, the same way for every command
// (mpq serve, mpq get, mpq run): the file is ODCID_VANTAGE.sqlog, the
// client's original destination connection ID in hex and "client" or
// "server" (the names quic-go's QLOGDIR traces have), so that both ends of
// a connection sort next to each other.
//
// A trace is written as it happens: events are buffered and written to the
// file at least every FlushInterval and when the trace closes, always
// whole records, so that a long run shows its trace while it runs and a
// crash loses at most the last interval. The flush timer is this
// package's: the sans-IO core that produces the events never reads the
// clock.
package qlogfile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// FlushInterval bounds how long an event stays in a trace's buffer.
const FlushInterval = time.Second

// bufferSize is the buffer of one trace.
const bufferSize = 64 << 10

// Name is the file name of the trace of one connection end.
func Name(vantage string, odcid []byte) string {
	return fmt.Sprintf("%x_%s.sqlog", odcid, vantage)
}

// Dir writes traces into a directory.
type Dir struct {
	path  string
	onErr func(error)
	// afterFunc starts the flush timer (time.AfterFunc; tests replace it).
	afterFunc func(time.Duration, func()) stopper
	open      sync.WaitGroup
	// writers are the traces not closed yet.
	mu      sync.Mutex
	writers map[*Writer]bool
}

// stopper is a started timer.
type stopper interface{ Stop() bool }

// NewDir writes traces into the directory path, which is created when the
// first trace opens. onErr, if not nil, receives the errors of creating
// and writing the files; a trace that cannot be created is not written.
func NewDir(path string, onErr func(error)) *Dir {
	return &Dir{path: path, onErr: onErr,
		afterFunc: func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }}
}

// Create opens the trace of a connection end; it has the signature of
// mpquic.Config.Qlog and returns nil when the file cannot be created.
func (d *Dir) Create(vantage string, odcid []byte) io.WriteCloser {
	if err := os.MkdirAll(d.path, 0o755); err != nil {
		d.fail(fmt.Errorf("qlog: %w", err))
		return nil
	}
	f, err := os.Create(filepath.Join(d.path, Name(vantage, odcid)))
	if err != nil {
		d.fail(fmt.Errorf("qlog: %w", err))
		return nil
	}
	d.open.Add(1)
	w := &Writer{f: f, bw: bufio.NewWriterSize(f, bufferSize), after: d.afterFunc, onErr: d.fail}
	d.mu.Lock()
	if d.writers == nil {
		d.writers = map[*Writer]bool{}
	}
	d.writers[w] = true
	d.mu.Unlock()
	w.done = func() {
		d.mu.Lock()
		delete(d.writers, w)
		d.mu.Unlock()
		d.open.Done()
	}
	return w
}

// Close closes every trace still open, writing out what it holds: the
// traces of connections that never closed (a run that failed, or was
// interrupted, or whose connections outlived it) end whole instead of
// leaving their files open with a flush timer running. Events given to
// a trace later are dropped. It returns the first error of closing.
func (d *Dir) Close() error {
	d.mu.Lock()
	ws := make([]*Writer, 0, len(d.writers))
	for w := range d.writers {
		ws = append(ws, w)
	}
	d.mu.Unlock()
	var first error
	for _, w := range ws {
		if err := w.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (d *Dir) fail(err error) {
	if d.onErr != nil {
		d.onErr(err)
	}
}

// Wait waits until every trace created so far is closed, until ctx ends
// or until timeout passed; it reports whether all were closed. A
// connection closes its trace at the end of its closing period (three
// PTOs), after the application is otherwise done with it.
func (d *Dir) Wait(ctx context.Context, timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		d.open.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// Writer is one trace file: it buffers what it is given and writes it to
// the file at most FlushInterval after it was given, and when closed. It is
// safe for concurrent use (the flush runs on a timer).
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	bw     *bufio.Writer
	after  func(time.Duration, func()) stopper
	timer  stopper
	closed bool
	err    error
	done   func()
	onErr  func(error)
}

var errClosed = errors.New("qlog: trace closed")

// Write buffers p, which should be whole records: a record that does not
// fit into what is left of the buffer first flushes the buffer, so that
// the file ends with a whole record whenever it was written to.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	if len(p) > w.bw.Available() && w.bw.Buffered() > 0 {
		if err := w.flushLocked(); err != nil {
			return 0, err
		}
	}
	n, err := w.bw.Write(p)
	if err != nil {
		w.setErr(err)
		return n, err
	}
	if w.timer == nil && w.bw.Buffered() > 0 {
		w.timer = w.after(FlushInterval, w.tick)
	}
	return n, nil
}

// tick is the flush timer.
func (w *Writer) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = nil
	if !w.closed && w.err == nil {
		w.flushLocked()
	}
}

func (w *Writer) flushLocked() error {
	if err := w.bw.Flush(); err != nil {
		w.setErr(err)
		return err
	}
	return nil
}

func (w *Writer) setErr(err error) {
	if w.err == nil {
		w.err = fmt.Errorf("qlog: %s: %w", w.f.Name(), err)
		if w.onErr != nil {
			w.onErr(w.err)
		}
	}
}

// Close writes what is buffered and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.err == nil {
		w.flushLocked()
	}
	if err := w.f.Close(); err != nil {
		w.setErr(err)
	}
	w.done()
	return w.err
}
