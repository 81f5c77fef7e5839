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
	if topo.Net.Unroutable != 2 || traced != 5 {
		t.Errorf("unroutable %d traced %d, want 2 and 5", topo.Net.Unroutable, traced)
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
