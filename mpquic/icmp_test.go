package mpquic_test

import (
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
)

// closedPort returns a loopback UDP address nobody listens on: the kernel
// answers datagrams to it with ICMP port unreachable.
func closedPort(t *testing.T) string {
	t.Helper()
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := uc.LocalAddr().String()
	uc.Close()
	return addr
}

// A dial to a port nobody listens on fails within a second, on the ICMP
// port unreachable error, rather than after the handshake timeout.
func TestDialClosedPortFailsFast(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ICMP errors are read on Linux only")
	}
	ctx := ctxT(t, 5*time.Second)
	start := time.Now()
	c, err := mpquic.Dial(ctx, closedPort(t), &mpquic.Config{TLS: clientTLS(t)})
	took := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("dial succeeded")
	}
	if !errors.Is(err, core.ErrUnreachable) || took > time.Second {
		t.Fatalf("dial failed after %v with %v, want %v within a second", took, err, core.ErrUnreachable)
	}
	t.Logf("dial failed after %v: %v", took, err)
}

// A path whose peer address answers with nothing but ICMP port
// unreachable is abandoned at once, and the connection carries on
// over the other path; validating a path to a closed port fails at once.
func TestUnreachablePathFails(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ICMP errors are read on Linux only")
	}
	f := getFiles(t)
	srv := mpquicServer(t, nil)
	ctx := ctxT(t, 30*time.Second)
	c, err := mpquic.DialWithOptions(ctx, srv.String(), &mpquic.Config{TLS: clientTLS(t)}, mpquic.DialOptions{LocalAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Validating a path to a closed port: fails on the first error.
	start := time.Now()
	if _, err := c.AddPathTo(ctx, "127.0.0.1:0", closedPort(t)); !errors.Is(err, mpquic.ErrPathFailed) || time.Since(start) > time.Second {
		t.Fatalf("path to a closed port: %v after %v", err, time.Since(start))
	}

	// A validated path through a relay that then goes away.
	r := newRelay(t, srv, 0, 0, 1)
	id, err := c.AddPathTo(ctx, "127.0.0.2:0", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	r.conn.Close()
	gone := time.Now()
	got, err := mpquicClient{c}.get(ctx, "/small/5")
	if err != nil {
		t.Fatal(err)
	}
	checkDownload(t, "small/5", got, f.small[5])
	// Keep traffic going until the dead path is given up: within two
	// seconds (about 80 ms measured; without the ICMP errors it takes
	// about three).
	deadline := gone.Add(2 * time.Second)
	for {
		state := ""
		for _, p := range c.Paths() {
			if p.ID == id {
				state = p.State
			}
		}
		if state == "" || state == "closing" {
			t.Logf("path %d given up %v after its peer went away", id, time.Since(gone))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("path %d still %s %v after its peer went away", id, state, time.Since(gone))
		}
		if _, err := (mpquicClient{c}).get(ctx, "/small/6"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Err(); err != nil {
		t.Fatalf("connection closed: %v", err)
	}
	got, err = mpquicClient{c}.get(ctx, "/small/7")
	if err != nil {
		t.Fatal(err)
	}
	checkDownload(t, "small/7", got, f.small[7])
}
