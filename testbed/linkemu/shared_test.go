package linkemu

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

// Two paths through one shared bottleneck: every datagram of both paths
// passes the bottleneck's pipe after its own path's, and still reaches
// the server from its own path's back socket (and the client from its
// own front socket); the bottleneck's queue of 20 datagrams, which a
// burst of both paths overflows, drops where the paths' own queues do
// not.
func TestEmulatorSharedBottleneck(t *testing.T) {
	own := experiment.Link{Rate: 100e6, Delay: time.Millisecond, QueueBytes: 1 << 20}
	bn := experiment.Bottleneck{Name: "b", Link: experiment.Link{Rate: 1e6, Delay: time.Millisecond, QueueBytes: 20 * 500}}
	paths := []experiment.Path{{Up: own, Down: own, Bottleneck: "b"}, {Up: own, Down: own, Bottleneck: "b"}}
	server := udp(t, "127.0.0.1:0")
	client := udp(t, "127.0.0.1:0")
	e := start(t, Config{Paths: paths, Bottlenecks: []experiment.Bottleneck{bn}, Server: addrOf(server), Seed: 1})
	const n = 40
	for range n {
		for p := range 2 {
			b := make([]byte, 500)
			binary.BigEndian.PutUint32(b, uint32(p))
			if _, err := client.WriteToUDPAddrPort(b, e.Front(p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, from := recvAll(t, server, 2*n, 300*time.Millisecond)
	if len(got) == 0 || len(got) >= 2*n {
		t.Fatalf("%d of %d datagrams through a queue of 20", len(got), 2*n)
	}
	for i, b := range got {
		if p := binary.BigEndian.Uint32(b); from[i] != e.Back(int(p)) {
			t.Errorf("a datagram of path %d came from %v, want %v", p, from[i], e.Back(int(p)))
		}
	}
	for p := range 2 {
		if _, err := server.WriteToUDPAddrPort(make([]byte, 100), e.Back(p)); err != nil {
			t.Fatal(err)
		}
		_, dfrom := recvAll(t, client, 1, time.Second)
		if len(dfrom) != 1 || dfrom[0] != e.Front(p) {
			t.Errorf("path %d down: from %v, want %v", p, dfrom, e.Front(p))
		}
	}
	e.Close()
	st := e.Stats()
	if len(st) != 3 || st[2].Bottleneck != "b" {
		t.Fatalf("stats %+v", st)
	}
	b := st[2]
	if b.Up.Sent != 2*n || b.Up.Delivered != uint64(len(got)) || b.Up.DroppedQueue != 2*n-uint64(len(got)) || b.Down.Delivered != 2 {
		t.Errorf("bottleneck %+v", b)
	}
	for p := range 2 {
		if s := st[p].Up; s.Sent != n || s.Delivered != n || s.DroppedQueue != 0 {
			t.Errorf("path %d up %+v", p, s)
		}
	}
}
