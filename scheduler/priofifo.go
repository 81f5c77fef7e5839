package scheduler

import "time"

func init() {
	RegisterStream("priority-fifo", func() StreamScheduler { return &PriorityFIFO{} })
}

// PriorityFIFO is the priority FIFO stream scheduler of Noroozi et al.,
// "Performance Evaluation of a New Scheduling Model Using Congestion Window
// Reservation", Section III-C. It serves, in this order:
//
//  1. streams with lost data waiting to be sent again, whatever their
//     priority flag;
//  2. streams flagged priority;
//  3. all other streams;
//
// and within each of these sets the stream whose pending data became ready
// first (lowest StreamInfo.ReadySeq; equal ReadySeq: lowest stream ID).
// A packet carries at most one STREAM frame (MaxStreamFrames is 1), so that
// the loss of a packet affects only one stream; ACK and control frames may
// share the packet.
//
// The prioritisation is strict: if priority data keep arriving faster than
// the paths carry them, the other streams starve. This is the paper's
// behaviour (it sizes priority data so that starvation does not occur) and
// is deliberately not prevented here.
type PriorityFIFO struct{}

// Name implements StreamScheduler.
func (*PriorityFIFO) Name() string { return "priority-fifo" }

// MaxStreamFrames implements StreamScheduler: one STREAM frame per packet.
func (*PriorityFIFO) MaxStreamFrames() int { return 1 }

// Next implements StreamScheduler.
func (*PriorityFIFO) Next(_ time.Time, streams []StreamInfo) int {
	best := 0
	for i := 1; i < len(streams); i++ {
		if fifoBefore(&streams[i], &streams[best]) {
			best = i
		}
	}
	return best
}

// fifoRank is the set a stream belongs to: 0 retransmissions, 1 priority,
// 2 the rest.
func fifoRank(s *StreamInfo) int {
	switch {
	case s.HasRetransmission:
		return 0
	case s.Priority:
		return 1
	default:
		return 2
	}
}

// fifoBefore reports whether a is served before b.
func fifoBefore(a, b *StreamInfo) bool {
	if ra, rb := fifoRank(a), fifoRank(b); ra != rb {
		return ra < rb
	}
	if a.ReadySeq != b.ReadySeq {
		return a.ReadySeq < b.ReadySeq
	}
	return a.ID < b.ID
}
