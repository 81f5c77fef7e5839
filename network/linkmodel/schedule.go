package linkmodel

import (
	"fmt"
	"time"

	"github.com/mpq/mpq/experiment"
)

// Step is a scheduled change of a link: from At (nanoseconds after the
// link's origin, see SetOrigin) the link has configuration Config, and
// drops every packet offered while Down.
//
// A change applies to the packets offered from its time on. Packets the
// link accepted before keep the departure and arrival times computed when
// they were offered: a queue built at the old rate drains at the old rate
// (as with netem, whose tc qdisc change leaves the packets it holds
// alone), a packet in flight when the link goes down still arrives, and
// the first packet offered after a rate change waits for the ones queued
// before it to be transmitted.
type Step struct {
	At     int64
	Config Config
	Down   bool
}

// ForPath is the model of one direction ("up" or "down") of an
// experiment path: its configuration at the start and the steps of its
// scheduled changes. A step whose loss the changes left alone keeps the
// loss model (and the state of a Gilbert-Elliott model) of the step
// before it.
func ForPath(p experiment.Path, direction string) (Config, []Step, error) {
	base := p.Up
	up, down := p.Steps()
	steps := up
	if direction == experiment.DirectionDown {
		base, steps = p.Down, down
	} else if direction != experiment.DirectionUp {
		return Config{}, nil, fmt.Errorf("direction %q is neither up nor down", direction)
	}
	cfg, err := FromExperiment(base, p.RTT())
	if err != nil {
		return Config{}, nil, err
	}
	prev, prevCfg := base, cfg
	var out []Step
	for _, s := range steps {
		c, err := FromExperiment(s.Link, s.RTT)
		if err != nil {
			return Config{}, nil, fmt.Errorf("change at %v: %w", s.At, err)
		}
		if s.Link.Loss == prev.Loss && s.Link.LossModel == prev.LossModel && s.Link.BurstLength == prev.BurstLength {
			c.Loss = prevCfg.Loss
		}
		out = append(out, Step{At: int64(s.At), Config: c, Down: s.Down})
		prev, prevCfg = s.Link, c
	}
	return cfg, out, nil
}

// BottleneckName is the name of one direction of a shared bottleneck, by
// which linkmodel.Rand gives it the same random draws in every emulator.
func BottleneckName(name, direction string) string {
	return "bottleneck/" + name + "/" + direction
}

// SetSchedule gives the link its scheduled changes, in the order of their
// times (see Step); they apply once the origin is set. It rejects a
// configuration New would reject and then leaves the link unchanged.
func (l *Link) SetSchedule(steps []Step) error {
	out := make([]Step, len(steps))
	for i, s := range steps {
		c, err := s.Config.Normalize()
		if err != nil {
			return fmt.Errorf("change at %v: %w", time.Duration(s.At), err)
		}
		if i > 0 && s.At < steps[i-1].At {
			return fmt.Errorf("change at %v before the change at %v", time.Duration(s.At), time.Duration(steps[i-1].At))
		}
		out[i] = Step{At: s.At, Config: c, Down: s.Down}
	}
	l.steps, l.next = out, 0
	return nil
}

// SetOrigin sets the time (on the time base of the offers) the steps'
// times, and a trace's, count from: the start of the experiment (until it
// is set, a trace counts from time 0 of the offers).
func (l *Link) SetOrigin(origin int64) {
	l.origin, l.originSet = origin, true
	// A trace's opportunities count from the origin too.
	l.oppSet, l.credit = false, 0
}

// Down reports whether the link dropped everything at its last offer.
func (l *Link) Down() bool { return l.down }

// advance applies the steps due at now.
func (l *Link) advance(now int64) {
	for l.next < len(l.steps) && now-l.origin >= l.steps[l.next].At {
		s := l.steps[l.next]
		l.cfg, l.down = s.Config, s.Down
		l.next++
	}
}
