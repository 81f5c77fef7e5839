package trafficgen_test

import (
	"bytes"
	"encoding/csv"
	"math"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/simenv"
	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/network/netsim"
	"github.com/mpq/mpq/trafficgen"
)

// lateTimers is an environment whose timers fire lag after their time, as
// a loaded real-time event loop's do.
type lateTimers struct {
	appenv.Env
	lag time.Duration
}

func (l lateTimers) AfterFunc(d time.Duration, f func()) func() bool {
	return l.Env.AfterFunc(d+l.lag, f)
}

// simRun runs srcs for duration over one simulated path of 100 Mbit/s
// and one-way delay delay, the server's timers lag late, the ends'
// configurations changed by conf (if not nil), then drains; it returns the finished recorder, the experiment's time
// zero and when the server's connection was ready (its peer started).
func simRun(t *testing.T, srcs []experiment.Source, duration, delay, lag time.Duration, rate float64, conf func(server, client *core.Config)) (*trafficgen.Recorder, time.Time, time.Time) {
	t.Helper()
	return simRunWrapped(t, srcs, duration, delay, lag, rate, conf, nil)
}

// simRunWrapped is simRun with the peers' connections wrapped by wrap (if
// not nil).
func simRunWrapped(t *testing.T, srcs []experiment.Source, duration, delay, lag time.Duration, rate float64, conf func(server, client *core.Config), wrap func(appenv.Conn) appenv.Conn) (*trafficgen.Recorder, time.Time, time.Time) {
	t.Helper()
	if wrap == nil {
		wrap = func(c appenv.Conn) appenv.Conn { return c }
	}
	sim := netsim.New(1)
	topo, err := netsim.NewTopology(sim, []netsim.PathSpec{netsim.Symmetric(netsim.LinkConfig{Rate: rate, Delay: delay})})
	if err != nil {
		t.Fatal(err)
	}
	ctls, stls, err := netsim.TLSConfigs(1, "window")
	if err != nil {
		t.Fatal(err)
	}
	saddr := netip.AddrPortFrom(topo.Server[0], 443)
	scfg, ccfg := &core.Config{TLS: stls}, &core.Config{TLS: ctls}
	if conf != nil {
		conf(scfg, ccfg)
	}
	shost, err := simenv.New(topo.Net, simenv.Config{Addrs: []netip.AddrPort{saddr}, Server: scfg})
	if err != nil {
		t.Fatal(err)
	}
	chost, err := simenv.New(topo.Net, simenv.Config{Addrs: []netip.AddrPort{netip.AddrPortFrom(topo.Client[0], 4000)}, Client: ccfg})
	if err != nil {
		t.Fatal(err)
	}
	t0 := sim.Now()
	rec := trafficgen.NewRecorder(trafficgen.RecorderConfig{Sources: srcs, Start: t0, Duration: duration, Interval: 100 * time.Millisecond})
	var peers []*trafficgen.Peer
	var ready time.Time
	senv := lateTimers{shost, lag}
	if _, err := shost.Listen(saddr.String(), func(c appenv.Conn) {
		ready = sim.Now()
		p := trafficgen.NewPeer(senv, wrap(c), rec, "server")
		p.Start(srcs, t0)
		peers = append(peers, p)
	}); err != nil {
		t.Fatal(err)
	}
	chost.Dial(saddr.String(), func(c appenv.Conn, err error) {
		if err != nil {
			t.Error(err)
			return
		}
		peers = append(peers, trafficgen.NewPeer(chost, wrap(c), rec, "client"))
	})
	end := t0.Add(duration)
	sim.RunUntil(end)
	for _, p := range peers {
		p.Stop()
	}
	sim.RunWhile(func() bool { return rec.Outstanding() > 0 }, end.Add(2*time.Second))
	rec.Finish()
	return rec, t0, ready
}

// TestPeriodicWindow: a periodic source generates one message for every
// multiple of its interval from when the connection was ready up to the
// end of the experiment's window [t0, t0+duration), however the peers
// are stopped. The real-time backends stop them once the end has passed
// on the wall clock; then the message due at the end itself must not be
// generated, and the messages due before the end whose timers are late
// (a loaded event loop) must be, their lateness recorded. Here the peers
// are stopped after everything due at the end ran, as on those backends.
func TestPeriodicWindow(t *testing.T) {
	const duration, interval = time.Second, 50 * time.Millisecond
	for _, lag := range []time.Duration{0, 70 * time.Millisecond} {
		srcs := []experiment.Source{{Name: "s1", Kind: experiment.KindPeriodic, Interval: interval, Size: 1000}}
		rec, t0, ready := simRun(t, srcs, duration, 10*time.Millisecond, lag, 100e6, nil)
		msgs := rec.Messages()
		if want := int((t0.Add(duration).Sub(ready) + interval - 1) / interval); len(msgs) != want {
			t.Errorf("timers %v late: %d messages, want %d", lag, len(msgs), want)
		}
		for _, m := range msgs {
			if !m.Completed {
				t.Errorf("timers %v late: message %d %s", lag, m.Seq, m.Status())
			}
			// With timers on time no message is late; with late
			// timers every message is, and the record says so.
			if late, ok := m.Late(); !ok || (late > 0) != (lag > 0) {
				t.Errorf("timers %v late: message %d late by %v (%t)", lag, m.Seq, late, ok)
			}
		}
		if n := len(msgs); n > 0 {
			t.Logf("timers %v late: %d messages, the last one created at %v", lag, n, msgs[n-1].Created.Sub(t0))
		}
	}
}

// TestSourcesStartWhenConnected: a periodic source's schedule starts when
// the connection is ready, its start counted from then: with a handshake
// longer than the interval (80 ms round trips), message 0 is created when
// the server's connection is ready and message 1 one interval later, not
// both at once (the burst of messages that fell due during the
// handshake); a source with start 100 ms begins 100 ms after that.
func TestSourcesStartWhenConnected(t *testing.T) {
	const interval = 50 * time.Millisecond
	srcs := []experiment.Source{
		{Name: "s1", Kind: experiment.KindPeriodic, Interval: interval, Size: 1000},
		{Name: "s2", Kind: experiment.KindPeriodic, Interval: interval, Size: 1000, Start: 100 * time.Millisecond},
	}
	rec, t0, ready := simRun(t, srcs, time.Second, 40*time.Millisecond, 0, 100e6, nil)
	if ready.Sub(t0) <= interval {
		t.Fatalf("the connection was ready after %v: not longer than the interval, the test shows nothing", ready.Sub(t0))
	}
	created := map[string][]time.Duration{}
	for _, m := range rec.Messages() {
		name := srcs[m.Source].Name
		created[name] = append(created[name], m.Created.Sub(ready))
		if late, ok := m.Late(); !ok || late != 0 {
			t.Errorf("%s message %d late by %v (%t)", name, m.Seq, late, ok)
		}
	}
	for name, first := range map[string]time.Duration{"s1": 0, "s2": 100 * time.Millisecond} {
		c := created[name]
		if len(c) < 2 || c[0] != first || c[1] != first+interval {
			t.Errorf("%s: messages created at %v after the connection was ready, want %v, %v, ...", name, c, first, first+interval)
		}
	}
}

// TestMCTCountsFromCreation: a message that waited for a stream (the
// client takes one stream of the server's at a time, and 50 kB messages
// every 10 ms at 10 Mbit/s outlast their interval; a stream buffers
// 16 kB) was created, then
// started on a stream, then written whole, then delivered: its MCT, in
// the record, in messages.csv and in the summary, counts from its
// creation, not from when it got a stream.
func TestMCTCountsFromCreation(t *testing.T) {
	srcs := []experiment.Source{{Name: "s1", Kind: experiment.KindPeriodic, Interval: 10 * time.Millisecond, Size: 50_000}}
	rec, _, _ := simRun(t, srcs, 200*time.Millisecond, 5*time.Millisecond, 0, 10e6, func(s, c *core.Config) {
		// One stream of the server's at a time, each buffering 16 kB:
		// a message waits for its stream, then for its last bytes to
		// be taken.
		c.MaxIncomingStreams = 1
		s.StreamSendBuffer = 16 << 10
	})
	var waited *trafficgen.MessageRecord
	var worst time.Duration
	for _, m := range rec.Messages() {
		mct, ok := m.MCT()
		if !ok {
			continue
		}
		if want := m.Delivered.Sub(m.Created); mct != want {
			t.Errorf("message %d: MCT %v, want delivered - created = %v", m.Seq, mct, want)
		}
		worst = max(worst, mct)
		if waited == nil && m.Queued && m.Created.Before(m.Started) && m.Started.Before(m.Written) && m.Written.Before(m.Delivered) {
			waited = m
		}
	}
	if waited == nil {
		for _, m := range rec.Messages() {
			t.Logf("%d: queued %t created %v started %v written %v delivered %v", m.Seq, m.Queued, m.Created, m.Started, m.Written, m.Delivered)
		}
		t.Fatal("no message waited for a stream with all of created < started < written < delivered")
	}
	mct, _ := waited.MCT()
	if fromStart := waited.Delivered.Sub(waited.Started); mct <= fromStart {
		t.Errorf("message %d: MCT %v, not more than from its start on a stream (%v)", waited.Seq, mct, fromStart)
	}
	sum := rec.Summarise(&experiment.Experiment{Sources: srcs}, trafficgen.SummaryInput{})
	if got := float64(sum.Sources[0].MCTMS.Max); got != float64(worst.Microseconds())/1e3 {
		t.Errorf("summary's MCT max %v ms, want the largest delivered - created, %v", got, worst)
	}
	var b bytes.Buffer
	if err := rec.WriteMessagesCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	row := rows[1+int(waited.Seq)]
	num := func(c string) float64 {
		v, err := strconv.ParseFloat(row[col[c]], 64)
		if err != nil {
			t.Fatalf("%s %q: %v", c, row[col[c]], err)
		}
		return v
	}
	// Each column is rounded to the microsecond on its own, so the
	// difference of two may be one microsecond off the third.
	if got, want := num("mct_ms"), num("delivered_ms")-num("created_ms"); math.Abs(got-want) > 1e-3+1e-9 || row[col["queued"]] != "true" {
		t.Errorf("messages.csv row %v: mct_ms %v, want delivered_ms - created_ms = %v, queued", row, got, want)
	}
}
