package scheduler

import "time"

func init() {
	RegisterPath("sr", func() PathScheduler { return NewSelectiveRedundancy() })
	RegisterPath("redundant", func() PathScheduler { return &Redundant{} })
}

// SelectiveRedundancy is the selective redundant MP-QUIC scheduler of
// Mogensen et al. ("Selective Redundant MP-QUIC for 5G Mission Critical
// Wireless Applications", VTC2019-Spring; and Mogensen, "Reliability
// Enhancement for LTE using MPQUIC in a Mixed Traffic Scenario", 2018),
// the baseline the CWR paper cites as [11][12] in Section II.
//
// Among the candidate paths (as for lowrtt: usable available paths, else
// usable backup paths, else every validated path):
//
//   - A priority packet (ClassPriority, or ClassRetransmission of a
//     priority stream) is sent at once on every candidate path, lowest
//     RTT first, whatever their congestion windows and pacers say.
//   - The bytes of such a packet that lie beyond the path's window when it
//     is sent (bytes_in_flight + size - cwnd, at most the packet's size,
//     from the state OnPacketSent reports) are borrowed: the path's usable
//     window for every other packet shrinks by them until that packet (by
//     path and packet number) is acknowledged or declared lost. This is
//     how the original keeps the congestion controller in charge: its
//     window is lowered by what priority data took beyond it, for as long
//     as that data is in flight.
//   - Every other packet (background, control, retransmissions of other
//     streams) goes on the lowest-RTT candidate p whose pacer lets it out
//     and with bytes_in_flight_p + packet + borrowed_p <= cwnd_p; if none
//     qualifies, nothing is sent now. Equal RTTs go to the lower index in
//     paths. With nothing borrowed this is lowrtt.
type SelectiveRedundancy struct {
	cand, order []int
	ledger      borrowLedger
	// lastPriority is the priority flag of the last Select: OnPacketSent
	// reports the class of the packet, not the stream's flag.
	lastPriority bool
}

// NewSelectiveRedundancy returns an sr scheduler.
func NewSelectiveRedundancy() *SelectiveRedundancy {
	return &SelectiveRedundancy{ledger: newBorrowLedger()}
}

// Name implements PathScheduler.
func (*SelectiveRedundancy) Name() string { return "sr" }

// Select implements PathScheduler.
func (s *SelectiveRedundancy) Select(_ time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	s.lastPriority = w.Priority
	s.cand = candidates(paths, s.cand)
	if isPriority(w) {
		s.order = byRTT(paths, s.cand, s.order)
		for _, i := range s.order {
			dst = append(dst, paths[i].ID)
		}
		return dst
	}
	best := -1
	for _, i := range s.cand {
		p := &paths[i]
		if !fitsWith(p, w.Size, s.ledger.borrowed[p.ID]) {
			continue
		}
		if best < 0 || p.SRTT < paths[best].SRTT {
			best = i
		}
	}
	if best >= 0 {
		dst = append(dst, paths[best].ID)
	}
	return dst
}

// Borrowed returns the bytes currently borrowed on a path.
func (s *SelectiveRedundancy) Borrowed(pathID uint64) uint64 { return s.ledger.borrowed[pathID] }

// OnPacketSent implements PacketObserver: a priority packet sent beyond
// the window borrows the excess.
func (s *SelectiveRedundancy) OnPacketSent(_ time.Time, info *PathInfo, pn uint64, size int, class Class) {
	if class != ClassPriority && (class != ClassRetransmission || !s.lastPriority) {
		return
	}
	s.ledger.sent(info, pn, size)
}

// OnPacketAcked implements PacketObserver: the packet gives back what it
// borrowed.
func (s *SelectiveRedundancy) OnPacketAcked(_ time.Time, pathID, pn uint64) {
	s.ledger.settled(pathID, pn)
}

// OnPacketLost implements PacketObserver: the packet gives back what it
// borrowed.
func (s *SelectiveRedundancy) OnPacketLost(_ time.Time, pathID, pn uint64) {
	s.ledger.settled(pathID, pn)
}

// Redundant sends every packet, whatever its class, on every candidate
// path (as for lowrtt: usable available paths, else usable backup paths,
// else every validated path) whose congestion window and pacer let it out
// (PathInfo.CanSend), lowest RTT first; the core sends copies on all but
// the first. A path without room is skipped for this packet, which is not
// copied there later: the copies are bounded by each path's window, so a
// slow path carries copies of only as many packets as its window admits.
// If no candidate has room, nothing is sent now. It is the "duplicate as
// many packets as possible" baseline that the CWR paper's Section II
// contrasts with selective redundancy (after Vu and Walker, "On the Latency
// of Multipath-QUIC in Real-Time Applications", WiMob 2020, its [10]); the
// per-path window rule is ours.
type Redundant struct{ cand, order []int }

// Name implements PathScheduler.
func (*Redundant) Name() string { return "redundant" }

// Select implements PathScheduler.
func (s *Redundant) Select(_ time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	s.cand = candidates(paths, s.cand)
	s.order = byRTT(paths, s.cand, s.order)
	for _, i := range s.order {
		if paths[i].CanSend(w.Size) {
			dst = append(dst, paths[i].ID)
		}
	}
	return dst
}

var _ PacketObserver = (*SelectiveRedundancy)(nil)
