package experiment

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Bottleneck is a [[bottleneck]]: a link shared by the paths that name it
// (Path.Bottleneck). After its own link, a packet of such a path passes
// the shared link of its direction: each direction of a bottleneck is one
// link, with one queue, for all its paths.
type Bottleneck struct {
	Name string
	// Link is each direction's rate, one-way delay, loss and queue (a
	// queue in BDPs is a multiple of Rate x RTT).
	Link Link
	// RTT is the largest round-trip propagation delay of the paths
	// through it (their own links' and the bottleneck's both ways): the
	// RTT of its bandwidth-delay product.
	RTT time.Duration
}

// convertBottleneck reads one [[bottleneck]].
func convertBottleneck(t *table, i int) Bottleneck {
	b := Bottleneck{Name: t.str("name", ""), Link: Link{LossModel: "bernoulli", BurstLength: 1, QueueBDP: 1}}
	if _, ok := t.m["name"]; !ok {
		t.fail("name", "missing: paths name their bottleneck (bottleneck = \"NAME\")")
	} else if b.Name == "" && !t.failed["name"] {
		t.fail("name", "must not be empty")
	}
	if _, ok := t.m["rate"]; !ok {
		t.fail("rate", "missing: a bottleneck needs a rate")
	}
	b.Link.Rate = t.rate("rate", 0)
	if _, ok := t.m["rate"]; ok && b.Link.Rate <= 0 && !t.failed["rate"] {
		t.fail("rate", "must be positive")
	}
	b.Link.Delay = t.duration("delay", 0)
	if b.Link.Delay < 0 {
		t.fail("delay", "negative delay")
	}
	b.Link.Loss = t.fraction("loss", 0)
	if q, bdp, ok := readQueue(t); ok {
		b.Link.QueueBytes, b.Link.QueueBDP = q, bdp
	}
	if v, ok := t.get("queue_bdp"); ok {
		if _, both := t.m["queue"]; both {
			t.fail("queue_bdp", "give either queue or queue_bdp, not both")
		}
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case int64:
			f = float64(x)
		default:
			t.fail("queue_bdp", "want a multiple of the bandwidth-delay product, e.g. 1 or 0.5, got %v", v)
		}
		if !(f > 0) || f > 1e6 {
			t.fail("queue_bdp", "%v is not a positive multiple of the bandwidth-delay product", v)
		}
		b.Link.QueueBytes, b.Link.QueueBDP = 0, f
	}
	t.done()
	return b
}

// resolveBottlenecks checks the paths' bottleneck names and the
// bottlenecks' names, and sets each bottleneck's RTT and each path's
// BottleneckDelay.
func resolveBottlenecks(root *table, e *Experiment) {
	byName := map[string]int{}
	for i, b := range e.Bottlenecks {
		if _, dup := byName[b.Name]; dup && b.Name != "" {
			root.d.table("bottleneck."+strconv.Itoa(i), nil, root.errs).fail("name", "bottleneck name %q used twice", b.Name)
		}
		byName[b.Name] = i
	}
	for i := range e.Paths {
		p := &e.Paths[i]
		if p.Bottleneck == "" {
			continue
		}
		j, ok := byName[p.Bottleneck]
		if !ok {
			var known []string
			for n := range byName {
				known = append(known, strconv.Quote(n))
			}
			sort.Strings(known)
			msg := "no [[bottleneck]] tables"
			if len(known) > 0 {
				msg = "known: " + strings.Join(known, ", ")
			}
			root.d.table("path."+strconv.Itoa(i), nil, root.errs).fail("bottleneck", "unknown bottleneck %q (%s)", p.Bottleneck, msg)
			continue
		}
		p.BottleneckDelay = e.Bottlenecks[j].Link.Delay
		e.Bottlenecks[j].RTT = max(e.Bottlenecks[j].RTT, p.RTT())
	}
}

// BottleneckOf returns the bottleneck path i goes through, or nil.
func (e *Experiment) BottleneckOf(i int) *Bottleneck {
	name := e.Paths[i].Bottleneck
	if name == "" {
		return nil
	}
	for j := range e.Bottlenecks {
		if e.Bottlenecks[j].Name == name {
			return &e.Bottlenecks[j]
		}
	}
	return nil
}

// writeBottlenecks writes the [[bottleneck]] tables.
func writeBottlenecks(b *strings.Builder, e *Experiment) {
	w := func(key string, v string) { fmt.Fprintf(b, "%s = %s\n", key, v) }
	for _, bn := range e.Bottlenecks {
		b.WriteString("\n[[bottleneck]]\n")
		w("name", strconv.Quote(bn.Name))
		w("rate", strconv.Quote(FormatRate(bn.Link.Rate)))
		w("delay", strconv.Quote(dur(bn.Link.Delay)))
		w("loss", strconv.FormatFloat(bn.Link.Loss, 'g', -1, 64))
		if bn.Link.QueueBytes > 0 {
			w("queue", strconv.FormatInt(bn.Link.QueueBytes, 10))
		} else {
			w("queue_bdp", strconv.FormatFloat(bn.Link.QueueBDP, 'g', -1, 64))
		}
	}
}
