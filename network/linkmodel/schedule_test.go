package linkmodel

import (
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

const ms = int64(time.Millisecond)

// Scheduled changes apply to the packets offered from their time on,
// counted from the origin; the packets accepted before keep their
// schedule. All times by hand: 1500 bytes take 12 ms at 1 Mbit/s and
// 1.2 ms at 10 Mbit/s.
func TestSchedule(t *testing.T) {
	base := Config{Rate: 1e6, Delay: 10 * time.Millisecond, QueueBytes: 100_000}
	fast := Config{Rate: 10e6, Delay: 10 * time.Millisecond, QueueBytes: 100_000}
	type offer struct {
		at     int64 // ns after the origin
		arrive int64 // after the origin; -1: dropped
		why    DropReason
	}
	tests := []struct {
		name   string
		steps  []Step
		origin bool
		offers []offer
	}{
		{"rate up at 100 ms", []Step{{At: 100 * ms, Config: fast}}, true, []offer{
			{0, 22 * ms, 0},                      // 12 ms + 10 ms
			{99 * ms, 99*ms + 22*ms, 0},          // still 1 Mbit/s
			{150 * ms, 150*ms + 11200000, 0},     // 1.2 ms + 10 ms
			{150*ms + 100, 150*ms + 12400000, 0}, // behind the previous one
		}},
		{"queued packets keep their schedule", []Step{{At: 5 * ms, Config: fast}}, true, []offer{
			{0, 22 * ms, 0},
			{1 * ms, 34 * ms, 0},           // transmitted from 12 to 24 ms at the old rate
			{6 * ms, 24*ms + 11200000, 0},  // waits for it, then 1.2 ms at the new rate
			{30 * ms, 30*ms + 11200000, 0}, // idle link, new rate
		}},
		{"down and up", []Step{{At: 10 * ms, Config: base, Down: true}, {At: 20 * ms, Config: base}}, true, []offer{
			{0, 22 * ms, 0},
			{10 * ms, -1, DropDown},
			{19 * ms, -1, DropDown},
			{20 * ms, 20*ms + 22*ms, 0}, // the link is idle again at 12 ms
		}},
		{"delay change", []Step{{At: 50 * ms, Config: Config{Rate: 1e6, Delay: 40 * time.Millisecond, QueueBytes: 100_000}}}, true, []offer{
			{0, 22 * ms, 0},
			{50 * ms, 50*ms + 52*ms, 0},
		}},
		{"no origin, no change", []Step{{At: 10 * ms, Config: base, Down: true}}, false, []offer{
			{20 * ms, 20*ms + 22*ms, 0},
		}},
	}
	const origin = 5_000_000_000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLink(t, base, 1)
			if err := l.SetSchedule(tt.steps); err != nil {
				t.Fatal(err)
			}
			if tt.origin {
				l.SetOrigin(origin)
			}
			for _, o := range tt.offers {
				v := l.Offer(origin+o.at, 1500)
				switch {
				case o.arrive < 0 && (v.OK || v.Drop != o.why):
					t.Errorf("offer at %v: %+v, want dropped (%v)", time.Duration(o.at), v, o.why)
				case o.arrive >= 0 && (!v.OK || v.Arrive-origin != o.arrive):
					t.Errorf("offer at %v: %+v, want arrival at %v", time.Duration(o.at), v, time.Duration(o.arrive))
				}
			}
		})
	}
}

func TestSetScheduleRejects(t *testing.T) {
	l := newLink(t, Config{Rate: 1e6}, 1)
	if err := l.SetSchedule([]Step{{At: 2, Config: Config{Rate: -1}}}); err == nil {
		t.Error("negative rate accepted")
	}
	if err := l.SetSchedule([]Step{{At: 2}, {At: 1}}); err == nil {
		t.Error("steps out of order accepted")
	}
}

// ForPath resolves a path's changes per direction; a step that leaves
// the loss alone keeps the loss model (and a Gilbert model's state).
func TestForPath(t *testing.T) {
	rate, loss, down := 5e6, 0.02, true
	delay := 40 * time.Millisecond
	link := experiment.Link{Rate: 10e6, Delay: 10 * time.Millisecond, Loss: 0.01, LossModel: "gilbert", BurstLength: 2, QueueBDP: 1}
	p := experiment.Path{Up: link, Down: link, Changes: []experiment.LinkChange{
		{At: time.Second, Rate: &rate},
		{At: 2 * time.Second, Direction: experiment.DirectionDown, Delay: &delay},
		{At: 3 * time.Second, Direction: experiment.DirectionUp, Loss: &loss, Down: &down},
	}}
	up0, up, err := ForPath(p, experiment.DirectionUp)
	if err != nil {
		t.Fatal(err)
	}
	down0, dn, err := ForPath(p, experiment.DirectionDown)
	if err != nil {
		t.Fatal(err)
	}
	if len(up) != 2 || len(dn) != 2 {
		t.Fatalf("%d up steps, %d down steps", len(up), len(dn))
	}
	// Up: 5 Mbit/s at 1 s (queue 1 BDP of 20 ms at 5 Mbit/s = 12,500
	// bytes, at least 16 packets: 24,000), then loss 2 % and down at 3 s.
	if up[0].At != int64(time.Second) || up[0].Config.Rate != 5e6 || up[0].Config.QueueBytes != 24000 || up[0].Down {
		t.Errorf("up step 0: %+v", up[0])
	}
	if up[0].Config.Loss != up0.Loss {
		t.Error("a rate change replaced the loss model")
	}
	if up[1].At != int64(3*time.Second) || !up[1].Down || up[1].Config.Loss == up0.Loss {
		t.Errorf("up step 1: %+v", up[1])
	}
	// Down: 5 Mbit/s at 1 s, then 40 ms at 2 s: the round trip is 50 ms,
	// a BDP of 31,250 bytes at 5 Mbit/s.
	if dn[1].At != int64(2*time.Second) || dn[1].Config.Delay != delay || dn[1].Config.QueueBytes != 31250 {
		t.Errorf("down step 1: %+v", dn[1])
	}
	if dn[1].Config.Loss != down0.Loss {
		t.Error("a delay change replaced the loss model")
	}
	if _, _, err := ForPath(p, "sideways"); err == nil {
		t.Error("bad direction accepted")
	}
}
