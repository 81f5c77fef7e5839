package core

import (
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
