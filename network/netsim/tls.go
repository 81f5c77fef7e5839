package netsim

import (
	"crypto/tls"
	"math/rand/v2"
	"time"

	"github.com/mpq/mpq/internal/certs"
)

// TLSConfigs returns the TLS configurations of a simulated client and
// server: the server presents a self-signed Ed25519 certificate for
// "localhost", valid from an hour before Epoch for a year (the simulation
// judges validity in virtual time, see SimConfig) and derived from seed, so
// that it is the same in every run; the client trusts exactly that
// certificate. Both offer the ALPN protocols alpn.
func TLSConfigs(seed uint64, alpn ...string) (client, server *tls.Config, err error) {
	cert, err := certs.SelfSigned(certs.Options{
		Ed25519:   true,
		Rand:      RandReader{rand.New(rand.NewPCG(seed, 0x6365727469666963))},
		Names:     []string{"localhost"},
		NotBefore: Epoch.Add(-time.Hour),
	})
	if err != nil {
		return nil, nil, err
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: alpn}
	client = &tls.Config{RootCAs: certs.Pool(cert), ServerName: "localhost", NextProtos: alpn}
	return client, server, nil
}
