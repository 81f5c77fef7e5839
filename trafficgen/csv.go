package trafficgen

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"
)

// All result files count time in milliseconds since the experiment's time
// zero (Recorder.Start), the reference time of the qlog traces too.

func msAt(t, start time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatFloat(ms(t.Sub(start)), 'f', 3, 64)
}

// msOrInf is a duration in milliseconds, or +Inf when it did not happen.
func msOrInf(d time.Duration, ok bool) string {
	if !ok {
		return FormatCSV(math.Inf(1))
	}
	return FormatCSV(ms(d))
}

// lateMS is m's lateness in milliseconds for messages.csv ("" unknown).
func lateMS(m *MessageRecord) string {
	d, ok := m.Late()
	if !ok {
		return ""
	}
	return FormatCSV(ms(d))
}

// MessagesHeader is the header line of messages.csv.
const MessagesHeader = "source,kind,seq,priority,reply_priority,length,reply,created_ms,started_ms,written_ms,delivered_ms,replied_ms,mct_ms,response_ms,stream_id,queued,status,failed,warmup,late_ms"

// WriteMessagesCSV writes messages.csv: one row per message, times in
// milliseconds since the start of the experiment (empty when the event
// did not happen); mct_ms and response_ms are +Inf when the message was
// not delivered or got no reply in time (as they count in the
// distributions); status is completed or failed, failed the reason;
// warmup is true for a message created in the warm-up (InWarmup), which
// the summary's statistics leave out; late_ms is how late the message
// was created after its schedule had it due (Late; empty when unknown).
func (r *Recorder) WriteMessagesCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, MessagesHeader)
	for _, m := range r.Messages() {
		src := r.sources[m.Source]
		mct, mok := m.MCT()
		rt, rok := m.ResponseTime()
		fmt.Fprintf(bw, "%s,%s,%d,%t,%t,%d,%d,%s,%s,%s,%s,%s,%s,%s,%d,%t,%s,%s,%t,%s\n", src.Name, src.Kind, m.Seq, m.Priority, m.ReplyPriority,
			m.Length, m.Reply,
			msAt(m.Created, r.start), msAt(m.Started, r.start), msAt(m.Written, r.start), msAt(m.Delivered, r.start), msAt(m.Replied, r.start),
			msOrInf(mct, mok), msOrInf(rt, rok), m.StreamID, m.Queued, m.Status(), m.Failed, r.InWarmup(m), lateMS(m))
	}
	return bw.Flush()
}

// WritePathsCSV writes paths.csv: the path states both connection ends
// went through, as Recorder kept them (every congestion state change, and
// otherwise at most one row per path, end and PathInterval).
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

// WriteThroughputCSV writes throughput.csv: per interval (time_ms is the
// start of the bin), the stream bytes each end sent on each path per class
// ("sent", sender = the sending end), and the bytes the receiving
// applications read per class of what each end sent ("delivered", no
// path), with the rate in Mbit/s. Bins from the drain period (time_ms at
// or after the duration) are included.
func (r *Recorder) WriteThroughputCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, ThroughputHeader)
	r.throughputRows(bw, func(v string) string { return v })
	return bw.Flush()
}

// ThroughputHeader is the header of throughput.csv.
const ThroughputHeader = "time_ms,what,sender,path_id,class,bytes,mbps"

// WriteCompetitorRows writes the rows of throughput.csv of a competitor's
// connection, whose recorder this is, without a header: its sending end
// is named "competitor:NAME" (the server of its connection; the client's
// rows, if any, "competitor:NAME:client").
func (r *Recorder) WriteCompetitorRows(w io.Writer, name string) error {
	bw := bufio.NewWriter(w)
	r.throughputRows(bw, func(v string) string {
		if v == "server" {
			return "competitor:" + name
		}
		return "competitor:" + name + ":" + v
	})
	return bw.Flush()
}

// throughputRows writes the rows of throughput.csv, naming each sending
// end with sender.
func (r *Recorder) throughputRows(bw *bufio.Writer, sender func(string) string) {
	sec := r.cfg.Interval.Seconds()
	row := func(i int, what, v, path string, class int, n uint64) {
		fmt.Fprintf(bw, "%.3f,%s,%s,%s,%s,%d,%.3f\n", ms(time.Duration(i)*r.cfg.Interval), what, sender(v), path, ClassName(class), n, float64(n)*8/sec/1e6)
	}
	for _, v := range sortedKeys(r.sent) {
		for _, id := range sortedPaths(r.sent[v]) {
			b := r.sent[v][id]
			for c := range 2 {
				for i, n := range b[c] {
					row(i, "sent", v, strconv.FormatUint(id, 10), c, n)
				}
			}
		}
	}
	for _, v := range sortedKeys(r.got) {
		for c := range 2 {
			for i, n := range r.got[v][c] {
				row(i, "delivered", v, "", c, n)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
