package mpquic

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/certs"
)

// TestDisableGSO: Config.DisableGSO keeps segmentation offload off on the
// listener's socket, the dialled connection's and those of the paths it
// adds, so that a capture on lo shows one packet per datagram.
func TestDisableGSO(t *testing.T) {
	if !gsoSupported(loopbackUDP(t)) {
		t.Skip("no UDP GSO on this system")
	}
	cert, err := certs.SelfSigned(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []bool{false, true} {
		l, err := Listen("127.0.0.1:0", &Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"t"}}, DisableGSO: off})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := DialWithOptions(ctx, l.Addr().String(), &Config{TLS: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"t"}}, DisableGSO: off},
			DialOptions{LocalAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.AddPath(ctx, "127.0.0.2:0"); err != nil {
			t.Fatal(err)
		}
		socks := append([]*socket{l.sock}, c.ownSockets...)
		if len(socks) != 3 {
			t.Fatalf("%d sockets", len(socks))
		}
		for i, s := range socks {
			if s.gso.Load() == off {
				t.Errorf("DisableGSO %v: socket %d (%v) has GSO %v", off, i, s.local, s.gso.Load())
			}
		}
	}
}
