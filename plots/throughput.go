package plots

import (
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/trafficgen"
)

// throughputEnd is the connection end whose throughput is shown: the
// vantage asked for, else the sender of the chosen source, else the
// server (the sender of bulk data).
func throughputEnd(p *Point, o Options) (string, error) {
	switch o.Vantage {
	case "server", "client":
		return o.Vantage, nil
	case "":
	default:
		return "", inputErr("--vantage %s: want server or client", o.Vantage)
	}
	if src, err := o.pointSource(p); err == nil {
		return src.Sender, nil
	} else if o.Source != "" {
		return "", err
	}
	return "server", nil
}

// PointThroughput is a point's throughput of one end: total and priority
// over the repetitions.
func PointThroughput(p *Point, o Options) (total, prio resultset.Summary, end string, err error) {
	if end, err = throughputEnd(p, o); err != nil {
		return
	}
	total = metric(p, "throughput_"+end+"_mbps")
	prio = metric(p, "throughput_"+end+"_priority_mbps")
	return
}

// ThroughputFigure draws a bar per point: the mean throughput of the
// sending end over the repetitions (stream bytes sent, retransmissions
// and copies included), the priority share drawn lighter at the top of
// the bar as in the reference paper's Figure 4, and the 95 % confidence
// interval of the total when there are repetitions. Bars are grouped by
// the keys other than the path scheduler.
func ThroughputFigure(points []*Point, o Options) (*Figure, error) {
	var bs []bar
	var end string
	for _, p := range points {
		total, prio, e, err := PointThroughput(p, o)
		if err != nil {
			return nil, err
		}
		end = e
		bs = append(bs, bar{point: p, top: float64(total.Mean), share: float64(prio.Mean),
			lo: float64(total.CI95[0]), hi: float64(total.CI95[1])})
		for _, name := range competitorNames(p) {
			c := metric(p, "competitor."+name+".throughput_mbps")
			bs = append(bs, bar{point: p, competitor: name, top: float64(c.Mean), lo: float64(c.CI95[0]), hi: float64(c.CI95[1])})
		}
	}
	p := newPlot("", "throughput, "+end+" (Mbit/s)")
	p.Title.Text = o.Title
	ch := layoutBars(p, bs)
	leg := schedulerLegend(p, points, true)
	for _, b := range bs {
		if b.competitor != "" {
			leg.add("grey: competitors", boxThumb{fill: draw.LineStyle{Color: competitorColor}})
			break
		}
	}
	ch.finish(p, leg)
	return &Figure{Plots: []*plot.Plot{p}, Width: ColumnWidth, Height: 2.5 * vg.Inch}, nil
}

// ThroughputTable gives each point's throughput of the sending end:
// mean ± half the 95 % confidence interval over the repetitions, total
// and priority, and the priority share of the total.
func ThroughputTable(points []*Point, o Options) (*Table, error) {
	t := &Table{
		MD:  [][]string{{"run", "runs", "throughput (Mbit/s)", "priority (Mbit/s)", "priority share"}},
		CSV: [][]string{{"label", "runs", "end", "total_mbps", "total_ci95_lo", "total_ci95_hi", "priority_mbps", "priority_ci95_lo", "priority_ci95_hi"}},
	}
	for _, p := range points {
		total, prio, end, err := PointThroughput(p, o)
		if err != nil {
			return nil, err
		}
		share := math.NaN()
		if total.Mean > 0 {
			share = 100 * float64(prio.Mean) / float64(total.Mean)
		}
		n := strconv.Itoa(len(p.Runs))
		t.MD = append(t.MD, []string{p.Label, runsCell(p), WithCI(total, 1), WithCI(prio, 2), FormatNumber(share, 1) + " %"})
		f := trafficgen.FormatCSV
		t.CSV = append(t.CSV, []string{p.Label, n, end, f(float64(total.Mean)), f(float64(total.CI95[0])), f(float64(total.CI95[1])),
			f(float64(prio.Mean)), f(float64(prio.CI95[0])), f(float64(prio.CI95[1]))})
		for _, name := range competitorNames(p) {
			c := metric(p, "competitor."+name+".throughput_mbps")
			t.MD = append(t.MD, []string{p.Label + ", competitor " + name, n, WithCI(c, 1), "", ""})
			t.CSV = append(t.CSV, []string{p.Label, n, "competitor:" + name, f(float64(c.Mean)), f(float64(c.CI95[0])), f(float64(c.CI95[1])), "", "", ""})
		}
	}
	return t, nil
}

// competitorColor is the colour of the competitors' bars.
var competitorColor = rgb(0xAA, 0xAA, 0xAA)

// competitorNames are the names of the competitors of a point's runs.
func competitorNames(p *Point) []string {
	var out []string
	for _, r := range p.Runs {
		for _, c := range r.Summary.Competitors {
			if !slices.Contains(out, c.Name) {
				out = append(out, c.Name)
			}
		}
	}
	return out
}

// bar is one bar: its top, the share at its top drawn lighter, and an
// error bar from lo to hi (NaN: none).
type bar struct {
	point *Point
	// competitor names the competitor the bar is of ("": the point's
	// connection).
	competitor string
	x          float64
	top, share float64
	lo, hi     float64
}

// barChart draws bars in groups.
type barChart struct {
	bars  []bar
	width float64
	ymax  float64
}

// layoutBars places the bars in groups (by Point.Group, in order of
// first appearance) around integer positions, and labels the groups on
// the horizontal axis (or each bar by its label when there are no
// groups).
func layoutBars(p *plot.Plot, bs []bar) *barChart {
	var groups []string
	members := map[string][]int{}
	for i, b := range bs {
		g := b.point.Group
		if _, ok := members[g]; !ok {
			groups = append(groups, g)
		}
		members[g] = append(members[g], i)
	}
	most := 0
	for _, m := range members {
		most = max(most, len(m))
	}
	ch := &barChart{width: 0.8 / float64(most)}
	var ticks []plot.Tick
	for gi, g := range groups {
		m := members[g]
		for j, i := range m {
			bs[i].x = float64(gi) + (float64(j)-float64(len(m)-1)/2)*ch.width
			if len(groups) == 1 {
				label := bs[i].point.Label
				if bs[i].competitor != "" {
					label = bs[i].competitor
				}
				ticks = append(ticks, plot.Tick{Value: bs[i].x, Label: label})
			}
		}
		if len(groups) > 1 {
			ticks = append(ticks, plot.Tick{Value: float64(gi), Label: bs[m[0]].point.GroupValues})
		}
	}
	if len(groups) > 1 {
		p.X.Label.Text = bs[0].point.GroupKeys
	}
	ch.bars = bs
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	for _, b := range bs {
		ch.ymax = math.Max(ch.ymax, b.top)
		if !math.IsNaN(b.hi) {
			ch.ymax = math.Max(ch.ymax, b.hi)
		}
	}
	return ch
}

// finish adds the bars and the legend to the plot, with room for the
// legend above the bars.
func (ch *barChart) finish(p *plot.Plot, leg *rowLegend) {
	p.Add(gridLines())
	p.Add(ch)
	p.Add(leg)
	p.Y.Min = 0
	top := ch.ymax
	if top <= 0 {
		top = 1
	}
	p.Y.Max = headroom(top, leg.height(dataWidth(ColumnWidth)), 2.5*vg.Inch-vg.Points(40))
}

// schedulerLegend lists the path schedulers of the points with their
// colours, and, for bars, the meaning of the lighter share.
func schedulerLegend(p *plot.Plot, points []*Point, share bool) *rowLegend {
	leg := newRowLegend(p)
	var seen []string
	for _, pt := range points {
		if slices.Contains(seen, pt.Scheduler) {
			continue
		}
		seen = append(seen, pt.Scheduler)
		st := SchedulerStyle(pt.Scheduler)
		leg.add(pt.Scheduler, boxThumb{fill: draw.LineStyle{Color: st.Color}})
	}
	if share {
		leg.add("lighter: priority", shareThumb{})
	}
	return leg
}

// shareThumb shows a bar with its lighter top.
type shareThumb struct{}

func (shareThumb) Thumbnail(c *draw.Canvas) {
	mid := (c.Min.Y + c.Max.Y) / 2
	lower := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: c.Min, Max: vg.Point{X: c.Max.X, Y: mid}}}
	upper := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: c.Min.X, Y: mid}, Max: c.Max}}
	boxThumb{fill: draw.LineStyle{Color: grey}}.Thumbnail(&lower)
	boxThumb{fill: draw.LineStyle{Color: tint(grey, 0.55)}}.Thumbnail(&upper)
}

func (ch *barChart) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	rect := func(x0, x1, y0, y1 vg.Length) []vg.Point {
		return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
	}
	errStyle := draw.LineStyle{Color: black, Width: vg.Points(0.7)}
	for _, b := range ch.bars {
		st := SchedulerStyle(b.point.Scheduler)
		if b.competitor != "" {
			st = Style{Color: competitorColor}
		}
		half := ch.width / 2 * 0.9
		x0, x1 := trX(b.x-half), trX(b.x+half)
		y0, yTop := trY(0), trY(b.top)
		ySplit := trY(b.top - b.share)
		c.FillPolygon(st.Color, c.ClipPolygonXY(rect(x0, x1, y0, ySplit)))
		c.FillPolygon(st.Light(), c.ClipPolygonXY(rect(x0, x1, ySplit, yTop)))
		c.StrokeLines(draw.LineStyle{Color: st.Color, Width: vg.Points(0.5)}, c.ClipLinesXY(append(rect(x0, x1, y0, yTop), vg.Point{X: x0, Y: y0}))...)
		errorBar(c, plt, trX(b.x), b.lo, b.hi, (x1-x0)/4, errStyle)
	}
}

// errorBar draws a vertical error bar at x from lo to hi (data values; no
// bar when either is NaN) with caps of half width cap, clipped to the
// vertical axis' range: an end beyond the axis (a throughput interval
// reaching below zero) stops at the axis without a cap, rather than
// running through the tick labels.
func errorBar(c draw.Canvas, plt *plot.Plot, x vg.Length, lo, hi float64, cap vg.Length, st draw.LineStyle) {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return
	}
	_, trY := plt.Transforms(&c)
	clip := func(v float64) (vg.Length, bool) {
		switch {
		case v < plt.Y.Min:
			return trY(plt.Y.Min), false
		case v > plt.Y.Max:
			return trY(plt.Y.Max), false
		}
		return trY(v), true
	}
	y0, capLo := clip(lo)
	y1, capHi := clip(hi)
	c.StrokeLine2(st, x, y0, x, y1)
	if capLo {
		c.StrokeLine2(st, x-cap, y0, x+cap, y0)
	}
	if capHi {
		c.StrokeLine2(st, x-cap, y1, x+cap, y1)
	}
}
