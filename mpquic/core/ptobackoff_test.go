package core

import (
	"testing"
	"time"
)

// TestPTOBackoff: with every datagram to the client lost after the
// handshake, the server's probe timeouts on its path back off
// exponentially (RFC 9002 Section 6.2.1): each probe goes out twice as
// long after the previous one as that one after its own predecessor.
func TestPTOBackoff(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	p.runUntil(func() bool { return p.server.openPath(0).rtt.Smoothed() > 0 }, time.Second)
	p.dropPath = func(f flight) bool { return !f.toServer }
	s, err := p.server.OpenStream(true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("a message that is never acknowledged")); err != nil {
		t.Fatal(err)
	}
	var at []time.Time
	count := p.server.openPath(0).ptoCount
	p.runUntil(func() bool {
		if c := p.server.openPath(0).ptoCount; c != count {
			count = c
			at = append(at, p.now)
		}
		return len(at) == 5
	}, 60*time.Second)
	for i := 2; i < len(at); i++ {
		prev, gap := at[i-1].Sub(at[i-2]), at[i].Sub(at[i-1])
		if r := float64(gap) / float64(prev); r < 1.95 || r > 2.05 {
			t.Errorf("probe timeout %d came %v after the previous one, %v before it: ratio %.3f, want 2", i, gap, prev, r)
		}
	}
	t.Logf("probe timeouts at %v after the first", func() (d []time.Duration) {
		for _, a := range at {
			d = append(d, a.Sub(at[0]))
		}
		return
	}())
}
