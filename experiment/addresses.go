package experiment

import (
	"fmt"
	"net/netip"
)

// Addresses of the namespace testbed (backend "netns"): path i joins the
// client's address ClientAddr and the server's ServerAddr, two addresses
// of one subnet. By default they are those of the simulator's topology,
// 10.i.0.1/24 and 10.i.0.2/24, which exist only inside the namespaces the
// testbed creates. The other backends ignore them.

// DefaultClientAddr and DefaultServerAddr are path i's default addresses.
func DefaultClientAddr(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 1}), 24)
}

// DefaultServerAddr is path i's default server address (see DefaultClientAddr).
func DefaultServerAddr(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 2}), 24)
}

// Addrs returns path i's client and server addresses, the defaults unless
// the path sets client_address and server_address.
func (e *Experiment) Addrs(i int) (client, server netip.Prefix) {
	p := e.Paths[i]
	if p.ClientAddr.IsValid() {
		return p.ClientAddr, p.ServerAddr
	}
	return DefaultClientAddr(i), DefaultServerAddr(i)
}

// readAddrs reads a path's client_address and server_address: both or
// neither, addresses with a prefix length ("192.168.7.1/24") in one
// subnet.
func readAddrs(t *table, p *Path) {
	read := func(key string) netip.Prefix {
		v, ok := t.get(key)
		if !ok {
			return netip.Prefix{}
		}
		s, ok := v.(string)
		if !ok {
			t.fail(key, "want an address with its prefix length, e.g. \"10.0.0.1/24\", got %v", v)
			return netip.Prefix{}
		}
		a, err := netip.ParsePrefix(s)
		if err != nil || a.Addr().Zone() != "" {
			t.fail(key, "bad address %q (want an address with its prefix length, e.g. \"10.0.0.1/24\")", s)
			return netip.Prefix{}
		}
		return a
	}
	c, s := read("client_address"), read("server_address")
	switch {
	case !c.IsValid() && !s.IsValid():
		return
	case !c.IsValid():
		t.fail("server_address", "give client_address too")
	case !s.IsValid():
		t.fail("client_address", "give server_address too")
	case c.Addr().Is4() != s.Addr().Is4() || c.Bits() != s.Bits() || c.Masked() != s.Masked():
		t.fail("server_address", "%v and client_address %v are not in one subnet", s, c)
	case c.Addr() == s.Addr():
		t.fail("server_address", "%v is the client's address too", s.Addr())
	case c.Addr() == c.Masked().Addr() || s.Addr() == s.Masked().Addr():
		t.fail("client_address", "an address of the subnet %v, not the subnet itself", c.Masked())
	default:
		p.ClientAddr, p.ServerAddr = c, s
	}
}

// checkAddrs reports paths whose subnets overlap: each path must be a
// subnet of its own so that routing tells the paths apart.
func checkAddrs(root *table, e *Experiment) {
	for i := range e.Paths {
		ci, _ := e.Addrs(i)
		for j := range i {
			cj, _ := e.Addrs(j)
			if ci.Masked().Overlaps(cj.Masked()) {
				root.fail("path", "paths %d and %d have overlapping subnets %v and %v (set client_address and server_address)",
					j, i, cj.Masked(), ci.Masked())
			}
		}
	}
}

// writeAddrs writes a path's addresses if it set them.
func writeAddrs(w func(key, v string), p Path) {
	if p.ClientAddr.IsValid() {
		w("client_address", fmt.Sprintf("%q", p.ClientAddr.String()))
		w("server_address", fmt.Sprintf("%q", p.ServerAddr.String()))
	}
}
