package runner

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/internal/qlogfile"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/network/linkemu"
	"github.com/mpq/mpq/trafficgen"
)

// Addresses of a loopback run: the server listens on loopbackServer; path
// i runs from the client's 127.0.<i+1>.1 to the emulator's front socket
// 127.0.<i+1>.2, and from the emulator's back socket 127.0.<i+1>.3 to the
// server (linkemu's defaults), so that the server sees each path as a
// 4-tuple of its own.
const loopbackServer = "127.0.0.1:0"

func loopbackClient(i int) string { return fmt.Sprintf("127.0.%d.1:0", i+1) }

// runLoopback runs an experiment in real time over UDP sockets on
// loopback: a server and a client of package mpquic (in one udpenv
// environment, whose event loop runs the traffic generator of both ends)
// talk through a userspace link emulator (package linkemu) that gives each
// path the experiment's rate, delay, queue, loss and jitter. It needs no
// privileges. Besides the files of every run it writes emulator.json, the
// emulator's counters per path and direction, with how late it forwarded
// datagrams compared with its model.
func runLoopback(ctx context.Context, e *experiment.Experiment, dir string, started time.Time) (*Result, error) {
	const alpn = "mpq-experiment"
	cert, err := certs.SelfSigned(certs.Options{Ed25519: true, Names: []string{"localhost"}})
	if err != nil {
		return nil, err
	}
	scfg, ccfg := coreConfig(e), coreConfig(e)
	scfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{alpn}}
	ccfg.TLS = &tls.Config{RootCAs: certs.Pool(cert), ServerName: "localhost", NextProtos: []string{alpn}}
	obs := &observerQueue{}
	scfg.Observer = obs.observer
	ccfg.Observer = obs.observer
	var traces *qlogfile.Dir
	qlogFailed := func() error { return nil }
	// The experiment's time zero, of its result files and qlog traces;
	// it is [t0, t0+duration) of real time.
	t0 := time.Now()
	if e.Output.Qlog {
		traces, qlogFailed = qlogDir(dir)
		scfg.Qlog, ccfg.Qlog = traces.Create, traces.Create
		scfg.QlogReferenceTime, ccfg.QlogReferenceTime = t0, t0
		// A run that fails or is interrupted leaves no trace open.
		defer traces.Close()
	}
	// Owned by the loop.
	rec := trafficgen.NewRecorder(recorderConfig(e, t0))
	uc, err := envConfig(e, ends{client: &ccfg, server: &scfg, clientTLS: ccfg.TLS, serverTLS: scfg.TLS}, loopbackClient(0),
		func() *trafficgen.Recorder { return rec })
	if err != nil {
		return nil, err
	}
	ev := udpenv.New(uc)
	var emu *linkemu.Emulator
	closeAll := func() {
		ev.Close()
		if emu != nil {
			emu.Close()
		}
	}

	var sconn, cconn appenv.Conn
	var peers []*trafficgen.Peer
	failed := make(chan error, 1)
	fail := func(err error) {
		select {
		case failed <- err:
		default:
		}
	}

	var l appenv.Listener
	ev.Exec(func() {
		l, err = ev.Listen(loopbackServer, func(c appenv.Conn) {
			if sconn != nil {
				c.Close(0x101, "one connection per experiment")
				return
			}
			sconn = c
			p := newPeer(e, ev, c, rec, "server")
			p.Start(e.Sources, t0)
			peers = append(peers, p)
		})
	})
	if err != nil {
		closeAll()
		return nil, err
	}
	server, err := netip.ParseAddrPort(l.Addr())
	if err != nil {
		closeAll()
		return nil, err
	}
	comps := newCompetitors(e, t0)
	lcs, flows, err := loopbackCompetitors(comps, scfg.TLS, ccfg.TLS, t0)
	compsClosed := false
	closeComps := func() {
		if compsClosed {
			return
		}
		compsClosed = true
		for _, lc := range lcs {
			lc.ev.Close()
		}
	}
	defer closeComps()
	if err != nil {
		closeAll()
		return nil, err
	}
	emu, err = linkemu.Start(linkemu.Config{Paths: e.Paths, Bottlenecks: e.Bottlenecks, Flows: flows, Server: server, Seed: e.Seed, Start: t0})
	if err != nil {
		closeAll()
		return nil, err
	}
	for k, lc := range lcs {
		lc.dial(emu.FlowFront(k).String())
	}

	ev.Exec(func() {
		rec.ConnectStart = time.Now()
		obs.start(ev.Post, rec)
		ev.Dial(emu.Front(0).String(), dialed(ev, e, rec, t0, loopbackClient,
			func(i int) string { return emu.Front(i).String() },
			func(p *trafficgen.Peer, c appenv.Conn) { peers = append(peers, p); cconn = c }, fail))
	})
	wait := func(until time.Time, check func() bool) error { return waitReal(ctx, ev, failed, until, check) }
	end := t0.Add(e.Duration)
	if err := wait(end, nil); err != nil {
		closeAll()
		return nil, err
	}
	var in trafficgen.SummaryInput
	ev.Exec(func() {
		if sconn == nil {
			err = fmt.Errorf("no connection within %v", e.Duration)
			return
		}
		st, ok := sconn.(statser)
		if !ok {
			err = fmt.Errorf("connection without statistics")
			return
		}
		in.Server, in.Multipath = st.PathStats(), st.MultipathEnabled()
		in.BaseRTT = loopbackRTTs(e, emu, in.Server)
		addCopiesDropped(&in, sconn)
		addQueueDropped(&in, "server", sconn)
		addRepair(&in, e, "server", sconn)
		if cconn != nil {
			in.Client = pathStats(cconn)
			addCopiesDropped(&in, cconn)
			addQueueDropped(&in, "client", cconn)
			addRepair(&in, e, "client", cconn)
		}
		for _, p := range peers {
			p.Stop()
		}
	})
	for _, lc := range lcs {
		lc.ev.Exec(func() { stopCompetitors([]*competitor{lc.c}) })
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	// The drain: until every message is done, at most e.Drain.
	if err := wait(end.Add(e.Drain), func() bool { return rec.Outstanding() == 0 }); err != nil {
		closeAll()
		return nil, err
	}

	// The competitors' recorders are done with once their loops end.
	for _, lc := range lcs {
		lc.ev.Exec(lc.obs.stop)
	}
	closeComps()
	compSums, compRows := competitorResults(comps, e)
	var res *Result
	ev.Exec(func() {
		obs.stop()
		in.Drained = max(0, time.Since(end))
		in.ServerEvents = nonNil(pathEvents(sconn))
		if cconn != nil {
			in.ClientEvents = nonNil(pathEvents(cconn))
		}
		rec.Finish()
		sum := rec.Summarise(e, in)
		sum.Competitors = compSums
		// The transport that ran, not the one asked for.
		sum.Transport.Kind = kindOf(sconn)
		sum.Provenance = &trafficgen.Provenance{Emulator: "linkemu"}
		if err = writeResults(dir, e, rec, sum, started, compRows...); err != nil {
			return
		}
		res = &Result{Summary: sum}
		// Close the connection so that the qlog traces end.
		sconn.Close(0, "experiment over")
	})
	if err != nil {
		closeAll()
		return nil, err
	}
	if traces != nil {
		traces.Wait(ctx, 5*time.Second)
	}
	closeAll()
	if traces != nil {
		// Traces of ends that did not close in time are written out
		// before the run counts as complete.
		traces.Close()
	}
	if err := linkemu.WriteStats(filepath.Join(dir, "emulator.json"), emu.Stats()); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := qlogFailed(); err != nil {
		return nil, err
	}
	return res, nil
}

// loopbackRTTs lists by path ID the round-trip propagation delay of the
// experiment path each of the server's paths runs over, told by the
// emulator's back socket it comes from: paths opened at once may get
// their IDs in any order.
func loopbackRTTs(e *experiment.Experiment, emu *linkemu.Emulator, paths []core.PathStats) []time.Duration {
	byBack := map[netip.AddrPort]time.Duration{}
	for i, p := range e.Paths {
		byBack[emu.Back(i)] = p.RTT()
	}
	var out []time.Duration
	for _, ps := range paths {
		if ps.ID > 1<<16 {
			continue
		}
		for uint64(len(out)) <= ps.ID {
			out = append(out, 0)
		}
		out[ps.ID] = byBack[ps.Remote]
	}
	return out
}

// observerQueue serialises the observer calls of both connection ends,
// which run on the connections' goroutines, onto the environment's loop,
// where the recorder lives: calls are queued under a lock and replayed in
// batches by one posted function. Calls after stop are dropped.
type observerQueue struct {
	mu      sync.Mutex
	pending []observed
	posted  bool
	stopped bool
	post    func(func())
	rec     *trafficgen.Recorder
	// Owned by the loop: the recorder's observers by vantage.
	targets map[string]core.Observer
}

// observed is one queued observer call.
type observed struct {
	vantage string
	now     time.Time
	metrics bool // PathMetricsUpdated, else StreamDataSent
	m       core.PathMetrics
	pathID  uint64
	prio    bool
	n       int
}

// observer is the core.Config.Observer of both ends.
func (q *observerQueue) observer(vantage string) core.Observer {
	return &queuedObserver{q: q, vantage: vantage}
}

// start begins delivering to rec on the loop that post posts to.
func (q *observerQueue) start(post func(func()), rec *trafficgen.Recorder) {
	q.mu.Lock()
	q.post, q.rec = post, rec
	q.targets = map[string]core.Observer{}
	q.mu.Unlock()
}

func (q *observerQueue) add(o observed) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped || q.post == nil {
		return
	}
	q.pending = append(q.pending, o)
	if !q.posted {
		q.posted = true
		q.post(q.flush)
	}
}

// flush replays the queued calls; it runs on the loop.
func (q *observerQueue) flush() {
	q.mu.Lock()
	batch := q.pending
	q.pending = nil
	q.posted = false
	rec := q.rec
	q.mu.Unlock()
	for _, o := range batch {
		t := q.targets[o.vantage]
		if t == nil {
			t = rec.Observer(o.vantage)
			q.targets[o.vantage] = t
		}
		if o.metrics {
			t.PathMetricsUpdated(o.now, o.m)
		} else {
			t.StreamDataSent(o.now, o.pathID, 0, o.prio, o.n)
		}
	}
}

// stop replays what is queued and drops later calls; it runs on the loop.
func (q *observerQueue) stop() {
	q.flush()
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
}

type queuedObserver struct {
	q       *observerQueue
	vantage string
}

func (o *queuedObserver) PathMetricsUpdated(now time.Time, m core.PathMetrics) {
	o.q.add(observed{vantage: o.vantage, now: now, metrics: true, m: m})
}

func (o *queuedObserver) StreamDataSent(now time.Time, pathID, _ uint64, priority bool, n int) {
	o.q.add(observed{vantage: o.vantage, now: now, pathID: pathID, prio: priority, n: n})
}

// loopbackCompetitor is a competitor's connection over loopback: both
// its ends in an environment of their own, its client sending to a flow
// of the emulator on its path.
type loopbackCompetitor struct {
	c   *competitor
	ev  *udpenv.Env
	obs *observerQueue
	// server is its server's address, local its client's.
	server netip.AddrPort
	local  string
	t0     time.Time
}

// loopbackCompetitors starts the competitors' servers (with the
// experiment's certificates) and returns them with the emulator flows
// their clients will send to.
func loopbackCompetitors(comps []*competitor, stls, ctls *tls.Config, t0 time.Time) ([]*loopbackCompetitor, []linkemu.Flow, error) {
	var out []*loopbackCompetitor
	var flows []linkemu.Flow
	for _, c := range comps {
		scfg, ccfg := coreConfig(&c.e), coreConfig(&c.e)
		scfg.TLS, ccfg.TLS = stls, ctls
		lc := &loopbackCompetitor{c: c, obs: &observerQueue{}, local: loopbackClient(c.c.Path), t0: t0}
		scfg.Observer, ccfg.Observer = lc.obs.observer, lc.obs.observer
		lc.ev = udpenv.New(udpenv.Config{Client: &ccfg, Server: &scfg, LocalAddr: lc.local})
		out = append(out, lc)
		var l appenv.Listener
		var err error
		lc.ev.Exec(func() {
			lc.obs.start(lc.ev.Post, c.rec)
			accepted := false
			l, err = lc.ev.Listen(loopbackServer, func(conn appenv.Conn) {
				if accepted {
					conn.Close(0x101, "one connection per competitor")
					return
				}
				accepted, c.connected = true, true
				p := newPeer(&c.e, lc.ev, conn, c.rec, "server")
				p.Start(c.e.Sources, t0)
				c.peers = append(c.peers, p)
			})
		})
		if err != nil {
			return out, nil, fmt.Errorf("competitor %s: %w", c.c.Name, err)
		}
		if lc.server, err = netip.ParseAddrPort(l.Addr()); err != nil {
			return out, nil, err
		}
		flows = append(flows, linkemu.Flow{Path: c.c.Path, Server: lc.server})
	}
	return out, flows, nil
}

// dial connects the competitor's client to front, its flow's front
// socket.
func (lc *loopbackCompetitor) dial(front string) {
	c := lc.c
	lc.ev.Exec(func() {
		lc.ev.Dial(front, dialed(lc.ev, &c.e, c.rec, lc.t0,
			func(int) string { return lc.local }, func(int) string { return front },
			func(p *trafficgen.Peer, _ appenv.Conn) { c.peers = append(c.peers, p) },
			func(err error) { c.err = err }))
	})
}
