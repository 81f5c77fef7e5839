package runner

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestSyncMessagesRoundTrip(t *testing.T) {
	req := syncRequest{kind: kindStart, t1: 1234567890123, t0: -5}
	req.config[0], req.config[31] = 7, 9
	got, err := parseSyncRequest(req.append(nil))
	if err != nil || got != req {
		t.Fatalf("request %+v, %v", got, err)
	}
	rep := syncReply{kind: kindProbe, status: statusIdle, t1: 1, t2: 2, t3: 3}
	if got, err := parseSyncReply(rep.append(nil)); err != nil || got != rep {
		t.Fatalf("reply %+v, %v", got, err)
	}
	bad := [][]byte{nil, []byte("MQCK"), bytes.Repeat([]byte{0}, requestLen), append([]byte("MQCK\x02\x01"), make([]byte, 50)...),
		append([]byte("MQCK\x01\x03"), make([]byte, 50)...)}
	for _, b := range bad {
		if _, err := parseSyncRequest(b); err == nil {
			t.Errorf("request %q accepted", b)
		}
		if _, err := parseSyncReply(b); err == nil {
			t.Errorf("reply %q accepted", b)
		}
	}
	// A request is not a reply and the other way round.
	if _, err := parseSyncReply(req.append(nil)); err == nil {
		t.Error("request parsed as a reply")
	}
	if _, err := parseSyncRequest(rep.append(nil)); err == nil {
		t.Error("reply parsed as a request")
	}
}

func FuzzSyncRequest(f *testing.F) {
	f.Add((&syncRequest{kind: kindProbe}).append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseSyncRequest(b)
		if err != nil {
			return
		}
		want := append([]byte(nil), b...)
		want[6], want[7] = 0, 0 // reserved
		if !bytes.Equal(r.append(nil), want) {
			t.Fatalf("%x does not round-trip", b)
		}
	})
}

func FuzzSyncReply(f *testing.F) {
	f.Add((&syncReply{kind: kindProbe}).append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseSyncReply(b)
		if err != nil {
			return
		}
		want := append([]byte(nil), b...)
		want[7] = 0 // reserved
		if !bytes.Equal(r.append(nil), want) {
			t.Fatalf("%x does not round-trip", b)
		}
	})
}

// A server whose clock runs 5 s ahead is measured 5 s ahead, within the
// probes' round trip on loopback; it refuses the start of another
// configuration, acknowledges its own once (running the role's start
// with the client's time zero), and says when it is between runs.
func TestClockOffsetAndStart(t *testing.T) {
	const ahead = 5 * time.Second
	s, err := newSyncServerClock(netip.MustParseAddrPort("127.0.0.1:0"), func() int64 { return time.Now().Add(ahead).UnixNano() })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := s.conn.LocalAddr().(interface{ String() string }).String()
	mine, other := [32]byte{1}, [32]byte{2}
	c, err := newSyncClient("127.0.0.1:0", netip.MustParseAddrPort(addr), mine)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.ready(ctx, time.Second, 100*time.Millisecond); err == nil {
		t.Fatal("ready while the server waits for nothing")
	}
	s.expect(other, nil)
	if err := c.ready(ctx, time.Second, time.Second); err != errOtherConfig {
		t.Fatalf("ready for another configuration: %v", err)
	}
	var starts []int64
	started := s.expect(mine, func(t0 int64) { starts = append(starts, t0) })
	if err := c.ready(ctx, time.Second, time.Second); err != nil {
		t.Fatal(err)
	}
	cs, err := c.measure(ctx, 8, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Duration(cs.OffsetMS*1e6) - ahead; d.Abs() > time.Duration(cs.RTTMS*1e6)/2+time.Millisecond || cs.Replies != 8 {
		t.Errorf("offset %.3f ms (rtt %.3f ms, %d replies), want %v", cs.OffsetMS, cs.RTTMS, cs.Replies, ahead)
	}
	for range 2 {
		if err := c.start(ctx, 42, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-started:
	default:
		t.Fatal("start not reported")
	}
	if len(starts) != 1 || starts[0] != 42 {
		t.Errorf("starts %v", starts)
	}
	// While it runs, a client with the next run's configuration (ahead
	// in a sweep) hears that the server is not ready, not that it runs
	// another configuration.
	next, err := newSyncClient("127.0.0.1:0", netip.MustParseAddrPort(addr), other)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if err := next.ready(ctx, time.Second, 100*time.Millisecond); err == nil || err == errOtherConfig {
		t.Errorf("ready for the next run while the server runs one: %v", err)
	}
	s.idle()
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := c.start(sctx, 43, 50*time.Millisecond); err == nil {
		t.Error("start acknowledged between runs")
	}
	// A server that goes after answering is not probed 4n times: measure
	// stops after maxSilentProbes unanswered probes in a row. One that
	// never answered is probed 4n times (a lossy path's first probes
	// may all be lost).
	fake, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		// Answers one probe, then is gone.
		defer fake.Close()
		buf := make([]byte, 1500)
		n, from, err := fake.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		req, err := parseSyncRequest(buf[:n])
		if err != nil {
			return
		}
		now := time.Now().UnixNano()
		rep := syncReply{kind: req.kind, t1: req.t1, t2: now, t3: now}
		fake.WriteToUDPAddrPort(rep.append(nil), from)
	}()
	qc, err := newSyncClient("127.0.0.1:0", netip.MustParseAddrPort(fake.LocalAddr().String()), mine)
	if err != nil {
		t.Fatal(err)
	}
	defer qc.Close()
	if cs, err := qc.measure(ctx, 16, 50*time.Millisecond); err != nil || cs.Probes != 1+maxSilentProbes || cs.Replies != 1 {
		t.Errorf("a server gone after one answer: %d probes, %d replies, %v; want %d probes", cs.Probes, cs.Replies, err, 1+maxSilentProbes)
	}
	if cs, err := qc.measure(ctx, 4, 5*time.Millisecond); err == nil || cs.Probes != 16 {
		t.Errorf("a server that never answers: %d probes, %v; want 16 and an error", cs.Probes, err)
	}
}
