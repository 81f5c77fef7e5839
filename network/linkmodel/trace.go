package linkmodel

import (
	"errors"
	"sort"
	"time"

	"github.com/mpq/mpq/experiment"
)

// Trace is the transmitter of a trace-driven link (mahimahi's model): at
// each delivery opportunity of the trace up to Bytes bytes may leave; a
// packet leaves at the opportunity that carries its last byte, and what
// an opportunity does not use goes to the packet behind it if one is
// waiting, else it is lost. The opportunities repeat with the period,
// before the link's origin as after it.
type Trace struct {
	// At are the opportunities' times within a period in nanoseconds,
	// non-decreasing; Period is positive.
	At     []int64
	Period int64
	Bytes  int
}

// NewTrace converts an experiment's trace.
func NewTrace(t *experiment.Trace) (*Trace, error) {
	if t == nil || len(t.MS) == 0 || t.MS[len(t.MS)-1] <= 0 {
		return nil, errors.New("empty trace")
	}
	out := &Trace{At: make([]int64, len(t.MS)), Period: int64(t.Period()), Bytes: experiment.TracePacket}
	for i, ms := range t.MS {
		out.At[i] = ms * int64(time.Millisecond)
		if i > 0 && out.At[i] < out.At[i-1] {
			return nil, errors.New("trace times out of order")
		}
	}
	return out, nil
}

// time is the time of opportunity g (numbered from 0 at the first of the
// period starting at the origin; negative before it), relative to the
// origin.
func (t *Trace) time(g int64) int64 {
	n := int64(len(t.At))
	k, j := floorDiv(g, n)
	return k*t.Period + t.At[j]
}

// first is the number of the first opportunity at or after rel (relative
// to the origin).
func (t *Trace) first(rel int64) int64 {
	n := int64(len(t.At))
	k, r := floorDiv(rel, t.Period)
	j := int64(sort.Search(len(t.At), func(i int) bool { return t.At[i] >= r }))
	if j == n {
		k, j = k+1, 0
	}
	return k*n + j
}

// floorDiv is a/b rounded down and the remainder in [0, b).
func floorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}

// traceDone is when a packet of size bytes that the transmitter can start
// at start leaves a trace-driven link, consuming opportunities (and the
// leftover of the last one used).
func (l *Link) traceDone(start int64, size int) int64 {
	tr := l.cfg.Trace
	origin := l.origin
	if !l.originSet {
		origin = 0
	}
	if start != l.busyUntil {
		l.credit = 0 // an idle link's leftover is lost
	}
	need := size
	done := start
	if l.credit > 0 && need > 0 {
		u := min(l.credit, need)
		l.credit -= u
		need -= u
	}
	if need > 0 && (!l.oppSet || origin+tr.time(l.nextOpp) < start) {
		l.nextOpp, l.oppSet = tr.first(start-origin), true
	}
	for need > 0 {
		done = origin + tr.time(l.nextOpp)
		l.nextOpp++
		u := min(tr.Bytes, need)
		need -= u
		l.credit = tr.Bytes - u
	}
	return done
}
