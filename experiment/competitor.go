package experiment

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mpq/mpq/internal/names"
	"github.com/mpq/mpq/mpquic/congestion"
)

// Competitor is a [[competitor]]: an independent single-path connection
// that carries bulk data from the server to the client over path Path
// from Start to Stop, beside the experiment's connection, with congestion
// controller Congestion.
type Competitor struct {
	Name       string
	Path       int
	Congestion string
	// Start and Stop bound its bulk data (Stop: the end of the
	// experiment).
	Start, Stop time.Duration
}

// Active is how long the competitor sends within the measurement window.
func (c Competitor) Active(duration time.Duration) time.Duration {
	stop := c.Stop
	if stop == 0 || stop > duration {
		stop = duration
	}
	return max(0, stop-c.Start)
}

// CheckCongestion returns the problem with a congestion controller's name
// ("" if it is one): transport.congestion and the competitors' congestion
// accept the same names.
func CheckCongestion(s string) string {
	return names.Check("congestion controller", s, congestion.Names())
}

// convertCompetitor reads one [[competitor]].
func convertCompetitor(t *table, i int, e *Experiment) Competitor {
	c := Competitor{Name: t.str("name", "competitor"+strconv.Itoa(i))}
	if _, ok := t.m["path"]; !ok {
		t.fail("path", "missing: the index of the [[path]] the competitor runs over")
	}
	c.Path = int(t.integer("path", 0, 0, int64(max(len(e.Paths)-1, 0))))
	c.Congestion = t.name("congestion", "newreno", CheckCongestion)
	c.Start = t.duration("start", 0)
	c.Stop = t.duration("stop", 0)
	switch {
	case c.Start >= e.Duration:
		t.fail("start", "%v is not before the end of the experiment (%v)", c.Start, e.Duration)
	case c.Stop != 0 && c.Stop <= c.Start:
		t.fail("stop", "%v is not after start %v", c.Stop, c.Start)
	}
	t.done()
	return c
}

// checkCompetitors reports names used twice, among the competitors or
// shared with a source (results tell them apart by name).
func checkCompetitors(root *table, e *Experiment) {
	seen := map[string]bool{}
	for _, s := range e.Sources {
		seen[s.Name] = true
	}
	for i, c := range e.Competitors {
		if seen[c.Name] {
			root.d.table("competitor."+strconv.Itoa(i), nil, root.errs).fail("name", "name %q is another competitor's or a source's", c.Name)
		}
		seen[c.Name] = true
	}
}

// CompetitorExperiment is the run of competitor k as an experiment of its
// own: its path alone (without scheduled changes or bottleneck: the
// experiment's network carries it), one bulk source named after it, the
// experiment's transport with the competitor's controller and without
// multipath, the experiment's times.
func (e *Experiment) CompetitorExperiment(k int) Experiment {
	c := e.Competitors[k]
	p := e.Paths[c.Path]
	ce := Experiment{File: e.File, Name: e.Name + "-" + c.Name, Duration: e.Duration, Drain: e.Drain,
		Seed: RepetitionSeed(e.Seed, 1000+k), Backend: e.Backend, Repeat: 1, BaseSeed: e.Seed, Point: e.Point,
		Transport: e.Transport, Output: e.Output}
	ce.Output.Qlog = false
	ce.Transport.Congestion, ce.Transport.Multipath = c.Congestion, false
	ce.Paths = []Path{{Up: p.Up, Down: p.Down, ClientAddr: p.ClientAddr, ServerAddr: p.ServerAddr, BottleneckDelay: p.BottleneckDelay}}
	ce.Sources = []Source{{Name: c.Name, Kind: KindBulk, Start: c.Start, Stop: c.Stop}}
	return ce
}

// writeCompetitors writes the [[competitor]] tables.
func writeCompetitors(b *strings.Builder, e *Experiment) {
	w := func(key string, v string) { fmt.Fprintf(b, "%s = %s\n", key, v) }
	for _, c := range e.Competitors {
		b.WriteString("\n[[competitor]]\n")
		w("name", strconv.Quote(c.Name))
		w("path", strconv.Itoa(c.Path))
		w("congestion", strconv.Quote(c.Congestion))
		w("start", strconv.Quote(dur(c.Start)))
		if c.Stop > 0 {
			w("stop", strconv.Quote(dur(c.Stop)))
		}
	}
}
