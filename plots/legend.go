package plots

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// rowLegend is a legend laid out in rows across the top of the data
// area, for figures whose data fill the usual corner (bars). The plot
// leaves room for it with headroom.
type rowLegend struct {
	entries []legendEntry
	style   draw.TextStyle
}

type legendEntry struct {
	label string
	thumb plot.Thumbnailer
}

// Sizes of a row legend.
var (
	legendThumb = vg.Points(9)
	legendGap   = vg.Points(2)
	legendSpace = vg.Points(7)
	legendPad   = vg.Points(2)
)

func newRowLegend(p *plot.Plot) *rowLegend {
	return &rowLegend{style: p.Legend.TextStyle}
}

func (l *rowLegend) add(label string, thumb plot.Thumbnailer) {
	l.entries = append(l.entries, legendEntry{label, thumb})
}

// layout places the entries in rows no wider than width: the position of
// each entry's left edge and its row.
func (l *rowLegend) layout(width vg.Length) (xs []vg.Length, rows []int) {
	x, row := legendPad, 0
	for _, e := range l.entries {
		w := legendThumb + legendGap + l.style.Width(e.label)
		if x > legendPad && x+w > width-legendPad {
			x, row = legendPad, row+1
		}
		xs, rows = append(xs, x), append(rows, row)
		x += w + legendSpace
	}
	return xs, rows
}

// rowHeight is the height of one row.
func (l *rowLegend) rowHeight() vg.Length { return l.style.Height("Mg") + vg.Points(1.5) }

// height is the height of the legend in a data area width wide.
func (l *rowLegend) height(width vg.Length) vg.Length {
	if len(l.entries) == 0 {
		return 0
	}
	_, rows := l.layout(width)
	return vg.Length(rows[len(rows)-1]+1)*l.rowHeight() + 2*legendPad
}

// Plot draws the legend at the top of the data area, on white.
func (l *rowLegend) Plot(c draw.Canvas, _ *plot.Plot) {
	if len(l.entries) == 0 {
		return
	}
	w := c.Max.X - c.Min.X
	xs, rows := l.layout(w)
	h := l.height(w)
	top := c.Max.Y
	c.FillPolygon(rgb(255, 255, 255), []vg.Point{{X: c.Min.X, Y: top}, {X: c.Max.X, Y: top}, {X: c.Max.X, Y: top - h}, {X: c.Min.X, Y: top - h}})
	rh := l.rowHeight()
	sty := l.style
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	for i, e := range l.entries {
		y := top - legendPad - vg.Length(rows[i])*rh - rh/2
		x := c.Min.X + xs[i]
		tc := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: y - rh/2 + vg.Points(1)}, Max: vg.Point{X: x + legendThumb, Y: y + rh/2 - vg.Points(1)}}}
		e.thumb.Thumbnail(&tc)
		c.FillText(sty, vg.Point{X: x + legendThumb + legendGap, Y: y}, e.label)
	}
}

// dataWidth estimates the width of a figure's data area: the figure less
// the vertical axis, its labels and the margin.
func dataWidth(figure vg.Length) vg.Length { return figure - vg.Points(48) }

// headroom raises the top of the vertical axis so that a legend of height
// h fits above the data in a data area about height high: the data's top
// top stays below the legend.
func headroom(top float64, h, height vg.Length) float64 {
	frac := float64(h / height)
	if frac > 0.6 {
		frac = 0.6
	}
	return top / (1 - frac) * 1.03
}

// boxThumb is a legend entry's filled box.
type boxThumb struct{ fill, line draw.LineStyle }

func (b boxThumb) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(b.fill.Color, pts)
	if b.line.Width > 0 {
		c.StrokeLines(b.line, append(pts, pts[0]))
	}
}

// lineThumb is a legend entry's line.
type lineThumb struct{ style draw.LineStyle }

func (l lineThumb) Thumbnail(c *draw.Canvas) { thumbLine(c, l.style) }
