package linkemu

import (
	"fmt"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/network/linkmodel"
)

// SharedLink is a bottleneck shared by paths ([[bottleneck]]): a pipe per
// direction, which the packets of every path through it pass after their
// own path's pipe (see Via).
type SharedLink struct {
	Name     string
	Up, Down *Pipe
}

// NewSharedLinks returns the pipes of an experiment's bottlenecks, with
// the random sources the simulator gives them in a run of seed. Their
// packets go where Via says; Run them like the paths' pipes.
func NewSharedLinks(bs []experiment.Bottleneck, seed uint64, lim Limits) ([]*SharedLink, error) {
	var out []*SharedLink
	for _, b := range bs {
		cfg, err := linkmodel.FromExperiment(b.Link, b.RTT)
		if err != nil {
			return nil, fmt.Errorf("bottleneck %s: %w", b.Name, err)
		}
		s := &SharedLink{Name: b.Name}
		for _, d := range []struct {
			dir  string
			pipe **Pipe
		}{{experiment.DirectionUp, &s.Up}, {experiment.DirectionDown, &s.Down}} {
			m, err := linkmodel.New(cfg, linkmodel.Rand(seed, linkmodel.BottleneckName(b.Name, d.dir)))
			if err != nil {
				return nil, fmt.Errorf("bottleneck %s: %w", b.Name, err)
			}
			*d.pipe = NewPipe(m, lim, func([]byte) error { return ErrUnroutable })
		}
		out = append(out, s)
	}
	return out, nil
}

// Via is the output of a path's pipe whose packets then pass the shared
// pipe shared on their way to out: it offers them to it (a packet the
// shared pipe drops counts there).
func Via(shared *Pipe, out func([]byte) error) func([]byte) error {
	return func(b []byte) error {
		shared.OfferShared(b, out)
		return nil
	}
}

// sharedLink returns the shared link of the bottleneck path p goes
// through, or nil.
func sharedLink(links []*SharedLink, p experiment.Path) (*SharedLink, error) {
	if p.Bottleneck == "" {
		return nil, nil
	}
	for _, l := range links {
		if l.Name == p.Bottleneck {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no bottleneck %q", p.Bottleneck)
}
