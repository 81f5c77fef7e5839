package udpenv_test

import (
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/scheduler"
)

// multipathConn is what the runner and the traffic generator use of a
// connection beyond appenv.Conn.
type multipathConn interface {
	appenv.Conn
	AddPath(local, remote string, done func(id uint64, err error))
	AnnounceSource(scheduler.Source)
	WithdrawSource(id uint64)
	PathStats() []core.PathStats
	MultipathEnabled() bool
}

// connected returns a client and a server connection over loopback, both
// ends of one environment; the client dials from 127.0.0.1.
func connected(t *testing.T, serverMultipath bool) (e *udpenv.Env, client, server multipathConn) {
	t.Helper()
	cert, err := certs.SelfSigned(certs.Options{Ed25519: true})
	if err != nil {
		t.Fatal(err)
	}
	e = udpenv.New(udpenv.Config{
		Server:    &mpquic.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"mp"}}, DisableMultipath: !serverMultipath},
		Client:    &mpquic.Config{TLS: &tls.Config{RootCAs: certs.Pool(cert), ServerName: "localhost", NextProtos: []string{"mp"}}},
		LocalAddr: "127.0.0.1:0",
	})
	t.Cleanup(func() { e.Close() })
	accepted, dialled := make(chan appenv.Conn, 1), make(chan appenv.Conn, 1)
	errs := make(chan error, 1)
	e.Exec(func() {
		l, err := e.Listen("127.0.0.1:0", func(c appenv.Conn) { accepted <- c })
		if err != nil {
			errs <- err
			return
		}
		e.Dial(l.Addr(), func(c appenv.Conn, err error) {
			if err != nil {
				errs <- err
				return
			}
			dialled <- c
		})
	})
	get := func(ch chan appenv.Conn) multipathConn {
		select {
		case c := <-ch:
			mc, ok := c.(multipathConn)
			if !ok {
				t.Fatalf("%T lacks the multipath methods", c)
			}
			return mc
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(10 * time.Second):
			t.Fatal("no connection")
		}
		return nil
	}
	client, server = get(dialled), get(accepted)
	return e, client, server
}

// AddPath opens a path and calls back on the loop; the connection's
// statistics and the announcements pass through to mpquic.
func TestAddPath(t *testing.T) {
	tests := []struct {
		name      string
		multipath bool
		fromSrv   bool   // call AddPath on the server's connection
		local     string // "" for 127.0.0.2:0
		remote    string // "" for the server's address
		wantErr   error  // nil: the path opens; errAny: some error
	}{
		{name: "second path", multipath: true},
		{name: "server without multipath", multipath: false, wantErr: core.ErrNoMultipath},
		{name: "bad local address", multipath: true, local: "127.0.0.2:bad", wantErr: errAny},
		{name: "bad remote address", multipath: true, remote: "nowhere", wantErr: errAny},
		{name: "from the server", multipath: true, fromSrv: true, wantErr: core.ErrServerPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, client, server := connected(t, tt.multipath)
			type result struct {
				id  uint64
				err error
			}
			done := make(chan result, 1)
			var called int // owned by the loop: the race detector sees a callback off the loop
			e.Exec(func() {
				c := client
				if tt.fromSrv {
					c = server
				}
				local, remote := tt.local, tt.remote
				if local == "" {
					local = "127.0.0.2:0"
				}
				if remote == "" {
					remote = client.RemoteAddr()
				}
				c.AddPath(local, remote, func(id uint64, err error) {
					called++
					done <- result{id, err}
				})
			})
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("AddPath did not call back")
			}
			switch {
			case tt.wantErr == nil && r.err != nil:
				t.Fatalf("AddPath: %v", r.err)
			case tt.wantErr == errAny && r.err == nil, tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(r.err, tt.wantErr):
				t.Fatalf("AddPath error %v, want %v", r.err, tt.wantErr)
			}
			e.Exec(func() {
				if called != 1 {
					t.Errorf("callback ran %d times", called)
				}
				for _, c := range []multipathConn{client, server} {
					if c.MultipathEnabled() != tt.multipath {
						t.Errorf("MultipathEnabled %v", c.MultipathEnabled())
					}
					c.AnnounceSource(scheduler.Source{ID: 1, Size: 1000, Interval: 10 * time.Millisecond, Next: time.Now()})
					c.WithdrawSource(1)
				}
				if tt.wantErr != nil {
					return
				}
				if r.id != 1 {
					t.Errorf("new path has ID %d", r.id)
				}
				ps := client.PathStats()
				if len(ps) != 2 || ps[1].ID != r.id || ps[1].Local.Addr().String() != "127.0.0.2" || !ps[1].Validated {
					t.Errorf("client paths %+v", ps)
				}
				if ps := server.PathStats(); len(ps) != 2 || ps[1].Remote.Addr().String() != "127.0.0.2" {
					t.Errorf("server paths %+v", ps)
				}
			})
		})
	}
}

var errAny = errors.New("any error")
