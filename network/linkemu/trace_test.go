package linkemu

import (
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

// The emulator times a traced direction's datagrams by the trace, from
// Config.Start: with one 1500-byte opportunity every 10 ms, five
// 1000-byte datagrams sent at once leave at 10, 20, 20, 30 and 40 ms
// (an opportunity's leftover goes to the next datagram), never earlier.
func TestEmulatorTrace(t *testing.T) {
	trace := &experiment.Trace{MS: []int64{10}}
	down := experiment.Link{Trace: trace, Rate: trace.MeanRate(), QueueBytes: 1 << 20}
	up := experiment.Link{QueueBytes: 1 << 20}
	server := udp(t, "127.0.0.1:0")
	client := udp(t, "127.0.0.1:0")
	e := start(t, Config{Paths: []experiment.Path{{Up: up, Down: down}}, Server: addrOf(server), Seed: 1})
	if _, err := client.WriteToUDPAddrPort([]byte{1}, e.Front(0)); err != nil {
		t.Fatal(err)
	}
	if got, _ := recvAll(t, server, 1, time.Second); len(got) != 1 {
		t.Fatal("nothing up")
	}
	// Opportunities are at 10 ms multiples after the emulator's start;
	// the burst starts right after one.
	sent := time.Now()
	for range 5 {
		if _, err := server.WriteToUDPAddrPort(make([]byte, 1000), e.Back(0)); err != nil {
			t.Fatal(err)
		}
	}
	var at []time.Duration
	for range 5 {
		got, _ := recvAll(t, client, 1, time.Second)
		if len(got) != 1 {
			t.Fatalf("%d datagrams after %v", len(at), at)
		}
		at = append(at, time.Since(sent))
	}
	// The burst needs 4 opportunities after the first, itself after the
	// send: the last comes 30 ms after the send or later. Two share an
	// opportunity and come together, where a link of the trace's mean
	// rate would space them all by 6.7 ms.
	gap := time.Duration(1<<62 - 1)
	for i := 1; i < len(at); i++ {
		gap = min(gap, at[i]-at[i-1])
	}
	if at[4] < 30*time.Millisecond || gap > 3*time.Millisecond {
		t.Errorf("arrivals %v, want the last after 30 ms and two together", at)
	}
	t.Logf("arrivals after the send: %v", at)
}
