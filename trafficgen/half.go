package trafficgen

import (
	"fmt"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
)

// Half is what one end of a run recorded when the two ends run in
// different processes or on different hosts (mpq run --role): the
// messages it sent and received, the path samples and rates it saw, and
// its connection's path statistics. Times are its own clock's.
// MergeHalves joins the halves of both ends into the Recorder one process
// would have had. A Half is written as JSON.
type Half struct {
	// Side is "client" or "server".
	Side string `json:"side"`
	// Start is the end's time zero; the other fields of the recorder's
	// configuration follow.
	Start        time.Time     `json:"start"`
	Duration     time.Duration `json:"duration_ns"`
	Interval     time.Duration `json:"interval_ns"`
	PathInterval time.Duration `json:"path_interval_ns"`
	// Messages are this end's records: those of the sources it sends and
	// those it received (rebuilt from their headers: Created from the
	// sender's clock, Delivered from ours).
	Messages []*MessageRecord `json:"messages"`
	Samples  []PathSample     `json:"samples"`
	// The recorder's rates: see Recorder.
	Sent    map[string]map[uint64]*[2][]uint64 `json:"sent"`
	SentWin map[string]map[uint64]*[2]uint64   `json:"sent_window"`
	Got     map[string]*[2][]uint64            `json:"got"`
	GotWin  map[string]*[2]uint64              `json:"got_window"`
	SrcGot  [][2]uint64                        `json:"source_got"`
	// Growth is the congestion window growth in congestion avoidance of
	// each path this end saw.
	Growth       []HalfGrowth `json:"cwnd_growth"`
	Problems     []string     `json:"problems,omitempty"`
	ConnectStart time.Time    `json:"connect_start"`
	// PathsFailed are the paths the client could not open.
	PathsFailed []PathFailure `json:"paths_failed,omitempty"`
	// Paths are the end's path statistics at the end of the measurement
	// window; Multipath whether its connection negotiated multipath;
	// Drained how long it went on after the window.
	Paths     []core.PathStats `json:"paths"`
	Multipath bool             `json:"multipath"`
	// PathEvents are the end's path events (failed, recovered,
	// abandoned), those of paths already forgotten included.
	PathEvents []core.PathEvent `json:"path_events,omitempty"`
	Drained    time.Duration    `json:"drained_ns"`
	// EarlyData is the client's 0-RTT state (transport.zero_rtt).
	EarlyData *core.EarlyDataState `json:"early_data,omitempty"`
	// CopiesDropped counts, per reason, the copies this end's path
	// scheduler asked for that were not sent, up to the end of the
	// window.
	CopiesDropped map[string]uint64 `json:"copies_dropped,omitempty"`
	// ReceiveQueueDropped is what this end's connection dropped at its
	// full receive queue (nil: its transport does not count it).
	ReceiveQueueDropped *uint64 `json:"receive_queue_dropped,omitempty"`
	// Repair is this end's REPAIR counts (nil without transport.repair).
	Repair *RepairSummary `json:"repair,omitempty"`
}

// HalfGrowth is the state of one path's congestion window growth (see
// CwndGrowthCA) in a Half.
type HalfGrowth struct {
	Vantage string        `json:"vantage"`
	PathID  uint64        `json:"path_id"`
	Grow    float64       `json:"grow"`
	Span    time.Duration `json:"span_ns"`
	In      bool          `json:"in"`
	StartT  time.Time     `json:"start_t"`
	StartW  uint64        `json:"start_w"`
	LastT   time.Time     `json:"last_t"`
	LastW   uint64        `json:"last_w"`
}

// Half returns what the recorder holds as the half of side, with the
// end's connection statistics in. Take it after Finish: it shares the
// recorder's records.
func (r *Recorder) Half(side string, in SummaryInput) *Half {
	h := &Half{Side: side, Start: r.start, Duration: r.cfg.Duration, Interval: r.cfg.Interval, PathInterval: r.cfg.PathInterval,
		Messages: r.Messages(), Samples: r.samples, Sent: r.sent, SentWin: r.sentWin, Got: r.got, GotWin: r.gotWin,
		SrcGot: r.srcGot, Problems: r.problems, ConnectStart: r.ConnectStart, PathsFailed: r.pathsFailed,
		Multipath: in.Multipath, Drained: in.Drained, Paths: in.Server, PathEvents: in.ServerEvents}
	if side == "client" {
		h.Paths, h.PathEvents, h.EarlyData = in.Client, in.ClientEvents, in.EarlyData
	}
	h.CopiesDropped = in.CopiesDropped
	if n, ok := in.ReceiveQueueDropped[side]; ok {
		h.ReceiveQueueDropped = &n
	}
	if rs, ok := in.Repair[side]; ok {
		h.Repair = &rs
	}
	for _, k := range sortedPathKeys(r.paths) {
		g := r.paths[k].ca
		h.Growth = append(h.Growth, HalfGrowth{Vantage: k.vantage, PathID: k.id, Grow: g.grow, Span: g.span, In: g.in,
			StartT: g.startT, StartW: g.startW, LastT: g.lastT, LastW: g.lastW})
	}
	return h
}

// MergeHalves joins the client's and the server's halves of one run of e
// into a finished Recorder and the input of its summary.
//
// A message's record is its sender's, with the time the receiver had all
// of it (Delivered) from the receiver's half. A message without a reply
// completes when it is delivered, which only the receiver knows: the
// receiver's half says whether it completed. A message with a reply
// completes with its reply, which only the sender knows; when the sender
// gave up on it (timeout) and the receiver had it, it failed for want of
// a reply ("no reply"), as in one process.
//
// The run's time zero is the client's; the server's bins are taken as
// covering the same intervals (the server's time zero is the client's,
// translated into its clock when the run began). Rates of the two ends
// are disjoint (by sending and by receiving end) and add up; path samples
// are ordered by time; problems keep the side they come from.
func MergeHalves(e *experiment.Experiment, client, server *Half) (*Recorder, SummaryInput, error) {
	var in SummaryInput
	if client == nil || server == nil || client.Side != "client" || server.Side != "server" {
		return nil, in, fmt.Errorf("trafficgen: need a client and a server half")
	}
	if client.Interval != server.Interval || client.Interval <= 0 || client.Duration != server.Duration {
		return nil, in, fmt.Errorf("trafficgen: the halves come from different configurations (bins of %v and %v, durations %v and %v)",
			client.Interval, server.Interval, client.Duration, server.Duration)
	}
	r := NewRecorder(RecorderConfig{Sources: e.Sources, Start: client.Start, Duration: client.Duration,
		Interval: client.Interval, PathInterval: client.PathInterval, Warmup: e.Output.Warmup})
	r.ConnectStart = client.ConnectStart
	check := func(h *Half, m *MessageRecord) error {
		if m.Source < 0 || m.Source >= len(e.Sources) || e.Sources[m.Source].Kind != m.Kind {
			return fmt.Errorf("trafficgen: %s half: message %d of unknown source %d (%s)", h.Side, m.Seq, m.Source, m.Kind)
		}
		return nil
	}
	for _, h := range []*Half{client, server} {
		for _, m := range h.Messages {
			if err := check(h, m); err != nil {
				return nil, in, err
			}
			if SenderSide(m.Kind) != h.Side {
				continue
			}
			if r.record(m.Source, m.Seq) != nil {
				return nil, in, fmt.Errorf("trafficgen: %s half: message %d of source %d twice", h.Side, m.Seq, m.Source)
			}
			c := *m
			r.msgs[m.Source][m.Seq] = &c
		}
	}
	for _, h := range []*Half{client, server} {
		for _, m := range h.Messages {
			if SenderSide(m.Kind) == h.Side {
				continue
			}
			s := r.record(m.Source, m.Seq)
			if s == nil {
				// The sender has no record of it (a message of an
				// unknown sender): keep the receiver's.
				c := *m
				r.msgs[m.Source][m.Seq] = &c
				continue
			}
			if s.Delivered.IsZero() {
				s.Delivered = m.Delivered
			}
			switch {
			case !HasReply(m.Kind):
				s.Completed = m.Completed
				s.Failed = ""
				if !s.Completed {
					s.Failed = m.Failed
				}
			case s.Failed == FailTimeout && !s.Delivered.IsZero():
				s.Failed = FailNoReply
			}
		}
	}
	for _, h := range []*Half{client, server} {
		for v, paths := range h.Sent {
			if r.sent[v] != nil {
				return nil, in, fmt.Errorf("trafficgen: both halves sent as the %s", v)
			}
			r.sent[v] = paths
			r.sentWin[v] = h.SentWin[v]
			if r.sentWin[v] == nil {
				r.sentWin[v] = map[uint64]*[2]uint64{}
			}
		}
		for sender, b := range h.Got {
			if r.got[sender] != nil {
				return nil, in, fmt.Errorf("trafficgen: both halves read what the %s sent", sender)
			}
			r.got[sender] = b
			if w := h.GotWin[sender]; w != nil {
				r.gotWin[sender] = w
			}
		}
		for i := range min(len(h.SrcGot), len(r.srcGot)) {
			r.srcGot[i][0] += h.SrcGot[i][0]
			r.srcGot[i][1] += h.SrcGot[i][1]
		}
		for _, g := range h.Growth {
			r.paths[pathKey{g.Vantage, g.PathID}] = &pathLog{ca: caGrowth{grow: g.Grow, span: g.Span, in: g.In,
				startT: g.StartT, startW: g.StartW, lastT: g.LastT, lastW: g.LastW}}
		}
		for _, p := range h.Problems {
			r.problems = append(r.problems, h.Side+": "+p)
		}
		r.pathsFailed = append(r.pathsFailed, h.PathsFailed...)
		r.samples = append(r.samples, h.Samples...)
	}
	sortSamples(r.samples)
	r.finished = true
	in = SummaryInput{Server: server.Paths, Client: client.Paths, Multipath: server.Multipath, Drained: max(client.Drained, server.Drained),
		ServerEvents: shiftEvents(server.PathEvents, server.Start, r.start), ClientEvents: shiftEvents(client.PathEvents, client.Start, r.start)}
	in.EarlyData = client.EarlyData
	for _, h := range []*Half{client, server} {
		for reason, n := range h.CopiesDropped {
			if in.CopiesDropped == nil {
				in.CopiesDropped = map[string]uint64{}
			}
			in.CopiesDropped[reason] += n
		}
		if h.ReceiveQueueDropped != nil {
			if in.ReceiveQueueDropped == nil {
				in.ReceiveQueueDropped = map[string]uint64{}
			}
			in.ReceiveQueueDropped[h.Side] = *h.ReceiveQueueDropped
		}
		if h.Repair != nil {
			if in.Repair == nil {
				in.Repair = map[string]RepairSummary{}
			}
			in.Repair[h.Side] = *h.Repair
		}
	}
	return r, in, nil
}

// shiftEvents moves path events from the time base of an end whose time
// zero was from to the time zero to.
func shiftEvents(ev []core.PathEvent, from, to time.Time) []core.PathEvent {
	if ev == nil {
		return nil
	}
	out := make([]core.PathEvent, len(ev))
	for i, e := range ev {
		e.At = to.Add(e.At.Sub(from))
		out[i] = e
	}
	return out
}
