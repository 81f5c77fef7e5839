package plots

import (
	"math"
	"strings"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// Options select what a figure shows.
type Options struct {
	// Source names the source whose messages a figure shows; "" chooses
	// the first priority source with messages (else the first with
	// messages).
	Source string
	// Title is drawn above the figure; papers set it in the caption, so
	// the default is none.
	Title string
	// From and To bound the time window in milliseconds of the cwnd and
	// timeline figures; NaN for the default.
	From, To float64
	// Vantage is the connection end whose paths the cwnd figure shows;
	// "" for the source's sender.
	Vantage string
	// Metrics are the columns of the metrics table (MetricsTable).
	Metrics []string
	// Columns is the varied key whose values the metrics table and the
	// robustness summary set side by side as columns (MetricsTable,
	// RobustnessSummaryTable); "" for none.
	Columns string
	// By are the varied keys whose values split the robustness summary's
	// lines (RobustnessSummaryTable); none for a line per scheduler.
	By []string
}

// DefaultOptions has no window.
func DefaultOptions() Options { return Options{From: math.NaN(), To: math.NaN()} }

// source finds the source of the options in a run's summary: named, or
// the first priority source with messages, or the first with messages.
func (o Options) source(s *trafficgen.Summary) (*trafficgen.SourceSummary, error) {
	var names []string
	var first, firstPrio *trafficgen.SourceSummary
	for i := range s.Sources {
		src := &s.Sources[i]
		if src.Kind == experiment.KindBulk {
			continue
		}
		names = append(names, src.Name)
		if o.Source == src.Name {
			return src, nil
		}
		if first == nil {
			first = src
		}
		if firstPrio == nil && src.Priority {
			firstPrio = src
		}
	}
	switch {
	case o.Source != "":
		if len(names) == 0 {
			return nil, inputErr("--source %s: the runs of %s have no source with messages", o.Source, s.Name)
		}
		return nil, inputErr("--source %s: no such source with messages in %s (it has %s)", o.Source, s.Name, strings.Join(names, ", "))
	case firstPrio != nil:
		return firstPrio, nil
	case first != nil:
		return first, nil
	}
	return nil, inputErr("%s has no source with messages (only bulk data)", s.Name)
}

// pointSource is the chosen source in a point (its first run).
func (o Options) pointSource(p *Point) (*trafficgen.SourceSummary, error) {
	return o.source(p.Runs[0].Summary)
}

// timeOf is the time a source's distributions count: the response time
// for kinds with replies, else the message completion time.
func timeOf(kind string, m Message) float64 {
	if trafficgen.HasReply(kind) {
		return m.Response
	}
	return m.MCT
}
