package plots

import (
	"image/color"
	"math"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// lab converts an sRGB colour to CIELAB (D65).
func lab(c color.RGBA) [3]float64 {
	lin := func(v uint8) float64 {
		f := float64(v) / 255
		if f <= 0.04045 {
			return f / 12.92
		}
		return math.Pow((f+0.055)/1.055, 2.4)
	}
	r, g, b := lin(c.R), lin(c.G), lin(c.B)
	x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
	y := 0.2126*r + 0.7152*g + 0.0722*b
	z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

// TestSchedulerColoursApart: every two schedulers' colours (and the
// colour of the others) are at least 30 apart in CIELAB (ΔE*ab, 1976):
// lowrtt's yellow and sr's former olive were 22 apart.
func TestSchedulerColoursApart(t *testing.T) {
	styles := map[string]Style{"(other)": otherStyle}
	for k, v := range schedulerStyles {
		styles[k] = v
	}
	for a, sa := range styles {
		for b, sb := range styles {
			if a >= b {
				continue
			}
			la, lb := lab(sa.Color), lab(sb.Color)
			d := math.Sqrt((la[0]-lb[0])*(la[0]-lb[0]) + (la[1]-lb[1])*(la[1]-lb[1]) + (la[2]-lb[2])*(la[2]-lb[2]))
			if d < 30 {
				t.Errorf("%s and %s: colours %v and %v only %.0f apart", a, b, sa.Color, sb.Color, d)
			}
		}
	}
}

// TestErrorBarClipped: an interval reaching below the axis' minimum (a
// throughput of mean 2 ± 5 Mbit/s on an axis from 0) stops at the axis,
// with no cap there; the upper end keeps its cap.
func TestErrorBarClipped(t *testing.T) {
	plt := plot.New()
	plt.X.Min, plt.X.Max, plt.Y.Min, plt.Y.Max = 0, 1, 0, 10
	rec := &recorder.Canvas{}
	c := draw.Canvas{Canvas: rec, Rectangle: vg.Rectangle{Min: vg.Point{X: 0, Y: 20}, Max: vg.Point{X: 100, Y: 120}}}
	errorBar(c, plt, 50, -3, 7, 2, draw.LineStyle{Width: 1})
	var strokes int
	for _, a := range rec.Actions {
		s, ok := a.(*recorder.Stroke)
		if !ok {
			continue
		}
		strokes++
		for _, p := range s.Path {
			if p.Pos.Y < 20-1e-9 {
				t.Errorf("stroke %v below the axis (y 20)", s.Path)
			}
		}
	}
	if strokes != 2 {
		t.Errorf("%d strokes, want the bar and its upper cap", strokes)
	}
}
