package plots

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ThroughputRow is one row of throughput.csv: the bytes of one class that
// an end sent on a path ("sent") or that the receiving application read
// of what the sender sent ("delivered", PathID -1) in the bin starting at
// Time (ms), as Mbit/s.
type ThroughputRow struct {
	Time   float64
	What   string
	Sender string
	PathID int64
	Class  string
	Mbps   float64
	// Bytes is the bin's bytes (NaN in a file without the column).
	Bytes float64
}

// Throughput reads the run's throughput.csv.
func (r *Run) Throughput() ([]ThroughputRow, error) {
	return readRunFile(r, "throughput.csv", readThroughput)
}

func readThroughput(rd io.Reader) ([]ThroughputRow, error) {
	need := []string{"time_ms", "what", "sender", "path_id", "class", "mbps"}
	return readCSV(rd, need, func(rec []string, col map[string]int, line int) (ThroughputRow, error) {
		row := ThroughputRow{What: rec[col["what"]], Sender: rec[col["sender"]], Class: rec[col["class"]], PathID: -1, Bytes: math.NaN()}
		var err error
		if c, ok := col["bytes"]; ok {
			if row.Bytes, err = strconv.ParseFloat(rec[c], 64); err != nil {
				return row, fmt.Errorf("line %d: %w", line, err)
			}
		}
		if row.Time, err = strconv.ParseFloat(rec[col["time_ms"]], 64); err != nil {
			return row, fmt.Errorf("line %d: %w", line, err)
		}
		if row.Mbps, err = strconv.ParseFloat(rec[col["mbps"]], 64); err != nil {
			return row, fmt.Errorf("line %d: %w", line, err)
		}
		if p := rec[col["path_id"]]; p != "" {
			if row.PathID, err = strconv.ParseInt(p, 10, 64); err != nil {
				return row, fmt.Errorf("line %d: %w", line, err)
			}
		}
		return row, nil
	})
}

// ThroughputTimeFigure draws, for one run, the throughput of one end over
// time (the chosen source's sender by default, else the server): the
// stream bytes it sent on each path per bin of [output] interval (both
// classes, retransmissions and copies included), and the goodput, the
// bytes the other end's application read of what it sent; and each
// competitor's goodput. The run's scheduled link changes are marked.
func ThroughputTimeFigure(points []*Point, o Options) (*Figure, error) {
	r, end, err := oneRunEnd(points, "throughput-time", o)
	if err != nil {
		return nil, err
	}
	rows, err := r.Throughput()
	if err != nil {
		return nil, err
	}
	// Series by name, each bin the sum of its classes.
	series := map[string]map[float64]float64{}
	add := func(name string, row ThroughputRow) {
		if series[name] == nil {
			series[name] = map[float64]float64{}
		}
		series[name][row.Time] += row.Mbps
	}
	last := 0.0
	for _, row := range rows {
		if name, ok := strings.CutPrefix(row.Sender, "competitor:"); ok && row.What == "delivered" && !strings.Contains(name, ":") {
			add(name+" (competitor)", row)
			last = math.Max(last, row.Time)
			continue
		}
		if row.Sender != end {
			continue
		}
		switch row.What {
		case "sent":
			add(fmt.Sprintf("path %d", row.PathID), row)
		case "delivered":
			add("goodput", row)
		default:
			continue
		}
		last = math.Max(last, row.Time)
	}
	if len(series) == 0 {
		return nil, inputErr("%s: no throughput of the %s in throughput.csv", r.Dir, end)
	}
	bin := binWidth(rows)
	from, to := o.window(last + bin)
	p := newPlot("time (s)", "throughput, "+end+" (Mbit/s)")
	p.Title.Text = o.Title
	p.X.Min, p.X.Max = from/1e3, to/1e3
	p.Y.Min = 0
	p.Add(gridLines())
	names := make([]string, 0, len(series))
	for n := range series {
		names = append(names, n)
	}
	// The goodput first, then the paths in order.
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "goodput") != (names[j] == "goodput") {
			return names[i] == "goodput"
		}
		return names[i] < names[j]
	})
	leg := newRowLegend(p)
	ymax := 0.0
	st := SchedulerStyle(points[0].Scheduler)
	for i, n := range names {
		xys := binSteps(series[n], bin, from, to)
		for _, xy := range xys {
			ymax = math.Max(ymax, xy.Y)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.LineStyle = draw.LineStyle{Color: st.Color, Width: vg.Points(1.1)}
		if strings.HasSuffix(n, " (competitor)") {
			l.LineStyle = draw.LineStyle{Color: competitorColor, Width: vg.Points(1.1), Dashes: []vg.Length{vg.Points(4), vg.Points(1.5)}}
		} else if n != "goodput" {
			l.LineStyle = draw.LineStyle{Color: grey, Width: vg.Points(0.7), Dashes: dashStyles[(i-1+len(dashStyles))%len(dashStyles)]}
		}
		p.Add(l)
		leg.add(n, lineThumb{l.LineStyle})
	}
	marks := addChangeMarks(p, r.Summary, 1, leg)
	p.Add(leg)
	if ymax <= 0 {
		ymax = 1
	}
	height := 2.5 * vg.Inch
	p.Y.Max = headroom(ymax*1.05, leg.height(dataWidth(ColumnWidth))+marks, height-vg.Points(36))
	return &Figure{Plots: []*plot.Plot{p}, Width: ColumnWidth, Height: height}, nil
}

// binWidth is the bin of throughput.csv in ms: the least gap between two
// bin starts (100 ms if it cannot tell).
func binWidth(rows []ThroughputRow) float64 {
	times := map[float64]bool{}
	for _, r := range rows {
		times[r.Time] = true
	}
	var ts []float64
	for t := range times {
		ts = append(ts, t)
	}
	sort.Float64s(ts)
	w := math.Inf(1)
	for i := 1; i < len(ts); i++ {
		w = math.Min(w, ts[i]-ts[i-1])
	}
	if math.IsInf(w, 1) || w <= 0 {
		return 100
	}
	return w
}

// binSteps is a series of bins (start in ms -> Mbit/s) as a step line in
// seconds over [from, to) ms; a bin missing from the file is zero.
func binSteps(bins map[float64]float64, bin, from, to float64) plotter.XYs {
	byIndex := map[int64]float64{}
	for t, v := range bins {
		byIndex[int64(math.Round(t/bin))] += v
	}
	var xys plotter.XYs
	for k := int64(math.Floor(from / bin)); float64(k)*bin < to; k++ {
		t, v := float64(k)*bin, byIndex[k]
		xys = append(xys, plotter.XY{X: math.Max(t, from) / 1e3, Y: v}, plotter.XY{X: math.Min(t+bin, to) / 1e3, Y: v})
	}
	return xys
}
