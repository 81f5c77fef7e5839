package trafficgen

import (
	"sort"
	"time"

	"github.com/mpq/mpq/experiment"
)

// Disruption is how much longer than its interval a periodic source's
// receiver waited at worst: the longest time between two consecutive
// deliveries of the source's messages (delivered, in any order, sorted),
// minus interval, in ms. A message that never arrived leaves a longer
// gap, which is the point. When messages created after the last delivery
// never arrived (lost holds the creation times of the messages never
// delivered), the receiver was still waiting when the run ended: that
// wait, from the last delivery (or from the first message's creation
// when none arrived) to end, counts as a gap too, so an outage that
// outlasted the run is not read as none (its value is then a lower
// bound). ok is false with fewer than two deliveries and no such wait.
// The value is negative when deliveries never came further apart than
// the interval.
func Disruption(delivered, lost []time.Time, end time.Time, interval time.Duration) (d Millis, ok bool) {
	var last time.Time
	for _, t := range delivered {
		if t.After(last) {
			last = t
		}
	}
	// The wait still on at the end: from the last delivery, or from the
	// first message when none arrived.
	var gap time.Duration
	var from time.Time
	for _, c := range lost {
		switch {
		case len(delivered) > 0 && c.After(last):
			from, ok = last, true
		case len(delivered) == 0 && (!ok || c.Before(from)):
			from, ok = c, true
		}
	}
	if ok {
		gap = end.Sub(from)
	}
	if len(delivered) >= 2 {
		s := append([]time.Time(nil), delivered...)
		sort.Slice(s, func(i, j int) bool { return s[i].Before(s[j]) })
		for i := 1; i < len(s); i++ {
			gap = max(gap, s[i].Sub(s[i-1]))
		}
		ok = true
	}
	if !ok {
		return 0, false
	}
	return Millis(ms(gap - interval)), true
}

// LateSince counts the messages created at or after from whose MCT
// exceeds limit; a message not delivered counts (its MCT is +Inf).
func LateSince(msgs []*MessageRecord, from time.Time, limit time.Duration) int {
	n := 0
	for _, m := range msgs {
		if m == nil || m.Created.Before(from) {
			continue
		}
		if d, ok := m.MCT(); !ok || d > limit {
			n++
		}
	}
	return n
}

// FirstChange returns the time of the experiment's first scheduled link
// change ([[path.change]] of any path) and the largest round-trip
// propagation delay of its paths at the start; ok is false without
// changes.
func FirstChange(e *experiment.Experiment) (at, rtt time.Duration, ok bool) {
	for _, p := range e.Paths {
		rtt = max(rtt, p.RTT())
		for _, c := range p.Changes {
			if !ok || c.At < at {
				at, ok = c.At, true
			}
		}
	}
	return at, rtt, ok
}
