package trafficgen

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/mpquic/qerr"
)

// Classes of data.
const (
	ClassPriority   = 0
	ClassBackground = 1
)

// ClassName names a class in results.
func ClassName(c int) string {
	if c == ClassPriority {
		return "priority"
	}
	return "background"
}

func classOf(priority bool) int {
	if priority {
		return ClassPriority
	}
	return ClassBackground
}

// Why a message failed.
const (
	// FailTimeout: the message was not complete at the end of the drain
	// period (or, for stop-and-wait, within the source's timeout).
	FailTimeout = "timeout"
	// FailReset: a stream carrying it was reset or stopped.
	FailReset = "reset"
	// FailClosed: the connection ended first.
	FailClosed = "connection closed"
	// FailNoReply: it was delivered but its reply was not complete at the
	// end of the drain period (kinds with replies only).
	FailNoReply = "no reply"
)

// Message statuses.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// HasReply reports whether the messages of a kind complete with their
// reply (request-response, frames, file, stop-and-wait) rather than with
// their delivery (periodic: the paper's one-byte replies only free the
// stream).
func HasReply(kind string) bool {
	switch kind {
	case experiment.KindRequestResponse, experiment.KindFrames, experiment.KindFile, experiment.KindStopAndWait:
		return true
	}
	return false
}

// MessageRecord is the life of one message.
type MessageRecord struct {
	Source int
	Kind   string
	Seq    uint32
	// Priority is the priority of the message's stream, ReplyPriority the
	// one its reply is sent with.
	Priority, ReplyPriority bool
	Length                  uint64 // bytes, header included
	Reply                   uint32
	// Created is when the source generated it; Started when it was
	// written to a stream (later if it waited for one); Written when the
	// stream took its last byte; Delivered when the receiving
	// application had all of it; Replied when the sender had the whole
	// reply. Zero if it did not happen.
	Created, Started, Written, Delivered, Replied time.Time
	// Due is when the source's schedule had the message due (periodic,
	// request-response and frames: start + seq*interval; the sequential
	// kinds: their creation). A timer that fires late creates it late:
	// Created - Due is its lateness (Late), which MCT does not hide, as
	// MCT counts from Created. Zero when unknown (a record rebuilt by
	// the receiver from the header).
	Due      time.Time
	StreamID uint64
	// Queued: the message waited for a free stream.
	Queued bool
	// Completed: the message completed (was delivered, or for kinds with
	// replies got its whole reply) before anything made it fail.
	Completed bool
	// Failed says why it did not complete (one of the Fail constants);
	// empty while it may still complete, and for completed messages.
	Failed string
}

// Done reports whether the message completed or failed.
func (m *MessageRecord) Done() bool { return m.Completed || m.Failed != "" }

// Status is "completed" or "failed" once the message is done, else "".
func (m *MessageRecord) Status() string {
	switch {
	case m.Completed:
		return StatusCompleted
	case m.Failed != "":
		return StatusFailed
	}
	return ""
}

// Late is how late the message was created after it was due (Due); ok
// is false when Due is unknown.
func (m *MessageRecord) Late() (time.Duration, bool) {
	if m.Due.IsZero() || m.Created.IsZero() {
		return 0, false
	}
	return m.Created.Sub(m.Due), true
}

// MCT is the message completion time: generation to complete reception
// by the receiving application (the paper's Section IV-A); ok is false if
// it was not received.
func (m *MessageRecord) MCT() (time.Duration, bool) {
	if m.Delivered.IsZero() {
		return 0, false
	}
	return m.Delivered.Sub(m.Created), true
}

// ResponseTime is generation to complete reception of the reply; ok is
// false if the reply did not arrive, or arrived after the message failed
// (a stop-and-wait publish given up at its timeout).
func (m *MessageRecord) ResponseTime() (time.Duration, bool) {
	if m.Replied.IsZero() || m.Failed != "" {
		return 0, false
	}
	return m.Replied.Sub(m.Created), true
}

// Headline is the time that completes the message: the response time for
// kinds with replies, else the MCT; ok is false for a message that did
// not complete (its time counts as unbounded in distributions).
func (m *MessageRecord) Headline() (time.Duration, bool) {
	if !m.Completed {
		return 0, false
	}
	if HasReply(m.Kind) {
		return m.ResponseTime()
	}
	return m.MCT()
}

// PathSample is a path's congestion state at a change, seen from one end.
type PathSample struct {
	At      time.Time
	Vantage string
	core.PathMetrics
}

// RecorderConfig configures a Recorder.
type RecorderConfig struct {
	Sources []experiment.Source
	// Start is the experiment's time zero; the measurement window of
	// throughput, goodput and congestion window growth is [Start,
	// Start+Duration).
	Start    time.Time
	Duration time.Duration
	// Interval is the width of the throughput bins.
	Interval time.Duration
	// PathInterval is the least time between two samples of a path and
	// end kept for paths.csv (congestion state changes are always kept);
	// 0 keeps every change, a negative one none (for runs that write no
	// paths.csv: the samples, taken at every ACK, then cost no copies).
	PathInterval time.Duration
	// Warmup: messages created before Start+Warmup are left out of the
	// per-source statistics of the summary (InWarmup), not out of
	// messages.csv.
	Warmup time.Duration
}

// pathKey names one end's view of one path.
type pathKey struct {
	vantage string
	id      uint64
}

// pathLog is what the recorder keeps of one end's view of one path.
type pathLog struct {
	// last is the latest sample, kept says whether it went into the
	// samples; keepFrom is when PathInterval has passed since the latest
	// kept sample was taken (its time plus PathInterval: one comparison
	// for every sample, not a Sub).
	last     PathSample
	kept     bool
	keepFrom time.Time
	seen     bool
	ca       caGrowth
}

// Recorder collects an experiment's measurements. It is used from the
// environment's event loop only (the Observer methods run on the
// connections', which is the same loop in the simulator; over sockets the
// runner serialises them).
type Recorder struct {
	cfg   RecorderConfig
	start time.Time
	end   time.Time
	// The throughput bin of bin's last call: [binLo, binHi) is bin
	// binIdx (empty before the first call: both zero).
	binLo, binHi time.Time
	binIdx       int
	sources      []experiment.Source
	msgs         [][]*MessageRecord
	// sent[vantage][path][class] are bins of stream bytes that end sent,
	// sentWin their totals in the measurement window; got[sender][class]
	// bins of bytes the receiving application read of what sender sent,
	// gotWin their totals in the window; srcGot[source] the window's
	// bytes read of the source's messages ([0]) and replies ([1]).
	sent    map[string]map[uint64]*[2][]uint64
	sentWin map[string]map[uint64]*[2]uint64
	got     map[string]*[2][]uint64
	gotWin  map[string]*[2]uint64
	srcGot  [][2]uint64
	paths   map[pathKey]*pathLog
	samples []PathSample
	// finished: the run is over; later events are ignored.
	finished bool
	problems []string
	// pathsFailed lists the paths the client could not open.
	pathsFailed []PathFailure
	// ConnectStart is when the client started connecting, for the
	// connect-to-first-message time of stop-and-wait sources.
	ConnectStart time.Time
}

// NewRecorder returns a recorder for an experiment.
func NewRecorder(cfg RecorderConfig) *Recorder {
	return &Recorder{cfg: cfg, start: cfg.Start, end: cfg.Start.Add(cfg.Duration), sources: cfg.Sources,
		msgs:    make([][]*MessageRecord, len(cfg.Sources)),
		sent:    map[string]map[uint64]*[2][]uint64{},
		sentWin: map[string]map[uint64]*[2]uint64{},
		got:     map[string]*[2][]uint64{},
		gotWin:  map[string]*[2]uint64{},
		srcGot:  make([][2]uint64, len(cfg.Sources)),
		paths:   map[pathKey]*pathLog{},
	}
}

// Start is the experiment's time zero.
func (r *Recorder) Start() time.Time { return r.start }

// End is the end of the measurement window (time zero plus the duration).
func (r *Recorder) End() time.Time { return r.end }

// InWarmup reports whether m was created in the warm-up, before
// Start+Warmup: the summary's per-source statistics leave it out (and
// count it in warmup_excluded); messages.csv marks it.
func (r *Recorder) InWarmup(m *MessageRecord) bool {
	return r.cfg.Warmup > 0 && m.Created.Before(r.start.Add(r.cfg.Warmup))
}

func (r *Recorder) inWindow(at time.Time) bool { return !at.Before(r.start) && at.Before(r.end) }

// bin returns the index of the throughput bin of at (0 before the
// start). It remembers the bounds of the bin it returned last: the times
// of consecutive bytes fall mostly in one bin, and two comparisons cost
// less than Sub and a division, for every packet.
func (r *Recorder) bin(at time.Time) int {
	if !at.Before(r.binLo) && at.Before(r.binHi) {
		return r.binIdx
	}
	if at.Before(r.start) {
		return 0
	}
	i := int(at.Sub(r.start) / r.cfg.Interval)
	r.binLo = r.start.Add(time.Duration(i) * r.cfg.Interval)
	r.binHi = r.binLo.Add(r.cfg.Interval)
	r.binIdx = i
	return i
}

func addBin(bins *[]uint64, i int, n uint64) {
	for len(*bins) <= i {
		*bins = append(*bins, 0)
	}
	(*bins)[i] += n
}

func (r *Recorder) record(src int, seq uint32) *MessageRecord {
	if src < 0 || src >= len(r.msgs) {
		return nil
	}
	for len(r.msgs[src]) <= int(seq) {
		r.msgs[src] = append(r.msgs[src], nil)
	}
	return r.msgs[src][seq]
}

func (r *Recorder) generated(src int, seq uint32, now time.Time, length uint64, reply uint32, prio, replyPrio bool) *MessageRecord {
	m := &MessageRecord{Source: src, Kind: r.sources[src].Kind, Seq: seq, Priority: prio, ReplyPriority: replyPrio,
		Length: length, Reply: reply, Created: now}
	if r.record(src, seq) == nil {
		r.msgs[src][seq] = m
	}
	return m
}

// delivered records that the receiving application has a whole message.
func (r *Recorder) delivered(h Header, now time.Time) {
	if r.finished {
		return
	}
	m := r.record(int(h.Source), h.Seq)
	if m == nil {
		if int(h.Source) >= len(r.msgs) {
			r.protocolError(fmt.Errorf("message of unknown source %d", h.Source))
			return
		}
		// The sender's record is in another process: rebuild it.
		m = &MessageRecord{Source: int(h.Source), Kind: r.sources[h.Source].Kind, Seq: h.Seq, Length: h.Length, Reply: h.Reply,
			Created: h.Created, Priority: h.Flags&FlagPriority != 0, ReplyPriority: h.Flags&FlagReplyPriority != 0}
		r.msgs[h.Source][h.Seq] = m
	}
	if m.Delivered.IsZero() {
		m.Delivered = now
	}
	if !HasReply(m.Kind) && !m.Done() {
		m.Completed = true
	}
}

// replied records that the sender has the whole reply to m.
func (r *Recorder) replied(m *MessageRecord, now time.Time) {
	if r.finished {
		return
	}
	if m.Replied.IsZero() {
		m.Replied = now
	}
	if HasReply(m.Kind) && !m.Done() {
		m.Completed = true
	}
}

// received counts n bytes the receiving application read of what sender
// sent: of source src's messages, or of the replies to them.
func (r *Recorder) received(now time.Time, sender string, class, src int, reply bool, n int) {
	var c gotCounts
	r.receivedInto(&c, now, sender, class, src, reply, n)
}

// gotCounts holds a reader's pointers to its sender's counters in a
// Recorder's got and gotWin, nil until looked up (or made): a stream that
// receives in many small reads keeps them, and looks them up once.
type gotCounts struct {
	got *[2][]uint64
	win *[2]uint64
}

// receivedInto is received with the sender's counters kept in c.
func (r *Recorder) receivedInto(c *gotCounts, now time.Time, sender string, class, src int, reply bool, n int) {
	if r.finished {
		return
	}
	b := c.got
	if b == nil {
		b = r.got[sender]
		if b == nil {
			b = &[2][]uint64{}
			r.got[sender] = b
		}
		c.got = b
	}
	addBin(&b[class], r.bin(now), uint64(n))
	if !r.inWindow(now) {
		return
	}
	w := c.win
	if w == nil {
		w = r.gotWin[sender]
		if w == nil {
			w = &[2]uint64{}
			r.gotWin[sender] = w
		}
		c.win = w
	}
	w[class] += uint64(n)
	if src >= 0 && src < len(r.srcGot) {
		i := 0
		if reply {
			i = 1
		}
		r.srcGot[src][i] += uint64(n)
	}
}

// failReason is the reason a stream or connection error gives.
func failReason(err error) string {
	var se *qerr.StreamError
	if errors.As(err, &se) {
		return FailReset
	}
	return FailClosed
}

// fail marks m failed because of err, unless it is done already.
func (r *Recorder) fail(m *MessageRecord, err error) { r.failWith(m, failReason(err)) }

func (r *Recorder) failWith(m *MessageRecord, reason string) {
	if r.finished || m.Done() {
		return
	}
	m.Failed = reason
}

func (r *Recorder) receiveFailed(h Header, err error) {
	if m := r.record(int(h.Source), h.Seq); m != nil && m.Delivered.IsZero() {
		r.fail(m, err)
	}
}

func (r *Recorder) protocolError(err error) {
	if len(r.problems) < 100 {
		r.problems = append(r.problems, err.Error())
	}
}

// PathFailure is a path of the experiment the client could not open.
type PathFailure struct {
	// Path is the path's index in the experiment's [[path]] list.
	Path  int    `json:"path"`
	Error string `json:"error"`
}

// PathFailed records that the client could not open path i of the
// experiment (for instance, its validation was lost to the path's
// losses); the run goes on over the other paths.
func (r *Recorder) PathFailed(i int, err error) {
	if r.finished {
		return
	}
	r.pathsFailed = append(r.pathsFailed, PathFailure{Path: i, Error: err.Error()})
}

// Problems lists unexpected errors seen during the run.
func (r *Recorder) Problems() []string { return r.problems }

// Outstanding counts the messages that are neither completed nor failed.
func (r *Recorder) Outstanding() int {
	n := 0
	for _, ms := range r.msgs {
		for _, m := range ms {
			if m != nil && !m.Done() {
				n++
			}
		}
	}
	return n
}

// OutstandingHalves is Outstanding for a run whose ends record into
// recorders of their own (see Half): a message is done when its sender's
// record is, or, for a kind without a reply, when its receiver's is (the
// receiver alone knows it has all of it).
func OutstandingHalves(client, server *Recorder) int {
	n := 0
	for _, h := range []struct {
		own, other *Recorder
		side       string
	}{{client, server, "client"}, {server, client, "server"}} {
		for src, ms := range h.own.msgs {
			for seq, m := range ms {
				if m == nil || m.Done() || SenderSide(m.Kind) != h.side {
					continue
				}
				if !HasReply(m.Kind) && src < len(h.other.msgs) && seq < len(h.other.msgs[src]) {
					if o := h.other.msgs[src][seq]; o != nil && o.Done() {
						continue
					}
				}
				n++
			}
		}
	}
	return n
}

// Finish ends the recording at the end of the drain period: every message
// still under way fails, with "no reply" if it was delivered (kinds with
// replies) and "timeout" otherwise; each path's last state, if paths.csv
// did not keep it yet, is kept (so it does not depend on whether a later
// change came before the run ended); later events are ignored.
func (r *Recorder) Finish() {
	for _, k := range sortedPathKeys(r.paths) {
		if pl := r.paths[k]; pl.seen && !pl.kept {
			pl.kept = true
			r.samples = append(r.samples, pl.last)
		}
	}
	sortSamples(r.samples)
	for _, ms := range r.msgs {
		for _, m := range ms {
			if m == nil || m.Done() {
				continue
			}
			if !m.Delivered.IsZero() {
				m.Failed = FailNoReply
			} else {
				m.Failed = FailTimeout
			}
		}
	}
	r.finished = true
}

// Messages returns every message of every source, by source and sequence
// number.
func (r *Recorder) Messages() []*MessageRecord {
	var out []*MessageRecord
	for _, ms := range r.msgs {
		for _, m := range ms {
			if m != nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// Samples returns the path state samples kept for paths.csv, in time
// order.
func (r *Recorder) Samples() []PathSample { return r.samples }

// Observer returns the core.Observer of a connection end ("client" or
// "server"), which records its path states and the bytes it sends per path
// and class.
func (r *Recorder) Observer(vantage string) core.Observer { return &observer{r: r, vantage: vantage} }

type observer struct {
	r       *Recorder
	vantage string
	// sentBy and logs cache the Recorder's sent and sentWin entries
	// and path logs of the vantage by path ID (below maxCachedPathID),
	// so that a packet sent costs no map lookups.
	sentBy []sentPath
	logs   []*pathLog
}

// sentPath is where an observer counts the bytes sent on one path.
type sentPath struct {
	bins *[2][]uint64
	win  *[2]uint64
}

// maxCachedPathID bounds observer.sentBy: path IDs are small in practice
// (one per path opened), and larger ones take the map lookups.
const maxCachedPathID = 64

func (o *observer) PathMetricsUpdated(now time.Time, m core.PathMetrics) {
	if o.r.finished {
		return
	}
	var pl *pathLog
	if m.PathID < uint64(len(o.logs)) {
		pl = o.logs[m.PathID]
	}
	if pl == nil {
		pl = o.r.pathLog(pathKey{o.vantage, m.PathID})
		if m.PathID < maxCachedPathID {
			for uint64(len(o.logs)) <= m.PathID {
				o.logs = append(o.logs, nil)
			}
			o.logs[m.PathID] = pl
		}
	}
	s := PathSample{At: now, Vantage: o.vantage, PathMetrics: m}
	o.r.addPathSample(pl, &s)
}

// pathLog returns the log of a path, making it if needed.
func (r *Recorder) pathLog(k pathKey) *pathLog {
	pl := r.paths[k]
	if pl == nil {
		pl = &pathLog{}
		r.paths[k] = pl
	}
	return pl
}

// sortSamples puts path samples in the order of paths.csv: by time, the
// client's before the server's at the same time, and otherwise in the
// order they were kept. The order depends on neither whether the ends
// recorded apart (Half) nor the order in which the simulator ran the two
// ends' events of one instant.
func sortSamples(s []PathSample) {
	sort.SliceStable(s, func(i, j int) bool {
		if !s[i].At.Equal(s[j].At) {
			return s[i].At.Before(s[j].At)
		}
		return s[i].Vantage < s[j].Vantage
	})
}

// addPathSample takes a path state change s of the path whose log is
// pl: the congestion window growth counts it within the measurement
// window, and paths.csv keeps it if it changes the congestion state (with the last sample before it), if it is
// the path's first, or if PathInterval passed since the last kept one;
// then also the last sample before it if that was not kept and is
// PathInterval or more older (the path went quiet: its state during the
// quiet time is that sample's, not the last kept one's). s is passed by
// pointer: a sample is some 120 bytes, recorded at every packet sent and
// acknowledged.
func (r *Recorder) addPathSample(pl *pathLog, s *PathSample) {
	if r.inWindow(s.At) {
		pl.ca.add(s)
	}
	if r.cfg.PathInterval < 0 {
		return
	}
	keep := !pl.seen || r.cfg.PathInterval <= 0 || !s.At.Before(pl.keepFrom)
	if pl.seen && s.CongestionState != pl.last.CongestionState {
		keep = true
	}
	if keep && pl.seen && !pl.kept && (s.CongestionState != pl.last.CongestionState || s.At.Sub(pl.last.At) >= r.cfg.PathInterval) {
		r.samples = append(r.samples, pl.last)
	}
	pl.seen, pl.last, pl.kept = true, *s, keep
	if keep {
		pl.keepFrom = s.At.Add(r.cfg.PathInterval)
		r.samples = append(r.samples, *s)
	}
}

func (o *observer) StreamDataSent(now time.Time, pathID, _ uint64, priority bool, n int) {
	r := o.r
	if r.finished {
		return
	}
	var sp sentPath
	if pathID < uint64(len(o.sentBy)) {
		sp = o.sentBy[pathID]
	}
	if sp.bins == nil {
		sp = o.sentPath(pathID)
	}
	class := classOf(priority)
	addBin(&sp.bins[class], r.bin(now), uint64(n))
	if r.inWindow(now) {
		sp.win[class] += uint64(n)
	}
}

// sentPath returns (making them if needed) the Recorder's counters of the
// bytes the vantage sent on path pathID, and caches them.
func (o *observer) sentPath(pathID uint64) sentPath {
	r := o.r
	paths := r.sent[o.vantage]
	if paths == nil {
		paths = map[uint64]*[2][]uint64{}
		r.sent[o.vantage] = paths
		r.sentWin[o.vantage] = map[uint64]*[2]uint64{}
	}
	b := paths[pathID]
	if b == nil {
		b = &[2][]uint64{}
		paths[pathID] = b
		r.sentWin[o.vantage][pathID] = &[2]uint64{}
	}
	sp := sentPath{bins: b, win: r.sentWin[o.vantage][pathID]}
	if pathID < maxCachedPathID {
		for uint64(len(o.sentBy)) <= pathID {
			o.sentBy = append(o.sentBy, sentPath{})
		}
		o.sentBy[pathID] = sp
	}
	return sp
}

// Interval is the width of the throughput bins.
func (r *Recorder) Interval() time.Duration { return r.cfg.Interval }

// sortedPathKeys lists the keys of the path logs by end and path ID.
func sortedPathKeys(m map[pathKey]*pathLog) []pathKey {
	keys := make([]pathKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].vantage < keys[j].vantage || keys[i].vantage == keys[j].vantage && keys[i].id < keys[j].id
	})
	return keys
}

// sortedPaths lists the path IDs of a vantage's bins.
func sortedPaths[V any](m map[uint64]V) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// caGrowth accumulates a path's congestion window growth in congestion
// avoidance (Table I of the reference paper) from its state changes in
// time order: over the maximal stretches of samples in congestion
// avoidance, the growth of the window and the stretches' duration.
type caGrowth struct {
	grow   float64
	span   time.Duration
	in     bool
	startT time.Time
	startW uint64
	lastT  time.Time
	lastW  uint64
}

func (g *caGrowth) flush() {
	if g.in && g.lastT.After(g.startT) && g.lastW >= g.startW {
		g.grow += float64(g.lastW - g.startW)
		g.span += g.lastT.Sub(g.startT)
	}
	g.in = false
}

// inCongestionAvoidance reports whether a sample is in the congestion
// avoidance phase: neither slow start nor recovery; for bbr, ProbeBW
// (neither Startup, Drain nor ProbeRTT). A controller that
// reports the sender application limited (newreno-cwl, which then does
// not grow the window) is still in that phase when its window is at or
// above the slow start threshold: leaving those periods out would count
// only the moments the window grows and overstate the growth per RTT, the
// very effect of window reservation Table I measures.
func inCongestionAvoidance(s *PathSample) bool {
	switch s.CongestionState {
	case "congestion_avoidance", "probe_bw":
		return true
	case "application_limited":
		return s.CongestionWindow >= s.SSThresh
	}
	return false
}

func (g *caGrowth) add(s *PathSample) {
	if !inCongestionAvoidance(s) {
		g.flush()
		return
	}
	at, cwnd := s.At, s.CongestionWindow
	if !g.in {
		g.in, g.startT, g.startW = true, at, cwnd
	} else if cwnd < g.lastW && at != g.startT {
		// A shrink without leaving the state (a collapse): close the
		// stretch before it.
		g.flush()
		g.in, g.startT, g.startW = true, at, cwnd
	}
	g.lastT, g.lastW = at, cwnd
}

// perRTT is the mean growth per rtt over the stretches so far; NaN
// without any (the path was never in congestion avoidance: no value, not
// a growth of 0).
func (g caGrowth) perRTT(rtt time.Duration) float64 {
	g.flush()
	if g.span <= 0 {
		return math.NaN()
	}
	return g.grow / g.span.Seconds() * rtt.Seconds()
}

// CwndGrowthCA is the mean growth of a path's congestion window per RTT
// while in congestion avoidance, as in Table I of the reference paper:
// over the maximal stretches of samples in congestion avoidance
// (application-limited ones included, see inCongestionAvoidance), the sum
// of the window's growth divided by the sum of their durations, times
// rtt. NaN without such stretches.
func CwndGrowthCA(samples []PathSample, vantage string, pathID uint64, rtt time.Duration) float64 {
	var g caGrowth
	for i := range samples {
		if s := &samples[i]; s.Vantage == vantage && s.PathID == pathID {
			g.add(s)
		}
	}
	return g.perRTT(rtt)
}
