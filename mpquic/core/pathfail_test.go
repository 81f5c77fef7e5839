package core

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/qlogcheck"
	"github.com/mpq/mpq/scheduler"
)

// onPath0 reports whether a datagram of the harness travels on the
// client's first address (path 0).
func onPath0(f flight) bool { return f.d.Local == clientAddr || f.d.Remote == clientAddr }

// eventAt returns the time of the first path event of a kind on a path.
func eventAt(c *Conn, id uint64, kind string) (time.Time, bool) {
	for _, e := range c.PathEvents() {
		if e.PathID == id && e.Kind == kind {
			return e.At, true
		}
	}
	return time.Time{}, false
}

// lossSpy is lowrtt with a loss policy that records the reasons it is
// asked about and applies the default decision.
type lossSpy struct {
	scheduler.LowRTT
}

var (
	lossSpyMu      sync.Mutex
	lossSpyReasons = map[scheduler.LossReason]int{}
)

func (*lossSpy) Name() string { return "test-loss-spy" }

func (*lossSpy) OnDataLost(_ time.Time, paths []scheduler.PathInfo, lp *scheduler.LostPacket) scheduler.LossDecision {
	lossSpyMu.Lock()
	lossSpyReasons[lp.Reason]++
	lossSpyMu.Unlock()
	return scheduler.DefaultLossDecision(lp)
}

func init() {
	scheduler.RegisterPath("test-loss-spy", func() scheduler.PathScheduler { return &lossSpy{} })
}

// TestPathFailureAndRecovery takes path 0 down for 3 s in both directions
// in the middle of a transfer from the server: the server must declare it
// failed within the documented bound, keep data off it, send what it had
// in flight again through the loss policy, probe it, and use it again
// once it is back.
func TestPathFailureAndRecovery(t *testing.T) {
	cc, sc := testConfigs(t)
	sc.PathScheduler = "test-loss-spy"
	trace := &traceBuffer{}
	sc.Qlog = func(string, []byte) io.WriteCloser { return trace }
	p := newPair(t, cc, sc, EndpointConfig{})
	id := openSecondPath(t, p)
	lossSpyMu.Lock()
	clear(lossSpyReasons)
	lossSpyMu.Unlock()

	const down = 3 * time.Second
	data := randomBytes(24<<20, 21)
	var start time.Time
	var failAfter time.Duration
	var sentAtFail, sentAtBack uint64
	p.transferHook(p.server, p.client, data, 120*time.Second, func(got int) {
		if start.IsZero() && got > 2<<20 {
			start = p.now
			p.dropPath = func(f flight) bool { return onPath0(f) && p.now.Sub(start) < down }
		}
		sp := p.server.openPath(0)
		if sp != nil && sp.health.failed && sentAtFail == 0 {
			sentAtFail = pathStats(p.server, 0).BytesSent
			failAfter = p.server.failAfter(sp)
		}
		if !start.IsZero() && p.now.Sub(start) < down {
			sentAtBack = pathStats(p.server, 0).BytesSent
		}
	})
	if start.IsZero() {
		t.Fatal("the transfer ended before path 0 went down")
	}
	if p.now.Sub(start) > down {
		t.Fatalf("the transfer took %v after path 0 went down: the other path did not take over", p.now.Sub(start))
	}
	// The path comes back longer (a 60 ms RTT instead of 20 ms): its RTT
	// estimate must restart from the probe's sample, not average it into
	// the old history.
	p.delay = 30 * time.Millisecond
	p.runUntil(func() bool {
		_, ok := eventAt(p.server, 0, PathEventRecovered)
		return ok
	}, 2*down)
	// The RTT estimate restarts from the probe's sample.
	if ps := pathStats(p.server, 0); ps.SmoothedRTT != ps.LatestRTT || ps.MinRTT != ps.LatestRTT {
		t.Fatalf("after recovery path 0's srtt %v, min %v, latest %v: the estimate did not restart", ps.SmoothedRTT, ps.MinRTT, ps.LatestRTT)
	}
	// Path 1 becomes a backup: the data must take path 0 again (with
	// equal RTTs and no capacity limit, lowrtt would keep path 1 alone).
	if err := p.client.SetPathStatus(id, true); err != nil {
		t.Fatal(err)
	}
	p.runUntil(func() bool { return pathStats(p.server, id).PeerStatus == "backup" }, 2*time.Second)
	back := pathStats(p.server, 0).BytesSent
	p.transfer(p.server, p.client, randomBytes(8<<20, 25), 60*time.Second)
	afterBack := pathStats(p.server, 0).BytesSent - back
	failed, ok := eventAt(p.server, 0, PathEventFailed)
	if !ok {
		t.Fatal("the server never declared path 0 failed")
	}
	recovered, ok := eventAt(p.server, 0, PathEventRecovered)
	if !ok {
		t.Fatal("the server never saw path 0 recover")
	}
	srtt := pathStats(p.server, id).SmoothedRTT
	t.Logf("path 0 down at +0: failed at +%v (D = %v, srtt of path %d %v), recovered at +%v; %d bytes sent on path 0 while failed, %d after it came back",
		failed.Sub(start), failAfter, id, srtt, recovered.Sub(start), sentAtBack-sentAtFail, afterBack)
	// Bound: D(p) after the first lost packet, which left at most one RTT
	// and an ACK delay before the link went down (its ACK was lost), plus
	// the time for the other path to acknowledge a newer packet (it
	// carries data: an RTT and an ACK delay).
	bound := failAfter + 2*(srtt+25*time.Millisecond)
	if d := failed.Sub(start); d < 0 || d > bound {
		t.Fatalf("path 0 declared failed %v after it went down, bound %v", d, bound)
	}
	// While failed only probes (PINGs, ACKs) go on path 0.
	if n := sentAtBack - sentAtFail; n > 20<<10 {
		t.Fatalf("%d bytes sent on path 0 while it was failed", n)
	}
	// Back within the probes' largest interval and a round trip.
	if d := recovered.Sub(start.Add(down)); d < 0 || d > failProbeMax+4*srtt+50*time.Millisecond {
		t.Fatalf("path 0 recovered %v after it came back", d)
	}
	if afterBack < 4<<20 {
		t.Fatalf("only %d bytes on path 0 after it came back", afterBack)
	}
	lossSpyMu.Lock()
	n := lossSpyReasons[scheduler.LossPathFailed]
	lossSpyMu.Unlock()
	if n == 0 {
		t.Fatal("the loss policy was never asked about the failed path's data")
	}
	if ps := pathStats(p.server, 0); ps.Failed || len(ps.Events) != 2 {
		t.Fatalf("server's path 0: failed %v, events %v", ps.Failed, ps.Events)
	}
	// qlog: both events as quic:tuple_assigned, in a trace qvis loads.
	p.server.Close(0, "")
	p.runUntil(func() bool { closed, _ := p.server.Closed(); return closed }, 5*time.Second)
	tr, err := qlogcheck.Check(trace.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	for _, e := range tr.Events {
		if d, _ := e["data"].(map[string]any); e["name"] == "quic:tuple_assigned" && d["path_event"] != nil {
			logged = append(logged, fmt.Sprint(d["tuple_id"], " ", d["path_event"], " ", d["state"]))
		}
	}
	if want := []string{"0 failed failed", "0 recovered active"}; !slices.Equal(logged, want) {
		t.Fatalf("qlog path events %q, want %q", logged, want)
	}
}

// TestPathFailureNotWhileAlone: while every path is silent none is
// declared failed; RFC 9002's probe timeouts handle them. (When the paths
// come back, one whose probe timeout backed off further than another's may
// be declared failed for the time its probe takes: its oldest packet is
// unacknowledged while the other path acknowledges newer ones.)
func TestPathFailureNotWhileAlone(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	openSecondPath(t, p)
	data := randomBytes(8<<20, 22)
	var start time.Time
	p.transferHook(p.server, p.client, data, 120*time.Second, func(got int) {
		if start.IsZero() && got > 1<<20 {
			start = p.now
			// Every path loses everything for 2 s.
			p.dropPath = func(f flight) bool { return p.now.Sub(start) < 2*time.Second }
		}
	})
	for _, c := range []*Conn{p.client, p.server} {
		for _, e := range c.PathEvents() {
			if e.Kind == PathEventFailed && e.At.Before(start.Add(2*time.Second)) {
				t.Fatalf("path %d declared failed %v after every path went down for 2 s", e.PathID, e.At.Sub(start))
			}
		}
	}
}

var clientAddr3 = netip.MustParseAddrPort("10.2.0.1:5002")

// TestPathFailureAbandonAndReplace: a path failed for PathAbandonAfter is
// abandoned with PATH_ABANDON at both ends, and the client opens a
// replacement path from a new local address that carries data.
func TestPathFailureAbandonAndReplace(t *testing.T) {
	cc, sc := testConfigs(t)
	sc.PathAbandonAfter = time.Second
	p := newPair(t, cc, sc, EndpointConfig{})
	openSecondPath(t, p)
	data := randomBytes(8<<20, 23)
	var start time.Time
	p.transferHook(p.server, p.client, data, 120*time.Second, func(got int) {
		if start.IsZero() && got > 1<<20 {
			start = p.now
			p.dropPath = onPath0 // for good
		}
	})
	p.runUntil(func() bool {
		_, ok := eventAt(p.server, 0, PathEventAbandoned)
		return ok && p.client.openPath(0) == nil
	}, 10*time.Second)
	failed, _ := eventAt(p.server, 0, PathEventFailed)
	abandoned, _ := eventAt(p.server, 0, PathEventAbandoned)
	if d := abandoned.Sub(failed); d < time.Second || d > time.Second+100*time.Millisecond {
		t.Fatalf("abandoned %v after failing, want 1 s (PathAbandonAfter)", d)
	}
	// The replacement path.
	var id uint64
	p.runUntil(func() bool {
		var err error
		id, err = p.client.AddPath(clientAddr3, serverAddr)
		if err != nil && !errors.Is(err, ErrNoPathCIDs) && !errors.Is(err, ErrPathsBlocked) {
			t.Fatalf("AddPath: %v", err)
		}
		return err == nil
	}, 5*time.Second)
	p.runUntil(func() bool {
		sp := p.server.openPath(id)
		return sp != nil && sp.state == pathActive
	}, 5*time.Second)
	// The client leaves path 1 too (say, its interface went away): the
	// data must take the replacement.
	if err := p.client.AbandonPath(1, 0); err != nil {
		t.Fatal(err)
	}
	before := pathStats(p.server, id).BytesSent
	p.transfer(p.server, p.client, randomBytes(4<<20, 24), 60*time.Second)
	if n := pathStats(p.server, id).BytesSent - before; n < 512<<10 {
		t.Fatalf("replacement path %d carried %d bytes", id, n)
	}
}

// TestPathFailureSpurious holds back the client's acknowledgements on path
// 0 (the server's data still arrives) for a little longer than the
// failure threshold D: the server declares path 0 failed, then an
// acknowledgement of packets sent before the declaration arrives. The
// failure was spurious: the event says so and the path keeps its
// congestion window instead of collapsing to the minimum as after an
// outage (the starvation of a path on a loaded loopback, where a stalled
// receiver looks like a dead path).
func TestPathFailureSpurious(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	openSecondPath(t, p)

	data := randomBytes(16<<20, 31)
	var start time.Time
	var hold time.Duration
	var cwndBefore uint64
	p.transferHook(p.server, p.client, data, 120*time.Second, func(got int) {
		if start.IsZero() && got > 4<<20 {
			sp := p.server.openPath(0)
			start, hold = p.now, p.server.failAfter(sp)+sp.rtt.Smoothed()
			cwndBefore = pathStats(p.server, 0).CongestionWindow
			p.dropPath = func(f flight) bool {
				return f.toServer && onPath0(f) && p.now.Sub(start) < hold
			}
		}
	})
	if start.IsZero() {
		t.Fatal("the transfer ended before the acknowledgements were held back")
	}
	failed, ok := eventAt(p.server, 0, PathEventFailed)
	if !ok {
		t.Fatalf("the server never declared path 0 failed (acknowledgements held back %v)", hold)
	}
	spurious, ok := eventAt(p.server, 0, PathEventSpurious)
	if !ok {
		t.Fatalf("no spurious event on path 0: events %v", pathStats(p.server, 0).Events)
	}
	if _, ok := eventAt(p.server, 0, PathEventRecovered); ok {
		t.Fatalf("path 0 recovered as from an outage: events %v", pathStats(p.server, 0).Events)
	}
	ps := pathStats(p.server, 0)
	t.Logf("acks held %v: failed at +%v, spurious at +%v; cwnd %d before, %d at the end", hold, failed.Sub(start), spurious.Sub(start), cwndBefore, ps.CongestionWindow)
	if ps.Failed {
		t.Fatal("path 0 still failed")
	}
	// An outage's recovery leaves the minimum window (2 datagrams) to grow
	// from slow start; a spurious failure leaves the window it had.
	if ps.CongestionWindow < cwndBefore/2 {
		t.Fatalf("path 0's window %d after the spurious failure, %d before", ps.CongestionWindow, cwndBefore)
	}
}

// TestPathFailureThreshold holds back the client's acknowledgements on
// path 0 so that the path is silent (from its oldest unacknowledged
// packet) for longer than max(3 srtt, PTO) but shorter than D = max(3
// srtt, 2 PTO): a delayed acknowledgement with some scheduling latency,
// not an outage. No failure may be declared.
func TestPathFailureThreshold(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	openSecondPath(t, p)

	data := randomBytes(16<<20, 33)
	var start time.Time
	var hold, onePTO, d time.Duration
	p.transferHook(p.server, p.client, data, 120*time.Second, func(got int) {
		if start.IsZero() && got > 4<<20 {
			sp := p.server.openPath(0)
			onePTO = max(failRTTs*sp.rtt.Smoothed(), sp.rtt.PTO(p.server.peerMaxAckDelay()))
			d = max(failRTTs*sp.rtt.Smoothed(), 2*sp.rtt.PTO(p.server.peerMaxAckDelay()))
			// The silence starts at the oldest unacknowledged packet,
			// about a round trip before the acknowledgements stop.
			start, hold = p.now, (onePTO+d)/2-sp.rtt.Smoothed()
			p.dropPath = func(f flight) bool {
				return f.toServer && onPath0(f) && p.now.Sub(start) < hold
			}
		}
	})
	if start.IsZero() {
		t.Fatal("the transfer ended before the acknowledgements were held back")
	}
	if d-onePTO < 10*time.Millisecond {
		t.Fatalf("no room between max(3 srtt, PTO) = %v and D = %v", onePTO, d)
	}
	if at, ok := eventAt(p.server, 0, PathEventFailed); ok {
		t.Fatalf("path 0 declared failed at +%v with acknowledgements held %v (max(3 srtt, PTO) %v, D %v)", at.Sub(start), hold, onePTO, d)
	}
	t.Logf("acknowledgements held %v: between max(3 srtt, PTO) = %v and D = %v, no failure", hold, onePTO, d)
}

// TestFailoverStatus: when the server finds path 0 failed and only a
// backup path is left (the client marked path 1 backup), it sends
// PATH_STATUS_BACKUP for path 0 (draft-ietf-quic-multipath-21 Section 3.3:
// the peer should avoid the broken path), and PATH_STATUS_AVAILABLE once
// path 0 recovers. Without a backup path (path 1 available) it sends
// nothing: an available path takes over, the case the draft's sentence
// does not cover.
func TestFailoverStatus(t *testing.T) {
	for _, backup := range []bool{true, false} {
		t.Run(fmt.Sprintf("backup=%v", backup), func(t *testing.T) {
			cc, sc := testConfigs(t)
			p := newPair(t, cc, sc, EndpointConfig{})
			id := openSecondPath(t, p)
			if backup {
				if err := p.client.SetPathStatus(id, true); err != nil {
					t.Fatal(err)
				}
				p.runUntil(func() bool { return pathStats(p.server, id).PeerStatus == "backup" }, 2*time.Second)
			}
			const down = 2 * time.Second
			var start time.Time
			var during string
			p.transferHook(p.server, p.client, randomBytes(16<<20, 31), 120*time.Second, func(got int) {
				if start.IsZero() && got > 2<<20 {
					start = p.now
					p.dropPath = func(f flight) bool { return onPath0(f) && p.now.Sub(start) < down }
				}
				if !start.IsZero() && p.now.Sub(start) < down && pathStats(p.client, 0).PeerStatus != "" {
					during = pathStats(p.client, 0).PeerStatus
				}
			})
			if _, ok := eventAt(p.server, 0, PathEventFailed); !ok {
				t.Fatal("the server never declared path 0 failed")
			}
			p.runUntil(func() bool {
				_, ok := eventAt(p.server, 0, PathEventRecovered)
				return ok
			}, 10*time.Second)
			p.runUntil(func() bool { return !backup || pathStats(p.client, 0).PeerStatus == "available" }, 2*time.Second)
			after := pathStats(p.client, 0).PeerStatus
			t.Logf("path 0's status from the server: %q while down, %q after it recovered", during, after)
			want := map[bool][2]string{true: {"backup", "available"}, false: {"", ""}}[backup]
			if during != want[0] || after != want[1] {
				t.Fatalf("path 0's status from the server %q while down, %q after; want %q, %q", during, after, want[0], want[1])
			}
		})
	}
}
