package scheduler

import "time"

// The decisions below are the path scheduler's, taken outside Select: what
// happens to data whose packet was lost or is stranded on a path that may
// be broken, which path carries the acknowledgements of a path that cannot
// carry its own, and how large a packet of lost data may be. A path
// scheduler takes one over by implementing its interface; the core applies
// the Default* function of the others, which is the core's behaviour from
// before these hooks existed.

// LossReason says why a packet's data is offered to a LossPolicy.
type LossReason uint8

// Loss reasons.
const (
	// LossDeclared: loss detection declared the packet lost (RFC 9002
	// Section 6.1). Its data is gone unless a copy in flight delivers it.
	LossDeclared LossReason = iota
	// LossPTO: the probe timeout of the packet's path expired while
	// another path is open (draft-ietf-quic-multipath-21 Section 5.5: the
	// path may be broken). The packet stays outstanding: if it arrives
	// after all, it acknowledges its data; until then it counts in its
	// path's bytes in flight.
	LossPTO
	// LossPathFailed: the packet's path was found broken (PathInfo.Failed)
	// and everything outstanding on it was declared lost at once. As for
	// LossDeclared, the data is gone unless a copy in flight delivers it.
	LossPathFailed
)

func (r LossReason) String() string {
	switch r {
	case LossPTO:
		return "pto"
	case LossPathFailed:
		return "path_failed"
	}
	return "declared"
}

// PacketRef names a 1-RTT packet: its path, its packet number in that
// path's number space, and when it was sent.
type PacketRef struct {
	PathID, PacketNumber uint64
	SentAt               time.Time
}

// LostPacket describes an ack-eliciting 1-RTT packet whose data may have
// to be sent again.
type LostPacket struct {
	PacketRef
	Reason LossReason
	// Priority reports that the packet carried stream data of a stream
	// flagged as priority; StreamBytes counts the stream data it carried.
	Priority    bool
	StreamBytes uint64
	// Copies are the other packets sent with the same frames (the copies
	// a path scheduler asked for with several paths, or the original of a
	// copy) that are still outstanding: neither acknowledged nor declared
	// lost. Empty for a packet sent on one path only.
	Copies []PacketRef
}

// LossAction is what the core does with the frames of a LostPacket.
type LossAction uint8

// Loss actions.
const (
	// ResendNow queues the packet's frames again at once; the schedulers
	// choose the path of the stream data as for any retransmission
	// (Work.Class ClassRetransmission). The default.
	ResendNow LossAction = iota
	// ResendOn queues the frames again and marks the stream data as
	// meant for the path LossDecision.Path: the path scheduler then sees
	// Work.Pinned and Work.PinnedPath when that data is scheduled, and
	// decides. The core never forces the path.
	ResendOn
	// LeaveToCopies queues nothing now. For a declared loss (LossDeclared
	// or LossPathFailed) this is allowed only while Copies is not empty
	// (a copy in flight may still deliver the data; if it is lost too,
	// the policy is asked again about it, then without copies); the core
	// resends a declared loss without copies whatever the policy says,
	// so that no data is ever forgotten. At a PTO the packet itself is still outstanding, and
	// LeaveToCopies waits for it (or for its loss); on a path that
	// delivers nothing any more its loss is never declared (no
	// acknowledgement arrives there to declare it), so the data waits
	// until the policy decides otherwise at one of the path's further
	// PTOs, at each of which it is asked again, or until the path is
	// found broken (LossPathFailed) or abandoned, which declare it lost.
	LeaveToCopies
)

func (a LossAction) String() string {
	switch a {
	case ResendOn:
		return "resend_on"
	case LeaveToCopies:
		return "leave_to_copies"
	default:
		return "resend_now"
	}
}

// LossDecision is a LossPolicy's answer.
type LossDecision struct {
	Action LossAction
	// Path is the path named by ResendOn.
	Path uint64
}

// LossPolicy is implemented by path schedulers that decide what happens to
// lost or PTO-stranded data.
type LossPolicy interface {
	// OnDataLost is called for every ack-eliciting 1-RTT packet declared
	// lost, and, when a path's probe timeout expires while another path
	// is open, for every ack-eliciting packet outstanding on that path.
	// paths are the connection's paths at that moment (as for Select).
	// It runs inside loss processing: after the path's packet was
	// removed from bytes in flight (for a declared loss) and before the
	// congestion controller reacts to it.
	OnDataLost(now time.Time, paths []PathInfo, lp *LostPacket) LossDecision
}

// DefaultLossDecision is the core's decision for path schedulers that do
// not implement LossPolicy: resend now, copies in flight or not, and at a
// PTO queue everything outstanding on the path again at once so that the
// other paths carry it (the reinjection of draft-ietf-quic-multipath-21
// Section 5.5).
func DefaultLossDecision(*LostPacket) LossDecision { return LossDecision{Action: ResendNow} }

// AckPathChooser is implemented by path schedulers that choose the path
// carrying the acknowledgements (PATH_ACK frames) of paths that cannot
// carry their own: abandoned paths, and paths for which the peer has not
// provided a connection ID.
type AckPathChooser interface {
	// AckPath returns the ID of the path, among paths (never empty: the
	// active paths that can carry acknowledgements), that carries them.
	// An ID not in paths makes the core use DefaultAckPath.
	AckPath(now time.Time, paths []PathInfo) uint64
}

// DefaultAckPath returns the index in paths (never empty) of the path with
// the lowest smoothed RTT; equal RTTs go to the lower index.
func DefaultAckPath(paths []PathInfo) int {
	best := 0
	for i := range paths {
		if paths[i].SRTT < paths[best].SRTT {
			best = i
		}
	}
	return best
}

// RetransmissionSizer is implemented by path schedulers that choose the
// size of packets carrying lost stream data.
type RetransmissionSizer interface {
	// RetransmissionSize returns the size in bytes that the next packet,
	// which carries lost data of stream w.StreamID (w.Class is
	// ClassRetransmission, w.LostBytes its lost bytes), may have. Select
	// then sees it as w.Size, and the core keeps the packet within it.
	// w.Size holds the default (DefaultRetransmissionSize); paths are as
	// for Select. The core clamps the result to at least
	// MinRetransmissionSize and at most the configured maximum packet
	// size.
	RetransmissionSize(w Work, paths []PathInfo) int
}

// MinRetransmissionSize is the smallest size the core accepts from a
// RetransmissionSizer: room for a short header, an AEAD tag, a STREAM
// frame header and a few bytes of data.
const MinRetransmissionSize = 128

// DefaultRetransmissionSize is the size of a packet of lost data for path
// schedulers that do not implement RetransmissionSizer: the configured
// maximum packet size, whatever the lost bytes.
func DefaultRetransmissionSize(maxPacketSize int) int { return maxPacketSize }

// ExpectedSize is the size of a packet that carries n bytes of stream data
// on path p, with its overhead and room for an ACK or a few control frames
// (as the core sizes packets of new data): at most p's maximum packet
// size.
func ExpectedSize(n uint64, p *PathInfo) int {
	return int(min(uint64(p.MaxPacketSize), n+uint64(p.PacketOverhead)+PacketSlack))
}

// PacketSlack is the room the core keeps in a packet beyond its stream data
// and overhead, for ACK and control frames.
const PacketSlack = 64

// HeldBackSkipper is implemented by path schedulers that may ask the core
// to look past a stream whose packet they hold back. The core offers the
// stream scheduler's choice first; when Select returns no path for a
// packet of a stream without priority (a background retransmission beside
// a reservation, say) and SkipsHeldBack is true, the core offers the
// stream scheduler's next choice among the other streams, and so on, as
// long as a stream with priority is among them. It does so only with a
// stream scheduler that puts one STREAM frame in a packet
// (MaxStreamFrames 1, as priority-fifo): with several, the packet's other
// frames would carry the held-back stream's data. Without it (or with
// false) a held-back stream holds back every stream behind it: the stream
// scheduler's order is strict.
type HeldBackSkipper interface {
	SkipsHeldBack() bool
}

// IdleKeeper is implemented by path schedulers that keep the data of
// streams without priority off a path by a rule that is not about the
// path being full (cwr-plus's, cwr's and cwr-red's stagger_startup: a
// path waits for the start-up of the paths before it). KeepsIdle reports
// whether the scheduler's latest decision for such data kept it off path
// id. The core then counts the path as application limited for its
// congestion controller when the path's window would let a packet go
// (congestion.AppLimitedObserver: bbr's rate samples of an idle path
// neither end its start-up nor lower its bandwidth estimate). Data a
// scheduler holds back because the path is full (a rate cap, a
// reservation, a queue guard) is not such a rule: the path is then
// limited as by its window, not by the application.
type IdleKeeper interface {
	KeepsIdle(id uint64) bool
}

// RepairRequest describes a burst of a stream's data, the bytes written
// since its last burst (a message, when the application writes a message
// at once), all sent once, for a Repairer.
type RepairRequest struct {
	StreamID uint64
	Priority bool
	// Offset and End delimit the burst, [Offset, End); ChunkLen is the
	// most of its bytes one packet carried (the parity's chunk length:
	// any single lost packet's bytes then fall in distinct columns and
	// can be rebuilt).
	Offset, End, ChunkLen uint64
	// DataPaths are the paths the burst went on.
	DataPaths []uint64
}

// Repairer is implemented by a path scheduler that protects streams with
// XOR parity (the experimental REPAIR extension, negotiated by both ends'
// transport.repair). Once a connection has negotiated it, the core asks
// Repair once per burst of a stream's data: as soon as the packet that
// carried the last byte the application had written was sent. When
// Repair returns a path, the core sends at once on that path the parity
// of the burst's bytes [Offset, End) in chunks of ChunkLen (in REPAIR
// frames of their own, in one packet or, when the parity is longer than a
// packet's room, more), whatever the path's window says: the policy
// checks that before it answers. Repair data are never retransmitted; a
// burst longer than 64 KiB (streams.MaxRepairHistory) gets none.
type Repairer interface {
	Repair(now time.Time, paths []PathInfo, req RepairRequest) (pathID uint64, ok bool)
}

// SecondRepairer is implemented by a Repairer that may give a burst a
// second parity, its Reed-Solomon parity (the REPAIR_Q frames, offered
// with REPAIR by the same transport.repair), so that any two lost
// packets of the burst are rebuilt. Once a connection has negotiated
// REPAIR_Q, the core asks SecondRepair about every burst that Repair
// gave a parity (of at most 255 chunks of ChunkLen), at once after it;
// when it returns a path, the core sends the second parity there, on the
// same terms as the first.
type SecondRepairer interface {
	SecondRepair(now time.Time, paths []PathInfo, req RepairRequest) (pathID uint64, ok bool)
}

// RepairOfferer is implemented by a Repairer whose options may leave
// parity off: OffersRepair reports whether it sends parity, so that a
// connection offers the REPAIR extension by default only then
// (OffersRepair).
type RepairOfferer interface {
	OffersRepair() bool
}

// OffersRepair reports whether the path scheduler name with the options o
// sends parity when the REPAIR extension is negotiated: a Repairer that
// is not a RepairOfferer always does. Unknown names and bad options
// report false.
func OffersRepair(name string, o Options) bool {
	s := pathOrNil(name, o)
	if _, ok := s.(Repairer); !ok {
		return false
	}
	if r, ok := s.(RepairOfferer); ok {
		return r.OffersRepair()
	}
	return true
}

// StreamWindowFollower is implemented by a path scheduler whose rules
// rely on the receiving end's connection flow-control window growing
// with its stream windows (transport.conn_window_follows_stream):
// FollowsStreamWindow reports whether they do with its options, so that
// an experiment turns that rule of the receiving end on by default then
// (FollowsStreamWindow). cwr-plus's credit rule keeps the connection's
// credit of the messages due soon, which a connection window that lags
// the bulk stream's runs out of at once.
type StreamWindowFollower interface {
	FollowsStreamWindow() bool
}

// FollowsStreamWindow reports whether the path scheduler name with the
// options o asks for the connection's receive window to follow the
// stream windows (StreamWindowFollower). Unknown names and bad options
// report false.
func FollowsStreamWindow(name string, o Options) bool {
	f, ok := pathOrNil(name, o).(StreamWindowFollower)
	return ok && f.FollowsStreamWindow()
}

// pathOrNil is the path scheduler name with the options o, nil for an
// unknown name or bad options (which implements no interface).
func pathOrNil(name string, o Options) PathScheduler {
	s, err := NewPath(name, o)
	if err != nil {
		return nil
	}
	return s
}
