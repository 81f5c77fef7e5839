package core

import (
	"testing"
	"time"
)

// TestControllerPacing: a controller that sets its own pacing rate (bbr)
// gets a pacer on every path whatever Pacing says; the others only with
// Pacing. Coupled controllers of one connection share its group.
func TestControllerPacing(t *testing.T) {
	for _, tc := range []struct {
		cc        string
		pacing    bool
		wantPacer bool
	}{{"bbr", false, true}, {"bbr", true, true}, {"newreno", false, false}, {"cubic", true, true}, {"olia", false, false}} {
		cc, sc := testConfigs(t)
		cc.Congestion, sc.Congestion = tc.cc, tc.cc
		cc.Pacing, sc.Pacing = tc.pacing, tc.pacing
		p := newPair(t, cc, sc, EndpointConfig{})
		p.handshake()
		for _, c := range []*Conn{p.client, p.server} {
			path := c.paths[0]
			if (path.pacer != nil) != tc.wantPacer {
				t.Errorf("%s, pacing %v: pacer %v, want %v", tc.cc, tc.pacing, path.pacer != nil, tc.wantPacer)
			}
			if (path.rater != nil) != (tc.cc == "bbr") {
				t.Errorf("%s: the path takes its pacing rate from the controller: %v", tc.cc, path.rater != nil)
			}
			if tc.cc == "olia" && c.ccGroup.Len() != 1 {
				t.Errorf("olia: group of %d controllers, want 1", c.ccGroup.Len())
			}
		}
	}
}

// TestCoupledGroupFollowsPaths: with olia, each path's controller joins
// the connection's group when the path opens and leaves it when the path
// is abandoned, so the coupled increase counts the open paths only.
func TestCoupledGroupFollowsPaths(t *testing.T) {
	cc, sc := testConfigs(t)
	cc.Congestion, sc.Congestion = "olia", "olia"
	p := newPair(t, cc, sc, EndpointConfig{})
	openSecondPath(t, p)
	if n := p.server.ccGroup.Len(); n != 2 {
		t.Fatalf("two paths: the server's group has %d controllers", n)
	}
	if err := p.client.AbandonPath(0, 0); err != nil {
		t.Fatal(err)
	}
	p.runUntil(func() bool { return p.server.ccGroup.Len() == 1 && p.client.ccGroup.Len() == 1 }, 5*time.Second)
	if p.server.ccGroup.Len() != 1 || p.client.ccGroup.Len() != 1 {
		t.Fatalf("path 0 abandoned: groups of %d and %d controllers, want 1", p.server.ccGroup.Len(), p.client.ccGroup.Len())
	}
}

// TestControllerPaced: the controllers learn whether their path is paced
// (congestion.Config.Paced), which lifts HyStart++'s per-ACK growth limit
// (RFC 9406 Section 4.3).
func TestControllerPaced(t *testing.T) {
	for _, pacing := range []bool{false, true} {
		cfg := Config{MaxPacketSize: 1350, Pacing: pacing}
		if got := cfg.congestionConfig(nil).Paced; got != pacing {
			t.Errorf("Pacing %v: congestion.Config.Paced %v", pacing, got)
		}
	}
}
