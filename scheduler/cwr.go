package scheduler

import (
	"cmp"
	"slices"
	"time"
)

func init() {
	RegisterPathWithOptions("cwr", cwrOptions(), func(o Options) PathScheduler { return newCWR(o) })
}

// Names of the options of cwr, shared with cwr-red (cwr-red has no
// equal_rtt) and cwr-plus: readings of the paper's text where it is
// silent, and rules it does not have. What each does is its Doc in
// cwrOptions, the one place an option is documented (mpq help schedulers,
// docs/reference/schedulers.md).
const (
	OptReservation   = "reservation"
	OptHorizon       = "horizon"
	OptEqualRTT      = "equal_rtt"
	OptIdleEscape    = "idle_escape"
	OptPathChoice    = "path_choice"
	OptHoldUnwritten = "hold_unwritten"
	OptSkipHeldBack  = "skip_held_back"
)

// cwrOptions are the options of cwr with their defaults.
func cwrOptions() []Option {
	return append([]Option{
		{Name: OptReservation, Choices: []string{"partial", "whole"}, Default: "partial",
			Doc: "partial: a path's reservations are capped at its window, so a window that shrank below them is all reserved (the paper's reading); whole: a message whose reservation does not fit its path's window beside the earlier messages' reserves nothing there, and background data may use the window meanwhile (ours)"},
		{Name: OptHorizon, Choices: []string{"srtt", "next"}, Default: "srtt",
			Doc: "srtt: reserve the messages due within one smoothed RTT of the path (data sent now occupy the window for about one round trip); next: every source's next message, however far ahead"},
		{Name: OptEqualRTT, Choices: []string{"first", "alternate"}, Default: "first",
			Doc: "paths of equal smoothed RTT: first reserves on the first by path ID; alternate (ours) puts the k-th message of source S on the ((S + k) mod n)-th of those n paths, a reading of the paper's \"the choice of the path changes\""},
		{Name: OptIdleEscape, Default: "true",
			Doc: "background data that fit beside no path's reservations still go when no path has anything in flight"},
		{Name: OptPathChoice, Choices: []string{"packet", "message"}, Default: "packet",
			Doc: "packet: each priority packet on the lowest-RTT path that can take it; message: all of a message on the path chosen at its first packet"},
		{Name: OptHoldUnwritten, Default: "true",
			Doc: "a message generated and not yet written keeps its reservation until it is written or 5 ms (ReservationGrace) after its generation time, also once its source announced the next message: what the reservation needs on a real clock, where the application's write comes up to about a millisecond after the generation time and a send decision in between would give the message's room to background data"},
		{Name: OptSkipHeldBack, Default: "false",
			Doc: "a background packet held back by the reservations (with priority-fifo: lost background data, served first) does not hold back the priority data behind it, which goes if a window and pacer let it out (ours)"},
		{Name: OptCredit, Default: "false",
			Doc: "new background data leave the connection's flow-control credit of the announced messages due within one smoothed RTT, while some path has bytes in flight (cwr-plus's rule; ours)"},
	}, append(staggerOptions(), creditRTTsOption())...)
}

// CounterReservationsMissed is the name of the per-path counter of the CWR
// schedulers (see Counters): how many reserved priority messages did not
// find the room reserved for them on the path free when they were
// generated (see CWR: it does not say that they waited).
const CounterReservationsMissed = "reservations_missed"

// ReservationGrace is how long after its generation time a message not
// yet written keeps its reservation (option hold_unwritten). A periodic
// source announces its next message as it writes the current one
// (trafficgen), and the announced schedule then starts at the next
// message. On the simulator's clock the write is sent before anything else
// happens; on a real clock the application's timer fires up to about a
// millisecond late on a loaded host and the connection's send loop runs
// after the announcement, and without the grace a send decision in
// between (an acknowledgement) gives the message's room to background
// data, so that the message waits for the window. The validation on real
// kernels (docs/results/validation.md) measures the effect.
const ReservationGrace = 5 * time.Millisecond

// maxPending bounds the reservations a CWR scheduler remembers for the
// reservations_missed count (a source whose messages are never written
// would otherwise grow the list forever). When full, the oldest is dropped
// uncounted.
const maxPending = 1024

// CWR is the Congestion Window Reservation path scheduler of Noroozi et
// al., "Performance Evaluation of a New Scheduling Model Using Congestion
// Window Reservation", Section III-D1. The application announces its
// periodic priority sources (SourceAware); the scheduler keeps room in the
// congestion window of one path free for the messages they will generate,
// so that a message leaves as soon as it is written.
//
// By default it follows the paper's text; where the text is silent it
// takes the simplest reading, and says which sentence it reads. Other
// readings and the rules the paper does not have are options (Options,
// transport.scheduler_options; cwrOptions lists them).
//
// At a send decision at time now, among the candidate paths (as for
// lowrtt: usable available paths, else usable backup paths, else every
// validated path):
//
//   - Reservations ("keeps space in the congestion window for priority
//     data free", III-D1; "The CWR always appends a reservation only to
//     the path with the lower RTT", IV-B): every message of every
//     announced source is reserved on the candidate path with the lowest
//     smoothed RTT; if several candidates share that RTT, on the first of
//     them by path ID (option equal_rtt = "alternate", ours: the k-th
//     message of source S, k counted from the Next the source was
//     announced with, goes to the ((S + k) mod n)-th of those n paths, a
//     reading of IV-B's "Because the paths have the same RTT, the choice
//     of the path changes"; the smoothed RTTs of real paths are seldom
//     exactly equal, and that sentence describes their crossing).
//   - The reserved bytes of path p are, for the messages reserved on p
//     that are due in (now, now + srtt_p], their WireBytes plus
//     PacketSlack each: the paper reserves "exactly as many bytes as are
//     needed for the messages" (IV-B) so that they are "sent immediately"
//     (III-D1), and the core sends a message's last, short packet at once
//     only if the window has room for its announced size, PacketSlack
//     beyond its data and overhead. The horizon of one smoothed RTT is a
//     reading: the paper says only that "It may be worthwhile to wait for
//     priority data to be generated instead of sending background data
//     that excessively occupy the available congestion window" (III-D1);
//     data sent now occupy the window for about one round trip, so only
//     the messages due within it can find them there. Option horizon =
//     "next" reserves every source's next message however far ahead.
//   - A path's reservations are capped at its window (reservation =
//     "partial"): the paper's reservation "is based on the assumption that
//     the congestion window remains constant", and "If a packet loss
//     occurs before a message is generated, the reserved area cannot be
//     used because it is dropped" (III-D1): a window that shrank below the
//     reservations is all reserved, and the message finds less room than
//     it needs. Option reservation = "whole" (ours) keeps a message's
//     reservation only if all of it fits the window beside the messages
//     reserved there before it (taken in order of generation time, then
//     source ID), and drops it otherwise, so that background data may use
//     the window meanwhile.
//   - Priority data (ClassPriority, or ClassRetransmission of a priority
//     stream) goes on the lowest-RTT path whose window and pacer let the
//     packet out (PathInfo.CanSend), without looking at reservations:
//     "For priority data, the path with the lowest RTT and sufficient
//     space in the congestion window is selected" (III-D1), and "If the
//     reservation is not successful, the scheduler operates like LowRTT.
//     It may then happen that the slower path is selected" (IV-C2). The
//     choice is per packet, as LowRTT's; option path_choice = "message"
//     puts all of a message on the path chosen at its first packet: the
//     lowest-RTT one whose window has room for the whole message, else the
//     lowest-RTT one that can take the packet.
//   - Control-only packets (ClassControl) go like priority data: they are
//     never held back by reservations.
//   - Other data (ClassBackground, and retransmissions of other streams)
//     goes on the lowest-RTT path p with bytes_in_flight_p + packet +
//     reserved_p <= cwnd_p (and room in its pacer) ("always assigns
//     background data to the path with the lowest RTT on which no
//     reservations are at risk", III-D1). If no path qualifies, nothing is
//     sent now, even if some window has room ("an actually free area in
//     the congestion window may remain unused"). Reservations do not hold
//     data back while no candidate has anything in flight (option
//     idle_escape, on by default): no acknowledgement would then ever
//     free room, and with priority-fifo (which serves lost data first) the
//     priority data queued behind a lost background packet would wait for
//     good. The paper assumes "that the congestion windows of the paths
//     have a sufficient size at all times" (IV-A), where this never
//     happens. The packet then goes on the lowest-RTT candidate whose
//     window and pacer let it out.
//   - Lost data of a stream without priority is background data here,
//     and priority-fifo serves lost data first ("retransmissions are
//     always processed first, regardless of their priority", III-C): a
//     background retransmission held back by the reservations holds back
//     the priority message behind it, which then waits, though it has its
//     reserved room, until acknowledgements free room beyond the
//     reservations for the retransmission. Option skip_held_back (ours,
//     HeldBackSkipper) lets the core offer the priority data instead,
//     which goes by the rule for priority data above; the retransmission
//     is still offered first at every decision.
//   - cwr-plus's rules (CWRPlus) are options here too, off by default:
//     credit and credit_rtts (creditRule), stagger_startup,
//     stagger_clear and stagger_hold_rtts (startupStagger). CWR+RED has
//     them too.
//
// Equal RTTs when choosing the path of a packet go to the lower index in
// paths, as in lowrtt. Without announced sources CWR therefore decides
// exactly as lowrtt.
//
// CWR counts per path as "reservations_missed" (see Counters) the
// messages that did not find the room reserved for them free when they
// were generated: a message counts once it was reserved (it was due
// within the horizon of its path at some send decision) and, at the first
// send decision at or after its generation time at which priority data
// wait (Work.Class is ClassPriority or Work.Waiting.PriorityBytes > 0; the
// latter catches a decision on a retransmission that priority-fifo serves
// first), its path (for CWR the one it was reserved on at the last
// decision before: the reservation follows the lowest smoothed RTT) is no
// longer usable or its free window (CWND - BytesInFlight) is smaller than
// the message's wire bytes plus those of the messages settled before it
// at the same decision on the same path (ordered by generation time, then
// source ID). Each message is settled, counted or not, at that one
// decision. Dropped uncounted are: a message whose path has disappeared
// from the connection, and a message still unsettled when a later message
// of its source is settled (it was never written: a write causes a send
// decision). The schedulers cannot tell which stream carries which
// source's messages, so any priority data waiting at or after the
// generation time stands for the message.
//
// A missed reservation is not a late message. The paper names a loss
// that shrinks the window before the message is generated (Section IV-B);
// traced over two paths of 50 ms RTT (docs/results/reference-paper.md), most misses come
// from elsewhere: the smoothed RTTs of paths of equal RTT differ by tens
// to hundreds of microseconds and cross as acknowledgements arrive, so a
// message's reservation moves between the paths before it is generated
// and background data fill the room it left; and a path's previous
// message, sent one RTT earlier, may still be in flight. The message
// completion time, not this counter, says whether a message was late.
//
// A message is reserved until it is written (the first send decision at
// or after its generation time at which priority data wait settles it)
// or until ReservationGrace after its generation time, whichever comes
// first, on the path it was reserved on at the last decision before its
// generation, also once the source has announced its next message: data
// written later than that compete with background data for the room, and
// so do background retransmissions, which priority-fifo serves before
// priority data. This (option hold_unwritten, on by default) is not a
// reading of the paper but what its reservation needs on a real clock
// (see ReservationGrace); in the simulator a periodic message is written
// at its generation time, and the grace holds background data back only
// in a decision at that very time ordered before the write (the wake-up
// at the generation time). With hold_unwritten = false a message is
// reserved until its generation time and no longer in the schedule once
// its source announced the next one.
type CWR struct {
	res  reserver
	cand []int
	// idleEscape, perMessage and skipHeld are the options idle_escape,
	// path_choice = "message" and skip_held_back; credit is credit and
	// credit_rtts, stagger stagger_startup and stagger_clear.
	idleEscape, perMessage, skipHeld bool
	credit                           creditRule
	stagger                          startupStagger
	msgs                             messages
}

// NewCWR returns a CWR scheduler without sources, with the default
// options.
func NewCWR() *CWR {
	s, _ := NewPathSchedulerWith("cwr", nil)
	return s.(*CWR)
}

func newCWR(o Options) *CWR {
	return &CWR{res: newReserver(o, false), idleEscape: o.Bool(OptIdleEscape), perMessage: o[OptPathChoice] == "message",
		skipHeld: o.Bool(OptSkipHeldBack), credit: newCreditRule(o), stagger: newStartupStagger(o)}
}

// newReserver is the reserver of the options o (everyPath for cwr-red).
func newReserver(o Options, everyPath bool) reserver {
	return reserver{everyPath: everyPath, slack: PacketSlack, whole: o[OptReservation] == "whole",
		next: o[OptHorizon] == "next", alternate: o[OptEqualRTT] == "alternate", holdUnwritten: o.Bool(OptHoldUnwritten)}
}

// Name implements PathScheduler.
func (*CWR) Name() string { return "cwr" }

// Announce implements SourceAware.
func (s *CWR) Announce(src Source) { s.res.announce(src) }

// Withdraw implements SourceAware.
func (s *CWR) Withdraw(id uint64) { s.res.withdraw(id) }

// PathCounters implements Counters: "reservations_missed".
func (s *CWR) PathCounters(pathID uint64) map[string]uint64 { return s.res.counters(pathID) }

// SkipsHeldBack implements HeldBackSkipper: option skip_held_back, or
// stagger_startup (which holds retransmissions back).
func (s *CWR) SkipsHeldBack() bool { return s.skipHeld || s.stagger.on }

// KeepsIdle implements IdleKeeper: stagger_startup kept the data without
// priority off path id in the latest decision.
func (s *CWR) KeepsIdle(id uint64) bool { return s.stagger.keepsIdle(id) }

// Select implements PathScheduler.
func (s *CWR) Select(now time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	s.cand = candidates(paths, s.cand)
	s.stagger.observe(now, paths, s.cand)
	reserved := s.res.reserve(now, paths, s.cand)
	if priorityWaits(w) {
		s.res.settle(now, paths)
	}
	i := -1
	if s.perMessage && w.Class == ClassPriority {
		d, _ := s.msgs.of(w)
		i = messagePath(paths, s.cand, w, d)
	} else if !s.credit.holds(now, paths, s.cand, s.res.sources, w) {
		i = pickBackgroundOrNot(paths, s.stagger.filter(paths, s.cand, w), w, reserved, s.idleEscape)
	}
	if i >= 0 {
		dst = append(dst, paths[i].ID)
	}
	return dst
}

// pickBackgroundOrNot is the path choice of CWR (and CWR+RED's single
// path): the lowest-RTT candidate that can take the packet, reservations
// counting against background data only; and, with idleEscape, for
// background data that fits beside the reservations of no candidate while
// no candidate has anything in flight, the lowest-RTT candidate that can
// take it (see CWR).
func pickBackgroundOrNot(paths []PathInfo, cand []int, w Work, reserved []uint64, idleEscape bool) int {
	bg := w.Class != ClassControl && !isPriority(w)
	best := pickPath(paths, cand, w.Size, reserved, bg)
	if best < 0 && bg && idleEscape {
		for _, i := range cand {
			if paths[i].BytesInFlight > 0 {
				return -1
			}
		}
		best = pickPath(paths, cand, w.Size, reserved, false)
	}
	return best
}

// pickPath returns the lowest-RTT candidate whose window and pacer let a
// packet of size bytes out, beside its reserved bytes if withReserved; -1
// if none.
func pickPath(paths []PathInfo, cand []int, size int, reserved []uint64, withReserved bool) int {
	best := -1
	for _, i := range cand {
		p := &paths[i]
		if withReserved && !fitsWith(p, size, reserved[i]) || !withReserved && !p.CanSend(size) {
			continue
		}
		if best < 0 || p.SRTT < paths[best].SRTT {
			best = i
		}
	}
	return best
}

// messagePath is the path of a packet of the priority message d with
// path_choice = "message": the path chosen for the message, if it is
// still a candidate (-1 while it cannot take the packet); else, chosen
// now, the lowest-RTT candidate whose window has room for the rest of
// the message (WireBytes(w.Pending) + PacketSlack) and whose window and
// pacer let the packet out, or if there is none the lowest-RTT candidate
// that can take the packet (LowRTT); -1 if none can.
func messagePath(paths []PathInfo, cand []int, w Work, d *messageDecision) int {
	if d.hasPath {
		for _, i := range cand {
			if paths[i].ID == d.path {
				if paths[i].CanSend(w.Size) {
					return i
				}
				return -1
			}
		}
	}
	best := -1
	for _, i := range cand {
		p := &paths[i]
		need := uint64(WireBytes(int(min(w.Pending, 1<<40)), p)) + PacketSlack
		if !p.CanSend(w.Size) || p.CwndRoom() < need {
			continue
		}
		if best < 0 || p.SRTT < paths[best].SRTT {
			best = i
		}
	}
	if best < 0 {
		best = pickPath(paths, cand, w.Size, nil, false)
	}
	if best >= 0 {
		d.path, d.hasPath = paths[best].ID, true
	}
	return best
}

// messages are the priority messages in progress, one per stream, most
// recent last (at most maxMessages).
type messages struct{ list []messageDecision }

// messageDecision is what was decided for the message in progress on a
// stream; left is the stream's pending bytes at its last packet.
type messageDecision struct {
	stream uint64
	left   uint64
	// dup: cwr-red sends the message's packets on every candidate.
	dup bool
	// path, if hasPath, carries the message (path_choice = "message").
	path    uint64
	hasPath bool
}

// maxMessages bounds the message decisions remembered. Messages are
// served in order (priority-fifo), so only a few are in progress at once;
// a forgotten one is decided again as a new message.
const maxMessages = 64

// of returns the decision of the message whose packet w is, and whether
// the packet starts a new message (its stream's Work.Pending larger than
// what was left of the stream's previous message): then the decision is a
// fresh one for the caller to fill in.
func (m *messages) of(w Work) (*messageDecision, bool) {
	for k := range m.list {
		d := &m.list[k]
		if d.stream != w.StreamID {
			continue
		}
		if w.Pending <= d.left {
			d.left = w.Pending
			return d, false
		}
		m.list = slices.Delete(m.list, k, k+1)
		break
	}
	if len(m.list) >= maxMessages {
		m.list = slices.Delete(m.list, 0, 1)
	}
	m.list = append(m.list, messageDecision{stream: w.StreamID, left: w.Pending})
	return &m.list[len(m.list)-1], true
}

// priorityWaits reports whether priority data wait at a send decision: the
// moment the reservations of generated messages are settled.
func priorityWaits(w Work) bool {
	return w.Class == ClassPriority || w.Waiting.PriorityBytes > 0
}

// reservation is one message reserved on one path, remembered until the
// first send decision at or after its generation at which priority data
// wait.
type reservation struct {
	source uint64
	at     time.Time
	path   uint64
	bytes  uint64
}

// reserver keeps the announced sources and computes the reservations of
// CWR (on the lowest-RTT path) or CWR+RED (everyPath).
type reserver struct {
	everyPath bool
	// whole keeps a message's reservation on a path only if all of it
	// fits the window beside the messages reserved there before it
	// (reservation = "whole"); otherwise the reservations of a path are
	// capped at its window ("partial").
	whole bool
	// next reserves each source's next message however far ahead it is
	// (horizon = "next"), not only the messages due within one smoothed
	// RTT.
	next bool
	// alternate spreads the reservations of CWR over paths of equal
	// smoothed RTT (equal_rtt = "alternate"); otherwise they go on the
	// first of them in order of path ID.
	alternate bool
	// holdUnwritten keeps the reservation of a message generated and not
	// yet written until ReservationGrace after its generation
	// (hold_unwritten).
	holdUnwritten bool
	// slack is added to every message's reservation (PacketSlack: see
	// CWR).
	slack   uint64
	sources []Source // sorted by ID
	// pending are the reservations made and not settled yet.
	pending  []reservation
	settling []reservation
	missed   map[uint64]uint64
	reserved []uint64 // per index in paths
	tied     []int
	due      []dueMessage
}

func (r *reserver) announce(s Source) {
	i, found := slices.BinarySearchFunc(r.sources, s.ID, func(x Source, id uint64) int { return cmp.Compare(x.ID, id) })
	if !found {
		r.sources = slices.Insert(r.sources, i, s)
		return
	}
	r.sources[i] = s
	// Forget what was reserved for the old schedule from the new Next on
	// (it is reserved again if the new schedule still has it); messages
	// before the new Next are taken as generated and still get settled.
	r.pending = slices.DeleteFunc(r.pending, func(x reservation) bool {
		return x.source == s.ID && !x.at.Before(s.Next)
	})
}

func (r *reserver) withdraw(id uint64) {
	r.sources = slices.DeleteFunc(r.sources, func(x Source) bool { return x.ID == id })
	r.pending = slices.DeleteFunc(r.pending, func(x reservation) bool { return x.source == id })
}

func (r *reserver) counters(pathID uint64) map[string]uint64 {
	return map[string]uint64{CounterReservationsMissed: r.missed[pathID]}
}

// messageIndex numbers the messages of s from its announced Next on.
func messageIndex(s *Source, at time.Time) uint64 {
	if s.Interval <= 0 || at.Before(s.Next) {
		return 0
	}
	return uint64(at.Sub(s.Next) / s.Interval)
}

// reserve returns the bytes reserved on each path (by index in paths) at
// now, and remembers the reservations for settle. The messages due are
// reserved in order of generation time (then source ID); a message whose
// bytes do not fit its path's window beside those of the earlier messages
// reserved there holds nothing (see CWR) but is remembered all the same.
func (r *reserver) reserve(now time.Time, paths []PathInfo, cand []int) []uint64 {
	r.reserved = slices.Grow(r.reserved[:0], len(paths))[:len(paths)]
	clear(r.reserved)
	if len(r.sources) == 0 || len(cand) == 0 {
		return r.reserved
	}
	r.due = r.due[:0]
	// Messages generated by now and not yet written keep their room on
	// the path they were reserved on, until ReservationGrace after their
	// generation; the source has announced its next message by then, so
	// they are no longer in its schedule from Next on.
	for _, x := range r.pending {
		if !r.holdUnwritten || x.at.After(now) || !x.at.After(now.Add(-ReservationGrace)) {
			continue
		}
		i := slices.IndexFunc(paths, func(p PathInfo) bool { return p.ID == x.path })
		k := slices.IndexFunc(r.sources, func(s Source) bool { return s.ID == x.source })
		if i >= 0 && k >= 0 && slices.Contains(cand, i) {
			r.due = append(r.due, dueMessage{i, &r.sources[k], x.at})
		}
	}
	if r.everyPath {
		for _, i := range cand {
			p := &paths[i]
			for k := range r.sources {
				src := &r.sources[k]
				src.Due(now, r.horizon(now, p.SRTT, src), func(at time.Time) { r.due = append(r.due, dueMessage{i, src, at}) })
			}
		}
	} else {
		// The lowest-RTT candidates, by path ID.
		r.tied = r.tied[:0]
		for _, i := range cand {
			switch {
			case len(r.tied) == 0 || paths[i].SRTT == paths[r.tied[0]].SRTT:
				r.tied = append(r.tied, i)
			case paths[i].SRTT < paths[r.tied[0]].SRTT:
				r.tied = append(r.tied[:0], i)
			}
		}
		slices.SortFunc(r.tied, func(a, b int) int { return cmp.Compare(paths[a].ID, paths[b].ID) })
		srtt := paths[r.tied[0]].SRTT
		for k := range r.sources {
			src := &r.sources[k]
			src.Due(now, r.horizon(now, srtt, src), func(at time.Time) {
				i := r.tied[0]
				if r.alternate {
					n := uint64(len(r.tied))
					i = r.tied[(src.ID%n+messageIndex(src, at)%n)%n]
				}
				r.due = append(r.due, dueMessage{i, src, at})
			})
		}
	}
	slices.SortFunc(r.due, func(a, b dueMessage) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.src.ID, b.src.ID), cmp.Compare(a.i, b.i))
	})
	for _, d := range r.due {
		r.add(paths, d.i, d.src, d.at)
	}
	return r.reserved
}

// horizon is the end of the reservation window (now, horizon] of source
// src on a path of smoothed RTT srtt: now + srtt, or, with
// horizon = "next", the source's next generation time after now.
func (r *reserver) horizon(now time.Time, srtt time.Duration, src *Source) time.Time {
	if !r.next {
		return now.Add(srtt)
	}
	return nextGeneration(src, now)
}

// nextGeneration is the first generation time of src after now (its Next
// if src has no interval, even if that is not after now).
func nextGeneration(src *Source, now time.Time) time.Time {
	at := src.Next
	if src.Interval > 0 && !at.After(now) {
		at = at.Add((now.Sub(at)/src.Interval + 1) * src.Interval)
	}
	return at
}

// dueMessage is a message due within the reservation window of the path
// paths[i].
type dueMessage struct {
	i   int
	src *Source
	at  time.Time
}

// add reserves the message of src generated at at on paths[i], if it fits
// the path's window beside the messages reserved there before it.
func (r *reserver) add(paths []PathInfo, i int, src *Source, at time.Time) {
	b := uint64(WireBytes(src.Size, &paths[i])) + r.slack
	switch {
	case r.reserved[i]+b <= paths[i].CWND:
		r.reserved[i] += b
	case !r.whole:
		r.reserved[i] = paths[i].CWND
	}
	res := reservation{source: src.ID, at: at, path: paths[i].ID, bytes: b}
	for j := range r.pending {
		x := &r.pending[j]
		if x.source == res.source && x.at.Equal(res.at) && (!r.everyPath || x.path == res.path) {
			// CWR: the message may have moved to another path
			// since the last decision.
			*x = res
			return
		}
	}
	if len(r.pending) >= maxPending {
		r.pending = slices.Delete(r.pending, 0, 1)
	}
	r.pending = append(r.pending, res)
}

// settle runs at a priority send decision: every reserved message
// generated by now is checked against its path once and forgotten.
func (r *reserver) settle(now time.Time, paths []PathInfo) {
	r.settling = r.settling[:0]
	keep := r.pending[:0]
	for _, x := range r.pending {
		if x.at.After(now) {
			keep = append(keep, x)
		} else {
			r.settling = append(r.settling, x)
		}
	}
	r.pending = keep
	if len(r.settling) == 0 {
		return
	}
	slices.SortFunc(r.settling, func(a, b reservation) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.source, b.source), cmp.Compare(a.path, b.path))
	})
	// Only the latest generated message of a source stands for the
	// priority data waiting now. An earlier one still unsettled was not
	// written (had it been, the decision its write caused would have
	// settled it): drop it uncounted.
	latest := func(x *reservation) bool {
		for j := range r.settling {
			y := &r.settling[j]
			if y.source == x.source && y.at.After(x.at) {
				return false
			}
		}
		return true
	}
	for i := range paths {
		p := &paths[i]
		var need uint64
		for k := range r.settling {
			x := &r.settling[k]
			if x.path != p.ID || !latest(x) {
				continue
			}
			need += x.bytes
			if !usable(p) || p.CwndRoom() < need {
				if r.missed == nil {
					r.missed = map[uint64]uint64{}
				}
				r.missed[p.ID]++
			}
		}
	}
}

var (
	_ SourceAware = (*CWR)(nil)
	_ Counters    = (*CWR)(nil)
)

// nextWakeup is the earliest time after now at which a reservation ends:
// the generation of a message still to come, or with hold_unwritten
// ReservationGrace after it, and after that of a message not yet written;
// the data it held back may go then (implements Waker for cwr and
// cwr-red). A message entering the reservation window only holds data
// back more, which needs no wake-up.
func (r *reserver) nextWakeup(now time.Time) time.Time {
	var t time.Time
	var grace time.Duration
	if r.holdUnwritten {
		grace = ReservationGrace
	}
	earliest := func(at time.Time) {
		if end := at.Add(grace); end.After(now) && (t.IsZero() || end.Before(t)) {
			t = end
		}
	}
	for k := range r.sources {
		if at := nextGeneration(&r.sources[k], now); at.After(now) {
			earliest(at)
		}
	}
	if r.holdUnwritten {
		for j := range r.pending {
			if x := &r.pending[j]; !x.at.After(now) {
				earliest(x.at)
			}
		}
	}
	return t
}

// NextWakeup implements Waker.
func (s *CWR) NextWakeup(now time.Time) time.Time { return s.res.nextWakeup(now) }
