package mpquic_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/mpq/mpq/mpquic"
)

// benchBytes is the size of one bulk transfer of the throughput benchmark.
const benchBytes = 64 << 20

// BenchmarkLoopbackThroughput measures bulk transfer throughput over
// loopback for mpquic and for quic-go in the same run, alternating the two
// so that machine noise hits both, and reports both rates and their ratio.
// Each side sends benchBytes on one stream from server to client.
//
//	go test ./mpquic -run '^$' -bench LoopbackThroughput -benchtime 5x
func BenchmarkLoopbackThroughput(b *testing.B) {
	ours := newMpquicBulk(b)
	theirs := newQuicgoBulk(b)
	var tOurs, tTheirs time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tOurs += ours(b)
		tTheirs += theirs(b)
	}
	b.StopTimer()
	mbps := func(d time.Duration) float64 { return float64(b.N) * benchBytes * 8 / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(tOurs), "mpquic-Mbit/s")
	b.ReportMetric(mbps(tTheirs), "quicgo-Mbit/s")
	b.ReportMetric(mbps(tOurs)/mbps(tTheirs), "ratio")
	b.ReportMetric(0, "ns/op")
}

var payload = make([]byte, 1<<20)

func serveBulk(w io.Writer) error {
	for sent := 0; sent < benchBytes; sent += len(payload) {
		if _, err := w.Write(payload); err != nil {
			return err
		}
	}
	return nil
}

// newMpquicBulk starts an mpquic server and returns a function timing one
// transfer over a fresh connection.
func newMpquicBulk(b *testing.B) func(*testing.B) time.Duration {
	cfg := &mpquic.Config{TLS: serverTLS(b), MaxPacketSize: 1452, Pacing: true}
	l, err := mpquic.Listen("127.0.0.1:0", cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
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
				io.ReadAll(s)
				serveBulk(s)
				s.Close()
			}()
		}
	}()
	addr := l.Addr().String()
	return func(b *testing.B) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		c, err := mpquic.Dial(ctx, addr, &mpquic.Config{TLS: clientTLS(b), MaxPacketSize: 1452, Pacing: true})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		s, err := c.OpenStreamSync(ctx)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		n, err := io.Copy(io.Discard, s)
		if err != nil || n != benchBytes {
			b.Fatalf("mpquic: got %d bytes, %v", n, err)
		}
		return time.Since(start)
	}
}

func newQuicgoBulk(b *testing.B) func(*testing.B) time.Duration {
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(b), &quicgo.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
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
				io.ReadAll(s)
				serveBulk(s)
				s.Close()
			}()
		}
	}()
	addr := ln.Addr().(*net.UDPAddr).String()
	return func(b *testing.B) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		c, err := quicgo.DialAddr(ctx, addr, clientTLS(b), &quicgo.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		s, err := c.OpenStreamSync(ctx)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		n, err := io.Copy(io.Discard, s)
		if err != nil || n != benchBytes {
			b.Fatalf("quic-go: got %d bytes, %v", n, err)
		}
		return time.Since(start)
	}
}

var _ = tls.VersionTLS13
