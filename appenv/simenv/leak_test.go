package simenv

import (
	"net/netip"
	"testing"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/internal/echo"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/network/netsim"
)

// Streams are forgotten once the application is done with both
// directions, so that long runs with many streams do not accumulate them.
func TestStreamsForgotten(t *testing.T) {
	sim := netsim.New(1)
	sim.StepLimit = 1_000_000
	topo, err := netsim.NewTopology(sim, []netsim.PathSpec{netsim.Symmetric(netsim.LinkConfig{Rate: 10e6, Delay: time.Millisecond})})
	if err != nil {
		t.Fatal(err)
	}
	ctls, stls, err := netsim.TLSConfigs(1, "echo")
	if err != nil {
		t.Fatal(err)
	}
	saddr := netip.AddrPortFrom(topo.Server[0], 443)
	server, err := New(topo.Net, Config{Addrs: []netip.AddrPort{saddr}, Server: &core.Config{TLS: stls}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := New(topo.Net, Config{Addrs: []netip.AddrPort{netip.AddrPortFrom(topo.Client[0], 1)}, Client: &core.Config{TLS: ctls}})
	if err != nil {
		t.Fatal(err)
	}
	var sconn *conn
	l, err := echo.Serve(server, saddr.String())
	if err != nil {
		t.Fatal(err)
	}
	accept := server.listeners[saddr].accept
	server.listeners[saddr].accept = func(c appenv.Conn) {
		sconn = c.(*conn)
		accept(c)
	}
	defer l.Close()
	var cconn *conn
	client.Dial(saddr.String(), func(c appenv.Conn, err error) { cconn, _ = c.(*conn) })
	sim.RunFor(100 * time.Millisecond)
	if cconn == nil || sconn == nil {
		t.Fatal("no connection")
	}
	// 300 exchanges, three times the peer's stream limit.
	for i := range 300 {
		s, err := cconn.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		s.Write([]byte{byte(i)})
		s.Close()
		s.OnReadable(func() {
			var b [10]byte
			for {
				n, err := s.Read(b[:])
				if n == 0 || err != nil {
					return
				}
			}
		})
		sim.RunFor(5 * time.Millisecond)
	}
	sim.RunFor(time.Second)
	if sim.Exhausted() {
		t.Fatal("step limit reached")
	}
	if len(cconn.streams) != 0 || len(sconn.streams) != 0 {
		t.Errorf("%d client and %d server streams remembered", len(cconn.streams), len(sconn.streams))
	}
}
