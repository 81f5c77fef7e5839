// Package recovery implements the sender side of QUIC loss recovery
// (RFC 9002): the RTT estimator, the history of sent packets of one packet
// number space, acknowledgement processing, packet- and time-threshold loss
// detection, and the probe timeout (PTO) arithmetic.
//
// It is clock-free: every method takes the current time. It knows nothing of
// frames: a sent packet carries opaque FrameRef records that the connection
// interprets when the packet is acknowledged or declared lost. In multipath
// QUIC (draft-ietf-quic-multipath-21) every path owns an RTT estimator and an
// application-data Space of its own.
package recovery

import "time"

// Constants of RFC 9002 Section 6.1 and Appendix A.2.
const (
	// PacketThreshold is kPacketThreshold: reordering tolerated, in packets.
	PacketThreshold = 3
	// Granularity is kGranularity, the timer granularity.
	Granularity = time.Millisecond
	// DefaultInitialRTT is kInitialRtt (RFC 9002 Section 6.2.2).
	DefaultInitialRTT = 333 * time.Millisecond
	// PersistentCongestionThreshold is kPersistentCongestionThreshold.
	PersistentCongestionThreshold = 3
)

// RTT estimates the round-trip time of one network path (RFC 9002 Section 5).
// The zero value is not ready; use NewRTT.
type RTT struct {
	latest, smoothed, variance, min time.Duration
	initial                         time.Duration
	firstSample                     time.Time
	hasSample                       bool
}

// NewRTT returns an estimator initialised with the initial RTT
// (smoothed = initial, rttvar = initial/2, RFC 9002 Section 5.3).
func NewRTT(initial time.Duration) RTT {
	if initial <= 0 {
		initial = DefaultInitialRTT
	}
	return RTT{smoothed: initial, variance: initial / 2, initial: initial}
}

// Update folds one RTT sample into the estimate: latest is the time from
// sending the largest newly acknowledged packet to receiving its ACK, ackDelay
// the delay the peer reported. maxAckDelay caps ackDelay once the handshake
// is confirmed (RFC 9002 Section 5.3); pass a negative maxAckDelay before
// confirmation.
func (r *RTT) Update(now time.Time, latest, ackDelay, maxAckDelay time.Duration) {
	if latest <= 0 {
		latest = time.Nanosecond
	}
	r.latest = latest
	if !r.hasSample {
		r.hasSample = true
		r.firstSample = now
		r.min = latest
		r.smoothed = latest
		r.variance = latest / 2
		return
	}
	r.min = min(r.min, latest)
	if maxAckDelay >= 0 {
		ackDelay = min(ackDelay, maxAckDelay)
	}
	// latest >= min_rtt + ack_delay, without overflow for huge delays.
	adjusted := latest
	if ackDelay > 0 && latest-r.min >= ackDelay {
		adjusted = latest - ackDelay
	}
	diff := r.smoothed - adjusted
	if diff < 0 {
		diff = -diff
	}
	r.variance = (3*r.variance + diff) / 4
	r.smoothed = (7*r.smoothed + adjusted) / 8
}

// ResetAfterPersistentCongestion sets min_rtt to the latest sample
// (RFC 9002 Section 5.2).
func (r *RTT) ResetAfterPersistentCongestion() {
	if r.hasSample {
		r.min = r.latest
	}
}

// Restart makes the latest sample the whole estimate, as a first sample
// would (smoothed = min = latest, rttvar = latest/2): for a path back
// from an outage, whose history describes queues that have drained. No
// effect before the first sample.
func (r *RTT) Restart() {
	if r.hasSample {
		r.smoothed, r.min, r.variance = r.latest, r.latest, r.latest/2
	}
}

// Smoothed is smoothed_rtt.
func (r *RTT) Smoothed() time.Duration { return r.smoothed }

// Var is rttvar.
func (r *RTT) Var() time.Duration { return r.variance }

// Min is min_rtt, zero before the first sample.
func (r *RTT) Min() time.Duration { return r.min }

// Latest is latest_rtt, zero before the first sample.
func (r *RTT) Latest() time.Duration { return r.latest }

// HasSample reports whether at least one sample was taken.
func (r *RTT) HasSample() bool { return r.hasSample }

// FirstSampleTime is when the first sample was taken (zero if none).
func (r *RTT) FirstSampleTime() time.Time { return r.firstSample }

// PTO returns the probe timeout before backoff: smoothed_rtt +
// max(4*rttvar, kGranularity) + maxAckDelay (RFC 9002 Section 6.2.1). Pass
// maxAckDelay 0 for the Initial and Handshake spaces.
func (r *RTT) PTO(maxAckDelay time.Duration) time.Duration {
	return r.smoothed + max(4*r.variance, Granularity) + maxAckDelay
}

// LossDelay is the time threshold of RFC 9002 Section 6.1.2:
// max(9/8 * max(smoothed_rtt, latest_rtt), kGranularity).
func (r *RTT) LossDelay() time.Duration {
	d := max(r.smoothed, r.latest)
	d += d / 8
	return max(d, Granularity)
}

// PersistentCongestionDuration is the duration of RFC 9002 Section 7.6.1.
func (r *RTT) PersistentCongestionDuration(maxAckDelay time.Duration) time.Duration {
	return PersistentCongestionThreshold * r.PTO(maxAckDelay)
}
