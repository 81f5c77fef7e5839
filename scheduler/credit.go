package scheduler

import (
	"strconv"
	"time"
)

// OptCreditRTTs names the option credit_rtts of cwr-plus, cwr and cwr-red;
// its Doc in creditRTTsOption says what it does.
const OptCreditRTTs = "credit_rtts"

// creditRTTsOption is the option credit_rtts with its default.
func creditRTTsOption() Option {
	return Option{Name: OptCreditRTTs, Choices: []string{"1", "2", "3", "4"}, Default: "1",
		Doc: "with credit: the announced messages due within this many of the paths' largest smoothed RTT keep their flow-control credit; when a loss blocks the peer's in-order reading, its MAX_DATA comes back only after the retransmission, about two round trips later (ours)"}
}

// creditRule is option credit with its credit_rtts, as cwr-plus, cwr and
// cwr-red apply it.
type creditRule struct {
	on   bool
	rtts int
}

// newCreditRule reads credit and credit_rtts (1 when absent) from o.
func newCreditRule(o Options) creditRule {
	c := creditRule{on: o.Bool(OptCredit), rtts: 1}
	if n, err := strconv.Atoi(o[OptCreditRTTs]); err == nil && n > 0 {
		c.rtts = n
	}
	return c
}

// holds reports whether the rule keeps the new background data of w back
// now (creditShort).
func (c creditRule) holds(now time.Time, paths []PathInfo, cand []int, sources []Source, w Work) bool {
	return c.on && w.Class == ClassBackground && creditShort(now, paths, cand, sources, w, c.rtts)
}

// creditShort is the rule of option credit (cwr-plus; cwr and cwr-red as
// an option of ours): it reports whether a background packet would leave
// less of the connection's flow-control credit (Work.Waiting.SendWindow)
// than the announced messages due within the largest smoothed RTT of the
// candidates need (rtts of them, option credit_rtts), while some
// candidate has bytes in flight (so that an
// acknowledgement, and the peer's MAX_DATA, can come). In slow start the
// bulk data would otherwise use up the peer's MAX_DATA and a message wait
// for the next.
func creditShort(now time.Time, paths []PathInfo, cand []int, sources []Source, w Work, rtts int) bool {
	if len(sources) == 0 {
		return false
	}
	var srtt time.Duration
	busy := false
	for _, i := range cand {
		srtt = max(srtt, paths[i].SRTT)
		busy = busy || paths[i].BytesInFlight > 0
	}
	if !busy {
		return false
	}
	var need uint64
	for k := range sources {
		src := &sources[k]
		src.Due(now, now.Add(time.Duration(rtts)*srtt), func(time.Time) { need += uint64(src.Size) })
	}
	return need > 0 && w.Waiting.SendWindow < need+uint64(w.Size)
}
