package scheduler

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// tagged builds the scheduler sched (cwr or cwr-red) for a test case whose
// name starts with tags in brackets: "[whole]" sets reservation =
// "whole", "[alternate]" equal_rtt = "alternate", "[next]" horizon =
// "next", "[message]" path_choice = "message", "[noescape]" idle_escape =
// false, and "[fast]" builds cwr-red-fast instead of cwr-red.
func tagged(t *testing.T, sched, name string) PathScheduler {
	t.Helper()
	opts := map[string]any{}
	for strings.HasPrefix(name, "[") {
		tag, rest, _ := strings.Cut(name[1:], "]")
		name = strings.TrimSpace(rest)
		switch tag {
		case "whole":
			opts[OptReservation] = "whole"
		case "alternate":
			opts[OptEqualRTT] = "alternate"
		case "next":
			opts[OptHorizon] = "next"
		case "message":
			opts[OptPathChoice] = "message"
		case "noescape":
			opts[OptIdleEscape] = false
		case "fast":
			sched = "cwr-red-fast"
		default:
			t.Fatalf("unknown tag %q", tag)
		}
	}
	s, err := NewPathSchedulerWith(sched, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
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
	// A 9-packet message: it fits the 10-packet window, with less than a
	// packet beside it.
	big := []Source{{ID: 1, Size: 9 * simPayload, Next: time.Unix(1000, 0).Add(10 * ms)}}
	// A 10-packet message: with the slack, larger than the window.
	tooBig := []Source{{ID: 1, Size: 10 * simPayload, Next: time.Unix(1000, 0).Add(10 * ms)}}
	// Two sources of 4 and 6 packets: the second, with the slack, does
	// not fit beside the first in the 10-packet window.
	twoMsgs := []Source{{ID: 1, Size: 4 * simPayload, Next: time.Unix(1000, 0).Add(5 * ms)}, {ID: 2, Size: 6 * simPayload, Next: time.Unix(1000, 0).Add(10 * ms)}}
	// 4-packet messages every 30 ms from 10 ms on: only the next (at
	// 10 ms) is reserved with horizon = "next", even when the srtt
	// window would hold two.
	periodic := []Source{{ID: 1, Size: 4 * simPayload, Interval: 30 * ms, Next: time.Unix(1000, 0).Add(10 * ms)}}
	tests := []struct {
		name    string
		sources []Source
		paths   []PathInfo
		w       Work
		want    []uint64
	}{
		{"background fits beside the reservation", msg(10 * ms), []PathInfo{mk(0, 20*ms, 4), mk(1, 50*ms, 0)}, bg, []uint64{0}},
		// 5 + 1 + 4 packets fill the window exactly: the slack is missing.
		{"the reservation has the slack of the message's last packet", msg(10 * ms), []PathInfo{mk(0, 20*ms, 5), mk(1, 50*ms, 0)}, bg, []uint64{1}},
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
		// A reservation that leaves less than a packet of the window:
		// with nothing in flight, background data still goes where it
		// fits beside it, and only where no path fits does it take the
		// reserved room.
		{"nothing in flight: background beside the reservation", big, []PathInfo{mk(0, 20*ms, 0), mk(1, 50*ms, 0)}, bg, []uint64{1}},
		{"nothing in flight, no room beside the reservation: not held", big, []PathInfo{mk(0, 20*ms, 0)}, bg, []uint64{0}},
		{"something in flight, no room beside the reservation: held", big, []PathInfo{mk(0, 20*ms, 1)}, bg, nil},
		// reservation = "whole": a reservation larger than the window
		// is dropped: it holds nothing back, with or without data in
		// flight.
		{"[whole] reservation larger than the window dropped", tooBig, []PathInfo{mk(0, 20*ms, 1), mk(1, 50*ms, 10)}, bg, []uint64{0}},
		{"[whole] reservation larger than the window dropped: the last packet of room", tooBig, []PathInfo{mk(0, 20*ms, 9), mk(1, 50*ms, 0)}, bg, []uint64{0}},
		// By default ("partial") it holds the whole window.
		{"reservation larger than the window holds all of it", tooBig, []PathInfo{mk(0, 20*ms, 1), mk(1, 50*ms, 10)}, bg, nil},
		{"reservation larger than the window: background on the other path", tooBig, []PathInfo{mk(0, 20*ms, 9), mk(1, 50*ms, 0)}, bg, []uint64{1}},
		// Two messages: the second does not fit beside the first. Whole:
		// it reserves nothing, and a packet fits beside the first;
		// partial: the window is held.
		{"[whole] the message that does not fit reserves nothing", twoMsgs, []PathInfo{mk(0, 20*ms, 0)}, bg, []uint64{0}},
		{"the message that does not fit reserves the rest of the window", twoMsgs, []PathInfo{mk(0, 20*ms, 1), mk(1, 50*ms, 10)}, bg, nil},
		// horizon = "next": a message beyond one srtt is reserved too.
		{"[next] message beyond srtt reserved", msg(30 * ms), []PathInfo{mk(0, 20*ms, 6), mk(1, 50*ms, 10)}, bg, nil},
		{"[next] only the next message of a source", periodic, []PathInfo{mk(0, 50*ms, 1), mk(1, 90*ms, 10)}, bg, []uint64{0}},
		{"srtt: every message within it", periodic, []PathInfo{mk(0, 50*ms, 1), mk(1, 90*ms, 10)}, bg, nil},
		// idle_escape = false: held even with nothing in flight.
		{"[noescape] nothing in flight, no room beside the reservation: held", big, []PathInfo{mk(0, 20*ms, 0)}, bg, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tagged(t, "cwr", tc.name).(*CWR)
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
		{"equal RTTs: the first by path ID", 0, []PathInfo{mk(7, 50*ms), mk(3, 50*ms)}, []uint64{3, 3, 3, 3, 3}},
		{"three equal paths: the first", 1, []PathInfo{mk(2, 50*ms), mk(1, 50*ms), mk(3, 50*ms)}, []uint64{1, 1, 1, 1, 1}},
		{"[alternate] equal RTTs alternate", 0, []PathInfo{mk(3, 50*ms), mk(7, 50*ms)}, []uint64{3, 7, 3, 7, 3}},
		{"[alternate] by path ID, not position", 0, []PathInfo{mk(7, 50*ms), mk(3, 50*ms)}, []uint64{3, 7, 3, 7, 3}},
		{"[alternate] source ID shifts the phase", 1, []PathInfo{mk(3, 50*ms), mk(7, 50*ms)}, []uint64{7, 3, 7, 3, 7}},
		{"[alternate] three equal paths", 0, []PathInfo{mk(1, 50*ms), mk(2, 50*ms), mk(3, 50*ms)}, []uint64{1, 2, 3, 1, 2}},
		{"lowest RTT takes all", 0, []PathInfo{mk(3, 50*ms), mk(7, 40*ms)}, []uint64{7, 7, 7, 7, 7}},
		{"[alternate] lowest RTT takes all", 0, []PathInfo{mk(3, 50*ms), mk(7, 40*ms)}, []uint64{7, 7, 7, 7, 7}},
		{"[alternate] slower third path not in the rotation", 0, []PathInfo{mk(1, 40*ms), mk(2, 90*ms), mk(3, 40*ms)}, []uint64{1, 3, 1, 3, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tagged(t, "cwr", tc.name).(*CWR)
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
				// A one-packet message: its wire bytes and the slack.
				if want := n * (simMPS + PacketSlack); reserved[i] != want {
					t.Fatalf("path %d: reserved %d bytes, want %d", tc.paths[i].ID, reserved[i], want)
				}
				sum += reserved[i]
			}
			if sum != uint64(len(got))*(simMPS+PacketSlack) {
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

// TestCWRRedSelect checks single decisions of a fresh CWRRed (each the
// first packet of a message, or lost data).
func TestCWRRedSelect(t *testing.T) {
	const pkt = simMPS
	mk := func(id uint64, srtt time.Duration, inflightPkts int) PathInfo {
		p := path(id, srtt, 10*pkt, uint64(inflightPkts*pkt))
		p.PacketOverhead = simOverhead
		return p
	}
	backup := func(p PathInfo) PathInfo { p.Status = StatusBackup; return p }
	work := func(c Class, prio bool, pending int) Work {
		return Work{Class: c, Priority: prio, Size: pkt, Pending: uint64(pending)}
	}
	bg := work(ClassBackground, false, 100*simPayload)
	prio := work(ClassPriority, true, simPayload)
	msg3 := work(ClassPriority, true, 3*simPayload)
	lost := work(ClassRetransmission, true, 1000)
	lost.LostBytes = 1000
	pinned := func(id uint64) Work { w := lost; w.Pinned, w.PinnedPath = true, id; return w }
	src := []Source{{ID: 1, Size: 2 * simPayload, Next: time.Unix(1000, 0).Add(10 * ms)}}
	tests := []struct {
		name    string
		sources []Source
		paths   []PathInfo
		w       Work
		want    []uint64
	}{
		{"message on both paths, fastest first", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, msg3, []uint64{1, 0}},
		{"a path without room for all of it: no copies, fastest path", nil, []PathInfo{mk(0, 50*ms, 8), mk(1, 20*ms, 0)}, msg3, []uint64{1}},
		{"room for the message plus the slack only", nil, []PathInfo{mk(0, 50*ms, 7), mk(1, 20*ms, 0)}, msg3, []uint64{1}},
		{"[fast] fast path full, frees room before the slow path's extra delay: wait", nil, []PathInfo{mk(0, 100*ms, 0), mk(1, 20*ms, 10)}, prio, nil},
		{"[fast] fast path full, slow path barely slower: the slow one", nil, []PathInfo{mk(0, 25*ms, 0), mk(1, 20*ms, 10)}, prio, []uint64{0}},
		{"fast path full: the slow path at once (like LowRTT)", nil, []PathInfo{mk(0, 100*ms, 0), mk(1, 20*ms, 10)}, prio, []uint64{0}},
		{"both full: nothing", nil, []PathInfo{mk(0, 50*ms, 10), mk(1, 20*ms, 10)}, prio, nil},
		{"three paths, one full: no copies", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0), mk(2, 30*ms, 10)}, prio, []uint64{1}},
		{"three paths with room", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0), mk(2, 30*ms, 0)}, prio, []uint64{1, 2, 0}},
		{"backup not duplicated onto", nil, []PathInfo{mk(0, 50*ms, 0), backup(mk(1, 20*ms, 0))}, prio, []uint64{0}},
		{"background single path", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, bg, []uint64{1}},
		{"reserved on both: background held on both", src, []PathInfo{mk(0, 50*ms, 7), mk(1, 20*ms, 7)}, bg, nil},
		{"reserved on both: background fits on one", src, []PathInfo{mk(0, 50*ms, 6), mk(1, 20*ms, 7)}, bg, []uint64{0}},
		{"reservations do not hold data back when nothing is in flight", []Source{{ID: 1, Size: 20 * simPayload, Interval: ms, Next: time.Unix(1000, 0).Add(ms)}},
			[]PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, bg, []uint64{1}},
		{"reservation ignored by priority", src, []PathInfo{mk(0, 50*ms, 7), mk(1, 20*ms, 7)}, prio, []uint64{1, 0}},
		{"control single path, never held", src, []PathInfo{mk(0, 50*ms, 9), mk(1, 20*ms, 9)}, work(ClassControl, false, 0), []uint64{1}},
		{"lost priority data duplicated when every path takes it", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, lost, []uint64{1, 0}},
		{"lost priority data once on the earliest path", nil, []PathInfo{mk(0, 50*ms, 10), mk(1, 20*ms, 0)}, lost, []uint64{1}},
		{"lost priority data once on the path with room", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 10)}, lost, []uint64{0}},
		{"pinned lost data on its path only", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, pinned(1), []uint64{1}},
		{"pinned lost data waits for its path", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 10)}, pinned(1), nil},
		{"pinned to a path no longer there: as other lost data", nil, []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, pinned(7), []uint64{1, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tagged(t, "cwr-red", tc.name).(*CWRRed)
			for _, src := range tc.sources {
				s.Announce(src)
			}
			if got := s.Select(time.Unix(1000, 0), tc.paths, tc.w, nil); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCWRRedMessageDecision follows the packets of messages through one
// CWRRed: the duplication decision of a message's first packet holds for
// the rest of the message, a message decided without copies never gets
// any, and the next message is decided afresh.
func TestCWRRedMessageDecision(t *testing.T) {
	const pkt = simMPS
	t0 := time.Unix(1000, 0)
	mk := func(id uint64, srtt time.Duration, cwndPkts, inflightPkts int) PathInfo {
		p := path(id, srtt, uint64(cwndPkts*pkt), uint64(inflightPkts*pkt))
		p.PacketOverhead = simOverhead
		return p
	}
	msg := func(stream uint64, pendingPkts int) Work {
		return Work{Class: ClassPriority, Priority: true, StreamID: stream, Size: pkt, Pending: uint64(pendingPkts * simPayload)}
	}
	type step struct {
		paths []PathInfo
		w     Work
		want  []uint64
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"no copies afterwards", []step{
			// The slow path has room for 2 of the 3 packets: none is
			// copied, not even after its window opens.
			{[]PathInfo{mk(0, 20*ms, 10, 0), mk(1, 50*ms, 10, 8)}, msg(4, 3), []uint64{0}},
			{[]PathInfo{mk(0, 20*ms, 10, 1), mk(1, 50*ms, 10, 0)}, msg(4, 2), []uint64{0}},
			{[]PathInfo{mk(0, 20*ms, 10, 2), mk(1, 50*ms, 10, 0)}, msg(4, 1), []uint64{0}},
			// The next message on the same stream is decided again.
			{[]PathInfo{mk(0, 20*ms, 10, 3), mk(1, 50*ms, 10, 0)}, msg(4, 3), []uint64{0, 1}},
		}},
		{"a duplicated message loses its copies for good", []step{
			{[]PathInfo{mk(0, 20*ms, 10, 0), mk(1, 50*ms, 10, 6)}, msg(8, 3), []uint64{0, 1}},
			// The slow path's window shrank (a loss): this packet and the
			// rest go once, on the fastest path.
			{[]PathInfo{mk(0, 20*ms, 10, 1), mk(1, 50*ms, 7, 7)}, msg(8, 2), []uint64{0}},
			{[]PathInfo{mk(0, 20*ms, 10, 2), mk(1, 50*ms, 10, 0)}, msg(8, 1), []uint64{0}},
		}},
		{"messages of two streams decided apart", []step{
			{[]PathInfo{mk(0, 20*ms, 10, 0), mk(1, 50*ms, 10, 0)}, msg(4, 2), []uint64{0, 1}},
			{[]PathInfo{mk(0, 20*ms, 10, 1), mk(1, 50*ms, 10, 8)}, msg(8, 2), []uint64{0}},
			{[]PathInfo{mk(0, 20*ms, 10, 2), mk(1, 50*ms, 10, 8)}, msg(4, 1), []uint64{0, 1}},
			{[]PathInfo{mk(0, 20*ms, 10, 3), mk(1, 50*ms, 10, 0)}, msg(8, 1), []uint64{0}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewCWRRed()
			for i, st := range tc.steps {
				if got := s.Select(t0.Add(time.Duration(i)*ms), st.paths, st.w, nil); !reflect.DeepEqual(got, st.want) {
					t.Fatalf("step %d: got %v, want %v", i, got, st.want)
				}
			}
		})
	}
}

// TestCWRRedWait checks the wait CWRRed expects before a full path takes
// a packet, or the rest of a message: until enough of its packets in
// flight are acknowledged, each
// one smoothed RTT after it left.
func TestCWRRedWait(t *testing.T) {
	const pkt = simMPS
	t0 := time.Unix(1000, 0)
	fast := path(0, 20*ms, 4*pkt, 0)
	s := tagged(t, "cwr-red", "[fast]").(*CWRRed)
	// Four packets 0, 2, 4 and 6 ms after t0 fill the window.
	for k := range 4 {
		info := fast
		info.BytesInFlight = uint64(k * pkt)
		s.OnPacketSent(t0.Add(time.Duration(2*k)*ms), &info, uint64(k), pkt, ClassBackground)
	}
	full := fast
	full.BytesInFlight = 4 * pkt
	at := t0.Add(7 * ms)
	if got := s.wait(at, &full, pkt); got != 13*ms {
		t.Fatalf("wait for one packet: %v, want 13ms (the first packet's ACK at 20 ms)", got)
	}
	// Three packets (the rest of a message): three must be
	// acknowledged, the third at 24 ms.
	if got := s.wait(at, &full, 3*pkt); got != 17*ms {
		t.Fatalf("wait for three packets: %v, want 17ms (the third packet's ACK at 24 ms)", got)
	}
	// The window shrank to 3 packets: two must be acknowledged.
	shrunk := full
	shrunk.CWND = 3 * pkt
	if got := s.wait(at, &shrunk, pkt); got != 15*ms {
		t.Fatalf("wait in a shrunk window: %v, want 15ms", got)
	}
	// Acknowledged packets leave the estimate.
	s.OnPacketAcked(at, 0, 0)
	full.BytesInFlight = 3 * pkt
	if got := s.wait(at, &full, pkt); got != 0 {
		t.Fatalf("wait with room: %v", got)
	}
	full.BytesInFlight = 4 * pkt // a packet the scheduler did not see
	if got := s.wait(at, &full, pkt); got != 15*ms {
		t.Fatalf("wait after an ACK: %v, want 15ms", got)
	}
	// Nothing known in flight: one smoothed RTT.
	other := path(1, 50*ms, 2*pkt, 2*pkt)
	if got := s.wait(at, &other, pkt); got != 50*ms {
		t.Fatalf("wait without packets seen: %v, want 50ms", got)
	}
}

// TestCWRRedLossPolicy checks CWRRed's decisions on lost data.
func TestCWRRedLossPolicy(t *testing.T) {
	paths := []PathInfo{path(0, 20*ms, 10*simMPS, 0), path(1, 100*ms, 10*simMPS, 0)}
	copyOn := func(id uint64) []PacketRef { return []PacketRef{{PathID: id, PacketNumber: 7}} }
	tests := []struct {
		name string
		lp   LostPacket
		want LossDecision
	}{
		{"fast copy lost, twin in flight on the slow path: again on the fast path",
			LostPacket{PacketRef: PacketRef{PathID: 0}, Priority: true, Copies: copyOn(1)}, LossDecision{Action: ResendOn, Path: 0}},
		{"slow copy lost, twin in flight on the fast path: left to it",
			LostPacket{PacketRef: PacketRef{PathID: 1}, Priority: true, Copies: copyOn(0)}, LossDecision{Action: LeaveToCopies}},
		{"no copy in flight: default",
			LostPacket{PacketRef: PacketRef{PathID: 0}, Priority: true}, LossDecision{Action: ResendNow}},
		{"background: default",
			LostPacket{PacketRef: PacketRef{PathID: 0}, Copies: copyOn(1)}, LossDecision{Action: ResendNow}},
		{"PTO: default",
			LostPacket{PacketRef: PacketRef{PathID: 0}, Reason: LossPTO, Priority: true, Copies: copyOn(1)}, LossDecision{Action: ResendNow}},
		{"path gone: default",
			LostPacket{PacketRef: PacketRef{PathID: 5}, Priority: true, Copies: copyOn(1)}, LossDecision{Action: ResendNow}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tagged(t, "cwr-red", "[fast]").(*CWRRed)
			if got := s.OnDataLost(time.Unix(1000, 0), paths, &tc.lp); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			// cwr-red (the paper): lost data is sent again at once.
			if got := NewCWRRed().OnDataLost(time.Unix(1000, 0), paths, &tc.lp); got != (LossDecision{Action: ResendNow}) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
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
