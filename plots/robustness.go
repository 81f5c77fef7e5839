package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// The robustness map (mpq plot --kind robustness, --kind
// robustness-summary) compares every path scheduler of a sweep with
// lowrtt at each grid point, as experiments/robustness runs them.
const (
	// robustnessRef is the scheduler whose goodput a share divides by.
	robustnessRef = "lowrtt"
	// GoalSlackMS is how far above its limit a point's pooled p99.9 may
	// be for the latency goal.
	GoalSlackMS = 2.0
	// ShareGood is the goodput share the summary counts as good.
	ShareGood = 0.95
	// GoalConfidence is the level of the p99.9's interval that decides
	// whether the messages show the goal met or missed.
	GoalConfidence = 0.95
)

// The verdicts of RobustnessCell.Shown.
const (
	ShownMet       = "met"
	ShownMissed    = "missed"
	ShownUndecided = "undecided"
)

// RobustnessCell is one path scheduler at one grid point: whether it met
// the latency goal there and its goodput as a share of lowrtt's.
//
// The latency goal: the pooled p99.9 of the priority source's message
// completion times (every message of every repetition, a failed one
// +Inf; nearest rank) is at most the point's limit plus GoalSlackMS
// (2 ms). The limit is the least, over the paths, of the one-way
// propagation delay from the source's sender plus the message's
// serialization (its length, 32-byte header included, times 8 over the
// path's rate in that direction): the time the message takes alone on
// the faster path (the dashed line of --kind ccdf). A point whose runs
// are not all there (fewer than its sweep's repetitions) does not meet
// the goal.
//
// The goodput share is the bulk source's goodput, the mean over the
// point's repetitions, over lowrtt's at the same point (the same
// experiment and varied values but the path scheduler and its options,
// which lowrtt does not take: pointKey), from the same results
// directory or another.
type RobustnessCell struct {
	// Name is the experiment's, Point the point's varied values but the
	// path scheduler and its options ("shape=base,loss=loss0,..."),
	// Scheduler its path scheduler with those options (schedulerRow).
	Name, Point, Scheduler string
	// Runs are the repetitions found, Repeat those the sweep ran.
	Runs, Repeat int
	// LimitMS is the point's limit, P999MS the pooled p99.9 (+Inf when a
	// message of the tail failed), ExcessMS P999MS - LimitMS.
	LimitMS, P999MS, ExcessMS float64
	// Messages counts the pooled messages, FailedMessages those that
	// failed.
	Messages, FailedMessages int
	// GoalMet: P999MS <= LimitMS + GoalSlackMS with every repetition.
	GoalMet bool
	// P999LoMS and P999HiMS are the p99.9's distribution-free interval
	// of level GoalConfidence (trafficgen.QuantileCI over the pooled
	// messages, taken as independent draws: NaN and +Inf where the
	// messages are too few to bound it). Shown is what the interval
	// shows of the goal: ShownMet when its upper end is within the
	// limit plus GoalSlackMS (and every repetition is there), ShownMissed
	// when its lower end is beyond it (or a repetition is missing),
	// ShownUndecided otherwise. With fewer than 3,688 messages the upper
	// end is +Inf (0.999^n > 0.025): no count of late messages shows the
	// goal met.
	P999LoMS, P999HiMS float64
	Shown              string
	// GoodputMbps is the mean bulk goodput, RefMbps lowrtt's at the
	// point, Share their ratio (NaN when either is missing).
	GoodputMbps, RefMbps, Share float64
	// Failed says why the cell does not meet the goal or has no share
	// when that is not its numbers' doing: repetitions missing, no
	// lowrtt at the point ("" otherwise).
	Failed string
}

// RobustnessLimit is the latency limit of a message of length bytes sent
// by sender ("server" or "client") over the paths of e, in ms: the least
// over the paths of the one-way propagation delay in the sender's
// direction plus length x 8 over that direction's rate.
func RobustnessLimit(e *experiment.Experiment, sender string, length int64) float64 {
	least := math.Inf(1)
	for _, p := range e.Paths {
		l := p.Up
		if sender == "server" {
			l = p.Down
		}
		t := float64(l.Delay) / 1e6
		if l.Rate > 0 {
			t += float64(length) * 8 / l.Rate * 1e3
		}
		least = math.Min(least, t)
	}
	return least
}

// pointKey is the point's varied values without the path scheduler,
// its options and output settings (output.qlog=false given with --set
// changes which files a run writes, not its point of the grid). The
// path scheduler's options (transport.scheduler_options, a sweep's or a
// --set's) belong to the scheduler the point compares (schedulerRow),
// not to where it is: lowrtt takes none of them, so a cwr-plus run with
// an option set (mpq run --set transport.scheduler_options.X=V --out B)
// is of the same grid point as lowrtt's run without it (--out A).
func pointKey(p *Point) string {
	var rest []string
	for _, v := range p.Vary {
		if k, _, _ := strings.Cut(v, "="); k == schedulerKey || strings.HasPrefix(k, "output.") || isSchedulerOption(k) {
			continue
		}
		rest = append(rest, v)
	}
	return strings.Join(rest, ",")
}

// schedulerOptionsKey is the experiment file's table of the path
// scheduler's options; a sweep or --set varies it whole
// ("transport.scheduler_options={horizon=next}") or one key at a time
// ("transport.scheduler_options.horizon=next").
const schedulerOptionsKey = "transport.scheduler_options"

// isSchedulerOption says whether the varied key k sets options of the
// path scheduler.
func isSchedulerOption(k string) bool {
	return k == schedulerOptionsKey || strings.HasPrefix(k, schedulerOptionsKey+".")
}

// schedulerRow names what a robustness point compares: its path
// scheduler followed by the scheduler options its runs vary ("cwr-plus
// careful_start=false", "cwr {horizon=next}"), and by its variant in
// parentheses (Point.Variant).
func schedulerRow(p *Point) string {
	row := p.Scheduler
	for _, v := range p.Vary {
		if k, _, _ := strings.Cut(v, "="); isSchedulerOption(k) {
			v = strings.TrimPrefix(v, schedulerOptionsKey)
			row += " " + strings.TrimPrefix(strings.TrimPrefix(v, "."), "=")
		}
	}
	if p.Variant != "" {
		row += " (" + p.Variant + ")"
	}
	return row
}

// bulkGoodput is the mean over the point's runs of its first bulk
// source's goodput; ok false when a run has no bulk source.
func bulkGoodput(p *Point) (float64, bool) {
	sum := 0.0
	for _, r := range p.Runs {
		i := slices.IndexFunc(r.Summary.Sources, func(s trafficgen.SourceSummary) bool { return s.Kind == experiment.KindBulk })
		if i < 0 {
			return math.NaN(), false
		}
		sum += r.Summary.Sources[i].GoodputMbps
	}
	return sum / float64(len(p.Runs)), true
}

// robustnessRefOf picks the lowrtt point a point's share divides by,
// among those of its grid point: the one of the same variant (see
// Point.Variant: runs of the same grid point in another configuration
// are no reference); others reports that there were lowrtt points of
// other variants only.
func robustnessRefOf(refs []*Point, variant string) (ref *Point, others bool) {
	for _, r := range refs {
		if r.Variant == variant {
			return r, false
		}
	}
	return nil, len(refs) > 0
}

// RobustnessCells computes the cell of every point, in the order of the
// points. Points of the same experiment and varied values but the path
// scheduler and its options (pointKey) form a grid point; each needs a
// lowrtt point for its shares.
func RobustnessCells(points []*Point, o Options) ([]RobustnessCell, error) {
	refs := map[string][]*Point{}
	for _, p := range points {
		if p.Scheduler == robustnessRef {
			k := p.experiment() + "\x00" + pointKey(p)
			refs[k] = append(refs[k], p)
		}
	}
	cells := make([]RobustnessCell, 0, len(points))
	for _, p := range points {
		// Variants of an experiment (Point.Variant) and a scheduler's
		// options share its columns and have rows of their own.
		c := RobustnessCell{Name: p.experiment(), Point: pointKey(p), Scheduler: schedulerRow(p), Runs: len(p.Runs),
			Repeat: p.wantRuns(), Share: math.NaN(), RefMbps: math.NaN()}
		vals, src, err := PooledTimes(p, o)
		if err != nil {
			return nil, err
		}
		if !src.Priority {
			return nil, inputErr("%s: the robustness map needs a priority source (--source %s is not one)", p.Runs[0].Dir, src.Name)
		}
		if len(vals) == 0 {
			return nil, inputErr("%s: source %s has no messages", p.Runs[0].Dir, src.Name)
		}
		e, err := p.Runs[0].Config()
		if err != nil {
			return nil, err
		}
		ms, err := p.Runs[0].Messages()
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(ms, func(m Message) bool { return m.Source == src.Name })
		c.LimitMS = RobustnessLimit(e, src.Sender, ms[i].Length)
		sort.Float64s(vals)
		c.Messages = len(vals)
		for _, v := range vals {
			if math.IsInf(v, 1) {
				c.FailedMessages++
			}
		}
		c.P999MS = trafficgen.NearestRank(vals, 0.999)
		c.ExcessMS = c.P999MS - c.LimitMS
		var why []string
		if c.Runs < c.Repeat {
			why = append(why, fmt.Sprintf("%d of %d repetitions missing", c.Repeat-c.Runs, c.Repeat))
		}
		c.GoalMet = len(why) == 0 && c.P999MS <= c.LimitMS+GoalSlackMS
		c.P999LoMS, c.P999HiMS, _, _ = trafficgen.QuantileCI(vals, 0.999, GoalConfidence)
		switch bound := c.LimitMS + GoalSlackMS; {
		case len(why) > 0 || c.P999LoMS > bound:
			c.Shown = ShownMissed
		case c.P999HiMS <= bound:
			c.Shown = ShownMet
		default:
			c.Shown = ShownUndecided
		}
		g, ok := bulkGoodput(p)
		if !ok {
			return nil, inputErr("%s: the robustness map needs a bulk source", p.Runs[0].Dir)
		}
		c.GoodputMbps = g
		r, others := robustnessRefOf(refs[p.experiment()+"\x00"+c.Point], p.Variant)
		switch {
		case r == nil && others:
			why = append(why, "no "+robustnessRef+" of its own invocation at this point (only of others, in another configuration)")
		case r == nil:
			why = append(why, "no "+robustnessRef+" at this point")
		case len(r.Runs) < r.wantRuns():
			why = append(why, fmt.Sprintf("%s: %d of %d repetitions missing", robustnessRef, r.wantRuns()-len(r.Runs), r.wantRuns()))
		case c.Runs == c.Repeat:
			c.RefMbps, _ = bulkGoodput(r)
			if c.RefMbps > 0 {
				c.Share = c.GoodputMbps / c.RefMbps
			} else {
				why = append(why, robustnessRef+" moved no bulk data")
			}
		}
		c.Failed = strings.Join(why, "; ")
		cells = append(cells, c)
	}
	return cells, nil
}

// RobustnessSummary is one scheduler's line of the summary over the
// cells of the map.
type RobustnessSummary struct {
	Scheduler string
	// Points counts the scheduler's cells; Goal those meeting the
	// latency goal, Good those with a share of at least ShareGood, Both
	// those with both, NoShare those without a share (Failed);
	// ShownMet and ShownMissed those whose p99.9 interval shows the goal
	// met or missed (RobustnessCell.Shown; the rest are undecided).
	Points, Goal, Good, Both, NoShare int
	ShownMet, ShownMissed             int
	// WorstShare is the least share (NaN when none has one) and
	// WorstSharePoint its cell's point; WorstExcessMS the largest
	// p99.9 excess over the limit and WorstExcessPoint its point.
	WorstShare, WorstExcessMS         float64
	WorstSharePoint, WorstExcessPoint string
}

// SummarizeRobustness gives one line per scheduler, in the order of their
// first cells. A cell without a share counts as below ShareGood.
func SummarizeRobustness(cells []RobustnessCell) []RobustnessSummary {
	var out []RobustnessSummary
	idx := map[string]int{}
	for _, c := range cells {
		i, ok := idx[c.Scheduler]
		if !ok {
			i = len(out)
			idx[c.Scheduler] = i
			out = append(out, RobustnessSummary{Scheduler: c.Scheduler, WorstShare: math.NaN(), WorstExcessMS: math.Inf(-1)})
		}
		s := &out[i]
		s.Points++
		good := c.Share >= ShareGood
		if c.GoalMet {
			s.Goal++
		}
		if good {
			s.Good++
		}
		if c.GoalMet && good {
			s.Both++
		}
		switch c.Shown {
		case ShownMet:
			s.ShownMet++
		case ShownMissed:
			s.ShownMissed++
		}
		at := c.Name + ": " + c.Point
		if math.IsNaN(c.Share) {
			s.NoShare++
		} else if math.IsNaN(s.WorstShare) || c.Share < s.WorstShare {
			s.WorstShare, s.WorstSharePoint = c.Share, at
		}
		if c.ExcessMS > s.WorstExcessMS {
			s.WorstExcessMS, s.WorstExcessPoint = c.ExcessMS, at
		}
	}
	return out
}

// RobustnessTable is the table behind the map: one row per cell.
func RobustnessTable(points []*Point, o Options) (*Table, error) {
	cells, err := RobustnessCells(points, o)
	if err != nil {
		return nil, err
	}
	head := []string{"experiment", "point", "scheduler", "runs", "limit ms", "p99.9 ms", "excess ms", "failed messages", "goal met",
		fmt.Sprintf("p99.9 %.0f %% interval ms", GoalConfidence*100), "interval shows the goal", "goodput Mbit/s", "lowrtt Mbit/s", "share", "why"}
	t := &Table{
		MD: [][]string{head},
		CSV: [][]string{{"experiment", "point", "scheduler", "runs", "repeat", "limit_ms", "p999_ms", "excess_ms", "messages", "failed_messages",
			"goal_met", "p999_lo_ms", "p999_hi_ms", "goal_shown", "goodput_mbps", "lowrtt_mbps", "share", "why"}},
	}
	for _, c := range cells {
		t.MD = append(t.MD, []string{c.Name, c.Point, c.Scheduler, fmt.Sprintf("%d/%d", c.Runs, c.Repeat), FormatNumber(c.LimitMS, 1),
			FormatNumber(c.P999MS, 1), FormatNumber(c.ExcessMS, 1), fmt.Sprintf("%d of %d", c.FailedMessages, c.Messages), yesNo(c.GoalMet),
			FormatInterval(c.P999LoMS, c.P999HiMS, 1), c.Shown, FormatNumber(c.GoodputMbps, 1), FormatNumber(c.RefMbps, 1), percentCell(c.Share), c.Failed})
		t.CSV = append(t.CSV, []string{c.Name, c.Point, c.Scheduler, strconv.Itoa(c.Runs), strconv.Itoa(c.Repeat),
			trafficgen.FormatCSV(c.LimitMS), trafficgen.FormatCSV(c.P999MS), trafficgen.FormatCSV(c.ExcessMS), strconv.Itoa(c.Messages),
			strconv.Itoa(c.FailedMessages), strconv.FormatBool(c.GoalMet), trafficgen.FormatCSV(c.P999LoMS), trafficgen.FormatCSV(c.P999HiMS),
			c.Shown, trafficgen.FormatCSV(c.GoodputMbps), trafficgen.FormatCSV(c.RefMbps),
			trafficgen.FormatCSV(c.Share), c.Failed})
	}
	return t, nil
}

// RobustnessSummaryTable is the summary per scheduler over the map's
// cells; with o.By or o.Columns, per scheduler and values of those keys
// (groupedRobustnessSummary).
func RobustnessSummaryTable(points []*Point, o Options) (*Table, error) {
	cells, err := RobustnessCells(points, o)
	if err != nil {
		return nil, err
	}
	if len(o.By) > 0 || o.Columns != "" {
		return groupedRobustnessSummary(points, cells, o)
	}
	md, csv := summaryHead()
	t := &Table{MD: [][]string{append([]string{"scheduler"}, md...)}, CSV: [][]string{append([]string{"scheduler"}, csv...)}}
	for _, s := range SummarizeRobustness(cells) {
		md, csv := summaryRow(s)
		t.MD = append(t.MD, append([]string{s.Scheduler}, md...))
		t.CSV = append(t.CSV, append([]string{s.Scheduler}, csv...))
	}
	return t, nil
}

// summaryHead is the header of a summary line's numbers (summaryRow), in
// Markdown and CSV.
func summaryHead() (md, csv []string) {
	return []string{"points", "goal met", fmt.Sprintf(">= %.0f %% of lowrtt's goodput", ShareGood*100), "both",
			"worst share", "at", "worst p99.9 excess ms", "at", "no share",
			fmt.Sprintf("goal shown met (%.0f %%)", GoalConfidence*100), "shown missed", "undecided"},
		[]string{"points", "goal_met", "share_ge_95", "both", "worst_share", "worst_share_point",
			"worst_excess_ms", "worst_excess_point", "no_share", "goal_shown_met", "goal_shown_missed", "goal_undecided"}
}

// summaryRow is a summary line's numbers, in Markdown and CSV: the same
// counts, the worst share and excess formatted for each.
func summaryRow(s RobustnessSummary) (md, csv []string) {
	counts := func(ns ...int) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = strconv.Itoa(n)
		}
		return out
	}
	head := counts(s.Points, s.Goal, s.Good, s.Both)
	tail := counts(s.NoShare, s.ShownMet, s.ShownMissed, s.Points-s.ShownMet-s.ShownMissed)
	md = slices.Concat(head, []string{percentCell(s.WorstShare), s.WorstSharePoint, FormatNumber(s.WorstExcessMS, 1), s.WorstExcessPoint}, tail)
	csv = slices.Concat(head, []string{trafficgen.FormatCSV(s.WorstShare), s.WorstSharePoint, trafficgen.FormatCSV(s.WorstExcessMS), s.WorstExcessPoint}, tail)
	return md, csv
}

// groupedRobustnessSummary is the robustness summary split by varied
// keys: a line per experiment, value of each key of o.By (in their
// order) and scheduler (schedulerRow), each scheduler's lines together
// (the schedulers in the order of their first cells, and their lines
// in the order of the cells), counting over the points of the other varied keys. Without o.Columns
// a line has the summary's numbers (summaryRow); with it a column per
// value of that key, in the order of the cells, each "both/points": of
// the line's points with that value, those meeting the latency goal at
// a share of at least ShareGood, and all ("–" for none), followed by
// "(N without a share)" when N of them have no lowrtt (RobustnessCell.Failed;
// a --where that leaves lowrtt out leaves every point so). Keys may be
// given by their last part ("congestion"); the path scheduler is no
// key of either, since every line is one scheduler's.
func groupedRobustnessSummary(points []*Point, cells []RobustnessCell, o Options) (*Table, error) {
	key := func(flag, k string) (string, error) {
		full := variedKey(points, k)
		if full == "" || full == schedulerKey {
			return "", inputErr("%s %s: not a key the runs vary but the path scheduler (they vary: %s)", flag, k, strings.Join(variedKeys(points), ", "))
		}
		return full, nil
	}
	var by []string
	for _, k := range o.By {
		full, err := key("--by", k)
		if err != nil {
			return nil, err
		}
		by = append(by, full)
	}
	col := ""
	if o.Columns != "" {
		var err error
		if col, err = key("--columns", o.Columns); err != nil {
			return nil, err
		}
		if slices.Contains(by, col) {
			return nil, inputErr("--columns %s is also a --by key", o.Columns)
		}
	}
	value := func(p *Point, k string) string {
		if v := p.Value(k); v != "" {
			return v
		}
		return notSet
	}
	var rows [][]string
	var values []string
	groups := map[string][]RobustnessCell{} // by row and value
	groupKey := func(row []string, v string) string { return strings.Join(row, "\x00") + "\x00\x00" + v }
	for i, c := range cells {
		row := []string{c.Name}
		for _, k := range by {
			row = append(row, value(points[i], k))
		}
		row = append(row, c.Scheduler)
		if !slices.ContainsFunc(rows, func(r []string) bool { return slices.Equal(r, row) }) {
			rows = append(rows, row)
		}
		v := ""
		if col != "" {
			v = value(points[i], col)
		}
		if !slices.Contains(values, v) {
			values = append(values, v)
		}
		groups[groupKey(row, v)] = append(groups[groupKey(row, v)], c)
	}
	// A scheduler's lines together, the schedulers in the order of their
	// first cells.
	var scheds []string
	for _, c := range cells {
		if !slices.Contains(scheds, c.Scheduler) {
			scheds = append(scheds, c.Scheduler)
		}
	}
	slices.SortStableFunc(rows, func(a, b []string) int {
		return slices.Index(scheds, a[len(a)-1]) - slices.Index(scheds, b[len(b)-1])
	})
	head := []string{"experiment"}
	for _, k := range by {
		head = append(head, shortKey(k))
	}
	head = append(head, "scheduler")
	t := &Table{MD: [][]string{slices.Clone(head)}, CSV: [][]string{slices.Clone(head)}}
	if col == "" {
		md, csv := summaryHead()
		t.MD[0], t.CSV[0] = append(t.MD[0], md...), append(t.CSV[0], csv...)
	}
	for _, v := range values {
		if col != "" {
			t.MD[0] = append(t.MD[0], v)
			t.CSV[0] = append(t.CSV[0], "both["+v+"]", "points["+v+"]")
		}
	}
	for _, row := range rows {
		md, csv := slices.Clone(row), slices.Clone(row)
		for _, v := range values {
			g := groups[groupKey(row, v)]
			switch {
			case col == "":
				m, c := summaryRow(SummarizeRobustness(g)[0])
				md, csv = append(md, m...), append(csv, c...)
			case len(g) == 0:
				md, csv = append(md, "–"), append(csv, "", "0")
			default:
				s := SummarizeRobustness(g)[0]
				cell := fmt.Sprintf("%d/%d", s.Both, s.Points)
				if s.NoShare > 0 { // no lowrtt there (--where may have left it out)
					cell += fmt.Sprintf(" (%d without a share)", s.NoShare)
				}
				md, csv = append(md, cell), append(csv, strconv.Itoa(s.Both), strconv.Itoa(s.Points))
			}
		}
		t.MD, t.CSV = append(t.MD, md), append(t.CSV, csv)
	}
	return t, nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Colours of the map's cells: the goodput share in five bands, and the
// cells without a share.
var shareBands = []struct {
	lo    float64 // the band holds shares >= lo (and below the previous band's lo)
	label string
	c     color.RGBA
}{
	{1.0, ">= 100 %", color.RGBA{0x1a, 0x66, 0x33, 0xff}},
	{ShareGood, "95-100 %", color.RGBA{0x66, 0xbd, 0x63, 0xff}},
	{0.85, "85-95 %", color.RGBA{0xfe, 0xe0, 0x8b, 0xff}},
	{0.5, "50-85 %", color.RGBA{0xf4, 0x6d, 0x43, 0xff}},
	{math.Inf(-1), "< 50 %", color.RGBA{0xa5, 0x00, 0x26, 0xff}},
}

var noShareColour = color.RGBA{0xbb, 0xbb, 0xbb, 0xff}

// shareColour is the colour of a share's band.
func shareColour(v float64) color.Color {
	if math.IsNaN(v) {
		return noShareColour
	}
	for _, b := range shareBands {
		if v >= b.lo {
			return b.c
		}
	}
	return noShareColour
}

// robustnessMap draws the cells: a column per grid point, a row per
// scheduler, filled with the share's colour, a dot where the goal is met;
// thin white lines part the groups of columns.
type robustnessMap struct {
	cells  []RobustnessCell
	col    map[string]int // grid point (name + point) -> column
	row    map[string]int // scheduler -> row from the top
	rows   int
	groups []int // the first column of every group but the first
	key    draw.TextStyle
}

func (m *robustnessMap) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, cell := range m.cells {
		x := float64(m.col[cell.Name+"\x00"+cell.Point])
		y := float64(m.rows - 1 - m.row[cell.Scheduler])
		x0, x1 := tx(x-0.5), tx(x+0.5)
		y0, y1 := ty(y-0.5), ty(y+0.5)
		c.FillPolygon(shareColour(cell.Share), []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		if cell.GoalMet {
			r := min(x1-x0, y1-y0) * 0.22
			c.DrawGlyph(draw.GlyphStyle{Color: color.Black, Radius: r, Shape: draw.CircleGlyph{}}, vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2})
		}
	}
	ls := draw.LineStyle{Color: color.White, Width: vg.Points(1)}
	for _, g := range m.groups {
		x := tx(float64(g) - 0.5)
		c.StrokeLine2(ls, x, ty(-0.5), x, ty(float64(m.rows)-0.5))
	}
	// The key, in one line above the rows.
	side := m.key.Font.Size
	y := ty(float64(m.rows)-0.5+keyRows) - side
	x := c.Min.X
	entry := func(th bandThumb, label string) {
		if w := side + vg.Points(2) + m.key.Width(label); x > c.Min.X && x+w > c.Max.X {
			x, y = c.Min.X, y-side*1.6 // on the next line
		}
		th.Thumbnail(&draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: y - side/2}, Max: vg.Point{X: x + side, Y: y + side/2}}})
		x += side + vg.Points(2)
		sty := m.key
		sty.YAlign = draw.YCenter
		c.FillText(sty, vg.Point{X: x, Y: y}, label)
		x += sty.Width(label) + vg.Points(6)
	}
	entry(bandThumb{}, "goodput / lowrtt's:")
	for _, b := range shareBands {
		entry(bandThumb{c: b.c}, b.label)
	}
	entry(bandThumb{c: noShareColour}, "no result")
	entry(bandThumb{glyph: true}, fmt.Sprintf("goal met: pooled p99.9 <= limit + %g ms", GoalSlackMS))
}

// keyRows is the height of the key above the rows, in rows (two lines
// of it when the map is narrow).
const keyRows = 2.2

func (m *robustnessMap) DataRange() (xmin, xmax, ymin, ymax float64) {
	return -0.5, float64(len(m.col)) - 0.5, -0.5, float64(m.rows) - 0.5 + keyRows
}

// bandThumb is a key entry's filled square (nothing without a colour).
type bandThumb struct {
	c     color.Color
	glyph bool
}

func (b bandThumb) Thumbnail(c *draw.Canvas) {
	if b.c == nil && !b.glyph {
		return
	}
	if b.glyph {
		r := min(c.Max.X-c.Min.X, c.Max.Y-c.Min.Y) * 0.3
		c.DrawGlyph(draw.GlyphStyle{Color: color.Black, Radius: r, Shape: draw.CircleGlyph{}}, c.Center())
		return
	}
	c.FillPolygon(b.c, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}

// fixedTicks labels an axis at given values.
type fixedTicks []plot.Tick

func (t fixedTicks) Ticks(lo, hi float64) []plot.Tick { return t }

// RobustnessFigure draws the robustness map: a row per path scheduler
// (in the order of their first points), a column per grid point (in the
// order of the points), each cell coloured by the scheduler's goodput
// share of lowrtt's at the point and dotted where it meets the latency
// goal (RobustnessCell); grey where there is no share. The columns are
// grouped by the experiment and the values of all but the last two
// varied keys (for experiments/robustness: the message, the path shape
// and the loss; inside a group the queues, and in each the
// controllers).
func RobustnessFigure(points []*Point, o Options) (*Figure, error) {
	cells, err := RobustnessCells(points, o)
	if err != nil {
		return nil, err
	}
	m := &robustnessMap{cells: cells, col: map[string]int{}, row: map[string]int{}}
	var names []string
	for _, c := range cells {
		if _, ok := m.row[c.Scheduler]; !ok {
			m.row[c.Scheduler] = len(m.row)
		}
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	m.rows = len(m.row)
	prefix := commonPrefix(names)
	type group struct {
		label      string
		first, end int
	}
	var groups []group
	for _, c := range cells {
		key := c.Name + "\x00" + c.Point
		if _, ok := m.col[key]; ok {
			continue
		}
		vals := strings.Split(c.Point, ",")
		if c.Point == "" {
			vals = nil
		}
		var lab []string
		if len(names) > 1 {
			lab = append(lab, strings.TrimPrefix(c.Name, prefix))
		}
		for _, v := range vals[:max(len(vals)-2, 0)] {
			_, val, _ := strings.Cut(v, "=")
			lab = append(lab, val)
		}
		label := strings.Join(lab, "\n")
		col := len(m.col)
		m.col[key] = col
		if len(groups) == 0 || groups[len(groups)-1].label != label {
			if len(groups) > 0 {
				m.groups = append(m.groups, col)
			}
			groups = append(groups, group{label: label, first: col})
		}
		groups[len(groups)-1].end = col
	}
	xlabel := ""
	if len(cells) > 0 {
		var keys []string
		for _, v := range strings.Split(cells[0].Point, ",") {
			k, _, _ := strings.Cut(v, "=")
			keys = append(keys, k)
		}
		if len(keys) >= 2 {
			xlabel = fmt.Sprintf("in each group: %s, and within each %s", keys[len(keys)-2], keys[len(keys)-1])
		}
	}
	p := newPlot(xlabel, "")
	p.X.Label.TextStyle.Font.Size = 6
	p.X.Tick.Label.Font.Size = 5
	p.Y.Tick.Label.Font.Size = tickSize
	var xt fixedTicks
	for _, g := range groups {
		xt = append(xt, plot.Tick{Value: float64(g.first+g.end) / 2, Label: g.label})
	}
	p.X.Tick.Marker = xt
	p.X.Tick.Length = 0
	var yt fixedTicks
	for s, r := range m.row {
		yt = append(yt, plot.Tick{Value: float64(m.rows - 1 - r), Label: s})
	}
	sort.Slice(yt, func(i, j int) bool { return yt[i].Value < yt[j].Value })
	p.Y.Tick.Marker = yt
	p.Y.Tick.Length = 0
	p.X.Padding, p.Y.Padding = 0, vg.Points(2)
	m.key = p.Legend.TextStyle
	m.key.Font.Size = 6
	p.Add(m)
	width := max(ColumnWidth, vg.Length(len(m.col))*vg.Points(3.4)+vg.Inch)
	fig := &Figure{Plots: []*plot.Plot{p}, Width: width, Height: (vg.Length(m.rows)+keyRows)*vg.Points(12) + vg.Points(30)}
	return fig, nil
}

// commonPrefix is the longest prefix of every name ending in "-" (""
// for one name).
func commonPrefix(names []string) string {
	if len(names) < 2 {
		return ""
	}
	pre := names[0]
	for _, n := range names[1:] {
		for !strings.HasPrefix(n, pre) {
			pre = pre[:len(pre)-1]
		}
	}
	if i := strings.LastIndex(pre, "-"); i >= 0 {
		return pre[:i+1]
	}
	return ""
}
