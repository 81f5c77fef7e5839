package scheduler_test

import (
	"testing"
	"time"
)

// TestRigWaitForFast runs ecf and blest inside the real core on a fast
// path (10 ms RTT) and a slow one, each with a fixed window of 10 packets,
// and writes a 27000-byte message (about 21 packets) at t0: the fast path
// takes the first 10 packets, and the decision for the 11th is the
// rules'. lowrtt puts it on the slow path at once. ecf waits for the fast
// path (k ≈ 14000 bytes: n·rtt_f ≈ 2·10 ms < rtt_s + δ, and
// (max(k, cwnd_s)/cwnd_s)·rtt_s ≥ 2·rtt_f + δ). blest waits only when its estimate of what the fast path
// sends during one slow RTT exceeds the connection's flow-control window
// (768 KiB here): X = 1350·(10 + 4.5)·10 ≈ 196 kB at 100 ms RTT (no
// wait), X = 1350·(10 + 24.5)·50 ≈ 2.3 MB at 500 ms (wait). Checked: no
// byte of the message leaves on the slow path before the fast path's first
// acknowledgement can arrive (10 ms), or some does.
func TestRigWaitForFast(t *testing.T) {
	tests := []struct {
		sched     string
		slowDelay time.Duration // one way
		wantSlow  bool
	}{
		{"lowrtt", 50 * ms, true},
		{"ecf", 50 * ms, false},
		{"blest", 50 * ms, true},
		{"lowrtt", 250 * ms, true},
		{"ecf", 250 * ms, false},
		{"blest", 250 * ms, false},
	}
	for _, tt := range tests {
		t.Run(tt.sched+"/"+tt.slowDelay.String(), func(t *testing.T) {
			r := newRig(t, tt.sched, rigPath{5 * ms, 10 * mps}, rigPath{tt.slowDelay, 10 * mps})
			id := r.message(27000, false)
			r.run(4 * tt.slowDelay)
			early := 0
			for _, s := range r.sendsOf(id) {
				if s.path == 1 && s.at < 10*ms {
					early += s.bytes
				}
			}
			st := r.streams[id]
			if st.done < 0 {
				t.Fatalf("message not delivered%s", r.log())
			}
			t.Logf("%s: %d bytes on the slow path before 10 ms; message completion %v", tt.sched, early, st.mct())
			if got := early > 0; got != tt.wantSlow {
				t.Fatalf("slow path used before 10 ms: %v, want %v%s", got, tt.wantSlow, r.log())
			}
		})
	}
}
