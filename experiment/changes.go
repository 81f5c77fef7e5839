package experiment

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Directions of a link change.
const (
	DirectionUp   = "up"   // client to server
	DirectionDown = "down" // server to client
)

// LinkChange is a [[path.change]]: at At after the start of the
// experiment, the named properties of one direction of the path (or of
// both when Direction is "") take new values; the others keep theirs.
// A nil field is a property the change leaves alone.
type LinkChange struct {
	At time.Duration
	// Direction is DirectionUp, DirectionDown or "" (both).
	Direction string
	Rate      *float64
	// Delay is the new one-way propagation delay of each direction
	// changed.
	Delay  *time.Duration
	Loss   *float64
	Jitter *time.Duration
	// QueueBytes or QueueBDP (one of them) is the new queue, as the
	// queue key of a link.
	QueueBytes *int64
	QueueBDP   *float64
	// Down true drops every packet offered to the direction from At on,
	// false carries them again.
	Down *bool
}

// LinkStep is the state of one direction of a path from At on, after the
// path's changes at At.
type LinkStep struct {
	At   time.Duration `json:"at_ns"`
	Link Link          `json:"link"`
	// Down: the direction drops every packet.
	Down bool `json:"down"`
	// RTT is the path's round-trip propagation delay from At on (it sizes
	// a queue given in BDPs).
	RTT time.Duration `json:"rtt_ns"`
}

// Steps resolves the path's changes into the successive states of each
// direction: one step per time at which a change touches the direction,
// with every change at that time applied (in file order).
func (p Path) Steps() (up, down []LinkStep) {
	cur := [2]Link{p.Up, p.Down}
	isDown := [2]bool{}
	for i := 0; i < len(p.Changes); {
		at := p.Changes[i].At
		var touched [2]bool
		for ; i < len(p.Changes) && p.Changes[i].At == at; i++ {
			c := p.Changes[i]
			for d, name := range []string{DirectionUp, DirectionDown} {
				if c.Direction != "" && c.Direction != name {
					continue
				}
				touched[d] = true
				cur[d] = c.apply(cur[d])
				if c.Down != nil {
					isDown[d] = *c.Down
				}
			}
		}
		rtt := cur[0].Delay + cur[1].Delay + 2*p.BottleneckDelay
		if touched[0] {
			up = append(up, LinkStep{At: at, Link: cur[0], Down: isDown[0], RTT: rtt})
		}
		if touched[1] {
			down = append(down, LinkStep{At: at, Link: cur[1], Down: isDown[1], RTT: rtt})
		}
	}
	return up, down
}

// apply returns l with the change's properties.
func (c LinkChange) apply(l Link) Link {
	if c.Rate != nil {
		l.Rate = *c.Rate
	}
	if c.Delay != nil {
		l.Delay = *c.Delay
	}
	if c.Loss != nil {
		l.Loss = *c.Loss
	}
	if c.Jitter != nil {
		l.Jitter = *c.Jitter
	}
	if c.QueueBytes != nil {
		l.QueueBytes, l.QueueBDP = *c.QueueBytes, 0
	}
	if c.QueueBDP != nil {
		l.QueueBytes, l.QueueBDP = 0, *c.QueueBDP
	}
	return l
}

// changeKeys are the properties a change can set.
var changeKeys = []string{"rate", "delay", "loss", "jitter", "queue", "down"}

// convertChange reads one [[path.change]] of path p (whose links are
// already read).
func convertChange(t *table, p Path) LinkChange {
	var c LinkChange
	if _, ok := t.m["at"]; !ok {
		t.fail("at", "missing: a change needs the time it happens, e.g. at = \"10s\"")
	}
	c.At = t.duration("at", 0)
	if _, ok := t.m["at"]; ok && c.At <= 0 && !t.failed["at"] {
		t.fail("at", "must be after the start of the experiment")
	}
	c.Direction = t.str("direction", "", DirectionUp, DirectionDown)
	set := 0
	for _, k := range changeKeys {
		if _, ok := t.m[k]; ok {
			set++
		}
	}
	if set == 0 {
		t.fail("at", "the change sets nothing: give one or more of %s", strings.Join(changeKeys, ", "))
	}
	if _, ok := t.m["rate"]; ok {
		r := t.rate("rate", 0)
		c.Rate = &r
	}
	if _, ok := t.m["delay"]; ok {
		d := t.duration("delay", 0)
		if d < 0 {
			t.fail("delay", "negative delay")
		}
		c.Delay = &d
	}
	if _, ok := t.m["loss"]; ok {
		f := t.fraction("loss", 0)
		if f >= 1 && (p.Up.LossModel == "gilbert" && c.Direction != DirectionDown || p.Down.LossModel == "gilbert" && c.Direction != DirectionUp) {
			t.fail("loss", "a Gilbert-Elliott loss rate must be below 100%% (use down = true for a link that drops everything)")
		}
		c.Loss = &f
	}
	if _, ok := t.m["jitter"]; ok {
		j := t.duration("jitter", 0)
		if j < 0 {
			t.fail("jitter", "negative jitter")
		}
		c.Jitter = &j
	}
	if q, bdp, ok := readQueue(t); ok {
		if bdp > 0 {
			c.QueueBDP = &bdp
		} else {
			c.QueueBytes = &q
		}
	}
	if _, ok := t.m["down"]; ok {
		b := t.boolean("down", false)
		c.Down = &b
	}
	t.done()
	return c
}

// checkChanges checks what needs the whole experiment: every change of a
// path within the experiment's duration and in the order of their times.
func checkChanges(root *table, e *Experiment) {
	for i, p := range e.Paths {
		var prev time.Duration
		for j, c := range p.Changes {
			ct := root.d.table(fmt.Sprintf("path.%d.change.%d", i, j), nil, root.errs)
			switch {
			case c.At <= 0:
				// reported by convertChange
			case c.At >= e.Duration:
				ct.fail("at", "%v is not before the end of the experiment (%v)", c.At, e.Duration)
			case c.At < prev:
				ct.fail("at", "%v is before the previous change's %v: list a path's changes in the order of their times", c.At, prev)
			}
			prev = max(prev, c.At)
		}
	}
}

// writeChanges writes a path's changes as [[path.change]] tables.
func writeChanges(b *strings.Builder, p Path) {
	w := func(key string, v string) { fmt.Fprintf(b, "%s = %s\n", key, v) }
	q := strconv.Quote
	for _, c := range p.Changes {
		b.WriteString("[[path.change]]\n")
		w("at", q(dur(c.At)))
		if c.Direction != "" {
			w("direction", q(c.Direction))
		}
		if c.Rate != nil {
			w("rate", q(FormatRate(*c.Rate)))
		}
		if c.Delay != nil {
			w("delay", q(dur(*c.Delay)))
		}
		if c.Loss != nil {
			w("loss", strconv.FormatFloat(*c.Loss, 'g', -1, 64))
		}
		if c.Jitter != nil {
			w("jitter", q(dur(*c.Jitter)))
		}
		if c.QueueBytes != nil {
			w("queue", strconv.FormatInt(*c.QueueBytes, 10))
		}
		if c.QueueBDP != nil {
			w("queue", q(strconv.FormatFloat(*c.QueueBDP, 'g', -1, 64)+"bdp"))
		}
		if c.Down != nil {
			w("down", strconv.FormatBool(*c.Down))
		}
	}
}
