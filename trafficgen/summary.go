package trafficgen

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
)

// Dist summarises a distribution of durations in milliseconds; quantiles
// are nearest-rank.
type Dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// Distribution summarises ds (nil if empty).
func Distribution(ds []time.Duration) *Dist {
	if len(ds) == 0 {
		return nil
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return ms(s[min(max(i, 0), len(s)-1)])
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return &Dist{N: len(s), Min: ms(s[0]), P50: q(0.5), P90: q(0.9), P99: q(0.99), P999: q(0.999),
		Max: ms(s[len(s)-1]), Mean: ms(sum / time.Duration(len(s)))}
}

// Jitter is the mean absolute difference of consecutive delays divided by
// the mean delay, the jitter of the cloud control study (reference 000);
// NaN with fewer than two delays.
func Jitter(ds []time.Duration) float64 {
	if len(ds) < 2 {
		return math.NaN()
	}
	var diff, sum float64
	for i, d := range ds {
		sum += float64(d)
		if i > 0 {
			diff += math.Abs(float64(d - ds[i-1]))
		}
	}
	mean := sum / float64(len(ds))
	if mean == 0 {
		return 0
	}
	return diff / float64(len(ds)-1) / mean
}

// Throughput in Mbit/s.
type Throughput struct {
	Total      float64 `json:"total"`
	Priority   float64 `json:"priority"`
	Background float64 `json:"background"`
}

// SourceSummary summarises one source.
type SourceSummary struct {
	Name              string   `json:"name"`
	Kind              string   `json:"kind"`
	Priority          bool     `json:"priority"`
	MessagesSent      int      `json:"messages_sent"`
	MessagesCompleted int      `json:"messages_completed"`
	MessagesFailed    int      `json:"messages_failed"`
	MCTMS             *Dist    `json:"mct_ms"`
	ResponseMS        *Dist    `json:"response_ms,omitempty"`
	Jitter            *float64 `json:"jitter,omitempty"`
	CompletionRatio   *float64 `json:"completion_ratio,omitempty"`
	ConnectToFirstMS  *float64 `json:"connect_to_first_ms,omitempty"`
	ThroughputMbps    *float64 `json:"throughput_mbps,omitempty"`
}

// PathSummary summarises one path, as the sending (server) end saw it.
type PathSummary struct {
	ID                 uint64  `json:"id"`
	BytesSent          uint64  `json:"bytes_sent"`
	BytesReceived      uint64  `json:"bytes_received"`
	PacketsSent        uint64  `json:"packets_sent"`
	PacketsLost        uint64  `json:"packets_lost"`
	SRTTMS             float64 `json:"srtt_ms"`
	MinRTTMS           float64 `json:"min_rtt_ms"`
	CwndBytes          uint64  `json:"cwnd_bytes"`
	CwndGrowthCA       float64 `json:"cwnd_growth_ca_bytes_per_rtt"`
	ReservationsMissed uint64  `json:"reservations_missed"`
	StreamBytesSent    uint64  `json:"stream_bytes_sent"`
	State              string  `json:"state"`
}

// Summary is summary.json.
type Summary struct {
	Name            string          `json:"name"`
	Backend         string          `json:"backend"`
	Seed            uint64          `json:"seed"`
	DurationS       float64         `json:"duration_s"`
	PathScheduler   string          `json:"path_scheduler"`
	StreamScheduler string          `json:"stream_scheduler"`
	Congestion      string          `json:"congestion"`
	Vary            []string        `json:"vary,omitempty"`
	Multipath       bool            `json:"multipath"`
	Sources         []SourceSummary `json:"sources"`
	// ThroughputMbps counts stream bytes sent by the transport, on every
	// path, retransmissions and redundant copies included (the paper's
	// transport-layer throughput); GoodputMbps the bytes the receiving
	// applications read.
	ThroughputMbps Throughput    `json:"throughput_mbps"`
	GoodputMbps    Throughput    `json:"goodput_mbps"`
	Paths          []PathSummary `json:"paths"`
	Problems       []string      `json:"problems,omitempty"`
}

// Summarise computes the summary of a finished run. end is the end of the
// measurement, paths the final statistics of the server's connection,
// baseRTT the configured round-trip propagation delay of each path (the
// RTT of the Table I cwnd growth).
func (r *Recorder) Summarise(e *experiment.Experiment, end time.Time, paths []core.PathStats, multipath bool, baseRTT []time.Duration) *Summary {
	dur := end.Sub(r.start)
	s := &Summary{Name: e.Name, Backend: e.Backend, Seed: e.Seed, DurationS: dur.Seconds(),
		PathScheduler: e.Transport.PathScheduler, StreamScheduler: e.Transport.StreamScheduler,
		Congestion: e.Transport.Congestion, Vary: e.Vary, Multipath: multipath, Problems: r.problems}
	for i, src := range r.sources {
		s.Sources = append(s.Sources, r.sourceSummary(i, src, dur))
	}
	mbps := func(b uint64) float64 {
		if dur <= 0 {
			return 0
		}
		return math.Round(float64(b)*8/dur.Seconds()/1e3) / 1e3
	}
	var sent [2]uint64
	perPath := map[uint64]uint64{}
	for _, vp := range r.sent {
		for id, b := range vp {
			for c := range 2 {
				for _, n := range b[c] {
					sent[c] += n
					perPath[id] += n
				}
			}
		}
	}
	s.ThroughputMbps = Throughput{Total: mbps(sent[0] + sent[1]), Priority: mbps(sent[0]), Background: mbps(sent[1])}
	var got [2]uint64
	for c := range 2 {
		for _, n := range r.got[c] {
			got[c] += n
		}
	}
	s.GoodputMbps = Throughput{Total: mbps(got[0] + got[1]), Priority: mbps(got[0]), Background: mbps(got[1])}
	for _, ps := range paths {
		rtt := time.Duration(0)
		if int(ps.ID) < len(baseRTT) {
			rtt = baseRTT[ps.ID]
		}
		s.Paths = append(s.Paths, PathSummary{
			ID: ps.ID, BytesSent: ps.BytesSent, BytesReceived: ps.BytesReceived,
			PacketsSent: ps.PacketsSent, PacketsLost: ps.PacketsLost,
			SRTTMS: ms(ps.SmoothedRTT), MinRTTMS: ms(ps.MinRTT), CwndBytes: ps.CongestionWindow,
			CwndGrowthCA:       math.Round(CwndGrowthCA(r.samples, "server", ps.ID, rtt)*10) / 10,
			ReservationsMissed: ps.SchedulerCounters["reservations_missed"],
			StreamBytesSent:    perPath[ps.ID], State: ps.State,
		})
	}
	return s
}

func (r *Recorder) sourceSummary(i int, src experiment.Source, dur time.Duration) SourceSummary {
	ss := SourceSummary{Name: src.Name, Kind: src.Kind, Priority: src.Priority}
	var mcts, resp []time.Duration
	var firstReply time.Time
	var delivered uint64
	for _, m := range r.msgs[i] {
		if m == nil {
			continue
		}
		ss.MessagesSent++
		if d, ok := m.MCT(); ok {
			ss.MessagesCompleted++
			mcts = append(mcts, d)
			delivered += m.Length
		}
		if d, ok := m.ResponseTime(); ok && m.Failed == "" {
			resp = append(resp, d)
			if firstReply.IsZero() || m.Replied.Before(firstReply) {
				firstReply = m.Replied
			}
		}
		if m.Failed != "" {
			ss.MessagesFailed++
		}
	}
	ss.MCTMS = Distribution(mcts)
	f := func(v float64) *float64 { return &v }
	switch src.Kind {
	case experiment.KindRequestResponse, experiment.KindFrames, experiment.KindFile, experiment.KindStopAndWait:
		ss.ResponseMS = Distribution(resp)
		if j := Jitter(resp); !math.IsNaN(j) {
			ss.Jitter = f(math.Round(j*1e4) / 1e4)
		}
	}
	switch src.Kind {
	case experiment.KindStopAndWait:
		if src.Count > 0 {
			ss.CompletionRatio = f(float64(len(resp)) / float64(src.Count))
		}
		if !firstReply.IsZero() && !r.ConnectStart.IsZero() {
			ss.ConnectToFirstMS = f(ms(firstReply.Sub(r.ConnectStart)))
		}
	case experiment.KindFrames:
		if dur > 0 {
			ss.ThroughputMbps = f(math.Round(float64(delivered)*8/dur.Seconds()/1e3) / 1e3)
		}
	}
	return ss
}

// CwndGrowthCA is the mean growth of a path's congestion window per RTT
// while in congestion avoidance, as in Table I of the reference paper:
// over the maximal stretches of samples in congestion avoidance, the sum
// of the window's growth divided by the sum of their durations, times
// rtt. Zero without such stretches.
func CwndGrowthCA(samples []PathSample, vantage string, pathID uint64, rtt time.Duration) float64 {
	var grow float64
	var span time.Duration
	in := false
	var startT time.Time
	var startW, lastW uint64
	var lastT time.Time
	flush := func() {
		if in && lastT.After(startT) && lastW >= startW {
			grow += float64(lastW - startW)
			span += lastT.Sub(startT)
		}
		in = false
	}
	for _, s := range samples {
		if s.Vantage != vantage || s.PathID != pathID {
			continue
		}
		if s.CongestionState != "congestion_avoidance" {
			flush()
			continue
		}
		if !in {
			in, startT, startW = true, s.At, s.CongestionWindow
		}
		if s.CongestionWindow < lastW && in && s.At != startT {
			// A shrink without leaving the state (a collapse): close
			// the stretch before it.
			flush()
			in, startT, startW = true, s.At, s.CongestionWindow
		}
		lastT, lastW = s.At, s.CongestionWindow
	}
	flush()
	if span <= 0 {
		return 0
	}
	return grow / span.Seconds() * rtt.Seconds()
}

func msAt(t, start time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatFloat(ms(t.Sub(start)), 'f', 3, 64)
}

func msDur(d time.Duration, ok bool) string {
	if !ok {
		return ""
	}
	return strconv.FormatFloat(ms(d), 'f', 3, 64)
}

// WriteMessagesCSV writes messages.csv: one row per message, times in
// milliseconds since the start of the experiment.
func (r *Recorder) WriteMessagesCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "source,kind,seq,priority,length,reply,created_ms,started_ms,written_ms,delivered_ms,replied_ms,mct_ms,response_ms,stream_id,queued,failed")
	for _, m := range r.Messages() {
		src := r.sources[m.Source]
		mct, mok := m.MCT()
		rt, rok := m.ResponseTime()
		fmt.Fprintf(bw, "%s,%s,%d,%t,%d,%d,%s,%s,%s,%s,%s,%s,%s,%d,%t,%s\n", src.Name, src.Kind, m.Seq, m.Priority, m.Length, m.Reply,
			msAt(m.Created, r.start), msAt(m.Started, r.start), msAt(m.Written, r.start), msAt(m.Delivered, r.start), msAt(m.Replied, r.start),
			msDur(mct, mok), msDur(rt, rok), m.StreamID, m.Queued, csvField(m.Failed))
	}
	return bw.Flush()
}

func csvField(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}

// WritePathsCSV writes paths.csv: every change of every path's congestion
// state, from both ends.
func (r *Recorder) WritePathsCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "time_ms,vantage,path_id,cwnd,bytes_in_flight,ssthresh,srtt_ms,min_rtt_ms,latest_rtt_ms,state")
	for _, s := range r.samples {
		ss := ""
		if s.SSThresh < 1<<62 {
			ss = strconv.FormatUint(s.SSThresh, 10)
		}
		fmt.Fprintf(bw, "%s,%s,%d,%d,%d,%s,%.3f,%.3f,%.3f,%s\n", msAt(s.At, r.start), s.Vantage, s.PathID, s.CongestionWindow,
			s.BytesInFlight, ss, ms(s.SmoothedRTT), ms(s.MinRTT), ms(s.LatestRTT), s.CongestionState)
	}
	return bw.Flush()
}

// WriteThroughputCSV writes throughput.csv: per interval, the stream bytes
// each end sent on each path per class ("sent"), and the bytes the
// receiving applications read per class ("delivered").
func (r *Recorder) WriteThroughputCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "time_ms,what,vantage,path_id,class,bytes,mbps")
	sec := r.interval.Seconds()
	row := func(i int, what, vantage, path string, class int, n uint64) {
		fmt.Fprintf(bw, "%.3f,%s,%s,%s,%s,%d,%.3f\n", ms(time.Duration(i)*r.interval), what, vantage, path, ClassName(class), n, float64(n)*8/sec/1e6)
	}
	vantages := make([]string, 0, len(r.sent))
	for v := range r.sent {
		vantages = append(vantages, v)
	}
	sort.Strings(vantages)
	for _, v := range vantages {
		for _, id := range sortedPaths(r.sent[v]) {
			b := r.sent[v][id]
			for c := range 2 {
				for i, n := range b[c] {
					row(i, "sent", v, strconv.FormatUint(id, 10), c, n)
				}
			}
		}
	}
	for c := range 2 {
		for i, n := range r.got[c] {
			row(i, "delivered", "receiver", "", c, n)
		}
	}
	return bw.Flush()
}
