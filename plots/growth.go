package plots

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/trafficgen"
)

// pathIDs are the IDs of the paths the points' runs report, ascending.
func pathIDs(points []*Point) []uint64 {
	seen := map[uint64]bool{}
	var ids []uint64
	for _, p := range points {
		for _, r := range p.Runs {
			for _, ps := range r.Summary.Paths {
				if !seen[ps.ID] {
					seen[ps.ID] = true
					ids = append(ids, ps.ID)
				}
			}
		}
	}
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	return ids
}

// Growth is the mean growth of path id's congestion window per RTT in
// congestion avoidance, seen by the server (the reference paper's Table
// I), over the point's repetitions.
func Growth(p *Point, id uint64) resultset.Summary {
	return metric(p, fmt.Sprintf("path.%d.cwnd_growth_ca_bytes_per_rtt", id))
}

// GrowthFigure draws the reference paper's Table I as a figure: per point
// and path, the mean cwnd growth per RTT in congestion avoidance with the
// 95 % confidence interval over the repetitions, grouped like the
// throughput bars, and a dashed line at one packet of the largest size
// per RTT (NewReno's growth when every acknowledged byte is reused at
// once).
func GrowthFigure(points []*Point, o Options) (*Figure, error) {
	ids := pathIDs(points)
	if len(ids) == 0 {
		return nil, inputErr("%s: no paths in the summaries", points[0].Runs[0].Dir)
	}
	p := newPlot("", "cwnd growth in CA (bytes/RTT)")
	p.Title.Text = o.Title
	var bs []bar
	for _, pt := range points {
		bs = append(bs, bar{point: pt})
	}
	ch := layoutBars(p, bs)
	var marks []growthMark
	top := 0.0
	for _, b := range ch.bars {
		for k, id := range ids {
			s := Growth(b.point, id)
			off := (float64(k) - float64(len(ids)-1)/2) * ch.width / float64(len(ids)+1)
			m := growthMark{x: b.x + off, y: float64(s.Mean), lo: float64(s.CI95[0]), hi: float64(s.CI95[1]), path: k, style: SchedulerStyle(b.point.Scheduler)}
			marks = append(marks, m)
			for _, v := range []float64{m.y, m.hi} {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					top = math.Max(top, v)
				}
			}
		}
	}
	ideal := math.NaN()
	if e, err := points[0].Runs[0].Config(); err == nil {
		ideal = float64(e.Transport.MaxPacketSize)
		top = math.Max(top, ideal)
	}
	leg := schedulerLegend(p, points, false)
	for k, id := range ids {
		leg.add(fmt.Sprintf("path %d", id), glyphThumb{pathGlyph(k, draw.LineStyle{Color: grey})})
	}
	p.Add(gridLines())
	if !math.IsNaN(ideal) {
		h := &hline{y: ideal, style: draw.LineStyle{Color: black, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}}
		p.Add(h)
		leg.add(fmt.Sprintf("%.0f B (1 packet)", ideal), lineThumb{h.style})
	}
	p.Add(&growthMarks{marks: marks})
	p.Add(leg)
	p.Y.Min = 0
	if top <= 0 {
		top = 1
	}
	p.Y.Max = headroom(top, leg.height(dataWidth(ColumnWidth)), 2.5*vg.Inch-vg.Points(40))
	return &Figure{Plots: []*plot.Plot{p}, Width: ColumnWidth, Height: 2.5 * vg.Inch}, nil
}

// GrowthTable is Table I: per point the mean cwnd growth per RTT in
// congestion avoidance of each path, ± half the 95 % confidence interval
// over the repetitions; in CSV one row per point and path.
func GrowthTable(points []*Point, o Options) (*Table, error) {
	ids := pathIDs(points)
	t := &Table{MD: [][]string{{"run", "runs"}}, CSV: [][]string{{"label", "runs", "path", "n", "growth_bytes_per_rtt", "ci95_lo", "ci95_hi"}}}
	for _, id := range ids {
		t.MD[0] = append(t.MD[0], fmt.Sprintf("path %d (B/RTT)", id))
	}
	f := trafficgen.FormatCSV
	for _, p := range points {
		n := strconv.Itoa(len(p.Runs))
		row := []string{p.Label, runsCell(p)}
		for _, id := range ids {
			s := Growth(p, id)
			row = append(row, WithCI(s, 0))
			t.CSV = append(t.CSV, []string{p.Label, n, strconv.FormatUint(id, 10), strconv.Itoa(s.N), f(float64(s.Mean)), f(float64(s.CI95[0])), f(float64(s.CI95[1]))})
		}
		t.MD = append(t.MD, row)
	}
	return t, nil
}

// pathGlyph is the mark of the k-th path: a filled circle, an open
// triangle, a filled square, …
func pathGlyph(k int, c draw.LineStyle) draw.GlyphStyle {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.RingGlyph{}, draw.CrossGlyph{}}
	return draw.GlyphStyle{Color: c.Color, Radius: vg.Points(2.2), Shape: shapes[k%len(shapes)]}
}

// growthMark is one path's growth at a point.
type growthMark struct {
	x, y, lo, hi float64
	path         int
	style        Style
}

type growthMarks struct{ marks []growthMark }

func (g *growthMarks) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	errStyle := draw.LineStyle{Color: black, Width: vg.Points(0.6)}
	for _, m := range g.marks {
		if math.IsNaN(m.y) {
			continue
		}
		x := trX(m.x)
		errorBar(c, plt, x, m.lo, m.hi, vg.Points(1.5), errStyle)
		pt := vg.Point{X: x, Y: trY(m.y)}
		if c.Contains(pt) {
			c.DrawGlyph(pathGlyph(m.path, draw.LineStyle{Color: m.style.Color}), pt)
		}
	}
}

// hline is a horizontal line across the plot at y.
type hline struct {
	y     float64
	style draw.LineStyle
}

func (h *hline) Plot(c draw.Canvas, plt *plot.Plot) {
	_, trY := plt.Transforms(&c)
	y := trY(h.y)
	if y >= c.Min.Y && y <= c.Max.Y {
		c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
	}
}

// glyphThumb is a legend entry's glyph.
type glyphThumb struct{ g draw.GlyphStyle }

func (t glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyph(t.g, c.Center()) }
