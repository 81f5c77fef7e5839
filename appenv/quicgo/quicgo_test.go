package quicgo_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/mpq/mpq/appenv/internal/envtest"
	"github.com/mpq/mpq/appenv/quicgo"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/internal/certs"
)

// The echo application runs unchanged over quic-go on loopback.
func TestEchoQuicgo(t *testing.T) {
	cert, err := certs.SelfSigned(certs.Options{Ed25519: true})
	if err != nil {
		t.Fatal(err)
	}
	client := udpenv.New(udpenv.Config{Transport: quicgo.New(quicgo.Config{
		ClientTLS: &tls.Config{RootCAs: certs.Pool(cert), ServerName: "localhost", NextProtos: []string{"echo"}}})})
	server := udpenv.New(udpenv.Config{Transport: quicgo.New(quicgo.Config{
		ServerTLS: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"echo"}}})})
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	envtest.Echo(t, client, server, "127.0.0.1:0", []int{100, 10_000, 1_000_000, 100, 50_000}, time.Millisecond)
}
