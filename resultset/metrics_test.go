package resultset

import (
	"math"
	"testing"

	"github.com/mpq/mpq/trafficgen"
)

// TestHeadlineLostPercent: each path's lost_percent is the server's
// packets lost over its packets sent, in percent; NaN when the server
// has no statistics of the path or sent nothing on it.
func TestHeadlineLostPercent(t *testing.T) {
	s := &trafficgen.Summary{Paths: []trafficgen.PathSummary{
		{ID: 0, Server: &trafficgen.PathEnd{PacketsSent: 4000, PacketsLost: 6}, Client: &trafficgen.PathEnd{PacketsSent: 10, PacketsLost: 5}},
		{ID: 1},
		{ID: 2, Server: &trafficgen.PathEnd{}},
	}}
	got := map[string]float64{}
	for _, m := range Headline(s) {
		got[m.Name] = m.Value
	}
	if v, ok := got["path.0.lost_percent"]; !ok || v != 0.15 {
		t.Errorf("path.0.lost_percent = %v (present %v), want 100 × 6/4000 = 0.15", v, ok)
	}
	for _, name := range []string{"path.1.lost_percent", "path.2.lost_percent"} {
		if v, ok := got[name]; !ok || !math.IsNaN(v) {
			t.Errorf("%s = %v (present %v), want NaN", name, v, ok)
		}
	}
}
