package core

import (
	"testing"
	"time"
)

// TestConnWindowFollowsStream: with ConnWindowFollowsStream the client's
// connection window is at least 1.5 times its stream's whenever
// auto-tuning grows the stream's (windows starting at 32 and 48 KiB, as
// MPQUIC's, a 4 MB download over 20 ms RTT); without it the connection's
// window grows on its own and falls below that for part of the transfer.
func TestConnWindowFollowsStream(t *testing.T) {
	for _, follow := range []bool{true, false} {
		ccfg, scfg := testConfigs(t)
		for _, c := range []*Config{ccfg, scfg} {
			c.InitialStreamWindow, c.InitialConnWindow = 32<<10, 48<<10
			c.ConnWindowFollowsStream = follow
		}
		p := newPair(t, ccfg, scfg, EndpointConfig{})
		p.handshake()
		var stream, conn uint64 // the largest windows seen
		short := 0              // times the connection's was below 1.5 times the stream's
		p.transferHook(p.server, p.client, randomBytes(4<<20, 7), 30*time.Second, func(int) {
			for _, s := range p.client.streams.m {
				if s.recv != nil {
					stream = max(stream, s.recv.Window())
					if w := p.client.streams.connRecv.Window(); w < s.recv.Window()*3/2 {
						short++
					}
				}
			}
			conn = max(conn, p.client.streams.connRecv.Window())
		})
		t.Logf("follow %v: stream window up to %d, connection's up to %d, %d reads with the connection's below 1.5 times the stream's", follow, stream, conn, short)
		if stream <= 32<<10 {
			t.Fatalf("follow %v: the stream's window never grew (%d)", follow, stream)
		}
		if follow && short > 0 {
			t.Errorf("connection window below 1.5 times the stream's after %d reads", short)
		}
		if !follow && short == 0 {
			t.Errorf("without the rule the connection's window kept 1.5 times the stream's all along: the test shows nothing")
		}
	}
}
