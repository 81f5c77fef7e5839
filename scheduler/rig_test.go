package scheduler_test

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/network/netsim"
	"github.com/mpq/mpq/scheduler"
)

// The rig drives path schedulers inside the real transport core
// (mpquic/core) on the deterministic simulator (network/netsim): a server
// and a client joined by paths of fixed one-way delays. The server's path
// scheduler is the one under test, wrapped in a probe that records every
// decision and every packet; the server's congestion windows are fixed by
// the test (fixedCC); each packet the server sends can be dropped on its
// way (rig.drop). Nothing of the core's send loop is imitated here.

const (
	ms  = time.Millisecond
	mps = 1350 // the core's default maximum packet size
)

// rigPath configures one path: its one-way delay (both ways) and the
// server's fixed congestion window on it, in bytes.
type rigPath struct {
	delay  time.Duration
	window uint64
}

// rigSend is one in-flight 1-RTT packet the server sent.
type rigSend struct {
	at       time.Duration // since rig.t0
	path, pn uint64
	size     int
	class    scheduler.Class
	// copy reports that the packet is a copy of one sent on another
	// path in the same decision.
	copy bool
	// stream and bytes: the stream data it carried (one stream here:
	// priority-fifo sends one STREAM frame per packet).
	stream uint64
	bytes  int
	// dropped reports that rig.drop lost it on its link.
	dropped, onLink bool
	// settled is when the packet was acknowledged or declared lost (0:
	// not yet).
	settled time.Duration
}

func (s *rigSend) String() string {
	c := ""
	if s.copy {
		c = " copy"
	}
	d := ""
	if s.dropped {
		d = " DROPPED"
	}
	return fmt.Sprintf("%v p%d#%d %s s%d+%d %dB%s%s settled %v", s.at, s.path, s.pn, s.class, s.stream, s.bytes, s.size, c, d, s.settled)
}

// rigStream is a stream the server wrote, as the client received it.
type rigStream struct {
	id       uint64
	written  time.Duration
	done     time.Duration // when the client read its end; -1 before
	received int
}

// mct is the stream's completion time: written to read to its end.
func (s *rigStream) mct() time.Duration { return s.done - s.written }

type rig struct {
	t      *testing.T
	sim    *netsim.Sim
	topo   *netsim.Topology
	server *netsim.Conn
	client *netsim.Conn
	probe  *probe
	cc     []*fixedCC // the server's controllers, by path ID
	// t0 is the start of the test proper, after the setup.
	t0 time.Time
	// sends are the server's in-flight 1-RTT packets since t0, in
	// sending order; pending those not yet offered to their link.
	sends   []*rigSend
	pending map[uint64][]*rigSend
	// drop, if set, decides whether a packet is lost on its way.
	drop func(s *rigSend) bool
	// others are the times the server sent other datagrams (ACK-only,
	// probes of path validation) on each path since t0.
	others  map[uint64][]time.Duration
	streams map[uint64]*rigStream
	bulk    *core.Stream
	bulkN   int
	err     error
}

var rigSeq atomic.Uint64

// newRig sets up a connection over paths with the server's path scheduler
// named sched (wrapped in a probe) and priority-fifo, opens every path and
// runs 300 ms, with windows large enough for the setup; then it sets the
// windows of paths and returns, at rig.t0.
func newRig(t *testing.T, sched string, paths ...rigPath) *rig {
	t.Helper()
	return newRigWith(t, sched, false, rigLink{}, paths...)
}

// rigLink sets the links of every path: their rate in bit/s (0: 1
// Gbit/s) and queue in bytes (0: the link model's default); and the
// client's connection flow-control window, initial and largest (0: the
// core's defaults); repair offers the REPAIR extension on both ends.
type rigLink struct {
	rate       float64
	queue      int
	connWindow uint64
	repair     bool
}

// newRigLinks is newRig with links of the rate and queue of link.
func newRigLinks(t *testing.T, sched string, link rigLink, paths ...rigPath) *rig {
	t.Helper()
	return newRigWith(t, sched, false, link, paths...)
}

// newBareRig is newRig with a probe that does not implement the policy
// hooks (LossPolicy, AckPathChooser, RetransmissionSizer), so that the core
// applies its own defaults; sched must not implement them either. The
// probe's overrides and its records of hook calls stay unused.
func newBareRig(t *testing.T, sched string, paths ...rigPath) *rig {
	t.Helper()
	return newRigWith(t, sched, true, rigLink{}, paths...)
}

func newRigWith(t *testing.T, sched string, bare bool, link rigLink, paths ...rigPath) *rig {
	t.Helper()
	n := rigSeq.Add(1)
	r := &rig{t: t, pending: map[uint64][]*rigSend{}, streams: map[uint64]*rigStream{}, others: map[uint64][]time.Duration{}}
	inner, err := scheduler.NewPathSchedulerWith(rigOptions(t, sched))
	if err != nil {
		t.Fatal(err)
	}
	r.probe = &probe{inner: inner, r: r}
	probeName := fmt.Sprintf("rig-probe-%d", n)
	if bare {
		_, lp := inner.(scheduler.LossPolicy)
		_, ap := inner.(scheduler.AckPathChooser)
		_, rs := inner.(scheduler.RetransmissionSizer)
		if lp || ap || rs {
			t.Fatalf("%s implements policy hooks: a bare probe would hide them", sched)
		}
		scheduler.RegisterPath(probeName, func() scheduler.PathScheduler { return bareProbe{r.probe} })
	} else {
		scheduler.RegisterPath(probeName, func() scheduler.PathScheduler { return r.probe })
	}
	ccName := fmt.Sprintf("rig-fixed-%d", n)
	congestion.Register(ccName, func(congestion.Config) (congestion.Controller, error) {
		c := &fixedCC{window: 100 * mps}
		r.cc = append(r.cc, c)
		return c, nil
	})

	ctls, stls, err := netsim.TLSConfigs(3, "rig")
	if err != nil {
		t.Fatal(err)
	}
	r.sim = netsim.New(3)
	var specs []netsim.PathSpec
	for i, p := range paths {
		up := netsim.LinkConfig{Rate: cmp.Or(link.rate, 1e9), Delay: p.delay, QueueBytes: link.queue}
		down := up
		down.Loss = rigLoss{r, uint64(i)}
		specs = append(specs, netsim.PathSpec{Up: up, Down: down})
	}
	r.topo, err = netsim.NewTopology(r.sim, specs)
	if err != nil {
		t.Fatal(err)
	}
	addr := func(a netip.Addr, port uint16) netip.AddrPort { return netip.AddrPortFrom(a, port) }
	scfg := &core.Config{TLS: stls, PathScheduler: probeName, StreamScheduler: "priority-fifo", Congestion: ccName, Repair: link.repair,
		Observer: func(string) core.Observer { return (*rigObserver)(r) }}
	var saddrs, caddrs []netip.AddrPort
	for i := range paths {
		saddrs = append(saddrs, addr(r.topo.Server[i], 4433))
		caddrs = append(caddrs, addr(r.topo.Client[i], 5000))
	}
	if _, err := netsim.NewNode(r.topo.Net, saddrs, scfg, func(c *netsim.Conn) { r.server = c }); err != nil {
		t.Fatal(err)
	}
	cnode, err := netsim.NewNode(r.topo.Net, caddrs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.client, err = cnode.Dial(&core.Config{TLS: ctls, InitialConnWindow: link.connWindow, MaxConnWindow: link.connWindow, Repair: link.repair}, caddrs[0], saddrs[0])
	if err != nil {
		t.Fatal(err)
	}
	added, validated := 1, 1
	buf := make([]byte, 64<<10)
	readers := map[uint64]*core.Stream{}
	r.client.OnEvent = func(e core.Event) {
		if e.Kind == core.EventPathValidated {
			validated++
		}
		for added < len(paths) && r.client.HandshakeComplete() {
			_, err := r.client.AddPath(caddrs[added], saddrs[added])
			if errors.Is(err, core.ErrNoPathCIDs) {
				break // the peer's connection IDs come later
			}
			if err != nil {
				r.err = err
			}
			added++
		}
		for s := r.client.AcceptStream(); s != nil; s = r.client.AcceptStream() {
			readers[s.ID()] = s
		}
		for _, id := range slices.Sorted(maps.Keys(readers)) {
			s := readers[id]
			for {
				n, err := s.Read(buf)
				if st := r.streams[id]; st != nil {
					st.received += n
					if errors.Is(err, io.EOF) {
						st.done = r.now()
					}
				}
				if err != nil {
					delete(readers, id)
					break
				}
				if n == 0 {
					break
				}
			}
		}
	}
	if !r.sim.RunWhile(func() bool { return validated < len(paths) || r.server == nil }, r.sim.Now().Add(5*time.Second)) {
		t.Fatalf("paths not validated (%v)", r.err)
	}
	r.server.OnEvent = func(core.Event) { r.refill() }
	r.sim.RunFor(300 * ms)
	r.t0 = r.sim.Now()
	r.sends = nil
	// Configuration checks build controllers too: find each path's own
	// by the window the core reports.
	all := r.cc
	for i, c := range all {
		c.window = uint64(1000 + i)
	}
	r.cc = make([]*fixedCC, len(paths))
	for _, ps := range r.server.Paths() {
		i := int(ps.CongestionWindow) - 1000
		if ps.ID >= uint64(len(paths)) || i < 0 || i >= len(all) {
			t.Fatalf("path %d: no controller", ps.ID)
		}
		r.cc[ps.ID] = all[i]
	}
	for i, p := range paths {
		r.cc[i].window = p.window
	}
	return r
}

// rigOptions splits a rig's scheduler "name key=value ..." into the
// name and its options (true and false are booleans).
// cwrPlusV1 are the values of cwr-plus's options that its earlier
// defaults had and its present ones do not (rigOptions' "cwr-plus-v1").
var cwrPlusV1 = map[string]any{
	scheduler.OptCopies: true, scheduler.OptQueueGuard: true, scheduler.OptParity: false,
	scheduler.OptStaggerStartup: false, scheduler.OptRateCap: false, scheduler.OptStartupCopies: false,
	scheduler.OptUnpacedPriority: false, scheduler.OptRepay: scheduler.RepayRTT,
	scheduler.OptRatePace: false, scheduler.OptPipeRoom: false, scheduler.OptRateProbe: false,
	scheduler.OptCarefulStart: false, scheduler.OptSecondParity: scheduler.SecondParityOff, scheduler.OptBorrow: scheduler.BorrowMessage,
	scheduler.OptCreditRTTs: "1",
}

func rigOptions(t *testing.T, sched string) (string, map[string]any) {
	t.Helper()
	f := strings.Fields(sched)
	if len(f) == 0 {
		t.Fatal("no scheduler")
	}
	opts := map[string]any{}
	if f[0] == "cwr-plus-v1" {
		// cwr-plus with the defaults its rules were first tested with
		// (before issue 35 made rate_cap, parity and the stagger its
		// defaults); the options given below override them.
		f[0] = "cwr-plus"
		for k, v := range cwrPlusV1 {
			opts[k] = v
		}
	}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("scheduler option %q: want key=value", kv)
		}
		switch v {
		case "true", "false":
			opts[k] = v == "true"
		default:
			opts[k] = v
		}
	}
	return f[0], opts
}

// now is the virtual time since t0.
func (r *rig) now() time.Duration { return r.sim.Now().Sub(r.t0) }

// at runs f at offset d since t0.
func (r *rig) at(d time.Duration, f func()) { r.sim.At(r.t0.Add(d), f) }

// run runs the simulation until offset d since t0.
func (r *rig) run(d time.Duration) {
	r.t.Helper()
	r.sim.RunUntil(r.t0.Add(d))
	if r.err != nil {
		r.t.Fatal(r.err)
	}
	if err := r.server.Err(); err != nil {
		r.t.Fatalf("server: %v", err)
	}
}

// message writes a message of n bytes on a new stream, now, and returns
// the stream ID.
func (r *rig) message(n int, priority bool) uint64 {
	s, err := r.server.OpenStream(false)
	if err != nil {
		r.t.Fatal(err)
	}
	s.SetPriority(priority)
	r.streams[s.ID()] = &rigStream{id: s.ID(), written: r.now(), done: -1}
	if w, err := s.Write(make([]byte, n)); w != n || err != nil {
		r.t.Fatalf("message write: %d of %d, %v", w, n, err)
	}
	s.Close()
	r.server.Kick()
	return s.ID()
}

// background writes n bytes of background data on one stream, now, as
// fast as the stream takes them.
func (r *rig) background(n int) uint64 {
	s, err := r.server.OpenStream(false)
	if err != nil {
		r.t.Fatal(err)
	}
	r.streams[s.ID()] = &rigStream{id: s.ID(), written: r.now(), done: -1}
	r.bulk, r.bulkN = s, n
	r.refill()
	return s.ID()
}

func (r *rig) refill() {
	if r.bulk == nil || r.bulkN == 0 {
		return
	}
	w, _ := r.bulk.Write(make([]byte, min(r.bulkN, 1<<20)))
	r.bulkN -= w
	if r.bulkN == 0 {
		r.bulk.Close()
	}
	r.server.Kick()
}

// sendsOf returns the packets sent with data of stream id.
func (r *rig) sendsOf(id uint64) []*rigSend {
	var out []*rigSend
	for _, s := range r.sends {
		if s.stream == id && s.bytes > 0 {
			out = append(out, s)
		}
	}
	return out
}

// log is the packets sent, one a line, for failure messages.
func (r *rig) log() string {
	out := ""
	for _, s := range r.sends {
		out += "\n  " + s.String()
	}
	return out
}

// lose decides the fate of the next datagram on path's server-to-client
// link: an in-flight 1-RTT packet the probe saw (the core reports it just
// before the datagram leaves), or another datagram (ACK-only, handshake),
// which is never lost.
func (r *rig) lose(path uint64) bool {
	q := r.pending[path]
	if len(q) == 0 {
		if !r.t0.IsZero() {
			r.others[path] = append(r.others[path], r.now())
		}
		return false
	}
	s := q[0]
	r.pending[path] = q[1:]
	s.onLink = true
	if r.drop != nil && r.drop(s) {
		s.dropped = true
	}
	return s.dropped
}

// rigLoss is the loss model of a server-to-client link: rig.lose.
type rigLoss struct {
	r    *rig
	path uint64
}

// Lose implements netsim.LossModel.
func (l rigLoss) Lose(*rand.Rand) bool { return l.r.lose(l.path) }

// rigObserver attaches the stream data of each packet to its send.
type rigObserver rig

func (o *rigObserver) PathMetricsUpdated(time.Time, core.PathMetrics) {}

func (o *rigObserver) StreamDataSent(_ time.Time, pathID, streamID uint64, _ bool, n int) {
	r := (*rig)(o)
	for i := len(r.sends) - 1; i >= 0; i-- {
		if s := r.sends[i]; s.path == pathID {
			s.stream, s.bytes = streamID, s.bytes+n
			return
		}
	}
}

// fixedCC is a congestion controller whose window the test sets; a loss
// sets it to afterLoss when that is not zero. Its slow-start threshold is
// unset (math.MaxUint64: the path's first slow start) until the first
// loss, then the window. Its state is congestion avoidance unless the
// test sets state (to play BBR's states).
type fixedCC struct {
	window, afterLoss uint64
	lost              bool
	state             *congestion.State
}

func (c *fixedCC) OnPacketSent(time.Time, int, uint64)                               {}
func (c *fixedCC) OnAck(time.Time, []congestion.AckedPacket, uint64, congestion.RTT) {}
func (c *fixedCC) OnPersistentCongestion(time.Time)                                  {}
func (c *fixedCC) Window() uint64                                                    { return c.window }
func (c *fixedCC) State() congestion.State {
	if c.state != nil {
		return *c.state
	}
	return congestion.CongestionAvoidance
}
func (c *fixedCC) SlowStartThreshold() uint64 {
	if c.lost {
		return c.window
	}
	return math.MaxUint64
}
func (c *fixedCC) OnCongestionEvent(time.Time, time.Time) {
	c.lost = true
	if c.afterLoss > 0 {
		c.window = c.afterLoss
	}
}

// decision is one Select call the probe saw.
type decision struct {
	at  time.Duration
	w   scheduler.Work
	sel []uint64
}

// lossCall is one LossPolicy call the probe saw.
type lossCall struct {
	at  time.Duration
	lp  scheduler.LostPacket
	dec scheduler.LossDecision
}

// probe wraps the path scheduler under test. It implements every optional
// interface the core looks for and forwards each to the wrapped scheduler
// if that implements it, or else does what the core does without it; so
// the core behaves as with the wrapped scheduler alone. Tests may override
// the loss policy, the ACK path and the retransmission size.
type probe struct {
	inner     scheduler.PathScheduler
	r         *rig
	decisions []decision
	losses    []lossCall
	// expect are the paths of the last decision whose packets are not
	// reported yet: the first carries the original, the others copies.
	expect []uint64
	first  bool

	ackCalls [][]scheduler.PathInfo

	// sizes are the sizes of the in-flight 1-RTT packets the core
	// reported sent, by path and number; acked sums those it reported
	// acknowledged, by path; ackedMismatch records the Select calls whose
	// PathInfo.BytesAcked differed from acked on a path other than path 0
	// (which also counts the handshake's packets, not reported to
	// observers) (TestPathInfoBytesAcked).
	sizes         map[[2]uint64]int
	acked         map[uint64]uint64
	ackedMismatch []string

	lossPolicy func(lp *scheduler.LostPacket) (scheduler.LossDecision, bool)
	ackPath    func(paths []scheduler.PathInfo) (uint64, bool)
	rtxSize    func(w scheduler.Work) (int, bool)
}

func (p *probe) Name() string { return p.inner.Name() }

func (p *probe) Select(now time.Time, paths []scheduler.PathInfo, w scheduler.Work, dst []uint64) []uint64 {
	for i := range paths {
		if got, want := paths[i].BytesAcked, p.acked[paths[i].ID]; paths[i].ID != 0 && got != want && len(p.ackedMismatch) < 5 {
			p.ackedMismatch = append(p.ackedMismatch, fmt.Sprintf("%v: path %d BytesAcked %d, acknowledged packets %d bytes", now.Sub(p.r.t0), paths[i].ID, got, want))
		}
	}
	dst = p.inner.Select(now, paths, w, dst)
	p.decisions = append(p.decisions, decision{at: now.Sub(p.r.t0), w: w, sel: slices.Clone(dst)})
	p.expect, p.first = slices.Clone(dst), true
	return dst
}

func (p *probe) OnPacketSent(now time.Time, info *scheduler.PathInfo, pn uint64, size int, class scheduler.Class) {
	if o, ok := p.inner.(scheduler.PacketObserver); ok {
		o.OnPacketSent(now, info, pn, size, class)
	}
	if p.sizes == nil {
		p.sizes, p.acked = map[[2]uint64]int{}, map[uint64]uint64{}
	}
	p.sizes[[2]uint64{info.ID, pn}] = size
	s := &rigSend{at: now.Sub(p.r.t0), path: info.ID, pn: pn, size: size, class: class}
	if len(p.expect) > 0 && p.expect[0] == info.ID {
		s.copy = !p.first
		p.expect, p.first = p.expect[1:], false
	} else {
		p.expect = nil
	}
	if !p.r.t0.IsZero() {
		p.r.sends = append(p.r.sends, s)
	}
	p.r.pending[info.ID] = append(p.r.pending[info.ID], s)
}

func (p *probe) OnPacketAcked(now time.Time, pathID, pn uint64) {
	if o, ok := p.inner.(scheduler.PacketObserver); ok {
		o.OnPacketAcked(now, pathID, pn)
	}
	if p.acked == nil {
		p.acked = map[uint64]uint64{}
	}
	p.acked[pathID] += uint64(p.sizes[[2]uint64{pathID, pn}])
	p.settle(now, pathID, pn)
}

func (p *probe) OnPacketLost(now time.Time, pathID, pn uint64) {
	if o, ok := p.inner.(scheduler.PacketObserver); ok {
		o.OnPacketLost(now, pathID, pn)
	}
	p.settle(now, pathID, pn)
}

func (p *probe) settle(now time.Time, pathID, pn uint64) {
	for i := len(p.r.sends) - 1; i >= 0; i-- {
		if s := p.r.sends[i]; s.path == pathID && s.pn == pn {
			s.settled = now.Sub(p.r.t0)
			return
		}
	}
}

func (p *probe) Announce(s scheduler.Source) {
	if sa, ok := p.inner.(scheduler.SourceAware); ok {
		sa.Announce(s)
	}
}

func (p *probe) Withdraw(id uint64) {
	if sa, ok := p.inner.(scheduler.SourceAware); ok {
		sa.Withdraw(id)
	}
}

func (p *probe) NextWakeup(now time.Time) time.Time {
	if w, ok := p.inner.(scheduler.Waker); ok {
		return w.NextWakeup(now)
	}
	return time.Time{}
}

func (p *probe) PathCounters(id uint64) map[string]uint64 {
	if c, ok := p.inner.(scheduler.Counters); ok {
		return c.PathCounters(id)
	}
	return nil
}

func (p *probe) OnDataLost(now time.Time, paths []scheduler.PathInfo, lp *scheduler.LostPacket) scheduler.LossDecision {
	dec, ok := scheduler.LossDecision{}, false
	if p.lossPolicy != nil {
		dec, ok = p.lossPolicy(lp)
	}
	if !ok {
		if lpol, is := p.inner.(scheduler.LossPolicy); is {
			dec = lpol.OnDataLost(now, paths, lp)
		} else {
			dec = scheduler.DefaultLossDecision(lp)
		}
	}
	cp := *lp
	cp.Copies = slices.Clone(lp.Copies)
	p.losses = append(p.losses, lossCall{at: now.Sub(p.r.t0), lp: cp, dec: dec})
	return dec
}

func (p *probe) AckPath(now time.Time, paths []scheduler.PathInfo) uint64 {
	p.ackCalls = append(p.ackCalls, slices.Clone(paths))
	if p.ackPath != nil {
		if id, ok := p.ackPath(paths); ok {
			return id
		}
	}
	if ch, ok := p.inner.(scheduler.AckPathChooser); ok {
		return ch.AckPath(now, paths)
	}
	return paths[scheduler.DefaultAckPath(paths)].ID
}

func (p *probe) RetransmissionSize(w scheduler.Work, paths []scheduler.PathInfo) int {
	if p.rtxSize != nil {
		if n, ok := p.rtxSize(w); ok {
			return n
		}
	}
	if rs, ok := p.inner.(scheduler.RetransmissionSizer); ok {
		return rs.RetransmissionSize(w, paths)
	}
	return w.Size
}

// Repair forwards the REPAIR policy (Repairer); none without it.
func (p *probe) Repair(now time.Time, paths []scheduler.PathInfo, req scheduler.RepairRequest) (uint64, bool) {
	if rp, ok := p.inner.(scheduler.Repairer); ok {
		return rp.Repair(now, paths, req)
	}
	return 0, false
}

// SecondRepair forwards the second parity's policy (SecondRepairer);
// none without it.
func (p *probe) SecondRepair(now time.Time, paths []scheduler.PathInfo, req scheduler.RepairRequest) (uint64, bool) {
	if rp, ok := p.inner.(scheduler.SecondRepairer); ok {
		return rp.SecondRepair(now, paths, req)
	}
	return 0, false
}

// SkipsHeldBack forwards the option skip_held_back (HeldBackSkipper).
func (p *probe) SkipsHeldBack() bool {
	hs, ok := p.inner.(scheduler.HeldBackSkipper)
	return ok && hs.SkipsHeldBack()
}

// bareProbe is a probe without the policy hooks: the core takes its
// default decisions.
type bareProbe struct{ p *probe }

func (b bareProbe) Name() string { return b.p.Name() }

func (b bareProbe) Select(now time.Time, paths []scheduler.PathInfo, w scheduler.Work, dst []uint64) []uint64 {
	return b.p.Select(now, paths, w, dst)
}

func (b bareProbe) OnPacketSent(now time.Time, info *scheduler.PathInfo, pn uint64, size int, class scheduler.Class) {
	b.p.OnPacketSent(now, info, pn, size, class)
}

func (b bareProbe) OnPacketAcked(now time.Time, pathID, pn uint64) {
	b.p.OnPacketAcked(now, pathID, pn)
}
func (b bareProbe) OnPacketLost(now time.Time, pathID, pn uint64) { b.p.OnPacketLost(now, pathID, pn) }
func (b bareProbe) Announce(s scheduler.Source)                   { b.p.Announce(s) }
func (b bareProbe) Withdraw(id uint64)                            { b.p.Withdraw(id) }
func (b bareProbe) NextWakeup(now time.Time) time.Time            { return b.p.NextWakeup(now) }
func (b bareProbe) PathCounters(id uint64) map[string]uint64      { return b.p.PathCounters(id) }

var (
	_ scheduler.PacketObserver = bareProbe{}
	_ scheduler.SourceAware    = bareProbe{}
	_ scheduler.Waker          = bareProbe{}
	_ scheduler.Counters       = bareProbe{}
)

var (
	_ scheduler.PacketObserver      = (*probe)(nil)
	_ scheduler.SourceAware         = (*probe)(nil)
	_ scheduler.Waker               = (*probe)(nil)
	_ scheduler.Counters            = (*probe)(nil)
	_ scheduler.LossPolicy          = (*probe)(nil)
	_ scheduler.AckPathChooser      = (*probe)(nil)
	_ scheduler.RetransmissionSizer = (*probe)(nil)
)
