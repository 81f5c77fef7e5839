// Package plots draws the figures of a paper from the results mpq run
// writes: the CCDF of message completion times, throughput bars and
// throughput over time, the congestion windows over time, the congestion
// window growth of the reference paper's Table I, a timeline of the
// packets of every path around a message, and for grids the download
// time ratios and aggregation benefit of single path against multipath
// sweeps and the robustness map of every scheduler against lowrtt. Each
// figure also writes the table behind it (Markdown or CSV); the metrics
// table (MetricsTable) is a table of chosen metrics per grid point, for
// the results pages' tables no figure gives. Every figure is sized for one column of a two-column
// paper (3.5 in wide), with labelled axes and units; PDF and SVG embed
// their fonts, PNG is drawn at twice the resolution of a screen (192 dpi)
// for READMEs. Each path scheduler has one colour and dash pattern in
// every figure (Style).
//
// The figures read run directories (summary.json, config.resolved.toml,
// messages.csv, paths.csv, qlog/); the repetitions of a grid point are
// pooled (message times) or averaged with a 95 % Student-t confidence
// interval (rates, cwnd growth).
package plots

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/mpq/mpq/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Sizes of a figure.
const (
	// ColumnWidth is the width of one column of a two-column paper.
	ColumnWidth = 3.5 * vg.Inch
	// PNGDPI draws PNG files at twice the 96 dpi of a screen.
	PNGDPI = 192
)

// Font sizes for a figure printed at its size in a paper column.
const (
	labelSize  = 8
	tickSize   = 7
	legendSize = 7
)

// Figure is a drawn figure: one plot, or several stacked vertically on a
// common horizontal axis.
type Figure struct {
	Plots         []*plot.Plot
	Width, Height vg.Length
}

// Formats are the file formats a figure can be written as, by extension.
var Formats = []string{"pdf", "svg", "png"}

// FormatOf returns the format of a file name by its extension (lower
// case, without the dot).
func FormatOf(name string) string {
	return strings.TrimPrefix(strings.ToLower(filepath.Ext(name)), ".")
}

// Write draws the figure in format ("pdf", "svg" or "png") onto w.
func (f *Figure) Write(w io.Writer, format string) error {
	var c vg.CanvasWriterTo
	switch format {
	case "pdf":
		// vgpdf embeds the fonts by default.
		c = vgpdf.New(f.Width, f.Height)
	case "svg":
		c = vgsvg.NewWith(vgsvg.UseWH(f.Width, f.Height), vgsvg.EmbedFonts(true))
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(PNGDPI))}
	default:
		return fmt.Errorf("unknown figure format %q (want %s)", format, strings.Join(Formats, ", "))
	}
	// A margin on the right and at the top keeps the labels of the last
	// ticks inside the figure.
	dc := draw.Crop(draw.New(c), 0, -vg.Points(7), 0, -vg.Points(3))
	if len(f.Plots) == 1 {
		f.Plots[0].Draw(dc)
	} else {
		rows := make([][]*plot.Plot, len(f.Plots))
		for i, p := range f.Plots {
			rows[i] = []*plot.Plot{p}
		}
		tiles := draw.Tiles{Rows: len(f.Plots), Cols: 1, PadY: vg.Points(4)}
		for i, cv := range plot.Align(rows, tiles, dc) {
			f.Plots[i].Draw(cv[0])
		}
	}
	_, err := c.WriteTo(w)
	return err
}

// Save writes the figure to the file name in the format of its
// extension.
func (f *Figure) Save(name string) error {
	format := FormatOf(name)
	return WriteFile(name, func(w io.Writer) error { return f.Write(w, format) })
}

// WriteFile writes a file under a temporary name in its directory and
// renames it when complete, so that it is never seen half-written.
func WriteFile(name string, write func(io.Writer) error) error {
	return atomicfile.Write(name, write)
}

// newPlot is a plot with the fonts of a paper column, light grid lines
// and the axis labels given.
func newPlot(xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Tick.Marker = niceTicks{}
		a.Label.TextStyle.Font.Size = labelSize
		a.Tick.Label.Font.Size = tickSize
		a.Padding = vg.Points(2)
	}
	p.X.Label.Padding = vg.Points(2)
	p.Y.Label.Padding = vg.Points(2)
	p.Legend.TextStyle.Font.Size = legendSize
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(16)
	p.Legend.Padding = vg.Points(1)
	p.Title.TextStyle.Font.Size = labelSize
	return p
}

// niceTicks labels a linear axis at steps of 1, 2 or 5 times a power of
// ten, about five labels, with as many decimals as the step needs.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: fmt.Sprint(lo)}}
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, f := range []float64{1, 2, 5, 10} {
		if f*mag >= raw {
			step = f * mag
			break
		}
	}
	prec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	var ticks []plot.Tick
	for i := math.Ceil(lo/step - 1e-9); i*step <= hi+step*1e-9; i++ {
		v := i * step
		if i == 0 {
			v = 0 // not -0
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%.*f", prec, v)})
		for k := 1; k < 5; k++ {
			if m := v + float64(k)*step/5; m < hi {
				ticks = append(ticks, plot.Tick{Value: m})
			}
		}
	}
	return ticks
}
