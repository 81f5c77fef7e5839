package udpenv_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/internal/envtest"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/mpquic"
)

func newEnvs(t *testing.T) (client, server *udpenv.Env) {
	t.Helper()
	cert, err := certs.SelfSigned(certs.Options{Ed25519: true})
	if err != nil {
		t.Fatal(err)
	}
	server = udpenv.New(udpenv.Config{Server: &mpquic.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"echo"}}}})
	client = udpenv.New(udpenv.Config{Client: &mpquic.Config{TLS: &tls.Config{RootCAs: certs.Pool(cert), ServerName: "localhost", NextProtos: []string{"echo"}}}})
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// The echo application, unchanged from the simulator's test, runs over
// loopback UDP sockets.
func TestEchoLoopback(t *testing.T) {
	client, server := newEnvs(t)
	envtest.Echo(t, client, server, "127.0.0.1:0", []int{100, 10_000, 1_000_000, 100, 50_000}, 5*time.Millisecond)
}

// Timers run on the loop in order, cancellation wins over an expiry not
// yet run, and Dial reports errors on the loop.
func TestLoopTimersAndErrors(t *testing.T) {
	client, _ := newEnvs(t)
	got := make(chan string, 10)
	client.Exec(func() {
		client.AfterFunc(20*time.Millisecond, func() { got <- "b" })
		client.AfterFunc(time.Millisecond, func() { got <- "a" })
		cancel := client.AfterFunc(5*time.Millisecond, func() { got <- "cancelled" })
		if !cancel() || cancel() {
			t.Error("cancel reported wrongly")
		}
		if _, err := client.Listen("127.0.0.1:0", func(appenv.Conn) {}); err == nil {
			t.Error("listen without server configuration accepted")
		}
		client.Dial("bad address", func(c appenv.Conn, err error) {
			if err == nil {
				t.Error("dial of a bad address succeeded")
			}
			got <- "dial"
		})
	})
	var order []string
	for len(order) < 3 {
		select {
		case s := <-got:
			order = append(order, s)
		case <-time.After(5 * time.Second):
			t.Fatalf("only %v", order)
		}
	}
	// The timers run in their order; the dial error comes in between.
	var timers []string
	for _, s := range order {
		if s != "dial" {
			timers = append(timers, s)
		}
	}
	if len(timers) != 2 || timers[0] != "a" || timers[1] != "b" {
		t.Errorf("order %v", order)
	}
	select {
	case s := <-got:
		t.Errorf("unexpected %s", s)
	case <-time.After(20 * time.Millisecond):
	}
}
