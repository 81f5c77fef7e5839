package netsim

import (
	"net/netip"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

// bulk runs a saturated download over paths for d of virtual time: the
// server writes as fast as its stream admits, the client reads everything.
// It returns the bytes the client read.
func bulk(tb testing.TB, seed uint64, paths []PathSpec, d time.Duration) int {
	return bulkWith(tb, seed, paths, d, core.Config{})
}

// bulkWith is bulk with the server's transport options opts (TLS aside),
// e.g. its congestion controller; the client takes its SimNullProtection.
func bulkWith(tb testing.TB, seed uint64, paths []PathSpec, d time.Duration, opts core.Config) int {
	n, _ := bulkTopo(tb, seed, paths, d, opts)
	return n
}

// bulkTopo is bulkWith, also returning the topology (its links' counters).
func bulkTopo(tb testing.TB, seed uint64, paths []PathSpec, d time.Duration, opts core.Config) (int, *Topology) {
	return bulkParts(tb, seed, paths, d, opts, false)
}

// bulkParts is bulkTopo; with split, the client and the server run in two
// parts of the simulation, side by side (see Sim).
func bulkParts(tb testing.TB, seed uint64, paths []PathSpec, d time.Duration, opts core.Config, split bool) (int, *Topology) {
	sim := New(seed)
	// About 30,000 events per virtual second at 100 Mbit/s.
	sim.StepLimit = uint64(d.Seconds()*100_000*float64(len(paths))) + 100_000
	server := sim
	if split {
		server = sim.NewPart()
		sim.SetParallel(true)
	}
	topo, err := NewSplitTopology(sim, server, paths)
	if err != nil {
		tb.Fatal(err)
	}
	clientTLS, serverTLS, err := TLSConfigs(seed, "mpq-bench")
	if err != nil {
		tb.Fatal(err)
	}
	var saddrs, caddrs []netip.AddrPort
	for i := range paths {
		saddrs = append(saddrs, netip.AddrPortFrom(topo.Server[i], 4433))
		caddrs = append(caddrs, netip.AddrPortFrom(topo.Client[i], 50000))
	}
	saddr, caddr := saddrs[0], caddrs[0]
	chunk := make([]byte, 64<<10)
	serve := func(c *Conn) {
		var s *core.Stream
		c.OnEvent = func(e core.Event) {
			if e.Kind == core.EventStreamIncoming {
				s = c.AcceptStream()
			}
			if s == nil {
				return
			}
			for {
				n, err := s.Write(chunk)
				if err != nil || n < len(chunk) {
					break
				}
			}
			c.Kick()
		}
	}
	scfg := opts
	scfg.TLS = serverTLS
	ccfg := core.Config{TLS: clientTLS, SimNullProtection: opts.SimNullProtection}
	if _, err := NewNode(topo.Net, saddrs, &scfg, serve); err != nil {
		tb.Fatal(err)
	}
	client, err := NewNode(topo.Net, caddrs, nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := client.Dial(&ccfg, caddr, saddr)
	if err != nil {
		tb.Fatal(err)
	}
	received := 0
	buf := make([]byte, 64<<10)
	var s *core.Stream
	added := 1
	c.OnEvent = func(e core.Event) {
		// Open the other paths as soon as the server's connection IDs
		// for them are there.
		for added < len(paths) && c.HandshakeComplete() {
			if _, err := c.AddPath(caddrs[added], saddrs[added]); err != nil {
				break
			}
			added++
		}
		switch e.Kind {
		case core.EventHandshakeDone:
			s, _ = c.OpenStream(true)
			s.Write([]byte("go"))
			s.WaitingRead()
		case core.EventStreamReadable:
			for {
				n, err := s.Read(buf)
				received += n
				if n == 0 || err != nil {
					break
				}
			}
		}
		c.Kick()
	}
	sim.RunUntil(Epoch.Add(d))
	if sim.Exhausted() {
		tb.Fatalf("step limit reached at %v", sim.Elapsed())
	}
	return received, topo
}

// BenchmarkSimSpeed reports simulated seconds per wall-clock second
// (sim-s/s) for a saturated download over one and over two 100 Mbit/s paths
// (multipath) with a 50 ms round trip (25 ms each way, one-BDP queues, no
// random loss), 10 s of virtual time per iteration, and the same per second
// of the process's CPU time (sim-s/cpu-s, which GC threads on the second
// core lower, but other load on a shared machine does not). The "-null"
// runs use the simulator's null packet protection
// (core.Config.SimNullProtection, what mpq run uses in the simulator), the
// others AES-128-GCM; "-2parts" runs the client and the server in two
// parts of the simulation, side by side on two CPUs (the same results):
//
//	go test ./network/netsim -run '^$' -bench SimSpeed -benchtime 3x
func BenchmarkSimSpeed(b *testing.B) {
	link := Symmetric(LinkConfig{Rate: 100e6, Delay: 25 * time.Millisecond})
	one, two := []PathSpec{link}, []PathSpec{link, link}
	null := core.Config{SimNullProtection: true}
	b.Run("1x100Mbit", func(b *testing.B) { simSpeed(b, one, core.Config{}) })
	b.Run("1x100Mbit-null", func(b *testing.B) { simSpeed(b, one, null) })
	b.Run("2x100Mbit", func(b *testing.B) { simSpeed(b, two, core.Config{}) })
	b.Run("2x100Mbit-null", func(b *testing.B) { simSpeed(b, two, null) })
	b.Run("2x100Mbit-null-2parts", func(b *testing.B) { simSpeedParts(b, two, null, true) })
}

func simSpeed(b *testing.B, paths []PathSpec, opts core.Config) { simSpeedParts(b, paths, opts, false) }

// simSpeedParts is simSpeed; with split, the ends run in two parts side
// by side (the "-2parts" runs: the same run, on two CPUs).
func simSpeedParts(b *testing.B, paths []PathSpec, opts core.Config, split bool) {
	const d = 10 * time.Second
	total := 0
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		n, _ := bulkParts(b, uint64(i+1), paths, d, opts, split)
		total += n
	}
	cpu = cpuTime() - cpu
	virtual := float64(b.N) * d.Seconds()
	b.ReportMetric(virtual/b.Elapsed().Seconds(), "sim-s/s")
	if cpu > 0 {
		b.ReportMetric(virtual/cpu.Seconds(), "sim-s/cpu-s")
	}
	b.ReportMetric(float64(total)*8/virtual/1e6, "Mbit/s")
}

// The bulk transfer of the benchmark fills the path.
func TestBulkSaturates(t *testing.T) {
	paths := []PathSpec{Symmetric(LinkConfig{Rate: 100e6, Delay: 25 * time.Millisecond})}
	got := bulk(t, 1, paths, 3*time.Second)
	// 3 s at 100 Mbit/s are 37.5 MB; slow start costs the first ~0.5 s
	// and QUIC framing a few percent.
	if got < 25_000_000 || got > 37_500_000 {
		t.Errorf("read %d bytes in 3 s", got)
	}
	t.Logf("%.1f Mbit/s over 3 s", float64(got)*8/3/1e6)
	// Over two paths it fills both.
	link := Symmetric(LinkConfig{Rate: 100e6, Delay: 25 * time.Millisecond})
	got = bulk(t, 1, []PathSpec{link, link}, 3*time.Second)
	if got < 50_000_000 || got > 75_000_000 {
		t.Errorf("read %d bytes in 3 s over two paths", got)
	}
	t.Logf("%.1f Mbit/s over 3 s and two paths", float64(got)*8/3/1e6)
}

// BenchmarkLinkHotPath measures one packet offered to a 100 Mbit/s link
// with delay, jitter and Bernoulli loss, and its arrival event run: the
// simulator's share of the link model's hot path, which allocates
// nothing.
//
//	go test ./network/netsim -run '^$' -bench LinkHotPath
func BenchmarkLinkHotPath(b *testing.B) {
	sim := New(1)
	n := 0
	l, err := NewLink(sim, "bench", LinkConfig{Rate: 100e6, Delay: 25 * time.Millisecond, Jitter: time.Millisecond, Loss: Bernoulli{P: 0.001}}, func(*Packet) { n++ })
	if err != nil {
		b.Fatal(err)
	}
	p := &Packet{Data: make([]byte, 1350)}
	b.ReportAllocs()
	for b.Loop() {
		l.Send(p)
		sim.RunFor(120 * time.Microsecond)
	}
}
