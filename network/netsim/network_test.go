package netsim

import (
	"net/netip"
	"testing"
	"time"
)

// Each path of a topology is one address pair with its own two links, each
// direction configured on its own; nothing crosses between paths.
func TestTopologyPaths(t *testing.T) {
	sim := New(1)
	specs := []PathSpec{
		{Up: LinkConfig{Rate: 8e6, Delay: 10 * time.Millisecond}, Down: LinkConfig{Rate: 80e6, Delay: 20 * time.Millisecond}},
		{Up: LinkConfig{Rate: 1e6, Delay: 30 * time.Millisecond}, Down: LinkConfig{Delay: 5 * time.Millisecond}},
	}
	topo, err := NewTopology(sim, specs)
	if err != nil {
		t.Fatal(err)
	}
	type arrival struct {
		to, from netip.AddrPort
		at       time.Duration
	}
	var got []arrival
	bind := func(a netip.AddrPort) {
		if err := topo.Net.Bind(a, func(p *Packet) { got = append(got, arrival{p.Dst, p.Src, sim.Elapsed()}) }); err != nil {
			t.Fatal(err)
		}
	}
	var cs, ss []netip.AddrPort
	for i := range specs {
		cs = append(cs, netip.AddrPortFrom(topo.Client[i], 1000))
		ss = append(ss, netip.AddrPortFrom(topo.Server[i], 443))
		bind(cs[i])
		bind(ss[i])
	}
	if err := topo.Net.Bind(cs[0], nil); err == nil {
		t.Error("double bind accepted")
	}
	var traced int
	topo.Net.AddTracer(&Tracer{Deliver: func(*Link, *Packet) { traced++ }})
	const size = 1000 // 8000 bits
	send := func(from, to netip.AddrPort) { topo.Net.Send(from, to, topo.Net.Buffer(size)) }
	send(cs[0], ss[0])
	send(ss[0], cs[0])
	send(cs[1], ss[1])
	send(ss[1], cs[1])
	send(cs[0], ss[1]) // no link between paths
	send(cs[0], netip.AddrPortFrom(topo.Server[0], 444))
	drain(t, sim, 100)
	want := []arrival{
		{cs[1], ss[1], 5 * time.Millisecond},
		{ss[0], cs[0], 11 * time.Millisecond},
		{cs[0], ss[0], 20*time.Millisecond + 100*time.Microsecond},
		{ss[1], cs[1], 38 * time.Millisecond},
	}
	if len(got) != len(want) {
		t.Fatalf("arrivals %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("arrival %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if topo.Net.Unroutable() != 2 || traced != 5 {
		t.Errorf("unroutable %d traced %d, want 2 and 5", topo.Net.Unroutable(), traced)
	}
	if len(topo.Net.Links()) != 4 || topo.Up[1].Name != "path1/up" || topo.Down[0].Config().Rate != 80e6 {
		t.Errorf("links %v", topo.Net.Links())
	}
}

func TestTopologyBad(t *testing.T) {
	sim := New(1)
	for _, specs := range [][]PathSpec{nil, make([]PathSpec, 251), {{Up: LinkConfig{Rate: -1}}}} {
		if _, err := NewTopology(sim, specs); err == nil {
			t.Errorf("%d paths accepted", len(specs))
		}
	}
}

// Packets take the link of their address pair and reach the socket of
// their destination, for more pairs and sockets than the network caches
// (maxCached), used in turns, with unroutable ones counted.
func TestNetworkRoutesManyPairs(t *testing.T) {
	sim := New(1)
	n := NewNetwork(sim)
	const pairs = 2*maxCached + 3
	src := make([]netip.AddrPort, pairs)
	dst := make([]netip.AddrPort, pairs)
	links := make([]*Link, pairs)
	got := make([]int, pairs)
	for i := range pairs {
		src[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), 1000)
		dst[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), 443)
		l, err := n.Connect("l", src[i].Addr(), dst[i].Addr(), LinkConfig{Delay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		links[i] = l
		if err := n.Bind(dst[i], func(*Packet) { got[i]++ }); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		for i := range pairs {
			// Pair i, i+1 times per round, in turns with the others.
			for range i%3 + 1 {
				n.Send(src[i], dst[i], n.Buffer(100))
			}
		}
		// Between two addresses with no link, and to an address with
		// a link but no socket.
		n.Send(src[0], dst[1], n.Buffer(100))
		n.Send(src[round], netip.AddrPortFrom(dst[round].Addr(), 1), n.Buffer(100))
		sim.RunFor(10 * time.Millisecond)
	}
	for i := range pairs {
		want := 3 * (i%3 + 1)
		if got[i] != want || int(links[i].Delivered) < want {
			t.Errorf("pair %d: socket got %d, link delivered %d; want %d", i, got[i], links[i].Delivered, want)
		}
	}
	if n.Unroutable() != 6 {
		t.Errorf("unroutable %d, want 6", n.Unroutable())
	}
}

// TestSparePool: with two parts, the buffers a part recycles beyond its
// share go to the network's spare ones a batch at a time, and a part
// that has none left takes a batch from there (a bulk sender's buffers
// come back from its receiver).
func TestSparePool(t *testing.T) {
	sim := New(1)
	sim.NewPart()
	n := NewNetwork(sim)
	give, take := n.parts[0], n.parts[1]
	for i := range giveAt {
		b := make([]byte, 1, 2048)
		b[0] = byte(i)
		give.recycle(b)
	}
	if len(give.free) != spareBatch || len(n.spare) != spareBatch {
		t.Fatalf("after %d recycled: part %d, spare %d; want %d and %d", giveAt, len(give.free), len(n.spare), spareBatch, spareBatch)
	}
	b := take.buffer(100)
	if len(b) != 100 || cap(b) != 2048 {
		t.Fatalf("taken buffer len %d cap %d, want a recycled one", len(b), cap(b))
	}
	if b[0] != byte(giveAt-1) {
		t.Fatalf("taken buffer is the %dth recycled, want the newest (%d)", b[0], giveAt-1)
	}
	if len(n.spare) != 0 || len(take.free) != spareBatch-1 {
		t.Fatalf("after the take: spare %d, part %d; want 0 and %d", len(n.spare), len(take.free), spareBatch-1)
	}
	for _, s := range n.spare[:cap(n.spare)] {
		if s != nil {
			t.Fatal("the spare array still refers to a buffer it gave away")
		}
	}
	// Bounded when nobody takes: the part keeps its share, the spare ones
	// about as many.
	for range 4 * n.maxFree {
		give.recycle(make([]byte, 1, 2048))
	}
	if len(give.free) > n.maxFree || len(n.spare) >= n.maxFree+spareBatch {
		t.Fatalf("after many recycled: part %d, spare %d; want at most %d and %d", len(give.free), len(n.spare), n.maxFree, n.maxFree+spareBatch-1)
	}
}
