package trafficgen

import (
	"fmt"
	"sort"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
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

// MessageRecord is the life of one message.
type MessageRecord struct {
	Source   int
	Seq      uint32
	Priority bool
	Length   uint64 // bytes, header included
	Reply    uint32
	// Created is when the source generated it; Started when it was
	// written to a stream (later if it waited for one); Written when the
	// stream took its last byte; Delivered when the receiving
	// application had all of it; Replied when the sender had the whole
	// reply. Zero if it did not happen.
	Created, Started, Written, Delivered, Replied time.Time
	StreamID                                      uint64
	// Queued: the message waited for a free stream.
	Queued bool
	// Failed says why it could not complete ("timeout", a stream error).
	Failed string
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

// ResponseTime is generation to complete reception of the reply.
func (m *MessageRecord) ResponseTime() (time.Duration, bool) {
	if m.Replied.IsZero() {
		return 0, false
	}
	return m.Replied.Sub(m.Created), true
}

// PathSample is a path's congestion state at a change, seen from one end.
type PathSample struct {
	At      time.Time
	Vantage string
	core.PathMetrics
}

// Recorder collects an experiment's measurements. It is used from the
// environment's event loop only (the Observer methods run on the
// connections', which is the same loop in the simulator; over sockets the
// runner serialises them).
type Recorder struct {
	start    time.Time
	interval time.Duration
	sources  []experiment.Source
	msgs     [][]*MessageRecord
	// sent[vantage][path][class] are bins of stream bytes sent;
	// delivered[class] bins of bytes the receiving applications read.
	sent     map[string]map[uint64]*[2][]uint64
	got      [2][]uint64
	samples  []PathSample
	problems []string
	// ConnectStart is when the client started connecting, for the
	// connect-to-first-message time of stop-and-wait sources.
	ConnectStart time.Time
}

// NewRecorder returns a recorder for an experiment starting at start,
// with throughput bins of interval.
func NewRecorder(sources []experiment.Source, start time.Time, interval time.Duration) *Recorder {
	return &Recorder{start: start, interval: interval, sources: sources,
		msgs: make([][]*MessageRecord, len(sources)), sent: map[string]map[uint64]*[2][]uint64{}}
}

// Start is the experiment's time zero.
func (r *Recorder) Start() time.Time { return r.start }

func (r *Recorder) bin(at time.Time) int {
	if at.Before(r.start) {
		return 0
	}
	return int(at.Sub(r.start) / r.interval)
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

func (r *Recorder) generated(src int, seq uint32, now time.Time, length uint64, reply uint32, prio bool) *MessageRecord {
	m := &MessageRecord{Source: src, Seq: seq, Priority: prio, Length: length, Reply: reply, Created: now}
	if r.record(src, seq) == nil && src >= 0 && src < len(r.msgs) {
		r.msgs[src][seq] = m
	}
	return m
}

// delivered records that the receiving application has a whole message.
func (r *Recorder) delivered(h Header, now time.Time) {
	m := r.record(int(h.Source), h.Seq)
	if m == nil {
		if int(h.Source) >= len(r.msgs) {
			r.protocolError(fmt.Errorf("message of unknown source %d", h.Source))
			return
		}
		// The sender's record is in another process: rebuild it.
		m = &MessageRecord{Source: int(h.Source), Seq: h.Seq, Length: h.Length, Reply: h.Reply, Created: h.Created,
			Priority: r.sources[h.Source].Priority}
		r.msgs[h.Source][h.Seq] = m
	}
	if m.Delivered.IsZero() {
		m.Delivered = now
	}
}

// received counts bytes the receiving application read.
func (r *Recorder) received(now time.Time, class, n int) {
	addBin(&r.got[class], r.bin(now), uint64(n))
}

func (r *Recorder) classOf(src uint16) int {
	if int(src) < len(r.sources) && r.sources[src].Priority {
		return ClassPriority
	}
	return ClassBackground
}

func (r *Recorder) fail(m *MessageRecord, err error) {
	if m.Failed == "" {
		m.Failed = err.Error()
	}
}

func (r *Recorder) receiveFailed(h Header, err error) {
	if m := r.record(int(h.Source), h.Seq); m != nil && m.Delivered.IsZero() && m.Failed == "" {
		m.Failed = err.Error()
	}
}

func (r *Recorder) protocolError(err error) {
	if len(r.problems) < 100 {
		r.problems = append(r.problems, err.Error())
	}
}

// Problems lists unexpected errors seen during the run.
func (r *Recorder) Problems() []string { return r.problems }

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

// Samples returns the path state samples in time order.
func (r *Recorder) Samples() []PathSample { return r.samples }

// Observer returns the core.Observer of a connection end ("client" or
// "server"), which records its path states and the bytes it sends per path
// and class.
func (r *Recorder) Observer(vantage string) core.Observer { return &observer{r: r, vantage: vantage} }

type observer struct {
	r       *Recorder
	vantage string
}

func (o *observer) PathMetricsUpdated(now time.Time, m core.PathMetrics) {
	o.r.samples = append(o.r.samples, PathSample{At: now, Vantage: o.vantage, PathMetrics: m})
}

func (o *observer) StreamDataSent(now time.Time, pathID, _ uint64, priority bool, n int) {
	paths := o.r.sent[o.vantage]
	if paths == nil {
		paths = map[uint64]*[2][]uint64{}
		o.r.sent[o.vantage] = paths
	}
	b := paths[pathID]
	if b == nil {
		b = &[2][]uint64{}
		paths[pathID] = b
	}
	class := ClassBackground
	if priority {
		class = ClassPriority
	}
	addBin(&b[class], o.r.bin(now), uint64(n))
}

// SentBins returns, per vantage, path and class, the bytes of stream data
// sent in each interval.
func (r *Recorder) SentBins() map[string]map[uint64]*[2][]uint64 { return r.sent }

// DeliveredBins returns per class the bytes the receiving applications
// read in each interval.
func (r *Recorder) DeliveredBins() [2][]uint64 { return r.got }

// Interval is the width of the throughput bins.
func (r *Recorder) Interval() time.Duration { return r.interval }

// sortedPaths lists the path IDs of a vantage's bins.
func sortedPaths(m map[uint64]*[2][]uint64) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
