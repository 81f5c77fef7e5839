package linkemu

import (
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

// The emulator applies a path's scheduled changes from Config.Start: with
// the up direction going down 1 s after the start, datagrams sent right
// after a start of now all cross, and datagrams sent after a start 2 s
// ago are all dropped as down in that direction while the other
// direction still carries them. (A start in the past puts the link past
// its change without waiting for it.)
func TestEmulatorScheduledChanges(t *testing.T) {
	down := true
	link := experiment.Link{Rate: 50e6, Delay: time.Millisecond, QueueBytes: 1 << 20}
	path := experiment.Path{Up: link, Down: link, Changes: []experiment.LinkChange{
		{At: time.Second, Direction: experiment.DirectionUp, Down: &down},
	}}
	const n = 50
	for _, tc := range []struct {
		name   string
		since  time.Duration // the start was this long ago
		upDown bool
	}{
		{"before the change", 0, false},
		{"after the change", 2 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := udp(t, "127.0.0.1:0")
			client := udp(t, "127.0.0.1:0")
			e := start(t, Config{Paths: []experiment.Path{path}, Server: addrOf(server), Seed: 1, Start: time.Now().Add(-tc.since)})
			for range n {
				if _, err := client.WriteToUDPAddrPort(make([]byte, 100), e.Front(0)); err != nil {
					t.Fatal(err)
				}
			}
			wantUp := n
			if tc.upDown {
				wantUp = 0
			}
			up, _ := recvAll(t, server, wantUp, 200*time.Millisecond)
			if len(up) != wantUp {
				t.Errorf("%d datagrams up, want %d", len(up), wantUp)
			}
			// The client's address is known from its datagrams, even
			// dropped ones.
			eventually(t, func() bool { return e.Stats()[0].Up.Sent == n })
			for range n {
				if _, err := server.WriteToUDPAddrPort(make([]byte, 100), e.Back(0)); err != nil {
					t.Fatal(err)
				}
			}
			if got, _ := recvAll(t, client, n, 200*time.Millisecond); len(got) != n {
				t.Errorf("%d datagrams down, want %d", len(got), n)
			}
			e.Close()
			s := e.Stats()[0]
			if s.Up.DroppedDown != uint64(n-wantUp) || s.Down.DroppedDown != 0 {
				t.Errorf("dropped as down: up %d, down %d", s.Up.DroppedDown, s.Down.DroppedDown)
			}
		})
	}
}
