package mpquic_test

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/qerr"
)

// switchRelay forwards datagrams between a client and the server it
// currently points at; datagrams from servers it pointed at before are
// dropped. Moving it to another server stands for a server that restarted
// on the same address without the state of its connections.
type switchRelay struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	servers map[netip.AddrPort]bool
	server  netip.AddrPort
	client  netip.AddrPort
}

func newSwitchRelay(t *testing.T, server netip.AddrPort) *switchRelay {
	t.Helper()
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &switchRelay{conn: uc, servers: map[netip.AddrPort]bool{server: true}, server: server}
	t.Cleanup(func() { uc.Close() })
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := uc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
			r.mu.Lock()
			switch {
			case from == r.server:
				uc.WriteToUDPAddrPort(buf[:n], r.client)
			case !r.servers[from]:
				r.client = from
				uc.WriteToUDPAddrPort(buf[:n], r.server)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *switchRelay) point(server netip.AddrPort) {
	r.mu.Lock()
	r.servers[server] = true
	r.server = server
	r.mu.Unlock()
}

func (r *switchRelay) addr() string { return r.conn.LocalAddr().String() }

// A server restarted with the same stateless reset key (given, or derived
// from the same certificate) resets the connections of its previous run:
// the client learns at once that its connection is gone. With another key
// the client cannot tell the reset from garbage.
func TestStatelessResetAfterRestart(t *testing.T) {
	keyA := []byte("reset key A, at least sixteen bytes")
	keyB := []byte("reset key B, at least sixteen bytes")
	tests := []struct {
		name        string
		first, next []byte
		reset       bool
	}{
		{"same key", keyA, keyA, true},
		{"same certificate", nil, nil, true},
		{"another key", keyA, keyB, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			listen := func(key []byte) *mpquic.Listener {
				l, err := mpquic.ListenWithOptions("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t)}, mpquic.ListenOptions{ResetKey: key})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				return l
			}
			addrOf := func(l *mpquic.Listener) netip.AddrPort { return l.Addr().(*net.UDPAddr).AddrPort() }
			first := listen(tt.first)
			r := newSwitchRelay(t, addrOf(first))
			c, err := mpquic.Dial(ctx, r.addr(), &mpquic.Config{TLS: clientTLS(t), MaxIdleTimeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sc, err := first.Accept(ctx) // the server's handshake is done too
			if err != nil {
				t.Fatal(err)
			}
			// One exchange before the restart, so that the client has the
			// server's acknowledgement of its Finished and HANDSHAKE_DONE:
			// the server completes its handshake on the client's
			// Finished, and what it sends then could still be on its way
			// when the relay moves (and be dropped). The client would
			// then probe with Handshake packets, which a server that
			// knows nothing of the connection drops without a reset.
			cs, err := c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			ss, err := sc.AcceptStream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(ss, make([]byte, 4)); err != nil {
				t.Fatal(err)
			}
			if _, err := ss.Write([]byte("pong")); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(cs, make([]byte, 4)); err != nil {
				t.Fatal(err)
			}
			// The server restarts: the relay now leads to a new
			// listener that knows nothing of the connection.
			r.point(addrOf(listen(tt.next)))
			first.Close() // its goodbye goes nowhere
			// Something to send, unless a late acknowledgement already
			// drew the reset.
			if s, err := c.OpenStream(); err == nil {
				s.Write([]byte("GET /\r\n"))
			}
			select {
			case <-c.Done():
			case <-ctx.Done():
				t.Fatal("connection still open")
			}
			isReset := errors.As(c.Err(), new(qerr.StatelessResetError))
			if isReset != tt.reset {
				t.Fatalf("client closed with %v", c.Err())
			}
		})
	}
}
