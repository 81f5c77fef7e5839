package runner

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/kernelnet"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/internal/atomicfile"
	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/internal/qlogfile"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/network/netsim"
	"github.com/mpq/mpq/trafficgen"
)

// Role configures one end of a two-process run (mpq run --role): the
// server on one host (or namespace) and the client on another, each
// recording its half of the results (see Merge).
type Role struct {
	// Side is "server" or "client".
	Side string
	// Listen (server) is its address on each path: QUIC and the clock
	// protocol listen on the first; with more than one address QUIC
	// listens on all the host's addresses at that port, so that every
	// path reaches it.
	Listen []netip.AddrPort
	// Connect (client) is the server's address on each path, Local the
	// client's: path i runs from Local[i] to Connect[i]. With multipath
	// off (and for the single-path baselines) the connection stays on
	// path 0.
	Connect []netip.AddrPort
	Local   []netip.Addr
	// Wait bounds the server's wait for the client's start of a run, and
	// the client's for the server to be ready for it; default 10 minutes.
	Wait time.Duration
	// StartFile (client), if set, receives the run's start, its time
	// zero in Unix nanoseconds, as soon as it is chosen (before it comes):
	// the namespace forwarder's scheduled link changes count from it.
	StartFile string
	// Sync is the server's clock protocol (OpenRole opens it).
	sync *syncServer
}

// Check checks a role against the experiment's paths.
func (r *Role) Check(e *experiment.Experiment) error {
	n := len(e.Paths)
	switch r.Side {
	case "server":
		if len(r.Listen) == 0 {
			return errors.New("--role server needs --listen ADDR:PORT")
		}
		if len(r.Listen) != 1 && len(r.Listen) != n {
			return fmt.Errorf("--listen: %d addresses for %d paths (give one, or one per path)", len(r.Listen), n)
		}
		for _, a := range r.Listen {
			if a.Port() == 0 || a.Port() == 65535 || a.Port() != r.Listen[0].Port() {
				return fmt.Errorf("--listen %v: every address needs the same port, below 65535", a)
			}
		}
	case "client":
		if len(r.Connect) != n || len(r.Local) != n {
			return fmt.Errorf("--role client needs one --connect and one --local address per path: %d paths, %d --connect, %d --local",
				n, len(r.Connect), len(r.Local))
		}
	default:
		return fmt.Errorf("--role %q: want server or client", r.Side)
	}
	return nil
}

func (r *Role) waitOrDefault() time.Duration {
	if r.Wait <= 0 {
		return 10 * time.Minute
	}
	return r.Wait
}

// OpenRole prepares a role for its runs: the server's clock protocol
// listens from now until Close, across runs.
func OpenRole(r *Role) error {
	if r.Side != "server" {
		return nil
	}
	a := r.Listen[0]
	s, err := newSyncServer(netip.AddrPortFrom(a.Addr(), SyncPort(a.Port())))
	if err != nil {
		return fmt.Errorf("clock protocol: %w", err)
	}
	r.sync = s
	return nil
}

// Close ends what OpenRole started.
func (r *Role) Close() error {
	if r.sync != nil {
		return r.sync.Close()
	}
	return nil
}

// roleTLS returns the TLS configurations of a two-process run: the server
// presents a self-signed certificate whose Ed25519 key derives from the
// experiment's seed, and the client accepts exactly that key. Both ends
// derive it on their own; it authenticates the experiment's server, it is
// not a secret.
func roleTLS(seed uint64, alpn string) (client, server *tls.Config, err error) {
	key := netsim.RandReader{R: rand.New(rand.NewPCG(seed, 0x726f6c652d6b6579))}
	cert, err := certs.SelfSigned(certs.Options{Ed25519: true, Rand: key, Names: []string{"localhost"}})
	if err != nil {
		return nil, nil, err
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	want, ok := leaf.PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, nil, errors.New("role certificate without an Ed25519 key")
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{alpn}}
	client = &tls.Config{ServerName: "localhost", NextProtos: []string{alpn}, InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the server sent no certificate")
			}
			c, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			if k, ok := c.PublicKey.(ed25519.PublicKey); !ok || !bytes.Equal(k, want) {
				return errors.New("the server's key is not the experiment's: it runs another seed")
			}
			return nil
		}}
	return client, server, nil
}

// RunRole runs one end of a two-process run of e and writes its half into
// dir: HalfFile, RoleFile and, if asked for, its qlog traces. The server
// waits for the client's start (clock protocol), the client measures the
// server's clock, starts the run, and measures the clock again after it.
// The experiment is [t0, t0+duration) on both ends, then its drain
// period; each end ends on its own (roleRun.drainDone says when before
// the period's end).
func RunRole(ctx context.Context, e *experiment.Experiment, r *Role, dir string) (*RoleInfo, error) {
	if err := r.Check(e); err != nil {
		return nil, err
	}
	if r.Side == "server" && r.sync == nil {
		return nil, errors.New("runner: server role not opened")
	}
	const alpn = "mpq-experiment"
	ctls, stls, err := roleTLS(e.Seed, alpn)
	if err != nil {
		return nil, err
	}
	cfg := coreConfig(e)
	// A role runs on real sockets, whatever backend the file names:
	// never with the simulator's null packet protection.
	cfg.SimNullProtection = false
	obs := &observerQueue{}
	cfg.Observer = obs.observer
	var traces *qlogfile.Dir
	qlogFailed := func() error { return nil }
	if e.Output.Qlog {
		traces, qlogFailed = qlogDir(dir)
		cfg.Qlog = traces.Create
	}
	info := &RoleInfo{Side: r.Side, ConfigSHA256: configSHA256(e), Started: time.Now()}
	if r.Side == "server" {
		cfg.TLS = stls
		if e.Transport.ZeroRTT {
			// The first connection is the client's warm-up.
			warmUpFilter(&cfg)
		}
		for _, a := range r.Listen {
			info.Local = append(info.Local, a.String())
		}
		err = runServerRole(ctx, e, r, dir, &cfg, stls, obs, info)
	} else {
		cfg.TLS = ctls
		for i := range r.Connect {
			info.Local = append(info.Local, r.Local[i].String())
			info.Remote = append(info.Remote, r.Connect[i].String())
		}
		err = runClientRole(ctx, e, r, dir, &cfg, ctls, obs, info)
	}
	if err != nil {
		return nil, err
	}
	if traces != nil {
		traces.Wait(ctx, 5*time.Second)
	}
	if err := qlogFailed(); err != nil {
		return nil, err
	}
	return info, nil
}

// roleRun is the state of one end's run, owned by its environment's loop.
type roleRun struct {
	// ctx ends with the role's run (its kernel sampling with it).
	ctx   context.Context
	e     *experiment.Experiment
	ev    *udpenv.Env
	obs   *observerQueue
	rec   *trafficgen.Recorder
	conn  appenv.Conn
	peers []*trafficgen.Peer
	fail  chan error
}

// sampleKernel records the kernel's state of the run's connection into
// paths.csv, from side's view, every output.path_interval (1 ms when it
// is 0), when the connection is one of the kernel's (tcp, tls, mptcp)
// and shared: per-request and pooled connections come and go. mpq's
// stack reports its own state at every change instead.
func (rr *roleRun) sampleKernel(side string) {
	kc, ok := transportOf(rr.conn).(*kernelnet.Conn)
	if !ok || rr.e.Transport.Connection != "" && rr.e.Transport.Connection != experiment.ConnectionShared {
		return
	}
	every := rr.e.Output.PathInterval
	if every <= 0 {
		every = time.Millisecond
	}
	_ = kc.Sample(rr.ctx, every, rr.obs.observer(side).PathMetricsUpdated) // ends with rr.ctx
}

func (rr *roleRun) failed(err error) {
	select {
	case rr.fail <- err:
	default:
	}
}

// wait waits until the time until, or until check (run on the loop
// every drainStep) reports true.
func (rr *roleRun) wait(ctx context.Context, until time.Time, check func() bool) error {
	return waitReal(ctx, rr.ev, rr.fail, until, check)
}

// finish runs the end of a run from t0: the measurement window, the
// drain, then the half of side, with the connection's statistics taken at
// the end of the window.
func (rr *roleRun) finish(ctx context.Context, t0 time.Time, side string) (*trafficgen.Half, error) {
	end := t0.Add(rr.e.Duration)
	if err := rr.wait(ctx, end, nil); err != nil {
		return nil, err
	}
	var in trafficgen.SummaryInput
	var err error
	rr.ev.Exec(func() {
		if rr.conn == nil {
			err = fmt.Errorf("no connection within %v", rr.e.Duration)
			return
		}
		st, ok := rr.conn.(statser)
		if !ok {
			err = errors.New("connection without statistics")
			return
		}
		in.Multipath = st.MultipathEnabled()
		addCopiesDropped(&in, rr.conn)
		addQueueDropped(&in, side, rr.conn)
		addRepair(&in, rr.e, side, rr.conn)
		if side == "server" {
			in.Server = st.PathStats()
		} else {
			in.Client = st.PathStats()
			in.EarlyData = earlyData(rr.e, rr.conn)
		}
		for _, p := range rr.peers {
			p.Stop()
		}
	})
	if err != nil {
		return nil, err
	}
	// The drain, at most e.Drain: see drainDone.
	if err := rr.wait(ctx, end.Add(rr.e.Drain), func() bool { return rr.drainDone(side) }); err != nil {
		return nil, err
	}
	var h *trafficgen.Half
	rr.ev.Exec(func() {
		rr.obs.stop()
		in.Drained = max(0, time.Since(end))
		if side == "server" {
			in.ServerEvents = nonNil(pathEvents(rr.conn))
		} else {
			in.ClientEvents = nonNil(pathEvents(rr.conn))
		}
		rr.rec.Finish()
		h = rr.rec.Half(side, in)
	})
	return h, nil
}

// drainDone reports, on the loop, whether side's drain may end before
// the drain period does. Whether a message is done, only the end that
// receives its last part knows. The client does for every message of
// its sources (each kind it sends has a reply), not for the server's
// (periodic, bulk: how many the server generated it cannot tell). So
// when no source is the server's, the client's drain ends once its own
// messages are all done or failed, as in the simulator, and the client
// then closes the connection; the server's drain ends when the
// connection has ended, the client gone. With a source of the server's
// both ends drain the whole period.
func (rr *roleRun) drainDone(side string) bool {
	if side == "server" {
		return rr.peerClosed()
	}
	for _, s := range rr.e.Sources {
		if trafficgen.SenderSide(s.Kind) == "server" {
			return false
		}
	}
	return rr.rec.Outstanding() == 0
}

// peerClosed reports, on the loop, whether the run's connection has
// ended.
func (rr *roleRun) peerClosed() bool { return len(rr.peers) > 0 && rr.peers[0].Closed() }

func runServerRole(ctx context.Context, e *experiment.Experiment, r *Role, dir string, cfg *core.Config, tlsConf *tls.Config, obs *observerQueue, info *RoleInfo) error {
	sampling, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	rr := &roleRun{ctx: sampling, e: e, obs: obs, fail: make(chan error, 1)}
	listen := r.Listen[0]
	if len(r.Listen) > 1 {
		any := netip.IPv4Unspecified()
		if listen.Addr().Is6() {
			any = netip.IPv6Unspecified()
		}
		listen = netip.AddrPortFrom(any, listen.Port())
	}
	// The client's start, with its time zero in our clock, sets the run
	// up before it is acknowledged, so before the client connects.
	var t0 time.Time
	var setupErr error
	warmedUp := false
	started := r.sync.expect(configKey(e), func(t0ns int64) {
		t0 = time.Unix(0, t0ns)
		cfg.QlogReferenceTime = t0
		rr.rec = trafficgen.NewRecorder(recorderConfig(e, t0))
		var uc udpenv.Config
		uc, setupErr = envConfig(e, ends{server: cfg, serverTLS: tlsConf}, "", func() *trafficgen.Recorder { return rr.rec })
		ev := udpenv.New(uc)
		rr.ev = ev
		obs.start(ev.Post, rr.rec)
		ev.Exec(func() {
			if setupErr != nil {
				return
			}
			_, setupErr = ev.Listen(listen.String(), func(c appenv.Conn) {
				if rr.conn != nil {
					c.Close(0x101, "one connection per experiment")
					return
				}
				if e.Transport.ZeroRTT && !warmedUp {
					// The warm-up connection: the client closes it.
					warmedUp = true
					return
				}
				rr.conn = c
				rr.sampleKernel("server")
				p := newPeer(e, ev, c, rr.rec, "server")
				p.Start(e.Sources, t0)
				rr.peers = append(rr.peers, p)
			})
		})
	})
	defer r.sync.idle()
	timer := time.NewTimer(r.waitOrDefault())
	defer timer.Stop()
	select {
	case <-started:
	case <-timer.C:
		return fmt.Errorf("no client started the run within %v", r.waitOrDefault())
	case <-ctx.Done():
		return ctx.Err()
	}
	defer rr.ev.Close()
	if setupErr != nil {
		return fmt.Errorf("listening on %v: %w", listen, setupErr)
	}
	h, err := rr.finish(ctx, t0, "server")
	if err != nil {
		return err
	}
	rr.ev.Exec(func() { info.Connections = connectionsOf(rr.conn) })
	if err := writeHalf(dir, h, info); err != nil {
		return err
	}
	// The client closes the connection once its own drain is over; wait
	// for it (the recorder is finished: the peer's own close callback,
	// replaced here, has nothing left to record), so that messages under
	// way on the client's side do not fail for our close.
	closed := make(chan struct{})
	rr.ev.Exec(func() {
		if rr.peerClosed() {
			close(closed) // the client's close ended our drain
			return
		}
		rr.conn.OnClosed(func(error) { close(closed) })
	})
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	return nil
}

func runClientRole(ctx context.Context, e *experiment.Experiment, r *Role, dir string, cfg *core.Config, tlsConf *tls.Config, obs *observerQueue, info *RoleInfo) error {
	server := netip.AddrPortFrom(r.Connect[0].Addr(), SyncPort(r.Connect[0].Port()))
	sc, err := newSyncClient(netip.AddrPortFrom(r.Local[0], 0).String(), server, configKey(e))
	if err != nil {
		return fmt.Errorf("clock protocol: %w", err)
	}
	defer sc.Close()
	clock := &ClockReport{Method: "NTP-style UDP probes to the server before and after the run; the offset of the probe of least round trip",
		Note: "offset = server clock - client clock; MCTs of messages the server sends are measured offset_ms shorter than they are, those the client sends offset_ms longer; the results are not corrected"}
	const probes, probeWait = 16, time.Second
	if err := sc.ready(ctx, probeWait, r.waitOrDefault()); err != nil {
		return err
	}
	clock.Start, err = sc.measure(ctx, probes, probeWait)
	if err != nil {
		return err
	}
	// Our time zero, a few round trips ahead so that the start reaches
	// the server first.
	margin := max(50*time.Millisecond, 4*time.Duration(clock.Start.RTTMS*1e6))
	var tickets *ticketCache
	if e.Transport.ZeroRTT {
		// Time for the warm-up connection before time zero: a
		// handshake, the ticket and a few losses.
		margin += warmUpLimitReal + 10*time.Duration(clock.Start.RTTMS*1e6)
		tickets = newTicketCache()
		cfg.TLS = cfg.TLS.Clone()
		cfg.TLS.ClientSessionCache = tickets
	}
	t0 := time.Now().Add(margin)
	offset := time.Duration(clock.Start.OffsetMS * 1e6)
	if r.StartFile != "" {
		if err := atomicfile.Write(r.StartFile, func(w io.Writer) error {
			_, err := fmt.Fprintln(w, t0.UnixNano())
			return err
		}); err != nil {
			return fmt.Errorf("--start-file: %w", err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = sc.start(sctx, t0.Add(offset).UnixNano(), probeWait)
	cancel()
	if err != nil {
		return err
	}

	localAddr := func(i int) string { return netip.AddrPortFrom(r.Local[i], 0).String() }
	if tickets != nil {
		// Up to a second before time zero, so that its close is
		// through the network by then.
		if err := realWarmUp(ctx, cfg, localAddr(0), r.Connect[0].String(), tickets, t0.Add(-time.Second)); err != nil {
			return err
		}
	}
	cfg.QlogReferenceTime = t0
	sampling, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	rr := &roleRun{ctx: sampling, e: e, obs: obs, fail: make(chan error, 1)}
	rr.rec = trafficgen.NewRecorder(recorderConfig(e, t0))
	uc, err := envConfig(e, ends{client: cfg, clientTLS: tlsConf}, localAddr(0), func() *trafficgen.Recorder { return rr.rec })
	if err != nil {
		return err
	}
	ev := udpenv.New(uc)
	defer ev.Close()
	rr.ev = ev
	if d := time.Until(t0); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ev.Exec(func() {
		rr.rec.ConnectStart = time.Now()
		obs.start(ev.Post, rr.rec)
		dial := ev.Dial
		if e.Transport.ZeroRTT {
			dial = ev.DialEarly
		}
		dial(r.Connect[0].String(), dialed(ev, e, rr.rec, t0, localAddr,
			func(i int) string { return r.Connect[i].String() },
			func(p *trafficgen.Peer, c appenv.Conn) {
				rr.peers = append(rr.peers, p)
				rr.conn = c
				rr.sampleKernel("client")
			}, rr.failed))
	})
	h, err := rr.finish(ctx, t0, "client")
	if err != nil {
		return err
	}
	info.PathIndex = map[uint64]int{}
	for _, ps := range h.Paths {
		for i, a := range r.Local {
			if ps.Local.Addr().Unmap() == a.Unmap() {
				info.PathIndex[ps.ID] = i
			}
		}
	}
	clock.End, err = sc.measure(ctx, probes, probeWait)
	if err != nil {
		clock.End = ClockSample{Probes: probes}
	}
	info.Clock = clock
	ev.Exec(func() {
		info.Kernel, info.Congestion = kernelInfo(rr.conn)
		info.Kind = kindOf(rr.conn)
		info.Connections = connectionsOf(rr.conn)
		info.MaxConnections = maxConnectionsOf(rr.conn)
		rr.conn.Close(0, "experiment over")
	})
	return writeHalf(dir, h, info)
}
