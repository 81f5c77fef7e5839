package scheduler_test

import (
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/scheduler"
)

// dropNth drops the n-th packet (from 1) of stream id sent on path.
func dropNth(r *rig, id *uint64, path uint64, n int) func(s *rigSend) bool {
	seen := 0
	return func(s *rigSend) bool {
		if s.stream != *id || s.path != path || s.bytes == 0 {
			return false
		}
		seen++
		return seen == n
	}
}

// retransmissions returns the retransmitted packets of stream id.
func retransmissions(r *rig, id uint64) []*rigSend {
	var out []*rigSend
	for _, s := range r.sendsOf(id) {
		if s.class == scheduler.ClassRetransmission {
			out = append(out, s)
		}
	}
	return out
}

// TestLossPolicyLeaveToCopies: a path scheduler's LossPolicy sees a lost
// packet with its copy still in flight, and may leave the data to it.
// redundant copies a 3-packet message onto the slow path (50 ms one way);
// its second packet is lost on the fast path (10 ms). By default (the
// core's own decision: redundant has no LossPolicy) it is sent again at
// once; left to its copy by a LossPolicy, nothing is sent again and the
// message completes when the copy arrives.
func TestLossPolicyLeaveToCopies(t *testing.T) {
	for _, leave := range []bool{false, true} {
		name := "default"
		if leave {
			name = "leave to copies"
		}
		t.Run(name, func(t *testing.T) {
			paths := []rigPath{{delay: 10 * ms, window: 20 * mps}, {delay: 50 * ms, window: 20 * mps}}
			var r *rig
			if leave {
				r = newRig(t, "redundant", paths...)
				r.probe.lossPolicy = func(lp *scheduler.LostPacket) (scheduler.LossDecision, bool) {
					return scheduler.LossDecision{Action: scheduler.LeaveToCopies}, true
				}
			} else {
				r = newBareRig(t, "redundant", paths...)
			}
			var msg uint64
			r.drop = dropNth(r, &msg, 0, 2)
			r.at(0, func() { msg = r.message(3*payload, true) })
			r.run(300 * ms)
			if copies(r.sendsOf(msg)) < 3 {
				t.Fatalf("message sent without a copy of each packet%s", r.log())
			}
			retx := retransmissions(r, msg)
			mct := r.streams[msg].mct()
			if !leave {
				if len(retx) == 0 || mct > 40*ms {
					t.Fatalf("by default: retransmissions %v, completion %v, want one and the fast recovery%s", retx, mct, r.log())
				}
				return
			}
			var lost []lossCall
			for _, l := range r.probe.losses {
				if l.lp.StreamBytes > 0 {
					lost = append(lost, l)
				}
			}
			if len(lost) != 1 || lost[0].lp.PathID != 0 || lost[0].lp.Reason != scheduler.LossDeclared ||
				len(lost[0].lp.Copies) != 1 || lost[0].lp.Copies[0].PathID != 1 || lost[0].lp.Copies[0].SentAt != r.t0 ||
				!lost[0].lp.Priority {
				t.Fatalf("loss policy calls %+v%s", lost, r.log())
			}
			if len(retx) != 0 || mct < 50*ms || mct > 51*ms {
				t.Fatalf("left to the copy: retransmissions %v, completion %v, want none and the copy's 50 ms%s", retx, mct, r.log())
			}
		})
	}
}

// TestLossPolicyResendOn: ResendOn queues the data again and shows the
// chosen path to Select (Work.Pinned, Work.PinnedPath) when it is
// scheduled; LeaveToCopies for a declared loss without copies is
// overridden: the data is sent again, never forgotten.
func TestLossPolicyResendOn(t *testing.T) {
	for _, action := range []scheduler.LossAction{scheduler.ResendOn, scheduler.LeaveToCopies} {
		t.Run(action.String(), func(t *testing.T) {
			r := newRig(t, "lowrtt", rigPath{delay: 10 * ms, window: 20 * mps}, rigPath{delay: 50 * ms, window: 20 * mps})
			r.probe.lossPolicy = func(lp *scheduler.LostPacket) (scheduler.LossDecision, bool) {
				return scheduler.LossDecision{Action: action, Path: 1}, true
			}
			var msg uint64
			r.drop = dropNth(r, &msg, 0, 1)
			r.at(0, func() { msg = r.message(3*payload, true) })
			r.run(300 * ms)
			if st := r.streams[msg]; st.done < 0 {
				t.Fatalf("message not delivered%s", r.log())
			}
			if len(retransmissions(r, msg)) == 0 {
				t.Fatalf("no retransmission%s", r.log())
			}
			pinned := 0
			for _, d := range r.probe.decisions {
				if d.w.Class == scheduler.ClassRetransmission && d.w.StreamID == msg {
					if d.w.Pinned && d.w.PinnedPath == 1 {
						pinned++
					} else if action == scheduler.ResendOn {
						t.Fatalf("retransmission decided without its pin: %+v", d.w)
					}
				}
			}
			if want := action == scheduler.ResendOn; (pinned > 0) != want {
				t.Fatalf("%d pinned retransmission decisions, want some: %v", pinned, want)
			}
		})
	}
}

// TestLossPolicyPTO: when the probe timeout of a path expires while
// another path is open, the LossPolicy is asked about every packet
// outstanding there (LossPTO). The fast path swallows a whole message
// from 0 on. By default (the core's own decision: lowrtt has no
// LossPolicy) its data goes again at once, and arrives over the other
// path; left where it is, it is not sent again until the core, having
// had the idle slow path witness that the peer is alive, declares the
// fast path failed, and a failure's losses are always sent again
// (LossPathFailed).
func TestLossPolicyPTO(t *testing.T) {
	for _, leave := range []bool{false, true} {
		name := "default"
		if leave {
			name = "leave"
		}
		t.Run(name, func(t *testing.T) {
			paths := []rigPath{{delay: 30 * ms, window: 20 * mps}, {delay: 10 * ms, window: 20 * mps}}
			var r *rig
			if leave {
				r = newRig(t, "lowrtt", paths...)
				r.probe.lossPolicy = func(lp *scheduler.LostPacket) (scheduler.LossDecision, bool) {
					return scheduler.LossDecision{Action: scheduler.LeaveToCopies}, lp.Reason == scheduler.LossPTO
				}
			} else {
				r = newBareRig(t, "lowrtt", paths...)
			}
			r.drop = func(s *rigSend) bool { return s.path == 1 }
			var msg uint64
			r.at(0, func() { msg = r.message(3*payload, true) })
			r.run(1000 * ms)
			if r.streams[msg].done < 0 {
				t.Fatalf("message not delivered%s", r.log())
			}
			var failed time.Duration = -1
			for _, ev := range r.server.PathEvents() {
				if ev.PathID == 1 && ev.Kind == core.PathEventFailed && failed < 0 {
					failed = ev.At.Sub(r.t0)
				}
			}
			rt := retransmissions(r, msg)
			if len(rt) == 0 {
				t.Fatalf("no retransmission%s", r.log())
			}
			// By default the data goes again at the PTO, before the failure;
			// left, only once path 1 is found failed.
			if early := failed < 0 || rt[0].at < failed; early == leave {
				t.Fatalf("first retransmission at %v, path 1 failed at %v (-1: never)%s", rt[0].at, failed, r.log())
			}
			if !leave {
				return
			}
			pto := 0
			for _, l := range r.probe.losses {
				if l.lp.Reason == scheduler.LossPTO && l.lp.PathID == 1 && l.lp.StreamBytes > 0 {
					pto++
				}
			}
			if pto < 3 {
				t.Fatalf("%d loss policy calls at a PTO of path 1, want one per message packet%s", pto, r.log())
			}
		})
	}
}

// TestRetransmissionSizer: a RetransmissionSizer chooses the size of
// packets of lost data; Select sees it as Work.Size and the core keeps the
// packets within it. By default (the core's own size: lowrtt has no
// RetransmissionSizer) they are full size.
func TestRetransmissionSizer(t *testing.T) {
	for _, size := range []int{0, 300} {
		t.Run(map[int]string{0: "default", 300: "300 bytes"}[size], func(t *testing.T) {
			var r *rig
			if size > 0 {
				r = newRig(t, "lowrtt", rigPath{delay: 10 * ms, window: 20 * mps})
				r.probe.rtxSize = func(w scheduler.Work) (int, bool) { return size, true }
			} else {
				r = newBareRig(t, "lowrtt", rigPath{delay: 10 * ms, window: 20 * mps})
			}
			var msg uint64
			r.drop = dropNth(r, &msg, 0, 1)
			r.at(0, func() { msg = r.message(3*payload, true) })
			r.run(300 * ms)
			want := size
			if size == 0 {
				want = mps
			}
			n := 0
			for _, d := range r.probe.decisions {
				if d.w.Class == scheduler.ClassRetransmission && d.w.StreamID == msg {
					n++
					if d.w.Size != want {
						t.Fatalf("retransmission announced with %d bytes, want %d", d.w.Size, want)
					}
				}
			}
			retx := retransmissions(r, msg)
			if n == 0 || len(retx) == 0 || r.streams[msg].done < 0 {
				t.Fatalf("%d decisions, retransmissions %v%s", n, retx, r.log())
			}
			for _, s := range retx {
				if s.size > want {
					t.Fatalf("retransmission %v larger than %d bytes", s, want)
				}
			}
			if size > 0 && len(retx) < 4 {
				t.Fatalf("a full packet's data sent again in %d packets of at most %d bytes", len(retx), size)
			}
		})
	}
}

// TestAckPathChooser: the acknowledgements of a path that can no longer
// carry its own (abandoned) go on the path the AckPathChooser names among
// the open ones; by default (the core's own choice: lowrtt has no
// AckPathChooser) on the one with the lowest smoothed RTT. The client
// sends on path 2 (its lowest-RTT path); the server abandons path 2 while
// those packets are on their way, and must acknowledge them on path 0 or
// 1.
func TestAckPathChooser(t *testing.T) {
	for _, choose := range []uint64{0, 1} {
		t.Run(map[uint64]string{0: "default", 1: "path 1"}[choose], func(t *testing.T) {
			paths := []rigPath{{delay: 10 * ms, window: 20 * mps}, {delay: 20 * ms, window: 20 * mps}, {delay: 5 * ms, window: 20 * mps}}
			var r *rig
			if choose == 1 {
				r = newRig(t, "lowrtt", paths...)
				r.probe.ackPath = func([]scheduler.PathInfo) (uint64, bool) { return 1, true }
			} else {
				r = newBareRig(t, "lowrtt", paths...)
			}
			r.at(0, func() {
				s, err := r.client.OpenStream(false)
				if err != nil {
					t.Fatal(err)
				}
				s.Write(make([]byte, 3*payload))
				s.Close()
				r.client.Kick()
			})
			r.at(time.Millisecond, func() {
				if err := r.server.AbandonPath(2, 0); err != nil {
					t.Fatal(err)
				}
			})
			r.run(20 * ms)
			if choose == 1 && len(r.probe.ackCalls) == 0 {
				t.Fatal("the ACK path was never chosen")
			}
			for _, paths := range r.probe.ackCalls {
				if len(paths) != 2 || paths[0].ID != 0 || paths[1].ID != 1 {
					t.Fatalf("ACK path chosen among %+v, want paths 0 and 1", paths)
				}
			}
			// The ACK-only datagrams after the arrival at 5 ms.
			on := map[uint64]int{}
			for path, at := range r.others {
				for _, a := range at {
					if a >= 5*ms {
						on[path]++
					}
				}
			}
			if on[choose] == 0 || on[1-choose] != 0 {
				t.Fatalf("ACK-only datagrams after 5 ms per path: %v, want them on path %d", on, choose)
			}
		})
	}
}
