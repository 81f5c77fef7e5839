package trafficgen

import (
	"math"

	"github.com/mpq/mpq/experiment"
)

// LinkChangeSummary is one scheduled link change of the run
// ([[path.change]]) as summary.json lists it: the path (its index in the
// experiment's [[path]] list), the time in seconds after the start, the
// direction ("up", "down" or "both") and the values it set; a value it
// left alone is absent.
type LinkChangeSummary struct {
	Path       int      `json:"path"`
	AtS        float64  `json:"at_s"`
	Direction  string   `json:"direction"`
	RateMbps   *float64 `json:"rate_mbps,omitempty"`
	DelayMS    *float64 `json:"delay_ms,omitempty"`
	Loss       *float64 `json:"loss,omitempty"`
	JitterMS   *float64 `json:"jitter_ms,omitempty"`
	QueueBytes *int64   `json:"queue_bytes,omitempty"`
	QueueBDP   *float64 `json:"queue_bdp,omitempty"`
	Down       *bool    `json:"down,omitempty"`
}

// LinkChanges lists the run's scheduled link changes, path by path in
// the order of their times (nil without any).
func LinkChanges(e *experiment.Experiment) []LinkChangeSummary {
	var out []LinkChangeSummary
	round := func(v float64) *float64 { v = math.Round(v*1e6) / 1e6; return &v }
	for i, p := range e.Paths {
		for _, c := range p.Changes {
			s := LinkChangeSummary{Path: i, AtS: c.At.Seconds(), Direction: c.Direction,
				QueueBytes: c.QueueBytes, QueueBDP: c.QueueBDP, Loss: c.Loss, Down: c.Down}
			if s.Direction == "" {
				s.Direction = "both"
			}
			if c.Rate != nil {
				s.RateMbps = round(*c.Rate / 1e6)
			}
			if c.Delay != nil {
				s.DelayMS = round(float64(*c.Delay) / 1e6)
			}
			if c.Jitter != nil {
				s.JitterMS = round(float64(*c.Jitter) / 1e6)
			}
			out = append(out, s)
		}
	}
	return out
}
