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

// The 0-RTT interop tests: a first connection leaves a session ticket, the
// second resumes and sends its request in 0-RTT packets, and the server
// reports that it received 0-RTT data.

// echoEarly answers a stream with "ok " and the stream's bytes.
func echoEarly(rw io.ReadWriteCloser) {
	b, err := io.ReadAll(rw)
	if err != nil {
		return
	}
	rw.Write(append([]byte("ok "), b...))
	rw.Close()
}

func TestZeroRTTMpquicClientQuicgoServer(t *testing.T) {
	ln, err := quicgo.ListenAddrEarly("127.0.0.1:0", serverTLS(t), &quicgo.Config{Allow0RTT: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	used0RTT := make(chan bool, 4)
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
				echoEarly(s)
				select {
				case <-c.HandshakeComplete():
				case <-time.After(5 * time.Second):
				}
				used0RTT <- c.ConnectionState().Used0RTT
			}()
		}
	}()
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tc := clientTLS(t)
	tc.ClientSessionCache = newTicketCache()
	cfg := &mpquic.Config{TLS: tc, Allow0RTT: true}
	for i, wantEarly := range []bool{false, true} {
		c, err := mpquic.DialEarly(ctx, addr, cfg, mpquic.DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.OpenEarlyStream(true)
		if wantEarly && err != nil {
			t.Fatalf("connection %d: OpenEarlyStream: %v", i, err)
		}
		if err != nil {
			<-c.HandshakeComplete()
			s, err = c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
		}
		s.Write([]byte("hello"))
		s.Close()
		got, err := io.ReadAll(s)
		if err != nil || string(got) != "ok hello" {
			t.Fatalf("connection %d: answer %q, %v", i, got, err)
		}
		if i == 0 {
			// The ticket comes after the handshake: wait for it.
			waitTicket(t, tc.ClientSessionCache)
		}
		st := c.EarlyData()
		if st.Accepted != wantEarly || st.Resumed != wantEarly || wantEarly && st.PacketsSent == 0 {
			t.Errorf("connection %d: %+v", i, st)
		}
		if used := <-used0RTT; used != wantEarly {
			t.Errorf("connection %d: quic-go server used 0-RTT: %v", i, used)
		}
		c.Close()
	}
}

// ticketCache is a client session cache that says when a ticket is
// stored.
type ticketCache struct {
	tls.ClientSessionCache
	stored chan struct{}
}

func newTicketCache() *ticketCache {
	return &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4), stored: make(chan struct{}, 16)}
}

// Put stores the session and signals it.
func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		select {
		case c.stored <- struct{}{}:
		default:
		}
	}
}

// waitTicket waits until the cache holds the test server's ticket.
func waitTicket(t *testing.T, cache tls.ClientSessionCache) {
	t.Helper()
	c := cache.(*ticketCache)
	for {
		if _, ok := c.Get("localhost"); ok {
			return
		}
		select {
		case <-c.stored:
		case <-time.After(5 * time.Second):
			t.Fatal("no session ticket")
		}
	}
}

func TestZeroRTTQuicgoClientMpquicServer(t *testing.T) {
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t), Allow0RTT: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	type result struct {
		st     mpquicEarly
		before bool // accepted before the handshake completed
	}
	results := make(chan result, 4)
	go func() {
		for {
			c, err := l.Accept(context.Background())
			if err != nil {
				return
			}
			before := false
			select {
			case <-c.HandshakeComplete():
			default:
				before = true
			}
			go func() {
				s, err := c.AcceptStream(context.Background())
				if err != nil {
					return
				}
				echoEarly(s)
				select {
				case <-c.HandshakeComplete():
				case <-time.After(5 * time.Second):
				}
				st := c.EarlyData()
				results <- result{mpquicEarly{st.Accepted, st.PacketsReceived}, before}
			}()
		}
	}()
	addr := l.Addr().(*net.UDPAddr).String()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tc := clientTLS(t)
	tc.ClientSessionCache = newTicketCache()
	for i, wantEarly := range []bool{false, true} {
		c, err := quicgo.DialAddrEarly(ctx, addr, tc, &quicgo.Config{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		s.Write([]byte("hello"))
		s.Close()
		got, err := io.ReadAll(s)
		if err != nil || string(got) != "ok hello" {
			t.Fatalf("connection %d: answer %q, %v", i, got, err)
		}
		<-c.HandshakeComplete()
		if i == 0 {
			waitTicket(t, tc.ClientSessionCache)
		}
		if used := c.ConnectionState().Used0RTT; used != wantEarly {
			t.Errorf("connection %d: quic-go client used 0-RTT: %v", i, used)
		}
		r := <-results
		if r.st.accepted != wantEarly || wantEarly && (r.st.received == 0 || !r.before) {
			t.Errorf("connection %d: mpquic server %+v, accepted before the handshake: %v", i, r.st, r.before)
		}
		c.CloseWithError(0, "")
	}
}

type mpquicEarly struct {
	accepted bool
	received uint64
}
