package trafficgen

import (
	"math"
	"time"

	"github.com/mpq/mpq/experiment"
)

// CompetitorSummary is what summary.json says of a competitor
// ([[competitor]]): its name, path (index in the [[path]] list) and
// congestion controller, and over the time it was active in the
// measurement window (ActiveS: from its start to its stop or the end of
// the window) the rates of its bulk data: GoodputMbps, the bytes its
// client's application read, and ThroughputMbps, the stream bytes its
// server sent (retransmissions included), times 8 / ActiveS.
type CompetitorSummary struct {
	Name           string  `json:"name"`
	Path           int     `json:"path"`
	Congestion     string  `json:"congestion"`
	ActiveS        float64 `json:"active_s"`
	GoodputMbps    float64 `json:"goodput_mbps"`
	ThroughputMbps float64 `json:"throughput_mbps"`
	// StartOffsetMS (netns runs) is how much later than the experiment's
	// connection's time zero the competitor's own was taken: its start
	// and stop count from its own.
	StartOffsetMS *float64 `json:"start_offset_ms,omitempty"`
	Problems      []string `json:"problems,omitempty"`
}

// SenderBytes are the stream bytes an end sent in the measurement window
// (every path, both classes) and the bytes of what it sent that the
// other end's application read in the window.
func (r *Recorder) SenderBytes(sender string) (sent, delivered uint64) {
	for _, b := range r.sentWin[sender] {
		sent += b[0] + b[1]
	}
	if b := r.gotWin[sender]; b != nil {
		delivered = b[0] + b[1]
	}
	return sent, delivered
}

// SummariseCompetitor is the summary of competitor c of an experiment of
// duration d whose connection rec recorded (after Finish).
func SummariseCompetitor(c experiment.Competitor, d time.Duration, rec *Recorder) CompetitorSummary {
	active := c.Active(d)
	s := CompetitorSummary{Name: c.Name, Path: c.Path, Congestion: c.Congestion, ActiveS: active.Seconds(), Problems: rec.Problems()}
	sent, got := rec.SenderBytes("server")
	mbps := func(b uint64) float64 {
		if active <= 0 {
			return 0
		}
		return math.Round(float64(b)*8/active.Seconds()/1e3) / 1e3
	}
	s.GoodputMbps, s.ThroughputMbps = mbps(got), mbps(sent)
	return s
}
