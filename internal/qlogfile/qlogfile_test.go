package qlogfile

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTimers replaces the flush timer: fire runs the pending timers.
type fakeTimers struct {
	mu      sync.Mutex
	pending []*fakeTimer
	delays  []time.Duration
}

type fakeTimer struct {
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { t.stopped = true; return true }

func (ft *fakeTimers) after(d time.Duration, f func()) stopper {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{f: f}
	ft.pending = append(ft.pending, t)
	ft.delays = append(ft.delays, d)
	return t
}

func (ft *fakeTimers) fire() int {
	ft.mu.Lock()
	p := ft.pending
	ft.pending = nil
	ft.mu.Unlock()
	n := 0
	for _, t := range p {
		if !t.stopped {
			t.f()
			n++
		}
	}
	return n
}

func newTestDir(t *testing.T) (*Dir, *fakeTimers, *[]error) {
	ft := &fakeTimers{}
	var errs []error
	d := NewDir(filepath.Join(t.TempDir(), "qlog"), func(err error) { errs = append(errs, err) })
	d.afterFunc = ft.after
	return d, ft, &errs
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFlushedEverySecondAndOnClose: what a trace is given reaches the file
// when the flush timer (FlushInterval) fires and when the trace closes,
// not only at the end.
func TestFlushedEverySecondAndOnClose(t *testing.T) {
	d, ft, errs := newTestDir(t)
	w := d.Create("server", []byte{0xab, 0x01})
	if w == nil {
		t.Fatalf("Create failed: %v", *errs)
	}
	path := filepath.Join(d.path, "ab01_server.sqlog")
	w.Write([]byte("\x1e{\"a\":1}\n"))
	w.Write([]byte("\x1e{\"b\":2}\n"))
	if got := read(t, path); got != "" {
		t.Fatalf("written before the flush: %q", got)
	}
	if len(ft.delays) != 1 || ft.delays[0] != time.Second {
		t.Fatalf("flush timers %v, want one of 1s", ft.delays)
	}
	if n := ft.fire(); n != 1 {
		t.Fatalf("%d timers fired", n)
	}
	if got := read(t, path); got != "\x1e{\"a\":1}\n\x1e{\"b\":2}\n" {
		t.Fatalf("after the flush: %q", got)
	}
	// Nothing new: no timer. A new record starts one.
	if len(ft.pending) != 0 {
		t.Fatal("timer armed without data")
	}
	w.Write([]byte("\x1e{\"c\":3}\n"))
	if len(ft.pending) != 1 {
		t.Fatal("no timer for new data")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); !strings.HasSuffix(got, "\x1e{\"c\":3}\n") {
		t.Fatalf("after Close: %q", got)
	}
	if ft.fire() != 0 {
		t.Fatal("the timer of a closed trace fired")
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write after Close succeeded")
	}
	if !d.Wait(context.Background(), time.Second) {
		t.Fatal("Wait: trace not counted as closed")
	}
}

// TestWholeRecordsOnDisk: a record that does not fit into the buffer's
// free space flushes the buffer first, so the file never ends inside a
// record.
func TestWholeRecordsOnDisk(t *testing.T) {
	d, _, _ := newTestDir(t)
	w := d.Create("client", []byte{1})
	path := filepath.Join(d.path, "01_client.sqlog")
	rec := append(append([]byte{0x1e}, bytes.Repeat([]byte("x"), 1000)...), '\n')
	total := 0
	for total+len(rec) <= bufferSize {
		w.Write(rec)
		total += len(rec)
	}
	if got := read(t, path); got != "" {
		t.Fatalf("%d bytes on disk before the buffer filled", len(got))
	}
	w.Write(rec) // does not fit: the buffered records go out whole
	got := read(t, path)
	if len(got) != total || !strings.HasSuffix(got, "x\n") {
		t.Fatalf("%d bytes on disk, want the %d of the whole records before", len(got), total)
	}
	w.Close()
}

func TestCreateFailure(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	var errs []error
	d := NewDir(filepath.Join(blocker, "qlog"), func(err error) { errs = append(errs, err) })
	if w := d.Create("client", []byte{1}); w != nil {
		t.Fatal("Create in a file succeeded")
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "not a directory") {
		t.Fatalf("errors %v", errs)
	}
	if !d.Wait(context.Background(), time.Second) {
		t.Fatal("Wait blocks without traces")
	}
}

func TestWaitTimesOut(t *testing.T) {
	d, _, _ := newTestDir(t)
	w := d.Create("client", []byte{2})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d.Wait(ctx, time.Hour) {
		t.Fatal("Wait reported an open trace as closed")
	}
	w.Close()
}

func TestName(t *testing.T) {
	if got := Name("client", []byte{0xde, 0xad}); got != "dead_client.sqlog" {
		t.Fatal(got)
	}
}

// TestDirCloseClosesOpenTraces: Close writes out and closes every trace
// still open (a connection that never closed), so nothing is left open
// with its buffer unwritten; events given later are refused.
func TestDirCloseClosesOpenTraces(t *testing.T) {
	d, _, errs := newTestDir(t)
	a, b := d.Create("client", []byte{1}), d.Create("server", []byte{1})
	a.Write([]byte("\x1e{\"a\":1}\n"))
	b.Write([]byte("\x1e{\"b\":1}\n"))
	b.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(d.path, Name("client", []byte{1}))); got != "\x1e{\"a\":1}\n" {
		t.Fatalf("client trace %q after Dir.Close", got)
	}
	if !d.Wait(context.Background(), time.Millisecond) {
		t.Fatal("a trace is still open after Dir.Close")
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Fatal("a trace closed by Dir.Close took an event")
	}
	if len(*errs) > 0 {
		t.Fatal(*errs)
	}
}
