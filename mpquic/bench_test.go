package mpquic_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/mpq/mpq/mpquic"
)

// benchBytes is the size of one bulk transfer of the throughput benchmark.
const benchBytes = 64 << 20

// BenchmarkLoopbackThroughput measures bulk transfer throughput over
// loopback for mpquic and for quic-go in the same process run: each
// iteration is one transfer of benchBytes by each stack, on a fresh
// connection to its own server, one stream from server to client, the two
// alternating (and which goes first alternating too) so that machine noise
// hits both. It reports the median rate of each stack over the iterations
// and the median of the per-iteration ratios mpquic/quic-go (above 1:
// mpquic is faster), with their range.
//
//	go test ./mpquic -run '^$' -bench LoopbackThroughput -benchtime 5x
func BenchmarkLoopbackThroughput(b *testing.B) {
	ours, theirs := newMpquicBulk(b), newQuicgoBulk(b)
	cmp := loopbackCompare{bytes: benchBytes}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmp.pair(b, i, ours, theirs)
	}
	b.StopTimer()
	s := cmp.summary()
	b.ReportMetric(s.ours, "mpquic-Mbit/s")
	b.ReportMetric(s.theirs, "quicgo-Mbit/s")
	b.ReportMetric(s.ratio, "ratio")
	b.ReportMetric(s.ratioMin, "ratio-min")
	b.ReportMetric(s.ratioMax, "ratio-max")
	b.ReportMetric(0, "ns/op")
}

// TestLoopbackThroughputReport is the benchmark's comparison as a report
// that every `go test` run prints (t.Log; it asserts only that the
// transfers complete): by default 3 alternating pairs of 4 MB transfers, a
// fraction of a second; MPQ_LOOPBACK_FULL=1 runs the benchmark's 5 pairs
// of 64 MB (run with -v to see the report).
func TestLoopbackThroughputReport(t *testing.T) {
	pairs, size := 3, 4<<20
	if os.Getenv("MPQ_LOOPBACK_FULL") == "1" {
		pairs, size = 5, benchBytes
	}
	ours, theirs := newMpquicBulk(t), newQuicgoBulk(t)
	cmp := loopbackCompare{bytes: size}
	for i := 0; i < pairs; i++ {
		cmp.pair(t, i, ours, theirs)
	}
	t.Logf("loopback bulk, %d MB, %d alternating pairs: %s", size>>20, pairs, cmp.summary())
}

// bulkFunc times one download of n bytes over a fresh connection.
type bulkFunc func(tb testing.TB, n int) time.Duration

// loopbackCompare collects the durations of alternating transfers.
type loopbackCompare struct {
	bytes        int
	ours, theirs []time.Duration
}

// pair runs one transfer with each stack; the first goes first in even
// pairs, the second in odd ones.
func (c *loopbackCompare) pair(tb testing.TB, i int, ours, theirs bulkFunc) {
	if i%2 == 0 {
		c.ours = append(c.ours, ours(tb, c.bytes))
		c.theirs = append(c.theirs, theirs(tb, c.bytes))
	} else {
		c.theirs = append(c.theirs, theirs(tb, c.bytes))
		c.ours = append(c.ours, ours(tb, c.bytes))
	}
	if testing.Verbose() {
		tb.Logf("pair %d: mpquic %v, quic-go %v", i, c.ours[i].Round(time.Millisecond), c.theirs[i].Round(time.Millisecond))
	}
}

// loopbackSummary is the outcome of a comparison: median rates in Mbit/s
// and the median, least and greatest of the per-pair ratios
// rate(mpquic)/rate(quic-go).
type loopbackSummary struct {
	ours, theirs, ratio, ratioMin, ratioMax float64
}

func (s loopbackSummary) String() string {
	return fmt.Sprintf("mpquic %.0f Mbit/s, quic-go %.0f Mbit/s (medians), ratio mpquic/quic-go median %.3f (%.3f-%.3f)",
		s.ours, s.theirs, s.ratio, s.ratioMin, s.ratioMax)
}

func (c *loopbackCompare) summary() loopbackSummary {
	rate := func(d time.Duration) float64 { return float64(c.bytes) * 8 / d.Seconds() / 1e6 }
	var ours, theirs, ratios []float64
	for i := range c.ours {
		ours = append(ours, rate(c.ours[i]))
		theirs = append(theirs, rate(c.theirs[i]))
		ratios = append(ratios, c.theirs[i].Seconds()/c.ours[i].Seconds())
	}
	if len(ratios) == 0 {
		return loopbackSummary{}
	}
	return loopbackSummary{ours: median(ours), theirs: median(theirs), ratio: median(ratios),
		ratioMin: slices.Min(ratios), ratioMax: slices.Max(ratios)}
}

// median is the middle value of xs (the mean of the two middle ones for an
// even count); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{0.9, 1.1, 0.8, 1.0, 1.2}, 1.0},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestLoopbackSummary(t *testing.T) {
	// 1 MB in 10 ms is 838.8608 Mbit/s; the ratios are 2, 1 and 0.5.
	c := loopbackCompare{bytes: 1 << 20,
		ours:   []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond},
		theirs: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}}
	s := c.summary()
	want := loopbackSummary{ours: 419.4304, theirs: 419.4304, ratio: 1, ratioMin: 0.5, ratioMax: 2}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	if !near(s.ours, want.ours) || !near(s.theirs, want.theirs) || s.ratio != want.ratio || s.ratioMin != want.ratioMin || s.ratioMax != want.ratioMax {
		t.Fatalf("summary %+v, want %+v", s, want)
	}
}

var payload = make([]byte, 1<<20)

// serveBulk answers a request of 8 bytes, the size wanted (big endian),
// with that many bytes.
func serveBulk(rw io.ReadWriter) error {
	req, err := io.ReadAll(rw)
	if err != nil {
		return err
	}
	if len(req) != 8 {
		return fmt.Errorf("request of %d bytes", len(req))
	}
	n := int(binary.BigEndian.Uint64(req))
	for sent := 0; sent < n; sent += len(payload) {
		if _, err := rw.Write(payload[:min(len(payload), n-sent)]); err != nil {
			return err
		}
	}
	return nil
}

// download asks for n bytes on s, which it closes for writing, and reads
// them.
func download(tb testing.TB, who string, s io.ReadWriteCloser, n int) {
	if _, err := s.Write(binary.BigEndian.AppendUint64(nil, uint64(n))); err != nil {
		tb.Fatalf("%s: request: %v", who, err)
	}
	s.Close()
	got, err := io.Copy(io.Discard, s)
	if err != nil || got != int64(n) {
		tb.Fatalf("%s: got %d bytes of %d, %v", who, got, n, err)
	}
}

// newMpquicBulk starts an mpquic server and returns a function timing one
// transfer over a fresh connection.
func newMpquicBulk(tb testing.TB) bulkFunc {
	cfg := &mpquic.Config{TLS: serverTLS(tb), MaxPacketSize: 1452, Pacing: true}
	l, err := mpquic.Listen("127.0.0.1:0", cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				s, err := c.AcceptStream(context.Background())
				if err != nil {
					return
				}
				serveBulk(s)
				s.Close()
			}()
		}
	}()
	addr := l.Addr().String()
	return func(tb testing.TB, n int) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		c, err := mpquic.Dial(ctx, addr, &mpquic.Config{TLS: clientTLS(tb), MaxPacketSize: 1452, Pacing: true})
		if err != nil {
			tb.Fatal(err)
		}
		defer c.Close()
		s, err := c.OpenStreamSync(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		download(tb, "mpquic", s, n)
		return time.Since(start)
	}
}

// newQuicgoBulk is newMpquicBulk with quic-go on both ends.
func newQuicgoBulk(tb testing.TB) bulkFunc {
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(tb), &quicgo.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				s, err := c.AcceptStream(context.Background())
				if err != nil {
					return
				}
				serveBulk(s)
				s.Close()
			}()
		}
	}()
	addr := ln.Addr().(*net.UDPAddr).String()
	return func(tb testing.TB, n int) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		c, err := quicgo.DialAddr(ctx, addr, clientTLS(tb), &quicgo.Config{})
		if err != nil {
			tb.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		s, err := c.OpenStreamSync(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		download(tb, "quic-go", s, n)
		return time.Since(start)
	}
}
