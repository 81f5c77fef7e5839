package mpquic_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic"
)

// TestMultipathLoopback opens a second path from another loopback address
// and downloads the 20 MB file over both paths of real UDP sockets.
func TestMultipathLoopback(t *testing.T) {
	f := getFiles(t)
	addr := mpquicServer(t, nil)
	ctx := ctxT(t, 60*time.Second)
	c, err := mpquic.DialWithOptions(ctx, addr.String(), &mpquic.Config{TLS: clientTLS(t)}, mpquic.DialOptions{LocalAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.MultipathEnabled() {
		t.Fatal("multipath not negotiated")
	}
	id, err := c.AddPath(ctx, "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	if id != 1 {
		t.Fatalf("new path has ID %d", id)
	}
	got, err := mpquicClient{c}.get(ctx, "/big")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), f.big) {
		t.Fatalf("received %d bytes, content differs", got.Len())
	}
	ps := c.Paths()
	if len(ps) != 2 {
		t.Fatalf("%d paths", len(ps))
	}
	for _, p := range ps {
		t.Logf("path %d %v->%v: received %d bytes, srtt %v, state %s", p.ID, p.Local, p.Remote, p.BytesReceived, p.SmoothedRTT, p.State)
		// The split depends on the RTT each path measures, which a
		// loaded machine disturbs: ask only that both carry data.
		if p.BytesReceived < 256<<10 {
			t.Errorf("path %d received only %d bytes", p.ID, p.BytesReceived)
		}
	}
}
