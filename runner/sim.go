package runner

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/simenv"
	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/internal/qlogfile"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/network/linkmodel"
	"github.com/mpq/mpq/network/netsim"
	"github.com/mpq/mpq/trafficgen"
)

// Ports of the experiment's endpoints in the simulated network.
const (
	serverPort = 443
	clientPort = 4000
)

// runSim runs an experiment in the simulator: path i joins client address
// 10.i.0.1 and server address 10.i.0.2; the client connects over path 0
// and opens the other paths from its other addresses.
func runSim(ctx context.Context, e *experiment.Experiment, dir string, started time.Time) (*Result, error) {
	return simulate(ctx, e, dir, started, false)
}

// simulate is runSim; with split, each end records into a recorder of its
// own, as the ends of a two-host run do, and the results are their
// halves merged (the test of the merge: in the simulator, a split run
// must give the results of one recorder).
//
// An experiment whose ends share nothing but their paths (twoParts) runs
// its client and its server in two parts of the simulation, side by side
// on two CPUs where it can (SetSimParallel) and where that is faster than
// in turns on one, as measured while it runs (chooser); the results are
// the same either way, and each end then records into a recorder of its
// own.
func simulate(ctx context.Context, e *experiment.Experiment, dir string, started time.Time, split bool) (*Result, error) {
	sim := netsim.New(e.Seed)
	cpart, spart := sim, sim
	// viaJSON: the halves go through JSON as two processes' do (the
	// merge's test); two parts merge theirs as they are.
	viaJSON := split
	if simSplitEnds && twoParts(e) {
		spart = sim.NewPart()
		done, err := setParts(sim)
		if err != nil {
			return nil, err
		}
		defer done()
		split = true
	}
	specs := make([]netsim.PathSpec, len(e.Paths))
	steps := make([][2][]linkmodel.Step, len(e.Paths))
	for i, p := range e.Paths {
		up, upSteps, err := linkmodel.ForPath(p, experiment.DirectionUp)
		if err != nil {
			return nil, fmt.Errorf("path %d up: %w", i, err)
		}
		down, downSteps, err := linkmodel.ForPath(p, experiment.DirectionDown)
		if err != nil {
			return nil, fmt.Errorf("path %d down: %w", i, err)
		}
		specs[i] = netsim.PathSpec{Up: up, Down: down}
		steps[i] = [2][]linkmodel.Step{upSteps, downSteps}
	}
	topo, err := netsim.NewSplitTopology(cpart, spart, specs)
	if err != nil {
		return nil, err
	}
	if err := simBottlenecks(topo, e); err != nil {
		return nil, err
	}
	ctls, stls, err := netsim.TLSConfigs(e.Seed, "mpq-experiment")
	if err != nil {
		return nil, err
	}
	// The recorders exist from time zero, after the warm-up connection
	// of transport.zero_rtt (simWarmUp); that connection is recorded
	// nowhere.
	var t0 time.Time
	var rec, crec *trafficgen.Recorder
	var tickets *ticketCache
	scfg, ccfg := coreConfig(e), coreConfig(e)
	if e.Transport.ZeroRTT {
		tickets = newTicketCache()
		ctls.ClientSessionCache = tickets
	}
	scfg.TLS, ccfg.TLS = stls, ctls
	scfg.Observer = func(v string) core.Observer {
		if rec == nil {
			return nil
		}
		return rec.Observer(v)
	}
	ccfg.Observer = func(v string) core.Observer {
		if crec == nil {
			return nil
		}
		return crec.Observer(v)
	}
	qlogFailed := func() error { return nil }
	var traces *qlogfile.Dir
	if e.Output.Qlog {
		traces, qlogFailed = qlogDir(dir)
		create := func(vantage string, odcid []byte) io.WriteCloser {
			if rec == nil {
				return nil // the warm-up connection
			}
			return traces.Create(vantage, odcid)
		}
		scfg.Qlog, ccfg.Qlog = create, create
		// A run that fails or is interrupted leaves no trace open.
		defer traces.Close()
	}
	var saddrs, caddrs []netip.AddrPort
	for i := range e.Paths {
		saddrs = append(saddrs, netip.AddrPortFrom(topo.Server[i], serverPort))
		caddrs = append(caddrs, netip.AddrPortFrom(topo.Client[i], clientPort))
	}
	shost, err := simenv.New(topo.Net, simenv.Config{Addrs: saddrs, Server: netsim.SimConfig(spart, &scfg, "server")})
	if err != nil {
		return nil, err
	}
	chost, err := simenv.New(topo.Net, simenv.Config{Addrs: caddrs, Client: netsim.SimConfig(cpart, &ccfg, "client")})
	if err != nil {
		return nil, err
	}
	var sconn, cconn appenv.Conn
	// The ends' callbacks may run at the same time (two parts).
	var peersMu sync.Mutex
	var peers []*trafficgen.Peer
	addPeer := func(p *trafficgen.Peer) {
		peersMu.Lock()
		peers = append(peers, p)
		peersMu.Unlock()
	}
	var setupErr error
	if _, err := shost.Listen(saddrs[0].String(), func(c appenv.Conn) {
		if rec == nil {
			return // the warm-up connection
		}
		if sconn != nil {
			c.Close(0x101, "one connection per experiment")
			return
		}
		sconn = c
		p := newPeer(e, shost, c, rec, "server")
		p.Start(e.Sources, t0)
		addPeer(p)
	}); err != nil {
		return nil, err
	}
	if e.Transport.ZeroRTT {
		if err := simWarmUp(sim, chost, saddrs[0].String(), tickets); err != nil {
			return nil, err
		}
	}
	// Time zero: the scheduled changes, the sources and the connection
	// start count from it.
	t0 = sim.Now()
	for i := range e.Paths {
		if err := topo.Up[i].Schedule(steps[i][0], t0); err != nil {
			return nil, err
		}
		if err := topo.Down[i].Schedule(steps[i][1], t0); err != nil {
			return nil, err
		}
	}
	shost.SetQlogReferenceTime(t0)
	chost.SetQlogReferenceTime(t0)
	rec = trafficgen.NewRecorder(recorderConfig(e, t0))
	rec.ConnectStart = t0
	crec = rec
	if split {
		crec = trafficgen.NewRecorder(recorderConfig(e, t0))
		crec.ConnectStart = t0
	}
	comps := newCompetitors(e, t0)
	for k, c := range comps {
		if err := simCompetitor(sim, topo, k, c, t0); err != nil {
			return nil, fmt.Errorf("competitor %s: %w", c.c.Name, err)
		}
	}
	dial := chost.Dial
	if e.Transport.ZeroRTT {
		dial = chost.DialEarly
	}
	dial(saddrs[0].String(), dialed(chost, e, crec, t0,
		func(i int) string { return caddrs[i].String() },
		func(i int) string { return saddrs[i].String() },
		func(p *trafficgen.Peer, c appenv.Conn) { addPeer(p); cconn = c },
		func(err error) { setupErr = err }))
	// The experiment is [t0, end): nothing is generated at end itself.
	end := t0.Add(e.Duration)
	runUntil := func(until time.Time, done func() bool) error {
		for sim.Now().Before(until) && (done == nil || !done()) {
			if err := ctx.Err(); err != nil {
				return err
			}
			next := sim.Now().Add(time.Second)
			if done != nil {
				next = sim.Now().Add(drainStep)
			}
			if next.After(until) {
				next = until
			}
			sim.RunUntil(next)
			if setupErr != nil {
				return setupErr
			}
		}
		return nil
	}
	if err := runUntil(end.Add(-time.Nanosecond), nil); err != nil {
		return nil, err
	}
	if sconn == nil {
		return nil, fmt.Errorf("no connection within %v", e.Duration)
	}
	st, ok := sconn.(statser)
	if !ok {
		return nil, fmt.Errorf("simulated connection without statistics")
	}
	in := trafficgen.SummaryInput{Server: st.PathStats(), Multipath: st.MultipathEnabled(), BaseRTT: baseRTTs(e)}
	addCopiesDropped(&in, sconn)
	addRepair(&in, e, "server", sconn)
	if cconn != nil {
		in.Client = pathStats(cconn)
		addCopiesDropped(&in, cconn)
		addRepair(&in, e, "client", cconn)
	}
	for _, p := range peers {
		p.Stop()
	}
	stopCompetitors(comps)
	// The drain: until every message is done, at most e.Drain.
	outstanding := rec.Outstanding
	if split {
		outstanding = func() int { return trafficgen.OutstandingHalves(crec, rec) }
	}
	if err := runUntil(end.Add(e.Drain), func() bool { return outstanding() == 0 }); err != nil {
		return nil, err
	}
	in.Drained = max(0, sim.Now().Sub(end))
	in.EarlyData = earlyData(e, cconn)
	in.ServerEvents = nonNil(pathEvents(sconn))
	if cconn != nil {
		in.ClientEvents = nonNil(pathEvents(cconn))
	}
	rec.Finish()
	if split {
		crec.Finish()
		ch, sh := crec.Half("client", in), rec.Half("server", in)
		if viaJSON {
			var err error
			if ch, err = jsonCopy(ch); err != nil {
				return nil, err
			}
			if sh, err = jsonCopy(sh); err != nil {
				return nil, err
			}
		}
		var err error
		rec, in, err = trafficgen.MergeHalves(e, ch, sh)
		if err != nil {
			return nil, err
		}
		in.BaseRTT = baseRTTs(e)
	}
	sum := rec.Summarise(e, in)
	var compRows []func(io.Writer) error
	sum.Competitors, compRows = competitorResults(comps, e)
	if err := writeResults(dir, e, rec, sum, started, compRows...); err != nil {
		return nil, err
	}
	if e.Output.Qlog {
		// Close the connection so that the traces are complete.
		sconn.Close(0, "experiment over")
		sim.RunUntil(sim.Now().Add(5 * time.Second))
		// The traces of ends still open (their closing period not over)
		// are written out before the run counts as complete.
		traces.Close()
	}
	if err := qlogFailed(); err != nil {
		return nil, err
	}
	if simDone != nil {
		simDone(sim)
	}
	return &Result{Summary: sum}, nil
}

// simParallel: see SetSimParallel.
var simParallel atomic.Bool

func init() { simParallel.Store(runtime.GOMAXPROCS(0) >= 2) }

// SetSimParallel lets the simulator run an experiment's two ends on two
// goroutines where that measures faster than in turns (see simulate and
// chooser), or not; the results are the same either way.
// It is on where the process may use two CPUs; mpq run turns it off when
// it runs as many simulations at once as there are CPUs.
func SetSimParallel(on bool) { simParallel.Store(on) }

// simSplitEnds lets twoParts split a run (tests turn it off to compare);
// simDone, if set, sees each simulation at the end of its run (tests).
var (
	simSplitEnds = true
	simDone      func(*netsim.Sim)
)

// twoParts reports whether the experiment's client and server can run in
// parts of their own (see netsim.Sim): nothing but the paths' links joins
// them. Shared bottlenecks (links that both directions' paths feed in
// one part) and competitors (more ends on the same links) keep one part.
func twoParts(e *experiment.Experiment) bool {
	if len(e.Competitors) > 0 {
		return false
	}
	for i := range e.Paths {
		if e.BottleneckOf(i) != nil {
			return false
		}
	}
	return true
}

// simBottlenecks adds the experiment's shared bottlenecks to the
// simulated topology: a link per direction of each, named
// "bottleneck/<name>/up" and "…/down", that the packets of the paths
// through it pass after their own link.
func simBottlenecks(topo *netsim.Topology, e *experiment.Experiment) error {
	links := map[string][2]*netsim.Link{}
	for i := range e.Paths {
		b := e.BottleneckOf(i)
		if b == nil {
			continue
		}
		l, ok := links[b.Name]
		if !ok {
			cfg, err := linkmodel.FromExperiment(b.Link, b.RTT)
			if err != nil {
				return fmt.Errorf("bottleneck %s: %w", b.Name, err)
			}
			for d, dir := range []string{experiment.DirectionUp, experiment.DirectionDown} {
				if l[d], err = topo.Net.AddLink(linkmodel.BottleneckName(b.Name, dir), cfg); err != nil {
					return err
				}
			}
			links[b.Name] = l
		}
		topo.Net.Chain(topo.Up[i], l[0])
		topo.Net.Chain(topo.Down[i], l[1])
	}
	return nil
}

// simCompetitor sets up competitor k over its path of the simulated
// topology: its server at the path's server address, port serverPort+1+k,
// its client at the path's client address, port clientPort+1+k, so that
// its packets take the path's links (and bottleneck) beside the
// experiment's.
func simCompetitor(sim *netsim.Sim, topo *netsim.Topology, k int, c *competitor, t0 time.Time) error {
	i := c.c.Path
	saddr := netip.AddrPortFrom(topo.Server[i], uint16(serverPort+1+k))
	caddr := netip.AddrPortFrom(topo.Client[i], uint16(clientPort+1+k))
	ctls, stls, err := netsim.TLSConfigs(c.e.Seed, "mpq-competitor")
	if err != nil {
		return err
	}
	scfg, ccfg := coreConfig(&c.e), coreConfig(&c.e)
	scfg.TLS, ccfg.TLS = stls, ctls
	scfg.Observer = func(v string) core.Observer { return c.rec.Observer(v) }
	ccfg.Observer = scfg.Observer
	name := fmt.Sprintf("competitor%d", k)
	shost, err := simenv.New(topo.Net, simenv.Config{Addrs: []netip.AddrPort{saddr}, Server: netsim.SimConfig(sim, &scfg, name+"-server")})
	if err != nil {
		return err
	}
	chost, err := simenv.New(topo.Net, simenv.Config{Addrs: []netip.AddrPort{caddr}, Client: netsim.SimConfig(sim, &ccfg, name+"-client")})
	if err != nil {
		return err
	}
	accepted := false
	if _, err := shost.Listen(saddr.String(), func(conn appenv.Conn) {
		if accepted {
			conn.Close(0x101, "one connection per competitor")
			return
		}
		accepted, c.connected = true, true
		p := newPeer(&c.e, shost, conn, c.rec, "server")
		p.Start(c.e.Sources, t0)
		c.peers = append(c.peers, p)
	}); err != nil {
		return err
	}
	chost.Dial(saddr.String(), dialed(chost, &c.e, c.rec, t0,
		func(int) string { return caddr.String() }, func(int) string { return saddr.String() },
		func(p *trafficgen.Peer, _ appenv.Conn) { c.peers = append(c.peers, p) },
		func(err error) { c.err = err }))
	return nil
}
