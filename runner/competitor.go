package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// competitor is one competing connection of a run ([[competitor]]): its
// run as an experiment of its own (experiment.CompetitorExperiment) and
// the recorder of both its ends.
type competitor struct {
	c     experiment.Competitor
	e     experiment.Experiment
	rec   *trafficgen.Recorder
	peers []*trafficgen.Peer
	// connected: its server accepted its client's connection; err is why
	// it could not connect, if it could not.
	connected bool
	err       error
}

// newCompetitors prepares the competitors of an experiment whose time
// zero is t0.
func newCompetitors(e *experiment.Experiment, t0 time.Time) []*competitor {
	var out []*competitor
	for k, c := range e.Competitors {
		ce := e.CompetitorExperiment(k)
		rec := trafficgen.NewRecorder(recorderConfig(&ce, t0))
		rec.ConnectStart = t0
		out = append(out, &competitor{c: c, e: ce, rec: rec})
	}
	return out
}

// stop stops the competitors' sources at the end of the window.
func stopCompetitors(cs []*competitor) {
	for _, c := range cs {
		for _, p := range c.peers {
			p.Stop()
		}
	}
}

// competitorResults finishes the competitors' recorders and returns
// their summaries and the writers of their throughput.csv rows.
func competitorResults(cs []*competitor, e *experiment.Experiment) ([]trafficgen.CompetitorSummary, []func(io.Writer) error) {
	var sums []trafficgen.CompetitorSummary
	var rows []func(io.Writer) error
	for _, c := range cs {
		c.rec.Finish()
		s := trafficgen.SummariseCompetitor(c.c, e.Duration, c.rec)
		switch {
		case c.err != nil:
			s.Problems = append(s.Problems, fmt.Sprintf("competitor %s: %v", c.c.Name, c.err))
		case !c.connected:
			s.Problems = append(s.Problems, fmt.Sprintf("competitor %s: no connection within the run", c.c.Name))
		}
		sums = append(sums, s)
		rows = append(rows, func(w io.Writer) error { return c.rec.WriteCompetitorRows(w, c.c.Name) })
	}
	return sums, rows
}
