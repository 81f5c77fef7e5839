// Package acks implements the receiver side of QUIC acknowledgements
// (RFC 9000 Section 13.2): which packet numbers of one packet number space
// were received, when an ACK frame is due, and what it reports.
//
// It is clock-free: every method that depends on time takes the current
// time. In multipath QUIC (draft-ietf-quic-multipath-21) every path has a
// Tracker of its own for its application-data space.
package acks

import "time"

// ECN is the ECN codepoint of a received packet (RFC 9000 Section 13.4).
type ECN uint8

// ECN codepoints.
const (
	NotECT ECN = iota
	ECT1
	ECT0
	CE
)

// Range is an inclusive range of received packet numbers.
type Range struct{ Smallest, Largest uint64 }

// MaxRanges bounds how many ranges a Tracker remembers; the oldest are
// forgotten first (RFC 9000 Section 13.2.3 lets a receiver limit them).
const MaxRanges = 64

// ElicitingThreshold is how many ack-eliciting packets may arrive before an
// ACK is sent at once instead of after max_ack_delay (RFC 9000 Section
// 13.2.2 recommends two).
const ElicitingThreshold = 2

// Tracker records received packet numbers of one packet number space and
// decides when to acknowledge them. The zero value is not usable; call
// NewTracker.
type Tracker struct {
	maxAckDelay time.Duration

	// ranges holds the received packet numbers, largest range first,
	// ranges disjoint and not adjacent.
	ranges []Range
	// floor: packet numbers below it are treated as already received
	// (their ranges were forgotten after our ACK of them was acknowledged,
	// RFC 9000 Section 13.2.4, or because too many ranges were kept).
	floor uint64

	largestTime time.Time // when the largest packet number arrived

	// State of the next ACK.
	unacked     int       // ack-eliciting packets received since the last ACK sent
	deadline    time.Time // when the next ACK must be sent; zero if none is due
	newInfo     bool      // anything received since the last ACK sent
	ecn         [4]uint64 // counts per codepoint
	ecnSeen     bool
	lastAckSent time.Time
}

// NewTracker returns an empty tracker. maxAckDelay is how long an ACK of an
// ack-eliciting packet may be delayed: our max_ack_delay transport
// parameter for application data, zero for the Initial and Handshake spaces,
// whose packets are acknowledged at once (RFC 9000 Section 13.2.1).
func NewTracker(maxAckDelay time.Duration) *Tracker {
	return &Tracker{maxAckDelay: maxAckDelay, ranges: make([]Range, 0, 8)}
}

// LargestReceived returns the largest packet number received, if any.
func (t *Tracker) LargestReceived() (uint64, bool) {
	if len(t.ranges) == 0 {
		return 0, false
	}
	return t.ranges[0].Largest, true
}

// IsDuplicate reports whether pn was received before (or lies below what the
// tracker still remembers, in which case it is treated as a duplicate).
func (t *Tracker) IsDuplicate(pn uint64) bool {
	if pn < t.floor {
		return true
	}
	for _, r := range t.ranges {
		if pn > r.Largest {
			return false
		}
		if pn >= r.Smallest {
			return true
		}
	}
	return false
}

// OnPacket records a successfully processed packet. An ACK becomes due at
// once for every second ack-eliciting packet, for a packet that arrives out
// of order or reveals a gap (RFC 9000 Section 13.2.1), for packets carrying
// CE, and in spaces without ack delay; otherwise max_ack_delay after the
// first unacknowledged ack-eliciting packet.
func (t *Tracker) OnPacket(now time.Time, pn uint64, ackEliciting bool, ecn ECN) {
	if t.IsDuplicate(pn) {
		return
	}
	outOfOrder := false
	if largest, ok := t.LargestReceived(); ok {
		outOfOrder = pn < largest || pn > largest+1
	}
	t.insert(pn)
	if largest, _ := t.LargestReceived(); largest == pn {
		t.largestTime = now
	}
	t.newInfo = true
	if ecn != NotECT {
		t.ecnSeen = true
	}
	t.ecn[ecn]++
	if !ackEliciting {
		return
	}
	t.unacked++
	immediate := t.maxAckDelay == 0 || t.unacked >= ElicitingThreshold || outOfOrder || ecn == CE
	switch {
	case immediate:
		t.deadline = now
	case t.deadline.IsZero():
		t.deadline = now.Add(t.maxAckDelay)
	}
}

// insert adds pn to the ranges.
func (t *Tracker) insert(pn uint64) {
	rs := t.ranges
	// Common case: the next packet in sequence.
	if len(rs) > 0 && pn == rs[0].Largest+1 {
		rs[0].Largest = pn
		return
	}
	// Find the first range (from the largest) whose Smallest <= pn.
	i := 0
	for i < len(rs) && rs[i].Smallest > pn {
		i++
	}
	// pn lies between rs[i-1] (above) and rs[i] (below), exclusive.
	joinAbove := i > 0 && rs[i-1].Smallest == pn+1
	joinBelow := i < len(rs) && rs[i].Largest+1 == pn
	switch {
	case joinAbove && joinBelow:
		rs[i-1].Smallest = rs[i].Smallest
		t.ranges = append(rs[:i], rs[i+1:]...)
	case joinAbove:
		rs[i-1].Smallest = pn
	case joinBelow:
		rs[i].Largest = pn
	default:
		rs = append(rs, Range{})
		copy(rs[i+1:], rs[i:])
		rs[i] = Range{pn, pn}
		t.ranges = rs
	}
	if len(t.ranges) > MaxRanges {
		last := t.ranges[len(t.ranges)-1]
		t.ranges = t.ranges[:len(t.ranges)-1]
		t.floor = max(t.floor, last.Largest+1)
	}
}

// AckDeadline returns when an ACK must be sent; the zero time means no ACK
// is due. A deadline at or before now means at once.
func (t *Tracker) AckDeadline() time.Time { return t.deadline }

// HasNewInfo reports whether a packet arrived since the last ACK was sent,
// so that an ACK frame would tell the peer something new. The sender uses it
// to piggyback ACKs on packets it sends anyway.
func (t *Tracker) HasNewInfo() bool { return t.newInfo }

// Ranges returns the received ranges, largest first, as the ACK frame
// carries them. The slice is owned by the tracker and valid until the next
// call of OnPacket or OnAckAcked.
func (t *Tracker) Ranges() []Range { return t.ranges }

// AckDelay is the time since the largest packet number arrived, the ACK
// Delay field before scaling (RFC 9000 Section 13.2.5).
func (t *Tracker) AckDelay(now time.Time) time.Duration {
	if t.largestTime.IsZero() || now.Before(t.largestTime) {
		return 0
	}
	return now.Sub(t.largestTime)
}

// ECNCounts returns the ECN counters and whether any ECN-marked packet
// arrived (an ACK_ECN frame is only sent then).
func (t *Tracker) ECNCounts() (ect0, ect1, ce uint64, ok bool) {
	return t.ecn[ECT0], t.ecn[ECT1], t.ecn[CE], t.ecnSeen
}

// OnAckSent records that an ACK frame with the current ranges was sent.
func (t *Tracker) OnAckSent(now time.Time) {
	t.unacked = 0
	t.deadline = time.Time{}
	t.newInfo = false
	t.lastAckSent = now
}

// OnAckAcked records that the peer received an ACK frame of ours whose
// Largest Acknowledged was largest: packet numbers up to it need not be
// reported again (RFC 9000 Section 13.2.4). Their duplicates are still
// recognised.
func (t *Tracker) OnAckAcked(largest uint64) {
	if largest < t.floor {
		return
	}
	// Keep the range containing largest (from its start) so that the
	// peer's view stays consistent; forget the ranges entirely below it.
	for i, r := range t.ranges {
		if r.Largest <= largest {
			// r and every range after it are entirely at or below
			// largest; keep r itself (it may be the only one) but drop
			// what follows.
			if i+1 < len(t.ranges) {
				t.floor = max(t.floor, t.ranges[i+1].Largest+1)
				t.ranges = t.ranges[:i+1]
			}
			return
		}
	}
}
