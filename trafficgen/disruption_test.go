package trafficgen

import (
	"reflect"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
)

// TestDisruption: deliveries of a 50 ms source, hand-computed.
func TestDisruption(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	end := t0.Add(1000 * time.Millisecond) // the run ends at 1000 ms
	tests := []struct {
		name            string
		delivered, lost []time.Time
		want            Millis
		ok              bool
	}{
		{"regular", at(30, 80, 130, 180), nil, 0, true},
		// Messages of 200 and 250 delayed to 520 and 530: the gap
		// 180 -> 520 is 340 ms, 290 ms more than the interval.
		{"outage", at(30, 80, 130, 180, 520, 530, 580), nil, 290, true},
		// Order does not matter; a message that never arrived widens the
		// gap (created at 200, due at 230, missing: 180 -> 280 is 100 ms).
		{"missing message, unsorted", at(280, 30, 180, 80, 130), at(200), 50, true},
		{"closer than the interval", at(0, 40, 80), nil, -10, true},
		// Deliveries stop for good at 130: the messages created at 150
		// and 200 never arrive, the receiver waits from 130 to the end at
		// 1000: 870 ms, 820 more than the interval (at least).
		{"never again", at(30, 80, 130), at(150, 200), 820, true},
		{"one delivery, then none", at(30), at(50), 920, true},
		// Messages from 0 on and none delivered: 1000 - 0 - 50.
		{"sent, none delivered", nil, at(0, 50), 950, true},
		// A message still on its way when the run ended (created at 990,
		// 10 ms before the end): a wait of 20 ms, below the interval;
		// the gaps between deliveries decide.
		{"in flight at the end", at(880, 930, 980), at(990), 0, true},
		{"one delivery", at(30), nil, 0, false},
		{"none", nil, nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := Disruption(tc.delivered, tc.lost, end, 50*time.Millisecond)
			if d != tc.want || ok != tc.ok {
				t.Fatalf("Disruption = %v, %v; want %v, %v", d, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestLateSince: messages created from 10 s on with an MCT above 60 ms,
// hand-counted.
func TestLateSince(t *testing.T) {
	t0 := time.Unix(100, 0)
	msg := func(createdMS, mctMS int) *MessageRecord {
		m := &MessageRecord{Created: t0.Add(time.Duration(createdMS) * time.Millisecond)}
		if mctMS >= 0 {
			m.Delivered = m.Created.Add(time.Duration(mctMS) * time.Millisecond)
			m.Completed = true
		}
		return m
	}
	msgs := []*MessageRecord{
		msg(9900, 500), // before the change: not counted
		msg(10000, 60), // exactly one RTT: not late
		msg(10050, 61), // late
		msg(10100, -1), // never delivered: late
		nil,            // a gap in the sequence numbers
		msg(12000, 32), // on time
		msg(15000, 300),
	}
	if n := LateSince(msgs, t0.Add(10*time.Second), 60*time.Millisecond); n != 3 {
		t.Fatalf("LateSince = %d, want 3", n)
	}
}

func TestFirstChange(t *testing.T) {
	down, up := true, false
	e := &experiment.Experiment{Paths: []experiment.Path{
		{Up: experiment.Link{Delay: 30 * time.Millisecond}, Down: experiment.Link{Delay: 30 * time.Millisecond},
			Changes: []experiment.LinkChange{{At: 10 * time.Second, Down: &down}, {At: 15 * time.Second, Down: &up}}},
		{Up: experiment.Link{Delay: 20 * time.Millisecond}, Down: experiment.Link{Delay: 50 * time.Millisecond},
			Changes: []experiment.LinkChange{{At: 8 * time.Second, Down: &down}}},
	}}
	at, rtt, ok := FirstChange(e)
	if !ok || at != 8*time.Second || rtt != 70*time.Millisecond {
		t.Fatalf("FirstChange = %v, %v, %v; want 8s, 70ms, true", at, rtt, ok)
	}
	e.Paths[0].Changes, e.Paths[1].Changes = nil, nil
	if _, _, ok := FirstChange(e); ok {
		t.Fatal("a change in an experiment without changes")
	}
}

// TestSummaryPathEvents: path events reach summary.json per path and end,
// in seconds since the start, those of a path already forgotten too.
func TestSummaryPathEvents(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := NewRecorder(RecorderConfig{Start: t0, Duration: 30 * time.Second, Interval: time.Second})
	r.Finish()
	e := &experiment.Experiment{Paths: []experiment.Path{{}, {}}}
	sum := r.Summarise(e, SummaryInput{
		Server: []core.PathStats{{ID: 0}, {ID: 1}},
		Client: []core.PathStats{{ID: 0}},
		ServerEvents: []core.PathEvent{
			{PathID: 0, Kind: core.PathEventFailed, At: t0.Add(10180 * time.Millisecond)},
			{PathID: 2, Kind: core.PathEventAbandoned, At: t0.Add(20 * time.Second)},
			{PathID: 0, Kind: core.PathEventRecovered, At: t0.Add(15400*time.Millisecond + 1234*time.Nanosecond)},
		},
		ClientEvents: []core.PathEvent{},
	})
	got := map[uint64][]PathEventSummary{}
	for _, p := range sum.Paths {
		got[p.ID] = p.Events["server"]
		if p.Events["client"] != nil {
			t.Fatalf("client events on path %d: %v", p.ID, p.Events["client"])
		}
		if p.ID == 2 && (p.Server != nil || p.Client != nil) {
			t.Fatalf("statistics of the forgotten path 2: %+v", p)
		}
	}
	want := map[uint64][]PathEventSummary{
		0: {{"failed", 10.18}, {"recovered", 15.400001}},
		1: nil,
		2: {{"abandoned", 20}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
