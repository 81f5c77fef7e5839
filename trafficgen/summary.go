package trafficgen

import (
	"maps"
	"math"
	"strings"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/internal/buildinfo"
	"github.com/mpq/mpq/mpquic/core"
)

// Throughput in Mbit/s.
type Throughput struct {
	Total      float64 `json:"total"`
	Priority   float64 `json:"priority"`
	Background float64 `json:"background"`
}

// Directions holds a rate per sending end.
type Directions struct {
	Server Throughput `json:"server"`
	Client Throughput `json:"client"`
}

// SourceSummary summarises one source.
type SourceSummary struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Sender is the end that sends the source's messages.
	Sender        string `json:"sender"`
	Priority      bool   `json:"priority"`
	ReplyPriority *bool  `json:"reply_priority,omitempty"`
	// WarmupExcluded counts the messages created in the warm-up
	// (output.warmup), which every statistic below leaves out, Messages
	// included (stop-and-wait's completion_ratio, completion_time_ms and
	// connect_to_first_ms excepted: they are over the whole count).
	WarmupExcluded int `json:"warmup_excluded"`
	// Messages counts the messages generated after the warm-up; each
	// ends Completed or Failed (Failures counts the reasons).
	Messages  int            `json:"messages"`
	Completed int            `json:"completed"`
	Failed    int            `json:"failed"`
	Failures  map[string]int `json:"failures,omitempty"`
	// DeliveredRatio is Completed / Messages (absent without messages).
	DeliveredRatio *float64 `json:"delivered_ratio,omitempty"`
	// MCTMS is the distribution of message completion times (generation
	// to delivery), ResponseMS that of response times (generation to the
	// whole reply) for kinds with replies; a message without the event
	// counts as +Inf.
	MCTMS      *Dist `json:"mct_ms,omitempty"`
	ResponseMS *Dist `json:"response_ms,omitempty"`
	// Jitter of the response times (reference 000), kinds with replies.
	Jitter *float64 `json:"jitter,omitempty"`
	// Stop-and-wait: the fraction of the count publishes acknowledged,
	// the time from the first publish to the last acknowledgement
	// (reference 003's T; +Inf unless every publish was acknowledged),
	// connection start to the first publish written to its stream
	// (reference 003's time to publish after connection establishment),
	// and connection start to the first publish's acknowledgement (+Inf
	// when the first publish was not acknowledged).
	CompletionRatio     *float64 `json:"completion_ratio,omitempty"`
	CompletionTimeMS    *Millis  `json:"completion_time_ms,omitempty"`
	ConnectToFirstMS    *float64 `json:"connect_to_first_ms,omitempty"`
	ConnectToFirstAckMS *Millis  `json:"connect_to_first_ack_ms,omitempty"`
	// GoodputMbps counts the bytes of the source's messages the receiving
	// application read during the measurement window, ReplyGoodputMbps
	// those of their replies (kinds other than bulk).
	GoodputMbps      float64  `json:"goodput_mbps"`
	ReplyGoodputMbps *float64 `json:"reply_goodput_mbps,omitempty"`
	// DisruptionMS (priority sources with an interval): the longest time
	// between two consecutive deliveries of the source's messages, or
	// from the last delivery to the run's end when messages created after
	// it never arrived, minus its interval (Disruption); absent with
	// fewer than two deliveries and no such wait.
	DisruptionMS *Millis `json:"disruption_ms,omitempty"`
	// LateAfterChange (priority sources, experiments with scheduled link
	// changes): the messages created at or after one RTT before the first
	// change whose MCT exceeds one RTT, failed ones included (LateSince;
	// the RTT is the largest round-trip propagation delay of the paths).
	LateAfterChange *int `json:"late_after_change,omitempty"`
}

// PathEnd is one end's view of a path at the end of the measurement
// window.
type PathEnd struct {
	BytesSent     uint64  `json:"bytes_sent"`
	BytesReceived uint64  `json:"bytes_received"`
	PacketsSent   uint64  `json:"packets_sent"`
	PacketsLost   uint64  `json:"packets_lost"`
	SRTTMS        float64 `json:"srtt_ms"`
	MinRTTMS      float64 `json:"min_rtt_ms"`
	CwndBytes     uint64  `json:"cwnd_bytes"`
	// CwndGrowthCA is the window's mean growth per RTT in congestion
	// avoidance in the window (Table I); nil (null) when the path was
	// never in congestion avoidance then.
	CwndGrowthCA *float64 `json:"cwnd_growth_ca_bytes_per_rtt"`
	// ReservationsMissed is the path scheduler's reservations_missed
	// counter (cwr, cwr-red: scheduler.CounterReservationsMissed) at the
	// end of the window: messages that found less free window than they
	// needed on the path holding their reservation, not late messages.
	ReservationsMissed uint64 `json:"reservations_missed"`
	// StreamBytesSent counts the stream bytes this end sent on the path
	// in the measurement window, retransmissions and copies included.
	StreamBytesSent uint64 `json:"stream_bytes_sent"`
	State           string `json:"state"`
	// Status is this end's status of the path at the end of the window
	// ("available" or "backup", sent with PATH_STATUS_AVAILABLE or
	// PATH_STATUS_BACKUP); PeerStatus the status the other end sent ("":
	// none).
	Status     string `json:"status"`
	PeerStatus string `json:"peer_status,omitempty"`
	// CopiesSent counts the copies this end sent on the path (packets a
	// path scheduler sent on several paths, the original on another),
	// from the connection's start to the end of the window.
	CopiesSent uint64 `json:"copies_sent"`
}

// PathEventSummary is one path event: its kind and its time since the
// start of the run in seconds, rounded to the microsecond.
type PathEventSummary struct {
	Event string  `json:"event"`
	TimeS float64 `json:"time_s"`
}

// PathSummary summarises one path from each end.
type PathSummary struct {
	ID uint64 `json:"id"`
	// RTTMS is the configured round-trip propagation delay.
	RTTMS  float64  `json:"rtt_ms"`
	Server *PathEnd `json:"server,omitempty"`
	Client *PathEnd `json:"client,omitempty"`
	// Events are each end's ("server", "client") path events of the
	// path, in order, until the end of the run (the drain included): the
	// stack found it broken (failed), saw it answer again (recovered), or
	// gave it up (abandoned). A path an end had forgotten by the end of
	// the window (abandoned, its state dropped) has events but no
	// statistics of that end.
	Events map[string][]PathEventSummary `json:"events,omitempty"`
}

// Provenance says what produced a result.
type Provenance struct {
	buildinfo.Info
	Backend string `json:"backend"`
	Seed    uint64 `json:"seed"`
	// Started is the wall-clock time the run started (RFC 3339, UTC).
	Started string `json:"started"`
	// PacketProtection is the 1-RTT packet protection the run used:
	// "sim-null" (the simulator's null protection,
	// transport.sim_null_protection) or "tls" (the TLS cipher suite's
	// AEAD).
	PacketProtection string `json:"packet_protection,omitempty"`
	// Emulator is what emulated the links of a run over real sockets:
	// "netem" or "forwarder" (the namespace backend's two modes),
	// "linkemu" (the loopback backend's emulator in the mpq process);
	// empty in the simulator and in a run on two hosts.
	Emulator string `json:"emulator,omitempty"`
}

// Summary is summary.json.
type Summary struct {
	Name    string `json:"name"`
	Backend string `json:"backend"`
	Seed    uint64 `json:"seed"`
	// Point is the index of the run's grid point, Vary its varied keys;
	// Repetition is the run's repetition of Repeat, whose seeds derive
	// from BaseSeed.
	Point      int      `json:"point"`
	Vary       []string `json:"vary"`
	Repetition int      `json:"repetition"`
	Repeat     int      `json:"repeat"`
	BaseSeed   uint64   `json:"base_seed"`
	// ConfigSHA256 identifies the point's resolved configuration (the
	// same for all its repetitions).
	ConfigSHA256 string `json:"config_sha256"`
	// DurationS is the measurement window, DrainS the configured drain
	// period and DrainedS how long the run went on after the window (less
	// than DrainS when every message was done earlier).
	DurationS float64 `json:"duration_s"`
	DrainS    float64 `json:"drain_s"`
	DrainedS  float64 `json:"drained_s"`
	// WarmupS is output.warmup: the per-source statistics leave out the
	// messages created before it (counted in each source's
	// warmup_excluded).
	WarmupS float64 `json:"warmup_s"`
	// Transport says which transport ran (transport.kind), and for the
	// kernel's transports which kernel and congestion controller.
	Transport TransportSummary `json:"transport"`
	// PathScheduler, StreamScheduler, Congestion and NewRenoGrowth are
	// mpq's settings (empty for the other transports).
	PathScheduler   string `json:"path_scheduler"`
	StreamScheduler string `json:"stream_scheduler"`
	Congestion      string `json:"congestion"`
	// NewRenoGrowth is transport.newreno_growth, for newreno and
	// newreno-cwl only.
	NewRenoGrowth string `json:"newreno_growth,omitempty"`
	// SlowStart is transport.slow_start, resolved ("standard" or
	// "hystart++"; empty for bbr and the other transports).
	SlowStart string `json:"slow_start,omitempty"`
	// CongestionReadings are the controllers' readings of another
	// implementation the run used (transport.initial_window and the
	// like); absent when none, the published algorithms.
	CongestionReadings *CongestionReadings `json:"congestion_readings,omitempty"`
	Multipath          bool                `json:"multipath"`
	// WallS is how long the run took on the wall clock, Machine the
	// computer it was measured on (the process that wrote the summary).
	WallS      float64            `json:"wall_s"`
	Machine    *buildinfo.Machine `json:"machine,omitempty"`
	Provenance *Provenance        `json:"provenance,omitempty"`
	Sources    []SourceSummary    `json:"sources"`
	// ThroughputMbps counts per sending end the stream bytes the
	// transport sent in the measurement window, on every path,
	// retransmissions and redundant copies included (the paper's
	// transport-layer throughput); GoodputMbps per sending end the bytes
	// the receiving application read in the window.
	ThroughputMbps Directions    `json:"throughput_mbps"`
	GoodputMbps    Directions    `json:"goodput_mbps"`
	Paths          []PathSummary `json:"paths"`
	// PathsFailed lists the experiment's paths the client could not
	// open; the run went on over the others.
	PathsFailed []PathFailure `json:"paths_failed,omitempty"`
	// CopiesDropped counts the copies the path schedulers of both ends
	// asked for that were not sent, up to the end of the window; by
	// reason (mpquic/core's Copy* reasons) when there are any.
	CopiesDropped         uint64            `json:"copies_dropped"`
	CopiesDroppedByReason map[string]uint64 `json:"copies_dropped_by_reason,omitempty"`
	// ReceiveQueueDropped counts, per end ("client", "server"), the
	// datagrams the end's connection dropped because its receive queue
	// was full: losses in the receiving process, which the transport
	// sees as network losses. Only for real sockets (the simulator has
	// no such queue) and the ends whose transport counts them (mpq).
	ReceiveQueueDropped map[string]uint64 `json:"receive_queue_dropped,omitempty"`
	// Repair is, per end ("client", "server"), what the experimental
	// REPAIR extension did (transport.repair = true only; see
	// RepairSummary).
	Repair map[string]RepairSummary `json:"repair,omitempty"`
	// LinkChanges are the run's scheduled link changes (see
	// LinkChangeSummary).
	LinkChanges []LinkChangeSummary `json:"link_changes,omitempty"`
	// Competitors are the competing connections' results, set by the
	// runner.
	Competitors []CompetitorSummary `json:"competitors,omitempty"`
	// ZeroRTT is what became of 0-RTT on the measured connection, with
	// transport.zero_rtt.
	ZeroRTT  *ZeroRTTSummary `json:"zero_rtt,omitempty"`
	Problems []string        `json:"problems,omitempty"`
}

// RepairSummary is one end's REPAIR counts up to the end of the
// measurement window (core.RepairStats): as the sender, the bursts its
// path scheduler was asked about, the parities it sent, their REPAIR
// frames and parity bytes, and the parities asked for and not sent by
// reason; as the receiver, the stream bytes it rebuilt from the peer's
// parities (delivered without a retransmission) and the parity ranges
// (one per burst, a message of trafficgen's) it rebuilt bytes from.
// Negotiated says whether both ends offered the extension: a path
// scheduler that sends parity does without it otherwise (cwr-plus sends
// whole copies instead).
type RepairSummary struct {
	Negotiated   bool   `json:"negotiated"`
	BurstsAsked  uint64 `json:"bursts_asked"`
	ParitiesSent uint64 `json:"parities_sent"`
	// SecondNegotiated: both ends offered REPAIR_Q frames too;
	// SecondParitiesSent: of the parities sent, the second (REPAIR_Q)
	// ones.
	SecondNegotiated   bool              `json:"second_negotiated,omitempty"`
	SecondParitiesSent uint64            `json:"second_parities_sent,omitempty"`
	FramesSent         uint64            `json:"frames_sent"`
	ParityBytesSent    uint64            `json:"parity_bytes_sent"`
	ParitiesDropped    map[string]uint64 `json:"parities_dropped,omitempty"`
	RebuiltBytes       uint64            `json:"rebuilt_bytes"`
	RebuiltRanges      uint64            `json:"rebuilt_ranges"`
}

// NewRepairSummary converts a connection's counts.
func NewRepairSummary(s core.RepairStats) RepairSummary {
	r := RepairSummary{Negotiated: s.Negotiated, BurstsAsked: s.Asked, ParitiesSent: s.Sent, FramesSent: s.Frames, ParityBytesSent: s.Bytes,
		SecondNegotiated: s.SecondNegotiated, SecondParitiesSent: s.SecondSent,
		RebuiltBytes: s.RebuiltBytes, RebuiltRanges: s.RebuiltRanges}
	if len(s.Dropped) > 0 {
		r.ParitiesDropped = maps.Clone(s.Dropped)
	}
	return r
}

// ZeroRTTSummary is the 0-RTT state of the client end of a connection that
// resumed with transport.zero_rtt (core.EarlyDataState).
type ZeroRTTSummary struct {
	// Resumed: the TLS handshake resumed the warm-up connection's
	// session. Offered: the client had 0-RTT keys. Accepted: the server
	// accepted the early data (rejected data went again in 1-RTT).
	Resumed  bool `json:"resumed"`
	Offered  bool `json:"offered"`
	Accepted bool `json:"accepted"`
	// PacketsSent and StreamBytesSent count the client's 0-RTT packets
	// and the stream bytes they carried, retransmissions included.
	PacketsSent     uint64 `json:"packets_sent"`
	StreamBytesSent uint64 `json:"stream_bytes_sent"`
}

// CongestionReadings are the congestion controllers' readings of another
// implementation a run used (transport.initial_window,
// emulated_connections, loss_reduction, cwnd_limited, rto_collapse,
// cubic_alpha, cubic_target, olia_best_overflow).
type CongestionReadings struct {
	// InitialWindow is the initial window in datagrams (0: RFC 9002's).
	InitialWindow int `json:"initial_window,omitempty"`
	// EmulatedConnections is N (1: one connection).
	EmulatedConnections int `json:"emulated_connections"`
	// LossReduction is β (0: the controller's own).
	LossReduction float64 `json:"loss_reduction,omitempty"`
	CwndLimited   bool    `json:"cwnd_limited"`
	RTOCollapse   bool    `json:"rto_collapse"`
	// CubicAlpha is cubic's Reno-friendly alpha reading ("": ours,
	// alpha 1 from W_max; "rfc9438"; "linux").
	CubicAlpha string `json:"cubic_alpha,omitempty"`
	// CubicTarget: cubic's window set to its target at each
	// acknowledgement (MPQUIC's reading).
	CubicTarget bool `json:"cubic_target,omitempty"`
	// OLIABestOverflow: OLIA's best paths decided by MPQUIC's int64
	// comparison, which overflows (MPQUIC's reading).
	OLIABestOverflow bool `json:"olia_best_overflow,omitempty"`
}

// TransportSummary describes the transport of a run.
type TransportSummary struct {
	// Kind is transport.kind: mpq, quic-go, tcp, tls or mptcp (over
	// real sockets the runner replaces it with the kind of the
	// connection that ran).
	Kind string `json:"kind"`
	// Kernel is the client's kernel release (uname -r) and Congestion the
	// congestion controller the kernel ran on the client's socket
	// (TCP_CONGESTION read back), for tcp, tls and mptcp.
	Kernel     string `json:"kernel,omitempty"`
	Congestion string `json:"congestion,omitempty"`
	// Connection is transport.connection for the baselines ("shared" or
	// "per-request"), and Connections the number of connections the
	// server accepted that carried the run's messages (over real
	// sockets; not the warm-up connection of transport.zero_rtt, nor
	// connections refused).
	Connection  string `json:"connection,omitempty"`
	Connections int    `json:"connections,omitempty"`
	// MaxConnections is the largest number of connections the client had
	// open at once ("per-request" and "pool"; a connection counts from
	// the start of its dial to its close), and ConnectionsPer1000
	// Connections per 1000 of the client's messages (warm-up included),
	// reference 000's sessions per 1000 requests.
	MaxConnections     int     `json:"max_connections,omitempty"`
	ConnectionsPer1000 float64 `json:"connections_per_1000,omitempty"`
	// Note says what the transport's numbers mean where they differ from
	// mpq's (see docs/reference/transports.md, Baseline transports).
	Note string `json:"note,omitempty"`
}

// SummaryInput is what the runner knows at the end of a run.
type SummaryInput struct {
	// Server and Client are the connection ends' path statistics at the
	// end of the measurement window (Client may be nil).
	Server, Client []core.PathStats
	Multipath      bool
	// BaseRTT is the configured round-trip propagation delay of each
	// path by ID (the RTT of the Table I cwnd growth).
	BaseRTT []time.Duration
	// Drained is how long the run went on after the window.
	Drained time.Duration
	// CopiesDropped counts, per reason, the copies both ends' path
	// schedulers asked for that were not sent.
	CopiesDropped map[string]uint64
	// ServerEvents and ClientEvents are the ends' path events (failed,
	// recovered, abandoned) up to the end of the run, those of paths
	// already forgotten included; nil takes those of Server and Client.
	ServerEvents, ClientEvents []core.PathEvent
	// EarlyData is the client's 0-RTT state, with transport.zero_rtt.
	EarlyData *core.EarlyDataState
	// ReceiveQueueDropped is, per end ("client", "server"), what its
	// connection dropped at its full receive queue, for the ends that
	// count it (nil: none does).
	ReceiveQueueDropped map[string]uint64
	// Repair is, per end, its REPAIR counts (with transport.repair).
	Repair map[string]RepairSummary
}

// Summarise computes the summary of a finished run (after Finish).
func (r *Recorder) Summarise(e *experiment.Experiment, in SummaryInput) *Summary {
	dur := r.end.Sub(r.start)
	vary := e.Vary
	if vary == nil {
		vary = []string{}
	}
	s := &Summary{Name: e.Name, Backend: e.Backend, Seed: e.Seed,
		Point: e.Point, Vary: vary, Repetition: e.Repetition, Repeat: max(e.Repeat, 1), BaseSeed: e.BaseSeed,
		ConfigSHA256: e.PointSHA256(),
		DurationS:    dur.Seconds(), DrainS: e.Drain.Seconds(), DrainedS: math.Round(in.Drained.Seconds()*1e6) / 1e6,
		WarmupS:       r.cfg.Warmup.Seconds(),
		PathScheduler: e.Transport.PathScheduler, StreamScheduler: e.Transport.StreamScheduler,
		Congestion: e.Transport.Congestion, Multipath: in.Multipath, Problems: r.problems, PathsFailed: r.pathsFailed}
	if strings.HasPrefix(e.Transport.Congestion, "newreno") {
		s.NewRenoGrowth = e.Transport.NewRenoGrowth
	}
	s.SlowStart = e.Transport.SlowStart
	if r := e.Transport.CongestionReadings; !r.IsZero() {
		s.CongestionReadings = &CongestionReadings{InitialWindow: r.InitialWindow, EmulatedConnections: max(r.EmulatedConnections, 1),
			LossReduction: r.LossReduction, CwndLimited: r.CwndLimited, RTOCollapse: r.RTOCollapse, CubicAlpha: string(r.CubicAlpha), CubicTarget: r.CubicTarget,
			OLIABestOverflow: r.OLIABestOverflow}
	}
	s.Transport = TransportSummary{Kind: e.Transport.Kind}
	if s.Transport.Kind == "" {
		s.Transport.Kind = experiment.KindMPQ
	}
	if s.Transport.Kind != experiment.KindMPQ {
		s.PathScheduler, s.StreamScheduler, s.Congestion, s.NewRenoGrowth, s.SlowStart = "", "", "", "", ""
		s.CongestionReadings = nil
		s.Transport.Note = TransportNote(s.Transport.Kind)
		s.Transport.Connection = e.Transport.Connection
	}
	if d := in.EarlyData; d != nil {
		s.ZeroRTT = &ZeroRTTSummary{Resumed: d.Resumed, Offered: d.Offered, Accepted: d.Accepted,
			PacketsSent: d.PacketsSent, StreamBytesSent: d.StreamBytesSent}
	}
	for i, src := range r.sources {
		ss := r.sourceSummary(i, src, dur)
		r.disruption(&ss, i, src, e, r.end.Add(in.Drained))
		s.Sources = append(s.Sources, ss)
	}
	if len(in.ReceiveQueueDropped) > 0 {
		s.ReceiveQueueDropped = maps.Clone(in.ReceiveQueueDropped)
	}
	if len(in.Repair) > 0 {
		s.Repair = maps.Clone(in.Repair)
	}
	for reason, n := range in.CopiesDropped {
		if n == 0 {
			continue
		}
		if s.CopiesDroppedByReason == nil {
			s.CopiesDroppedByReason = map[string]uint64{}
		}
		s.CopiesDroppedByReason[reason] = n
		s.CopiesDropped += n
	}
	mbps := func(b uint64) float64 {
		if dur <= 0 {
			return 0
		}
		return math.Round(float64(b)*8/dur.Seconds()/1e3) / 1e3
	}
	rate := func(c [2]uint64) Throughput {
		return Throughput{Total: mbps(c[0] + c[1]), Priority: mbps(c[0]), Background: mbps(c[1])}
	}
	sentBy := func(vantage string) (tot [2]uint64) {
		for _, b := range r.sentWin[vantage] {
			tot[0] += b[0]
			tot[1] += b[1]
		}
		return tot
	}
	gotFrom := func(sender string) (tot [2]uint64) {
		if b := r.gotWin[sender]; b != nil {
			tot = *b
		}
		return tot
	}
	s.ThroughputMbps = Directions{Server: rate(sentBy("server")), Client: rate(sentBy("client"))}
	s.GoodputMbps = Directions{Server: rate(gotFrom("server")), Client: rate(gotFrom("client"))}
	s.Paths = r.pathSummaries(in)
	s.LinkChanges = LinkChanges(e)
	return s
}

// pathSummaries joins both ends' statistics by path ID.
func (r *Recorder) pathSummaries(in SummaryInput) []PathSummary {
	byID := map[uint64]*PathSummary{}
	for _, side := range []struct {
		vantage string
		stats   []core.PathStats
	}{{"server", in.Server}, {"client", in.Client}} {
		for _, ps := range side.stats {
			p := byID[ps.ID]
			if p == nil {
				p = &PathSummary{ID: ps.ID}
				if int(ps.ID) < len(in.BaseRTT) {
					p.RTTMS = ms(in.BaseRTT[ps.ID])
				}
				byID[ps.ID] = p
			}
			var rtt time.Duration
			if int(ps.ID) < len(in.BaseRTT) {
				rtt = in.BaseRTT[ps.ID]
			}
			end := &PathEnd{
				BytesSent: ps.BytesSent, BytesReceived: ps.BytesReceived,
				PacketsSent: ps.PacketsSent, PacketsLost: ps.PacketsLost,
				SRTTMS: ms(ps.SmoothedRTT), MinRTTMS: ms(ps.MinRTT), CwndBytes: ps.CongestionWindow,
				ReservationsMissed: ps.SchedulerCounters["reservations_missed"],
				State:              ps.State,
				Status:             ps.Status,
				PeerStatus:         ps.PeerStatus,
				CopiesSent:         ps.CopiesSent,
			}
			if pl := r.paths[pathKey{side.vantage, ps.ID}]; pl != nil {
				if g := pl.ca.perRTT(rtt); !math.IsNaN(g) {
					g = math.Round(g*10) / 10
					end.CwndGrowthCA = &g
				}
			}
			if w := r.sentWin[side.vantage][ps.ID]; w != nil {
				end.StreamBytesSent = w[0] + w[1]
			}
			if side.vantage == "server" {
				p.Server = end
			} else {
				p.Client = end
			}
		}
	}
	for _, side := range []struct {
		vantage string
		events  []core.PathEvent
		stats   []core.PathStats
	}{{"server", in.ServerEvents, in.Server}, {"client", in.ClientEvents, in.Client}} {
		ev := side.events
		if ev == nil {
			for _, ps := range side.stats {
				ev = append(ev, ps.Events...)
			}
		}
		for _, e := range ev {
			p := byID[e.PathID]
			if p == nil {
				// A path forgotten before the end of the window.
				p = &PathSummary{ID: e.PathID}
				if int(e.PathID) < len(in.BaseRTT) {
					p.RTTMS = ms(in.BaseRTT[e.PathID])
				}
				byID[e.PathID] = p
			}
			if p.Events == nil {
				p.Events = map[string][]PathEventSummary{}
			}
			p.Events[side.vantage] = append(p.Events[side.vantage], PathEventSummary{Event: e.Kind, TimeS: math.Round(e.At.Sub(r.start).Seconds()*1e6) / 1e6})
		}
	}
	out := make([]PathSummary, 0, len(byID))
	for _, id := range sortedPaths(byID) {
		out = append(out, *byID[id])
	}
	return out
}

func (r *Recorder) sourceSummary(i int, src experiment.Source, dur time.Duration) SourceSummary {
	f := func(v float64) *float64 { return &v }
	ss := SourceSummary{Name: src.Name, Kind: src.Kind, Sender: SenderSide(src.Kind), Priority: src.Priority}
	if src.Kind != experiment.KindBulk {
		rp := src.ReplyPriority
		ss.ReplyPriority = &rp
	}
	mbps := func(b uint64) float64 {
		if dur <= 0 {
			return 0
		}
		return math.Round(float64(b)*8/dur.Seconds()/1e3) / 1e3
	}
	ss.GoodputMbps = mbps(r.srcGot[i][0])
	if src.Kind == experiment.KindBulk {
		return ss
	}
	ss.ReplyGoodputMbps = f(mbps(r.srcGot[i][1]))
	var mcts, resp []time.Duration
	mctFailed, respFailed := 0, 0
	// Stop-and-wait's completion ratio and time are over every publish
	// of the count, warm-up or not.
	allCompleted := 0
	var first, firstWritten, firstReplied, lastReply time.Time
	for _, m := range r.msgs[i] {
		if m == nil {
			continue
		}
		if first.IsZero() {
			first, firstWritten = m.Created, m.Written
			if m.Completed {
				firstReplied = m.Replied
			}
		}
		if m.Completed {
			allCompleted++
			if m.Replied.After(lastReply) {
				lastReply = m.Replied
			}
		}
		if r.InWarmup(m) {
			ss.WarmupExcluded++
			continue
		}
		ss.Messages++
		if m.Completed {
			ss.Completed++
		} else {
			ss.Failed++
			if ss.Failures == nil {
				ss.Failures = map[string]int{}
			}
			reason := m.Failed
			if reason == "" {
				reason = FailTimeout // Summarise before Finish
			}
			ss.Failures[reason]++
		}
		if d, ok := m.MCT(); ok {
			mcts = append(mcts, d)
		} else {
			mctFailed++
		}
		if d, ok := m.ResponseTime(); ok && m.Completed {
			resp = append(resp, d)
		} else {
			respFailed++
		}
	}
	if ss.Messages > 0 {
		ss.DeliveredRatio = f(float64(ss.Completed) / float64(ss.Messages))
	}
	ss.MCTMS = Distribution(mcts, mctFailed)
	if !HasReply(src.Kind) {
		return ss
	}
	ss.ResponseMS = Distribution(resp, respFailed)
	if j := Jitter(resp); !math.IsNaN(j) {
		ss.Jitter = f(math.Round(j*1e4) / 1e4)
	}
	if src.Kind == experiment.KindStopAndWait {
		if src.Count > 0 {
			ss.CompletionRatio = f(float64(allCompleted) / float64(src.Count))
		}
		t := Inf
		if allCompleted == src.Count && src.Count > 0 {
			t = Millis(ms(lastReply.Sub(first)))
		}
		ss.CompletionTimeMS = &t
		if !firstWritten.IsZero() && !r.ConnectStart.IsZero() {
			ss.ConnectToFirstMS = f(ms(firstWritten.Sub(r.ConnectStart)))
		}
		if !r.ConnectStart.IsZero() && src.Count > 0 {
			ack := Inf
			if !firstReplied.IsZero() {
				ack = Millis(ms(firstReplied.Sub(r.ConnectStart)))
			}
			ss.ConnectToFirstAckMS = &ack
		}
	}
	return ss
}

// disruption fills the disruption fields of the summary of source i, a
// priority source with an interval.
// end is when the run ended (the window and the drain).
func (r *Recorder) disruption(ss *SourceSummary, i int, src experiment.Source, e *experiment.Experiment, end time.Time) {
	if !src.Priority || src.Interval <= 0 || src.Kind == experiment.KindBulk {
		return
	}
	var delivered, lost []time.Time
	for _, m := range r.msgs[i] {
		switch {
		case m == nil:
		case !m.Delivered.IsZero():
			delivered = append(delivered, m.Delivered)
		default:
			lost = append(lost, m.Created)
		}
	}
	if d, ok := Disruption(delivered, lost, end, src.Interval); ok {
		ss.DisruptionMS = &d
	}
	if at, rtt, ok := FirstChange(e); ok {
		n := LateSince(r.msgs[i], r.start.Add(at-rtt), rtt)
		ss.LateAfterChange = &n
	}
}

// TransportNote is what summary.json says about the numbers of a
// baseline transport.
func TransportNote(kind string) string {
	switch kind {
	case experiment.KindQuicGo:
		return "throughput_mbps counts the stream bytes quic-go's streams took from the application (not the bytes it sent); paths[] are quic-go's connection statistics (QUIC packet bytes); single path"
	case experiment.KindTCP, experiment.KindTLS:
		return "streams are frames on one connection (no priorities: one byte stream); throughput_mbps counts the stream bytes the kernel's socket took; paths[] are the kernel's tcp_info (TCP payload bytes, TLS records included)"
	case experiment.KindMPTCP:
		return "streams are frames on one connection (no priorities); throughput_mbps is not measured (the kernel splits the bytes over subflows; no per-path hand-over count); paths[] are the client's tcp_info per subflow"
	}
	return ""
}
