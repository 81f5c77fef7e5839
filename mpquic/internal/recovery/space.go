package recovery

import (
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// FrameRef records one frame a packet carried, in a form the connection can
// act on when the packet is acknowledged or lost. Recovery never interprets
// it: Kind and the fields' meanings belong to the connection.
type FrameRef struct {
	Kind   uint8
	Fin    bool
	ID     uint64
	Offset uint64
	Length uint64
}

// SentPacket is what RFC 9002 Appendix A.1.1 keeps per sent packet.
type SentPacket struct {
	Number       uint64
	TimeSent     time.Time
	Size         int  // bytes on the wire, counted in bytes_in_flight when InFlight
	AckEliciting bool // carries a frame other than ACK, PADDING, CONNECTION_CLOSE
	InFlight     bool // counts towards bytes_in_flight
	// Frames are the records the connection attached; the slice is reused
	// once the packet leaves the history, so callbacks must not retain it.
	Frames []FrameRef

	state pktState
}

type pktState uint8

const (
	stateEmpty       pktState = iota // a packet number never sent
	stateOutstanding                 // sent, neither acknowledged nor lost
	stateAcked
	stateLost
)

// Range is an inclusive range of packet numbers, as carried in ACK frames.
type Range struct{ Smallest, Largest uint64 }

// LossTrigger says why a packet was declared lost; the names are qlog's.
type LossTrigger uint8

// Loss triggers.
const (
	LossReordering LossTrigger = iota // kPacketThreshold exceeded
	LossTime                          // time threshold exceeded
)

// String returns the qlog trigger name.
func (t LossTrigger) String() string {
	if t == LossReordering {
		return "reordering_threshold"
	}
	return "time_threshold"
}

// Space is the sent-packet history and loss-detection state of one packet
// number space (RFC 9002 Appendix A). Packet numbers are expected to increase
// by one; a gap left by the sender is tolerated and never reported.
type Space struct {
	ring  []SentPacket // circular buffer, len is a power of two
	head  int          // index of the oldest kept packet
	count int          // kept packets
	base  uint64       // packet number at head
	next  uint64       // next packet number expected from OnSent

	largestAcked         int64 // -1 until an ACK arrives
	largestAckedSentTime time.Time
	lossTime             time.Time
	lastAckEliciting     time.Time
	ackElicitingInFlight int
	bytesInFlight        uint64

	// oldestScan is where OldestUnackedAbove resumes: every packet number
	// below it was seen acknowledged, lost, never sent or not
	// ack-eliciting, which it stays (the newest slot, perhaps prepared and
	// not yet sent, is never passed over).
	oldestScan uint64
}

// minRing is the first size of the history's ring: it doubles as packets
// are outstanding, so that a connection's memory grows with use.
const minRing = 8

// NewSpace returns an empty history.
func NewSpace() *Space {
	return &Space{ring: make([]SentPacket, minRing), largestAcked: -1}
}

// LargestAcked returns the largest packet number the peer acknowledged, or -1.
func (s *Space) LargestAcked() int64 { return s.largestAcked }

// LossTime is loss_time: when the time-threshold timer of this space fires;
// zero if unset.
func (s *Space) LossTime() time.Time { return s.lossTime }

// LastAckElicitingTime is time_of_last_ack_eliciting_packet.
func (s *Space) LastAckElicitingTime() time.Time { return s.lastAckEliciting }

// AckElicitingInFlight reports whether an ack-eliciting packet is outstanding.
func (s *Space) AckElicitingInFlight() bool { return s.ackElicitingInFlight > 0 }

// BytesInFlight is the size of the outstanding in-flight packets of the space.
func (s *Space) BytesInFlight() uint64 { return s.bytesInFlight }

// Outstanding is the number of packets neither acknowledged nor lost.
func (s *Space) Outstanding() int {
	n := 0
	s.each(func(p *SentPacket) bool {
		if p.state == stateOutstanding {
			n++
		}
		return true
	})
	return n
}

func (s *Space) at(i int) *SentPacket { return &s.ring[(s.head+i)&(len(s.ring)-1)] }

func (s *Space) each(f func(*SentPacket) bool) {
	for i := 0; i < s.count; i++ {
		if !f(s.at(i)) {
			return
		}
	}
}

func (s *Space) grow() {
	n := make([]SentPacket, 2*len(s.ring))
	for i := 0; i < s.count; i++ {
		n[i] = *s.at(i)
	}
	// Keep the spare Frames buffers of the slots not copied.
	s.ring, s.head = n, 0
}

func (s *Space) push() *SentPacket {
	if s.count == len(s.ring) {
		s.grow()
	}
	p := s.at(s.count)
	s.count++
	frames := p.Frames[:0]
	*p = SentPacket{Frames: frames}
	return p
}

// Prepare returns a slot for packet number pn whose Frames slice (empty, with
// reused capacity) the caller fills before calling OnSent with the same slot.
// pn must not be lower than any packet number seen before.
func (s *Space) Prepare(pn uint64) *SentPacket {
	if s.count == 0 {
		s.base = pn
		s.next = pn
	}
	for s.next < pn { // sender-side gap: keep indices equal to pn-base
		s.push()
		s.next++
	}
	p := s.push()
	p.Number = pn
	s.next = pn + 1
	return p
}

// OnSent records the packet prepared with Prepare (RFC 9002 A.5).
func (s *Space) OnSent(p *SentPacket) {
	p.state = stateOutstanding
	if p.AckEliciting {
		s.lastAckEliciting = p.TimeSent
		s.ackElicitingInFlight++
	}
	if p.InFlight {
		s.bytesInFlight += uint64(p.Size)
	}
}

func (s *Space) lookup(pn uint64) *SentPacket {
	if s.count == 0 || pn < s.base || pn >= s.base+uint64(s.count) {
		return nil
	}
	return s.at(int(pn - s.base))
}

// SentTime returns when packet pn was sent, if it is still outstanding
// (neither acknowledged nor declared lost).
func (s *Space) SentTime(pn uint64) (time.Time, bool) {
	p := s.lookup(pn)
	if p == nil || p.state != stateOutstanding {
		return time.Time{}, false
	}
	return p.TimeSent, true
}

func (s *Space) settle(p *SentPacket, st pktState) {
	p.state = st
	if p.AckEliciting {
		s.ackElicitingInFlight--
	}
	if p.InFlight {
		s.bytesInFlight -= uint64(p.Size)
	}
}

// trim drops settled packets from the front of the history.
func (s *Space) trim() {
	for s.count > 0 {
		p := s.at(0)
		if p.state == stateOutstanding {
			return
		}
		s.head = (s.head + 1) & (len(s.ring) - 1)
		s.count--
		s.base++
	}
}

// AckResult summarises what one ACK frame newly acknowledged.
type AckResult struct {
	// NewlyAcked reports whether any packet was newly acknowledged.
	NewlyAcked bool
	// LargestNewlyAcked reports whether the frame's largest acknowledged
	// packet was newly acknowledged; LargestSentTime is then its send time.
	LargestNewlyAcked bool
	LargestSentTime   time.Time
	// AckElicitingAcked reports whether a newly acknowledged packet was
	// ack-eliciting. With LargestNewlyAcked it gates an RTT sample
	// (RFC 9002 Section 5.1).
	AckElicitingAcked bool
	// InFlightBytes is how many bytes in flight the newly acknowledged
	// packets carried.
	InFlightBytes uint64
}

// OnAck applies one ACK frame's ranges (descending, as in the frame) to the
// history, calling acked for each newly acknowledged packet in increasing
// packet number order. An acknowledgement of a packet number never sent is a
// PROTOCOL_VIOLATION (RFC 9000 Section 13.1).
func (s *Space) OnAck(ranges []Range, acked func(*SentPacket)) (AckResult, error) {
	var res AckResult
	if len(ranges) == 0 {
		return res, nil
	}
	largest := ranges[0].Largest
	if largest >= s.next {
		return res, qerr.New(qerr.ProtocolViolation, "ACK of packet %d, never sent (next is %d)", largest, s.next)
	}
	if int64(largest) > s.largestAcked {
		s.largestAcked = int64(largest)
	}
	// Walk the ranges from the smallest so callbacks see increasing numbers.
	for i := len(ranges) - 1; i >= 0; i-- {
		r := ranges[i]
		lo, hi := r.Smallest, r.Largest
		if s.count == 0 || hi < s.base {
			continue
		}
		lo = max(lo, s.base)
		hi = min(hi, s.base+uint64(s.count)-1)
		for pn := lo; pn <= hi; pn++ {
			p := s.at(int(pn - s.base))
			if p.state != stateOutstanding {
				continue
			}
			s.settle(p, stateAcked)
			res.NewlyAcked = true
			if p.AckEliciting {
				res.AckElicitingAcked = true
			}
			if p.InFlight {
				res.InFlightBytes += uint64(p.Size)
			}
			if pn == largest {
				res.LargestNewlyAcked = true
				res.LargestSentTime = p.TimeSent
				s.largestAckedSentTime = p.TimeSent
			}
			if acked != nil {
				acked(p)
			}
		}
	}
	// Leave packets in place until DetectLost has run so that persistent
	// congestion sees acknowledged packets between lost ones.
	return res, nil
}

// LossResult summarises one loss-detection pass.
type LossResult struct {
	// PersistentCongestion reports that two ack-eliciting packets were
	// declared lost more than the persistent congestion duration apart with
	// nothing acknowledged between them, both sent after the first RTT
	// sample (RFC 9002 Section 7.6.2), considering this space only.
	PersistentCongestion bool
	// LargestLostSentTime is the send time of the most recently sent lost
	// packet, the argument of OnCongestionEvent. Zero if none was lost.
	LargestLostSentTime time.Time
	// LostBytes is the in-flight size of the packets declared lost.
	LostBytes uint64
}

// DetectLost declares lost the outstanding packets at or below the largest
// acknowledged that are kPacketThreshold older than it or were sent more
// than lossDelay ago, calling lost for each in increasing order, and sets the
// time-threshold timer for the rest (RFC 9002 Section 6.1, A.10). pcDuration
// and firstRTTSample feed the persistent-congestion check; pass zero values
// to skip it.
func (s *Space) DetectLost(now time.Time, lossDelay, pcDuration time.Duration, firstRTTSample time.Time, lost func(*SentPacket, LossTrigger)) LossResult {
	var res LossResult
	s.lossTime = time.Time{}
	if s.largestAcked < 0 {
		s.trim()
		return res
	}
	lostSendTime := now.Add(-lossDelay)
	largest := uint64(s.largestAcked)
	var runStart time.Time
	runActive := false
	for i := 0; i < s.count; i++ {
		p := s.at(i)
		if p.Number > largest {
			break
		}
		switch p.state {
		case stateAcked:
			runActive = false
			continue
		case stateOutstanding:
		default:
			continue
		}
		var trigger LossTrigger
		switch {
		case largest >= p.Number+PacketThreshold:
			trigger = LossReordering
		case !p.TimeSent.After(lostSendTime):
			trigger = LossTime
		default:
			t := p.TimeSent.Add(lossDelay)
			if s.lossTime.IsZero() || t.Before(s.lossTime) {
				s.lossTime = t
			}
			continue
		}
		s.settle(p, stateLost)
		if p.InFlight {
			res.LostBytes += uint64(p.Size)
		}
		if p.TimeSent.After(res.LargestLostSentTime) {
			res.LargestLostSentTime = p.TimeSent
		}
		if p.AckEliciting && pcDuration > 0 && !firstRTTSample.IsZero() && p.TimeSent.After(firstRTTSample) {
			if !runActive {
				runActive, runStart = true, p.TimeSent
			} else if p.TimeSent.Sub(runStart) > pcDuration {
				res.PersistentCongestion = true
			}
		}
		if lost != nil {
			lost(p, trigger)
		}
	}
	s.trim()
	return res
}

// OldestUnackedAbove returns the number and send time of the oldest
// outstanding ack-eliciting packet numbered above the largest acknowledged
// one (any packet while nothing was acknowledged): the first packet sent
// after the last one known to have arrived. ok is false if there is none.
// The connection's path failure detection starts its clock there.
func (s *Space) OldestUnackedAbove() (pn uint64, sent time.Time, ok bool) {
	// A packet that is not outstanding or not ack-eliciting never becomes
	// so, and the largest acknowledged number only grows: the scan resumes
	// where it stopped, so repeated calls cost O(1) amortized.
	start := max(s.base, s.oldestScan)
	if s.largestAcked >= 0 && uint64(s.largestAcked)+1 > start {
		start = uint64(s.largestAcked) + 1
	}
	end := s.base + uint64(s.count)
	for n := start; n < end; n++ {
		p := s.at(int(n - s.base))
		if p.state == stateOutstanding && p.AckEliciting {
			s.oldestScan = n
			return n, p.TimeSent, true
		}
	}
	// The newest slot may be prepared and not yet sent (stateEmpty until
	// OnSent): look at it again next time.
	s.oldestScan = start
	if end > start {
		s.oldestScan = end - 1
	}
	return 0, time.Time{}, false
}

// ForEachOutstanding calls f for outstanding packets, oldest first, until f
// returns false. The connection uses it to find data for PTO probes.
func (s *Space) ForEachOutstanding(f func(*SentPacket) bool) {
	s.each(func(p *SentPacket) bool {
		if p.state != stateOutstanding {
			return true
		}
		return f(p)
	})
}

// DeclareAllLost settles every outstanding packet as lost, in increasing
// order, without touching the loss timers' inputs. The connection uses it
// when a path is abandoned (its packets may be retransmitted elsewhere).
func (s *Space) DeclareAllLost(lost func(*SentPacket)) uint64 {
	var bytes uint64
	s.each(func(p *SentPacket) bool {
		if p.state == stateOutstanding {
			if p.InFlight {
				bytes += uint64(p.Size)
			}
			s.settle(p, stateLost)
			if lost != nil {
				lost(p)
			}
		}
		return true
	})
	s.trim()
	s.lossTime = time.Time{}
	return bytes
}

// Discard forgets every packet when the space's keys are discarded
// (RFC 9002 Section 6.4, A.11) and returns the in-flight bytes removed; the
// caller subtracts them without a congestion signal. Frames of discarded
// packets are not retransmitted.
func (s *Space) Discard() uint64 {
	b := s.bytesInFlight
	s.each(func(p *SentPacket) bool {
		if p.state == stateOutstanding {
			s.settle(p, stateLost)
		}
		return true
	})
	s.trim()
	if s.count == 0 && len(s.ring) > minRing {
		s.ring, s.head = make([]SentPacket, minRing), 0 // memory back
	}
	s.bytesInFlight = 0
	s.ackElicitingInFlight = 0
	s.lossTime = time.Time{}
	s.lastAckEliciting = time.Time{}
	return b
}
