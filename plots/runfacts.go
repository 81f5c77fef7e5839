package plots

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/mpq/mpq/resultset"
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
//     both directions of every path; NaN without an emulator.json.
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

// readFacts reads the run's facts (factNames); a fact it cannot read is
// NaN: a table shows the runs that have it.
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
	return []resultset.Metric{
		{Name: "transport.connections", Value: orNaN(float64(t.Connections))},
		{Name: "transport.max_connections", Value: orNaN(float64(t.MaxConnections))},
		{Name: "transport.connections_per_1000", Value: orNaN(t.ConnectionsPer1000)},
		{Name: "emulator.late_max_ms", Value: late},
		{Name: "emulator.dropped_loss", Value: dropped},
	}
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
