package plots

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PathState is one row of paths.csv: a path's congestion state seen by
// one end at a time (ms since the experiment's time zero).
type PathState struct {
	Time           float64
	Vantage        string
	PathID         uint64
	Cwnd, InFlight float64
	State          string
}

// PathStates reads the run's paths.csv.
func (r *Run) PathStates() ([]PathState, error) {
	return readRunFile(r, "paths.csv", readPathStates)
}

func readPathStates(rd io.Reader) ([]PathState, error) {
	need := []string{"time_ms", "vantage", "path_id", "cwnd", "bytes_in_flight", "state"}
	return readCSV(rd, need, func(rec []string, col map[string]int, line int) (PathState, error) {
		var s PathState
		var errs []error
		num := func(c string) float64 {
			v, err := strconv.ParseFloat(rec[col[c]], 64)
			errs = append(errs, err)
			return v
		}
		s.Time, s.Cwnd, s.InFlight = num("time_ms"), num("cwnd"), num("bytes_in_flight")
		id, err := strconv.ParseUint(rec[col["path_id"]], 10, 64)
		errs = append(errs, err)
		if err := errors.Join(errs...); err != nil {
			return s, fmt.Errorf("line %d: %w", line, err)
		}
		s.PathID, s.Vantage, s.State = id, rec[col["vantage"]], rec[col["state"]]
		return s, nil
	})
}

// oneRun is the single run a figure of one run draws.
func oneRun(points []*Point, kind string) (*Run, error) {
	n := CountRuns(points)
	if n != 1 {
		return nil, inputErr("--kind %s draws one run, and %d are selected: give one run's directory (a repetition's, rep0 …) or select one with --where", kind, n)
	}
	return points[0].Runs[0], nil
}

// oneRunEnd is oneRun and the connection end its figure shows (see
// throughputEnd).
func oneRunEnd(points []*Point, kind string, o Options) (*Run, string, error) {
	r, err := oneRun(points, kind)
	if err != nil {
		return nil, "", err
	}
	end, err := throughputEnd(points[0], o)
	return r, end, err
}

// CountRuns counts the runs of the points.
func CountRuns(points []*Point) int {
	n := 0
	for _, p := range points {
		n += len(p.Runs)
	}
	return n
}

// window is the time window [from, to] in ms of a figure of one run:
// the options', else all of the data from 0 to last.
func (o Options) window(last float64) (from, to float64) {
	from, to = 0, last
	if !math.IsNaN(o.From) {
		from = o.From
	}
	if !math.IsNaN(o.To) {
		to = o.To
	}
	return from, to
}

// CwndFigure draws, for one run, each path's congestion window and bytes
// in flight over time, seen by one end (the chosen source's sender by
// default), one panel per path, the stretches in congestion avoidance
// shaded. The values hold from one row of paths.csv to the next (its
// rows are sampled every [output] path_interval, and at every
// congestion state change).
func CwndFigure(points []*Point, o Options) (*Figure, error) {
	r, end, err := oneRunEnd(points, "cwnd", o)
	if err != nil {
		return nil, err
	}
	rows, err := r.PathStates()
	if err != nil {
		return nil, err
	}
	byPath := map[uint64][]PathState{}
	last := 0.0
	for _, s := range rows {
		if s.Vantage == end {
			byPath[s.PathID] = append(byPath[s.PathID], s)
			last = math.Max(last, s.Time)
		}
	}
	if len(byPath) == 0 {
		return nil, inputErr("%s: no path states of the %s in paths.csv", r.Dir, end)
	}
	var ids []uint64
	for id := range byPath {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	from, to := o.window(last)
	st := SchedulerStyle(points[0].Scheduler)
	ymax := 0.0
	// Without --from the axis fits the steady state: the first slow
	// start's peak (often ten times the windows after it) would flatten
	// everything else; the peak is marked where it leaves the panel.
	steady := math.IsNaN(o.From)
	ymaxSteady, anySteady := 0.0, false
	peaks := map[uint64]PathState{}
	var plots []*plot.Plot
	var room []vg.Length // the height the change labels take per panel
	var legends []*rowLegend
	for i, id := range ids {
		ss := byPath[id]
		xlabel := ""
		if i == len(ids)-1 {
			xlabel = "time (s)"
		}
		p := newPlot(xlabel, fmt.Sprintf("path %d (kB)", id))
		if i == 0 {
			p.Title.Text = o.Title
		}
		p.X.Min, p.X.Max = from/1e3, to/1e3
		p.Y.Min = 0
		for _, s := range ss {
			if s.Time >= from && s.Time <= to {
				ymax = math.Max(ymax, math.Max(s.Cwnd, s.InFlight)/1e3)
			}
		}
		if top, peak, ok := steadyTop(ss, from, to); ok {
			ymaxSteady, anySteady = math.Max(ymaxSteady, top), true
			peaks[id] = peak
		}
		p.Add(&caShade{states: ss, color: draw.LineStyle{Color: tint(st.Color, 0.85)}})
		p.Add(gridLines())
		inflight := &stepLine{states: ss, value: func(s PathState) float64 { return s.InFlight / 1e3 }, style: draw.LineStyle{Color: grey, Width: vg.Points(0.5)}}
		cwnd := &stepLine{states: ss, value: func(s PathState) float64 { return s.Cwnd / 1e3 }, style: draw.LineStyle{Color: st.Color, Width: vg.Points(0.9)}}
		p.Add(inflight, cwnd)
		var leg *rowLegend
		if i == 0 {
			leg = newRowLegend(p)
		}
		legends = append(legends, leg)
		marks := addChangeMarks(p, r.Summary, 1, leg)
		room = append(room, marks)
		if i == 0 {
			leg.add("cwnd ("+points[0].Scheduler+", "+end+")", lineThumb{cwnd.style})
			leg.add("bytes in flight", lineThumb{inflight.style})
			leg.add("congestion avoidance", boxThumb{fill: draw.LineStyle{Color: tint(st.Color, 0.85)}})
			p.Add(leg)
		}
		plots = append(plots, p)
	}
	if steady && anySteady && ymaxSteady > 0 && ymaxSteady < ymax {
		ymax = ymaxSteady
		for i, id := range ids {
			if pk, ok := peaks[id]; ok && math.Max(pk.Cwnd, pk.InFlight)/1e3 > ymax*1.05 {
				m := newPeakMark(plots[i], pk, legends[i])
				plots[i].Add(m)
				room[i] += m.height()
			}
		}
	}
	if ymax <= 0 {
		ymax = 1
	}
	for i, p := range plots {
		p.Y.Max = headroom(ymax*1.05, room[i], 1.25*vg.Inch-vg.Points(12))
		if i == 0 {
			p.Y.Max = headroom(ymax*1.3, room[i], 1.25*vg.Inch-vg.Points(12))
		}
	}
	return &Figure{Plots: plots, Width: ColumnWidth, Height: 0.5*vg.Inch + vg.Length(len(plots))*1.25*vg.Inch}, nil
}

// stepLine draws a value of path states as a step function of time in
// seconds, clipped to the plot.
type stepLine struct {
	states []PathState
	value  func(PathState) float64
	style  draw.LineStyle
}

func (l *stepLine) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	var pts []vg.Point
	for i, s := range l.states {
		t := s.Time / 1e3
		if t > plt.X.Max {
			break
		}
		if i+1 < len(l.states) && l.states[i+1].Time/1e3 < plt.X.Min {
			continue
		}
		x := trX(math.Max(t, plt.X.Min))
		if len(pts) > 0 {
			pts = append(pts, vg.Point{X: x, Y: pts[len(pts)-1].Y})
		}
		pts = append(pts, vg.Point{X: x, Y: trY(l.value(s))})
	}
	if len(pts) > 0 {
		last := l.states[len(l.states)-1].Time / 1e3
		pts = append(pts, vg.Point{X: trX(math.Min(plt.X.Max, math.Max(last, plt.X.Min))), Y: pts[len(pts)-1].Y})
	}
	c.StrokeLines(l.style, c.ClipLinesXY(pts)...)
}

// caShade shades the stretches in congestion avoidance: from a row in
// that state to the next row in another.
type caShade struct {
	states []PathState
	color  draw.LineStyle
}

func (s *caShade) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	for _, st := range caStretches(s.states) {
		x0, x1 := trX(math.Max(st[0]/1e3, plt.X.Min)), trX(math.Min(st[1]/1e3, plt.X.Max))
		if x1 > x0 {
			c.FillPolygon(s.color.Color, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		}
	}
}

// caStretches are the stretches [start, end] (ms) in which the path
// states of one path and end are in congestion avoidance (BBR's ProbeBW
// for bbr): from a row in
// that state to the next row in another state, or to the last row.
func caStretches(states []PathState) [][2]float64 {
	var out [][2]float64
	start := math.NaN()
	for _, st := range states {
		ca := st.State == "congestion_avoidance" || st.State == "probe_bw"
		switch {
		case ca && math.IsNaN(start):
			start = st.Time
		case !ca && !math.IsNaN(start):
			out = append(out, [2]float64{start, st.Time})
			start = math.NaN()
		}
	}
	if !math.IsNaN(start) {
		out = append(out, [2]float64{start, states[len(states)-1].Time})
	}
	return out
}

// steadyTop returns the largest window or bytes in flight (kB) of a
// path in [from, to] once its start-up transient is over, and the
// transient's peak: the transient lasts from the start through the first
// slow start (BBR's startup) and until the value first falls to 1.5 times
// the median of what follows the slow start. ok is false when the path
// never leaves its slow start in the window.
func steadyTop(ss []PathState, from, to float64) (top float64, peak PathState, ok bool) {
	v := func(s PathState) float64 { return math.Max(s.Cwnd, s.InFlight) / 1e3 }
	end := -1
	for i, s := range ss {
		if s.State != "slow_start" && s.State != "startup" {
			end = i
			break
		}
	}
	if end < 0 {
		return 0, PathState{}, false
	}
	var after []float64
	for _, s := range ss[end:] {
		if s.Time >= from && s.Time <= to {
			after = append(after, v(s))
		}
	}
	if len(after) == 0 {
		return 0, PathState{}, false
	}
	sorted := append([]float64(nil), after...)
	sort.Float64s(sorted)
	median := sorted[len(sorted)/2]
	settled := false
	for _, s := range ss {
		if s.Time < from || s.Time > to {
			continue
		}
		x := v(s)
		if !settled && s.Time >= ss[end].Time && x <= 1.5*median {
			settled = true
		}
		if settled {
			top = math.Max(top, x)
		} else if x > v(peak) {
			peak = s
		}
	}
	return top, peak, settled && top > 0
}

// peakMark marks a start-up peak above the axis: an arrow pointing up at
// the peak's time, at the top of the panel (under its legend, if any),
// labelled with the peak's window.
type peakMark struct {
	at    PathState
	text  draw.TextStyle
	style draw.LineStyle
	below *rowLegend
}

func newPeakMark(p *plot.Plot, at PathState, below *rowLegend) *peakMark {
	text := p.Legend.TextStyle
	text.Font.Size = vg.Points(6.5)
	text.Color = black
	return &peakMark{at: at, text: text, style: draw.LineStyle{Color: black, Width: vg.Points(0.6)}, below: below}
}

// height is the room the mark takes at the top of the data area.
func (m *peakMark) height() vg.Length { return m.text.Height("M") + vg.Points(2) }

func (m *peakMark) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	x := m.at.Time / 1e3
	if x < plt.X.Min || x > plt.X.Max {
		return
	}
	px, top := trX(x), c.Max.Y
	if m.below != nil {
		top -= m.below.height(c.Max.X - c.Min.X)
	}
	h, head := m.height(), vg.Points(2)
	c.StrokeLine2(m.style, px, top-h, px, top)
	c.StrokeLine2(m.style, px-head, top-head, px, top)
	c.StrokeLine2(m.style, px+head, top-head, px, top)
	label := "start-up peak " + FormatNumber(math.Max(m.at.Cwnd, m.at.InFlight)/1e3, 0) + " kB (--from shows it)"
	c.FillText(m.text, vg.Point{X: px + vg.Points(2.5), Y: top - h}, label)
}
