package runner

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestZeroRTTConnectToPublish: a stop-and-wait publish on a resumed
// connection with 0-RTT (transport.zero_rtt) is written at the
// connection's start and acknowledged one RTT later; without, both wait
// for the handshake's round trip. The done-when of the 0-RTT work: at
// least half an RTT shorter.
func TestZeroRTTConnectToPublish(t *testing.T) {
	const rtt = 100.0 // ms
	doc := func(zero bool, loss string) string {
		return fmt.Sprintf(`name = "saw"
duration = "3s"
seed = 3
[[path]]
rate = "10Mbit"
rtt = "100ms"
loss = %q
[transport]
multipath = false
zero_rtt = %v
[[source]]
name = "pub"
kind = "stop-and-wait"
size = 64
count = 5
`, loss, zero)
	}
	without, _ := run(t, doc(false, "0%"))
	with, _ := run(t, doc(true, "0%"))
	a, b := without.Summary.Sources[0], with.Summary.Sources[0]
	if *a.CompletionRatio != 1 || *b.CompletionRatio != 1 {
		t.Fatalf("completion ratios %v and %v", *a.CompletionRatio, *b.CompletionRatio)
	}
	if without.Summary.ZeroRTT != nil {
		t.Errorf("zero_rtt summary without zero_rtt: %+v", without.Summary.ZeroRTT)
	}
	z := with.Summary.ZeroRTT
	if z == nil || !z.Resumed || !z.Offered || !z.Accepted || z.PacketsSent == 0 || z.StreamBytesSent == 0 {
		t.Fatalf("zero_rtt summary %+v", z)
	}
	ackA, ackB := float64(*a.ConnectToFirstAckMS), float64(*b.ConnectToFirstAckMS)
	t.Logf("connect to first publish: %.3f ms without 0-RTT, %.3f ms with; to its acknowledgement %.3f and %.3f ms",
		*a.ConnectToFirstMS, *b.ConnectToFirstMS, ackA, ackB)
	if *b.ConnectToFirstMS > rtt/2 || *a.ConnectToFirstMS-*b.ConnectToFirstMS < rtt/2 {
		t.Errorf("connect to first publish %.3f ms with 0-RTT, %.3f without", *b.ConnectToFirstMS, *a.ConnectToFirstMS)
	}
	if ackB < rtt || ackB > 1.5*rtt || ackA-ackB < rtt/2 {
		t.Errorf("connect to first acknowledgement %.3f ms with 0-RTT, %.3f without (RTT %v ms)", ackB, ackA, rtt)
	}
	// Lossy: the run completes, whatever 0-RTT's fate.
	lossy, _ := run(t, doc(true, "5%"))
	if s := lossy.Summary.Sources[0]; s.ConnectToFirstAckMS == nil || math.IsNaN(float64(*s.ConnectToFirstAckMS)) {
		t.Fatalf("lossy run: %+v", s)
	}
}

// TestZeroRTTLoopbackRefused: the loopback backend refuses
// transport.zero_rtt.
func TestZeroRTTLoopbackRefused(t *testing.T) {
	e := load(t, `name = "x"
backend = "loopback"
duration = "1s"
[[path]]
rate = "10Mbit"
rtt = "10ms"
[transport]
zero_rtt = true
[[source]]
name = "pub"
kind = "stop-and-wait"
count = 1
`)
	_, err := Run(context.Background(), e, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "zero_rtt") {
		t.Fatalf("Run = %v, want a zero_rtt error", err)
	}
}

// TestRolesZeroRTT: the two-process roles (netns and hosts) run the
// warm-up connection before time zero and resume with 0-RTT; the warm-up
// leaves no trace and no statistics.
func TestRolesZeroRTT(t *testing.T) {
	e := load(t, `name = "roles0rtt"
duration = "1s"
seed = 5
[[path]]
rate = 0
rtt = "0s"
[transport]
multipath = false
zero_rtt = true
[[source]]
name = "pub"
kind = "stop-and-wait"
count = 10
size = 64
[output]
qlog = true
`)
	res, _, _, _, out := runRoles(t, e)
	s := res.Summary
	if z := s.ZeroRTT; z == nil || !z.Resumed || !z.Offered || !z.Accepted {
		t.Fatalf("zero_rtt %+v", s.ZeroRTT)
	}
	// Whether the first publish leaves in 0-RTT packets is a race on this
	// link without delay: the handshake can complete (in microseconds)
	// before the client's first write. The simulator's
	// TestZeroRTTConnectToPublish and mpquic's 0-RTT interop tests check
	// that data goes in 0-RTT; here it is only reported.
	t.Logf("0-RTT packets sent: %d (%d stream bytes)", s.ZeroRTT.PacketsSent, s.ZeroRTT.StreamBytesSent)
	if src := s.Sources[0]; src.Completed != 10 || src.ConnectToFirstMS == nil || src.ConnectToFirstAckMS == nil {
		t.Fatalf("source %+v", src)
	}
	traces, _ := filepath.Glob(filepath.Join(out, "qlog", "*.sqlog"))
	if len(traces) != 2 {
		t.Errorf("traces %v, want the measured connection's two", traces)
	}
}
