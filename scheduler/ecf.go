package scheduler

import "time"

func init() {
	RegisterPathWithOptions("ecf", ecfOptions(), func(o Options) PathScheduler {
		return &ECF{proportional: o[OptECFTransfer] == ECFTransferProportional}
	})
}

// ECFBeta is ECF's hysteresis β: once ECF has chosen to wait for the
// fastest path, the slower path has to look 25 % better before ECF uses it
// again (Lim et al., CoNEXT 2017, Section 4).
const ECFBeta = 0.25

// OptECFTransfer names ecf's option transfer_time; its Doc in ecfOptions
// says what it does.
const OptECFTransfer = "transfer_time"

// The values of ecf's option transfer_time.
const (
	ECFTransferRTT          = "at-least-one-rtt"
	ECFTransferProportional = "proportional"
)

func ecfOptions() []Option {
	return []Option{{Name: OptECFTransfer, Choices: []string{ECFTransferRTT, ECFTransferProportional}, Default: ECFTransferRTT,
		Doc: "a path's time to send the queued data k: at least one of its RTTs, (max(k, cwnd)/cwnd)·rtt, as the authors' Linux implementation computes it (at-least-one-rtt), or (k/cwnd)·rtt, below one RTT for k under a window: our first reading, from memory of the paper (proportional)"}}
}

// ECF is the Earliest Completion First scheduler of Lim et al. ("ECF: An
// MPTCP Path Scheduler to Manage Heterogeneous Paths", CoNEXT 2017): our
// reading of the paper's Algorithm 1, written from memory of it and
// checked against the authors' Linux implementation (mptcp_ecf.c of the
// multipath-tcp.org kernel, by Lim and Weber), whose estimates it follows:
//
// Let f be the candidate path with the lowest smoothed RTT (rtt_f) and s
// the candidate with the lowest smoothed RTT among the others whose
// congestion window admits the packet (rtt_s). If f admits the packet, it
// goes on f. Otherwise, with k the data queued to send, x_f = max(k,
// cwnd_f) and x_s = max(k, cwnd_s) (every transfer takes at least one
// round trip of its path), n = 1 + x_f/cwnd_f (f's RTTs until it has sent
// everything, the current one included), δ = max(rttvar_f, rttvar_s) and
// β = ECFBeta:
//
//   - if n·rtt_f < (1 + waiting·β)·(rtt_s + δ) (f alone would finish
//     first) and (x_s/cwnd_s)·rtt_s ≥ 2·rtt_f + δ (s could not finish its
//     share before f's second round), ECF waits for f: it sends nothing
//     and sets waiting = 1;
//   - if the first condition holds but the second does not, the packet
//     goes on s (waiting unchanged);
//   - otherwise the packet goes on s and waiting = 0.
//
// With the option transfer_time = "proportional" (OptECFTransfer), x_f
// and x_s are k itself, our first reading: the slow path's transfer time
// (k/cwnd_s)·rtt_s is then below one RTT when k is below its window, and
// the last packets of a transfer go on the slow path even when waiting for
// the fast one would deliver them sooner (docs/results/beyond-the-paper.md, "Heterogeneous
// paths: ECF and BLEST", measures both).
//
// The waiting flag starts at 0 and is left unchanged when f takes the
// packet. No candidate admitting the packet: nothing is sent.
//
// Approximation: the scheduler interface does not expose the send buffer.
// k is the data the core could send now: Work.Waiting.PriorityBytes +
// BackgroundBytes (every queued stream's bytes, each capped by flow
// control) plus the lost bytes of the stream chosen (Work.LostBytes; the
// other streams' lost bytes are not exposed), and never less than the
// packet itself (Work.Size). k and the windows are counted in bytes, so
// the ratios k/cwnd are the paper's ratios in packets up to the packets'
// overhead. Data blocked by flow control is not counted, which makes ECF
// wait for the fast path more than the paper's k would.
//
// Paths are those of candidates: failed and unvalidated paths are avoided,
// and backup paths are used only when no available path is usable, as for
// the built-in schedulers. ECF treats every class of packet alike, as the
// paper does (it has no priority data).
type ECF struct {
	waiting      bool
	proportional bool
	cand         []int
}

// Name implements PathScheduler.
func (*ECF) Name() string { return "ecf" }

// Select implements PathScheduler.
func (e *ECF) Select(_ time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	e.cand = candidates(paths, e.cand)
	return fastOrSlow(paths, e.cand, w.Size, dst, func(f, s *PathInfo) bool {
		return e.useSlow(f, s, queuedBytes(w))
	})
}

// useSlow is Algorithm 1's decision once the fastest path f has no room:
// true to send on s, false to wait for f. It updates the waiting flag.
func (e *ECF) useSlow(f, s *PathInfo, k uint64) bool {
	rttF, rttS := f.SRTT.Seconds(), s.SRTT.Seconds()
	delta := max(f.RTTVar, s.RTTVar).Seconds()
	cwndF, cwndS := max(f.CWND, 1), max(s.CWND, 1)
	xf, xs := k, k
	if !e.proportional {
		xf, xs = max(k, cwndF), max(k, cwndS)
	}
	n := 1 + float64(xf)/float64(cwndF)
	wait := 0.0
	if e.waiting {
		wait = 1
	}
	if n*rttF < (1+wait*ECFBeta)*(rttS+delta) {
		if float64(xs)/float64(cwndS)*rttS >= 2*rttF+delta {
			e.waiting = true
			return false
		}
		return true
	}
	e.waiting = false
	return true
}

// queuedBytes is the data waiting to be sent, as ECF's k (see ECF).
func queuedBytes(w Work) uint64 {
	k := w.Waiting.PriorityBytes + w.Waiting.BackgroundBytes + w.LostBytes
	return max(k, uint64(max(w.Size, 0)))
}

// fastOrSlow appends the path of the next packet of size bytes as ECF and
// BLEST choose it among the candidates: the path f with the lowest smoothed
// RTT if it admits the packet; otherwise the path s with the lowest
// smoothed RTT among the others that admit it, if useSlow(f, s) says so;
// otherwise nothing (wait for f). Ties go to the lower index.
func fastOrSlow(paths []PathInfo, cand []int, size int, dst []uint64, useSlow func(f, s *PathInfo) bool) []uint64 {
	f := lowestRTT(paths, cand, func(*PathInfo) bool { return true })
	if f < 0 {
		return dst
	}
	fp := &paths[f]
	if fp.CanSend(size) {
		return append(dst, fp.ID)
	}
	s := lowestRTT(paths, cand, func(p *PathInfo) bool { return p != fp && p.CanSend(size) })
	if s < 0 || !useSlow(fp, &paths[s]) {
		return dst
	}
	return append(dst, paths[s].ID)
}
