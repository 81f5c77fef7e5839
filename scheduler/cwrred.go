package scheduler

import (
	"slices"
	"time"
)

func init() {
	RegisterPath("cwr-red", func() PathScheduler { return NewCWRRed() })
}

// CWRRed is the CWR + Redundancy path scheduler of Noroozi et al., Section
// III-D2: CWR with reservations on every path, and priority messages
// duplicated on every path when every path can take them.
//
// The paper's rule, sentence by sentence, and how it is read here:
//
//   - "While the CWR scheduler adds a reservation to only one path, the
//     CWR+RED adds the reservations to both paths." Every message of
//     every announced source is reserved on every candidate path (as for
//     lowrtt: usable available paths, else usable backup paths, else
//     every validated path): the reserved bytes of path p are, for the
//     messages due in (now, now + srtt_p], their WireBytes plus
//     PacketSlack each (the room the core keeps in a message's last,
//     short packet for ACK frames, so that the whole message, not only
//     its full packets, fits the room reserved for it). As in CWR, a path
//     keeps only the reservations its window can hold: a message that
//     does not fit a path's window beside the messages reserved there
//     before it holds nothing back on that path ("If a packet loss occurs
//     before a message is generated, the reserved area cannot be used
//     because it is dropped", Section III-D1).
//   - "To send data with the priority, the corresponding packets are
//     duplicated and sent on all paths. Due to the reservation on all
//     paths, there is no transmission delay even for the duplicates."
//     The decision is taken per message: when the first packet of a
//     message is scheduled (Work.Class ClassPriority, and the stream's
//     Work.Pending larger than what was left of the stream's previous
//     message), the message is duplicated if every candidate can take
//     all of it now: its congestion window has room for WireBytes(
//     Work.Pending) + PacketSlack and its pacer lets the packet out.
//     Each packet of a duplicated message is then sent at once on every
//     candidate, lowest RTT first (the core builds it on the first and
//     copies it onto the others), as long as every candidate can take it
//     (PathInfo.CanSend).
//   - "In case the reservations are not successful and the congestion
//     [window] of each path is too small to send a message completely,
//     the scheduler will refrain from redundant sending. There is then
//     still the possibility that the sum of the free areas in the
//     congestion windows is sufficient to send the data." A message that
//     not every candidate can take completely is sent without copies.
//     The paper does not say on which path(s); each of its packets goes
//     on the path that delivers the rest of the message earliest: the
//     stream's bytes that wait to be sent (Work.Pending: the rest of the
//     message, or lost bytes and what follows them), as their WireBytes
//     plus PacketSlack but at most p's window (and at least the packet),
//     are estimated to arrive over path p after the wait until p's window
//     and pacer let them all out plus p's one-way delay, srtt_p / 2 (the
//     paper's OWD = RTT/2, Section II). The wait is 0 if they fit p's
//     window now (its pacer holding them back is a short wait), else the
//     time until enough of p's packets in flight are acknowledged (each
//     one srtt_p after it was sent, oldest first; PacketObserver), or
//     srtt_p if what is in flight does not explain the full window. If
//     the earliest path cannot take the packet now, nothing is sent now:
//     the packet waits for that path instead of going alone on a slower
//     one. So a message is split over several paths only where that is
//     faster, and never goes alone on a slower path while the fastest
//     path frees room for it sooner than the slower path's extra one-way
//     delay. The rest of the message counts, not the packet alone: its
//     packets leave one after the other, and a packet that waits for one
//     path's next acknowledgement holds the packets behind it too (chosen
//     packet by packet, messages of paper-fig4 at 50 ms / 50 kB took
//     55 ms, waiting packet by packet for path 0's acknowledgements while
//     path 1 had room for all of them and nothing in flight).
//     (This is what the paper's Section IV-C2 describes at 20/100 ms: the
//     distributions of CWR and CWR+RED nearly identical, the fast path
//     carrying the messages.) Ties go to the lower smoothed RTT, then to
//     the lower index in paths.
//   - "In general, for packets that could not be duplicated immediately,
//     no duplicate is created afterward." A message decided without
//     copies keeps that decision for all its packets, even if the windows
//     open before its last packet leaves; a packet of a duplicated
//     message that not every candidate can take then goes without copies
//     as above, and so does the rest of that message. No packet is ever
//     copied after it was sent.
//   - "This scheduler behaves exactly like the CWR scheduler on the
//     background data." Background packets (and retransmissions of
//     streams without priority) go on the lowest-RTT candidate p with
//     bytes_in_flight_p + packet + reserved_p <= cwnd_p and room in its
//     pacer; if none qualifies, nothing is sent now. As in CWR,
//     reservations do not hold data back while no candidate has anything
//     in flight. Control-only packets go on the lowest-RTT candidate that
//     can take them, never held back by reservations.
//
// Where the paper is silent:
//
//   - Lost priority data (ClassRetransmission of a priority stream) is
//     decided per packet like a message of its lost bytes: duplicated if
//     every candidate can take them all now, else sent once on the path
//     that delivers it earliest. CWRRed sizes packets of lost data (of
//     any stream) to their lost bytes (RetransmissionSizer,
//     ExpectedSize), not to a full packet, so that a small lost tail
//     does not wait for a full packet's room.
//   - A lost copy whose twin is still in flight (LossPolicy): if the lost
//     copy's path has a lower smoothed RTT than the paths of all its
//     copies in flight, its data is sent again on that path (ResendOn):
//     the fast path's loss recovery (about one fast RTT) beats the copy
//     on the slow path, as the paper says for 20/100 ms ("A packet loss
//     on path 1 is resolved with the Early Retransmission procedure even
//     before the duplicate arrives on path 2"). Such a pinned
//     retransmission waits for its path if that path cannot take it now
//     (sending it on the slower path would only repeat the copy already
//     in flight there); if the path is no longer a candidate it is
//     scheduled like any lost priority data. A lost copy with a twin in
//     flight on a faster path is left to that twin (LeaveToCopies; if
//     the twin is lost too, its own loss sends the data again). Data
//     stranded by a probe timeout, and lost data without copies in
//     flight, are sent again at once, as by default.
//   - With a single candidate path, everything is CWR's rule on that
//     path.
//
// reservations_missed is counted as in CWR, per path and message: with
// reservations on every path a message can miss on one path and not on
// another.
type CWRRed struct {
	res   reserver
	cand  []int
	order []int
	// msgs are the decisions on the priority messages in progress, most
	// recent last (at most maxMessages).
	msgs []messageDecision
	// flight are the packets in flight on each path, oldest first.
	flight map[uint64][]flightPacket
}

// messageDecision is the duplication decision of the message in progress
// on a stream; left is the stream's pending bytes at its last packet.
type messageDecision struct {
	stream uint64
	dup    bool
	left   uint64
}

// maxMessages bounds the message decisions CWRRed remembers. Messages are
// served in order (priority-fifo), so only a few are in progress at once;
// a forgotten one is decided again as a new message.
const maxMessages = 64

// flightPacket is a packet in flight on a path.
type flightPacket struct {
	pn     uint64
	size   uint64
	sentAt time.Time
}

// NewCWRRed returns a CWR+RED scheduler without sources.
func NewCWRRed() *CWRRed {
	return &CWRRed{res: reserver{everyPath: true, slack: PacketSlack}, flight: map[uint64][]flightPacket{}}
}

// Name implements PathScheduler.
func (*CWRRed) Name() string { return "cwr-red" }

// Announce implements SourceAware.
func (s *CWRRed) Announce(src Source) { s.res.announce(src) }

// Withdraw implements SourceAware.
func (s *CWRRed) Withdraw(id uint64) { s.res.withdraw(id) }

// PathCounters implements Counters: "reservations_missed".
func (s *CWRRed) PathCounters(pathID uint64) map[string]uint64 { return s.res.counters(pathID) }

// NextWakeup implements Waker.
func (s *CWRRed) NextWakeup(now time.Time) time.Time { return s.res.nextWakeup(now) }

// Select implements PathScheduler.
func (s *CWRRed) Select(now time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	s.cand = candidates(paths, s.cand)
	reserved := s.res.reserve(now, paths, s.cand)
	if priorityWaits(w) {
		s.res.settle(now, paths)
	}
	if !isPriority(w) || len(s.cand) < 2 {
		if i := pickBackgroundOrNot(paths, s.cand, w, reserved); i >= 0 {
			dst = append(dst, paths[i].ID)
		}
		return dst
	}
	if w.Class == ClassRetransmission && w.Pinned {
		for _, i := range s.cand {
			if paths[i].ID == w.PinnedPath {
				if paths[i].CanSend(w.Size) {
					dst = append(dst, paths[i].ID)
				}
				return dst
			}
		}
	}
	s.order = byRTT(paths, s.cand, s.order)
	if s.duplicate(paths, w) {
		all := true
		for _, i := range s.order {
			all = all && paths[i].CanSend(w.Size)
		}
		if all {
			for _, i := range s.order {
				dst = append(dst, paths[i].ID)
			}
			return dst
		}
		s.undup(w.StreamID)
	}
	if i := s.earliest(now, paths, w); i >= 0 && paths[i].CanSend(w.Size) {
		dst = append(dst, paths[i].ID)
	}
	return dst
}

// duplicate reports whether the packet of w belongs to a message (or a
// retransmission) that goes on every candidate.
func (s *CWRRed) duplicate(paths []PathInfo, w Work) bool {
	if w.Class == ClassRetransmission {
		return s.allTake(paths, w.LostBytes, w.Size)
	}
	for k := range s.msgs {
		m := &s.msgs[k]
		if m.stream != w.StreamID {
			continue
		}
		if w.Pending <= m.left {
			m.left = w.Pending
			return m.dup
		}
		s.msgs = slices.Delete(s.msgs, k, k+1)
		break
	}
	if len(s.msgs) >= maxMessages {
		s.msgs = slices.Delete(s.msgs, 0, 1)
	}
	dup := s.allTake(paths, w.Pending, w.Size)
	s.msgs = append(s.msgs, messageDecision{stream: w.StreamID, dup: dup, left: w.Pending})
	return dup
}

// undup turns the message in progress on stream into one without copies.
func (s *CWRRed) undup(stream uint64) {
	for k := range s.msgs {
		if s.msgs[k].stream == stream {
			s.msgs[k].dup = false
		}
	}
}

// allTake reports whether every candidate can take n bytes of stream data
// now: room in its window for their WireBytes plus PacketSlack, and a
// pacer that lets the first packet (of size bytes) out.
func (s *CWRRed) allTake(paths []PathInfo, n uint64, size int) bool {
	for _, i := range s.cand {
		p := &paths[i]
		need := uint64(WireBytes(int(min(n, 1<<40)), p)) + PacketSlack
		if !p.Validated || p.CwndRoom() < need || p.PacingBudget < uint64(size) {
			return false
		}
	}
	return true
}

// earliest returns the index of the candidate that delivers the rest of
// the message of w earliest (see CWRRed); -1 if there is none.
func (s *CWRRed) earliest(now time.Time, paths []PathInfo, w Work) int {
	best := -1
	var bestAt time.Duration
	for _, i := range s.order { // lowest RTT first: ties keep it
		p := &paths[i]
		n := uint64(WireBytes(int(min(w.Pending, 1<<40)), p)) + PacketSlack
		n = max(min(n, p.CWND), uint64(w.Size))
		at := s.wait(now, p, n) + p.SRTT/2
		if best < 0 || at < bestAt {
			best, bestAt = i, at
		}
	}
	return best
}

// wait estimates how long n bytes wait before path p's window lets them
// all out (p's pacer holding them back counts as no wait).
func (s *CWRRed) wait(now time.Time, p *PathInfo, n uint64) time.Duration {
	if p.BytesInFlight+n <= p.CWND {
		return 0
	}
	need := p.BytesInFlight + n - p.CWND
	var freed uint64
	for _, f := range s.flight[p.ID] {
		freed += f.size
		if freed >= need {
			return max(f.sentAt.Add(p.SRTT).Sub(now), 0)
		}
	}
	return p.SRTT
}

// OnPacketSent implements PacketObserver: the packet joins its path's
// packets in flight.
func (s *CWRRed) OnPacketSent(now time.Time, info *PathInfo, pn uint64, size int, _ Class) {
	s.flight[info.ID] = append(s.flight[info.ID], flightPacket{pn: pn, size: uint64(size), sentAt: now})
}

// OnPacketAcked implements PacketObserver.
func (s *CWRRed) OnPacketAcked(_ time.Time, pathID, pn uint64) { s.settle(pathID, pn) }

// OnPacketLost implements PacketObserver.
func (s *CWRRed) OnPacketLost(_ time.Time, pathID, pn uint64) { s.settle(pathID, pn) }

func (s *CWRRed) settle(pathID, pn uint64) {
	fl := s.flight[pathID]
	i, ok := slices.BinarySearchFunc(fl, pn, func(f flightPacket, pn uint64) int {
		switch {
		case f.pn < pn:
			return -1
		case f.pn > pn:
			return 1
		}
		return 0
	})
	if !ok {
		return
	}
	fl = slices.Delete(fl, i, i+1)
	if len(fl) == 0 {
		delete(s.flight, pathID)
		return
	}
	s.flight[pathID] = fl
}

// OnDataLost implements LossPolicy (see CWRRed).
func (s *CWRRed) OnDataLost(_ time.Time, paths []PathInfo, lp *LostPacket) LossDecision {
	if lp.Reason != LossDeclared || !lp.Priority || len(lp.Copies) == 0 {
		return DefaultLossDecision(lp)
	}
	srtt := func(id uint64) (time.Duration, bool) {
		for i := range paths {
			if paths[i].ID == id {
				return paths[i].SRTT, true
			}
		}
		return 0, false
	}
	own, ok := srtt(lp.PathID)
	if !ok {
		return DefaultLossDecision(lp)
	}
	for _, c := range lp.Copies {
		if r, ok := srtt(c.PathID); ok && r <= own {
			return LossDecision{Action: LeaveToCopies}
		}
	}
	return LossDecision{Action: ResendOn, Path: lp.PathID}
}

// RetransmissionSize implements RetransmissionSizer: a packet of lost data
// is sized to the lost bytes (ExpectedSize), as packets of new data are.
func (s *CWRRed) RetransmissionSize(w Work, paths []PathInfo) int {
	size := 0
	for i := range paths {
		size = max(size, ExpectedSize(w.LostBytes, &paths[i]))
	}
	if size == 0 {
		return w.Size
	}
	return size
}

var (
	_ SourceAware         = (*CWRRed)(nil)
	_ Counters            = (*CWRRed)(nil)
	_ Waker               = (*CWRRed)(nil)
	_ PacketObserver      = (*CWRRed)(nil)
	_ LossPolicy          = (*CWRRed)(nil)
	_ RetransmissionSizer = (*CWRRed)(nil)
)
