package experiment

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mpq/mpq/internal/names"
	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/scheduler"
)

// table reads one TOML table against its schema, recording errors with
// the key's line and remembering which keys it used.
type table struct {
	d      *document
	prefix string // dotted path of the table, "" for the root
	m      map[string]any
	used   map[string]bool
	// failed keys get one problem each: a value that did not parse is not
	// also reported as out of range.
	failed map[string]bool
	errs   *Errors
}

func (d *document) table(prefix string, m map[string]any, errs *Errors) *table {
	return &table{d: d, prefix: prefix, m: m, used: map[string]bool{}, failed: map[string]bool{}, errs: errs}
}

func (t *table) path(key string) string {
	if t.prefix == "" {
		return key
	}
	return t.prefix + "." + key
}

// fail records a problem with a key of the table.
func (t *table) fail(key, format string, args ...any) {
	if t.failed[key] {
		return
	}
	t.failed[key] = true
	p := t.path(key)
	e := &Error{File: t.d.file, Key: p, Msg: fmt.Sprintf(format, args...)}
	if o, ok := t.d.origins[p]; ok {
		e.Origin, e.Line = o.Origin, o.Line
	} else {
		e.Line = t.d.lines[p]
		if e.Line == 0 {
			e.Line = t.d.lines[t.prefix]
		}
	}
	*t.errs = append(*t.errs, e)
}

func (t *table) get(key string) (any, bool) {
	t.used[key] = true
	v, ok := t.m[key]
	return v, ok
}

// done reports the keys the schema does not know.
func (t *table) done() {
	var unknown []string
	for k := range t.m {
		if !t.used[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	// Every key the schema asked for, present or not, is a known one.
	known := make([]string, 0, len(t.used))
	for k := range t.used {
		known = append(known, k)
	}
	sort.Strings(known)
	for _, k := range unknown {
		if s := names.Closest(k, known); s != "" {
			t.fail(k, "unknown key; did you mean %q?", s)
			continue
		}
		t.fail(k, "unknown key")
	}
}

func (t *table) str(key, def string, allowed ...string) string {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	s, ok := v.(string)
	if !ok {
		t.fail(key, "want a string, got %v", v)
		return def
	}
	if len(allowed) > 0 {
		for _, a := range allowed {
			if s == a {
				return s
			}
		}
		t.fail(key, "%q is not one of %s", s, strings.Join(allowed, ", "))
		return def
	}
	return s
}

// name reads a string key that must be one of a registry's names; check
// returns the problem with a name, or "".
func (t *table) name(key, def string, check func(string) string) string {
	s := t.str(key, def)
	if _, given := t.m[key]; !given || t.failed[key] {
		return s
	}
	if msg := check(s); msg != "" {
		t.fail(key, "%s", msg)
		return def
	}
	return s
}

func (t *table) boolean(key string, def bool) bool {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		t.fail(key, "want true or false, got %v", v)
		return def
	}
	return b
}

func (t *table) integer(key string, def, lo, hi int64) int64 {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case float64:
		if x != math.Trunc(x) {
			t.fail(key, "want a whole number, got %v", x)
			return def
		}
		n = int64(x)
	case string:
		p, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			t.fail(key, "want a whole number, got %q", x)
			return def
		}
		n = p
	default:
		t.fail(key, "want a whole number, got %v", v)
		return def
	}
	if n < lo || n > hi {
		t.fail(key, "%d outside [%d, %d]", n, lo, hi)
		return def
	}
	return n
}

func (t *table) duration(key string, def time.Duration) time.Duration {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	s, ok := v.(string)
	if !ok {
		if n, ok := v.(int64); ok && n == 0 {
			return 0 // zero needs no unit
		}
		t.fail(key, "want a duration with a unit, e.g. \"50ms\", got %v", v)
		return def
	}
	d, err := ParseDuration(s)
	if err != nil {
		t.fail(key, "%v", err)
		return def
	}
	return d
}

func (t *table) size(key string, def int64) int64 {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	switch x := v.(type) {
	case int64:
		if x < 0 {
			t.fail(key, "size %d is negative", x)
			return def
		}
		return x
	case string:
		n, err := ParseSize(x)
		if err != nil {
			t.fail(key, "%v", err)
			return def
		}
		return n
	}
	t.fail(key, "want a size, e.g. \"10kB\" or 10000, got %v", v)
	return def
}

func (t *table) rate(key string, def float64) float64 {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	s, ok := v.(string)
	if !ok {
		if n, ok := v.(int64); ok && n == 0 {
			return 0
		}
		t.fail(key, "want a rate with a unit, e.g. \"100Mbit\", got %v", v)
		return def
	}
	r, err := ParseRate(s)
	if err != nil {
		t.fail(key, "%v", err)
		return def
	}
	return r
}

func (t *table) fraction(key string, def float64) float64 {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	var f float64
	var err error
	switch x := v.(type) {
	case string:
		f, err = ParseFraction(x)
	case float64:
		f, err = ParseFraction(strconv.FormatFloat(x, 'g', -1, 64))
	case int64:
		f, err = ParseFraction(strconv.FormatInt(x, 10))
	default:
		err = fmt.Errorf("want a probability, e.g. \"0.05%%\", got %v", v)
	}
	if err != nil {
		t.fail(key, "%v", err)
		return def
	}
	return f
}

// figures reads output.figures: an array of distinct figure file names
// (checkFigure).
func (t *table) figures(key string) []string {
	v, ok := t.get(key)
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		t.fail(key, "want an array of file names, such as [\"ratio.pdf\", \"ratio.png\"]")
		return nil
	}
	// Every bad entry is reported, not only the first (one error: a key
	// fails once).
	var out, probs []string
	for _, x := range arr {
		name, ok := x.(string)
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("want an array of file names, got the element %v", x))
		case checkFigure(name) != "":
			probs = append(probs, checkFigure(name))
		case slices.Contains(out, name):
			probs = append(probs, fmt.Sprintf("%q is named twice", name))
		default:
			out = append(out, name)
		}
	}
	if len(probs) > 0 {
		// The good entries are still returned: Parse checks them
		// against the sweep (a figure of one run) in the same pass.
		t.fail(key, "%s", strings.Join(probs, "; "))
	}
	return out
}

func (t *table) sub(key string) *table {
	v, ok := t.get(key)
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.fail(key, "want a table")
		return nil
	}
	return t.d.table(t.path(key), m, t.errs)
}

func (t *table) array(key string) []*table {
	v, ok := t.get(key)
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		t.fail(key, "want [[%s]] tables", key)
		return nil
	}
	out := make([]*table, 0, len(arr))
	for i, x := range arr {
		m, ok := x.(map[string]any)
		if !ok {
			t.fail(key, "element %d is not a table", i)
			continue
		}
		out = append(out, t.d.table(t.path(key)+"."+strconv.Itoa(i), m, t.errs))
	}
	return out
}

// convert checks the document against the schema and resolves it.
func (d *document) convert() (Experiment, Errors) {
	var errs Errors
	root := d.table("", d.root, &errs)
	e := Experiment{File: d.file}
	e.Name = root.str("name", "")
	if e.Name == "" {
		if _, ok := d.root["name"]; !ok {
			errs = append(errs, &Error{File: d.file, Key: "name", Msg: "missing (every experiment needs a name)"})
		}
	}
	e.Description = root.str("description", "")
	e.Duration = root.duration("duration", 60*time.Second)
	if e.Duration <= 0 {
		root.fail("duration", "must be positive")
	}
	e.Seed = uint64(root.integer("seed", 1, 0, math.MaxInt64))
	e.Backend = root.name("backend", BackendSim, checkBackend)
	for i, bt := range root.array("bottleneck") {
		e.Bottlenecks = append(e.Bottlenecks, convertBottleneck(bt, i))
	}
	for _, pt := range root.array("path") {
		e.Paths = append(e.Paths, convertPath(pt))
	}
	if len(e.Paths) == 0 {
		if _, ok := d.root["path"]; !ok {
			errs = append(errs, &Error{File: d.file, Key: "path", Msg: "missing: give at least one [[path]]"})
		}
	}
	if len(e.Paths) > 8 {
		root.fail("path", "%d paths; at most 8", len(e.Paths))
	}
	checkAddrs(root, &e)
	resolveBottlenecks(root, &e)
	checkChanges(root, &e)
	var maxRTT time.Duration
	for _, p := range e.Paths {
		maxRTT = max(maxRTT, p.RTT())
	}
	e.Drain = root.duration("drain", DefaultDrain(maxRTT))
	e.Repeat = int(root.integer("repeat", 1, 1, MaxRepeat))
	tt := root.sub("transport")
	e.Transport = convertTransport(tt, e.Backend)
	names := map[string]bool{}
	for i, st := range root.array("source") {
		s := convertSource(st, i)
		if names[s.Name] {
			st.fail("name", "source name %q used twice", s.Name)
		}
		names[s.Name] = true
		if s.Start >= e.Duration {
			st.fail("start", "%v is not before the end of the experiment (%v)", s.Start, e.Duration)
		}
		e.Sources = append(e.Sources, s)
	}
	if len(e.Sources) == 0 {
		if _, ok := d.root["source"]; !ok {
			errs = append(errs, &Error{File: d.file, Key: "source", Msg: "missing: give at least one [[source]]"})
		}
	}
	for i, ct := range root.array("competitor") {
		e.Competitors = append(e.Competitors, convertCompetitor(ct, i, &e))
	}
	checkCompetitors(root, &e)
	e.Output = Output{Interval: 100 * time.Millisecond, PathInterval: 10 * time.Millisecond, Series: true}
	if ot := root.sub("output"); ot != nil {
		e.Output.Qlog = ot.boolean("qlog", false)
		e.Output.Series = ot.boolean("series", true)
		e.Output.Interval = ot.duration("interval", e.Output.Interval)
		if e.Output.Interval <= 0 {
			ot.fail("interval", "must be positive")
		}
		e.Output.PathInterval = ot.duration("path_interval", e.Output.PathInterval)
		e.Output.Warmup = ot.duration("warmup", 0)
		e.Output.Figures = ot.figures("figures")
		if e.Output.Warmup < 0 || e.Output.Warmup >= e.Duration {
			ot.fail("warmup", "%v is not in [0, duration = %v)", e.Output.Warmup, e.Duration)
		}
		ot.done()
	}
	checkKind(root, tt, &e)
	root.done()
	return e, errs
}

// MaxRepeat bounds the repeat key.
const MaxRepeat = 10000

// DefaultDrain is the drain period of an experiment whose slowest path has
// the round-trip propagation delay maxRTT: 2 s, or ten round trips of that
// path if longer, room for several retransmissions with backed-off probe
// timeouts.
func DefaultDrain(maxRTT time.Duration) time.Duration {
	return max(2*time.Second, 10*maxRTT)
}

// Link keys, accepted in [[path]] (both directions) and in its [path.up]
// and [path.down] overrides.
func readLink(t *table, l Link, rttKey bool) (Link, time.Duration) {
	var rtt time.Duration
	if rttKey {
		rtt = t.duration("rtt", 50*time.Millisecond)
	}
	l.Rate = t.rate("rate", l.Rate)
	if _, ok := t.m["delay"]; ok {
		l.Delay = t.duration("delay", l.Delay)
	}
	l.Loss = t.fraction("loss", l.Loss)
	l.LossModel = t.str("loss_model", l.LossModel, "bernoulli", "gilbert")
	if v, ok := t.get("burst"); ok {
		switch x := v.(type) {
		case float64:
			l.BurstLength = x
		case int64:
			l.BurstLength = float64(x)
		default:
			t.fail("burst", "want the mean loss burst length in packets, got %v", v)
		}
		if l.BurstLength < 1 {
			t.fail("burst", "mean burst length %v below 1 packet", l.BurstLength)
		}
	}
	if q, bdp, ok := readQueue(t); ok {
		l.QueueBytes, l.QueueBDP = q, bdp
	}
	l.Jitter = t.duration("jitter", l.Jitter)
	return l, rtt
}

// readQueue reads a queue key: bytes ("256kB", 262144) or a multiple of
// the path's bandwidth-delay product ("1bdp"); ok says it was given.
func readQueue(t *table) (bytes int64, bdp float64, ok bool) {
	v, ok := t.get("queue")
	if !ok {
		return 0, 0, false
	}
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(strings.ToLower(x))
		if strings.HasSuffix(s, "bdp") {
			f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "bdp")), 64)
			if err != nil || !(f > 0) || math.IsInf(f, 0) {
				t.fail("queue", "bad queue %q (want bytes, e.g. \"256kB\", or a multiple of the BDP, e.g. \"1bdp\")", x)
			}
			bdp = f
		} else {
			n, err := ParseSize(x)
			if err != nil || n <= 0 {
				t.fail("queue", "bad queue %q (want bytes, e.g. \"256kB\", or a multiple of the BDP, e.g. \"1bdp\")", x)
			}
			bytes = n
		}
	case int64:
		if x <= 0 {
			t.fail("queue", "queue must be positive")
		}
		bytes = x
	default:
		t.fail("queue", "want bytes or a multiple of the BDP, got %v", v)
	}
	return bytes, bdp, true
}

func convertPath(t *table) Path {
	base := Link{Rate: 100e6, LossModel: "bernoulli", BurstLength: 1, QueueBDP: 1}
	base, rtt := readLink(t, base, true)
	if _, ok := t.m["delay"]; !ok {
		base.Delay = rtt / 2
	} else if _, ok := t.m["rtt"]; ok {
		t.fail("delay", "give either rtt (round trip) or delay (one way), not both")
	}
	p := Path{Up: base, Down: base}
	readAddrs(t, &p)
	p.Bottleneck = t.str("bottleneck", "")
	p.Backup = t.boolean("backup", false)
	ut, dt := t.sub("up"), t.sub("down")
	if ut != nil {
		p.Up, _ = readLink(ut, p.Up, false)
		ut.done()
	}
	if dt != nil {
		p.Down, _ = readLink(dt, p.Down, false)
		dt.done()
	}
	readTraces(t, &p, ut, dt)
	if p.Up.LossModel == "gilbert" && p.Up.Loss >= 1 || p.Down.LossModel == "gilbert" && p.Down.Loss >= 1 {
		t.fail("loss", "a Gilbert-Elliott loss rate must be below 100%%")
	}
	for _, ct := range t.array("change") {
		p.Changes = append(p.Changes, convertChange(ct, p))
	}
	t.done()
	return p
}

// convertSlowStart reads transport.slow_start for the congestion
// controller cc: its default when not set, refused for a controller
// without a slow start (bbr).
func convertSlowStart(t *table, cc string) string {
	def := string(congestion.DefaultSlowStart(cc))
	s := t.name("slow_start", def, func(s string) string {
		return names.Check("slow start", s, congestion.SlowStarts())
	})
	if _, given := t.m["slow_start"]; given && def == "" && !t.failed["slow_start"] {
		t.fail("slow_start", "congestion = %q has no slow start to choose (its startup is its own)", cc)
		return def
	}
	return s
}

// MinReceiveWindow is the smallest transport.receive_window: 16 KiB, a
// dozen full packets.
const MinReceiveWindow = 16 << 10

// MaxInitialReceiveWindow is the largest transport.initial_receive_window:
// the default maximum a stream's receive window grows to, 16 MiB.
const MaxInitialReceiveWindow = 16 << 20

// followsStreamWindowByDefault is transport.conn_window_follows_stream's
// default: on where the path scheduler relies on it
// (scheduler.FollowsStreamWindow: cwr-plus's credit), on mpq's own
// transport with windows that grow.
func (tr *Transport) followsStreamWindowByDefault() bool {
	return tr.Kind == KindMPQ && tr.ReceiveWindow == 0 && scheduler.FollowsStreamWindow(tr.PathScheduler, tr.SchedulerOptions)
}

func convertTransport(t *table, backend string) Transport {
	tr := Transport{Kind: KindMPQ, Connection: ConnectionShared, PathScheduler: scheduler.DefaultPath, StreamScheduler: scheduler.DefaultStream, Congestion: "newreno", NewRenoGrowth: string(congestion.GrowthPerAck),
		SlowStart:     string(congestion.SlowStartStandard),
		MaxPacketSize: 1350, Multipath: true, InitialRTT: 333 * time.Millisecond, PathFailure: true,
		SimNullProtection: DefaultSimNullProtection(backend)}
	if t == nil {
		return tr
	}
	tr.SimNullProtection = t.boolean("sim_null_protection", tr.SimNullProtection)
	if tr.SimNullProtection && backend != BackendSim {
		t.fail("sim_null_protection", "the null packet protection is for backend = \"sim\" only; backend %q always protects its packets with TLS's cipher suite", backend)
	}
	tr.PathScheduler = t.name("path_scheduler", tr.PathScheduler, func(s string) string {
		return names.Check("path scheduler", s, scheduler.PathSchedulers())
	})
	tr.SchedulerOptions = schedulerOptions(t, tr.PathScheduler)
	tr.StreamScheduler = t.name("stream_scheduler", tr.StreamScheduler, func(s string) string {
		return names.Check("stream scheduler", s, scheduler.StreamSchedulers())
	})
	tr.Congestion = t.name("congestion", tr.Congestion, CheckCongestion)
	tr.NewRenoGrowth = t.name("newreno_growth", tr.NewRenoGrowth, func(s string) string {
		return names.Check("NewReno growth", s, congestion.Growths())
	})
	if tr.NewRenoGrowth != string(congestion.GrowthPerAck) && !congestion.IsNewReno(tr.Congestion) {
		t.fail("newreno_growth", "%q applies to newreno, newreno-cwl and newreno-cwl-ss, not congestion = %q", tr.NewRenoGrowth, tr.Congestion)
	}
	tr.SlowStart = convertSlowStart(t, tr.Congestion)
	tr.CongestionReadings = convertReadings(t, tr.Congestion)
	tr.MaxPacketSize = int(t.integer("max_packet_size", int64(tr.MaxPacketSize), 1200, 65527))
	tr.Pacing = t.boolean("pacing", tr.Pacing)
	tr.Multipath = t.boolean("multipath", tr.Multipath)
	tr.InitialRTT = t.duration("initial_rtt", tr.InitialRTT)
	if tr.InitialRTT <= 0 {
		t.fail("initial_rtt", "must be positive")
	}
	tr.PathFailure = t.boolean("path_failure", tr.PathFailure)
	tr.ReceiveWindow = t.size("receive_window", 0)
	if tr.ReceiveWindow != 0 && tr.ReceiveWindow < MinReceiveWindow {
		t.fail("receive_window", "%d bytes is below the least a run admits, %d (0: the default, growing windows)", tr.ReceiveWindow, MinReceiveWindow)
	}
	tr.InitialReceiveWindow = t.size("initial_receive_window", 0)
	switch {
	case tr.InitialReceiveWindow != 0 && tr.InitialReceiveWindow < MinReceiveWindow:
		t.fail("initial_receive_window", "%d bytes is below the least a run admits, %d (0: the default, 512 KiB)", tr.InitialReceiveWindow, MinReceiveWindow)
	case tr.InitialReceiveWindow > MaxInitialReceiveWindow:
		t.fail("initial_receive_window", "%d bytes is above the windows' default maximum, %d (transport.receive_window fixes a window of any size)", tr.InitialReceiveWindow, MaxInitialReceiveWindow)
	case tr.InitialReceiveWindow != 0 && tr.ReceiveWindow != 0:
		t.fail("initial_receive_window", "set with receive_window, which fixes the windows: give one of the two")
	}
	tr.SendBelowWindow = t.boolean("send_below_window", false)
	tr.ZeroRTT = t.boolean("zero_rtt", tr.ZeroRTT)
	tr.Kind = t.str("kind", tr.Kind, TransportKinds()...)
	// REPAIR is offered by default when the path scheduler sends parity
	// (cwr-plus's parity), on mpq's own transport.
	tr.Repair = t.boolean("repair", tr.Kind == KindMPQ && scheduler.OffersRepair(tr.PathScheduler, tr.SchedulerOptions))
	tr.ConnWindowFollowsStream = t.boolean("conn_window_follows_stream", tr.followsStreamWindowByDefault())
	if tr.ConnWindowFollowsStream && tr.ReceiveWindow != 0 {
		t.fail("conn_window_follows_stream", "set with receive_window, which fixes the windows: they do not grow")
	}
	tr.TCPCongestion = t.str("tcp_congestion", "")
	tr.Connection = t.str("connection", tr.Connection, ConnectionModes()...)
	if tr.Connection == ConnectionPool {
		// Set for the pool alone (checkConnection refuses the keys
		// without it), so that the other modes' configurations stay as
		// they were.
		tr.PoolIdleTimeout = t.duration("pool_idle_timeout", DefaultPoolIdleTimeout) // 0: never
		tr.PoolMaxIdle = int(t.integer("pool_max_idle", DefaultPoolMaxIdle, 0, 1<<20))
	} else {
		t.used["pool_idle_timeout"], t.used["pool_max_idle"] = true, true
	}
	tr.PathAbandonAfter = t.duration("path_abandon_after", tr.PathAbandonAfter)
	if tr.PathAbandonAfter < 0 {
		t.fail("path_abandon_after", "must not be negative (0: never abandon a failed path)")
	}
	t.done()
	return tr
}

// convertReadings reads the congestion controllers' readings of another
// implementation (transport.initial_window, emulated_connections,
// loss_reduction, cwnd_limited, rto_collapse, cubic_target,
// olia_best_overflow: MPQUIC's;
// cubic_alpha: RFC 9438's or Linux's against ours) and checks them
// against the controller cc.
func convertReadings(t *table, cc string) congestion.Readings {
	r := congestion.Readings{
		InitialWindow:       int(t.integer("initial_window", 0, 0, 1<<20)),
		EmulatedConnections: int(t.integer("emulated_connections", 1, 1, 64)),
		LossReduction:       t.fraction("loss_reduction", 0),
		CwndLimited:         t.boolean("cwnd_limited", false),
		RTOCollapse:         t.boolean("rto_collapse", false),
		CubicAlpha:          congestion.CubicAlphaRule(t.str("cubic_alpha", "wmax", congestion.CubicAlphaRules()...)),
		CubicTarget:         t.boolean("cubic_target", false),
		OLIABestOverflow:    t.boolean("olia_best_overflow", false),
	}
	if r.CubicAlpha == "wmax" {
		r.CubicAlpha = congestion.CubicAlphaWMax
	}
	if r.EmulatedConnections == 1 {
		r.EmulatedConnections = 0 // one connection: the published algorithm
	}
	if _, set := t.m["loss_reduction"]; set && (r.LossReduction <= 0 || r.LossReduction >= 1) {
		t.fail("loss_reduction", "%g is outside (0, 1): the window is multiplied by it on a congestion event", r.LossReduction)
	}
	if t.failed["congestion"] {
		return r
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"emulated_connections", r.EmulatedConnections > 1}, {"loss_reduction", r.LossReduction != 0}, {"cwnd_limited", r.CwndLimited}, {"rto_collapse", r.RTOCollapse}} {
		if k.set && cc == "bbr" {
			t.fail(k.key, "applies to the loss-based controllers, not congestion = \"bbr\"")
		}
	}
	if _, set := t.m["cubic_alpha"]; set && cc != "cubic" && !t.failed["cubic_alpha"] {
		t.fail("cubic_alpha", "applies to congestion = \"cubic\", not %q", cc)
	}
	if r.CubicTarget && cc != "cubic" {
		t.fail("cubic_target", "applies to congestion = \"cubic\", not %q", cc)
	}
	if r.OLIABestOverflow && cc != "olia" {
		t.fail("olia_best_overflow", "applies to congestion = \"olia\", not %q", cc)
	}
	if r.LossReduction != 0 && cc == "balia" {
		t.fail("loss_reduction", "balia's reduction on a loss is its own; it takes no loss_reduction")
	}
	return r
}

// schedulerOptions checks transport.scheduler_options against the options
// of the path scheduler sched and returns them resolved. When the
// scheduler comes from a [sweep] (or --sweep), options it does not have
// are left out for it (they are meant for the other schedulers of the
// sweep), unless no scheduler has them.
func schedulerOptions(t *table, sched string) scheduler.Options {
	if t.failed["path_scheduler"] {
		t.get("scheduler_options")
		return nil
	}
	var set map[string]any
	st := t.sub("scheduler_options")
	if st != nil {
		set = map[string]any{}
		origin := t.d.origins[t.path("path_scheduler")].Origin
		swept := origin == "[sweep]" || strings.HasPrefix(origin, "[[sweep.") || strings.HasPrefix(origin, "--sweep ")
		own := scheduler.PathOptions(sched)
		for k, v := range st.m {
			st.used[k] = true
			mine := slices.ContainsFunc(own, func(o scheduler.Option) bool { return o.Name == k })
			if !mine && swept && len(scheduler.HasOption(k)) > 0 {
				continue
			}
			set[k] = v
		}
	}
	opts, errs := scheduler.ResolvePathOptions(sched, set)
	for _, e := range errs {
		msg := e.Msg
		if others := scheduler.HasOption(e.Key); len(others) > 0 && !slices.Contains(others, sched) {
			verb := "has"
			if len(others) > 1 {
				verb = "have"
			}
			msg = fmt.Sprintf("path scheduler %q has no option %q (%s %s it)", sched, e.Key, strings.Join(others, ", "), verb)
		}
		st.fail(e.Key, "%s", msg)
	}
	if len(opts) == 0 {
		return nil // a scheduler without options
	}
	return opts
}

// sourceKeys lists the keys each kind accepts besides name, kind, start,
// stop and priority.
var sourceKeys = map[string][]string{
	KindPeriodic:        {"interval", "size", "count", "announce"},
	KindBulk:            {"size"},
	KindRequestResponse: {"interval", "size", "reply_size", "count"},
	KindFile:            {"size", "count", "interval"},
	KindFrames:          {"interval", "size", "reply_size", "count"},
	KindStopAndWait:     {"size", "count", "timeout"},
}

func convertSource(t *table, i int) Source {
	s := Source{Name: t.str("name", fmt.Sprintf("source%d", i))}
	s.Kind = t.name("kind", "", func(k string) string { return names.Check("source kind", k, sourceKinds) })
	if s.Kind == "" {
		if _, ok := t.m["kind"]; !ok {
			t.fail("kind", "missing (%s)", strings.Join(sourceKinds, ", "))
		}
		t.done()
		return s
	}
	allowed := map[string]bool{}
	for _, k := range sourceKeys[s.Kind] {
		allowed[k] = true
	}
	for k := range t.m {
		switch k {
		case "name", "kind", "start", "stop", "priority", "reply_priority":
		default:
			if !allowed[k] {
				t.used[k] = true
				t.fail(k, "not a key of %s sources (they take %s)", s.Kind, strings.Join(sourceKeys[s.Kind], ", "))
			}
		}
	}
	s.Priority = t.boolean("priority", s.Kind == KindPeriodic)
	if s.Kind == KindBulk {
		if _, ok := t.m["reply_priority"]; ok {
			t.used["reply_priority"] = true
			t.fail("reply_priority", "bulk sources get no replies")
		}
	} else {
		// A periodic message's one-byte reply only frees its stream (the
		// paper's receiver sends nothing but acknowledgements): it goes
		// without priority unless asked, so that it does not change how
		// the paper's schedulers treat the connection (cwr-red would
		// duplicate it). Other kinds' replies are data the metrics wait
		// for and carry their request's priority.
		s.ReplyPriority = t.boolean("reply_priority", s.Priority && s.Kind != KindPeriodic)
	}
	s.Start = t.duration("start", 0)
	s.Stop = t.duration("stop", 0)
	if s.Stop != 0 && s.Stop <= s.Start {
		t.fail("stop", "%v is not after start %v", s.Stop, s.Start)
	}
	need := func(key string) {
		if _, ok := t.m[key]; !ok {
			t.fail(key, "missing: %s sources need %s", s.Kind, key)
		}
	}
	switch s.Kind {
	case KindPeriodic:
		need("interval")
		need("size")
		s.Interval = t.duration("interval", 0)
		s.Size = t.size("size", 0)
		s.Count = int(t.integer("count", 0, 0, math.MaxInt32))
		s.Announce = t.boolean("announce", s.Priority)
	case KindBulk:
		s.Size = t.size("size", 0)
	case KindRequestResponse:
		need("interval")
		need("size")
		s.Interval = t.duration("interval", 0)
		s.Size = t.size("size", 0)
		s.ReplySize = t.size("reply_size", s.Size)
		s.Count = int(t.integer("count", 0, 0, math.MaxInt32))
	case KindFile:
		need("size")
		s.Size = t.size("size", 0)
		s.Count = int(t.integer("count", 1, 1, math.MaxInt32))
		s.Interval = t.duration("interval", 0)
	case KindFrames:
		need("size")
		s.Interval = t.duration("interval", time.Second/30)
		s.Size = t.size("size", 0)
		s.ReplySize = t.size("reply_size", 64)
		s.Count = int(t.integer("count", 0, 0, math.MaxInt32))
	case KindStopAndWait:
		need("count")
		s.Size = t.size("size", 64)
		s.Count = int(t.integer("count", 0, 1, math.MaxInt32))
		s.Timeout = t.duration("timeout", 5*time.Second)
	}
	if (s.Kind == KindPeriodic || s.Kind == KindRequestResponse || s.Kind == KindFrames) && s.Interval <= 0 {
		if _, ok := t.m["interval"]; ok {
			t.fail("interval", "must be positive")
		}
	}
	if s.Kind != KindBulk && s.Size <= 0 {
		if _, ok := t.m["size"]; ok {
			t.fail("size", "must be positive")
		}
	}
	t.done()
	return s
}
