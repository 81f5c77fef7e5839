package trafficgen

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
)

// Each end records its half as it would in its own process; the merge
// takes each message's record from its sender and completes it from its
// receiver: a periodic message completes where it is delivered, a
// request with its reply, and a request delivered but never answered
// failed for want of a reply, not of time. Rates of the two ends add up.
func TestMergeHalvesRules(t *testing.T) {
	srcs := []experiment.Source{
		{Name: "p", Kind: experiment.KindPeriodic, Priority: true}, // sent by the server
		{Name: "rr", Kind: experiment.KindRequestResponse},         // sent by the client
	}
	e := &experiment.Experiment{Name: "halves", Duration: time.Second, Drain: time.Second, Sources: srcs, Repeat: 1}
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	cfg := RecorderConfig{Sources: srcs, Start: t0, Duration: time.Second, Interval: 100 * time.Millisecond}
	server, client := NewRecorder(cfg), NewRecorder(cfg)
	hdr := func(src int, seq uint32, length uint64, reply uint32, created time.Time) Header {
		return Header{Source: uint16(src), Seq: seq, Length: length, Reply: reply, Created: created}
	}
	// Periodic: 0 delivered at 30 ms, 1 never.
	server.generated(0, 0, at(0), 1000, 1, true, false)
	server.generated(0, 1, at(50), 1000, 1, true, false)
	client.delivered(hdr(0, 0, 1000, 1, at(0)), at(30))
	client.received(at(30), "server", ClassPriority, 0, false, 1000)
	// Requests: 0 delivered and answered, 1 delivered and not answered,
	// 2 never delivered.
	m0 := client.generated(1, 0, at(10), 200, 2000, false, false)
	client.generated(1, 1, at(20), 200, 2000, false, false)
	client.generated(1, 2, at(30), 200, 2000, false, false)
	server.delivered(hdr(1, 0, 200, 2000, at(10)), at(40))
	server.delivered(hdr(1, 1, 200, 2000, at(20)), at(50))
	server.received(at(40), "client", ClassBackground, 1, false, 400)
	client.replied(m0, at(90))
	client.received(at(90), "server", ClassBackground, 1, true, 2000)
	server.Observer("server").StreamDataSent(at(10), 0, 0, true, 1000)
	client.Observer("client").StreamDataSent(at(20), 1, 0, false, 600)
	server.Finish()
	client.Finish()

	// Each end's dropped copies and receive-queue drops travel in its
	// half: copies add up per reason, queue drops stay per end (the
	// client's transport here does not count them).
	r, in, err := MergeHalves(e,
		client.Half("client", SummaryInput{Multipath: true, CopiesDropped: map[string]uint64{"window": 2}}),
		server.Half("server", SummaryInput{Multipath: true, CopiesDropped: map[string]uint64{"window": 3, "path": 1},
			ReceiveQueueDropped: map[string]uint64{"server": 7, "client": 99}}))
	if err != nil {
		t.Fatal(err)
	}
	if !in.Multipath {
		t.Error("multipath lost")
	}
	if c := in.CopiesDropped; len(c) != 2 || c["window"] != 5 || c["path"] != 1 {
		t.Errorf("copies dropped %v, want window 5 and path 1", c)
	}
	if q := in.ReceiveQueueDropped; len(q) != 1 || q["server"] != 7 {
		t.Errorf("receive queue dropped %v, want server 7 only", q)
	}
	want := map[[2]int]struct {
		completed bool
		failed    string
		delivered float64 // ms, -1 for none
	}{
		{0, 0}: {true, "", 30},
		{0, 1}: {false, FailTimeout, -1},
		{1, 0}: {true, "", 40},
		{1, 1}: {false, FailNoReply, 50},
		{1, 2}: {false, FailTimeout, -1},
	}
	msgs := r.Messages()
	if len(msgs) != len(want) {
		t.Fatalf("%d messages", len(msgs))
	}
	for _, m := range msgs {
		w := want[[2]int{m.Source, int(m.Seq)}]
		d := -1.0
		if !m.Delivered.IsZero() {
			d = float64(m.Delivered.Sub(t0)) / 1e6
		}
		if m.Completed != w.completed || m.Failed != w.failed || d != w.delivered {
			t.Errorf("message %d/%d: completed %v failed %q delivered %v, want %+v", m.Source, m.Seq, m.Completed, m.Failed, d, w)
		}
	}
	if got := r.srcGot; got[0] != [2]uint64{1000, 0} || got[1] != [2]uint64{400, 2000} {
		t.Errorf("bytes read per source %v", got)
	}
	if r.sentWin["server"][0][ClassPriority] != 1000 || r.sentWin["client"][1][ClassBackground] != 600 {
		t.Errorf("bytes sent %v %v", r.sentWin["server"], r.sentWin["client"])
	}

	// Halves of another configuration, of one side twice, or with a
	// message sent by both, are refused.
	bad := func(c, s *Half) error { _, _, err := MergeHalves(e, c, s); return err }
	ch, sh := client.Half("client", SummaryInput{}), server.Half("server", SummaryInput{})
	if err := bad(sh, sh); err == nil {
		t.Error("two server halves merged")
	}
	other := *sh
	other.Interval = time.Second
	if err := bad(ch, &other); err == nil || !strings.Contains(err.Error(), "different configurations") {
		t.Errorf("halves of other configurations: %v", err)
	}
	twice := *sh
	twice.Messages = append(append([]*MessageRecord(nil), sh.Messages...), sh.Messages[0])
	if err := bad(ch, &twice); err == nil {
		t.Error("a message recorded twice by its sender merged")
	}
}

// TestOutstandingHalves counts by hand the messages of a run recorded in
// two halves that are not done: periodic messages (server to client, no
// reply) are done when the server gave up on them or the client had them
// whole; requests (client to server, with a reply) only when the client's
// own record says so, whatever the server's says.
func TestOutstandingHalves(t *testing.T) {
	srcs := []experiment.Source{{Name: "p", Kind: experiment.KindPeriodic}, {Name: "r", Kind: experiment.KindRequestResponse}}
	cfg := RecorderConfig{Sources: srcs, Start: time.Unix(0, 0), Duration: time.Second, Interval: 100 * time.Millisecond}
	client, server := NewRecorder(cfg), NewRecorder(cfg)
	rec := func(r *Recorder, src int, seq uint32, completed bool, failed string) {
		m := r.generated(src, seq, time.Unix(0, 0), 100, 0, false, false)
		m.Completed, m.Failed = completed, failed
	}
	// Periodic: 0 pending on both ends, 1 completed at the client, 2
	// failed at the server, 3 pending at the server and unknown to the
	// client.
	rec(server, 0, 0, false, "")
	rec(client, 0, 0, false, "")
	rec(server, 0, 1, false, "")
	rec(client, 0, 1, true, "")
	rec(server, 0, 2, false, FailTimeout)
	rec(server, 0, 3, false, "")
	// Requests: 0 pending at the client though the server completed its
	// record, 1 completed at the client, 2 failed at the client.
	rec(client, 1, 0, false, "")
	rec(server, 1, 0, true, "")
	rec(client, 1, 1, true, "")
	rec(client, 1, 2, false, FailTimeout)
	if got := OutstandingHalves(client, server); got != 3 {
		t.Errorf("outstanding %d, want 3 (periodic 0 and 3, request 0)", got)
	}
}

// TestSortSamples: paths.csv's rows by time, the client's before the
// server's at one time, and in the order kept otherwise.
func TestSortSamples(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, int64(ms)*int64(time.Millisecond)) }
	s := []PathSample{
		{At: at(5), Vantage: "server", PathMetrics: core.PathMetrics{PathID: 1}},
		{At: at(3), Vantage: "server"},
		{At: at(5), Vantage: "client", PathMetrics: core.PathMetrics{PathID: 2}},
		{At: at(5), Vantage: "server", PathMetrics: core.PathMetrics{PathID: 0}},
		{At: at(1), Vantage: "client"},
	}
	sortSamples(s)
	var got []string
	for _, x := range s {
		got = append(got, fmt.Sprintf("%d %s %d", x.At.UnixMilli(), x.Vantage, x.PathID))
	}
	want := []string{"1 client 0", "3 server 0", "5 client 2", "5 server 1", "5 server 0"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// TestChunkWriteWhole: what a peer writes of a 100-byte message whose
// header has been written up to byte 10: without WriteWhole the header's
// last 22 bytes alone; with it those 22 bytes and the 68 bytes of zeros
// after them in one piece; past the header, the zeros left in both cases.
func TestChunkWriteWhole(t *testing.T) {
	hdr := make([]byte, HeaderLen)
	for i := range hdr {
		hdr[i] = byte(i + 1)
	}
	for _, tt := range []struct {
		whole            bool
		written, length  uint64
		wantLen, wantHdr int
	}{
		{false, 10, 100, 22, 22},
		{true, 10, 100, 90, 22},
		{true, 0, 0, HeaderLen + 64<<10, HeaderLen},
		{false, 40, 100, 60, 0},
		{true, 40, 100, 60, 0},
	} {
		p := &Peer{WriteWhole: tt.whole}
		c := p.chunk(hdr, tt.written, tt.length)
		nonzero := 0
		for _, b := range c {
			if b != 0 {
				nonzero++
			}
		}
		if len(c) != tt.wantLen || nonzero != tt.wantHdr || tt.wantHdr > 0 && c[0] != hdr[tt.written] {
			t.Errorf("whole %v, written %d of %d: %d bytes, %d of header, want %d and %d", tt.whole, tt.written, tt.length, len(c), nonzero, tt.wantLen, tt.wantHdr)
		}
	}
}
