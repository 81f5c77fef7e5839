package scheduler_test

import (
	"testing"
	"time"

	"github.com/mpq/mpq/scheduler"
)

// payload is the stream data of a full packet as the schedulers estimate
// it (MaxPacketSize - PacketOverhead): a message of k*payload bytes takes
// k packets.
const payload = mps - 44

// TestCWRFigure3 replays the example of Figure 3 of the paper (Section
// III-D1) in the real core: one path of 50 ms RTT whose window holds 4
// packets, empty; background data from t1 = 0; a 3-packet priority message
// announced for t3 = 20 ms, within one RTT, and written then. Only one
// background packet leaves before t3, leaving room for the three priority
// packets, which leave at t3 without waiting and arrive one one-way delay
// later; the rest of the background data follows as ACKs free the window.
// With lowrtt instead, the background data fills the window and the
// message waits for ACKs.
func TestCWRFigure3(t *testing.T) {
	const t3 = 20 * ms
	tests := []struct {
		sched    string
		bgBefore int  // background packets before t3
		waits    bool // the message waits for an ACK
	}{
		{"cwr", 1, false},
		{"cwr-red", 1, false},
		{"lowrtt", 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.sched, func(t *testing.T) {
			r := newRig(t, tc.sched, rigPath{delay: 25 * ms, window: 4 * mps})
			r.server.AnnounceSource(scheduler.Source{ID: 1, Size: 3 * payload, Next: r.t0.Add(t3)})
			bg := r.background(1 << 20)
			var msg uint64
			r.at(t3, func() { msg = r.message(3*payload, true) })
			r.run(500 * ms)
			before := 0
			for _, s := range r.sendsOf(bg) {
				if s.at < t3 {
					before++
				}
			}
			if before != tc.bgBefore {
				t.Fatalf("%d background packets before t3, want %d%s", before, tc.bgBefore, r.log())
			}
			sends := r.sendsOf(msg)
			if len(sends) != 3 {
				t.Fatalf("message in %d packets, want 3%s", len(sends), r.log())
			}
			for _, s := range sends {
				if s.path != 0 || (s.at == t3) == tc.waits {
					t.Fatalf("message packet %v: want it at t3 = %v: %v%s", s, t3, !tc.waits, r.log())
				}
			}
			mct := r.streams[msg].mct()
			if !tc.waits && mct > 26*ms || tc.waits && mct < 50*ms {
				t.Fatalf("message completion time %v%s", mct, r.log())
			}
			t.Logf("MCT %v", mct)
		})
	}
}

// TestExpectedSizeRule: the core tells a path scheduler the size of the
// packet it is about to build, for a message's last, short packet too,
// and keeps the packet within it. One path of 50 ms RTT; cwr reserves the
// message's wire bytes and the core's slack for ACK frames; the window
// holds one background packet and the reservation, nothing more. The message's
// two packets (one full, one short) leave at once. Were the short packet
// announced as a full one, it would not fit and would wait for an ACK.
func TestExpectedSizeRule(t *testing.T) {
	const (
		t1   = 20 * ms
		size = payload + 700 // a full packet and a short one
	)
	wire := uint64(size + 2*44) // scheduler.WireBytes
	r := newRig(t, "cwr", rigPath{delay: 25 * ms, window: mps + wire + scheduler.PacketSlack})
	r.server.AnnounceSource(scheduler.Source{ID: 1, Size: size, Next: r.t0.Add(t1)})
	r.background(1 << 20)
	var msg uint64
	r.at(t1, func() { msg = r.message(size, true) })
	r.run(300 * ms)
	sends := r.sendsOf(msg)
	if len(sends) != 2 || sends[0].at != t1 || sends[1].at != t1 {
		t.Fatalf("message packets %v, want two at %v%s", sends, t1, r.log())
	}
	for _, d := range r.probe.decisions {
		if d.w.StreamID == msg && d.w.Pending < payload && d.w.Size >= mps {
			t.Fatalf("short packet announced with %d bytes", d.w.Size)
		}
	}
	if short := sends[1]; short.size >= mps-500 {
		t.Fatalf("short packet of %d bytes", short.size)
	}
	if mct := r.streams[msg].mct(); mct > 26*ms {
		t.Fatalf("message completion time %v, want one one-way delay%s", mct, r.log())
	}
}

// TestReservationHoldsLastPacket: a reservation keeps room for a whole
// message as the core sends it, its last, short packet included, whose
// expected size has the core's room for ACK frames (PacketSlack) beyond
// its stream data. One path of 50 ms RTT whose window holds two
// background packets, the message's wire bytes and half the slack:
// background data may take only one packet (the window less the
// reservation), and the message's two packets (one full, one short) leave
// at once when it is written. Were the message reserved without the
// slack, a second background packet would leave only the wire bytes and
// half the slack, and the short packet would wait for an ACK.
func TestReservationHoldsLastPacket(t *testing.T) {
	const (
		t1   = 20 * ms
		size = payload + 700 // a full packet and a short one
	)
	wire := uint64(size + 2*44) // scheduler.WireBytes
	for _, sched := range []string{"cwr", "cwr-red"} {
		t.Run(sched, func(t *testing.T) {
			r := newRig(t, sched, rigPath{delay: 25 * ms, window: 2*mps + wire + scheduler.PacketSlack/2})
			r.server.AnnounceSource(scheduler.Source{ID: 1, Size: size, Next: r.t0.Add(t1)})
			bg := r.background(1 << 20)
			var msg uint64
			r.at(t1, func() { msg = r.message(size, true) })
			r.run(300 * ms)
			before := 0
			for _, s := range r.sendsOf(bg) {
				if s.at < t1 {
					before++
				}
			}
			sends := r.sendsOf(msg)
			if before != 1 || len(sends) != 2 || sends[0].at != t1 || sends[1].at != t1 {
				t.Fatalf("%d background packets before the message, message packets %v; want 1 and two at %v%s", before, sends, t1, r.log())
			}
			if mct := r.streams[msg].mct(); mct > 26*ms {
				t.Fatalf("message completion time %v, want one one-way delay%s", mct, r.log())
			}
		})
	}
}

// TestCWRReservationsMissed: a loss shrinks the window (here the test
// sets the controller's window, as a loss would) between the reservation
// and the message's generation; the message is counted once, on its path,
// at the first decision at or after its generation at which priority data
// wait, if the window's free room is smaller than its reservation.
func TestCWRReservationsMissed(t *testing.T) {
	tests := []struct {
		name string
		// room is the window's free room after the shrink, relative to
		// the message's reservation (-1: no shrink; -2: no room).
		room      int64
		messages  int  // 3-packet messages at 50 ms, 250 ms
		skipFirst bool // the application does not write the first one
		want      uint64
	}{
		{"no shrink", -1, 1, false, 0},
		{"window shrank to the bytes in flight", -2, 1, false, 1},
		{"window still holds the reservation", 0, 1, false, 0},
		{"window one byte short", -3, 1, false, 1},
		{"each message counts once; the next one finds its room", -2, 2, false, 1},
		// The first reservation failed too, but its message was never
		// written: it must not eat the second one's room.
		{"a message not written is not counted", -2, 2, true, 0},
	}
	for _, tc := range tests {
		for _, sched := range []string{"cwr", "cwr-red"} {
			t.Run(sched+"/"+tc.name, func(t *testing.T) {
				r := newRig(t, sched, rigPath{delay: 50 * ms, window: 10 * mps})
				src := scheduler.Source{ID: 9, Size: 3 * payload, Next: r.t0.Add(50 * ms)}
				if tc.messages > 1 {
					src.Interval = 200 * ms
				}
				reserved := uint64(scheduler.WireBytes(src.Size, &scheduler.PathInfo{MaxPacketSize: mps, PacketOverhead: 44})) + scheduler.PacketSlack
				r.server.AnnounceSource(src)
				r.background(1 << 20)
				r.at(10*ms, func() {
					inflight := r.server.Paths()[0].BytesInFlight
					if inflight+mps+reserved <= 10*mps || inflight+reserved > 10*mps {
						t.Errorf("%d bytes in flight before the message, want the window less the reservation", inflight)
					}
					switch tc.room {
					case -1:
					case -2:
						r.cc[0].window = inflight
					case -3:
						r.cc[0].window = inflight + reserved - 1
					default:
						r.cc[0].window = inflight + reserved
					}
				})
				r.at(150*ms, func() { r.cc[0].window = 10 * mps })
				for m := range tc.messages {
					if m > 0 || !tc.skipFirst {
						r.at(50*ms+time.Duration(m)*200*ms, func() { r.message(3*payload, true) })
					}
				}
				r.run(500 * ms)
				if got := r.server.Paths()[0].SchedulerCounters[scheduler.CounterReservationsMissed]; got != tc.want {
					t.Fatalf("reservations_missed %d, want %d%s", got, tc.want, r.log())
				}
			})
		}
	}
}

// TestCWRRedMissedPerPath: with reservations on both paths, a shrunk
// window on one path misses only that path's reservation.
func TestCWRRedMissedPerPath(t *testing.T) {
	r := newRig(t, "cwr-red", rigPath{delay: 20 * ms, window: 4 * mps}, rigPath{delay: 30 * ms, window: 4 * mps})
	r.server.AnnounceSource(scheduler.Source{ID: 1, Size: 2 * payload, Next: r.t0.Add(30 * ms)})
	r.background(1 << 20)
	r.at(10*ms, func() { r.cc[1].window = r.server.Paths()[1].BytesInFlight })
	r.at(30*ms, func() { r.message(2*payload, true) })
	r.run(200 * ms)
	got := [2]uint64{}
	for _, ps := range r.server.Paths() {
		got[ps.ID] = ps.SchedulerCounters[scheduler.CounterReservationsMissed]
	}
	if got != [2]uint64{0, 1} {
		t.Fatalf("reservations_missed %v, want [0 1]%s", got, r.log())
	}
}

// TestReservationBeyondWindowDropped: a path keeps only the reservations
// its congestion window can hold; the reservation of a message that does
// not fit beside the earlier messages reserved on the path is dropped and
// holds nothing back (the paper's Section III-D1: "If a packet loss occurs
// before a message is generated, the reserved area cannot be used because
// it is dropped"). Were it kept, the path would carry no background data
// at all, and a path without packets in flight no acknowledgements, so
// that its window could never grow to hold the message (paper-fig4 at
// 50 ms / 50 kB, seed 1: cwr-red's path 0 idle for 3 s).
func TestReservationBeyondWindowDropped(t *testing.T) {
	t.Run("one message larger than the window", func(t *testing.T) {
		// Two paths of about 50 ms RTT; path 0's window holds 10
		// packets, path 1's 60; a 12-packet message every 50 ms, so that
		// one is always due within one RTT. cwr reserves on the faster
		// path, so path 0 is the faster one there; for cwr-red path 0 is
		// the slower one, so that priority data take path 1 (as in the
		// trace of paper-fig4). Either way path 0 carries background
		// data: for cwr-red its window's worth every RTT, about 10
		// packets for 16 RTTs from 200 ms on; for cwr what the priority
		// data, which take the faster path first, leave of it (without
		// the rule: none).
		// By default (reservation = "partial") the reservation holds
		// all of path 0's window: no background packet there.
		for _, tc := range []struct {
			sched          string
			delay0, delay1 time.Duration
			min, max       int
		}{
			{"cwr reservation=whole", 25 * ms, 26 * ms, 20, 1 << 30},
			{"cwr-red reservation=whole", 26 * ms, 25 * ms, 100, 1 << 30},
			{"cwr-red-fast", 26 * ms, 25 * ms, 100, 1 << 30},
			{"cwr", 25 * ms, 26 * ms, 0, 0},
			{"cwr-red", 26 * ms, 25 * ms, 0, 0},
		} {
			t.Run(tc.sched, func(t *testing.T) {
				r := newRig(t, tc.sched, rigPath{delay: tc.delay0, window: 10 * mps}, rigPath{delay: tc.delay1, window: 60 * mps})
				src := scheduler.Source{ID: 1, Size: 12 * payload, Interval: 50 * ms, Next: r.t0.Add(20 * ms)}
				r.server.AnnounceSource(src)
				bg := r.background(1 << 30)
				for at := 20 * ms; at < 1000*ms; at += 50 * ms {
					r.at(at, func() { r.message(12*payload, true) })
				}
				r.run(1000 * ms)
				n := 0
				for _, s := range r.sendsOf(bg) {
					if s.path == 0 && s.at >= 200*ms {
						n++
					}
				}
				if n < tc.min || n > tc.max {
					t.Fatalf("%d background packets on path 0 from 200 ms on, want %d to %d%s", n, tc.min, tc.max, r.log())
				}
				t.Logf("%d background packets on path 0 from 200 ms on", n)
			})
		}
	})
	t.Run("the later of two messages", func(t *testing.T) {
		// One path of 50 ms RTT whose window holds 10 packets; a message
		// of 6 packets at 30 ms and one of 4 packets at 40 ms, of two
		// sources (the later one's with the lower ID: messages are taken
		// in order of generation, not of source). Together they need
		// more than the window: the later one's reservation is dropped,
		// the earlier one's holds. Before 30 ms background data take the
		// window less the first reservation, 3 packets, and the first
		// message leaves at once. (Reserving the later one instead
		// would let 5 background packets out, and the first message
		// would wait for an ACK.)
		for _, sched := range []string{"cwr reservation=whole", "cwr-red reservation=whole"} {
			t.Run(sched, func(t *testing.T) {
				r := newRig(t, sched, rigPath{delay: 25 * ms, window: 10 * mps})
				r.server.AnnounceSource(scheduler.Source{ID: 2, Size: 6 * payload, Next: r.t0.Add(30 * ms)})
				r.server.AnnounceSource(scheduler.Source{ID: 1, Size: 4 * payload, Next: r.t0.Add(40 * ms)})
				bg := r.background(1 << 20)
				var first uint64
				r.at(30*ms, func() { first = r.message(6*payload, true) })
				r.at(40*ms, func() { r.message(4*payload, true) })
				r.run(300 * ms)
				before := 0
				for _, s := range r.sendsOf(bg) {
					if s.at < 30*ms {
						before++
					}
				}
				if before != 3 {
					t.Fatalf("%d background packets before the first message, want 3%s", before, r.log())
				}
				for _, s := range r.sendsOf(first) {
					if s.at != 30*ms {
						t.Fatalf("first message's packet %v, want it at 30 ms%s", s, r.log())
					}
				}
			})
		}
	})
}
