package mpquic_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
)

// hqStream adapts a quic-go stream to hq.Stream.
type hqStream struct{ *quicgo.Stream }

func (s hqStream) CancelWrite(code uint64) { s.Stream.CancelWrite(quicgo.StreamErrorCode(code)) }

// quicgoServer serves the test files with quic-go.
func quicgoServer(t *testing.T) (addr netip.AddrPort) {
	t.Helper()
	f := getFiles(t)
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(t), &quicgo.Config{MaxIncomingStreams: 200})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					s, err := c.AcceptStream(context.Background())
					if err != nil {
						return
					}
					go hq.Serve(hqStream{s}, f.root)
				}
			}()
		}
	}()
	return ln.Addr().(*net.UDPAddr).AddrPort()
}

// mpquicServer serves the test files with our stack.
func mpquicServer(t *testing.T, cfg *mpquic.Config) netip.AddrPort {
	t.Helper()
	f := getFiles(t)
	if cfg == nil {
		cfg = &mpquic.Config{}
	}
	cfg.TLS = serverTLS(t)
	cfg.MaxIncomingStreams = 200
	l, err := mpquic.Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	serveFiles(l, f.root)
	return l.Addr().(*net.UDPAddr).AddrPort()
}

// serveFiles answers hq-interop requests for the files under root on every
// connection the listener accepts, until it is closed.
func serveFiles(l *mpquic.Listener, root string) {
	go func() {
		for {
			c, err := l.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					s, err := c.AcceptStream(context.Background())
					if err != nil {
						return
					}
					go hq.Serve(s, root)
				}
			}()
		}
	}()
}

// client abstracts the two client stacks.
type client interface {
	get(ctx context.Context, path string) (*bytes.Buffer, error)
	close()
}

type mpquicClient struct{ c *mpquic.Conn }

func (m mpquicClient) get(ctx context.Context, p string) (*bytes.Buffer, error) {
	s, err := m.c.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	_, err = hq.Get(ctx, s, p, &b)
	return &b, err
}
func (m mpquicClient) close() { m.c.Close() }

type quicgoClient struct{ c *quicgo.Conn }

func (q quicgoClient) get(ctx context.Context, p string) (*bytes.Buffer, error) {
	s, err := q.c.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	_, err = hq.Get(ctx, hqStream{s}, p, &b)
	return &b, err
}
func (q quicgoClient) close() { q.c.CloseWithError(0, "") }

func dialMpquic(t *testing.T, ctx context.Context, addr string) client {
	t.Helper()
	c, err := mpquic.Dial(ctx, addr, &mpquic.Config{TLS: clientTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return mpquicClient{c}
}

func dialQuicgo(t *testing.T, ctx context.Context, addr string) client {
	t.Helper()
	c, err := quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseWithError(0, "") })
	return quicgoClient{c}
}

// interopCases are the two directions of the interop tests.
func interopCases(t *testing.T) []struct {
	name   string
	server func(*testing.T) netip.AddrPort
	dial   func(*testing.T, context.Context, string) client
} {
	return []struct {
		name   string
		server func(*testing.T) netip.AddrPort
		dial   func(*testing.T, context.Context, string) client
	}{
		{"mpquic-client/quic-go-server", quicgoServer, dialMpquic},
		{"quic-go-client/mpquic-server", func(t *testing.T) netip.AddrPort { return mpquicServer(t, nil) }, dialQuicgo},
	}
}

func TestInteropHandshake(t *testing.T) {
	for _, tc := range interopCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			c := tc.dial(t, ctx, tc.server(t).String())
			b, err := c.get(ctx, "/small/7")
			if err != nil {
				t.Fatal(err)
			}
			checkDownload(t, "small/7", b, getFiles(t).small[7])
		})
	}
}

func TestInteropConcurrentStreams(t *testing.T) {
	for _, tc := range interopCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 60*time.Second)
			c := tc.dial(t, ctx, tc.server(t).String())
			var wg sync.WaitGroup
			errs := make(chan error, 100)
			for i := 0; i < 100; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					b, err := c.get(ctx, fmt.Sprintf("/small/%d", i))
					if err != nil {
						errs <- fmt.Errorf("stream %d: %w", i, err)
						return
					}
					if !bytes.Equal(b.Bytes(), getFiles(t).small[i]) {
						errs <- fmt.Errorf("stream %d: content differs (%d bytes)", i, b.Len())
					}
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

func TestInteropLargeTransfer(t *testing.T) {
	for _, tc := range interopCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 120*time.Second)
			c := tc.dial(t, ctx, tc.server(t).String())
			b, err := c.get(ctx, "/big")
			if err != nil {
				t.Fatal(err)
			}
			checkDownload(t, "big", b, getFiles(t).big)
		})
	}
}

func TestInteropLossyRelay(t *testing.T) {
	for i, tc := range interopCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 300*time.Second)
			r := newRelay(t, tc.server(t), 0.03, 0.02, uint64(i+1))
			c := tc.dial(t, ctx, r.addr())
			b, err := c.get(ctx, "/big")
			if err != nil {
				t.Fatal(err)
			}
			checkDownload(t, "big through a 3% lossy relay", b, getFiles(t).big)
			if _, dropped := r.counts(); dropped == 0 {
				t.Fatal("relay dropped nothing")
			}
		})
	}
}
