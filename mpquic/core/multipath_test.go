package core

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

var clientAddr2 = netip.MustParseAddrPort("10.1.0.1:5001")

// openSecondPath negotiates multipath and opens path 1 from clientAddr2.
func openSecondPath(t *testing.T, p *pair) uint64 {
	t.Helper()
	p.handshake()
	if !p.client.MultipathEnabled() || !p.server.MultipathEnabled() {
		t.Fatal("multipath not negotiated between two mpquic endpoints")
	}
	var id uint64
	p.runUntil(func() bool {
		var err error
		id, err = p.client.AddPath(clientAddr2, serverAddr)
		if err != nil && !errors.Is(err, ErrNoPathCIDs) {
			t.Fatalf("AddPath: %v", err)
		}
		return err == nil
	}, 2*time.Second)
	if id != 1 {
		t.Fatalf("first new path has ID %d, want 1", id)
	}
	p.runUntil(func() bool {
		sp := p.server.openPath(id)
		cp := p.client.openPath(id)
		return cp != nil && cp.state == pathActive && sp != nil && sp.state == pathActive
	}, 5*time.Second)
	return id
}

func pathStats(c *Conn, id uint64) PathStats {
	for _, ps := range c.Paths() {
		if ps.ID == id {
			return ps
		}
	}
	return PathStats{}
}

func TestMultipathOpenTransferAbandon(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	id := openSecondPath(t, p)

	// Validation: both ends saw PATH_CHALLENGE answered on the new path.
	var validated bool
	for _, e := range events(p.client) {
		if e.Kind == EventPathValidated && e.PathID == id {
			validated = true
		}
	}
	if !validated {
		t.Fatal("no EventPathValidated for the client's new path")
	}
	if ps := pathStats(p.server, id); ps.Local != serverAddr || ps.Remote != clientAddr2 {
		t.Fatalf("server's path %d is %v -> %v", id, ps.Local, ps.Remote)
	}

	// Bulk data from the server uses both paths.
	before0, before1 := pathStats(p.server, 0).BytesSent, pathStats(p.server, id).BytesSent
	p.transfer(p.server, p.client, randomBytes(3<<20, 7), 60*time.Second)
	sent0 := pathStats(p.server, 0).BytesSent - before0
	sent1 := pathStats(p.server, id).BytesSent - before1
	t.Logf("server sent %d bytes on path 0, %d on path %d", sent0, sent1, id)
	if sent0 < 256<<10 || sent1 < 256<<10 {
		t.Fatalf("server sent %d bytes on path 0 and %d on path %d: both should carry data", sent0, sent1, id)
	}

	// The client abandons path 0: the server answers, the connection goes
	// on over path 1 alone.
	if err := p.client.AbandonPath(0, uint64(qerr.NoError)); err != nil {
		t.Fatal(err)
	}
	p.runUntil(func() bool {
		return pathStats(p.server, 0).State == "closing" || p.server.pathByID(0) == nil
	}, 5*time.Second)
	p.transfer(p.server, p.client, randomBytes(1<<20, 8), 60*time.Second)
	p.transfer(p.client, p.server, randomBytes(200<<10, 9), 60*time.Second)
	if err := p.client.Err(); err != nil {
		t.Fatalf("client closed: %v", err)
	}
	// After three PTOs the state of path 0 is gone at both ends and the
	// server allows one more path ID.
	p.runUntil(func() bool {
		return p.client.pathByID(0) == nil && p.server.pathByID(0) == nil && p.client.mp.peerMax == sc.maxPathID()+1
	}, 10*time.Second)
}

func (c *Config) maxPathID() uint64 {
	v, err := c.Validate()
	if err != nil {
		panic(err)
	}
	return v.MaxPathID
}

func TestMultipathBackupStatus(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	id := openSecondPath(t, p)
	if err := p.client.SetPathStatus(id, true); err != nil {
		t.Fatal(err)
	}
	p.runUntil(func() bool { return pathStats(p.server, id).PeerStatus == "backup" }, 2*time.Second)
	before := pathStats(p.server, id).BytesSent
	p.transfer(p.server, p.client, randomBytes(2<<20, 10), 60*time.Second)
	// A backup path carries no data while the available path works (only
	// acknowledgements of its own packets).
	if sent := pathStats(p.server, id).BytesSent - before; sent > 10<<10 {
		t.Fatalf("server sent %d bytes on the backup path", sent)
	}
}

func TestMultipathDisabledInterop(t *testing.T) {
	tests := []struct {
		name           string
		client, server bool // multipath disabled
	}{
		{"client disables", true, false},
		{"server disables", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc, sc := testConfigs(t)
			cc.DisableMultipath, sc.DisableMultipath = tc.client, tc.server
			p := newPair(t, cc, sc, EndpointConfig{})
			p.handshake()
			if p.client.MultipathEnabled() || p.server.MultipathEnabled() {
				t.Fatal("multipath enabled although one end did not offer it")
			}
			if _, err := p.client.AddPath(clientAddr2, serverAddr); !errors.Is(err, ErrNoMultipath) {
				t.Fatalf("AddPath without multipath: %v", err)
			}
			p.transfer(p.client, p.server, randomBytes(100<<10, 11), 10*time.Second)
		})
	}
}

func TestMultipathValidationFails(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	// Everything on the new path is lost: validation fails and the path
	// is abandoned; the connection lives on.
	p.drop = func(toServer bool, d []byte) bool { return false }
	var id uint64
	p.runUntil(func() bool {
		var err error
		id, err = p.client.AddPath(clientAddr2, serverAddr)
		return err == nil
	}, 2*time.Second)
	lost := 0
	p.dropPath = func(f flight) bool {
		if f.d.Local == clientAddr2 || f.d.Remote == clientAddr2 {
			lost++
			return true
		}
		return false
	}
	p.runUntil(func() bool {
		for _, e := range events(p.client) {
			if e.Kind == EventPathFailed && e.PathID == id {
				return true
			}
		}
		return false
	}, 10*time.Second)
	if lost < 2 {
		t.Fatalf("only %d datagrams tried the dead path: PATH_CHALLENGE not repeated", lost)
	}
	p.transfer(p.client, p.server, randomBytes(50<<10, 12), 10*time.Second)
}

func TestMultipathFrameWithoutNegotiation(t *testing.T) {
	cc, sc := testConfigs(t)
	cc.DisableMultipath = true
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	// MAX_PATH_ID (0x3e7a) from a client that did not offer multipath.
	pkt := sealFrames(t, p.client, []byte{0x7e, 0x7a, 0x05})
	p.server.HandleDatagram(p.now, Datagram{Local: serverAddr, Remote: clientAddr, Data: pkt})
	var te *qerr.TransportError
	if err := p.server.Err(); !errors.As(err, &te) || te.Code != qerr.ProtocolViolation {
		t.Fatalf("server error %v, want PROTOCOL_VIOLATION", err)
	}
}

// transferHook is transfer with a hook called whenever the receiver got
// more data, with the byte count so far.
func (p *pair) transferHook(from, to *Conn, data []byte, max time.Duration, hook func(got int)) {
	p.t.Helper()
	s, err := from.OpenStream(true)
	if err != nil {
		p.t.Fatal(err)
	}
	written, got := 0, 0
	var rs *Stream
	buf := make([]byte, 64<<10)
	var recv []byte
	finished := false
	p.runUntil(func() bool {
		if written < len(data) {
			n, err := s.Write(data[written:])
			if err != nil {
				p.t.Fatalf("write: %v", err)
			}
			written += n
			if written == len(data) {
				s.Close()
			}
		}
		if rs == nil {
			rs = to.AcceptStream()
		}
		for rs != nil && !finished {
			n, err := rs.Read(buf)
			recv = append(recv, buf[:n]...)
			if n > 0 {
				got += n
				hook(got)
			}
			if err != nil {
				finished = true
				break
			}
			if n == 0 {
				break
			}
		}
		return finished
	}, max)
	if !bytes.Equal(recv, data) {
		p.t.Fatalf("received %d bytes, want %d (content equal: %v)", len(recv), len(data), bytes.Equal(recv, data))
	}
}

func TestMultipathAbandonMidTransfer(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	id := openSecondPath(t, p)
	data := randomBytes(4<<20, 13)
	abandoned := false
	p.transferHook(p.server, p.client, data, 60*time.Second, func(got int) {
		if !abandoned && got > 1<<20 {
			abandoned = true
			if err := p.client.AbandonPath(0, uint64(qerr.ApplicationAbandonPath)); err != nil {
				t.Fatal(err)
			}
		}
	})
	if !abandoned {
		t.Fatal("never abandoned")
	}
	if ps := pathStats(p.server, id); ps.State != "active" {
		t.Fatalf("path %d is %s", id, ps.State)
	}
}

func TestMultipathBlackoutMovesData(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	id := openSecondPath(t, p)
	// Path 0 loses everything for 3 s in the middle of a transfer; the
	// data in flight on it must not wait for it.
	data := randomBytes(6<<20, 14)
	var start time.Time
	var during0, during1 uint64
	var base0, base1 uint64
	p.transferHook(p.server, p.client, data, 60*time.Second, func(got int) {
		if start.IsZero() && got > 1<<20 {
			start = p.now
			base0, base1 = pathStats(p.server, 0).BytesSent, pathStats(p.server, id).BytesSent
			p.dropPath = func(f flight) bool {
				onPath0 := f.d.Local == clientAddr || f.d.Remote == clientAddr
				return onPath0 && p.now.Sub(start) < 3*time.Second
			}
		}
		if !start.IsZero() && p.now.Sub(start) < 3*time.Second {
			during0 = pathStats(p.server, 0).BytesSent - base0
			during1 = pathStats(p.server, id).BytesSent - base1
		}
	})
	t.Logf("during the blackout the server sent %d bytes on path 0, %d on path %d; transfer took %v after it began", during0, during1, id, p.now.Sub(start))
	if during1 < 1<<20 {
		t.Fatalf("only %d bytes moved to path %d during the blackout", during1, id)
	}
	if during0 > during1/4 {
		t.Fatalf("path 0 kept %d bytes during the blackout (path %d: %d)", during0, id, during1)
	}
}

func TestMultipathBackupTakesOverOnFailure(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	id := openSecondPath(t, p)
	if err := p.client.SetPathStatus(id, true); err != nil {
		t.Fatal(err)
	}
	p.runUntil(func() bool { return pathStats(p.server, id).PeerStatus == "backup" }, 2*time.Second)
	data := randomBytes(6<<20, 15)
	var failAt time.Time
	var before1 uint64
	var beforeFail1 uint64
	p.transferHook(p.server, p.client, data, 60*time.Second, func(got int) {
		if failAt.IsZero() && got < 2<<20 {
			before1 = pathStats(p.server, id).BytesSent
		}
		if failAt.IsZero() && got >= 2<<20 {
			// Path 0 fails for good.
			failAt = p.now
			beforeFail1 = pathStats(p.server, id).BytesSent
			p.dropPath = func(f flight) bool { return f.d.Local == clientAddr || f.d.Remote == clientAddr }
		}
	})
	after1 := pathStats(p.server, id).BytesSent - beforeFail1
	t.Logf("backup path carried %d bytes before path 0 failed, %d after", before1, after1)
	if before1 > 20<<10 {
		t.Fatalf("backup path carried %d bytes while path 0 worked", before1)
	}
	if after1 < 3<<20 {
		t.Fatalf("backup path carried only %d bytes after the failure", after1)
	}
}

type countingObserver struct {
	metrics map[uint64]int
	states  map[string]bool
	sent    map[uint64]int
}

func (o *countingObserver) PathMetricsUpdated(now time.Time, m PathMetrics) {
	o.metrics[m.PathID]++
	o.states[m.CongestionState] = true
}

func (o *countingObserver) StreamDataSent(now time.Time, pathID, streamID uint64, priority bool, n int) {
	o.sent[pathID] += n
}

func TestObserver(t *testing.T) {
	cc, sc := testConfigs(t)
	obs := &countingObserver{metrics: map[uint64]int{}, states: map[string]bool{}, sent: map[uint64]int{}}
	sc.Observer = func(vantage string) Observer {
		if vantage != "server" {
			t.Errorf("server observer for %q", vantage)
		}
		return obs
	}
	p := newPair(t, cc, sc, EndpointConfig{})
	id := openSecondPath(t, p)
	p.drop = func(toServer bool, d []byte) bool { return !toServer && len(d) > 1000 && d[len(d)-1]%50 == 0 }
	data := randomBytes(2<<20, 16)
	p.transfer(p.server, p.client, data, 60*time.Second)
	if obs.metrics[0] == 0 || obs.metrics[id] == 0 {
		t.Fatalf("metrics updates per path: %v", obs.metrics)
	}
	if total := obs.sent[0] + obs.sent[id]; total < len(data) {
		t.Fatalf("observer saw %d stream bytes sent, the transfer was %d", total, len(data))
	}
	if !obs.states["slow_start"] || !obs.states["recovery"] {
		t.Fatalf("congestion states seen: %v", obs.states)
	}
}

// TestMultipathKeyUpdate: key updates every 200 packets while data flows
// over two paths; packets of the old phase arriving late on the other path
// still decrypt, and both ends follow every update.
func TestMultipathKeyUpdate(t *testing.T) {
	cc, sc := testConfigs(t)
	sc.KeyUpdateInterval = 200
	p := newPair(t, cc, sc, EndpointConfig{})
	id := openSecondPath(t, p)
	p.transfer(p.server, p.client, randomBytes(3<<20, 17), 60*time.Second)
	if p.server.app.generation < 3 || p.client.app.generation != p.server.app.generation {
		t.Fatalf("key generations: server %d, client %d", p.server.app.generation, p.client.app.generation)
	}
	if pathStats(p.server, 0).BytesSent < 256<<10 || pathStats(p.server, id).BytesSent < 256<<10 {
		t.Fatal("the transfer did not use both paths")
	}
	if err := p.client.Err(); err != nil {
		t.Fatal(err)
	}
}
