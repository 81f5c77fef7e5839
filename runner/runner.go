// Package runner runs experiments (package experiment) on a backend: the
// deterministic simulator (the default, package network/netsim), real UDP
// sockets on loopback through the link emulator (network/linkemu), two
// network namespaces (network/netns), or two hosts, each end a role of
// its own whose results are merged afterwards (roles.go, merge.go). Every
// way the same traffic generator (package trafficgen) drives a real
// client and server, mpquic or a baseline transport (package appenv's
// implementations), and the run's results are written into a directory:
// config.resolved.toml, summary.json, messages.csv, paths.csv,
// throughput.csv, on request qlog traces, and for emulated runs
// emulator.json.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/internal/buildinfo"
	"github.com/mpq/mpq/internal/qlogfile"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/scheduler"
	"github.com/mpq/mpq/trafficgen"
)

// Result is a finished run.
type Result struct {
	Summary *trafficgen.Summary
	// Wall is how long the run took on the wall clock.
	Wall time.Duration
}

// Run runs one experiment and writes its results into dir, which must
// exist. Cancelling ctx aborts the run with ctx's error.
//
// The sources generate traffic for the experiment's duration; the run
// then goes on for its drain period, or until every message completed or
// failed if that is earlier, and the messages still under way fail
// (trafficgen.Recorder.Finish). Path statistics and the rates of
// summary.json are taken at the end of the duration.
func Run(ctx context.Context, e *experiment.Experiment, dir string) (*Result, error) {
	// The provenance's build information (with the binary's SHA-256,
	// some 20 ms unless cached, read once per process) before the run's
	// clock starts:
	// it is the process's cost, not the run's, and wall_s would
	// otherwise charge it to a process's first run alone.
	buildinfo.Read()
	buildinfo.ReadMachine()
	start := time.Now()
	var res *Result
	var err error
	if e.Transport.ZeroRTT && e.Backend == experiment.BackendLoopback {
		return nil, fmt.Errorf("transport.zero_rtt runs in the simulator, netns and two-host runs, not on the loopback backend (no warm-up connection there yet)")
	}
	switch e.Backend {
	case experiment.BackendSim:
		res, err = runSim(ctx, e, dir, start)
	case experiment.BackendLoopback:
		res, err = runLoopback(ctx, e, dir, start)
	case experiment.BackendNetns:
		res, err = runNetns(ctx, e, dir, start)
	case BackendHosts:
		return nil, errors.New("backend hosts runs the two ends in two processes: mpq run FILE --role server --listen ADDR:PORT on one host, mpq run FILE --role client --connect ADDR:PORT --local ADDR on the other")
	default:
		return nil, fmt.Errorf("backend %q is not available yet: use \"sim\", \"loopback\" or \"netns\", or --role for two hosts", e.Backend)
	}
	if err != nil {
		return nil, err
	}
	res.Wall = time.Since(start)
	return res, nil
}

// coreConfig is the transport configuration of an experiment, without TLS.
func coreConfig(e *experiment.Experiment) core.Config {
	t := e.Transport
	rw := uint64(t.ReceiveWindow) // 0: the core's defaults
	is, ic := rw, rw
	if iw := uint64(t.InitialReceiveWindow); iw > 0 {
		// Windows that start at iw (the connection's at 1.5 times it)
		// and grow to the core's default maxima.
		is, ic = iw, iw*3/2
	}
	return core.Config{
		InitialStreamWindow: is, MaxStreamWindow: rw,
		InitialConnWindow: ic, MaxConnWindow: rw,
		ConnWindowFollowsStream: t.ConnWindowFollowsStream,
		SendBelowWindow:         t.SendBelowWindow,
		MaxPacketSize:           t.MaxPacketSize,
		Congestion:              t.Congestion,
		NewRenoGrowth:           t.NewRenoGrowth,
		SlowStart:               t.SlowStart,
		// MPQUIC's readings of the controllers, where the file asks.
		CongestionReadings: t.CongestionReadings,
		Pacing:             t.Pacing,
		// Bursts of 10 datagrams on every backend, the testbed's as
		// the simulator's (the UDP driver's default is 1 ms at the
		// rate, which is more above about 110 Mbit/s).
		PacingBurst:   -1,
		PathScheduler: t.PathScheduler,
		// The options of the run's scheduler, resolved.
		PathSchedulerOptions: t.SchedulerOptions,
		StreamScheduler:      t.StreamScheduler,
		DisableMultipath:     !t.Multipath,
		InitialRTT:           t.InitialRTT,
		PathAbandonAfter:     t.PathAbandonAfter,
		DisablePathFailure:   !t.PathFailure,
		// transport.zero_rtt: the server's tickets allow 0-RTT, the
		// client offers it when it resumes.
		Allow0RTT: t.ZeroRTT,
		// transport.repair: both ends offer REPAIR frames.
		Repair: t.Repair,
		// Only the simulator's runs (experiment refuses the key
		// elsewhere, and the UDP driver too).
		SimNullProtection: simNullProtection(e),
		MaxPathID:         uint64(max(3, len(e.Paths))),
		// Experiments run for minutes with sources that pause.
		MaxIdleTimeout: max(30*time.Second, e.Duration),
		// Every message has a stream of its own until it is answered.
		MaxIncomingStreams: 1000,
	}
}

// simNullProtection reports whether a run of e uses the simulator's null
// packet protection: only a simulator run, whatever e says.
func simNullProtection(e *experiment.Experiment) bool {
	return e.Transport.SimNullProtection && e.Backend == experiment.BackendSim
}

// packetProtection names the packet protection of a run of e for the
// provenance of its summary.
func packetProtection(e *experiment.Experiment) string {
	if simNullProtection(e) {
		return "sim-null"
	}
	return "tls"
}

// drainStep is how often a run checks in its drain period whether every
// message is done.
const drainStep = 50 * time.Millisecond

// waitReal waits on the wall clock until the time until, or until check
// (run on ev's loop at once and every drainStep, if not nil) reports
// true; it returns early with ctx's error or the first error failed
// receives.
func waitReal(ctx context.Context, ev *udpenv.Env, failed <-chan error, until time.Time, check func() bool) error {
	for {
		if check != nil {
			done := false
			ev.Exec(func() { done = check() })
			if done {
				return nil
			}
		}
		d := time.Until(until)
		if d <= 0 {
			return nil
		}
		if check != nil {
			d = min(d, drainStep)
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case err := <-failed:
			timer.Stop()
			return err
		}
	}
}

// recorderConfig is the recorder configuration of an experiment starting
// at t0. Without output.series no path samples are kept (paths.csv is not
// written).
func recorderConfig(e *experiment.Experiment, t0 time.Time) trafficgen.RecorderConfig {
	pi := e.Output.PathInterval
	if !e.Output.Series {
		pi = -1
	}
	return trafficgen.RecorderConfig{Sources: e.Sources, Start: t0, Duration: e.Duration,
		Interval: e.Output.Interval, PathInterval: pi, Warmup: e.Output.Warmup}
}

// provenance says what produced a run that started at started.
func provenance(e *experiment.Experiment, started time.Time) *trafficgen.Provenance {
	return &trafficgen.Provenance{Info: buildinfo.Read(), Backend: e.Backend, Seed: e.Seed,
		Started:          started.UTC().Format(time.RFC3339Nano),
		PacketProtection: packetProtection(e)}
}

// qlogDir writes one trace per connection end into dir/qlog, named as
// mpq serve and mpq get name theirs (package qlogfile). failed returns
// the first error of creating or writing a trace: a run whose traces are
// incomplete fails.
func qlogDir(dir string) (d *qlogfile.Dir, failed func() error) {
	var mu sync.Mutex
	var first error
	d = qlogfile.NewDir(filepath.Join(dir, "qlog"), func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	})
	return d, func() error {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
}

// baseRTTs lists the paths' round-trip propagation delays.
func baseRTTs(e *experiment.Experiment) []time.Duration {
	out := make([]time.Duration, len(e.Paths))
	for i, p := range e.Paths {
		out[i] = p.RTT()
	}
	return out
}

// writeResults writes the files of a finished run that started at
// started (wall clock), adding its provenance to the summary.
// Extra writes rows of throughput.csv after the connection's (the
// competitors').
func writeResults(dir string, e *experiment.Experiment, rec *trafficgen.Recorder, sum *trafficgen.Summary, started time.Time, extra ...func(io.Writer) error) error {
	p := provenance(e, started)
	if sum.Provenance != nil { // the backend's part: the emulator
		p.Emulator = sum.Provenance.Emulator
	}
	sum.Provenance = p
	sum.WallS = math.Round(time.Since(started).Seconds()*1e3) / 1e3
	m := buildinfo.ReadMachine()
	sum.Machine = &m
	write := func(name string, f func(io.Writer) error) error {
		fh, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			fh.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		return fh.Close()
	}
	js, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	errs := []error{
		write("config.resolved.toml", func(w io.Writer) error { _, err := w.Write(e.ResolvedTOML()); return err }),
		write("summary.json", func(w io.Writer) error { _, err := w.Write(append(js, '\n')); return err }),
		write("messages.csv", rec.WriteMessagesCSV),
	}
	if !e.Output.Series {
		return errors.Join(errs...)
	}
	return errors.Join(append(errs,
		write("paths.csv", rec.WritePathsCSV),
		write("throughput.csv", func(w io.Writer) error {
			errs := []error{rec.WriteThroughputCSV(w)}
			for _, x := range extra {
				errs = append(errs, x(w))
			}
			return errors.Join(errs...)
		}),
	)...)
}

// statser is what connections offer for the summary.
type statser interface {
	PathStats() []core.PathStats
	MultipathEnabled() bool
}

// copyCounter is what connections offer for the copies_dropped count.
type copyCounter interface {
	CopiesDropped() map[string]uint64
}

// addCopiesDropped adds a connection's dropped copies to in.
func addCopiesDropped(in *trafficgen.SummaryInput, c appenv.Conn) {
	cc, ok := c.(copyCounter)
	if !ok {
		return
	}
	for r, n := range cc.CopiesDropped() {
		if in.CopiesDropped == nil {
			in.CopiesDropped = map[string]uint64{}
		}
		in.CopiesDropped[r] += n
	}
}

// queueDropper is what connections offer for receive_queue_dropped.
type queueDropper interface {
	ReceiveQueueDropped() (uint64, bool)
}

// addQueueDropped records what the connection of side dropped at its
// full receive queue, when it counts that.
func addQueueDropped(in *trafficgen.SummaryInput, side string, c appenv.Conn) {
	q, ok := c.(queueDropper)
	if !ok {
		return
	}
	n, ok := q.ReceiveQueueDropped()
	if !ok {
		return
	}
	if in.ReceiveQueueDropped == nil {
		in.ReceiveQueueDropped = map[string]uint64{}
	}
	in.ReceiveQueueDropped[side] = n
}

// repairCounter is what connections offer for summary.json's repair.
type repairCounter interface {
	RepairStats() (core.RepairStats, bool)
}

// addRepair records the REPAIR counts of the connection of side, when
// the experiment offers REPAIR (transport.repair) or its path scheduler
// would send parity (then negotiated = false says it did without), and
// the connection counts them (mpq's).
func addRepair(in *trafficgen.SummaryInput, e *experiment.Experiment, side string, c appenv.Conn) {
	rc, ok := c.(repairCounter)
	if !ok || !e.Transport.Repair && !scheduler.OffersRepair(e.Transport.PathScheduler, e.Transport.SchedulerOptions) {
		return
	}
	s, ok := rc.RepairStats()
	if !ok {
		return
	}
	if in.Repair == nil {
		in.Repair = map[string]trafficgen.RepairSummary{}
	}
	in.Repair[side] = trafficgen.NewRepairSummary(s)
}

// eventer is what connections offer for the path events of summary.json.
type eventer interface {
	PathEvents() []core.PathEvent
}

// pathEvents returns a connection's path events (nil without).
func pathEvents(c appenv.Conn) []core.PathEvent {
	if ev, ok := c.(eventer); ok {
		return ev.PathEvents()
	}
	return nil
}

// nonNil returns ev, or an empty list for nil: the summary then takes no
// events from the path statistics (which miss forgotten paths).
func nonNil(ev []core.PathEvent) []core.PathEvent {
	if ev == nil {
		return []core.PathEvent{}
	}
	return ev
}

// pathStats returns a connection's path statistics (nil without).
func pathStats(c appenv.Conn) []core.PathStats {
	if st, ok := c.(statser); ok {
		return st.PathStats()
	}
	return nil
}

// pathAdder opens paths on client connections.
type pathAdder interface {
	AddPath(local, remote string, done func(id uint64, err error))
}

// statusSetter sends a path's status (PATH_STATUS_BACKUP or
// PATH_STATUS_AVAILABLE).
type statusSetter interface {
	SetPathStatus(id uint64, backup bool) error
}

// markBackup sends PATH_STATUS_BACKUP for path id of a client connection
// if path i of the experiment is a backup path (backup = true); a failure
// is recorded as the path's failure, like one to open it.
func markBackup(c appenv.Conn, e *experiment.Experiment, rec *trafficgen.Recorder, i int, id uint64) {
	if !e.Paths[i].Backup {
		return
	}
	ss, ok := c.(statusSetter)
	if !ok {
		rec.PathFailed(i, fmt.Errorf("path %d is a backup path, and the connection cannot send path status frames", i))
		return
	}
	if err := ss.SetPathStatus(id, true); err != nil {
		rec.PathFailed(i, err)
	}
}

// dialed returns the Dial callback of an experiment's client: it starts
// the client's sources and opens path i from local(i) to remote(i) for
// every further path; fail receives a failure to connect. A path that
// cannot be opened (its validation lost to the path's losses) is an
// outcome of the experiment, not a failure of the run: the recorder notes
// it for summary.json and the connection goes on over the other paths.
// peer receives the client's generator and connection.
func dialed(ev appenv.Env, e *experiment.Experiment, rec *trafficgen.Recorder, t0 time.Time,
	local, remote func(i int) string, peer func(*trafficgen.Peer, appenv.Conn), fail func(error)) func(appenv.Conn, error) {
	return func(c appenv.Conn, err error) {
		if err != nil {
			fail(fmt.Errorf("connecting: %w", err))
			return
		}
		p := newPeer(e, ev, c, rec, "client")
		p.StreamPerMessage = e.Transport.Connection == experiment.ConnectionPerRequest || e.Transport.Connection == experiment.ConnectionPool
		p.Start(e.Sources, t0)
		peer(p, c)
		pa, ok := c.(pathAdder)
		if !e.Transport.Multipath || !ok || e.Transport.Kind != "" && e.Transport.Kind != experiment.KindMPQ {
			// The baselines open no paths of their own: MPTCP's
			// subflows come from the kernel's endpoints.
			return
		}
		// The path of the handshake has ID 0 (draft-ietf-quic-multipath-21
		// Section 1).
		markBackup(c, e, rec, 0, 0)
		for i := 1; i < len(e.Paths); i++ {
			pa.AddPath(local(i), remote(i), func(id uint64, err error) {
				if err != nil {
					rec.PathFailed(i, err)
					return
				}
				markBackup(c, e, rec, i, id)
			})
		}
	}
}

// newPeer is trafficgen.NewPeer for experiment e: over kernel TCP, TLS
// and MPTCP (bytemux, a segment per write) a message goes out in one
// write (trafficgen.Peer.WriteWhole).
func newPeer(e *experiment.Experiment, ev appenv.Env, c appenv.Conn, rec *trafficgen.Recorder, side string) *trafficgen.Peer {
	p := trafficgen.NewPeer(ev, c, rec, side)
	p.WriteWhole = experiment.Kernel(e.Transport.Kind)
	return p
}
