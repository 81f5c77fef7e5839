package scheduler

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

const ms = time.Millisecond

// TestCWRFigure3 replays the example of Figure 3 of the paper (Section
// III-D1): one path whose window holds 4 packets, empty; background data on
// stream 1 from t1; a 3-packet priority message announced for t3, within one
// RTT, written to stream 2. Only one background packet leaves before t3,
// leaving room for the three priority packets, which leave at t3 without
// waiting; the rest of stream 1 follows as ACKs free the window. With
// lowrtt instead, stream 1 fills the window and the message waits one RTT.
func TestCWRFigure3(t *testing.T) {
	const (
		t1   = 0 * ms
		t2   = 1 * ms
		t3   = 20 * ms
		srtt = 50 * ms
	)
	type step struct {
		at             time.Duration
		writeStream    uint64 // 0: no write
		packets        int
		priority, poll bool
	}
	paper := []step{
		// The data of stream 1 are ready at t1; the packet is built at
		// the next send opportunity, t2, as in the paper's description.
		{at: t1, writeStream: 1, packets: 5},
		{at: t2, poll: true},
		{at: t3, writeStream: 2, packets: 3, priority: true, poll: true},
	}
	pollAtT1 := []step{
		{at: t1, writeStream: 1, packets: 5, poll: true},
		{at: t2, poll: true},
		{at: t3, writeStream: 2, packets: 3, priority: true, poll: true},
	}
	tests := []struct {
		name   string
		ps     PathScheduler
		script []step
		want   []simSend
	}{
		{"cwr, paper", NewCWR(), paper, []simSend{
			{t2, 1, "[0]"},
			{t3, 2, "[0]"}, {t3, 2, "[0]"}, {t3, 2, "[0]"},
			{t2 + srtt, 1, "[0]"},
			{t3 + srtt, 1, "[0]"}, {t3 + srtt, 1, "[0]"}, {t3 + srtt, 1, "[0]"},
		}},
		{"cwr, first opportunity at t1", NewCWR(), pollAtT1, []simSend{
			{t1, 1, "[0]"},
			{t3, 2, "[0]"}, {t3, 2, "[0]"}, {t3, 2, "[0]"},
			{t1 + srtt, 1, "[0]"},
			{t3 + srtt, 1, "[0]"}, {t3 + srtt, 1, "[0]"}, {t3 + srtt, 1, "[0]"},
		}},
		{"cwr-red on one path", NewCWRRed(), paper, []simSend{
			{t2, 1, "[0]"},
			{t3, 2, "[0]"}, {t3, 2, "[0]"}, {t3, 2, "[0]"},
			{t2 + srtt, 1, "[0]"},
			{t3 + srtt, 1, "[0]"}, {t3 + srtt, 1, "[0]"}, {t3 + srtt, 1, "[0]"},
		}},
		{"lowrtt: the message waits for ACKs", &LowRTT{}, paper, []simSend{
			{t2, 1, "[0]"}, {t2, 1, "[0]"}, {t2, 1, "[0]"}, {t2, 1, "[0]"},
			{t2 + srtt, 2, "[0]"}, {t2 + srtt, 2, "[0]"}, {t2 + srtt, 2, "[0]"}, {t2 + srtt, 1, "[0]"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newSim(t, tc.ps, &PriorityFIFO{}, path(0, srtt, 4*simMPS, 0))
			if sa, ok := tc.ps.(SourceAware); ok {
				sa.Announce(Source{ID: 1, Size: 3 * simPayload, Next: c.at(t3)})
			}
			for _, s := range tc.script {
				c.ackUntil(s.at)
				if s.writeStream != 0 {
					c.write(s.writeStream, s.packets, s.priority)
				}
				if s.poll {
					c.poll(s.at)
				}
			}
			c.ackUntil(time.Second)
			if got := logString(c.log); got != logString(tc.want) {
				t.Fatalf("sends\n got %s\nwant %s", got, logString(tc.want))
			}
			if _, ok := tc.ps.(Counters); ok && c.missed(0) != 0 {
				t.Fatalf("reservations_missed %d, want 0", c.missed(0))
			}
		})
	}
}

func TestCWRSelect(t *testing.T) {
	const pkt = simMPS
	mk := func(id uint64, srtt time.Duration, inflightPkts int) PathInfo {
		p := path(id, srtt, 10*pkt, uint64(inflightPkts*pkt))
		p.PacketOverhead = simOverhead
		return p
	}
	backup := func(p PathInfo) PathInfo { p.Status = StatusBackup; return p }
	failed := func(p PathInfo) PathInfo { p.ConsecutivePTOs = FailedPTOs; return p }
	unpaced := func(p PathInfo) PathInfo { p.PacingBudget = 0; return p }
	work := func(c Class, prio bool) Work { return Work{Class: c, Priority: prio, Size: pkt} }
	bg, prio, ctrl := work(ClassBackground, false), work(ClassPriority, true), work(ClassControl, false)
	// A 4-packet message 10 ms from now: within the 20 ms of path 0 (the
	// fastest) and the 50 ms of path 1.
	msg := func(at time.Duration) []Source {
		return []Source{{ID: 1, Size: 4 * simPayload, Next: time.Unix(1000, 0).Add(at)}}
	}
	tests := []struct {
		name    string
		sources []Source
		paths   []PathInfo
		w       Work
		want    []uint64
	}{
		{"background fits beside the reservation", msg(10 * ms), []PathInfo{mk(0, 20*ms, 5), mk(1, 50*ms, 0)}, bg, []uint64{0}},
		{"background moves off the reserved path", msg(10 * ms), []PathInfo{mk(0, 20*ms, 6), mk(1, 50*ms, 0)}, bg, []uint64{1}},
		{"background held though a window has room", msg(10 * ms), []PathInfo{mk(0, 20*ms, 6), mk(1, 50*ms, 10)}, bg, nil},
		{"background retransmission held too", msg(10 * ms), []PathInfo{mk(0, 20*ms, 6), mk(1, 50*ms, 10)}, work(ClassRetransmission, false), nil},
		{"priority ignores the reservation", msg(10 * ms), []PathInfo{mk(0, 20*ms, 9), mk(1, 50*ms, 0)}, prio, []uint64{0}},
		{"priority retransmission ignores it too", msg(10 * ms), []PathInfo{mk(0, 20*ms, 9), mk(1, 50*ms, 10)}, work(ClassRetransmission, true), []uint64{0}},
		{"priority needs window room", msg(10 * ms), []PathInfo{mk(0, 20*ms, 10), mk(1, 50*ms, 0)}, prio, []uint64{1}},
		{"control never held", msg(10 * ms), []PathInfo{mk(0, 20*ms, 9), mk(1, 50*ms, 10)}, ctrl, []uint64{0}},
		{"message beyond srtt not reserved", msg(30 * ms), []PathInfo{mk(0, 20*ms, 9), mk(1, 50*ms, 0)}, bg, []uint64{0}},
		{"message at now+srtt reserved", msg(20 * ms), []PathInfo{mk(0, 20*ms, 6), mk(1, 50*ms, 10)}, bg, nil},
		{"message at now not reserved", msg(0), []PathInfo{mk(0, 20*ms, 9), mk(1, 50*ms, 10)}, bg, []uint64{0}},
		{"reservation on the fastest candidate only", msg(10 * ms), []PathInfo{mk(0, 20*ms, 10), mk(1, 50*ms, 9)}, bg, []uint64{1}},
		{"pacing holds background", nil, []PathInfo{unpaced(mk(0, 20*ms, 0)), mk(1, 50*ms, 0)}, bg, []uint64{1}},
		{"failed path: reservation on the backup", msg(10 * ms), []PathInfo{failed(mk(0, 20*ms, 0)), backup(mk(1, 50*ms, 6))}, bg, nil},
		{"backup unused while an available path is usable", msg(10 * ms), []PathInfo{mk(0, 50*ms, 6), backup(mk(1, 20*ms, 0))}, bg, nil},
		{"no sources: lowest RTT", nil, []PathInfo{mk(0, 50*ms, 9), mk(1, 20*ms, 9)}, bg, []uint64{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewCWR()
			for _, src := range tc.sources {
				s.Announce(src)
			}
			if got := s.Select(time.Unix(1000, 0), tc.paths, tc.w, nil); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCWRReservationPlacement checks on which path each message is
// reserved: the lowest-RTT candidate; with equal RTTs, the k-th message of
// source S goes to the ((S+k) mod n)-th of the n tied paths by path ID.
func TestCWRReservationPlacement(t *testing.T) {
	t0 := time.Unix(1000, 0)
	mk := func(id uint64, srtt time.Duration) PathInfo {
		p := path(id, srtt, 100*simMPS, 0)
		p.PacketOverhead = simOverhead
		return p
	}
	tests := []struct {
		name   string
		source uint64
		paths  []PathInfo
		want   []uint64 // path of messages k = 0, 1, 2, ...
	}{
		{"equal RTTs alternate", 0, []PathInfo{mk(3, 50*ms), mk(7, 50*ms)}, []uint64{3, 7, 3, 7, 3}},
		{"by path ID, not position", 0, []PathInfo{mk(7, 50*ms), mk(3, 50*ms)}, []uint64{3, 7, 3, 7, 3}},
		{"source ID shifts the phase", 1, []PathInfo{mk(3, 50*ms), mk(7, 50*ms)}, []uint64{7, 3, 7, 3, 7}},
		{"three equal paths", 0, []PathInfo{mk(1, 50*ms), mk(2, 50*ms), mk(3, 50*ms)}, []uint64{1, 2, 3, 1, 2}},
		{"lowest RTT takes all", 0, []PathInfo{mk(3, 50*ms), mk(7, 40*ms)}, []uint64{7, 7, 7, 7, 7}},
		{"slower third path not in the rotation", 0, []PathInfo{mk(1, 40*ms), mk(2, 90*ms), mk(3, 40*ms)}, []uint64{1, 3, 1, 3, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewCWR()
			// Five messages, 5 ms apart, all within the 40 ms window.
			s.Announce(Source{ID: tc.source, Size: simPayload, Interval: 5 * ms, Next: t0.Add(5 * ms)})
			got := make([]uint64, 0, 5)
			cand := candidates(tc.paths, nil)
			reserved := s.res.reserve(t0, tc.paths, cand)
			for _, r := range s.res.pending {
				got = append(got, r.path)
			}
			if !reflect.DeepEqual(got[:5], tc.want) {
				t.Fatalf("messages reserved on %v, want %v", got[:5], tc.want)
			}
			// The reserved bytes agree with the placement.
			var sum uint64
			for i := range tc.paths {
				var n uint64
				for _, id := range got {
					if id == tc.paths[i].ID {
						n++
					}
				}
				if reserved[i] != n*simMPS {
					t.Fatalf("path %d: reserved %d bytes, want %d", tc.paths[i].ID, reserved[i], n*simMPS)
				}
				sum += reserved[i]
			}
			if sum != uint64(len(got))*simMPS {
				t.Fatalf("reserved %d bytes in all for %d messages", sum, len(got))
			}
			// The placement is stable: a later decision keeps it.
			s.res.reserve(t0.Add(ms), tc.paths, cand)
			for i, r := range s.res.pending[:4] {
				if r.path != tc.want[i] {
					t.Fatalf("message %d moved to path %d", i, r.path)
				}
			}
		})
	}
}

// TestCWRReservationsMissed: a loss shrinks the window between the
// reservation and the message's generation; the message is counted once,
// on its path, at the first decision at or after its generation at which
// priority data wait (here a retransmission decision: priority-fifo serves
// the lost background packets first).
func TestCWRReservationsMissed(t *testing.T) {
	const srtt = 100 * ms
	tests := []struct {
		name string
		// loss: packets lost on path 0 at 10 ms, and the window after
		// it (in packets); 0 packets: no loss.
		lost, cwndAfter int
		messages        int // 3-packet messages at 50 ms, 250 ms, ...
		want            uint64
		skipFirst       bool // the application does not write the first message
	}{
		{"no loss", 0, 10, 1, 0, false},
		{"window shrank below bytes in flight", 1, 5, 1, 1, false},
		// Not counted: the window held the message when it was
		// generated. (The three lost packets, which priority-fifo
		// serves first, then take that room and delay the message;
		// the reservation of a message ends at its generation time.)
		{"window shrank but still holds the message", 3, 7, 1, 0, false},
		{"window shrank by one packet too many", 3, 6, 1, 1, false},
		{"each message counts once; the next one finds its room", 1, 5, 2, 1, false},
		// The first message's reservation failed too, but it was
		// never written: it must not eat the second one's room.
		{"a message not written is not counted", 1, 5, 2, 0, true},
	}
	for _, tc := range tests {
		for _, ps := range []PathScheduler{NewCWR(), NewCWRRed()} {
			t.Run(ps.Name()+"/"+tc.name, func(t *testing.T) {
				c := newSim(t, ps, &PriorityFIFO{}, path(0, srtt, 10*simMPS, 0))
				src := Source{ID: 9, Size: 3 * simPayload, Next: c.at(50 * ms)}
				if tc.messages > 1 {
					src.Interval = 200 * ms
				}
				ps.(SourceAware).Announce(src)
				c.write(1, 100, false)
				c.poll(0)
				if got := len(c.log); got != 7 {
					t.Fatalf("%d background packets before the message, want 7 (3 reserved)", got)
				}
				if tc.lost > 0 {
					c.lose(10*ms, 0, 1, tc.lost, uint64(tc.cwndAfter*simMPS))
				}
				for m := range tc.messages {
					gen := 50*ms + time.Duration(m)*200*ms
					c.ackUntil(gen)
					if m > 0 || !tc.skipFirst {
						c.write(2, 3, true)
					}
					c.poll(gen)
					// More decisions on the same message do not
					// count again.
					c.poll(gen + ms)
					c.ackUntil(gen + 150*ms)
				}
				if got := c.missed(0); got != tc.want {
					t.Fatalf("reservations_missed %d, want %d", got, tc.want)
				}
			})
		}
	}
}

// TestCWRRedMissedPerPath: with reservations on both paths, a loss on one
// path misses only that path's reservation.
func TestCWRRedMissedPerPath(t *testing.T) {
	c := newSim(t, NewCWRRed(), &PriorityFIFO{}, path(0, 40*ms, 4*simMPS, 0), path(1, 60*ms, 4*simMPS, 0))
	c.ps.(SourceAware).Announce(Source{ID: 1, Size: 2 * simPayload, Next: c.at(30 * ms)})
	c.write(1, 100, false)
	c.poll(0)
	if want := "[0s s1 [0] 0s s1 [0] 0s s1 [1] 0s s1 [1]]"; logString(c.log) != want {
		t.Fatalf("before the message: %s, want %s", logString(c.log), want)
	}
	c.lose(10*ms, 1, 1, 1, 2*simMPS)
	c.write(2, 2, true)
	c.poll(30 * ms)
	if m0, m1 := c.missed(0), c.missed(1); m0 != 0 || m1 != 1 {
		t.Fatalf("reservations_missed path 0: %d, path 1: %d; want 0, 1", m0, m1)
	}
}

func TestCWRRedSelect(t *testing.T) {
	const pkt = simMPS
	mk := func(id uint64, srtt time.Duration, inflightPkts int) PathInfo {
		p := path(id, srtt, 10*pkt, uint64(inflightPkts*pkt))
		p.PacketOverhead = simOverhead
		return p
	}
	backup := func(p PathInfo) PathInfo { p.Status = StatusBackup; return p }
	work := func(c Class, prio bool) Work { return Work{Class: c, Priority: prio, Size: pkt} }
	bg, prio := work(ClassBackground, false), work(ClassPriority, true)
	msg := []Source{{ID: 1, Size: 2 * simPayload, Next: time.Unix(1000, 0).Add(10 * ms)}}
	tests := []struct {
		name    string
		sources []Source
		paths   []PathInfo
		w       Work
		want    []uint64
	}{
		{"priority on both paths, fastest first", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, prio, []uint64{1, 0}},
		{"priority retransmission duplicated too", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, work(ClassRetransmission, true), []uint64{1, 0}},
		{"slow path full: once on the fast one", nil, []PathInfo{mk(0, 50*ms, 10), mk(1, 20*ms, 0)}, prio, []uint64{1}},
		{"fast path full: once on the slow one", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 10)}, prio, []uint64{0}},
		{"both full: nothing", nil, []PathInfo{mk(0, 50*ms, 10), mk(1, 20*ms, 10)}, prio, nil},
		{"three paths, one full: all or one", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0), mk(2, 30*ms, 10)}, prio, []uint64{1}},
		{"three paths with room", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0), mk(2, 30*ms, 0)}, prio, []uint64{1, 2, 0}},
		{"backup not duplicated onto", nil, []PathInfo{mk(0, 50*ms, 0), backup(mk(1, 20*ms, 0))}, prio, []uint64{0}},
		{"background single path", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, bg, []uint64{1}},
		{"reserved on both: background held on both", msg, []PathInfo{mk(0, 50*ms, 8), mk(1, 20*ms, 8)}, bg, nil},
		{"reserved on both: background fits on one", msg, []PathInfo{mk(0, 50*ms, 7), mk(1, 20*ms, 8)}, bg, []uint64{0}},
		{"reservation ignored by priority", msg, []PathInfo{mk(0, 50*ms, 9), mk(1, 20*ms, 9)}, prio, []uint64{1, 0}},
		{"control single path, never held", msg, []PathInfo{mk(0, 50*ms, 9), mk(1, 20*ms, 9)}, work(ClassControl, false), []uint64{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewCWRRed()
			for _, src := range tc.sources {
				s.Announce(src)
			}
			if got := s.Select(time.Unix(1000, 0), tc.paths, tc.w, nil); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCWRRedNoLateDuplicate: a priority packet that went once because a
// window was full is not copied when the window opens; only the packets
// decided after that are duplicated.
func TestCWRRedNoLateDuplicate(t *testing.T) {
	c := newSim(t, NewCWRRed(), &PriorityFIFO{}, path(0, 20*ms, 10*simMPS, 0), path(1, 50*ms, 2*simMPS, 2*simMPS))
	c.write(2, 2, true)
	c.poll(0)
	// The slow path's window opens: nothing is copied, as nothing waits.
	c.path(1).BytesInFlight = 0
	c.poll(1 * ms)
	c.write(2, 1, true)
	c.poll(2 * ms)
	want := "[0s s2 [0] 0s s2 [0] 2ms s2 [0 1]]"
	if got := logString(c.log); got != want {
		t.Fatalf("sends %s, want %s", got, want)
	}
}

// TestCWRWithoutSourcesIsLowRTT compares cwr (and cwr-red on
// non-priority packets) with lowrtt on random paths and work.
func TestCWRWithoutSourcesIsLowRTT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lowrtt, cwr, red := &LowRTT{}, NewCWR(), NewCWRRed()
	// A source announced and withdrawn leaves nothing behind.
	cwr.Announce(Source{ID: 5, Size: 100000, Interval: ms, Next: time.Unix(1000, 0)})
	cwr.Withdraw(5)
	for n := range 20000 {
		paths := make([]PathInfo, 1+rng.IntN(4))
		for i := range paths {
			p := &paths[i]
			p.ID = uint64(i*3 + rng.IntN(3))
			p.Validated = rng.IntN(6) != 0
			p.Status = PathStatus(rng.IntN(2))
			p.PeerStatus = PathStatus(rng.IntN(2))
			p.ConsecutivePTOs = rng.IntN(4)
			p.SRTT = time.Duration(1+rng.IntN(4)) * 10 * ms // ties are common
			p.CWND = uint64(rng.IntN(8)) * 1000
			p.BytesInFlight = uint64(rng.IntN(8)) * 1000
			p.PacingBudget = math.MaxUint64
			if rng.IntN(4) == 0 {
				p.PacingBudget = uint64(rng.IntN(3)) * 1000
			}
			p.MaxPacketSize, p.PacketOverhead = 1350, 50
		}
		w := Work{Class: Class(rng.IntN(4)), Priority: rng.IntN(2) == 0, Size: 500 + rng.IntN(1000)}
		now := time.Unix(1000, 0).Add(time.Duration(n) * ms)
		want := lowrtt.Select(now, paths, w, nil)
		if got := cwr.Select(now, paths, w, nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: cwr %v, lowrtt %v\npaths %+v\nwork %+v", n, got, want, paths, w)
		}
		if isPriority(w) {
			continue
		}
		if got := red.Select(now, paths, w, nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: cwr-red %v, lowrtt %v\npaths %+v\nwork %+v", n, got, want, paths, w)
		}
	}
}
