package scheduler

import "time"

func init() {
	RegisterPath("lowrtt", func() PathScheduler { return &LowRTT{} })
	RegisterPath("round-robin", func() PathScheduler { return &RoundRobinPaths{} })
	RegisterStream("round-robin", func() StreamScheduler { return &RoundRobinStreams{} })
}

// LowRTT sends each packet on the path with the lowest smoothed RTT among the
// paths whose congestion window has room for it, the default scheduler of
// MP-QUIC (De Coninck and Bonaventure, CoNEXT 2017) and of MPTCP. Backup
// paths are used only when no available path is usable. When every
// candidate's window is full, nothing is sent until an ACK frees room.
type LowRTT struct{ cand []int }

// Name implements PathScheduler.
func (*LowRTT) Name() string { return "lowrtt" }

// Select implements PathScheduler.
func (s *LowRTT) Select(_ time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	s.cand = candidates(paths, s.cand)
	i := lowestRTT(paths, s.cand, func(p *PathInfo) bool { return p.CanSend(w.Size) })
	if i < 0 {
		return dst
	}
	return append(dst, paths[i].ID)
}

// RoundRobinPaths cycles through the candidate paths, skipping those whose
// congestion window is full; the baseline round-robin scheduler of MP-QUIC.
type RoundRobinPaths struct {
	last uint64
	any  bool
	cand []int
}

// Name implements PathScheduler.
func (*RoundRobinPaths) Name() string { return "round-robin" }

// Select implements PathScheduler.
func (s *RoundRobinPaths) Select(_ time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	s.cand = candidates(paths, s.cand)
	// First candidate with an ID after the last one served, wrapping.
	pick := -1
	for pass := 0; pass < 2 && pick < 0; pass++ {
		for _, i := range s.cand {
			p := &paths[i]
			if !p.CanSend(w.Size) {
				continue
			}
			if pass == 0 && s.any && p.ID <= s.last {
				continue
			}
			if pick < 0 || p.ID < paths[pick].ID {
				pick = i
			}
		}
	}
	if pick < 0 {
		return dst
	}
	s.last, s.any = paths[pick].ID, true
	return append(dst, paths[pick].ID)
}

// RoundRobinStreams serves the streams with pending data in turn, by
// increasing stream ID after the last one served, filling a packet with as
// many streams' frames as fit; the default stream scheduler of quic-go and
// MP-QUIC.
type RoundRobinStreams struct {
	last uint64
	any  bool
}

// Name implements StreamScheduler.
func (*RoundRobinStreams) Name() string { return "round-robin" }

// MaxStreamFrames implements StreamScheduler.
func (*RoundRobinStreams) MaxStreamFrames() int { return 0 }

// Next implements StreamScheduler.
func (s *RoundRobinStreams) Next(_ time.Time, streams []StreamInfo) int {
	pick, lowest := -1, 0
	for i := range streams {
		id := streams[i].ID
		if id < streams[lowest].ID {
			lowest = i
		}
		if s.any && id <= s.last {
			continue
		}
		if pick < 0 || id < streams[pick].ID {
			pick = i
		}
	}
	if pick < 0 {
		pick = lowest
	}
	s.last, s.any = streams[pick].ID, true
	return pick
}
