package qlogfile

import (
	"bufio"
	"io"
	"os"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/qlog"
)

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// BenchmarkTraceEvents compares the cost of an event written through this
// package's Writer (a locked buffer with a flush timer, what the commands
// use) with one written through a plain bufio.Writer (what a Trace had
// inside it before it wrote each event out as it happened), both to
// /dev/null.
func BenchmarkTraceEvents(b *testing.B) {
	h := qlog.PacketHeader{PacketType: "1RTT", PacketNumber: 7, HasPacketNumber: true}
	t0 := time.Now()
	run := func(b *testing.B, w io.WriteCloser) {
		tr := qlog.NewTrace(w, "client", []byte{1, 2, 3, 4}, t0, "bench")
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			tr.PacketSent(t0.Add(time.Duration(i)*time.Microsecond), 0, h, 1350, nil)
		}
		b.StopTimer()
		tr.Close()
	}
	b.Run("bufio", func(b *testing.B) {
		f, err := os.Create(os.DevNull)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		run(b, nopCloser{bufio.NewWriterSize(f, bufferSize)})
	})
	b.Run("qlogfile", func(b *testing.B) {
		f, err := os.Create(os.DevNull)
		if err != nil {
			b.Fatal(err)
		}
		d := NewDir(b.TempDir(), nil)
		d.open.Add(1)
		run(b, &Writer{f: f, bw: bufio.NewWriterSize(f, bufferSize), after: d.afterFunc, done: d.open.Done})
	})
}
