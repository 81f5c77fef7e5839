package scheduler_test

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/scheduler"
)

// TestCWRPlusCopies runs cwr-plus in the real core on two paths whose
// windows (4 packets) background data keep full, when a one-packet
// priority message is written at 10 ms: it leaves at once beyond the
// full windows (the budget), on both paths with the rule copies and on
// the lowest-RTT path only without it; a loss of the copy on path 0
// costs nothing with copies (the one on path 1 arrives, one one-way delay
// later), and a retransmission without.
func TestCWRPlusCopies(t *testing.T) {
	tests := []struct {
		sched string
		paths int
	}{
		{"cwr-plus-v1", 2},
		{"cwr-plus-v1 copies=false", 1},
	}
	for _, tc := range tests {
		t.Run(tc.sched, func(t *testing.T) {
			r := newRig(t, tc.sched, rigPath{delay: 20 * ms, window: 4 * mps}, rigPath{delay: 30 * ms, window: 4 * mps})
			r.server.AnnounceSource(scheduler.Source{ID: 1, Size: payload / 2, Next: r.t0.Add(10 * ms)})
			bg := r.background(1 << 20)
			var msg uint64
			r.at(10*ms, func() { msg = r.message(payload/2, true) })
			r.drop = func(s *rigSend) bool { return s.stream == msg && s.path == 0 && s.at == 10*ms }
			r.run(400 * ms)
			var first []*rigSend
			for _, s := range r.sendsOf(msg) {
				if s.at == 10*ms {
					first = append(first, s)
				}
			}
			if len(first) != tc.paths {
				t.Fatalf("%d packets of the message at 10 ms, want %d%s", len(first), tc.paths, r.log())
			}
			for _, p := range first {
				if inFlight(r, bg, p.path, 10*ms) != 4 {
					t.Fatalf("path %d: %d background packets in flight beside the priority one, want 4 (a full window)%s", p.path, inFlight(r, bg, p.path, 10*ms), r.log())
				}
			}
			st := r.streams[msg]
			if st == nil || st.done < 0 {
				t.Fatalf("message not delivered%s", r.log())
			}
			if fast := st.mct() <= 31*ms; fast != (tc.paths == 2) {
				t.Fatalf("message completion %v: want at most 31 ms (the copy on path 1): %v%s", st.mct(), tc.paths == 2, r.log())
			}
		})
	}
}

// TestCWRPlusQueueGuard runs cwr-plus in the real core on one path of
// 10 Mbit/s and 10 ms one-way delay (a bandwidth-delay product of about
// 18 packets) whose window holds 60 packets: background data alone would
// keep about 40 packets (45 ms) queued at the link. With the rule
// queue_guard background data stop while the latest RTT is more than
// QueueGuard above the minimum, and a priority message written at 500 ms
// arrives within a few milliseconds of the one-way delay; without it, it
// waits behind the queue.
func TestCWRPlusQueueGuard(t *testing.T) {
	tests := []struct {
		sched string
		fast  bool
	}{
		{"cwr-plus-v1", true},
		{"cwr-plus-v1 queue_guard=false", false},
	}
	for _, tc := range tests {
		t.Run(tc.sched, func(t *testing.T) {
			r := newRigLinks(t, tc.sched, rigLink{rate: 10e6, queue: 200 * mps}, rigPath{delay: 10 * ms, window: 60 * mps})
			r.background(1 << 24)
			var msg uint64
			r.at(500*ms, func() { msg = r.message(payload/2, true) })
			r.run(1000 * ms)
			st := r.streams[msg]
			if st == nil || st.done < 0 {
				t.Fatalf("message not delivered%s", r.log())
			}
			if fast := st.mct() <= 40*ms; fast != tc.fast {
				t.Fatalf("message completion %v: want at most 40 ms: %v", st.mct(), tc.fast)
			}
		})
	}
}

// TestCWRPlusStartupGuard runs cwr-plus in the real core on the link of
// TestCWRPlusQueueGuard (background data alone keep about 45 ms queued)
// with startup_guard: queue_guard holds only while the path is in its
// first slow start (its controller's ssthresh unset: PathInfo.SSThresh).
// A background packet the link loses at 100 ms ends it (the rig's
// controller then reports an ssthresh and keeps its window): the message
// written at 500 ms waits behind the queue. Without that loss the guard
// holds and the message arrives at once, as with the guard for the whole
// run, loss or none.
func TestCWRPlusStartupGuard(t *testing.T) {
	tests := []struct {
		sched string
		loss  bool
		fast  bool
	}{
		{"cwr-plus-v1", true, true},
		{"cwr-plus-v1 startup_guard=path", false, true},
		{"cwr-plus-v1 startup_guard=path", true, false},
		{"cwr-plus-v1 startup_guard=conn", false, true},
		{"cwr-plus-v1 startup_guard=conn", true, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s loss=%v", tc.sched, tc.loss), func(t *testing.T) {
			r := newRigLinks(t, tc.sched, rigLink{rate: 10e6, queue: 200 * mps}, rigPath{delay: 10 * ms, window: 60 * mps})
			bg := r.background(1 << 24)
			dropped := false
			r.drop = func(s *rigSend) bool {
				if tc.loss && !dropped && s.stream == bg && s.at >= 100*ms {
					dropped = true
					return true
				}
				return false
			}
			var msg uint64
			r.at(500*ms, func() { msg = r.message(payload/2, true) })
			r.run(1000 * ms)
			if dropped != tc.loss {
				t.Fatalf("background packet dropped: %v, want %v", dropped, tc.loss)
			}
			st := r.streams[msg]
			if st == nil || st.done < 0 {
				t.Fatalf("message not delivered%s", r.log())
			}
			if fast := st.mct() <= 40*ms; fast != tc.fast {
				t.Fatalf("message completion %v: want at most 40 ms: %v", st.mct(), tc.fast)
			}
		})
	}
}

// TestCWRPlusCredit checks the rule credit on cwr-plus's decisions for
// hand-made states (the rig's client grants flow-control credit faster
// than the core's background data can use it up, so this rule is tested
// on Select): two paths with room, a 10,000-byte message announced for
// 20 ms from now (within one smoothed RTT of 50 ms), and a background
// packet of 1,350 bytes. With 11,349 bytes of credit left (one byte short
// of the message and the packet) the packet waits; with 11,350 it goes;
// with nothing in flight on any path it goes whatever the credit (no
// acknowledgement, and no MAX_DATA, could come otherwise); a
// retransmission takes no new credit and goes; without the rule, it goes.
// The same for cwr and cwr-red with their option credit (their
// reservations of the message leave room for the packet).
func TestCWRPlusCredit(t *testing.T) {
	now := time.Unix(0, 0)
	path := func(id, inFlight uint64) scheduler.PathInfo {
		return scheduler.PathInfo{ID: id, Validated: true, SRTT: 50 * ms, MinRTT: 50 * ms, CWND: 100 * mps, BytesInFlight: inFlight,
			PacingBudget: math.MaxUint64, MaxPacketSize: mps, PacketOverhead: 44}
	}
	tests := []struct {
		sched    string
		credit   uint64
		inFlight uint64
		class    scheduler.Class
		sent     bool
		due      time.Duration // when the message is due (20 ms if zero)
	}{
		{"cwr-plus-v1", 11349, 10 * mps, scheduler.ClassBackground, false, 0},
		{"cwr-plus-v1", 11350, 10 * mps, scheduler.ClassBackground, true, 0},
		{"cwr-plus-v1", 0, 0, scheduler.ClassBackground, true, 0},
		{"cwr-plus-v1", 0, 10 * mps, scheduler.ClassRetransmission, true, 0},
		{"cwr-plus-v1 credit=false", 11349, 10 * mps, scheduler.ClassBackground, true, 0},
		// cwr and cwr-red have the rule as an option, off by default.
		{"cwr credit=true", 11349, 10 * mps, scheduler.ClassBackground, false, 0},
		{"cwr credit=true", 11350, 10 * mps, scheduler.ClassBackground, true, 0},
		{"cwr credit=true", 0, 10 * mps, scheduler.ClassRetransmission, true, 0},
		{"cwr", 11349, 10 * mps, scheduler.ClassBackground, true, 0},
		{"cwr-red credit=true", 11349, 10 * mps, scheduler.ClassBackground, false, 0},
		{"cwr-red credit=true", 11350, 10 * mps, scheduler.ClassBackground, true, 0},
		{"cwr-red", 11349, 10 * mps, scheduler.ClassBackground, true, 0},
		// credit_rtts: a message due at 80 ms, beyond one smoothed RTT
		// (50 ms) but within two, keeps its credit with credit_rtts = 2;
		// one due at 140 ms with 3 and not with 2.
		{"cwr-plus-v1", 11349, 10 * mps, scheduler.ClassBackground, true, 80 * ms},
		{"cwr-plus-v1 credit_rtts=2", 11349, 10 * mps, scheduler.ClassBackground, false, 80 * ms},
		{"cwr-red credit=true credit_rtts=2", 11349, 10 * mps, scheduler.ClassBackground, true, 140 * ms},
		{"cwr-red credit=true credit_rtts=3", 11349, 10 * mps, scheduler.ClassBackground, false, 140 * ms},
	}
	for _, tc := range tests {
		name, opts := rigOptions(t, tc.sched)
		s, err := scheduler.NewPathSchedulerWith(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		due := cmp.Or(tc.due, 20*ms)
		s.(scheduler.SourceAware).Announce(scheduler.Source{ID: 1, Size: 10000, Interval: 1000 * ms, Next: now.Add(due)})
		paths := []scheduler.PathInfo{path(0, tc.inFlight), path(1, tc.inFlight)}
		w := scheduler.Work{Class: tc.class, StreamID: 3, Size: mps, Pending: 1 << 20,
			Waiting: scheduler.Waiting{BackgroundBytes: 1 << 20, SendWindow: tc.credit}}
		got := s.Select(now, paths, w, nil)
		if sent := len(got) > 0; sent != tc.sent {
			t.Errorf("%s, credit %d, %d bytes in flight, %v: sent %v, want %v", tc.sched, tc.credit, tc.inFlight, tc.class, got, tc.sent)
		}
	}
}

// TestCWRPlusParity runs cwr-plus without copies in the real core on two
// paths of 25 ms one-way delay: a priority message of 10,000 bytes (8
// packets) written at 10 ms goes on path 0, and its fourth packet is
// lost. With the rule parity (both ends offering REPAIR) the parity of
// the message's packets goes on path 1 right after its last packet, the
// client rebuilds the lost bytes and reads the message about one one-way
// delay after it was written; without parity it waits for the loss to be
// detected and the bytes resent (more than 50 ms later).
func TestCWRPlusParity(t *testing.T) {
	tests := []struct {
		sched  string
		repair bool
		// fast: the message arrives within 27 ms; parity: by a parity.
		fast, parity bool
	}{
		{"cwr-plus-v1 copies=false parity=true", true, true, true},
		// Not negotiated: whole copies on every path instead.
		{"cwr-plus-v1 copies=false parity=true", false, true, false},
		{"cwr-plus-v1 copies=false", true, false, false},
		// The present defaults: parity, no copies once no path is in
		// its first slow start (the window of 100 packets is not left
		// here: startup_copies off to see the parity alone).
		{"cwr-plus startup_copies=false", true, true, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s repair=%v", tc.sched, tc.repair), func(t *testing.T) {
			r := newRigLinks(t, tc.sched, rigLink{repair: tc.repair}, rigPath{delay: 25 * ms, window: 100 * mps}, rigPath{delay: 25 * ms, window: 100 * mps})
			r.server.AnnounceSource(scheduler.Source{ID: 1, Size: 10000, Next: r.t0.Add(10 * ms)})
			var msg uint64
			n, lost := 0, 0
			r.at(10*ms, func() { msg = r.message(10000, true) })
			r.drop = func(s *rigSend) bool {
				if s.stream != msg || s.path != 0 {
					return false
				}
				n++
				if n == 4 {
					lost = s.bytes
				}
				return n == 4
			}
			r.run(400 * ms)
			st := r.streams[msg]
			if st == nil || st.done < 0 || st.received != 10000 {
				t.Fatalf("message not delivered%s", r.log())
			}
			if fast := st.mct() <= 27*ms; fast != tc.fast {
				t.Fatalf("message completion %v: want at most 27 ms: %v%s", st.mct(), tc.fast, r.log())
			}
			rs := r.server.RepairStats()
			if sent := rs.Sent == 1 && rs.Bytes >= 1300; sent != tc.parity {
				t.Fatalf("parities %+v: want one of at least 1,300 bytes: %v", rs, tc.parity)
			}
			// The client counts the lost packet's bytes as rebuilt from
			// one parity range.
			rc := r.client.RepairStats()
			if rebuilt := rc.RebuiltRanges == 1 && rc.RebuiltBytes == uint64(lost) && lost > 0; rebuilt != tc.parity {
				t.Fatalf("client's counts %+v (lost packet: %d bytes): want its bytes rebuilt: %v", rc, lost, tc.parity)
			}
			if rs.Negotiated != tc.repair {
				t.Fatalf("negotiated %v, want %v", rs.Negotiated, tc.repair)
			}
			if tc.parity {
				for _, s := range r.sends {
					if s.at == 10*ms && s.stream == 0 && s.path != 1 {
						t.Fatalf("parity packet %v not on path 1%s", s, r.log())
					}
				}
			}
		})
	}
}

// TestCWRPlusParityRules checks the rules drain, queued_copies and
// guard_one and the choice of the parity's path (Repair) on cwr-plus's
// decisions for hand-made states of two paths (50 ms smoothed and minimum
// RTT, windows of 100 packets).
func TestCWRPlusParityRules(t *testing.T) {
	now := time.Unix(0, 0)
	type pstate struct {
		srtt, latest time.Duration
		inFlight     uint64
		lost         uint64
		startup      bool // in its first slow start (ssthresh unset)
		paced        bool // the pacer lets nothing out now
	}
	mk := func(id uint64, st pstate) scheduler.PathInfo {
		ssthresh := uint64(100 * mps)
		if st.startup {
			ssthresh = math.MaxUint64
		}
		pacing := uint64(math.MaxUint64)
		if st.paced {
			pacing = 0
		}
		return scheduler.PathInfo{ID: id, Validated: true, SRTT: st.srtt, MinRTT: 50 * ms, LatestRTT: st.latest, HasRTTSample: true,
			CWND: 100 * mps, BytesInFlight: st.inFlight, SSThresh: ssthresh, PacingBudget: pacing, MaxPacketSize: mps, PacketOverhead: 44, PacketsLost: st.lost}
	}
	clear := pstate{srtt: 50 * ms, latest: 50 * ms, inFlight: 10 * mps, lost: 1}
	busy := pstate{srtt: 50 * ms, latest: 50 * ms, inFlight: 90 * mps, lost: 1}               // clear of a queue, most of its window in flight
	queued := pstate{srtt: 49 * ms, latest: 53 * ms, inFlight: 10 * mps, lost: 1}             // latest RTT 3 ms above the minimum
	fresh := pstate{srtt: 49 * ms, latest: 50 * ms, inFlight: 10 * mps, lost: 0}              // nothing lost yet
	fast := pstate{srtt: 40 * ms, latest: 53 * ms, inFlight: 10 * mps, lost: 1}               // lowest RTT, queued
	fresh1 := pstate{srtt: 50 * ms, latest: 50 * ms, inFlight: 10 * mps, startup: true}       // clear, in its first slow start
	paced := pstate{srtt: 50 * ms, latest: 50 * ms, inFlight: 10 * mps, lost: 1, paced: true} // clear, no pacing budget
	fresh1fast := pstate{srtt: 40 * ms, latest: 40 * ms, inFlight: 0, startup: true}          // lowest RTT, idle, in its first slow start
	tests := []struct {
		name   string
		sched  string
		p0, p1 pstate
		class  scheduler.Class
		want   []uint64
	}{
		// drain: 50 x (1 + 90/100) = 95 ms on path 0 against 50 x 1.1
		// = 55 ms on path 1; without it the equal RTTs go to path 0.
		{"drain", "cwr-plus-v1 copies=false drain=true", busy, clear, scheduler.ClassPriority, []uint64{1}},
		{"no drain", "cwr-plus-v1 copies=false", busy, clear, scheduler.ClassPriority, []uint64{0}},
		// queued_copies: the lowest-RTT path shows a queue, or has lost
		// nothing yet: a copy goes on path 1 too.
		{"queued copies, queue", "cwr-plus-v1 copies=false queued_copies=true", queued, clear, scheduler.ClassPriority, []uint64{0, 1}},
		{"queued copies, first slow start", "cwr-plus-v1 copies=false queued_copies=true", fresh, clear, scheduler.ClassPriority, []uint64{0, 1}},
		{"queued copies, clear", "cwr-plus-v1 copies=false queued_copies=true", clear, clear, scheduler.ClassPriority, []uint64{0}},
		{"no queued copies", "cwr-plus-v1 copies=false", queued, clear, scheduler.ClassPriority, []uint64{0}},
		// guard_one: the queued lowest-RTT path keeps background data
		// while path 1 is clear; without it they go on path 1.
		{"guard one", "cwr-plus-v1 guard_one=true", fast, clear, scheduler.ClassBackground, []uint64{0}},
		{"guard", "cwr-plus-v1", fast, clear, scheduler.ClassBackground, []uint64{1}},
		{"guard one, both queued", "cwr-plus-v1 guard_one=true", fast, queued, scheduler.ClassBackground, nil},
		// startup_guard: the queued lowest-RTT path 0 has left its first
		// slow start, path 1 has not: path keeps no guard on path 0; conn
		// keeps it while path 1 is in its start-up, so the data go on
		// path 1; once neither is, neither guards.
		{"startup guard path", "cwr-plus-v1 startup_guard=path", fast, fresh1, scheduler.ClassBackground, []uint64{0}},
		{"startup guard conn", "cwr-plus-v1 startup_guard=conn", fast, fresh1, scheduler.ClassBackground, []uint64{1}},
		{"startup guard conn, both out", "cwr-plus-v1 startup_guard=conn", fast, clear, scheduler.ClassBackground, []uint64{0}},
		// unpaced_priority: priority data leave whatever the pacer's
		// budget, background data wait for it.
		{"unpaced priority", "cwr-plus-v1 unpaced_priority=true", paced, paced, scheduler.ClassPriority, []uint64{0, 1}},
		{"paced priority", "cwr-plus-v1", paced, paced, scheduler.ClassPriority, nil},
		{"unpaced priority, background", "cwr-plus-v1 unpaced_priority=true", paced, paced, scheduler.ClassBackground, nil},
		// stagger_startup: path 1, lower RTT but in its first slow start,
		// gets no background data while path 0 is in its own; once path 0
		// is out it does; priority data are not held.
		{"stagger", "cwr-plus-v1 queue_guard=false stagger_startup=true", fresh1, fresh1fast, scheduler.ClassBackground, []uint64{0}},
		{"no stagger", "cwr-plus-v1 queue_guard=false", fresh1, fresh1fast, scheduler.ClassBackground, []uint64{1}},
		{"stagger, path 0 out", "cwr-plus-v1 queue_guard=false stagger_startup=true", clear, fresh1fast, scheduler.ClassBackground, []uint64{1}},
		{"stagger, priority", "cwr-plus-v1 copies=false stagger_startup=true", fresh1, fresh1fast, scheduler.ClassPriority, []uint64{1}},
		{"stagger, retransmission", "cwr-plus-v1 queue_guard=false stagger_startup=true", fresh1, fresh1fast, scheduler.ClassRetransmission, []uint64{0}},
		{"no stagger, retransmission", "cwr-plus-v1 queue_guard=false", fresh1, fresh1fast, scheduler.ClassRetransmission, []uint64{1}},
		// startup_copies (the present defaults, parity off so that its
		// fallback copies nothing): a copy on every path while one is in
		// its first slow start, none once neither is.
		{"startup copies", "cwr-plus parity=false", fresh1, clear, scheduler.ClassPriority, []uint64{0, 1}},
		{"no startup copies", "cwr-plus parity=false startup_copies=false", fresh1, clear, scheduler.ClassPriority, []uint64{0}},
		{"startup copies, both out", "cwr-plus parity=false", clear, clear, scheduler.ClassPriority, []uint64{0}},
		// parity not negotiated (Work.Waiting.Repair false here): whole
		// copies instead.
		{"parity's fallback", "cwr-plus", clear, clear, scheduler.ClassPriority, []uint64{0, 1}},
	}
	for _, tc := range tests {
		name, opts := rigOptions(t, tc.sched)
		s, err := scheduler.NewPathSchedulerWith(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		paths := []scheduler.PathInfo{mk(0, tc.p0), mk(1, tc.p1)}
		w := scheduler.Work{Class: tc.class, StreamID: 3, Priority: tc.class == scheduler.ClassPriority, Size: mps, Pending: 1 << 20,
			Waiting: scheduler.Waiting{BackgroundBytes: 1 << 20, SendWindow: 1 << 30}}
		if got := s.Select(now, paths, w, nil); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Select = %v, want %v", tc.name, got, tc.want)
		}
	}

	// The parity's path: one that carried none of the burst, else the
	// lowest-RTT one with room; none for other streams or without the rule.
	full := pstate{srtt: 50 * ms, latest: 50 * ms, inFlight: 120 * mps, lost: 1}   // beyond the window and the budget
	lowRTT := pstate{srtt: 40 * ms, latest: 40 * ms, inFlight: 10 * mps, lost: 1}  // 10 ms faster than clear
	nearRTT := pstate{srtt: 49 * ms, latest: 49 * ms, inFlight: 10 * mps, lost: 1} // 1 ms faster than clear
	repairs := []struct {
		name      string
		sched     string
		p0, p1    pstate
		priority  bool
		dataPaths []uint64
		want      uint64
		ok        bool
	}{
		{"other path", "cwr-plus-v1 copies=false parity=true", clear, clear, true, []uint64{0}, 1, true},
		{"other path is path 0", "cwr-plus-v1 copies=false parity=true", clear, clear, true, []uint64{1}, 0, true},
		{"other path full", "cwr-plus-v1 copies=false parity=true", clear, full, true, []uint64{0}, 0, true},
		{"both full", "cwr-plus-v1 copies=false parity=true", full, full, true, []uint64{0}, 0, false},
		{"not priority", "cwr-plus-v1 copies=false parity=true", clear, clear, false, []uint64{0}, 0, false},
		{"no parity rule", "cwr-plus-v1 copies=false", clear, clear, true, []uint64{0}, 0, false},
		// The other path is more than QueueGuard slower: the parity goes
		// on the data's own, faster path.
		{"other path slower", "cwr-plus", lowRTT, clear, true, []uint64{0}, 0, true},
		{"other path within QueueGuard", "cwr-plus", nearRTT, clear, true, []uint64{0}, 1, true},
	}
	for _, tc := range repairs {
		name, opts := rigOptions(t, tc.sched)
		s, err := scheduler.NewPathSchedulerWith(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		rp, isRepairer := s.(scheduler.Repairer)
		if !isRepairer {
			t.Fatalf("%s is no Repairer", name)
		}
		paths := []scheduler.PathInfo{mk(0, tc.p0), mk(1, tc.p1)}
		got, ok := rp.Repair(now, paths, scheduler.RepairRequest{StreamID: 1, Priority: tc.priority, Offset: 0, End: 10000, ChunkLen: 1300, DataPaths: tc.dataPaths})
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("%s: Repair = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestCWRPlusStaggerStartup runs cwr-plus in the real core on two paths
// of 10 Mbit/s with equal delays and bulk background data, path 1 the
// faster (5 against 10 ms). With stagger_startup path 1 carries no
// background data while path 0 is in its first slow start: none at all
// until a background packet the link loses at 100 ms ends path 0's (the
// rig's controller then reports an ssthresh), some after it. Without the
// rule the lower-RTT path 1 takes background data from the start. With
// stagger_clear path 1 waits on after that loss while path 0's window
// (60 packets, 81 kB, the rig's controller keeps it) queues at the
// bottleneck (its bandwidth-delay product is 25 kB), and not with a
// window of 12 packets (16.2 kB), which its delivery rate of about
// 16.2 kB per 20 ms carries within its minimum RTT plus 2 ms. A
// controller without a slow-start threshold (BBR) ends its first start-up
// by leaving its Startup state: path 0's controller plays BBR's states,
// Startup until 100 ms and Drain from then (bbr), or Startup throughout
// (bbrStartup), without a loss; the core reports the end
// (PathInfo.LeftStartup) and path 1 then takes background data.
func TestCWRPlusStaggerStartup(t *testing.T) {
	tests := []struct {
		sched        string
		loss         bool
		window       uint64 // path 0's, packets
		bbr          string // "", "bbr" or "bbrStartup"
		early, later bool   // background data on path 1 before 100 ms, and from 150 ms
	}{
		{"cwr-plus-v1 queue_guard=false", false, 60, "", true, true},
		{"cwr-plus-v1 queue_guard=false stagger_startup=true", false, 60, "", false, false},
		{"cwr-plus-v1 queue_guard=false stagger_startup=true", true, 60, "", false, true},
		{"cwr-plus-v1 queue_guard=false stagger_startup=true stagger_clear=true", true, 60, "", false, false},
		{"cwr-plus-v1 queue_guard=false stagger_startup=true stagger_clear=true", true, 12, "", false, true},
		{"cwr-plus-v1 queue_guard=false stagger_startup=true", false, 60, "bbr", false, true},
		{"cwr-plus-v1 queue_guard=false stagger_startup=true", false, 60, "bbrStartup", false, false},
		{"cwr-red", false, 60, "", true, true},
		{"cwr-red stagger_startup=true", false, 60, "", false, false},
		{"cwr-red stagger_startup=true", true, 60, "", false, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s loss=%v window=%d %s", tc.sched, tc.loss, tc.window, tc.bbr), func(t *testing.T) {
			r := newRigLinks(t, tc.sched, rigLink{rate: 10e6, queue: 200 * mps},
				rigPath{delay: 10 * ms, window: tc.window * mps}, rigPath{delay: 5 * ms, window: 60 * mps})
			if tc.bbr != "" {
				st := congestion.BBRStartup
				r.cc[0].state = &st
				if tc.bbr == "bbr" {
					r.at(100*ms, func() { st = congestion.BBRDrain })
				}
			}
			bg := r.background(1 << 24)
			dropped := false
			r.drop = func(s *rigSend) bool {
				if tc.loss && !dropped && s.stream == bg && s.path == 0 && s.at >= 100*ms {
					dropped = true
					return true
				}
				return false
			}
			r.run(400 * ms)
			if dropped != tc.loss {
				t.Fatalf("background packet dropped: %v, want %v", dropped, tc.loss)
			}
			var early, later bool
			for _, s := range r.sends {
				if s.stream != bg || s.path != 1 || s.class != scheduler.ClassBackground {
					continue
				}
				early = early || s.at < 100*ms
				later = later || s.at >= 150*ms
			}
			if early != tc.early || later != tc.later {
				t.Fatalf("background on path 1 before 100 ms: %v, from 150 ms: %v; want %v, %v%s", early, later, tc.early, tc.later, r.log())
			}
		})
	}
}

// TestCWRPlusSkipsHeldBack checks that cwr-plus asks the core to let
// priority data pass the data it holds back (HeldBackSkipper) exactly
// when stagger_startup holds retransmissions of streams without priority;
// the core's side of it is tested with cwr's skip_held_back.
func TestCWRPlusSkipsHeldBack(t *testing.T) {
	for _, tc := range []struct {
		sched string
		want  bool
	}{
		{"cwr-plus-v1", false},
		{"cwr-plus-v1 stagger_startup=true", true},
		{"cwr", false},
		{"cwr stagger_startup=true", true},
		{"cwr-red", false},
		{"cwr-red stagger_startup=true", true},
		{"cwr-red skip_held_back=true", true},
	} {
		name, opts := rigOptions(t, tc.sched)
		s, err := scheduler.NewPathSchedulerWith(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		h, ok := s.(scheduler.HeldBackSkipper)
		if !ok || h.SkipsHeldBack() != tc.want {
			t.Errorf("%s: HeldBackSkipper %v, SkipsHeldBack want %v", tc.sched, ok, tc.want)
		}
	}
}

// TestPathInfoBytesAcked checks the core's PathInfo.BytesAcked against
// the packets it reported acknowledged to the probe: at every send
// decision, on path 1, the sum of their sizes, with a lost packet not
// counted.
func TestPathInfoBytesAcked(t *testing.T) {
	r := newRigLinks(t, "lowrtt", rigLink{rate: 10e6, queue: 200 * mps},
		rigPath{delay: 10 * ms, window: 20 * mps}, rigPath{delay: 10 * ms, window: 20 * mps})
	bg := r.background(1 << 22)
	dropped := false
	r.drop = func(s *rigSend) bool {
		if !dropped && s.stream == bg && s.path == 1 && s.at >= 50*ms {
			dropped = true
			return true
		}
		return false
	}
	r.run(300 * ms)
	if !dropped {
		t.Fatal("no packet dropped on path 1")
	}
	if len(r.probe.ackedMismatch) > 0 {
		t.Fatalf("BytesAcked differs from the acknowledged packets:\n%s", strings.Join(r.probe.ackedMismatch, "\n"))
	}
	if r.probe.acked[1] < 100*mps {
		t.Fatalf("path 1: %d bytes acknowledged, want a busy path", r.probe.acked[1])
	}
}

// TestCWRPlusStaggerClearRules checks stagger_clear on hand-made path
// states fed one decision every 10 ms: path 0, out of its first slow
// start, delivers 12,500 bytes per 10 ms (1.25 MB/s, minimum RTT 50 ms),
// so its window is clear of the overshoot at 1.25e6 x 0.052 = 65,000
// bytes or less; path 1, the lower RTT (40 ms), is in its first slow
// start. Background data go on path 1 only once path 0 is clear: a
// window of 48 packets (64,800 bytes), no queue shown, and a rate
// measured over one minimum RTT; otherwise on path 0.
func TestCWRPlusStaggerClearRules(t *testing.T) {
	t0 := time.Unix(1000, 0)
	path0 := func(k int, cwndPackets uint64, latest time.Duration) scheduler.PathInfo {
		return scheduler.PathInfo{ID: 0, Validated: true, SRTT: 50 * ms, MinRTT: 50 * ms, LatestRTT: latest, HasRTTSample: true,
			CWND: cwndPackets * mps, BytesInFlight: 10 * mps, SSThresh: 40 * mps, PacingBudget: math.MaxUint64,
			MaxPacketSize: mps, PacketOverhead: 44, PacketsLost: 1, BytesAcked: uint64(k) * 12500}
	}
	path1 := scheduler.PathInfo{ID: 1, Validated: true, SRTT: 40 * ms, MinRTT: 40 * ms, LatestRTT: 40 * ms, HasRTTSample: true,
		CWND: 100 * mps, SSThresh: math.MaxUint64, PacingBudget: math.MaxUint64, MaxPacketSize: mps, PacketOverhead: 44}
	const on = "cwr-plus-v1 queue_guard=false stagger_startup=true stagger_clear=true"
	tests := []struct {
		name     string
		sched    string
		cwnd     uint64 // path 0's window, packets
		latest   time.Duration
		history  int // decisions before the checked one, 10 ms apart
		priority bool
		want     []uint64
	}{
		{"clear", on, 48, 50 * ms, 6, false, []uint64{1}},
		{"window above the rate's", on, 49, 50 * ms, 6, false, []uint64{0}},
		{"no rate yet", on, 48, 50 * ms, 0, false, []uint64{0}},
		{"rate over less than a minimum RTT", on, 48, 50 * ms, 4, false, []uint64{0}},
		{"queue shown", on, 48, 53 * ms, 6, false, []uint64{0}},
		{"stagger_startup alone", "cwr-plus-v1 queue_guard=false stagger_startup=true", 49, 50 * ms, 6, false, []uint64{1}},
		{"priority not held", "cwr-plus-v1 copies=false stagger_startup=true stagger_clear=true", 49, 50 * ms, 6, true, []uint64{1}},
		// cwr and cwr-red have the same options.
		{"cwr, clear", "cwr stagger_startup=true stagger_clear=true", 48, 50 * ms, 6, false, []uint64{1}},
		{"cwr, window above the rate's", "cwr stagger_startup=true stagger_clear=true", 49, 50 * ms, 6, false, []uint64{0}},
		{"cwr, no stagger", "cwr", 49, 50 * ms, 6, false, []uint64{1}},
		{"cwr-red, clear", "cwr-red stagger_startup=true stagger_clear=true", 48, 50 * ms, 6, false, []uint64{1}},
		{"cwr-red, window above the rate's", "cwr-red stagger_startup=true stagger_clear=true", 49, 50 * ms, 6, false, []uint64{0}},
		{"cwr-red, stagger_startup alone", "cwr-red stagger_startup=true", 49, 50 * ms, 6, false, []uint64{1}},
	}
	for _, tc := range tests {
		name, opts := rigOptions(t, tc.sched)
		s, err := scheduler.NewPathSchedulerWith(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		class := scheduler.ClassBackground
		if tc.priority {
			class = scheduler.ClassPriority
		}
		w := scheduler.Work{Class: class, StreamID: 3, Priority: tc.priority, Size: mps, Pending: 1 << 20,
			Waiting: scheduler.Waiting{BackgroundBytes: 1 << 20, SendWindow: 1 << 30}}
		var got []uint64
		for k := 0; k <= tc.history; k++ {
			paths := []scheduler.PathInfo{path0(k, tc.cwnd, tc.latest), path1}
			got = s.Select(t0.Add(time.Duration(k)*10*ms), paths, w, nil)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: Select = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCWRPlusSecondParity runs cwr-plus (the present defaults,
// startup_copies off to see the parities alone) in the real core on two
// paths of 25 ms one-way delay: a first priority message of 10,000 bytes
// at 10 ms loses one packet of its eight (the parity rebuilds it), which
// puts path 0's loss rate at about one in ten (the second message may go
// on path 1: the rule takes the highest rate of the paths); a second at 200 ms loses
// two. With rule second_parity the second message gets a
// REPAIR_Q parity beside its REPAIR one, the client rebuilds both lost
// packets and reads the message about one one-way delay after it was
// written; without the rule, or with one loss only too few to matter
// (second_parity asks a loss rate that makes two losses likelier than
// SecondParityRisk), it waits for a retransmission.
func TestCWRPlusSecondParity(t *testing.T) {
	for _, tc := range []struct {
		sched  string
		window uint64 // each path's, in packets
		fast   bool
		second uint64 // second parities sent
	}{
		{"cwr-plus startup_copies=false", 100, true, 1},
		{"cwr-plus startup_copies=false second_parity=risk", 100, true, 1},
		{"cwr-plus startup_copies=false second_parity=off", 100, false, 0},
		// Windows of 8 packets carry 2 x 8 x 1,350 bytes per 50 ms,
		// 432 kB/s; two parities per 190 ms are 14.2 kB/s, 3.3 % of it
		// (within the budget of 5 %), with windows of 4 packets 6.6 %
		// (beyond it), and risk does not look at the cost.
		{"cwr-plus startup_copies=false", 8, true, 1},
		{"cwr-plus startup_copies=false", 4, false, 0},
		{"cwr-plus startup_copies=false second_parity=risk", 4, true, 1},
	} {
		t.Run(fmt.Sprintf("%s window=%d", tc.sched, tc.window), func(t *testing.T) {
			r := newRigLinks(t, tc.sched, rigLink{repair: true}, rigPath{delay: 25 * ms, window: tc.window * mps}, rigPath{delay: 25 * ms, window: tc.window * mps})
			r.server.AnnounceSource(scheduler.Source{ID: 1, Size: 10000, Next: r.t0.Add(10 * ms)})
			var first, second uint64
			n1, n2 := 0, 0
			r.at(10*ms, func() { first = r.message(10000, true) })
			r.at(200*ms, func() { second = r.message(10000, true) })
			r.drop = func(s *rigSend) bool {
				switch {
				case s.stream == 0: // a parity
					return false
				case s.stream == first:
					n1++
					return n1 == 3
				case s.stream == second:
					n2++
					return n2 == 2 || n2 == 6
				}
				return false
			}
			r.run(600 * ms)
			st := r.streams[second]
			if st == nil || st.done < 0 || st.received != 10000 {
				t.Fatalf("second message not delivered%s", r.log())
			}
			if fast := st.mct() <= 27*ms; fast != tc.fast {
				t.Fatalf("second message's completion %v: want at most 27 ms: %v%s", st.mct(), tc.fast, r.log())
			}
			rs := r.server.RepairStats()
			if rs.SecondSent != tc.second || !rs.SecondNegotiated {
				t.Fatalf("parities %+v: want %d second ones, REPAIR_Q negotiated", rs, tc.second)
			}
			if rc := r.client.RepairStats(); tc.fast && rc.RebuiltRanges != 2 {
				t.Fatalf("client's counts %+v: want bytes of both messages rebuilt", rc)
			}
		})
	}
}
