package scheduler

import "time"

func init() {
	RegisterPathWithOptions("blest", blestOptions(), func(o Options) PathScheduler {
		return &BLEST{fixed: o[OptBLESTLambda] == BLESTLambdaFixed}
	})
}

// BLESTLambda is BLEST's scaling factor λ of the estimate X with the
// option lambda = "fixed": our first reading, from memory of the paper.
const BLESTLambda = 1.0

// The adaptation of λ (option lambda = "adaptive", the default), with the
// constants of the authors' Linux implementation (mptcp_blest.c, module
// parameters lambda, min_lambda, max_lambda, dyn_lambda_bad,
// dyn_lambda_good).
const (
	BLESTLambdaStart = 1.2  // λ of a new connection
	BLESTLambdaMin   = 1.0  // λ never goes below
	BLESTLambdaMax   = 1.3  // λ never goes above
	BLESTLambdaBad   = 0.04 // added after an RTT with the window blocked
	BLESTLambdaGood  = 0.01 // taken off after an RTT without
)

// OptBLESTLambda names blest's option lambda; its Doc in blestOptions says
// what it does.
const OptBLESTLambda = "lambda"

// The values of blest's option lambda.
const (
	BLESTLambdaAdaptive = "adaptive"
	BLESTLambdaFixed    = "fixed"
)

func blestOptions() []Option {
	return []Option{{Name: OptBLESTLambda, Choices: []string{BLESTLambdaAdaptive, BLESTLambdaFixed}, Default: BLESTLambdaAdaptive,
		Doc: "BLEST's scaling factor λ: adapted at run time between 1.0 and 1.3 from 1.2, +0.04 after a slow-path RTT in which the connection's send window blocked, −0.01 after one without, as the authors' Linux implementation does (adaptive), or fixed at 1, our first reading, from memory of the paper (fixed)"}}
}

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
// λ (option lambda, OptBLESTLambda) is by default adapted at run time
// following the authors' Linux implementation (mptcp_blest.c), which is
// the published rule we reproduce: it starts at BLESTLambdaStart = 1.2;
// each time BLEST estimates X, if at least one smoothed RTT of s has passed
// since λ last changed, λ grows by BLESTLambdaBad = 0.04 if the
// connection's send window blocked since then, else shrinks by
// BLESTLambdaGood = 0.01, and is kept within [BLESTLambdaMin,
// BLESTLambdaMax] = [1.0, 1.3]. Our reading of "the send window blocked":
// the implementation records it when the meta-level send window cannot
// take the next segment; we record it when a send decision finds
// Work.Waiting.SendWindow smaller than the packet. (The implementation
// waits one minimum smoothed RTT of s seen so far; we use the current
// smoothed RTT of s.) With lambda = "fixed", λ = BLESTLambda = 1, our
// first reading. The implementation's estimate of X also differs from the
// one above (a whole number of f's RTTs, a slow-start case, the slow
// path's linger time); we keep the paper's form given above. No candidate admitting the packet:
// nothing is sent. A fast path without an RTT yet (SRTT 0) is not
// estimated: the packet goes on s.
//
// Paths are those of candidates: failed and unvalidated paths are avoided,
// and backup paths are used only when no available path is usable, as for
// the built-in schedulers. BLEST treats every class of packet alike.
type BLEST struct {
	cand    []int
	fixed   bool      // λ = BLESTLambda, not adapted
	lambda  float64   // λ when adapted; 0 before the first decision
	last    time.Time // when λ last changed
	blocked bool      // the send window blocked since λ last changed
}

// Name implements PathScheduler.
func (*BLEST) Name() string { return "blest" }

// Select implements PathScheduler.
func (b *BLEST) Select(now time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	b.cand = candidates(paths, b.cand)
	lambda := BLESTLambda
	if !b.fixed {
		if b.lambda == 0 {
			b.lambda, b.last = BLESTLambdaStart, now
		}
		if w.Waiting.SendWindow < uint64(max(w.Size, 0)) {
			b.blocked = true
		}
	}
	return fastOrSlow(paths, b.cand, w.Size, dst, func(f, s *PathInfo) bool {
		if !b.fixed {
			b.adapt(now, s.SRTT)
			lambda = b.lambda
		}
		return !blestBlocks(f, s, w, lambda)
	})
}

// Lambda returns the λ BLEST uses now.
func (b *BLEST) Lambda() float64 {
	if b.fixed {
		return BLESTLambda
	}
	if b.lambda == 0 {
		return BLESTLambdaStart
	}
	return b.lambda
}

// adapt updates λ at an estimate, at most once per rttS (see BLEST).
func (b *BLEST) adapt(now time.Time, rttS time.Duration) {
	if now.Sub(b.last) < rttS {
		return
	}
	if b.blocked {
		b.lambda += BLESTLambdaBad
	} else {
		b.lambda -= BLESTLambdaGood
	}
	b.lambda = min(max(b.lambda, BLESTLambdaMin), BLESTLambdaMax)
	b.blocked = false
	b.last = now
}

// blestBlocks reports whether sending the packet w on s would block the
// fast path f (see BLEST), with the scaling factor lambda.
func blestBlocks(f, s *PathInfo, w Work, lambda float64) bool {
	if f.SRTT <= 0 {
		return false
	}
	r := s.SRTT.Seconds() / f.SRTT.Seconds()
	mss := float64(max(f.MaxPacketSize, 1))
	x := mss * (float64(f.CWND)/mss + (r-1)/2) * r
	left := float64(w.Waiting.SendWindow) + float64(f.BytesInFlight) - float64(w.Size)
	return lambda*x > left
}
