package core

import (
	"io"
	"testing"
	"time"

	"github.com/mpq/mpq/scheduler"
)

// copyEvent is a packet_sent event of a trace, with its copy origin.
type copyEvent struct {
	path, pn     uint64
	size         int
	copyOf       *[2]uint64
	streamFrames [][2]uint64 // stream ID, offset
}

func num(v any) uint64 { f, _ := v.(float64); return uint64(f) }

// packetEvents returns the packet_sent (or packet_received) events of a
// trace.
func packetEvents(t *testing.T, b []byte, name string) []copyEvent {
	var out []copyEvent
	for _, e := range parseTrace(t, b) {
		if e.Name != name {
			continue
		}
		h, _ := e.Data["header"].(map[string]any)
		if h["packet_type"] != "1RTT" {
			continue
		}
		raw, _ := e.Data["raw"].(map[string]any)
		ev := copyEvent{path: num(e.Data["path_id"]), pn: num(h["packet_number"]), size: int(num(raw["length"]))}
		if d, ok := e.Data["duplicate_of"].(map[string]any); ok {
			ev.copyOf = &[2]uint64{num(d["path_id"]), num(d["packet_number"])}
		}
		frames, _ := e.Data["frames"].([]any)
		for _, f := range frames {
			fm, _ := f.(map[string]any)
			if fm["frame_type"] == "stream" {
				ev.streamFrames = append(ev.streamFrames, [2]uint64{num(fm["stream_id"]), num(fm["offset"])})
			}
		}
		out = append(out, ev)
	}
	return out
}

// closePair closes the connection and runs until both ends are closed,
// so that their traces are complete.
func closePair(p *pair) {
	p.client.Close(0, "done")
	p.runUntil(func() bool {
		a, _ := p.client.Closed()
		b, _ := p.server.Closed()
		return a && b
	}, 10*time.Second)
}

// redundantPair is a pair whose server sends every packet on both paths
// (the redundant scheduler), with the traces of both ends.
func redundantPair(t *testing.T) (*pair, uint64, map[string]*traceBuffer) {
	cc, sc := testConfigs(t)
	sc.PathScheduler = "redundant"
	traces := map[string]*traceBuffer{}
	for _, c := range []*Config{cc, sc} {
		c.Qlog = func(vantage string, _ []byte) io.WriteCloser {
			traces[vantage] = &traceBuffer{}
			return traces[vantage]
		}
	}
	p := newPair(t, cc, sc, EndpointConfig{})
	id := openSecondPath(t, p)
	return p, id, traces
}

// TestCopiesArriveOnBothPaths: the copies a path scheduler asks for leave
// on the other path in that path's number space, are marked in qlog
// (duplicate_of naming the original's path and packet number), arrive,
// and the receiver delivers the data once.
func TestCopiesArriveOnBothPaths(t *testing.T) {
	p, id, traces := redundantPair(t)
	recv1 := pathStats(p.client, id).PacketsReceived
	p.transfer(p.server, p.client, randomBytes(100<<10, 5), 10*time.Second)
	copies := pathStats(p.server, id).CopiesSent
	// redundant copies a packet while both windows have room: the
	// first flight at least.
	if copies < 8 {
		t.Fatalf("%d copies sent on path %d", copies, id)
	}
	if d := p.server.CopiesDropped(); len(d) != 0 {
		t.Fatalf("copies dropped: %v", d)
	}
	if got := pathStats(p.client, id).PacketsReceived - recv1; got < copies {
		t.Fatalf("client received %d packets on path %d, fewer than the %d copies", got, id, copies)
	}
	closePair(p)
	sent := packetEvents(t, traces["server"].Bytes(), "quic:packet_sent")
	orig := map[[2]uint64]copyEvent{}
	marked := 0
	for _, e := range sent {
		if e.copyOf == nil {
			orig[[2]uint64{e.path, e.pn}] = e
			continue
		}
		marked++
		o, ok := orig[*e.copyOf]
		if !ok || o.path == e.path || e.path != id || len(o.streamFrames) != len(e.streamFrames) {
			t.Fatalf("copy %+v of %+v", e, o)
		}
		for i := range o.streamFrames {
			if o.streamFrames[i] != e.streamFrames[i] {
				t.Fatalf("copy %+v carries other frames than %+v", e, o)
			}
		}
	}
	if uint64(marked) != copies {
		t.Fatalf("%d packets marked duplicate_of in qlog, %d copies counted", marked, copies)
	}
	// The client saw the same stream data on both paths.
	onPath := map[[2]uint64]map[uint64]bool{}
	for _, e := range packetEvents(t, traces["client"].Bytes(), "quic:packet_received") {
		for _, f := range e.streamFrames {
			if onPath[f] == nil {
				onPath[f] = map[uint64]bool{}
			}
			onPath[f][e.path] = true
		}
	}
	both := 0
	for _, paths := range onPath {
		if len(paths) == 2 {
			both++
		}
	}
	if uint64(both) < copies {
		t.Fatalf("%d stream frames received on both paths, %d copies sent", both, copies)
	}
}

// TestCopiesLongerPacketNumber: a copy is built with the packet number
// encoding of its own path. Path 1 skips packet numbers (RFC 9000 Section
// 12.3 allows it), so that its packet numbers need two bytes where path
// 0's need one: the originals are built small enough that their copies,
// one byte longer, still fit the maximum packet size, and none is
// dropped.
func TestCopiesLongerPacketNumber(t *testing.T) {
	p, id, traces := redundantPair(t)
	q := p.server.openPath(id)
	const skip = 300
	q.app.nextPN += skip
	p.transfer(p.server, p.client, randomBytes(100<<10, 6), 10*time.Second)
	if d := p.server.CopiesDropped(); len(d) != 0 {
		t.Fatalf("copies dropped: %v", d)
	}
	closePair(p)
	sent := packetEvents(t, traces["server"].Bytes(), "quic:packet_sent")
	orig := map[[2]uint64]copyEvent{}
	longer, full := 0, 0
	for _, e := range sent {
		if e.size > p.server.cfg.MaxPacketSize {
			t.Fatalf("packet of %d bytes", e.size)
		}
		if e.copyOf == nil {
			orig[[2]uint64{e.path, e.pn}] = e
			continue
		}
		o := orig[*e.copyOf]
		if e.size > o.size {
			longer++
		}
		if e.size == p.server.cfg.MaxPacketSize {
			full++
		}
	}
	if longer < 8 || full < 8 {
		t.Fatalf("%d copies longer than their original, %d of full size: want many of each", longer, full)
	}
	if got := pathStats(p.server, id).CopiesSent; got < 8 {
		t.Fatalf("%d copies sent", got)
	}
}

// TestCopiesDroppedCounted: a copy that cannot be sent is counted with its
// reason.
func TestCopiesDroppedCounted(t *testing.T) {
	const name = "test-copy-to-nowhere"
	scheduler.RegisterPath(name, func() scheduler.PathScheduler { return copyToNowhere{} })
	cc, sc := testConfigs(t)
	sc.PathScheduler = name
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	p.transfer(p.server, p.client, randomBytes(20<<10, 7), 10*time.Second)
	d := p.server.CopiesDropped()
	if d[CopyUnknownPath] == 0 || d[CopySamePath] == 0 || len(d) != 2 || d[CopyUnknownPath] != d[CopySamePath] {
		t.Fatalf("copies dropped %v, want as many to an unknown path as to the same path", d)
	}
}

// copyToNowhere asks for copies of every packet on its own path and on a
// path that does not exist.
type copyToNowhere struct{}

func (copyToNowhere) Name() string { return "test-copy-to-nowhere" }

func (copyToNowhere) Select(_ time.Time, paths []scheduler.PathInfo, w scheduler.Work, dst []uint64) []uint64 {
	for i := range paths {
		if paths[i].CanSend(w.Size) {
			return append(dst, paths[i].ID, paths[i].ID, 99)
		}
	}
	return dst
}
