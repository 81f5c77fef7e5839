package plots

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mpq/mpq/trafficgen"
)

// CCDF is the complementary cumulative distribution of a set of times:
// at each distinct finite value X[i] (ascending), Y[i] is the fraction of
// the N values greater than X[i]. Inf of the values are +Inf (messages
// that did not complete): they are greater than every X, so the last Y
// is Inf/N and the curve never reaches 0 while a message is missing.
type CCDF struct {
	X, Y   []float64
	N, Inf int
}

// NewCCDF computes the CCDF of vals (+Inf allowed; NaN is not a time and
// is not counted).
func NewCCDF(vals []float64) CCDF {
	s := make([]float64, 0, len(vals))
	for _, v := range vals {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	sort.Float64s(s)
	c := CCDF{N: len(s)}
	for i, v := range s {
		if math.IsInf(v, 1) {
			c.Inf = len(s) - i
			break
		}
		if i+1 < len(s) && s[i+1] == v {
			continue // the last of equal values: all of them are at or below v
		}
		c.X = append(c.X, v)
		c.Y = append(c.Y, float64(len(s)-i-1)/float64(len(s)))
	}
	return c
}

// PooledTimes are the times of a source's messages in every run of the
// point, in run order: the time its distributions count (+Inf for a
// message that did not complete). Messages of the warm-up
// (output.warmup) are left out, as in summary.json.
func PooledTimes(p *Point, o Options) ([]float64, *trafficgen.SourceSummary, error) {
	return pooledTimesWithin(p, o, math.Inf(-1), math.Inf(1))
}

// pooledTimesWithin is PooledTimes of the messages created at or after
// from and before before (ms since the experiment's time zero) only.
func pooledTimesWithin(p *Point, o Options, from, before float64) ([]float64, *trafficgen.SourceSummary, error) {
	src, err := o.pointSource(p)
	if err != nil {
		return nil, nil, err
	}
	var vals []float64
	for _, r := range p.Runs {
		ms, err := r.Messages()
		if err != nil {
			return nil, nil, err
		}
		for _, m := range ms {
			if m.Source == src.Name && !m.Warmup && m.Created >= from && m.Created < before {
				vals = append(vals, timeOf(src.Kind, m))
			}
		}
	}
	return vals, src, nil
}

// lowerBound is the least time a message of the source can take in the
// run's network: the one-way propagation delay plus the serialization of
// the message at the link rate, over the path where their sum is least;
// for kinds with replies the same for the reply on the way back. ok is
// false when the run has no message of the source.
func lowerBound(r *Run, src *trafficgen.SourceSummary) (ms float64, ok bool, err error) {
	e, err := r.Config()
	if err != nil {
		return 0, false, err
	}
	msgs, err := r.Messages()
	if err != nil {
		return 0, false, err
	}
	var m *Message
	for i := range msgs {
		if msgs[i].Source == src.Name {
			m = &msgs[i]
			break
		}
	}
	if m == nil {
		return 0, false, nil
	}
	best := func(fromServer bool, bytes int64) float64 {
		least := math.Inf(1)
		for _, p := range e.Paths {
			l := p.Up
			if fromServer {
				l = p.Down
			}
			t := float64(l.Delay) / 1e6
			if l.Rate > 0 {
				t += float64(bytes) * 8 / l.Rate * 1e3
			}
			least = math.Min(least, t)
		}
		return least
	}
	fromServer := src.Sender == "server"
	ms = best(fromServer, m.Length)
	if trafficgen.HasReply(src.Kind) {
		ms += best(!fromServer, m.Reply)
	}
	return ms, true, nil
}

// timeAxis names the time a source's distributions count, in full and
// short.
func timeAxis(kind string) (string, string) {
	if trafficgen.HasReply(kind) {
		return "response time", "response time"
	}
	return "message completion time", "MCT"
}

// CCDFFigure draws the CCDF of the chosen source's message times, one
// line per point with its repetitions pooled, on a logarithmic
// probability axis from 1 down to 1e-4 (or to the decade of 1/n for
// fewer messages), with a dashed vertical line at the least time the
// network allows (lowerBound), and the 95 % confidence intervals of each
// line's p99 and p99.9 as bars at 0.01 and 0.001 (TailCI).
func CCDFFigure(points []*Point, o Options) (*Figure, error) {
	var lines []*ccdfLine
	var kind, source string
	marks := map[float64]bool{}
	for i, pt := range points {
		vals, src, err := PooledTimes(pt, o)
		if err != nil {
			return nil, err
		}
		if kind == "" {
			kind, source = src.Kind, src.Name
		}
		c := NewCCDF(vals)
		if c.N == 0 {
			return nil, inputErr("%s: no messages of source %s", pt.Runs[0].Dir, src.Name)
		}
		sorted := append([]float64(nil), vals...)
		sort.Float64s(sorted)
		lines = append(lines, &ccdfLine{c: c, style: lineStyle(points, i),
			tails: map[float64]Tail{0.99: TailCI(sorted, 0.99), 0.999: TailCI(sorted, 0.999)}})
		label := pt.Label
		if c.Inf > 0 {
			label += fmt.Sprintf(" (%d of %d failed)", c.Inf, c.N)
		}
		lines[len(lines)-1].label = label
		lb, ok, err := lowerBound(pt.Runs[0], src)
		if err != nil {
			return nil, err
		}
		if ok {
			marks[math.Round(lb*1e3)/1e3] = true
		}
	}
	n := 0
	xmax := 0.0
	for _, l := range lines {
		n = max(n, l.c.N)
		if len(l.c.X) > 0 {
			xmax = math.Max(xmax, l.c.X[len(l.c.X)-1])
		}
	}
	ymin := math.Pow(10, math.Floor(math.Log10(math.Max(1e-4, 1/float64(n)))+1e-9))
	long, short := timeAxis(kind)
	p := newPlot(long+" t of "+source+" (ms)", "P("+short+" > t)")
	p.Title.Text = o.Title
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = decadeTicks{}
	p.Y.Min, p.Y.Max = ymin, 1
	p.X.Min = 0
	if xmax <= 0 {
		xmax = 1
	}
	p.X.Max = xmax * 1.04
	p.Add(gridLines())
	var ms []float64
	for m := range marks {
		ms = append(ms, m)
	}
	sort.Float64s(ms)
	for i, m := range ms {
		v := &vline{x: m, style: draw.LineStyle{Color: black, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}}
		p.Add(v)
		if i == 0 {
			p.Legend.Add("OWD + size/rate, fastest path", v)
		}
	}
	bars := false
	for _, l := range lines {
		l.ymin = ymin
		p.Add(l)
		p.Legend.Add(l.label, l)
		bars = bars || l.hasTailBars()
	}
	if bars {
		// The bars at 0.01 and 0.001 are no steps of the curves (issue 37).
		p.Legend.Add("bars: 95 % CI of p99, p99.9", intervalThumb{})
	}
	return &Figure{Plots: []*plot.Plot{p}, Width: ColumnWidth, Height: 2.5 * vg.Inch}, nil
}

// lineStyle is the line of point i: its scheduler's style, with the
// dashes of a further key when several points share a scheduler.
func lineStyle(points []*Point, i int) draw.LineStyle {
	st := SchedulerStyle(points[i].Scheduler).Line()
	shared := false
	for j, q := range points {
		shared = shared || (j != i && q.Scheduler == points[i].Scheduler)
	}
	if shared {
		// Number the groups the points of this scheduler are in.
		var groups []string
		for _, q := range points {
			if q.Scheduler == points[i].Scheduler && !slices.Contains(groups, q.Group) {
				groups = append(groups, q.Group)
			}
		}
		for g, name := range groups {
			if name == points[i].Group {
				st.Dashes = dashStyles[g%len(dashStyles)]
			}
		}
	}
	return st
}

// ccdfLine draws a CCDF as a step function; while messages are missing
// it goes on to the right edge of the plot, else it drops to the bottom.
// At the probabilities 1 − p of its tails (p99: 0.01, p99.9: 0.001) it
// draws the quantile's 95 % confidence interval as a horizontal bar with
// end ticks, open to the right edge when the interval is unbounded.
type ccdfLine struct {
	c     CCDF
	ymin  float64
	style draw.LineStyle
	label string
	tails map[float64]Tail
}

// hasTailBars says whether plotTails draws a bar for the line.
func (l *ccdfLine) hasTailBars() bool {
	for _, p := range []float64{0.99, 0.999} {
		if tl, ok := l.tails[p]; ok && 1-p >= l.ymin && !math.IsNaN(tl.Lo) && !math.IsInf(tl.Lo, 1) {
			return true
		}
	}
	return false
}

// intervalThumb is the legend's key of the tail intervals: a black bar
// with end ticks, as plotTails draws them.
type intervalThumb struct{}

func (intervalThumb) Thumbnail(c *draw.Canvas) {
	st := draw.LineStyle{Color: black, Width: vg.Points(0.6)}
	y, tick := c.Center().Y, vg.Points(2.5)
	x0, x1 := c.Min.X+vg.Points(2), c.Max.X-vg.Points(2)
	c.StrokeLine2(st, x0, y, x1, y)
	c.StrokeLine2(st, x0, y-tick, x0, y+tick)
	c.StrokeLine2(st, x1, y-tick, x1, y+tick)
}

// plotTails draws the lines' tail intervals.
func (l *ccdfLine) plotTails(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	st := l.style
	st.Dashes = nil
	tick := vg.Points(2.5)
	for _, p := range []float64{0.99, 0.999} {
		tl, ok := l.tails[p]
		if !ok || 1-p < l.ymin || math.IsNaN(tl.Lo) || math.IsInf(tl.Lo, 1) {
			continue
		}
		y := trY(1 - p)
		x0, x1 := trX(tl.Lo), trX(plt.X.Max)
		if !math.IsInf(tl.Hi, 1) && tl.Hi <= plt.X.Max {
			x1 = trX(tl.Hi)
			c.StrokeLines(st, c.ClipLinesXY([]vg.Point{{X: x1, Y: y - tick}, {X: x1, Y: y + tick}})...)
		}
		c.StrokeLines(st, c.ClipLinesXY([]vg.Point{{X: x0, Y: y}, {X: x1, Y: y}})...)
		c.StrokeLines(st, c.ClipLinesXY([]vg.Point{{X: x0, Y: y - tick}, {X: x0, Y: y + tick}})...)
	}
}

func (l *ccdfLine) Plot(c draw.Canvas, plt *plot.Plot) {
	l.plotTails(c, plt)
	trX, trY := plt.Transforms(&c)
	y := func(v float64) vg.Length { return trY(math.Max(v, l.ymin)) }
	if len(l.c.X) == 0 { // every message failed
		c.StrokeLines(l.style, c.ClipLinesXY([]vg.Point{{X: trX(plt.X.Min), Y: y(1)}, {X: trX(plt.X.Max), Y: y(1)}})...)
		return
	}
	pts := make([]vg.Point, 0, 2*len(l.c.X)+1)
	prev := 1.0
	for i, x := range l.c.X {
		pts = append(pts, vg.Point{X: trX(x), Y: y(prev)}, vg.Point{X: trX(x), Y: y(l.c.Y[i])})
		prev = l.c.Y[i]
	}
	if prev > 0 {
		pts = append(pts, vg.Point{X: trX(plt.X.Max), Y: y(prev)})
	}
	c.StrokeLines(l.style, c.ClipLinesXY(pts)...)
}

func (l *ccdfLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	if len(l.c.X) == 0 {
		return 0, 0, 1, 1
	}
	return l.c.X[0], l.c.X[len(l.c.X)-1], 1, 1
}

func (l *ccdfLine) Thumbnail(c *draw.Canvas) { thumbLine(c, l.style) }

// thumbLine draws a legend entry's line.
func thumbLine(c *draw.Canvas, st draw.LineStyle) {
	y := c.Center().Y
	c.StrokeLine2(st, c.Min.X, y, c.Max.X, y)
}

// vline is a vertical line across the plot at x.
type vline struct {
	x     float64
	style draw.LineStyle
}

func (v *vline) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	x := trX(v.x)
	if x < c.Min.X || x > c.Max.X {
		return
	}
	c.StrokeLine2(v.style, x, c.Min.Y, x, c.Max.Y)
}

func (v *vline) Thumbnail(c *draw.Canvas) { thumbLine(c, v.style) }

// gridLines are light grid lines behind the data.
func gridLines() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = lightGrey, lightGrey
	g.Vertical.Width, g.Horizontal.Width = vg.Points(0.4), vg.Points(0.4)
	return g
}

// decadeTicks labels the decades of a logarithmic axis ("1", "0.1", …,
// "0.0001") and marks 2 to 9 times each without labels.
type decadeTicks struct{}

func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo) + 1e-9); e <= math.Ceil(math.Log10(hi)-1e-9); e++ {
		d := math.Pow(10, e)
		if d >= lo*(1-1e-9) && d <= hi*(1+1e-9) {
			ticks = append(ticks, plot.Tick{Value: d, Label: strconv.FormatFloat(d, 'f', -1, 64)})
		}
		for k := 2.0; k < 10; k++ {
			if v := k * d; v > lo && v < hi {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}

// CCDFTable gives the pooled distribution of the chosen source's times
// per point: n, the failed messages, the nearest-rank quantiles and the
// maximum (+Inf once the failed messages reach the rank), in ms; for the
// p99 and the p99.9 also their 95 % order-statistic confidence interval
// (TailCI) and the messages beyond them.
func CCDFTable(points []*Point, o Options) (*Table, error) {
	t := &Table{
		MD: [][]string{{"run", "runs", "messages", "failed", "p50", "p90", "p99", "p99 95 % CI", "beyond p99",
			"p99.9", "p99.9 95 % CI", "beyond p99.9", "max"}},
		CSV: [][]string{{"label", "runs", "n", "failed", "p50_ms", "p90_ms", "p99_ms", "p99_ci95_lo_ms", "p99_ci95_hi_ms", "beyond_p99",
			"p999_ms", "p999_ci95_lo_ms", "p999_ci95_hi_ms", "beyond_p999", "max_ms"}},
	}
	for _, pt := range points {
		vals, src, err := PooledTimes(pt, o)
		if err != nil {
			return nil, err
		}
		d := trafficgen.DistributionOf(vals)
		if d == nil {
			return nil, inputErr("%s: no messages of source %s", pt.Runs[0].Dir, src.Name)
		}
		sort.Float64s(vals)
		md := []string{pt.Label, runsCell(pt), strconv.Itoa(d.N), strconv.Itoa(d.Failed)}
		cs := []string{pt.Label, strconv.Itoa(len(pt.Runs)), strconv.Itoa(d.N), strconv.Itoa(d.Failed)}
		for _, v := range []float64{float64(d.P50), float64(d.P90)} {
			md = append(md, FormatNumber(v, 1))
			cs = append(cs, trafficgen.FormatCSV(v))
		}
		for _, p := range []float64{0.99, 0.999} {
			tc := TailCI(vals, p)
			md = append(md, FormatNumber(tc.Value, 1), FormatInterval(tc.Lo, tc.Hi, 1), strconv.Itoa(tc.Beyond))
			cs = append(cs, trafficgen.FormatCSV(tc.Value), trafficgen.FormatCSV(tc.Lo), trafficgen.FormatCSV(tc.Hi), strconv.Itoa(tc.Beyond))
		}
		md = append(md, FormatNumber(float64(d.Max), 1))
		cs = append(cs, trafficgen.FormatCSV(float64(d.Max)))
		t.MD, t.CSV = append(t.MD, md), append(t.CSV, cs)
	}
	return t, nil
}

// Tail is a pooled tail quantile with its 95 % confidence interval.
type Tail struct {
	// Value is the nearest-rank p-quantile, Lo and Hi the ends of its
	// order-statistic interval (trafficgen.QuantileCI; Hi +Inf when
	// the values do not bound it, Lo NaN when they do not from below),
	// Beyond the values greater than Value.
	Value, Lo, Hi float64
	Beyond        int
}

// TailCI is the p-quantile of sorted values (ascending, +Inf last) with
// its 95 % order-statistic confidence interval, as aggregate.json's
// pooled p99_ci95 and p999_ci95.
func TailCI(sorted []float64, p float64) Tail {
	v := trafficgen.NearestRank(sorted, p)
	lo, hi, _, _ := trafficgen.QuantileCI(sorted, p, 0.95)
	return Tail{Value: v, Lo: lo, Hi: hi, Beyond: trafficgen.Beyond(sorted, v)}
}

// FormatInterval writes an interval "[lo, hi]" with prec decimals ("–"
// for a missing end, "+Inf" for an unbounded one).
func FormatInterval(lo, hi float64, prec int) string {
	return "[" + FormatNumber(lo, prec) + ", " + FormatNumber(hi, prec) + "]"
}
