package floodgen_test

import (
	"context"
	"crypto/tls"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/mpquic/internal/floodgen"
	"github.com/mpq/mpq/mpquic/internal/wire"
)

// maxAttemptAllocs bounds the allocations of one attempt from a
// HelloPool: its two Initial keys and packets, where making a ClientHello
// (a key share, a TLS client) takes hundreds.
const maxAttemptAllocs = 100

func clientConfig() *core.Config {
	return &core.Config{TLS: &tls.Config{InsecureSkipVerify: true, ServerName: "localhost", NextProtos: []string{hq.ALPN}}}
}

// TestHelloPool: a pooled ClientHello goes out under a new destination
// connection ID each time, in datagrams of at least 1,200 bytes, and a
// Retry to its connection ID is answered with the same ClientHello to
// the Retry's connection ID with the Retry's token; an attempt costs no
// new ClientHello.
func TestHelloPool(t *testing.T) {
	p, err := floodgen.NewHelloPool(clientConfig(), 2)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	var scid []byte
	for i := range 10 {
		out, err := p.First(i, r)
		if err != nil {
			t.Fatal(err)
		}
		for j, d := range out {
			hdr, err := wire.ParseHeader(d, 0)
			if err != nil || hdr.Type != wire.PacketInitial || len(hdr.Token) != 0 || len(d) < 1200 || hdr.Length != len(d) {
				t.Fatalf("attempt %d datagram %d: %d bytes, header %+v, %v", i, j, len(d), hdr, err)
			}
			if j == 0 && seen[string(hdr.DstConnID)] {
				t.Fatalf("attempt %d: destination connection ID %x again", i, hdr.DstConnID)
			}
			seen[string(hdr.DstConnID)] = true
			scid = hdr.SrcConnID
		}
	}
	retrySCID, token := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte("a token of the server")
	retry := append(wire.AppendRetry(nil, wire.Version1, scid, retrySCID, token), make([]byte, 16)...)
	out, ok, err := p.AnswerRetry(retry)
	if err != nil || !ok || len(out) == 0 {
		t.Fatalf("AnswerRetry: %d datagrams, %v, %v", len(out), ok, err)
	}
	for j, d := range out {
		hdr, err := wire.ParseHeader(d, 0)
		if err != nil || string(hdr.DstConnID) != string(retrySCID) || string(hdr.SrcConnID) != string(scid) || string(hdr.Token) != string(token) || len(d) < 1200 {
			t.Fatalf("answer datagram %d: %d bytes, header %+v, %v", j, len(d), hdr, err)
		}
	}
	other := append(wire.AppendRetry(nil, wire.Version1, []byte("nobody's"), retrySCID, token), make([]byte, 16)...)
	if _, ok, _ := p.AnswerRetry(other); ok {
		t.Error("answered a Retry to a connection ID not of the pool")
	}
	i := 0
	if n := testing.AllocsPerRun(50, func() {
		i++
		if _, err := p.First(i, r); err != nil {
			t.Fatal(err)
		}
	}); n > maxAttemptAllocs {
		t.Errorf("an attempt allocates %.0f times, more than %d: does it make a ClientHello?", n, maxAttemptAllocs)
	}
}

// TestRetryFloodPooled: against a server that requires a Retry, every
// ClientHello of RetryFlood is answered once, and the answers come to the
// server as validated new connections: the flood's prefix fills its
// share of handshake slots and the rest are refused for it.
func TestRetryFloodPooled(t *testing.T) {
	const hellos, share = 300, 16
	cert, err := certs.SelfSigned(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := mpquic.ListenWithOptions("127.0.0.1:0", &mpquic.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{hq.ALPN}}},
		mpquic.ListenOptions{RequireRetry: true, MaxHandshakesPerPrefix: share})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var socks []*net.UDPConn
	for range 8 {
		uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer uc.Close()
		socks = append(socks, uc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := floodgen.RetryFlood(ctx, clientConfig(), socks, l.Addr().(*net.UDPAddr).AddrPort(), 1000, hellos)
	if err != nil {
		t.Fatal(err)
	}
	ls := l.Stats()
	t.Logf("flood %+v; server %+v", st, ls)
	if st.Hellos != hellos || st.Retries != hellos {
		t.Errorf("%d ClientHellos sent, %d Retries answered; want %d each", st.Hellos, st.Retries, hellos)
	}
	if ls.Accepted < share || ls.Accepted+ls.PrefixRefused < st.Retries {
		t.Errorf("the server accepted %d and refused %d for the prefix's share of %d answers", ls.Accepted, ls.PrefixRefused, st.Retries)
	}
}
