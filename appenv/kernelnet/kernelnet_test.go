package kernelnet_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mpq/mpq/appenv/internal/envtest"
	"github.com/mpq/mpq/appenv/kernelnet"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/mpquic/core"
)

func envs(t *testing.T, kind string) (client, server *udpenv.Env) {
	t.Helper()
	cert, err := certs.SelfSigned(certs.Options{Ed25519: true})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := kernelnet.New(kernelnet.Config{Kind: kind, TLS: &tls.Config{RootCAs: certs.Pool(cert), ServerName: "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := kernelnet.New(kernelnet.Config{Kind: kind, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	if err != nil {
		t.Fatal(err)
	}
	client = udpenv.New(udpenv.Config{Transport: ct})
	server = udpenv.New(udpenv.Config{Transport: st})
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// The echo application runs unchanged over each kernel transport on
// loopback: messages on streams of their own, several under way at once
// in the one connection.
func TestEchoKernel(t *testing.T) {
	for _, kind := range []string{kernelnet.TCP, kernelnet.TLS, kernelnet.MPTCP} {
		t.Run(kind, func(t *testing.T) {
			client, server := envs(t, kind)
			res := envtest.Echo(t, client, server, "127.0.0.1:0", []int{100, 10_000, 1_000_000, 100, 50_000, 0}, time.Millisecond)
			if len(res) != 6 {
				t.Fatalf("%d results", len(res))
			}
		})
	}
}

// TestConcurrentHandshakes: the listener runs each connection's TLS
// handshake on its own, so a client that connected and never sends its
// ClientHello does not hold up the next client (reference 000's pool
// opens connections in bursts).
func TestConcurrentHandshakes(t *testing.T) {
	cert, err := certs.SelfSigned(certs.Options{Ed25519: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := kernelnet.New(kernelnet.Config{Kind: kernelnet.TLS, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := kernelnet.New(kernelnet.Config{Kind: kernelnet.TLS, TLS: &tls.Config{RootCAs: certs.Pool(cert), ServerName: "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stalled, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialed := make(chan error, 1)
	go func() {
		c, err := ct.Dial(ctx, l.Addr().String(), "")
		if err == nil {
			defer c.CloseWithError(0, "done")
		}
		dialed <- err
		<-ctx.Done()
	}()
	c, err := l.Accept(ctx)
	if err != nil {
		t.Fatalf("the second client was not accepted behind the stalled one: %v", err)
	}
	defer c.CloseWithError(0, "done")
	if err := <-dialed; err != nil {
		t.Fatalf("dial: %v", err)
	}
	cancel()
}

// TestSample: a connection's tcp_info reaches the sampler every
// interval while data flows, as path 0's window and round trip, and the
// sampling ends when the socket is closed.
func TestSample(t *testing.T) {
	tr, err := kernelnet.New(kernelnet.Config{Kind: kernelnet.TCP})
	if err != nil {
		t.Fatal(err)
	}
	l, err := tr.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := make(chan udpenv.TransportConn, 1)
	go func() {
		c, err := l.Accept(ctx)
		if err != nil {
			t.Error(err)
			close(accepted)
			return
		}
		accepted <- c
	}()
	tc, err := tr.Dial(ctx, l.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	c := tc.(*kernelnet.Conn)
	server := <-accepted
	if server == nil {
		t.FailNow()
	}
	defer server.CloseWithError(0, "done")

	type sample struct {
		at time.Time
		m  core.PathMetrics
	}
	samples := make(chan sample, 1000)
	const every = 5 * time.Millisecond
	start := time.Now()
	stop := c.Sample(ctx, every, func(now time.Time, m core.PathMetrics) { samples <- sample{now, m} })
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		ss, err := server.AcceptStream(ctx)
		if err == nil {
			io.Copy(io.Discard, ss)
		}
	}()
	buf := make([]byte, 64<<10)
	for time.Since(start) < 200*time.Millisecond {
		if _, err := s.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	c.CloseWithError(0, "done")
	closed := time.Now()
	time.Sleep(50 * time.Millisecond)
	stop()
	close(samples)
	var n, after int
	for s := range samples {
		if s.at.After(closed.Add(2 * every)) {
			after++
			continue
		}
		n++
		if s.m.PathID != 0 || s.m.CongestionWindow == 0 || s.m.SmoothedRTT <= 0 || s.m.CongestionState == "" {
			t.Errorf("sample %+v", s.m)
		}
	}
	// 200 ms at 5 ms: 40 samples, fewer on a busy machine.
	if n < 20 {
		t.Errorf("%d samples in 200 ms every %v", n, every)
	}
	if after > 0 {
		t.Errorf("%d samples after the close", after)
	}
}
