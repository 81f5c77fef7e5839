package trafficgen

import (
	"sort"
	"time"

	"github.com/mpq/mpq/experiment"
)

// Disruption is how much longer than its interval a periodic source's
// receiver waited at worst: the longest time between two consecutive
// deliveries of the source's messages (delivered, in any order, sorted),
// minus interval. A message that never arrived leaves a longer gap, which
// is the point. ok is false with fewer than two deliveries. The value is
// negative when deliveries never came further apart than the interval.
func Disruption(delivered []time.Time, interval time.Duration) (d time.Duration, ok bool) {
	if len(delivered) < 2 {
		return 0, false
	}
	s := append([]time.Time(nil), delivered...)
	sort.Slice(s, func(i, j int) bool { return s[i].Before(s[j]) })
	var gap time.Duration
	for i := 1; i < len(s); i++ {
		gap = max(gap, s[i].Sub(s[i-1]))
	}
	return gap - interval, true
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
