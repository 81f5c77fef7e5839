package plots

import (
	"fmt"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mpq/mpq/trafficgen"
)

// changeMarks draws a run's scheduled link changes (summary.json's
// link_changes) as vertical dotted lines at their times, each labelled at
// the top of the data area with what changed: "p0 down", "p1↑ 20 Mbit/s".
// perSecond is how many units of the plot's X axis make a second (1 for
// seconds, 1000 for milliseconds). Changes outside the axis are left out.
type changeMarks struct {
	changes   []trafficgen.LinkChangeSummary
	perSecond float64
	style     draw.LineStyle
	text      draw.TextStyle
	// below is the legend the labels go under (nil: none).
	below *rowLegend
}

func newChangeMarks(p *plot.Plot, s *trafficgen.Summary, perSecond float64) *changeMarks {
	if s == nil || len(s.LinkChanges) == 0 {
		return nil
	}
	text := p.Legend.TextStyle
	text.Font.Size = vg.Points(6.5)
	text.Color = black
	return &changeMarks{changes: s.LinkChanges, perSecond: perSecond, text: text,
		style: draw.LineStyle{Color: black, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(1), vg.Points(1.5)}}}
}

// addChangeMarks adds the marks of a run's link changes to a plot, if it
// has any, their labels under the legend leg (may be nil). It returns the
// height the labels take at the top of the data area (0 without marks),
// which the plot's headroom must leave free.
func addChangeMarks(p *plot.Plot, s *trafficgen.Summary, perSecond float64, leg *rowLegend) vg.Length {
	m := newChangeMarks(p, s, perSecond)
	if m == nil {
		return 0
	}
	m.below = leg
	p.Add(m)
	return 2*m.text.Height("M") + vg.Points(2)
}

func (m *changeMarks) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	// Changes at one time share a line and a label.
	var times []float64
	labels := map[float64][]string{}
	for _, ch := range m.changes {
		x := ch.AtS * m.perSecond
		if x < plt.X.Min || x > plt.X.Max {
			continue
		}
		if _, ok := labels[x]; !ok {
			times = append(times, x)
		}
		labels[x] = append(labels[x], ChangeLabel(ch))
	}
	top := c.Max.Y
	if m.below != nil {
		top -= m.below.height(c.Max.X - c.Min.X)
	}
	sort.Float64s(times)
	// Each label goes in the highest of the rows where it clears the
	// labels before it.
	var rowEnds []vg.Length
	for _, x := range times {
		px := trX(x)
		c.StrokeLine2(m.style, px, c.Min.Y, px, top)
		label := strings.Join(labels[x], ", ")
		row := 0
		for row < len(rowEnds) && rowEnds[row] > px {
			row++
		}
		if row == len(rowEnds) {
			rowEnds = append(rowEnds, 0)
		}
		rowEnds[row] = px + vg.Points(1.5) + m.text.Width(label) + vg.Points(3)
		y := top - m.text.Height("M")*vg.Length(1+row)
		c.FillText(m.text, vg.Point{X: px + vg.Points(1.5), Y: y}, label)
	}
}

// ChangeLabel is the short description of a link change on a figure:
// the path, an arrow for one direction (↑ client to server, ↓ server to
// client), and what it set.
func ChangeLabel(ch trafficgen.LinkChangeSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "p%d", ch.Path)
	switch ch.Direction {
	case "up":
		b.WriteString("↑")
	case "down":
		b.WriteString("↓")
	}
	var parts []string
	if ch.Down != nil {
		if *ch.Down {
			parts = append(parts, "down")
		} else {
			parts = append(parts, "up")
		}
	}
	switch {
	case ch.RateMbps == nil:
	case *ch.RateMbps == 0:
		parts = append(parts, "unlimited rate")
	default:
		parts = append(parts, FormatNumber(*ch.RateMbps, -1)+" Mbit/s")
	}
	if ch.DelayMS != nil {
		parts = append(parts, FormatNumber(*ch.DelayMS, -1)+" ms")
	}
	if ch.Loss != nil {
		parts = append(parts, FormatNumber(*ch.Loss*100, -1)+" % loss")
	}
	if ch.JitterMS != nil {
		parts = append(parts, "jitter "+FormatNumber(*ch.JitterMS, -1)+" ms")
	}
	if ch.QueueBytes != nil {
		parts = append(parts, "queue "+FormatNumber(float64(*ch.QueueBytes)/1e3, -1)+" kB")
	}
	if ch.QueueBDP != nil {
		parts = append(parts, "queue "+FormatNumber(*ch.QueueBDP, -1)+" BDP")
	}
	return b.String() + " " + strings.Join(parts, " ")
}
