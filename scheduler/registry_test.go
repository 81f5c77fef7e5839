package scheduler

import (
	"slices"
	"testing"
)

// TestRegistryPaper checks that the paper's schedulers and the baselines
// are selectable by name and implement the optional interfaces the core
// looks for.
func TestRegistryPaper(t *testing.T) {
	tests := []struct {
		name                            string
		sourceAware, observer, counters bool
	}{
		{"lowrtt", false, false, false},
		{"round-robin", false, false, false},
		{"cwr", true, false, true},
		{"cwr-red", true, true, true},
		{"sr", false, true, false},
		{"redundant", false, false, false},
		{"ecf", false, false, false},
		{"blest", false, false, false},
		{"cwr-plus", true, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewPathScheduler(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name() != tc.name {
				t.Fatalf("Name() = %q", s.Name())
			}
			if _, ok := s.(SourceAware); ok != tc.sourceAware {
				t.Errorf("SourceAware: %v", ok)
			}
			if _, ok := s.(PacketObserver); ok != tc.observer {
				t.Errorf("PacketObserver: %v", ok)
			}
			if c, ok := s.(Counters); ok != tc.counters {
				t.Errorf("Counters: %v", ok)
			} else if ok {
				if v, found := c.PathCounters(0)[CounterReservationsMissed]; !found || v != 0 {
					t.Errorf("fresh counters: %v", c.PathCounters(0))
				}
			}
			// Each call builds an independent scheduler.
			if s2, _ := NewPathScheduler(tc.name); s2 == s {
				t.Error("factory returned a shared instance")
			}
		})
	}
	for _, n := range []string{"priority-fifo", "round-robin"} {
		if !slices.Contains(StreamSchedulers(), n) {
			t.Errorf("stream scheduler %q not registered", n)
		}
	}
}
