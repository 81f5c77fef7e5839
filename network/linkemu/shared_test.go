package linkemu

import (
	"encoding/binary"
	"net"
	"net/netip"
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

// A flow beside a path's own ends: its datagrams reach its own server
// from its own back socket, the answers its own client from its front
// socket, and they take the path's links (counted there).
func TestEmulatorFlow(t *testing.T) {
	link := experiment.Link{Rate: 50e6, Delay: time.Millisecond, QueueBytes: 1 << 20}
	server := udp(t, "127.0.0.1:0")
	flowServer := udp(t, "127.0.0.1:0")
	client := udp(t, "127.0.0.1:0")
	flowClient := udp(t, "127.0.0.1:0")
	e := start(t, Config{Paths: []experiment.Path{{Up: link, Down: link}}, Flows: []Flow{{Path: 0, Server: addrOf(flowServer)}},
		Server: addrOf(server), Seed: 1})
	if e.FlowFront(0) == e.Front(0) || e.FlowBack(0) == e.Back(0) {
		t.Fatal("the flow shares the path's sockets")
	}
	send := func(c *net.UDPConn, to netip.AddrPort, tag byte) {
		t.Helper()
		if _, err := c.WriteToUDPAddrPort([]byte{tag}, to); err != nil {
			t.Fatal(err)
		}
	}
	send(client, e.Front(0), 'a')
	send(flowClient, e.FlowFront(0), 'b')
	for _, x := range []struct {
		srv  *net.UDPConn
		tag  byte
		from netip.AddrPort
	}{{server, 'a', e.Back(0)}, {flowServer, 'b', e.FlowBack(0)}} {
		got, from := recvAll(t, x.srv, 1, time.Second)
		if len(got) != 1 || got[0][0] != x.tag || from[0] != x.from {
			t.Errorf("server of %c got %q from %v, want it from %v", x.tag, got, from, x.from)
		}
	}
	send(flowServer, e.FlowBack(0), 'B')
	send(server, e.Back(0), 'A')
	for _, x := range []struct {
		c    *net.UDPConn
		tag  byte
		from netip.AddrPort
	}{{client, 'A', e.Front(0)}, {flowClient, 'B', e.FlowFront(0)}} {
		got, from := recvAll(t, x.c, 1, time.Second)
		if len(got) != 1 || got[0][0] != x.tag || from[0] != x.from {
			t.Errorf("client of %c got %q from %v, want it from %v", x.tag, got, from, x.from)
		}
	}
	e.Close()
	if s := e.Stats()[0]; s.Up.Delivered != 2 || s.Down.Delivered != 2 {
		t.Errorf("path counters %+v", s)
	}
}
