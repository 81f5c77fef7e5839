// Package experiment reads experiment files: TOML documents that describe
// a network (paths with rate, delay, loss, queue and jitter per direction),
// the transport (schedulers, congestion control, packet size, pacing), the
// traffic (periodic priority sources, bulk background data and the
// workloads of the reference papers), and sweeps over any of these values.
// Beneath it are the generators of experiment files and their inputs:
// experiment/tracegen (link traces) and experiment/conext17 (the CoNEXT'17
// design's files).
//
// Every problem in a file is reported as an *Error naming the file, the
// line and the key; the command line turns them into exit status 2.
//
// A minimal file:
//
//	name = "cwr-one-source"
//	duration = "60s"
//	seed = 1
//
//	[[path]]
//	rate = "100Mbit"
//	rtt = "50ms"
//	loss = "0.05%"
//
//	[[path]]
//	rate = "100Mbit"
//	rtt = "50ms"
//	loss = "0.05%"
//
//	[transport]
//	path_scheduler = "cwr"
//	stream_scheduler = "priority-fifo"
//
//	[[source]]
//	name = "s1"
//	kind = "periodic"
//	interval = "50ms"
//	size = "10kB"
//	priority = true
//
//	[[source]]
//	name = "background"
//	kind = "bulk"
//
//	[sweep]
//	"transport.path_scheduler" = ["lowrtt", "cwr", "cwr-red"]
//
// docs/reference/experiment-file.md documents every key.
package experiment

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/scheduler"
)

// Backends an experiment can run on.
const (
	BackendSim      = "sim"
	BackendLoopback = "loopback"
	BackendNetns    = "netns"
)

// Source kinds.
const (
	KindPeriodic        = "periodic"
	KindBulk            = "bulk"
	KindRequestResponse = "request-response"
	KindFile            = "file"
	KindFrames          = "frames"
	KindStopAndWait     = "stop-and-wait"
)

// Experiment is one fully resolved run.
type Experiment struct {
	// File is the experiment file it came from.
	File string
	Name string
	// Description is free text kept with the results.
	Description string
	// Duration is how long the sources generate traffic; Drain how long
	// the run goes on after that so that every message generated before
	// the end completes or fails.
	Duration time.Duration
	Drain    time.Duration
	// Seed is this run's seed: the file's seed for the first repetition,
	// one derived from it (RepetitionSeed) for the others.
	Seed    uint64
	Backend string
	// Repeat is how many repetitions of every grid point the file asks
	// for, and Repetition which one this run is (0 to Repeat-1); BaseSeed
	// is the seed the repetitions' seeds derive from.
	Repeat     int
	Repetition int
	BaseSeed   uint64
	// Point is the index of the run's grid point in the sweep (0 without
	// a sweep).
	Point int
	Paths []Path
	// Bottlenecks are the links shared by paths ([[bottleneck]]).
	Bottlenecks []Bottleneck
	Transport   Transport
	Sources     []Source
	// Competitors are the single-path connections beside the
	// experiment's ([[competitor]]).
	Competitors []Competitor
	Output      Output
	// Vary lists the values a sweep or --set chose for this run, in the
	// order of the keys, as "key=value".
	Vary []string
	// Label is what tells this run apart: the values of the keys the
	// sweep varies and of the overrides that change the experiment (not
	// output options such as output.qlog), as "key=value"; empty when
	// there are none. mpq run names the run's directory after it.
	Label []string
}

// Path is one network path between the client and the server: a link in
// each direction.
type Path struct {
	// Up carries client-to-server packets, Down server-to-client ones.
	Up, Down Link
	// ClientAddr and ServerAddr are the path's addresses in the namespace
	// testbed (client_address, server_address); zero for the defaults
	// (see Experiment.Addrs).
	ClientAddr, ServerAddr netip.Prefix
	// Changes are the path's scheduled link changes ([[path.change]]),
	// in the order of their times; Steps resolves them.
	Changes []LinkChange
	// Bottleneck names the [[bottleneck]] the path's packets pass after
	// its own links ("": none); BottleneckDelay is that bottleneck's
	// one-way delay, part of the path's RTT.
	Bottleneck      string
	BottleneckDelay time.Duration
	// Backup marks the path a backup path (backup = true): the client
	// sends PATH_STATUS_BACKUP for it (draft-ietf-quic-multipath-21
	// Section 3.3) once it is validated, and both ends' path schedulers
	// then put data on it only when no available path is usable.
	Backup bool
}

// Link is one direction of a path.
type Link struct {
	// Rate in bits per second; 0 means unlimited.
	Rate float64
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Loss is the random loss probability of a packet.
	Loss float64
	// LossModel is "bernoulli" or "gilbert" (bursty: BurstLength is the
	// mean number of packets lost in a row).
	LossModel   string
	BurstLength float64
	// QueueBytes bounds the drop-tail queue; if zero, QueueBDP times the
	// path's bandwidth-delay product (rate x round-trip propagation delay).
	QueueBytes int64
	QueueBDP   float64
	// Jitter adds a uniform random delay in [0, Jitter) without
	// reordering.
	Jitter time.Duration
	// Trace, if not nil, times the link's transmissions instead of Rate
	// (trace_up, trace_down): a packet leaves at the trace's delivery
	// opportunities. Rate is then the trace's mean rate, which sizes a
	// queue given in BDPs.
	Trace *Trace
}

// RTT is the round-trip propagation delay of a path: its own links' and
// its bottleneck's both ways.
func (p Path) RTT() time.Duration { return p.Up.Delay + p.Down.Delay + 2*p.BottleneckDelay }

// QueueLimit is the link's queue in bytes for a path of round-trip
// propagation delay rtt; at least 16 full-size packets.
func (l Link) QueueLimit(rtt time.Duration) int64 {
	if l.QueueBytes > 0 {
		return l.QueueBytes
	}
	if l.Rate == 0 {
		return 0
	}
	q := int64(l.QueueBDP * l.Rate * rtt.Seconds() / 8)
	return max(q, 16*1500)
}

// Transport configures the connection.
type Transport struct {
	// Kind is the transport (transport.kind): KindMPQ (default) or one of
	// the baselines, KindQuicGo, KindTCP, KindTLS, KindMPTCP (see
	// kind.go); every key but multipath configures mpq alone.
	Kind string
	// TCPCongestion is the kernel's congestion controller of the kernel
	// transports (transport.tcp_congestion; "": the kernel's default).
	TCPCongestion string
	// Connection (transport.connection) is how the client's messages use
	// connections: ConnectionShared (default), all on one connection
	// opened at the start; or ConnectionPerRequest, each message on a new
	// connection, its handshake in the message's time, closed once the
	// reply arrived; or ConnectionPool, HTTP/1.1's pool of connections
	// (the baselines only; see kind.go).
	Connection string
	// PoolIdleTimeout (transport.pool_idle_timeout) closes a pooled
	// connection idle for longer (0: never); PoolMaxIdle
	// (transport.pool_max_idle) is how many idle connections the pool
	// keeps, a connection that becomes idle beyond them is closed (0: any
	// number). Defaults: DefaultPoolIdleTimeout, DefaultPoolMaxIdle.
	PoolIdleTimeout time.Duration
	PoolMaxIdle     int
	PathScheduler   string
	// SchedulerOptions are the path scheduler's options
	// (transport.scheduler_options), every one with its value, set or
	// default; empty for a scheduler without options.
	SchedulerOptions scheduler.Options
	StreamScheduler  string
	Congestion       string
	// NewRenoGrowth is NewReno's congestion avoidance growth, "per-ack"
	// (default: the reference experiments') or "per-rtt"
	// (congestion.Growth); only newreno, newreno-cwl and newreno-cwl-ss take "per-rtt".
	NewRenoGrowth string
	// SlowStart is transport.slow_start, how the congestion controller
	// leaves its initial slow start: "standard" or "hystart++" (RFC 9406);
	// the controller's default when not set (congestion.DefaultSlowStart:
	// "hystart++" for cubic, "standard" for the others, "" for bbr, which
	// refuses the key).
	SlowStart string
	// CongestionReadings are the controllers' readings of another
	// implementation, MPQUIC's (transport.initial_window,
	// emulated_connections, loss_reduction, cwnd_limited, rto_collapse,
	// cubic_target, olia_best_overflow; cubic_alpha: RFC 9438's or Linux's;
	// congestion.Readings); the zero value, the default, is the
	// published algorithms.
	CongestionReadings congestion.Readings
	MaxPacketSize      int
	Pacing             bool
	// Multipath false keeps the connection on the first path.
	Multipath bool
	// InitialRTT is the RTT assumed before the first sample.
	InitialRTT time.Duration
	// PathAbandonAfter abandons a path that stayed failed (found broken
	// while another path works) for that long; 0 never does.
	PathAbandonAfter time.Duration
	// PathFailure enables the stack's path failure detection (default
	// true); false leaves silent paths to their probe timeouts.
	PathFailure bool
	// ReceiveWindow, when positive, fixes both ends' flow-control receive
	// windows (each stream's and the connection's, RFC 9000 Section 4) at
	// that many bytes: a receiver with a bounded buffer. 0 keeps the
	// defaults, which start at 512 KiB per stream and 768 KiB per
	// connection and grow as the application reads.
	ReceiveWindow int64
	// InitialReceiveWindow, when positive, is the size each stream's
	// receive window starts at (transport.initial_receive_window); the
	// connection's starts at one and a half times it, as the defaults'
	// (512 KiB and 768 KiB) do, and both grow by auto-tuning to their
	// default maxima. MPQUIC's reading (after Chromium's QUIC) is 32 KiB.
	// 0 keeps the defaults; ReceiveWindow excludes it.
	InitialReceiveWindow int64
	// ConnWindowFollowsStream (transport.conn_window_follows_stream)
	// keeps the connection's receive window at least 1.5 times a
	// stream's whenever auto-tuning grows the stream's, as MPQUIC and
	// quic-go do; off (the default), it auto-tunes by itself.
	ConnWindowFollowsStream bool
	// SendBelowWindow (transport.send_below_window) lets a path send a
	// packet while its bytes in flight are at most its congestion window,
	// as MPQUIC does (bytes in flight above the window block it), instead
	// of only when the whole packet fits within the window: a path may
	// then have up to a datagram more in flight. Off by default.
	SendBelowWindow bool
	// ZeroRTT (transport.zero_rtt): before the experiment's time zero a
	// warm-up connection obtains a session ticket and closes; the
	// measured connection then resumes with it and the client sends its
	// messages in 0-RTT packets (RFC 9001 Section 4.6) until the handshake
	// completes. Off: one full handshake, no tickets.
	ZeroRTT bool
	// Repair (transport.repair) offers the experimental REPAIR extension
	// (stream-level XOR parity, core.Config.Repair) on both ends: a path
	// scheduler with a parity rule (cwr-plus's parity) may then use it.
	// By default on exactly when the path scheduler sends parity
	// (scheduler.OffersRepair) and the transport is mpq's.
	Repair bool
	// SimNullProtection (transport.sim_null_protection) replaces the
	// 1-RTT packet protection by the simulator's null protection
	// (core.Config.SimNullProtection): same packet sizes and results,
	// less CPU. Default true with backend "sim" (DefaultSimNullProtection),
	// and not allowed with any other backend.
	SimNullProtection bool
}

// DefaultSimNullProtection is transport.sim_null_protection's default
// with a backend: on in the simulator, where it changes no result (see
// docs/design/simulator.md), off everywhere else.
func DefaultSimNullProtection(backend string) bool { return backend == BackendSim }

// Source is one traffic source. Which fields matter depends on Kind (see
// docs/reference/experiment-file.md).
type Source struct {
	Name     string
	Kind     string
	Priority bool
	// Announce makes a periodic source announce its messages to the path
	// scheduler (for the CWR schedulers' reservations).
	Announce bool
	// Start and Stop bound the source's activity (Stop 0: the end of the
	// experiment).
	Start, Stop time.Duration
	Interval    time.Duration
	Size        int64
	ReplySize   int64
	// ReplyPriority is the priority of the replies to the source's
	// messages (set on the reply stream by the receiver); by default the
	// source's own priority.
	ReplyPriority bool
	// Count bounds the number of messages, transfers or publishes (0: no
	// bound).
	Count int
	// Timeout is how long stop-and-wait waits for an acknowledgement
	// before it counts the publish as failed.
	Timeout time.Duration
}

// Output configures what a run writes besides its summary.
type Output struct {
	// Qlog writes qlog traces of both connection ends.
	Qlog bool
	// Interval is the bin of the throughput time series.
	Interval time.Duration
	// PathInterval is the least time between two rows of paths.csv for
	// one path and end, except that every congestion state change is
	// kept; 0 writes every change.
	PathInterval time.Duration
	// Series writes the time series paths.csv and throughput.csv
	// (output.series, default true); false leaves them out of a run's
	// files, for sweeps of thousands of runs that need only summary.json.
	Series bool
	// Warmup leaves the messages created in [0, Warmup) of the
	// experiment's time out of the per-source statistics (summary.json,
	// the aggregates, the console lines, the plots' distributions); they
	// are still in messages.csv (warmup = true) and counted in
	// summary.json's warmup_excluded. 0, the default, leaves none out.
	Warmup time.Duration
	// Figures are the figures (or their tables) mpq run draws from the
	// whole sweep once every run of it is done (output.figures), as
	// file names in the sweep's directory whose stem is a figure kind
	// and whose extension its format ("ratio.pdf", "ccdf.md"). They are
	// the sweep's, not a run's: a run's resolved configuration and its
	// config_sha256 leave them out.
	Figures []string
}

// Error is a problem in an experiment file, at a line and key.
type Error struct {
	File string
	Line int // 0 when the value did not come from a line of the file
	Key  string
	// Origin says where a value came from when not from the file's own
	// line ("--set KEY", "--backend", "[sweep]").
	Origin string
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %s", e.Key)
	}
	if e.Origin != "" {
		fmt.Fprintf(&b, " (from %s)", e.Origin)
	}
	fmt.Fprintf(&b, ": %s", e.Msg)
	return b.String()
}

// Errors is a list of problems, all reported at once.
type Errors []*Error

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// sortErrors orders errors by line; those without one (missing keys,
// --set) follow in the order they were found.
func sortErrors(es Errors) {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i].Line, es[j].Line
		if a == 0 || b == 0 {
			return a != 0 && b == 0
		}
		return a < b
	})
}
