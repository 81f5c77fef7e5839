package mpquic

import (
	"crypto/tls"
	"net/netip"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

// TestFlushReturnsBatch: a connection takes its send batch from the pool
// shared by all connections and gives it back after the flush, its
// datagram buffers with it, instead of holding them while it waits.
func TestFlushReturnsBatch(t *testing.T) {
	const sendSize = 1500
	local, remote := netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2")
	// sync.Pool may drop what is put (it does at random under the race
	// detector): a few tries.
	for try := range 20 {
		cc, err := core.NewClientConn(&core.Config{TLS: &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"}}, local, remote, "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		c := newDriverConn(cc, sendSize, nil) // no socket: nothing is written
		c.flush()
		cc.Close(0, "")
		cc.HandleTimeout(time.Now().Add(time.Hour)) // ends its TLS goroutine
		if b := sendBatches.Get().(*sendBatch); cap(b.bufs[0]) >= sendSize {
			t.Logf("the flush's batch back in the pool after %d tries", try+1)
			return
		}
	}
	t.Fatal("no batch a flush used came back to the pool")
}
