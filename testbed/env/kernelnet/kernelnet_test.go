package kernelnet_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/testbed/env/internal/envtest"
	"github.com/mpq/mpq/testbed/env/kernelnet"
	"github.com/mpq/mpq/testbed/env/udpenv"
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
