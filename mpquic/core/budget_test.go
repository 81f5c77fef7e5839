package core

import (
	"errors"
	"testing"
	"time"
)

// A SendBudget grants each connection at most its share (the limit over
// the connections holding memory) and never more than the limit in all,
// except MinSendShare to every connection; freed memory is granted again.
func TestSendBudgetShares(t *testing.T) {
	const limit = 1 << 20
	b := NewSendBudget(limit)
	a, c, d := &budgetConn{b: b}, &budgetConn{b: b}, &budgetConn{b: b}
	steps := []struct {
		name       string
		do         func() int
		want       int
		used       int64
		usingConns int
	}{
		{"alone: the whole limit", func() int { return a.Grow(4 << 20) }, limit, limit, 1},
		{"full: a second gets MinSendShare", func() int { return c.Grow(1 << 20) }, MinSendShare, limit + MinSendShare, 2},
		{"and no more", func() int { return c.Grow(1 << 20) }, 0, limit + MinSendShare, 2},
		{"the first frees half", func() int { a.Free(limit / 2); return 0 }, 0, limit/2 + MinSendShare, 2},
		{"the second takes up to its share", func() int { return c.Grow(1 << 20) }, limit/2 - MinSendShare, limit, 2},
		{"a third: MinSendShare", func() int { return d.Grow(1 << 20) }, MinSendShare, limit + MinSendShare, 3},
		{"the first frees all", func() int { a.Free(limit / 2); return 0 }, 0, limit/2 + MinSendShare, 2},
		{"the third grows to its share, within the limit", func() int { return d.Grow(1 << 20) }, limit/2 - MinSendShare, limit, 2},
		{"all freed", func() int { c.Free(limit / 2); d.Free(limit / 2); return 0 }, 0, 0, 0},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: granted %d, want %d", s.name, got, s.want)
		}
		if used, conns := b.Used(); used != s.used || conns != s.usingConns {
			t.Fatalf("%s: used %d by %d connections, want %d by %d", s.name, used, conns, s.used, s.usingConns)
		}
	}
}

// A peer that stops reading: the server's send buffer holds no more than
// the budget grants it (the limit, alone), although StreamSendBuffer
// allows 4 MiB; once no stream data was acknowledged for
// SendStallTimeout, the server closes the connection and the budget gets
// its memory back.
func TestFrozenReader(t *testing.T) {
	const limit, stall = 256 << 10, 5 * time.Second
	cc, sc := testConfigs(t)
	budget := NewSendBudget(limit)
	sc.SendBudget, sc.SendStallTimeout, sc.StreamSendBuffer = budget, stall, 4<<20
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	s, err := p.server.OpenStream(true)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 8<<20)
	written, maxBuf := 0, 0
	var lastAck time.Time
	p.runUntil(func() bool {
		if done, _ := p.server.Closed(); done {
			return true
		}
		if written < len(data) {
			n, err := s.Write(data[written:])
			if err != nil && !errors.Is(err, ErrSendStalled) {
				t.Fatalf("write: %v", err)
			}
			written += n
		}
		if st := p.server.streams.m[s.ID()]; st != nil {
			maxBuf = max(maxBuf, st.send.BufferSize())
		}
		if !p.server.lastStreamAck.Equal(lastAck) {
			lastAck = p.server.lastStreamAck
		}
		p.client.AcceptStream() // accepted, never read
		return false
	}, time.Minute)
	_, err = p.server.Closed()
	if !errors.Is(err, ErrSendStalled) {
		t.Fatalf("server closed with %v, want ErrSendStalled", err)
	}
	if took := p.now.Sub(lastAck); took < stall || took > stall+time.Second {
		t.Fatalf("closed %v after the last acknowledgement, want %v", took, stall)
	}
	if maxBuf > limit {
		t.Fatalf("send buffer reached %d bytes, budget %d", maxBuf, limit)
	}
	if used, conns := budget.Used(); used != 0 || conns != 0 {
		t.Fatalf("budget holds %d bytes for %d connections after the close", used, conns)
	}
	t.Logf("wrote %d bytes; send buffer at most %d; closed %v after the last acknowledgement", written, maxBuf, p.now.Sub(lastAck))
}
