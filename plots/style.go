package plots

import (
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Style is how one path scheduler is drawn in every figure: its colour
// and, for lines, its dash pattern, so that the schedulers stay apart in
// greyscale and for colour-blind readers. The colours are Paul Tol's
// high-contrast scheme (designed to survive both) for the reference
// paper's three schedulers, and his medium-contrast and bright colours
// for the others (sr's green, not the olive next to lowrtt's yellow);
// each has a dash pattern of its own, and every two colours are at least
// 30 apart in CIELAB (ΔE*ab, TestSchedulerColoursApart).
type Style struct {
	Color  color.RGBA
	Dashes []vg.Length
}

func rgb(r, g, b uint8) color.RGBA { return color.RGBA{r, g, b, 255} }

var schedulerStyles = map[string]Style{
	"cwr-red":     {rgb(0x00, 0x44, 0x88), nil},                                     // dark blue, solid
	"cwr":         {rgb(0xBB, 0x55, 0x66), []vg.Length{vg.Points(5), vg.Points(2)}}, // red, dashed
	"lowrtt":      {rgb(0xDD, 0xAA, 0x33), []vg.Length{vg.Points(1.5), vg.Points(1.5)}},
	"sr":          {rgb(0x22, 0x88, 0x33), []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}}, // green
	"redundant":   {rgb(0x66, 0x99, 0xCC), []vg.Length{vg.Points(3), vg.Points(3)}},
	"round-robin": {rgb(0x00, 0x00, 0x00), []vg.Length{vg.Points(8), vg.Points(3)}},

	// The literature's heterogeneous-path schedulers (Paul Tol's vibrant
	// orange and teal).
	"ecf":   {rgb(0xEE, 0x77, 0x33), []vg.Length{vg.Points(4), vg.Points(1.5), vg.Points(1.5), vg.Points(1.5), vg.Points(1.5), vg.Points(1.5)}},
	"blest": {rgb(0x00, 0x99, 0x88), []vg.Length{vg.Points(10), vg.Points(2), vg.Points(2), vg.Points(2)}},

	// The project's own cwr-plus: Paul Tol's vibrant magenta, long dashes
	// and dots.
	"cwr-plus": {rgb(0xEE, 0x33, 0x77), []vg.Length{vg.Points(7), vg.Points(1.5), vg.Points(1), vg.Points(1.5)}},

	// cwr-red with our rules on: purple, dot-dashed.
	"cwr-red-fast": {rgb(0x66, 0x33, 0x99), []vg.Length{vg.Points(1), vg.Points(2), vg.Points(4), vg.Points(2)}},
}

// otherStyle is for a scheduler without a style of its own.
var otherStyle = Style{rgb(0x77, 0x77, 0x77), []vg.Length{vg.Points(2), vg.Points(1), vg.Points(2), vg.Points(4)}}

// SchedulerStyle returns the style of path scheduler name.
func SchedulerStyle(name string) Style {
	if s, ok := schedulerStyles[name]; ok {
		return s
	}
	return otherStyle
}

// lineWidth of data lines.
var lineWidth = vg.Points(1.2)

// Line is the style's line.
func (s Style) Line() draw.LineStyle {
	return draw.LineStyle{Color: s.Color, Width: lineWidth, Dashes: s.Dashes}
}

// Light is the style's colour mixed with white: the priority share of a
// bar.
func (s Style) Light() color.RGBA {
	return tint(s.Color, 0.55)
}

// tint mixes c with a fraction f of white.
func tint(c color.RGBA, f float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(float64(v) + (255-float64(v))*f + 0.5) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 255}
}

// Colours of the other elements.
var (
	grey      = rgb(0x77, 0x77, 0x77)
	lightGrey = rgb(0xDD, 0xDD, 0xDD)
	black     = rgb(0, 0, 0)
)

// dashStyles tell apart lines of one scheduler that differ in other
// keys.
var dashStyles = [][]vg.Length{
	nil,
	{vg.Points(5), vg.Points(2)},
	{vg.Points(1.5), vg.Points(1.5)},
	{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)},
	{vg.Points(3), vg.Points(3)},
}
