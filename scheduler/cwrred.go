package scheduler

import (
	"slices"
	"time"
)

func init() {
	RegisterPathWithOptions("cwr-red", cwrRedOptions(nil), func(o Options) PathScheduler { return newCWRRed("cwr-red", o) })
	RegisterPathWithOptions("cwr-red-fast", cwrRedOptions(cwrRedFast), func(o Options) PathScheduler { return newCWRRed("cwr-red-fast", o) })
}

// Names of the options of cwr-red beyond cwr's (rules the paper does not
// have); what each does is its Doc in cwrRedOptions.
const (
	OptWaitForFastPath    = "wait_for_fast_path"
	OptResendLostCopyOn   = "resend_lost_copy_on"
	OptRetransmissionSize = "retransmission_size"
)

// cwrRedFast are the options that cwr-red-fast changes from cwr-red's
// defaults: the rules of our earlier cwr-red, not the paper's.
var cwrRedFast = map[string]string{
	OptReservation:        "whole",
	OptWaitForFastPath:    "true",
	OptResendLostCopyOn:   "fast",
	OptRetransmissionSize: "lost",
}

// cwrRedOptions are the options of cwr-red (cwr's without equal_rtt,
// which concerns reservations on one path only), with the defaults
// changed by override.
func cwrRedOptions(override map[string]string) []Option {
	var opts []Option
	for _, o := range cwrOptions() {
		if o.Name != OptEqualRTT {
			opts = append(opts, o)
		}
	}
	opts = append(opts,
		Option{Name: OptWaitForFastPath, Default: "false",
			Doc: "a message sent without copies waits for the path estimated to deliver the rest of it earliest instead of going on the lowest-RTT path that can take the packet (ours)"},
		Option{Name: OptResendLostCopyOn, Choices: []string{"any", "fast"}, Default: "any",
			Doc: "any: lost data is sent again as without copies; fast: a lost copy is sent again on its own path if faster than its copies', else left to its copies (ours)"},
		Option{Name: OptRetransmissionSize, Choices: []string{"full", "lost"}, Default: "full",
			Doc: "full: packets of lost data may be of the maximum size, as those of new data; lost: sized to the lost bytes (ours)"},
	)
	for i := range opts {
		if v, ok := override[opts[i].Name]; ok {
			opts[i].Default = v
		}
	}
	return opts
}

// CWRRed is the CWR + Redundancy path scheduler of Noroozi et al., Section
// III-D2: CWR with reservations on every path, and priority messages
// duplicated on every path when every path can take them.
//
// By default ("cwr-red") it follows the paper's text; where the text is
// silent it takes the simplest reading, and the sentence it reads is
// quoted. The rules the paper does not have are options (Options,
// transport.scheduler_options), off by default; "cwr-red-fast" is the
// same scheduler with our earlier rules on (reservation = "whole",
// wait_for_fast_path, resend_lost_copy_on = "fast", retransmission_size =
// "lost"), so that results measured with them can be rerun.
//
// The paper's rule, sentence by sentence, and how it is read here:
//
//   - "While the CWR scheduler adds a reservation to only one path, the
//     CWR+RED adds the reservations to both paths." Every message of
//     every announced source is reserved on every candidate path (as for
//     lowrtt: usable available paths, else usable backup paths, else
//     every validated path), as CWR reserves on its one path: the
//     messages due in (now, now + srtt_p], their WireBytes plus
//     PacketSlack each; the reservations of a path are capped at its
//     window (options reservation and horizon: see CWR).
//   - "To send data with the priority, the corresponding packets are
//     duplicated and sent on all paths. Due to the reservation on all
//     paths, there is no transmission delay even for the duplicates."
//     The decision is taken per message: when the first packet of a
//     message is scheduled (Work.Class ClassPriority, and the stream's
//     Work.Pending larger than what was left of the stream's previous
//     message), the message is duplicated if every candidate can take
//     all of it now: its congestion window has room for WireBytes(
//     Work.Pending) + PacketSlack and its pacer lets the packet out.
//     Each packet of a duplicated message is then sent at once on every
//     candidate, lowest RTT first (the core builds it on the first and
//     copies it onto the others), as long as every candidate can take it
//     (PathInfo.CanSend).
//   - "In case the reservations are not successful and the congestion
//     [window] of each path is too small to send a message completely,
//     the scheduler will refrain from redundant sending. There is then
//     still the possibility that the sum of the free areas in the
//     congestion windows is sufficient to send the data." A message that
//     not every candidate can take completely is sent without copies,
//     each packet on the lowest-RTT candidate whose window and pacer let
//     it out now (the free areas of the windows together), as CWR sends
//     priority data; if none can, nothing is sent now. This is what the
//     paper says of CWR at Section IV-C2: "If the reservation is not
//     successful, the scheduler operates like LowRTT. It may then happen
//     that the slower path is selected". Ties go to the lower index in
//     paths.
//   - "In general, for packets that could not be duplicated immediately,
//     no duplicate is created afterward." A message decided without
//     copies keeps that decision for all its packets, even if the windows
//     open before its last packet leaves; a packet of a duplicated
//     message that not every candidate can take then goes without copies
//     as above, and so does the rest of that message. No packet is ever
//     copied after it was sent.
//   - "This scheduler behaves exactly like the CWR scheduler on the
//     background data." Background packets (and retransmissions of
//     streams without priority) go on the lowest-RTT candidate p with
//     bytes_in_flight_p + packet + reserved_p <= cwnd_p and room in its
//     pacer; if none qualifies, nothing is sent now; as in CWR (option
//     idle_escape), reservations do not hold data back while no candidate
//     has anything in flight. Control-only packets go on the lowest-RTT
//     candidate that can take them, never held back by reservations.
//
// Where the paper is silent (simplest readings):
//
//   - Lost priority data (ClassRetransmission of a priority stream) is
//     priority data: decided per packet like a message of its lost bytes,
//     duplicated if every candidate can take them all now, else sent once
//     as above. Lost data is sent again as the core does by default
//     (LossPolicy: at once, whatever copies are in flight; packets of the
//     maximum size).
//   - With a single candidate path, everything is CWR's rule on that
//     path.
//
// Options beyond the paper (Options; "ours" in docs/results/reference-paper.md):
//
//   - wait_for_fast_path: each packet of a message sent without copies
//     goes on the path that delivers the rest of the message earliest:
//     the stream's bytes that wait to be sent (Work.Pending), as their
//     WireBytes plus PacketSlack but at most p's window (and at least the
//     packet), are estimated to arrive over path p after the wait until
//     p's window and pacer let them all out plus p's one-way delay,
//     srtt_p / 2. The wait is 0 if they fit p's window now, else the time
//     until enough of p's packets in flight are acknowledged (each one
//     srtt_p after it was sent, oldest first; PacketObserver), or srtt_p
//     if what is in flight does not explain the full window. If the
//     earliest path cannot take the packet now, nothing is sent now: the
//     packet waits for that path instead of going alone on a slower one.
//     Ties go to the lower smoothed RTT, then to the lower index.
//   - resend_lost_copy_on = "fast" (LossPolicy): a lost copy whose path
//     has a lower smoothed RTT than the paths of all its copies in flight
//     is sent again on that path (ResendOn), waiting for it if it cannot
//     take the packet now (if the path is no longer a candidate it is
//     scheduled like any lost priority data); a lost copy with a twin in
//     flight on a path at least as fast is left to that twin
//     (LeaveToCopies; if the twin is lost too, its own loss sends the
//     data again). Data stranded by a probe timeout, and lost data
//     without copies in flight, are sent again at once, as by default.
//   - retransmission_size = "lost" (RetransmissionSizer): a packet of lost
//     data (of any stream) is sized to its lost bytes (ExpectedSize), not
//     to a full packet, so that a small lost tail does not wait for a
//     full packet's room.
//   - reservation = "whole", horizon, idle_escape, path_choice,
//     skip_held_back: as for CWR (path_choice = "message" puts a message sent without copies on
//     one path, chosen at its first packet without copies).
//
// reservations_missed is counted as in CWR, per path and message: with
// reservations on every path a message can miss on one path and not on
// another.
type CWRRed struct {
	name  string
	res   reserver
	cand  []int
	order []int
	// The options: idle_escape, path_choice = "message",
	// wait_for_fast_path, resend_lost_copy_on = "fast",
	// retransmission_size = "lost" and skip_held_back; credit is credit
	// and credit_rtts, stagger stagger_startup and stagger_clear.
	idleEscape, perMessage, waitFast, resendFast, sizeLost, skipHeld bool
	credit                                                           creditRule
	stagger                                                          startupStagger
	msgs                                                             messages
	// flight are the packets in flight on each path, oldest first
	// (wait_for_fast_path).
	flight map[uint64][]flightPacket
}

// flightPacket is a packet in flight on a path.
type flightPacket struct {
	pn     uint64
	size   uint64
	sentAt time.Time
}

// NewCWRRed returns a CWR+RED scheduler without sources, with the default
// options (the paper's text).
func NewCWRRed() *CWRRed {
	s, _ := NewPathSchedulerWith("cwr-red", nil)
	return s.(*CWRRed)
}

func newCWRRed(name string, o Options) *CWRRed {
	return &CWRRed{name: name, res: newReserver(o, true), flight: map[uint64][]flightPacket{},
		idleEscape: o.Bool(OptIdleEscape), perMessage: o[OptPathChoice] == "message",
		waitFast: o.Bool(OptWaitForFastPath), resendFast: o[OptResendLostCopyOn] == "fast",
		sizeLost: o[OptRetransmissionSize] == "lost", skipHeld: o.Bool(OptSkipHeldBack), credit: newCreditRule(o), stagger: newStartupStagger(o)}
}

// SkipsHeldBack implements HeldBackSkipper: option skip_held_back, or
// stagger_startup (which holds retransmissions back).
func (s *CWRRed) SkipsHeldBack() bool { return s.skipHeld || s.stagger.on }

// KeepsIdle implements IdleKeeper: stagger_startup kept the data without
// priority off path id in the latest decision.
func (s *CWRRed) KeepsIdle(id uint64) bool { return s.stagger.keepsIdle(id) }

// Name implements PathScheduler.
func (s *CWRRed) Name() string { return s.name }

// Announce implements SourceAware.
func (s *CWRRed) Announce(src Source) { s.res.announce(src) }

// Withdraw implements SourceAware.
func (s *CWRRed) Withdraw(id uint64) { s.res.withdraw(id) }

// PathCounters implements Counters: "reservations_missed".
func (s *CWRRed) PathCounters(pathID uint64) map[string]uint64 { return s.res.counters(pathID) }

// NextWakeup implements Waker.
func (s *CWRRed) NextWakeup(now time.Time) time.Time { return s.res.nextWakeup(now) }

// Select implements PathScheduler.
func (s *CWRRed) Select(now time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	s.cand = candidates(paths, s.cand)
	s.stagger.observe(now, paths, s.cand)
	reserved := s.res.reserve(now, paths, s.cand)
	if priorityWaits(w) {
		s.res.settle(now, paths)
	}
	if !isPriority(w) || len(s.cand) < 2 {
		if s.credit.holds(now, paths, s.cand, s.res.sources, w) {
			return dst
		}
		if i := pickBackgroundOrNot(paths, s.stagger.filter(paths, s.cand, w), w, reserved, s.idleEscape); i >= 0 {
			dst = append(dst, paths[i].ID)
		}
		return dst
	}
	if w.Class == ClassRetransmission && w.Pinned {
		for _, i := range s.cand {
			if paths[i].ID == w.PinnedPath {
				if paths[i].CanSend(w.Size) {
					dst = append(dst, paths[i].ID)
				}
				return dst
			}
		}
	}
	s.order = byRTT(paths, s.cand, s.order)
	dup, d := s.duplicate(paths, w)
	if dup {
		all := true
		for _, i := range s.order {
			all = all && paths[i].CanSend(w.Size)
		}
		if all {
			for _, i := range s.order {
				dst = append(dst, paths[i].ID)
			}
			return dst
		}
		if d != nil {
			d.dup = false
		}
	}
	var i int
	switch {
	case s.waitFast:
		if i = s.earliest(now, paths, w); i >= 0 && !paths[i].CanSend(w.Size) {
			i = -1
		}
	case s.perMessage && d != nil:
		i = messagePath(paths, s.cand, w, d)
	default:
		i = pickPath(paths, s.cand, w.Size, nil, false)
	}
	if i >= 0 {
		dst = append(dst, paths[i].ID)
	}
	return dst
}

// duplicate reports whether the packet of w belongs to a message (or a
// retransmission) that goes on every candidate, and the decision of its
// message (nil for a retransmission).
func (s *CWRRed) duplicate(paths []PathInfo, w Work) (bool, *messageDecision) {
	if w.Class == ClassRetransmission {
		return s.allTake(paths, w.LostBytes, w.Size), nil
	}
	d, fresh := s.msgs.of(w)
	if fresh {
		d.dup = s.allTake(paths, w.Pending, w.Size)
	}
	return d.dup, d
}

// allTake reports whether every candidate can take n bytes of stream data
// now: room in its window for their WireBytes plus PacketSlack, and a
// pacer that lets the first packet (of size bytes) out.
func (s *CWRRed) allTake(paths []PathInfo, n uint64, size int) bool {
	for _, i := range s.cand {
		p := &paths[i]
		need := uint64(WireBytes(int(min(n, 1<<40)), p)) + PacketSlack
		if !p.Validated || p.CwndRoom() < need || p.PacingBudget < uint64(size) {
			return false
		}
	}
	return true
}

// earliest returns the index of the candidate that delivers the rest of
// the message of w earliest (see CWRRed); -1 if there is none.
func (s *CWRRed) earliest(now time.Time, paths []PathInfo, w Work) int {
	best := -1
	var bestAt time.Duration
	for _, i := range s.order { // lowest RTT first: ties keep it
		p := &paths[i]
		n := uint64(WireBytes(int(min(w.Pending, 1<<40)), p)) + PacketSlack
		n = max(min(n, p.CWND), uint64(w.Size))
		at := s.wait(now, p, n) + p.SRTT/2
		if best < 0 || at < bestAt {
			best, bestAt = i, at
		}
	}
	return best
}

// wait estimates how long n bytes wait before path p's window lets them
// all out (p's pacer holding them back counts as no wait).
func (s *CWRRed) wait(now time.Time, p *PathInfo, n uint64) time.Duration {
	if p.BytesInFlight+n <= p.CWND {
		return 0
	}
	need := p.BytesInFlight + n - p.CWND
	var freed uint64
	for _, f := range s.flight[p.ID] {
		freed += f.size
		if freed >= need {
			return max(f.sentAt.Add(p.SRTT).Sub(now), 0)
		}
	}
	return p.SRTT
}

// OnPacketSent implements PacketObserver: the packet joins its path's
// packets in flight.
func (s *CWRRed) OnPacketSent(now time.Time, info *PathInfo, pn uint64, size int, _ Class) {
	if !s.waitFast {
		return
	}
	s.flight[info.ID] = append(s.flight[info.ID], flightPacket{pn: pn, size: uint64(size), sentAt: now})
}

// OnPacketAcked implements PacketObserver.
func (s *CWRRed) OnPacketAcked(_ time.Time, pathID, pn uint64) { s.settle(pathID, pn) }

// OnPacketLost implements PacketObserver.
func (s *CWRRed) OnPacketLost(_ time.Time, pathID, pn uint64) { s.settle(pathID, pn) }

func (s *CWRRed) settle(pathID, pn uint64) {
	fl := s.flight[pathID]
	i, ok := slices.BinarySearchFunc(fl, pn, func(f flightPacket, pn uint64) int {
		switch {
		case f.pn < pn:
			return -1
		case f.pn > pn:
			return 1
		}
		return 0
	})
	if !ok {
		return
	}
	fl = slices.Delete(fl, i, i+1)
	if len(fl) == 0 {
		delete(s.flight, pathID)
		return
	}
	s.flight[pathID] = fl
}

// OnDataLost implements LossPolicy (see CWRRed).
func (s *CWRRed) OnDataLost(_ time.Time, paths []PathInfo, lp *LostPacket) LossDecision {
	if !s.resendFast || lp.Reason != LossDeclared || !lp.Priority || len(lp.Copies) == 0 {
		return DefaultLossDecision(lp)
	}
	srtt := func(id uint64) (time.Duration, bool) {
		for i := range paths {
			if paths[i].ID == id {
				return paths[i].SRTT, true
			}
		}
		return 0, false
	}
	own, ok := srtt(lp.PathID)
	if !ok {
		return DefaultLossDecision(lp)
	}
	for _, c := range lp.Copies {
		if r, ok := srtt(c.PathID); ok && r <= own {
			return LossDecision{Action: LeaveToCopies}
		}
	}
	return LossDecision{Action: ResendOn, Path: lp.PathID}
}

// RetransmissionSize implements RetransmissionSizer: a packet of lost data
// is sized to the lost bytes (ExpectedSize), as packets of new data are.
func (s *CWRRed) RetransmissionSize(w Work, paths []PathInfo) int {
	if !s.sizeLost {
		return w.Size
	}
	size := 0
	for i := range paths {
		size = max(size, ExpectedSize(w.LostBytes, &paths[i]))
	}
	if size == 0 {
		return w.Size
	}
	return size
}

var (
	_ SourceAware         = (*CWRRed)(nil)
	_ Counters            = (*CWRRed)(nil)
	_ Waker               = (*CWRRed)(nil)
	_ PacketObserver      = (*CWRRed)(nil)
	_ LossPolicy          = (*CWRRed)(nil)
	_ RetransmissionSizer = (*CWRRed)(nil)
	_ HeldBackSkipper     = (*CWRRed)(nil)
)
