package mpquic

import (
	"crypto/tls"
	"net"
	"net/netip"
	"testing"

	"github.com/mpq/mpq/internal/certs"
)

// The max_udp_payload_size advertised is what the socket receives: the
// largest UDP payload of its address family, within the read buffer.
func TestAdvertisedPayloadSize(t *testing.T) {
	cert, err := certs.SelfSigned(certs.Options{Ed25519: true})
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"t"}}
	for _, tt := range []struct {
		addr string
		want int
	}{{"127.0.0.1:0", 65507}, {"[::1]:0", 65527}} {
		uc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(tt.addr)))
		if err != nil {
			t.Logf("%s: %v", tt.addr, err)
			continue
		}
		cfg, sendSize, err := socketConfig(&Config{TLS: tc, MaxPacketSize: 1500}, uc)
		uc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.MaxUDPPayloadSize != tt.want || sendSize != 1500 {
			t.Errorf("%s: advertises %d (want %d), send buffers of %d", tt.addr, cfg.MaxUDPPayloadSize, tt.want, sendSize)
		}
		if tt.want > recvBufSize {
			t.Errorf("advertises %d, reads into %d bytes", tt.want, recvBufSize)
		}
	}
}
