package scheduler

import (
	"math"
	"testing"
	"time"
)

// TestStaggerKeepsIdle: keepsIdle answers for the latest decision only.
// Both paths in their first slow start: a decision for data without
// priority holds path 1 (path 0 is in its start-up before it), so path 1
// is kept idle; the next decision, for priority data, holds nothing, and
// path 1 is no longer reported idle although path 0 still starts up;
// the decision after that, for data without priority again, reports it.
func TestStaggerKeepsIdle(t *testing.T) {
	g := newStartupStagger(Options{OptStaggerStartup: "true"})
	startup := PathInfo{SSThresh: math.MaxUint64, CWND: 100000, SRTT: 50 * time.Millisecond, HasRTTSample: true}
	p0, p1 := startup, startup
	p0.ID, p1.ID = 0, 1
	paths := []PathInfo{p0, p1}
	cand := []int{0, 1}
	now := time.Unix(1000, 0)
	bulk := Work{Class: ClassBackground}
	prio := Work{Class: ClassPriority, Priority: true}
	steps := []struct {
		w    Work
		want bool
	}{{bulk, true}, {prio, false}, {bulk, true}}
	for i, st := range steps {
		now = now.Add(time.Millisecond)
		g.observe(now, paths, cand)
		g.filter(paths, cand, st.w)
		if got := g.keepsIdle(1); got != st.want {
			t.Errorf("decision %d (priority %v): path 1 kept idle %v, want %v", i, st.w.Priority, got, st.want)
		}
		if g.keepsIdle(0) {
			t.Errorf("decision %d: path 0 reported idle", i)
		}
	}
}
