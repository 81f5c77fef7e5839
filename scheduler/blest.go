package scheduler

import "time"

func init() {
	RegisterPath("blest", func() PathScheduler { return &BLEST{} })
}

// BLESTLambda is BLEST's scaling factor λ of the estimate X. The paper
// adapts it at run time (raised when the receive window blocked, lowered
// otherwise) starting from 1; we keep it at its starting value.
const BLESTLambda = 1.0

// BLEST is the Blocking Estimation scheduler of Ferlin et al. ("BLEST:
// Blocking Estimation-based MPTCP Scheduler for Heterogeneous Networks",
// IFIP Networking 2016). This is our reading of the published algorithm,
// written from memory:
//
// Let f be the candidate path with the lowest smoothed RTT and s the
// candidate with the lowest smoothed RTT among the others whose congestion
// window admits the packet. If f admits the packet, it goes on f.
// Otherwise BLEST estimates how many bytes f could send during one RTT of
// s, in packets of f's maximum size MSS_f, with r = rtt_s/rtt_f and
// cwnd_f in packets (f's window grows by one packet per RTT in congestion
// avoidance):
//
//	X = MSS_f · (cwnd_f + (r − 1)/2) · r
//
// The packet on s would hold its share of the connection's send window
// for rtt_s; if what is left of the window then cannot take λ·X, sending
// on s would block f, and BLEST sends nothing (it waits for f). The paper
// compares λ·X with |send window| − (inflight_s + 1)·MSS_s. Our window is
// QUIC's connection-level flow control: Work.Waiting.SendWindow is the
// credit left after every byte sent on any path, so we add back the bytes
// in flight on f (which the paper's window counts as free for f) and
// take off the packet itself:
//
//	wait if λ·X > SendWindow + bytes_in_flight_f − Work.Size
//
// with λ = BLESTLambda = 1 (the paper's starting value; its run-time
// adaptation of λ is not implemented). No candidate admitting the packet:
// nothing is sent. A fast path without an RTT yet (SRTT 0) is not
// estimated: the packet goes on s.
//
// Paths are those of candidates: failed and unvalidated paths are avoided,
// and backup paths are used only when no available path is usable, as for
// the built-in schedulers. BLEST treats every class of packet alike.
type BLEST struct{ cand []int }

// Name implements PathScheduler.
func (*BLEST) Name() string { return "blest" }

// Select implements PathScheduler.
func (b *BLEST) Select(_ time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	b.cand = candidates(paths, b.cand)
	return fastOrSlow(paths, b.cand, w.Size, dst, func(f, s *PathInfo) bool {
		return !blestBlocks(f, s, w)
	})
}

// blestBlocks reports whether sending the packet w on s would block the
// fast path f (see BLEST).
func blestBlocks(f, s *PathInfo, w Work) bool {
	if f.SRTT <= 0 {
		return false
	}
	r := s.SRTT.Seconds() / f.SRTT.Seconds()
	mss := float64(max(f.MaxPacketSize, 1))
	x := mss * (float64(f.CWND)/mss + (r-1)/2) * r
	left := float64(w.Waiting.SendWindow) + float64(f.BytesInFlight) - float64(w.Size)
	return BLESTLambda*x > left
}
