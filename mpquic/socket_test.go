package mpquic

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

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

// Connections on real sockets pace in bursts of DefaultPacingBurst unless
// their configuration says otherwise (a negative PacingBurst: 10
// datagrams).
func TestDriverPacingBurst(t *testing.T) {
	cert, err := certs.SelfSigned(certs.Options{Ed25519: true})
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"t"}}
	for _, tt := range []struct{ in, want time.Duration }{
		{0, time.Millisecond}, {-1, -1}, {3 * time.Millisecond, 3 * time.Millisecond},
	} {
		uc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := socketConfig(&Config{TLS: tc, PacingBurst: tt.in}, uc)
		uc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.PacingBurst != tt.want {
			t.Errorf("PacingBurst %v: the driver uses %v, want %v", tt.in, cfg.PacingBurst, tt.want)
		}
	}
}

// The simulator's null packet protection never runs on a real socket:
// Listen, ListenUDP and Dial refuse a configuration that asks for it.
func TestSimNullProtectionRefused(t *testing.T) {
	cert, err := certs.SelfSigned(certs.Options{Ed25519: true})
	if err != nil {
		t.Fatal(err)
	}
	scfg := &Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"t"}}, SimNullProtection: true}
	if l, err := Listen("127.0.0.1:0", scfg); err == nil {
		l.Close()
		t.Fatal("Listen accepted SimNullProtection")
	} else if !errors.Is(err, errSimNullProtection) {
		t.Fatalf("Listen: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ccfg := &Config{TLS: &tls.Config{RootCAs: certs.Pool(cert), ServerName: "localhost", NextProtos: []string{"t"}}, SimNullProtection: true}
	if c, err := Dial(ctx, "127.0.0.1:9", ccfg); err == nil {
		c.CloseWithError(0, "")
		t.Fatal("Dial accepted SimNullProtection")
	} else if !errors.Is(err, errSimNullProtection) {
		t.Fatalf("Dial: %v", err)
	}
}
