package trafficgen

import (
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
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
