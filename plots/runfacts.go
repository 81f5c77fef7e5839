package plots

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/trafficgen"
)

// Facts of a run that a metrics table can ask for besides the headline
// metrics of runs.csv (resultset.Headline), read from the run's
// summary.json and emulator.json:
//
//   - transport.connections, transport.max_connections and
//     transport.connections_per_1000: summary.json's transport section
//     (the connections the server accepted that carried the run's
//     messages, the most the client had open at once, and connections
//     per 1000 of its messages); NaN where the run has none (the
//     simulator's runs);
//   - emulator.late_max_ms: the most the emulator (the namespace
//     forwarder or the loopback emulator) delivered a packet after its
//     schedule, the largest over every path and direction, in ms;
//     emulator.dropped_loss: the packets it dropped by the links' loss,
//     both directions of every path; NaN without an emulator.json;
//   - per source S but bulk: S.failed, its messages that failed
//     (summary.json's failed), S.disruption_ms and S.late_after_change
//     (summary.json's fields of those names; NaN where the source has
//     none);
//   - per path ID and end E (server, client): path.ID.E.failed_after_ms,
//     the time from the path's first scheduled change that takes it down
//     (a [[path.change]] with down = true, either direction) to E's first
//     failed event of the path at or after it, and
//     path.ID.E.recovered_after_ms, from the path's first change with
//     down = false after that one to E's first recovered event at or
//     after it, both in ms, NaN without such a change or event (the path
//     ID is the path's index in [[path]], as the simulator and mpq run
//     open them in order); path.ID.E.bytes_sent_mbps, E's bytes_sent of
//     the path (mpq: the UDP payload of its datagrams from the
//     connection's start to the end of the window) × 8 / duration_s, in
//     Mbit/s, NaN without E's statistics of the path.
//
// and, read from the run's other files only when a table asks for them
// (fileFacts):
//
//   - path.ID.E.sent_percent_from_X (X a duration: 17s, 500ms): of the
//     stream bytes E sent on every path in the bins of throughput.csv
//     that start at or after X and before the end of the window, the
//     share path ID carried, in percent; NaN when E sent none then;
//   - path.ID.E.cwnd_mean_kb_from_X: end E's congestion window of path
//     ID in paths.csv averaged over time from X to the end of the window
//     (each sample holding until the next; the kernel's from tcp_info),
//     in kB; NaN without samples then;
//   - path.ID.trace_down_capacity_mbps and path.ID.trace_up_capacity_mbps:
//     the delivery opportunities of the direction's trace (trace_down:
//     server to client) at times in [0, duration) of the run (the trace
//     repeating with its period, from the experiment's time zero), ×
//     1500 bytes × 8, over the duration, in Mbit/s (what the link could
//     carry in the window); NaN where the direction has no trace.
var factNames = []string{
	"transport.connections", "transport.max_connections", "transport.connections_per_1000",
	"emulator.late_max_ms", "emulator.dropped_loss",
}

// metrics are the run's headline metrics followed by its facts.
func (r *Run) metrics() []resultset.Metric {
	if r.facts == nil {
		r.facts = r.readFacts()
	}
	return append(resultset.Headline(r.Summary), r.facts...)
}

// readFacts reads the run's facts of summary.json and emulator.json (not
// the fileFacts); a fact it cannot read is NaN: a table shows the runs
// that have it.
func (r *Run) readFacts() []resultset.Metric {
	nan := math.NaN()
	orNaN := func(v float64) float64 {
		if v == 0 {
			return nan
		}
		return v
	}
	t := r.Summary.Transport
	late, dropped, err := emulatorFacts(filepath.Join(r.Dir, "emulator.json"))
	if err != nil {
		late, dropped = nan, nan
	}
	facts := []resultset.Metric{
		{Name: "transport.connections", Value: orNaN(float64(t.Connections))},
		{Name: "transport.max_connections", Value: orNaN(float64(t.MaxConnections))},
		{Name: "transport.connections_per_1000", Value: orNaN(t.ConnectionsPer1000)},
		{Name: "emulator.late_max_ms", Value: late},
		{Name: "emulator.dropped_loss", Value: dropped},
	}
	return append(facts, summaryFacts(r.Summary)...)
}

// summaryFacts are the facts of a run's sources and paths in its
// summary.json (see factNames' comment).
func summaryFacts(s *trafficgen.Summary) []resultset.Metric {
	nan := math.NaN()
	var out []resultset.Metric
	add := func(name string, v float64) { out = append(out, resultset.Metric{Name: name, Value: v}) }
	for _, src := range s.Sources {
		if src.Kind == experiment.KindBulk {
			continue
		}
		add(src.Name+".failed", float64(src.Failed))
		d := nan
		if src.DisruptionMS != nil {
			d = float64(*src.DisruptionMS)
		}
		add(src.Name+".disruption_ms", d)
		l := nan
		if src.LateAfterChange != nil {
			l = float64(*src.LateAfterChange)
		}
		add(src.Name+".late_after_change", l)
	}
	for _, p := range s.Paths {
		down, up := downAndUp(s.LinkChanges, int(p.ID))
		for _, end := range []struct {
			name string
			e    *trafficgen.PathEnd
		}{{"server", p.Server}, {"client", p.Client}} {
			prefix := fmt.Sprintf("path.%d.%s.", p.ID, end.name)
			add(prefix+"failed_after_ms", eventAfter(p.Events[end.name], "failed", down))
			add(prefix+"recovered_after_ms", eventAfter(p.Events[end.name], "recovered", up))
			rate := nan
			if end.e != nil && s.DurationS > 0 {
				rate = float64(end.e.BytesSent) * 8 / s.DurationS / 1e6
			}
			add(prefix+"bytes_sent_mbps", rate)
		}
	}
	return out
}

// downAndUp are the times in seconds of path index's first scheduled
// change that takes it down and of the first after it that brings it
// back (NaN for none).
func downAndUp(changes []trafficgen.LinkChangeSummary, index int) (down, up float64) {
	down, up = math.NaN(), math.NaN()
	for _, c := range changes {
		if c.Path != index || c.Down == nil {
			continue
		}
		switch {
		case *c.Down && math.IsNaN(down):
			down = c.AtS
		case !*c.Down && !math.IsNaN(down) && math.IsNaN(up) && c.AtS >= down:
			up = c.AtS
		}
	}
	return down, up
}

// eventAfter is the time in ms from at (seconds) to the first event of
// the kind at or after it; NaN without one (or without at).
func eventAfter(events []trafficgen.PathEventSummary, kind string, at float64) float64 {
	if math.IsNaN(at) {
		return math.NaN()
	}
	for _, ev := range events {
		if ev.Event == kind && ev.TimeS >= at {
			return 1000 * (ev.TimeS - at)
		}
	}
	return math.NaN()
}

// emulatorFacts are the largest late_max_ms and the sum of dropped_loss
// over the paths (not the shared bottlenecks, whose packets the paths
// also count) and directions of an emulator.json (linkemu.WriteStats).
func emulatorFacts(name string) (lateMax, droppedLoss float64, err error) {
	b, err := os.ReadFile(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return math.NaN(), math.NaN(), nil
		}
		return 0, 0, err
	}
	type link struct {
		DroppedLoss uint64  `json:"dropped_loss"`
		LateMaxMS   float64 `json:"late_max_ms"`
	}
	var paths []struct {
		Path     *int `json:"path"`
		Up, Down link
	}
	if err := json.Unmarshal(b, &paths); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	for _, p := range paths {
		if p.Path == nil {
			continue
		}
		for _, l := range []link{p.Up, p.Down} {
			lateMax = max(lateMax, l.LateMaxMS)
			droppedLoss += float64(l.DroppedLoss)
		}
	}
	return lateMax, droppedLoss, nil
}

// durationPattern is a time in a metric's name: 5s, 17.5s, 500ms.
const durationPattern = `[0-9]+(?:\.[0-9]+)?(?:ms|s)`

// fileFacts are the facts read from a run's files besides summary.json,
// only for a table that asks for them (see factNames' comment): a
// pattern of their names and how to read one.
var fileFacts = []struct {
	name *regexp.Regexp
	read func(r *Run, m []string) (float64, error)
}{
	{regexp.MustCompile(`^path\.([0-9]+)\.(server|client)\.sent_percent_from_(` + durationPattern + `)$`), sentPercentFrom},
	{regexp.MustCompile(`^path\.([0-9]+)\.trace_(down|up)_capacity_mbps$`), traceCapacity},
	{regexp.MustCompile(`^path\.([0-9]+)\.(server|client)\.cwnd_mean_kb_from_(` + durationPattern + `)$`), cwndMeanFrom},
}

// isFileFact says whether name is the name of a fileFact.
func isFileFact(name string) bool {
	for _, f := range fileFacts {
		if f.name.MatchString(name) {
			return true
		}
	}
	return false
}

// fileFact is the fact name of the run if it is a fileFact (ok), read
// once.
func (r *Run) fileFact(name string) (v float64, ok bool, err error) {
	if v, ok := r.fileFactValues[name]; ok {
		return v, true, nil
	}
	for _, f := range fileFacts {
		m := f.name.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		v, err := f.read(r, m)
		if err != nil {
			return 0, true, err
		}
		if r.fileFactValues == nil {
			r.fileFactValues = map[string]float64{}
		}
		r.fileFactValues[name] = v
		return v, true, nil
	}
	return 0, false, nil
}

// msOf is a duration of a metric's name (durationPattern) in ms.
func msOf(s string) float64 {
	d, err := time.ParseDuration(s)
	if err != nil { // the patterns admit only what ParseDuration reads
		panic(err)
	}
	return float64(d) / float64(time.Millisecond)
}

// sentPercentFrom is path.ID.E.sent_percent_from_X: from throughput.csv,
// path ID's share of the stream bytes end E sent in the bins from X to
// the end of the window, in percent.
func sentPercentFrom(r *Run, m []string) (float64, error) {
	id, _ := strconv.ParseInt(m[1], 10, 64)
	from, end := msOf(m[3]), 1000*r.Summary.DurationS
	rows, err := r.Throughput()
	if err != nil {
		return 0, err
	}
	var path, all float64
	for _, row := range rows {
		if row.What != "sent" || row.Sender != m[2] || row.Time < from || row.Time >= end {
			continue
		}
		if math.IsNaN(row.Bytes) {
			return 0, inputErr("%s: throughput.csv has no bytes column", r.Dir)
		}
		all += row.Bytes
		if row.PathID == id {
			path += row.Bytes
		}
	}
	if all == 0 {
		return math.NaN(), nil
	}
	return 100 * path / all, nil
}

// cwndMeanFrom is path.ID.E.cwnd_mean_kb_from_X: from paths.csv, end
// E's congestion window of path ID averaged over time from X to the end
// of the window (each sample holding until the next), in kB (1000
// bytes); NaN without a sample at or before the window's end.
func cwndMeanFrom(r *Run, m []string) (float64, error) {
	id, _ := strconv.ParseUint(m[1], 10, 64)
	from, end := msOf(m[3]), 1000*r.Summary.DurationS
	states, err := r.PathStates()
	if err != nil {
		return 0, err
	}
	var ss []PathState
	for _, s := range states {
		if s.PathID == id && s.Vantage == m[2] && s.Time < end {
			ss = append(ss, s)
		}
	}
	var sum, span float64
	for i, s := range ss {
		next := end
		if i+1 < len(ss) {
			next = ss[i+1].Time
		}
		if lo := max(s.Time, from); next > lo {
			sum += s.Cwnd * (next - lo)
			span += next - lo
		}
	}
	if span == 0 {
		return math.NaN(), nil
	}
	return sum / span / 1e3, nil
}

// traceCapacity is path.ID.trace_D_capacity_mbps: what the trace of the
// direction D of path ID could carry in [0, duration), in Mbit/s.
func traceCapacity(r *Run, m []string) (float64, error) {
	e, err := r.Config()
	if err != nil {
		return 0, err
	}
	id, _ := strconv.Atoi(m[1])
	if id >= len(e.Paths) {
		return 0, inputErr("--metric %s: %s has %d paths", m[0], r.Dir, len(e.Paths))
	}
	tr := e.Paths[id].Down.Trace
	if m[2] == "up" {
		tr = e.Paths[id].Up.Trace
	}
	if tr == nil || e.Duration <= 0 {
		return math.NaN(), nil
	}
	return float64(traceOpportunities(tr, e.Duration)) * experiment.TracePacket * 8 / e.Duration.Seconds() / 1e6, nil
}

// traceOpportunities counts a trace's delivery opportunities at times in
// [0, d), the trace repeating with its period before and after time 0
// as the links replay it (network/linkmodel): the last line of the
// period before time 0 falls at 0.
func traceOpportunities(tr *experiment.Trace, d time.Duration) int {
	period := int64(tr.Period())
	n := 0
	for k := int64(-1); k*period < int64(d); k++ {
		for _, ms := range tr.MS {
			if at := k*period + ms*int64(time.Millisecond); at >= 0 && at < int64(d) {
				n++
			}
		}
	}
	return n
}
