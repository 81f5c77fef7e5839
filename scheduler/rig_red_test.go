package scheduler_test

import (
	"testing"
	"time"
)

// copies counts the copies among sends.
func copies(sends []*rigSend) (n int) {
	for _, s := range sends {
		if s.copy {
			n++
		}
	}
	return n
}

// TestCWRRedDuplicates: with room on both paths, every packet of a
// priority message leaves on the fast path with a copy on the slow one;
// the client gets the message once, one fast one-way delay after it was
// written.
func TestCWRRedDuplicates(t *testing.T) {
	r := newRig(t, "cwr-red", rigPath{delay: 10 * ms, window: 20 * mps}, rigPath{delay: 50 * ms, window: 20 * mps})
	var msg uint64
	r.at(5*ms, func() { msg = r.message(3*payload, true) })
	r.run(200 * ms)
	sends := r.sendsOf(msg)
	if len(sends) != 6 || copies(sends) != 3 {
		t.Fatalf("message sent as %v, want 3 packets on path 0 and 3 copies on path 1%s", sends, r.log())
	}
	for i, s := range sends {
		if want := uint64(i % 2); s.path != want || s.copy != (want == 1) {
			t.Fatalf("packet %v: want path %d%s", s, want, r.log())
		}
	}
	st := r.streams[msg]
	if st.received != 3*payload || st.mct() > 11*ms {
		t.Fatalf("client got %d bytes after %v", st.received, st.mct())
	}
}

// TestCWRRedNoLateCopies: the paper's "for packets that could not be
// duplicated immediately, no duplicate is created afterward", at message
// granularity. The slow path has no room when a 5-packet message is
// written, so the message goes without copies; its window opens while
// the message waits for the fast path's ACKs, and still none of its
// packets is copied. The next message, with room on both paths, is.
func TestCWRRedNoLateCopies(t *testing.T) {
	r := newRig(t, "cwr-red", rigPath{delay: 10 * ms, window: 4 * mps}, rigPath{delay: 25 * ms, window: 0})
	var first, second uint64
	r.at(0, func() { first = r.message(5*payload, true) })
	r.at(5*ms, func() { r.cc[1].window = 10 * mps })
	r.at(100*ms, func() { second = r.message(2*payload, true) })
	r.run(300 * ms)
	s1, s2 := r.sendsOf(first), r.sendsOf(second)
	if len(s1) != 5 || copies(s1) != 0 {
		t.Fatalf("first message %v, want 5 packets without copies%s", s1, r.log())
	}
	late := 0
	for _, s := range s1 {
		if s.at > 5*ms {
			late++
		}
	}
	if late == 0 {
		t.Fatalf("no packet of the first message left after the slow window opened%s", r.log())
	}
	if len(s2) != 4 || copies(s2) != 2 {
		t.Fatalf("second message %v, want 2 packets with a copy each%s", s2, r.log())
	}
}

// TestCWRRedEarliestPath: a priority message the paths cannot both take
// goes without copies on the path that delivers it earliest. The fast
// path's window is full of background data: with the slow path 40 ms
// further away, the message waits for the fast path's ACKs (about one
// fast RTT) instead of going alone on the slow path; with the slow path
// only 5 ms further away, it takes the slow path at once.
func TestCWRRedEarliestPath(t *testing.T) {
	tests := []struct {
		name      string
		sched     string
		slowDelay time.Duration
		wantPath  uint64
		maxMCT    time.Duration
	}{
		{"slow path far: wait for the fast one", "cwr-red-fast", 50 * ms, 0, 32 * ms},
		{"slow path near: take it", "cwr-red-fast", 15 * ms, 1, 16 * ms},
		{"option alone: wait for the fast one", "cwr-red wait_for_fast_path=true", 50 * ms, 0, 32 * ms},
		// The paper's rule: like LowRTT, the slow path at once.
		{"paper: slow path far, still taken", "cwr-red", 50 * ms, 1, 51 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.sched, rigPath{delay: 10 * ms, window: 4 * mps}, rigPath{delay: tc.slowDelay, window: 20 * mps})
			r.background(4 * payload) // fills the fast window
			var msg uint64
			r.at(1*ms, func() { msg = r.message(2*payload, true) })
			r.run(200 * ms)
			sends := r.sendsOf(msg)
			if len(sends) != 2 || copies(sends) != 0 {
				t.Fatalf("message %v, want 2 packets without copies%s", sends, r.log())
			}
			for _, s := range sends {
				if s.path != tc.wantPath {
					t.Fatalf("packet %v, want path %d%s", s, tc.wantPath, r.log())
				}
			}
			if mct := r.streams[msg].mct(); mct > tc.maxMCT {
				t.Fatalf("message completion time %v, want at most %v%s", mct, tc.maxMCT, r.log())
			}
		})
	}
}

// TestCWRRedEarliestForTheMessage: the path a priority message that is
// not duplicated waits for is the one that delivers the rest of the
// message earliest, not only its next packet. The fast path (25 ms one
// way) is full of background data sent one packet a millisecond, so that
// its ACKs free one packet's room about every millisecond; the slow path
// (28 ms) opens, empty, when a 10-packet message is written. Each packet
// alone would arrive sooner on the fast path (its next ACK is within
// 3 ms), but the whole message would leave there only at the pace of its
// ACKs, 1 ms a packet; on the slow path it leaves at once and arrives
// after 28 ms. So the message goes on the slow path, but for its last
// packets, which arrive sooner after the fast path's next ACK. (Chosen
// packet by packet, the message waited for the fast path while the slow
// one stayed idle, and took 34 ms; in paper-fig4 at 50 ms / 50 kB,
// messages took 55 ms so.)
func TestCWRRedEarliestForTheMessage(t *testing.T) {
	r := newRig(t, "cwr-red-fast", rigPath{delay: 25 * ms, window: 20 * mps}, rigPath{delay: 28 * ms, window: 0})
	bg, err := r.server.OpenStream(false)
	if err != nil {
		t.Fatal(err)
	}
	for at := time.Duration(0); at < 200*ms; at += ms {
		r.at(at, func() {
			if _, err := bg.Write(make([]byte, payload)); err != nil {
				t.Fatal(err)
			}
			r.server.Kick()
		})
	}
	var msg uint64
	r.at(100*ms, func() {
		r.cc[1].window = 20 * mps
		msg = r.message(10*payload, true)
	})
	r.run(300 * ms)
	sends := r.sendsOf(msg)
	if len(sends) != 10 || copies(sends) != 0 {
		t.Fatalf("message %v, want 10 packets without copies%s", sends, r.log())
	}
	if s := sends[0]; s.path != 1 || s.at != 100*ms {
		t.Fatalf("first packet %v, want it on path 1 at 100 ms%s", s, r.log())
	}
	if mct := r.streams[msg].mct(); mct > 29*ms {
		t.Fatalf("message completion time %v, want the slow path's one-way delay%s", mct, r.log())
	}
}

// TestCWRRedLostCopy: a packet of a duplicated message is lost on the
// fast path while its copy is still in flight on the slow path (100 ms
// RTT). CWRRed's loss policy sends it again on the fast path only (the
// retransmission is pinned there; a copy on the slow path would only
// repeat the one in flight), and the message completes after the fast
// path's loss recovery, long before the slow copy arrives.
func TestCWRRedLostCopy(t *testing.T) {
	r := newRig(t, "cwr-red resend_lost_copy_on=fast", rigPath{delay: 10 * ms, window: 20 * mps}, rigPath{delay: 50 * ms, window: 20 * mps})
	var msg uint64
	dropped := 0
	r.drop = func(s *rigSend) bool {
		if s.path == 0 && s.stream == msg && s.bytes > 0 && dropped == 0 && len(r.sendsOf(msg)) >= 3 {
			dropped++
			return true
		}
		return false
	}
	r.at(0, func() { msg = r.message(3*payload, true) })
	r.run(300 * ms)
	if dropped != 1 {
		t.Fatalf("nothing dropped%s", r.log())
	}
	var calls int
	for _, l := range r.probe.losses {
		if l.lp.PathID != 0 {
			continue
		}
		calls++
		if len(l.lp.Copies) != 1 || l.lp.Copies[0].PathID != 1 || !l.lp.Priority {
			t.Fatalf("loss policy saw %+v", l.lp)
		}
		if l.dec.Action.String() != "resend_on" || l.dec.Path != 0 {
			t.Fatalf("loss decision %+v", l.dec)
		}
	}
	if calls != 1 {
		t.Fatalf("%d loss policy calls on path 0, want 1", calls)
	}
	var retx []*rigSend
	for _, s := range r.sendsOf(msg) {
		if s.class.String() == "retransmission" {
			retx = append(retx, s)
		}
	}
	if len(retx) == 0 {
		t.Fatalf("no retransmission%s", r.log())
	}
	for _, s := range retx {
		if s.path != 0 || s.copy {
			t.Fatalf("retransmission %v, want it on path 0 without a copy%s", s, r.log())
		}
	}
	pinned := false
	for _, d := range r.probe.decisions {
		pinned = pinned || d.w.StreamID == msg && d.w.Pinned && d.w.PinnedPath == 0
	}
	if !pinned {
		t.Fatal("the retransmission was not pinned to path 0")
	}
	if mct := r.streams[msg].mct(); mct > 40*ms {
		t.Fatalf("message completion time %v, want the fast path's recovery (< 40 ms)%s", mct, r.log())
	}
}
