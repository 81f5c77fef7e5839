package scheduler_test

import (
	"errors"
	"io"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/network/netsim"
	"github.com/mpq/mpq/scheduler"
)

// e2eResult is what one run over the simulator measured.
type e2eResult struct {
	mct          []time.Duration // per priority message, in generation order
	bulkDone     bool
	bytesPerPath []uint64 // sent by the server
	missed       uint64
	err          error
}

// runE2E runs a server sending bulk background data and periodic priority
// messages (one stream each, as the paper's stream selector does) to a
// client over two simulated paths, with the named path scheduler and
// priority-fifo, and returns the message completion times.
func runE2E(t *testing.T, sched string, loss float64) e2eResult {
	t.Helper()
	return runE2EWith(t, sched, "", loss)
}

// runE2EWith is runE2E with the server's congestion controller named
// ("" for the default).
func runE2EWith(t *testing.T, sched, cc string, loss float64) e2eResult {
	t.Helper()
	const (
		msgSize  = 10000
		interval = 100 * time.Millisecond
		messages = 15
		bulk     = 12 << 20
	)
	// Certificates valid at the simulation's virtual start date.
	ctls, stls, err := netsim.TLSConfigs(7, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	sim := netsim.New(7)
	link := netsim.LinkConfig{Rate: 20e6, Delay: 25 * time.Millisecond}
	if loss > 0 {
		link.Loss = netsim.Bernoulli{P: loss}
	}
	topo, err := netsim.NewTopology(sim, []netsim.PathSpec{netsim.Symmetric(link), netsim.Symmetric(link)})
	if err != nil {
		t.Fatal(err)
	}
	addr := func(a netip.Addr, port uint16) netip.AddrPort { return netip.AddrPortFrom(a, port) }
	scfg := &core.Config{
		TLS:             stls,
		PathScheduler:   sched,
		StreamScheduler: "priority-fifo",
		Congestion:      cc,
	}
	ccfg := &core.Config{
		TLS: ctls,
	}
	var server *netsim.Conn
	_, err = netsim.NewNode(topo.Net, []netip.AddrPort{addr(topo.Server[0], 4433), addr(topo.Server[1], 4433)}, scfg,
		func(c *netsim.Conn) { server = c })
	if err != nil {
		t.Fatal(err)
	}
	cnode, err := netsim.NewNode(topo.Net, []netip.AddrPort{addr(topo.Client[0], 5000), addr(topo.Client[1], 5000)}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	client, err := cnode.Dial(ccfg, addr(topo.Client[0], 5000), addr(topo.Server[0], 4433))
	if err != nil {
		t.Fatal(err)
	}
	// Client: open the second path, read every stream to its end.
	validated, added := false, false
	generated := map[uint64]time.Time{}
	var res e2eResult
	var order []uint64
	readers := map[uint64]*core.Stream{}
	bulkGot := 0
	buf := make([]byte, 64<<10)
	client.OnEvent = func(e core.Event) {
		if e.Kind == core.EventPathValidated {
			validated = true
		}
		if !added && client.HandshakeComplete() {
			// The peer's connection IDs for path 1 may come after
			// the handshake: try again on later events.
			_, err := client.AddPath(addr(topo.Client[1], 5000), addr(topo.Server[1], 4433))
			added = err == nil
			if err != nil && !errors.Is(err, core.ErrNoPathCIDs) {
				res.err = err
			}
		}
		for s := client.AcceptStream(); s != nil; s = client.AcceptStream() {
			readers[s.ID()] = s
		}
		// In stream order: the run stays deterministic.
		for _, id := range slices.Sorted(maps.Keys(readers)) {
			s := readers[id]
			for {
				n, err := s.Read(buf)
				if _, ok := generated[id]; !ok {
					bulkGot += n
				}
				if errors.Is(err, io.EOF) {
					delete(readers, id)
					if gen, ok := generated[id]; ok {
						res.mct[slices.Index(order, id)] = sim.Now().Sub(gen)
					} else if bulkGot == bulk {
						res.bulkDone = true
					}
					break
				}
				if n == 0 || err != nil {
					break
				}
			}
		}
	}
	if !sim.RunWhile(func() bool { return !validated || server == nil }, sim.Now().Add(5*time.Second)) {
		t.Fatalf("%s: second path not validated (%v)", sched, res.err)
	}
	sim.RunFor(200 * time.Millisecond)
	// Server: bulk data on one stream, a message every interval.
	bg, err := server.OpenStream(false)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, bulk)
	written := 0
	writeBulk := func() {
		if written < bulk {
			n, _ := bg.Write(data[written:])
			written += n
			if written == bulk {
				bg.Close()
			}
			server.Kick()
		}
	}
	server.OnEvent = func(core.Event) { writeBulk() }
	writeBulk()
	first := sim.Now().Add(interval)
	server.AnnounceSource(scheduler.Source{ID: 1, Size: msgSize, Interval: interval, Next: first})
	res.mct = make([]time.Duration, messages)
	for k := range messages {
		sim.At(first.Add(time.Duration(k)*interval), func() {
			s, err := server.OpenStream(false)
			if err != nil {
				res.err = err
				return
			}
			s.SetPriority(true)
			generated[s.ID()] = sim.Now()
			order = append(order, s.ID())
			if n, err := s.Write(make([]byte, msgSize)); n != msgSize || err != nil {
				res.err = errors.Join(errors.New("short message write"), err)
			}
			s.Close()
			server.Kick()
		})
	}
	sim.RunFor(time.Duration(messages+40) * interval)
	if err := server.Err(); err != nil {
		res.err = errors.Join(res.err, err)
	}
	for _, ps := range server.Paths() {
		res.bytesPerPath = append(res.bytesPerPath, ps.BytesSent)
		res.missed += ps.SchedulerCounters[scheduler.CounterReservationsMissed]
	}
	return res
}

// TestEndToEnd is a smoke test of every path scheduler inside the
// transport core, unchanged, on the simulator (two 20 Mbit/s paths of 50 ms
// RTT, bulk data and a 10 kB priority message every 100 ms): every message
// and the bulk data arrive and the connection stays up. The message
// completion times and the reservations missed are logged, not asserted:
// the comparison of the schedulers is the experiments' job.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	for _, sched := range []string{"lowrtt", "cwr", "cwr-red", "sr", "redundant", "ecf", "blest"} {
		t.Run(sched, func(t *testing.T) {
			res := runE2E(t, sched, 0)
			if res.err != nil {
				t.Fatal(res.err)
			}
			sorted := slices.Clone(res.mct)
			slices.Sort(sorted)
			t.Logf("%s: MCT min %v median %v max %v; bytes per path %v; reservations missed %d",
				sched, sorted[0], sorted[len(sorted)/2], sorted[len(sorted)-1], res.bytesPerPath, res.missed)
			for i, d := range res.mct {
				if d == 0 {
					t.Fatalf("message %d not delivered", i)
				}
			}
			if !res.bulkDone {
				t.Fatal("bulk data not delivered")
			}
		})
	}
}

// TestEndToEndControllers: the reservation schedulers, which read each
// path's window and bytes in flight, and lowrtt work unchanged with every
// congestion controller: every message and the bulk data arrive (with
// the drop-tail queues ending the loss-based controllers' slow start).
func TestEndToEndControllers(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	for _, cc := range congestion.Names() {
		for _, sched := range []string{"lowrtt", "cwr", "cwr-red"} {
			t.Run(cc+"/"+sched, func(t *testing.T) {
				res := runE2EWith(t, sched, cc, 0)
				if res.err != nil {
					t.Fatal(res.err)
				}
				for i, d := range res.mct {
					if d == 0 {
						t.Fatalf("message %d not delivered", i)
					}
				}
				if !res.bulkDone {
					t.Fatal("bulk data not delivered")
				}
				sorted := slices.Clone(res.mct)
				slices.Sort(sorted)
				t.Logf("MCT median %v max %v; bytes per path %v; reservations missed %d", sorted[len(sorted)/2], sorted[len(sorted)-1], res.bytesPerPath, res.missed)
			})
		}
	}
}
