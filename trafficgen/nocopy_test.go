package trafficgen_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// plainConn hands out streams that hide appenv.ZeroWriter and
// appenv.Discarder: the generator must copy every byte through Write and
// Read.
type plainConn struct{ appenv.Conn }

type plainStream struct{ appenv.Stream }

func (c plainConn) OpenStream() (appenv.Stream, error) {
	s, err := c.Conn.OpenStream()
	if err != nil {
		return nil, err
	}
	return plainStream{s}, nil
}

func (c plainConn) OpenUniStream() (appenv.Stream, error) {
	s, err := c.Conn.OpenUniStream()
	if err != nil {
		return nil, err
	}
	return plainStream{s}, nil
}

func (c plainConn) OnStream(f func(appenv.Stream)) {
	c.Conn.OnStream(func(s appenv.Stream) { f(plainStream{s}) })
}

// countingConn counts the zeros its streams' WriteZeros took and the
// streams that became sinks.
type countingConn struct {
	appenv.Conn
	zeros, sinks *int
}

type countingStream struct {
	appenv.Stream
	zeros, sinks *int
}

func (s countingStream) WriteZeros(n int) (int, error) {
	n, err := s.Stream.(appenv.ZeroWriter).WriteZeros(n)
	*s.zeros += n
	return n, err
}

func (s countingStream) Discard(max int) (int, error) {
	return s.Stream.(appenv.Discarder).Discard(max)
}

func (s countingStream) Sink() bool {
	ok := s.Stream.(appenv.Discarder).Sink()
	if ok {
		*s.sinks++
	}
	return ok
}

func (c countingConn) OpenStream() (appenv.Stream, error) {
	s, err := c.Conn.OpenStream()
	if err != nil {
		return nil, err
	}
	return countingStream{s, c.zeros, c.sinks}, nil
}

func (c countingConn) OpenUniStream() (appenv.Stream, error) {
	s, err := c.Conn.OpenUniStream()
	if err != nil {
		return nil, err
	}
	return countingStream{s, c.zeros, c.sinks}, nil
}

func (c countingConn) OnStream(f func(appenv.Stream)) {
	c.Conn.OnStream(func(s appenv.Stream) { f(countingStream{s, c.zeros, c.sinks}) })
}

// TestNoCopiesSameRun: the generator writes the bodies of its messages
// with WriteZeros where the stream offers it (the simulator's), makes a
// bulk stream a sink (appenv.Discarder) once its header is read, and a run
// gives the same messages, throughput and path samples as with every
// byte written and read through copies. The bulk source saturates the
// path, so that its queue drops packets and zeros are sent again; the
// periodic messages put headers and zeros in the same packets.
func TestNoCopiesSameRun(t *testing.T) {
	srcs := []experiment.Source{
		{Name: "bulk", Kind: experiment.KindBulk},
		{Name: "s1", Kind: experiment.KindPeriodic, Interval: 50 * time.Millisecond, Size: 10000, Priority: true},
	}
	csvs := func(rec *trafficgen.Recorder) []byte {
		var b bytes.Buffer
		for _, w := range []func(*bytes.Buffer) error{
			func(b *bytes.Buffer) error { return rec.WriteMessagesCSV(b) },
			func(b *bytes.Buffer) error { return rec.WriteThroughputCSV(b) },
			func(b *bytes.Buffer) error { return rec.WritePathsCSV(b) },
		} {
			if err := w(&b); err != nil {
				t.Fatal(err)
			}
		}
		return b.Bytes()
	}
	zeros, sinks := 0, 0
	fast, _, _ := simRunWrapped(t, srcs, time.Second, 10*time.Millisecond, 0, 20e6, nil,
		func(c appenv.Conn) appenv.Conn { return countingConn{c, &zeros, &sinks} })
	plain, _, _ := simRunWrapped(t, srcs, time.Second, 10*time.Millisecond, 0, 20e6, nil,
		func(c appenv.Conn) appenv.Conn { return plainConn{c} })
	if zeros < 1<<20 {
		t.Fatalf("WriteZeros took %d bytes: the bodies were copied", zeros)
	}
	if sinks != 1 {
		t.Fatalf("%d streams became sinks, want the bulk one", sinks)
	}
	a, b := csvs(fast), csvs(plain)
	if !bytes.Equal(a, b) {
		t.Fatalf("runs differ with WriteZeros (%d bytes of results) and without (%d)", len(a), len(b))
	}
	if n := len(fast.Messages()); n < 15 {
		t.Fatalf("%d messages: the test shows nothing", n)
	}
}
