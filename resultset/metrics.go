package resultset

import (
	"fmt"
	"math"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// Metric is one headline metric of a run.
type Metric struct {
	Name  string
	Value float64
}

// Headline lists a run's headline metrics, in a fixed order: the rates
// per sending end, each source's metrics by kind, and each path's
// congestion window growth (the server's, Table I) and the server's
// share of its packets lost (LostPercent).
//
//	throughput_{server,client}[_{priority,background}]_mbps
//	goodput_{server,client}[_{priority,background}]_mbps
//	SOURCE.delivered_ratio                        all kinds but bulk
//	SOURCE.mct_{p50,p99,p999,mean}_ms             periodic
//	SOURCE.response_{p50,p99,p999,mean}_ms        kinds with replies
//	SOURCE.jitter                                 kinds with replies
//	SOURCE.completion_ratio, .completion_time_ms,
//	SOURCE.connect_to_first_ms, .connect_to_first_ack_ms  stop-and-wait
//	SOURCE.goodput_mbps                           periodic, frames, bulk
//	SOURCE.reply_goodput_mbps                     file
//	path.ID.cwnd_growth_ca_bytes_per_rtt          every path
//	path.ID.lost_percent                          every path
//	paths_failed                                  paths the client could not open
//	competitor.NAME.{goodput,throughput}_mbps     every competitor
//
// Values that do not exist in a run (no jitter with one reply) are NaN.
func Headline(s *trafficgen.Summary) []Metric {
	var out []Metric
	add := func(name string, v float64) { out = append(out, Metric{name, v}) }
	rates := func(what string, d trafficgen.Directions) {
		for _, e := range []struct {
			end string
			t   trafficgen.Throughput
		}{{"server", d.Server}, {"client", d.Client}} {
			add(fmt.Sprintf("%s_%s_mbps", what, e.end), e.t.Total)
			add(fmt.Sprintf("%s_%s_priority_mbps", what, e.end), e.t.Priority)
			add(fmt.Sprintf("%s_%s_background_mbps", what, e.end), e.t.Background)
		}
	}
	rates("throughput", s.ThroughputMbps)
	rates("goodput", s.GoodputMbps)
	nan := math.NaN()
	opt := func(p *float64) float64 {
		if p == nil {
			return nan
		}
		return *p
	}
	dist := func(name, what string, d *trafficgen.Dist) {
		if d == nil {
			d = &trafficgen.Dist{P50: trafficgen.Millis(nan), P99: trafficgen.Millis(nan), P999: trafficgen.Millis(nan), Mean: trafficgen.Millis(nan)}
		}
		add(name+"."+what+"_p50_ms", float64(d.P50))
		add(name+"."+what+"_p99_ms", float64(d.P99))
		add(name+"."+what+"_p999_ms", float64(d.P999))
		add(name+"."+what+"_mean_ms", float64(d.Mean))
	}
	for _, src := range s.Sources {
		n := src.Name
		if src.Kind != experiment.KindBulk {
			add(n+".delivered_ratio", opt(src.DeliveredRatio))
		}
		switch src.Kind {
		case experiment.KindPeriodic:
			dist(n, "mct", src.MCTMS)
			add(n+".goodput_mbps", src.GoodputMbps)
		case experiment.KindRequestResponse, experiment.KindFrames, experiment.KindFile, experiment.KindStopAndWait:
			dist(n, "response", src.ResponseMS)
			add(n+".jitter", opt(src.Jitter))
			switch src.Kind {
			case experiment.KindFrames:
				add(n+".goodput_mbps", src.GoodputMbps)
			case experiment.KindFile:
				add(n+".reply_goodput_mbps", opt(src.ReplyGoodputMbps))
			case experiment.KindStopAndWait:
				add(n+".completion_ratio", opt(src.CompletionRatio))
				add(n+".completion_time_ms", optMillis(src.CompletionTimeMS))
				add(n+".connect_to_first_ms", opt(src.ConnectToFirstMS))
				add(n+".connect_to_first_ack_ms", optMillis(src.ConnectToFirstAckMS))
			}
		case experiment.KindBulk:
			add(n+".goodput_mbps", src.GoodputMbps)
		}
	}
	for _, p := range s.Paths {
		g := nan
		if p.Server != nil {
			g = opt(p.Server.CwndGrowthCA)
		}
		add(fmt.Sprintf("path.%d.cwnd_growth_ca_bytes_per_rtt", p.ID), g)
		add(fmt.Sprintf("path.%d.lost_percent", p.ID), LostPercent(p.Server))
	}
	add("paths_failed", float64(len(s.PathsFailed)))
	for _, c := range s.Competitors {
		add("competitor."+c.Name+".goodput_mbps", c.GoodputMbps)
		add("competitor."+c.Name+".throughput_mbps", c.ThroughputMbps)
	}
	return out
}

// LostPercent is an end's packets lost over its packets sent on a path,
// up to the end of the window, in percent (NaN without the end's
// statistics or packets sent). mpq counts the packets its loss detection declared lost; the
// kernel's transports count the segments retransmitted
// (tcpi_total_retrans, spurious retransmissions included), so over TCP
// it is the retransmission rate.
func LostPercent(e *trafficgen.PathEnd) float64 {
	if e == nil || e.PacketsSent == 0 {
		return math.NaN()
	}
	return 100 * float64(e.PacketsLost) / float64(e.PacketsSent)
}

// pooledColumn is the messages.csv column whose times are pooled for a
// kind: the headline time of its messages (empty for bulk).
func pooledColumn(kind string) string {
	switch {
	case kind == experiment.KindBulk:
		return ""
	case trafficgen.HasReply(kind):
		return "response_ms"
	}
	return "mct_ms"
}

// optMillis is *m, NaN when absent.
func optMillis(m *trafficgen.Millis) float64 {
	if m == nil {
		return math.NaN()
	}
	return float64(*m)
}
