package scheduler_test

import (
	"testing"
	"time"
)

// inFlight counts the packets of stream sent on path before at and not
// settled by then.
func inFlight(r *rig, stream, path uint64, at time.Duration) int {
	n := 0
	for _, s := range r.sendsOf(stream) {
		if s.path == path && s.at <= at && (s.settled == 0 || s.settled > at) {
			n++
		}
	}
	return n
}

// TestSelectiveRedundancyGivesBack runs sr (and cwr-plus, which borrows
// alike; without announced sources its budget is one packet) in the real
// core on two paths with windows of 4 packets, full of background data, when a one-packet
// priority message arrives: it leaves at once on both paths, beyond both
// windows, and borrows a packet's bytes of each. Until that packet is
// acknowledged (or declared lost), background data take at most 2 packets
// of a window (4, less the priority packet, less what it borrowed);
// afterwards all 4 again. cwr-plus repays so with repay = "rtt" only;
// with its default (repay = "none") background data take 3 packets of the
// window meanwhile: they wait for the window alone, and the borrowed
// bytes are not paid twice.
func TestSelectiveRedundancyGivesBack(t *testing.T) {
	for _, tc := range []struct {
		sched string
		most  int
	}{{"sr", 2}, {"cwr-plus-v1", 2}, {"cwr-plus-v1 repay=none", 3}} {
		for _, lose := range []bool{false, true} {
			name := tc.sched + "/acked"
			if lose {
				name = tc.sched + "/lost on path 1"
			}
			testGivesBack(t, tc.sched, name, lose, tc.most)
		}
	}
}

func testGivesBack(t *testing.T, sched, name string, lose bool, wantMost int) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		r := newRig(t, sched, rigPath{delay: 20 * ms, window: 4 * mps}, rigPath{delay: 30 * ms, window: 4 * mps})
		bg := r.background(1 << 20)
		var msg uint64
		r.at(10*ms, func() { msg = r.message(payload/2, true) })
		if lose {
			r.drop = func(s *rigSend) bool { return s.stream == msg && s.path == 1 && s.bytes > 0 }
		}
		r.run(400 * ms)
		sends := r.sendsOf(msg)
		if len(sends) != 2 || sends[0].at != 10*ms || sends[1].at != 10*ms || sends[0].path == sends[1].path {
			t.Fatalf("priority packet %v, want it at 10 ms on both paths%s", sends, r.log())
		}
		for _, p := range sends {
			if inFlight(r, bg, p.path, 10*ms) != 4 {
				t.Fatalf("path %d: %d background packets in flight with the priority one, want 4%s", p.path, inFlight(r, bg, p.path, 10*ms), r.log())
			}
			most, after := 0, 0
			for _, s := range r.sendsOf(bg) {
				if s.path != p.path || s.at <= 10*ms {
					continue
				}
				n := inFlight(r, bg, p.path, s.at)
				if s.at < p.settled {
					most = max(most, n)
				} else {
					after = max(after, n)
				}
			}
			if most != wantMost || after != 4 {
				t.Fatalf("path %d: at most %d background packets in flight while the priority packet was (settled at %v), %d after; want %d and 4%s",
					p.path, most, p.settled, after, wantMost, r.log())
			}
		}
	})
}
