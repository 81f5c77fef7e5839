package plots

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mpq/mpq/trafficgen"
)

// TimelineFigure draws, for one run and a time window, every packet
// carrying stream data that the chosen source's sender sent, as a tick in
// the lane of its path and class (bulk, priority, copy, retransmission),
// with a cross on the packets declared lost, and above them the source's
// messages from creation to delivery with their completion times: the
// picture that shows why a message was late. The default window is
// around the source's slowest message (one RTT of the fastest path
// before its creation to half of one after its delivery). It reads the
// run's qlog trace of the sender ([output] qlog = true).
func TimelineFigure(points []*Point, o Options) (*Figure, error) {
	r, err := oneRun(points, "timeline")
	if err != nil {
		return nil, err
	}
	src, err := o.source(r.Summary)
	if err != nil {
		return nil, err
	}
	msgs, err := r.Messages()
	if err != nil {
		return nil, err
	}
	var mine []Message
	prio := map[uint64]bool{}
	for _, m := range msgs {
		if m.Source == src.Name {
			mine = append(mine, m)
		}
		if m.Priority && senderOf(r.Summary, m.Source) == src.Sender {
			prio[m.StreamID] = true
		}
	}
	if len(mine) == 0 {
		return nil, inputErr("%s: no messages of source %s", r.Dir, src.Name)
	}
	from, to := timelineWindow(r.Summary, src.Kind, mine, o)
	trace, err := traceOf(r, src.Sender, "the timeline needs the packets")
	if err != nil {
		return nil, err
	}
	marks, err := readPackets(trace, prio, from, to)
	if err != nil {
		return nil, err
	}
	// Lanes: the messages on top, then per path the classes the run has.
	present := map[uint64]*[numClasses]bool{}
	for _, m := range marks {
		if present[m.Path] == nil {
			present[m.Path] = &[numClasses]bool{}
		}
		present[m.Path][m.Class] = true
	}
	var paths []uint64
	for _, p := range r.Summary.Paths {
		paths = append(paths, p.ID)
	}
	sort.Slice(paths, func(i, j int) bool { return paths[i] < paths[j] })
	lane := map[[2]uint64]float64{}
	var ticks []plot.Tick
	y := 0.0
	for i := len(paths) - 1; i >= 0; i-- {
		id := paths[i]
		for c := numClasses - 1; c >= 0; c-- {
			if present[id] == nil || !present[id][c] {
				continue
			}
			lane[[2]uint64{id, uint64(c)}] = y
			ticks = append(ticks, plot.Tick{Value: y, Label: fmt.Sprintf("p%d %s", id, classNames[c])})
			y++
		}
	}
	msgLane := y + 0.3
	ml := newMessageLane(mine, src.Kind, from, to, msgLane)
	ticks = append(ticks, plot.Tick{Value: msgLane + ml.top()/2, Label: "messages"})
	st := SchedulerStyle(schedulerOf(r.Summary))
	p := newPlot("time (ms)", "")
	p.Title.Text = o.Title
	p.X.Min, p.X.Max = from, to
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min = -0.6
	p.Add(gridLines())
	pl := &packetLanes{marks: marks, lane: lane, style: st}
	ml.style = st
	p.Add(pl, ml)
	leg := newRowLegend(p)
	changeRoom := addChangeMarks(p, r.Summary, 1000, leg)
	leg.add(src.Name+": created", glyphThumb{createdGlyph(st)})
	leg.add("delivered", glyphThumb{deliveredGlyph(st)})
	leg.add("lost", glyphThumb{lostGlyph()})
	p.Add(leg)
	top := msgLane + ml.top() + 0.6
	height := 0.7*vg.Inch + vg.Length(top+0.6)*0.22*vg.Inch
	p.Y.Max = headroom(top+0.6, leg.height(dataWidth(ColumnWidth))+changeRoom, height-vg.Points(36)) - 0.6
	return &Figure{Plots: []*plot.Plot{p}, Width: ColumnWidth, Height: height}, nil
}

// senderOf is the end that sends a source's messages.
func senderOf(s *trafficgen.Summary, source string) string {
	for _, src := range s.Sources {
		if src.Name == source {
			return src.Sender
		}
	}
	return ""
}

// timelineWindow is the options' window, else one around the slowest
// message.
func timelineWindow(s *trafficgen.Summary, kind string, msgs []Message, o Options) (from, to float64) {
	rtt := math.Inf(1)
	for _, p := range s.Paths {
		rtt = math.Min(rtt, p.RTTMS)
	}
	if math.IsInf(rtt, 1) || rtt <= 0 {
		rtt = 50
	}
	slow := msgs[0]
	for _, m := range msgs[1:] {
		if timeOf(kind, m) > timeOf(kind, slow) {
			slow = m
		}
	}
	from = slow.Created - rtt
	to = slow.Created + timeOf(kind, slow) + rtt/2
	if math.IsInf(to, 1) {
		to = slow.Created + 10*rtt
	}
	from = math.Max(0, from)
	if !math.IsNaN(o.From) {
		from = o.From
	}
	if !math.IsNaN(o.To) {
		to = o.To
	}
	return from, to
}

func createdGlyph(st Style) draw.GlyphStyle {
	return draw.GlyphStyle{Color: st.Color, Radius: vg.Points(2.5), Shape: draw.TriangleGlyph{}}
}

func deliveredGlyph(st Style) draw.GlyphStyle {
	return draw.GlyphStyle{Color: st.Color, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
}

func lostGlyph() draw.GlyphStyle {
	return draw.GlyphStyle{Color: black, Radius: vg.Points(2.5), Shape: draw.CrossGlyph{}}
}

// packetLanes draws the packets as ticks in their lanes.
type packetLanes struct {
	marks []packetMark
	lane  map[[2]uint64]float64
	style Style
}

func (l *packetLanes) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	// Priority data in the scheduler's colour, bulk data in grey.
	prio, bulk := draw.LineStyle{Color: l.style.Color, Width: vg.Points(0.5)}, draw.LineStyle{Color: grey, Width: vg.Points(0.5)}
	for _, m := range l.marks {
		y := l.lane[[2]uint64{m.Path, uint64(m.Class)}]
		x := trX(m.T)
		if x < c.Min.X || x > c.Max.X {
			continue
		}
		st := bulk
		if m.Priority {
			st = prio
		}
		c.StrokeLine2(st, x, trY(y-0.3), x, trY(y+0.3))
	}
	for _, m := range l.marks {
		if m.Lost {
			pt := vg.Point{X: trX(m.T), Y: trY(l.lane[[2]uint64{m.Path, uint64(m.Class)}])}
			if c.Contains(pt) {
				c.DrawGlyph(lostGlyph(), pt)
			}
		}
	}
}

// messageLane draws each message from its creation to its delivery
// (to the edge when it was not delivered in the window) with its time,
// messages that overlap in time in rows above each other.
type messageLane struct {
	msgs  []Message
	rows  []int
	kind  string
	y     float64
	style Style
}

// rowStep is the distance of two rows of messages, in lanes.
const rowStep = 0.45

// newMessageLane keeps the messages that overlap the window [from, to]
// and gives each the lowest row free at its creation.
func newMessageLane(msgs []Message, kind string, from, to, y float64) *messageLane {
	l := &messageLane{kind: kind, y: y}
	var ends []float64 // per row, the end of its last message
	for _, m := range msgs {
		end := m.Created + timeOf(kind, m)
		if end < from || m.Created > to {
			continue
		}
		row := len(ends)
		for r, e := range ends {
			if e < m.Created {
				row = r
				break
			}
		}
		if row == len(ends) {
			ends = append(ends, end)
		} else {
			ends[row] = end
		}
		l.msgs, l.rows = append(l.msgs, m), append(l.rows, row)
	}
	return l
}

// top is the height of the rows above the lane's position, in lanes.
func (l *messageLane) top() float64 {
	n := 0
	for _, r := range l.rows {
		n = max(n, r)
	}
	return float64(n) * rowStep
}

func (l *messageLane) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	txt := plt.Legend.TextStyle
	txt.Font.Size = 6
	txt.XAlign, txt.YAlign = draw.XRight, draw.YBottom
	line := draw.LineStyle{Color: l.style.Color, Width: vg.Points(1)}
	// The glyphs of each row, to keep the labels of the row below clear of
	// them (issue 37: labels overlapped the markers above).
	glyphs := map[int][]vg.Point{}
	for i, m := range l.msgs {
		end := m.Created + timeOf(l.kind, m)
		y := trY(l.y + rowStep*float64(l.rows[i]))
		if m.Created >= plt.X.Min {
			glyphs[l.rows[i]] = append(glyphs[l.rows[i]], vg.Point{X: trX(m.Created), Y: y})
		}
		if end <= plt.X.Max {
			glyphs[l.rows[i]] = append(glyphs[l.rows[i]], vg.Point{X: trX(end), Y: y})
		}
	}
	for i, m := range l.msgs {
		end := m.Created + timeOf(l.kind, m)
		y := trY(l.y + rowStep*float64(l.rows[i]))
		x0 := trX(math.Max(m.Created, plt.X.Min))
		x1 := trX(math.Min(end, plt.X.Max))
		c.StrokeLine2(line, x0, y, x1, y)
		if m.Created >= plt.X.Min {
			c.DrawGlyph(createdGlyph(l.style), vg.Point{X: x0, Y: y})
		}
		// A message delivered after the window runs to its edge, without
		// its time (which another message's label may hold).
		if end <= plt.X.Max {
			c.DrawGlyph(deliveredGlyph(l.style), vg.Point{X: x1, Y: y})
			label := fmt.Sprintf("%.1f ms", end-m.Created)
			w, h := txt.Width(label), txt.Height(label)
			ly := y + vg.Points(1.5)
			// Above the line at its right end, or at its left end when a
			// marker of the row above is in the way there and not here.
			at, align := x1-vg.Points(3), draw.XRight
			if clash(glyphs[l.rows[i]+1], at-w, at, ly, ly+h) && !clash(glyphs[l.rows[i]+1], x0+vg.Points(3), x0+vg.Points(3)+w, ly, ly+h) {
				at, align = x0+vg.Points(3), draw.XLeft
			}
			t := txt
			t.XAlign = align
			c.FillText(t, vg.Point{X: at, Y: ly}, label)
		}
	}
}

// markerRadius is how far from its point a message's marker reaches.
const markerRadius = 3

// clash says whether a marker at one of pts reaches into the rectangle
// [x0, x1] x [y0, y1].
func clash(pts []vg.Point, x0, x1, y0, y1 vg.Length) bool {
	r := vg.Points(markerRadius)
	for _, p := range pts {
		if p.X+r >= x0 && p.X-r <= x1 && p.Y+r >= y0 && p.Y-r <= y1 {
			return true
		}
	}
	return false
}
