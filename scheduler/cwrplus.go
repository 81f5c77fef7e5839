package scheduler

import (
	"slices"
	"time"
)

func init() {
	RegisterPathWithOptions("cwr-plus", cwrPlusOptions(), func(o Options) PathScheduler { return newCWRPlus(o) })
}

// Names of the options of cwr-plus, each one of its rules; what each does
// is its Doc in cwrPlusOptions.
const (
	OptCopies          = "copies"
	OptCredit          = "credit"
	OptQueueGuard      = "queue_guard"
	OptParity          = "parity"
	OptQueuedCopies    = "queued_copies"
	OptDrain           = "drain"
	OptGuardOne        = "guard_one"
	OptStartupGuard    = "startup_guard"
	OptUnpacedPriority = "unpaced_priority"
	OptRateCap         = "rate_cap"
	OptStartupCopies   = "startup_copies"
	OptAvoidSilent     = "avoid_silent"
	OptRepay           = "repay"
	OptRatePace        = "rate_pace"
	OptPipeRoom        = "pipe_room"
	OptRateProbe       = "rate_probe"
	OptCarefulStart    = "careful_start"
	OptCarefulDrain    = "careful_drain"
	OptSecondParity    = "second_parity"
	OptBorrow          = "borrow"
)

// The values of cwr-plus's option repay.
const (
	RepayRTT   = "rtt"
	RepayQueue = "queue"
	RepayNone  = "none"
)

// The values of cwr-plus's option borrow.
const (
	BorrowRoundTrip = "round_trip"
	BorrowMessage   = "message"
)

// The values of cwr-plus's option second_parity.
const (
	SecondParityBudget = "budget"
	SecondParityRisk   = "risk"
	SecondParityOff    = "off"
)

// The values of cwr-plus's option startup_guard.
const (
	StartupGuardOff  = "off"
	StartupGuardPath = "path"
	StartupGuardConn = "conn"
)

// cwrPlusOptions are the options of cwr-plus with their defaults.
func cwrPlusOptions() []Option {
	opts := append([]Option{
		{Name: OptCopies, Default: "false",
			Doc: "priority packets on every path whose window, with one message's budget beyond it, admits them (off: on the lowest-RTT one; without the REPAIR extension negotiated, parity falls back to this)"},
		{Name: OptCredit, Default: "true",
			Doc: "background data leave the connection's flow-control credit of the priority messages due within one smoothed RTT"},
		{Name: OptQueueGuard, Default: "false",
			Doc: "background data keep off a path whose latest RTT is more than 2 ms (QueueGuard) above its minimum, while it has bytes in flight"},
		{Name: OptParity, Default: "true",
			Doc: "each priority message gets the XOR parity of its packets (REPAIR frames, Repairer) on the lowest-RTT path that carried none of it and whose smoothed RTT is within 2 ms (QueueGuard) of the lowest, else on the lowest-RTT path; negotiated: the transport offers the REPAIR extension by default when this is on, and where the peer does not offer it cwr-plus sends whole copies on every path instead (as copies) and summary.json's repair says negotiated = false"},
		{Name: OptSecondParity, Choices: []string{SecondParityBudget, SecondParityRisk, SecondParityOff}, Default: SecondParityBudget,
			Doc: "with parity: a priority message also gets a second, Reed-Solomon parity (REPAIR_Q frames, SecondRepairer), so that any two of its lost packets are rebuilt; risk: when the paths' loss rates (lost over sent packets, the highest of the candidate paths) make two losses among its packets and its parity likelier than 1e-4 (SecondParityRiskLimit, a tenth of what a p99.9 allows); budget: then too, and only while the two parities of a message per interval between messages (a moving average) take at most 5 % (SecondParityShare) of what the paths' windows carry (the sum of cwnd over smoothed RTT): under a window that random loss keeps small every parity byte displaces a byte of other data; off: never. It goes where the first went (the rule of parity); without REPAIR_Q negotiated, none"},
		{Name: OptStartupCopies, Default: "true",
			Doc: "with copies off: priority packets are still copied on every path while some path is in its first slow start, whose overshoot the lowest-RTT path may be queueing"},
		{Name: OptRateCap, Default: "true",
			Doc: "once a path has left its first slow start, data of streams without priority (new and retransmitted; priority data pass what it holds back) keep its bytes in flight within its estimated bottleneck rate (the largest delivery rate over a minimum RTT) times its minimum RTT plus 0.25 ms (RateCapSlack): the window beyond the bandwidth-delay product does not become a standing queue that messages wait behind"},
		{Name: OptRatePace, Default: "true",
			Doc: "while rate_cap's cap applies to a path (out of its first slow start, its window beyond the cap), data of streams without priority leave it no faster than the cap per minimum RTT (its estimated bottleneck rate times (minimum RTT + 0.25 ms) / minimum RTT), from a bucket of 0.25 ms at that estimate (at least two packets): after a stall (the peer's flow-control credit spent, a gap in the acknowledgements) the bytes in flight refill at the bottleneck's rate, not in one burst that stands in the queue for as long as the stall lasted"},
		{Name: OptRateProbe, Default: "true",
			Doc: "after a smoothed RTT in which rate_cap held a path at its cap and its RTT samples showed no queue (the least less than half of RateCapSlack above its minimum), its estimated bottleneck rate grows by 1 % (RateCapProbe); only on a path that another path undercuts in minimum RTT by more than 2 ms (QueueGuard), which messages do not take (the probe's overshoot is a queue); not with bbr, whose own drain phases look like a low estimate: an estimate that a first slow start left below the bottleneck's rate would otherwise keep the path below it, since the estimate grows only with what the cap lets through (a cap at the right rate keeps RateCapSlack of queue, which stops the probe)"},
		{Name: OptCarefulStart, Default: "true",
			Doc: "with rate_cap: a path in its first slow start whose minimum RTT no other path matches within 2 ms (QueueGuard; none that could carry a message as fast while it overshoots) starts carefully: data of streams without priority keep its bytes in flight within a limit that begins at its window and grows by 0.5 ms (CarefulStep) over its minimum RTT of each acknowledged byte, so that it reaches its bottleneck's rate with about 0.5 ms of queue instead of slow start's doubling (and slowly where that RTT is long: 0.5 % a round trip at 100 ms); it ends when a minimum RTT's least RTT sample shows 0.25 ms (CarefulQueue) of queue, or its controller's window falls below the limit, and rate_cap then holds the path at its estimate; the stagger does not wait for such a path"},
		{Name: OptCarefulDrain, Default: "false",
			Doc: "with careful_start: a path in its first slow start that another path matches in minimum RTT also starts carefully (without handing over to rate_cap) while such a path left its first slow start less than 4 of its smoothed RTTs ago (CarefulDrainRTTs) and has shown no queue since: the second of two equal paths does not queue the one a message could take while the first's overshoot drains (over the robustness grid: the latency goal at >= 95 % of lowrtt's goodput at 112 points against 110, but one point at 84.8 % of lowrtt's goodput)"},
		{Name: OptPipeRoom, Default: "true",
			Doc: "priority data also go on a path whose window, with one message's budget beyond it, is full while its bytes in flight with the packet stay within its estimated bandwidth-delay product (its largest delivery rate over a minimum RTT, as rate_cap's, times its minimum RTT), once its controller has had a congestion event (with bbr: once out of its Startup, and only while no other path matches its minimum RTT within 2 ms, QueueGuard: ProbeRTT's window is deliberate, and beyond it on the base point's equal paths it kept path 0 in ProbeRTT, but a message held out of it goes on a path slower by more than a queue): a window that a loss has just cut, with more in flight than it now allows, holds no message back from a path with no queue to wait in (else the message takes a slower path)"},
		{Name: OptQueuedCopies, Default: "false",
			Doc: "with copies = false: a priority packet is still copied when its lowest-RTT path shows a queue (as queue_guard) or has lost no packet yet (its first slow start)"},
		{Name: OptDrain, Default: "false",
			Doc: "priority data try the paths in the order of SRTT x (1 + bytes_in_flight / cwnd), what is ahead of them, rather than of SRTT"},
		{Name: OptGuardOne, Default: "false",
			Doc: "queue_guard holds background data off a queued path only while no other path is clear of a queue"},
		{Name: OptStartupGuard, Choices: []string{StartupGuardOff, StartupGuardPath, StartupGuardConn}, Default: StartupGuardOff,
			Doc: "how long queue_guard holds: the whole run (off), on a path only while that path is in its first slow start, until its first congestion event or slow-start exit (path), on every path while some path is still in its first slow start (conn)"},
		{Name: OptAvoidSilent, Default: "false",
			Doc: "priority data try the paths that are not silent first: a path is silent when its oldest unacknowledged packet was sent longer ago than its acknowledgement should take (smoothed RTT + max(4 RTT variations, 1 ms), + the peer's max_ack_delay while under two full packets are in flight; PathInfo.Silent), as a path that stopped delivering is, which the connection declares failed only after three smoothed RTTs (ours)"},
		{Name: OptRepay, Choices: []string{RepayNone, RepayRTT, RepayQueue}, Default: RepayNone,
			Doc: "how background data repay the bytes priority packets sent beyond a path's window: rtt, they count against the window until those packets are acknowledged or lost; queue, only while the path shows a queue (as queue_guard); none, never (background data wait only for the window)"},
		{Name: OptBorrow, Choices: []string{BorrowRoundTrip, BorrowMessage}, Default: BorrowRoundTrip,
			Doc: "how far beyond its window priority data may go on a path (the budget): message, the wire bytes of the largest announced message plus 64 bytes (PacketSlack; one packet without announced sources); round_trip, the wire bytes of the announced messages due within one smoothed RTT of the path (each source's SRTT/interval + 1 messages), each with a packet for its parity, plus 64 bytes: where messages come faster than the round trip, those still in flight do not use up the room of the next (a 2 kB message every 20 ms at a 50 ms RTT waited 10 ms for the window in the start-up with message)"},
		{Name: OptUnpacedPriority, Default: "true",
			Doc: "priority data leave whatever the pacer's budget (transport.pacing, and bbr's own pacing, which would hold a copy on a path whose rate is still low), as parities always do (background data stay paced)"},
	}, append(staggerOptions(), creditRTTsOption())...)
	for i := range opts {
		switch opts[i].Name {
		case OptStaggerStartup:
			opts[i].Default = "true" // cwr-plus staggers by default
		case OptCreditRTTs:
			// Over the robustness grid: 116 points with 2 against 110
			// with 1 (bbr's start-up stalls on the peer's MAX_DATA).
			opts[i].Default = "2"
		}
	}
	return opts
}

// QueueGuard is how far a path's latest RTT may lie above its minimum
// before cwr-plus (queue_guard) puts no more background data on it: the
// queue a priority message would wait behind.
const QueueGuard = 2 * time.Millisecond

// CWRPlus is the project's own priority scheduler ("cwr-plus"), not the
// reference paper's: designed from where the messages of cwr, cwr-red and
// sr later than the one-way delay plus serialization came from at the
// paper's base point (docs/results/beyond-the-paper.md, "Beyond the paper"): the bottleneck
// queue built by slow start, the connection's flow-control credit used up
// by background data in slow start, a window that a loss had halved, and
// lost packets; and, from the robustness grid (docs/results/robustness.md),
// the standing queue that a loss-based controller's window beyond the
// bandwidth-delay product builds on a lossless path. It keeps no window
// reservation. Its defaults are the rules that did best over the grid
// (rate_cap, rate_pace, rate_probe, careful_start, pipe_room, borrow =
// "round_trip", parity with its fallback to copies and second_parity =
// "budget", startup_copies, stagger_startup, credit with credit_rtts =
// 2, unpaced_priority;
// copies and queue_guard off), and with credit it has the receiving end's
// connection window follow its stream windows (StreamWindowFollower);
// every rule is an option (cwrPlusOptions). Its rules, among the
// candidate paths (as for lowrtt: usable available paths, else usable
// backup paths, else every validated path):
//
//   - Priority data (ClassPriority, or ClassRetransmission of a priority
//     stream) goes at once on the lowest-RTT candidate, and on every
//     other one too (a copy) with rule copies, or while the REPAIR
//     extension is not negotiated though rule parity is on (parity's
//     fallback), or while some candidate is in its first slow start
//     (rule startup_copies); on those whose pacer lets it out (whatever
//     the pacer with unpaced_priority) and whose window
//     admits it with a budget beyond it: bytes_in_flight + packet <=
//     cwnd + budget, the budget being (rule borrow) the wire bytes of the
//     announced messages due within the path's smoothed RTT, each with
//     a packet of parity, plus PacketSlack (one packet's worth without
//     announced sources; with borrow = "message" the largest announced
//     message's). Lowest RTT first, with rule avoid_silent (off
//     by default) the paths that are not silent before the silent ones
//     (the oldest unacknowledged packet sent longer ago than its
//     acknowledgement should take, PathInfo.Silent);
//     the core sends copies on all but the first. A window that a loss
//     halved therefore holds no message back, and a packet lost on one
//     path arrives on the other.
//   - Rule parity (Repair): each priority message gets one XOR parity
//     packet, so that one lost packet of it is rebuilt without a
//     retransmission; rule second_parity (SecondRepair) adds its
//     Reed-Solomon parity where the paths' loss rate makes two losses
//     among its packets likely enough to matter to a p99.9 (and, by
//     default, where the two parities cost at most SecondParityShare of
//     what the windows carry), so that two lost packets are rebuilt.
//   - The bytes of a priority packet beyond its path's window are
//     borrowed. Rule repay says what other packets pay for them: by
//     default (repay = "none") nothing beyond waiting for the window,
//     which the packet already fills; with repay = "rtt", as in sr, until
//     that packet is acknowledged or declared lost, the path's usable
//     window for every other packet is smaller by them (the controller's
//     bytes over a round trip, but the priority bytes counted twice,
//     which costs background data most where the window is below the
//     path's bandwidth-delay product, as under random loss;
//     docs/results/robustness.md measures it);
//     with repay = "queue" only while the path shows a queue (queued).
//   - Other data (ClassBackground, and retransmissions of other streams)
//     goes on the lowest-RTT candidate p with
//     bytes_in_flight_p + packet + owed_p <= cwnd_p (owed_p: what rule
//     repay holds back, 0 by default; and room in its pacer), and:
//     for new data (ClassBackground; retransmissions are exempt from
//     both rules: priority-fifo serves lost data first, so a held
//     retransmission would hold the priority data behind it, and the
//     peer could not read on past it, nor grant credit):
//     (rule queue_guard) not while p shows a standing queue (queued: its
//     latest RTT more than QueueGuard above its minimum with two packets
//     or more in flight), slow start overshooting the bottleneck, which a
//     priority message would wait behind (with startup_guard = "path"
//     only while p is in its first slow start, PathInfo.InStartup; with
//     "conn" only while some candidate is); (rule credit) not while some
//     candidate has bytes in flight and the connection's flow-control
//     credit (Work.Waiting.SendWindow) less the packet would fall below
//     the stream bytes of the announced messages due within the largest
//     smoothed RTT of the candidates: in slow start the bulk data would
//     otherwise use up the peer's MAX_DATA and a message wait for the
//     next. For new data and retransmissions of streams without
//     priority alike (rule stagger_startup, off by default): not while p
//     is in its first slow start and a candidate before it in paths is
//     in its own: the paths' first slow starts come one after the other,
//     so that while one overshoots into its queue the other carries
//     priority data through an empty one (the overshoot's losses are sent
//     again on the overshooting path, and the core lets priority data
//     pass the retransmissions held back: HeldBackSkipper); with
//     stagger_clear until each candidate before it is clear of its
//     overshoot (out of its first slow start, no queue shown, and a
//     window its largest delivery rate carries within its minimum RTT
//     plus QueueGuard: clearOfOvershoot), so that the next slow start
//     begins once the earlier path's window no longer queues; no such
//     hold lasts longer than stagger_hold_rtts (32) of the candidates'
//     largest smoothed RTT without a break, so that no path starves
//     (issue 35: a lossless path with a full queue is never clear). And
//     (rule rate_cap, rateCap; new data and retransmissions of streams
//     without priority) not beyond the path's estimated bottleneck rate
//     times its minimum RTT plus RateCapSlack, once it has left its first
//     slow start and while its window exceeds that; (rule rate_pace) while
//     that cap applies, no faster than the cap per minimum RTT (a token
//     bucket of RateCapSlack's worth; Waker wakes the connection when it
//     holds a packet), so that the room a stall left (the peer's
//     flow-control credit spent, a gap in the acknowledgements) refills
//     at the bottleneck's rate and not in one burst that stands in the
//     queue; (rule rate_probe) the estimate of a path that another
//     candidate undercuts in minimum RTT by more than QueueGuard grows by
//     RateCapProbe after a round at the cap without a queue. (Rule
//     careful_start, with rate_cap) a path in its first slow start that
//     no other candidate matches in minimum RTT within QueueGuard grows
//     its bytes in flight by CarefulStep of its minimum RTT a round trip
//     instead of doubling them, until a round shows CarefulQueue of
//     queue; rate_cap then holds it, and the stagger does not wait for
//     it (observeStarts): its overshoot would be a queue that no other
//     path can carry messages past in time. If no path qualifies,
//     nothing is sent now.
//   - Rule pipe_room: a priority packet also goes on a path whose window
//     and budget are full while its bytes in flight with the packet stay
//     within the path's estimated bandwidth-delay product, once its
//     controller has had a congestion event (bbr: once out of its
//     Startup, and only while no other candidate matches the path's
//     minimum RTT within QueueGuard): a window that a loss has just cut,
//     or bbr's ProbeRTT window, holds no message back from a path with no
//     queue (it would take the slower path).
//   - Control-only packets (ClassControl) go on the lowest-RTT candidate
//     whose window and pacer let them out.
//
// Equal RTTs go to the lower index in paths, as in lowrtt. Without
// announced sources and with the rules' conditions never met (no queue,
// ample credit), background data go as with lowrtt.
type CWRPlus struct {
	cand, order []int
	sources     []Source
	ledger      borrowLedger
	// lastPriority is the priority flag of the last Select: OnPacketSent
	// reports the class of the packet, not the stream's flag.
	lastPriority                                              bool
	copies, queueGuard, parity, queuedCopies, drain, guardOne bool
	credit                                                    creditRule
	startupGuard                                              string
	unpacedPriority                                           bool
	stagger                                                   startupStagger
	rateCap                                                   rateCap
	startupCopies                                             bool
	avoidSilent                                               bool
	repay                                                     string
	secondParity                                              string
	borrow                                                    string
	// lastBurst is when SecondRepair was last asked, burstGap the moving
	// average of the time between its requests (second_parity = budget).
	lastBurst time.Time
	burstGap  time.Duration
}

func newCWRPlus(o Options) *CWRPlus {
	s := &CWRPlus{ledger: newBorrowLedger(), copies: o.Bool(OptCopies), credit: newCreditRule(o), queueGuard: o.Bool(OptQueueGuard),
		parity: o.Bool(OptParity), queuedCopies: o.Bool(OptQueuedCopies), drain: o.Bool(OptDrain), guardOne: o.Bool(OptGuardOne),
		startupGuard: o[OptStartupGuard], unpacedPriority: o.Bool(OptUnpacedPriority),
		stagger: newStartupStagger(o), rateCap: rateCap{on: o.Bool(OptRateCap), pace: o.Bool(OptRatePace), pipe: o.Bool(OptPipeRoom), probing: o.Bool(OptRateProbe)}, startupCopies: o.Bool(OptStartupCopies),
		avoidSilent: o.Bool(OptAvoidSilent), repay: o[OptRepay]}
	s.rateCap.careful = o.Bool(OptCarefulStart)
	s.rateCap.drain = o.Bool(OptCarefulDrain)
	s.secondParity = o[OptSecondParity]
	s.borrow = o[OptBorrow]
	if s.rateCap.careful {
		s.stagger.careful = s.rateCap.carefulPath
	}
	return s
}

// Name implements PathScheduler.
func (*CWRPlus) Name() string { return "cwr-plus" }

// Announce implements SourceAware.
func (s *CWRPlus) Announce(src Source) {
	for i := range s.sources {
		if s.sources[i].ID == src.ID {
			s.sources[i] = src
			return
		}
	}
	s.sources = append(s.sources, src)
}

// Withdraw implements SourceAware.
func (s *CWRPlus) Withdraw(id uint64) {
	for i := range s.sources {
		if s.sources[i].ID == id {
			s.sources = append(s.sources[:i], s.sources[i+1:]...)
			return
		}
	}
}

// budget is how many bytes a priority packet may take beyond the window
// of p, at least one packet: with borrow = "message" the largest
// announced message's wire bytes and PacketSlack; with "round_trip" the
// wire bytes of the announced messages due within p's smoothed RTT (of
// each source SRTT/Interval + 1, one for a source without an interval or
// before p's first RTT sample), each with a packet of parity, and
// PacketSlack.
func (s *CWRPlus) budget(p *PathInfo) uint64 {
	b := uint64(p.MaxPacketSize)
	if s.borrow == BorrowMessage {
		for i := range s.sources {
			b = max(b, uint64(WireBytes(s.sources[i].Size, p))+PacketSlack)
		}
		return b
	}
	var sum uint64
	for i := range s.sources {
		src := &s.sources[i]
		n := uint64(1)
		if src.Interval > 0 && p.HasRTTSample {
			n = uint64(p.SRTT/src.Interval) + 1
		}
		sum += n * (uint64(WireBytes(src.Size, p)) + uint64(p.MaxPacketSize))
	}
	if sum == 0 {
		return b
	}
	return max(b, sum+PacketSlack)
}

// Select implements PathScheduler.
func (s *CWRPlus) Select(now time.Time, paths []PathInfo, w Work, dst []uint64) []uint64 {
	s.lastPriority = w.Priority
	s.cand = candidates(paths, s.cand)
	s.stagger.observe(now, paths, s.cand)
	s.rateCap.observe(now, paths, s.cand)
	if isPriority(w) {
		s.order = byRTT(paths, s.cand, s.order)
		if s.drain {
			byDrain(paths, s.order)
		}
		if s.avoidSilent {
			silentLast(now, paths, s.order)
		}
		copies := s.copies || s.parity && !w.Waiting.Repair || s.startupCopies && s.someInStartup(paths)
		for _, i := range s.order {
			p := &paths[i]
			if !p.Validated || !s.unpacedPriority && p.PacingBudget < uint64(w.Size) ||
				p.BytesInFlight+uint64(w.Size) > p.CWND+s.budget(p) && !s.rateCap.pipeRoom(paths, s.cand, i, w.Size) {
				continue
			}
			dst = append(dst, p.ID)
			if !copies && (!s.queuedCopies || len(dst) > 1 || !queued(p) && p.PacketsLost > 0) {
				break
			}
		}
		return dst
	}
	if w.Class == ClassControl {
		if i := pickPath(paths, s.cand, w.Size, nil, false); i >= 0 {
			dst = append(dst, paths[i].ID)
		}
		return dst
	}
	if s.credit.holds(now, paths, s.cand, s.sources, w) {
		return dst
	}
	s.rateCap.wake = time.Time{}
	best := -1
	for _, i := range s.cand {
		p := &paths[i]
		if !fitsWith(p, w.Size, s.owed(p)) {
			continue
		}
		if s.queueGuard && w.Class == ClassBackground && queued(p) && s.guarding(paths, p) && (!s.guardOne || !s.someClear(paths)) {
			continue
		}
		if s.stagger.holds(paths, s.cand, i, w) {
			continue
		}
		if s.rateCap.holds(now, p, w.Size) {
			continue
		}
		if best < 0 || p.SRTT < paths[best].SRTT {
			best = i
		}
	}
	if best >= 0 {
		dst = append(dst, paths[best].ID)
	}
	return dst
}

// owed is what background data on p leave of its window for the bytes
// priority packets borrowed beyond it (rule repay).
func (s *CWRPlus) owed(p *PathInfo) uint64 {
	switch s.repay {
	case RepayNone:
		return 0
	case RepayQueue:
		if !queued(p) {
			return 0
		}
	}
	return s.ledger.borrowed[p.ID]
}

// guarding reports whether queue_guard still holds on p (startup_guard).
func (s *CWRPlus) guarding(paths []PathInfo, p *PathInfo) bool {
	switch s.startupGuard {
	case StartupGuardPath:
		return p.InStartup()
	case StartupGuardConn:
		for _, i := range s.cand {
			if paths[i].InStartup() {
				return true
			}
		}
		return false
	}
	return true
}

// SkipsHeldBack implements HeldBackSkipper: with stagger_startup,
// rate_cap or rate_pace the retransmissions of background data held off
// a path let priority data pass.
func (s *CWRPlus) SkipsHeldBack() bool { return s.stagger.on || s.rateCap.on || s.rateCap.pace }

// KeepsIdle implements IdleKeeper: stagger_startup kept the data without
// priority off path id in the latest decision.
func (s *CWRPlus) KeepsIdle(id uint64) bool { return s.stagger.keepsIdle(id) }

// FollowsStreamWindow implements StreamWindowFollower: with rule credit,
// the receiving end's connection window should grow with its stream
// windows (transport.conn_window_follows_stream then defaults to true).
func (s *CWRPlus) FollowsStreamWindow() bool { return s.credit.on }

// OffersRepair implements RepairOfferer: option parity.
func (s *CWRPlus) OffersRepair() bool { return s.parity }

// someInStartup reports whether some candidate is in its first slow
// start (startup_copies).
func (s *CWRPlus) someInStartup(paths []PathInfo) bool {
	for _, i := range s.cand {
		if paths[i].InStartup() && !s.rateCap.startedCarefully(paths[i].ID) {
			return true
		}
	}
	return false
}

// someClear reports whether some candidate shows no queue.
func (s *CWRPlus) someClear(paths []PathInfo) bool {
	for _, i := range s.cand {
		if !queued(&paths[i]) {
			return true
		}
	}
	return false
}

// byDrain sorts order (stable) by SRTT x (1 + bytes_in_flight / cwnd):
// how long what is in flight on the path takes to drain at the rate of a
// window per round trip, plus a round trip.
func byDrain(paths []PathInfo, order []int) {
	drain := func(p *PathInfo) float64 {
		return float64(p.SRTT) * (1 + float64(p.BytesInFlight)/float64(max(p.CWND, 1)))
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && drain(&paths[order[j]]) < drain(&paths[order[j-1]]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
}

// queued reports whether p shows a standing queue: its latest RTT more
// than QueueGuard above its minimum while at least two packets are in
// flight (a lone packet's acknowledgement may be delayed by the peer's
// max_ack_delay, which is no queue).
func queued(p *PathInfo) bool {
	return p.BytesInFlight >= 2*uint64(p.MaxPacketSize) && p.HasRTTSample && p.LatestRTT > p.MinRTT+QueueGuard
}

// Repair implements Repairer (rule parity): a priority stream's parity
// goes on the lowest-RTT candidate that carried none of its data and
// whose smoothed RTT is within QueueGuard of the lowest-RTT candidate's,
// else on the lowest-RTT candidate (one path, or a faster path than the
// others: the parity still repairs a random loss, and arrives in time),
// among those whose bytes in flight are within the window and the budget
// beyond it (the message just sent may have used up the budget; its
// parity is a packet more); the bytes beyond the window are borrowed
// (OnPacketSent). Other streams get none.
func (s *CWRPlus) Repair(_ time.Time, paths []PathInfo, req RepairRequest) (uint64, bool) {
	if !s.parity || !req.Priority {
		return 0, false
	}
	s.cand = candidates(paths, s.cand)
	s.order = byRTT(paths, s.cand, s.order)
	best := -1
	for _, i := range s.order {
		p := &paths[i]
		if !p.Validated || p.BytesInFlight > p.CWND+s.budget(p) && !s.rateCap.pipeRoom(paths, s.cand, i, int(p.MaxPacketSize)) {
			continue
		}
		if best < 0 {
			best = i
		}
		if p.SRTT > paths[best].SRTT+QueueGuard {
			break // later than the lowest-RTT path by more than a queue
		}
		if !slices.Contains(req.DataPaths, p.ID) {
			return p.ID, true
		}
	}
	if best < 0 {
		return 0, false
	}
	return paths[best].ID, true
}

// SecondParityRiskLimit is the chance of losing two packets of a
// priority message and its parity above which cwr-plus's rule
// second_parity gives the message a second parity: a tenth of the 0.1 %
// of messages a p99.9 leaves.
const SecondParityRiskLimit = 1e-4

// SecondParityShare is the most of what the paths' windows carry that a
// message's two parities may take with second_parity = "budget": the
// goodput the robustness grid's goal lets cwr-plus give up beside
// lowrtt.
const SecondParityShare = 0.05

// SecondRepair implements SecondRepairer (rule second_parity): a priority
// burst of n packets (its bytes over ChunkLen) gets a second parity,
// where the candidate paths lose packets at a rate p (PacketsLost over
// PacketsSent, the highest of them: a message and its parities may take
// any of them), when (n+1)n/2 p², the chance of two losses among its
// packets and its first parity, exceeds SecondParityRiskLimit; with
// "budget" only while two packets of parity per burst, at the moving
// average of the time between bursts, are within SecondParityShare of
// the candidates' windows per smoothed RTT (none before a second burst
// gives a time between them). It goes on the path Repair names.
func (s *CWRPlus) SecondRepair(now time.Time, paths []PathInfo, req RepairRequest) (uint64, bool) {
	if s.secondParity == SecondParityOff || !s.parity || !req.Priority || req.ChunkLen == 0 {
		return 0, false
	}
	if !s.lastBurst.IsZero() && now.After(s.lastBurst) {
		gap := now.Sub(s.lastBurst)
		if s.burstGap == 0 {
			s.burstGap = gap
		} else {
			s.burstGap += (gap - s.burstGap) / 8
		}
	}
	s.lastBurst = now
	var rate, carried float64
	var pkt int
	for _, i := range candidates(paths, s.cand) {
		p := &paths[i]
		if p.PacketsSent > 0 {
			rate = max(rate, float64(p.PacketsLost)/float64(p.PacketsSent))
		}
		if p.HasRTTSample && p.SRTT > 0 {
			carried += float64(p.CWND) / p.SRTT.Seconds()
		}
		pkt = max(pkt, p.MaxPacketSize)
	}
	n := float64((req.End - req.Offset + req.ChunkLen - 1) / req.ChunkLen)
	if (n+1)*n/2*rate*rate <= SecondParityRiskLimit {
		return 0, false
	}
	if s.secondParity == SecondParityBudget && (s.burstGap <= 0 || 2*float64(pkt)/s.burstGap.Seconds() > SecondParityShare*carried) {
		return 0, false
	}
	return s.Repair(now, paths, req)
}

// OnPacketSent implements PacketObserver: a priority packet sent beyond
// the window borrows the excess.
func (s *CWRPlus) OnPacketSent(_ time.Time, info *PathInfo, pn uint64, size int, class Class) {
	if class == ClassPriority || class == ClassRetransmission && s.lastPriority {
		s.ledger.sent(info, pn, size)
	} else if class == ClassBackground || class == ClassRetransmission {
		s.rateCap.sent(info.ID, size)
	}
}

// NextWakeup implements Waker: when a packet that rule rate_pace held
// becomes due.
func (s *CWRPlus) NextWakeup(now time.Time) time.Time {
	if s.rateCap.wake.After(now) {
		return s.rateCap.wake
	}
	return time.Time{}
}

// OnPacketAcked implements PacketObserver.
func (s *CWRPlus) OnPacketAcked(_ time.Time, pathID, pn uint64) { s.ledger.settled(pathID, pn) }

// OnPacketLost implements PacketObserver.
func (s *CWRPlus) OnPacketLost(_ time.Time, pathID, pn uint64) { s.ledger.settled(pathID, pn) }

var (
	_ SourceAware     = (*CWRPlus)(nil)
	_ PacketObserver  = (*CWRPlus)(nil)
	_ Repairer        = (*CWRPlus)(nil)
	_ SecondRepairer  = (*CWRPlus)(nil)
	_ HeldBackSkipper = (*CWRPlus)(nil)
	_ RepairOfferer   = (*CWRPlus)(nil)
	_ Waker           = (*CWRPlus)(nil)

	_ StreamWindowFollower = (*CWRPlus)(nil)
)

// silentLast moves the silent paths of order (PathInfo.Silent) behind the
// others, keeping the order within each part (rule avoid_silent).
func silentLast(now time.Time, paths []PathInfo, order []int) {
	// Insertion sort, as byRTT: a handful of paths, and no allocation.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && paths[order[j-1]].Silent(now) && !paths[order[j]].Silent(now); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
}
