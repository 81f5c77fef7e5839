package core

import (
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
)

// TestRTOCollapseInTheConnection: the connection hands a path's probe
// timeouts to its controller. With congestion.Readings.RTOCollapse (and
// a 32-datagram initial window, also MPQUIC's), a path whose packets are
// all lost has its window at two datagrams and ssthresh at half the
// window it had, once its third probe timeout expired; without the
// reading the window stays what it was (a probe timeout is no congestion
// signal, and no acknowledgement ever shows persistent congestion).
func TestRTOCollapseInTheConnection(t *testing.T) {
	for _, collapse := range []bool{true, false} {
		cc, sc := testConfigs(t)
		cc.CongestionReadings = congestion.Readings{InitialWindow: 32, RTOCollapse: collapse}
		p := newPair(t, cc, sc, EndpointConfig{})
		p.handshake()
		path := p.client.paths[0]
		before := path.cc.Window()
		if before < 30*uint64(p.client.cfg.MaxPacketSize) {
			t.Fatalf("window %d after the handshake, want about 32 datagrams", before)
		}
		s, err := p.client.OpenStream(true)
		if err != nil {
			t.Fatal(err)
		}
		p.drop = func(bool, []byte) bool { return true }
		s.Write(make([]byte, 20000))
		p.runUntil(func() bool { return path.ptoCount >= congestion.RTOAfterPTOs }, 30*time.Second)
		mds := uint64(p.client.cfg.MaxPacketSize)
		switch {
		case collapse && (path.cc.Window() != 2*mds || path.cc.SlowStartThreshold() != before/2):
			t.Errorf("RTO collapse: window %d ssthresh %d after %d probe timeouts, want %d and %d", path.cc.Window(), path.cc.SlowStartThreshold(), path.ptoCount, 2*mds, before/2)
		case !collapse && path.cc.Window() != before:
			t.Errorf("without the reading: window %d after %d probe timeouts, want %d", path.cc.Window(), path.ptoCount, before)
		}
	}
}
