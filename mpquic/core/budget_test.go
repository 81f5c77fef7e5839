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

// A SendBudget over its limit has the connections above their share
// whose peers read nothing for the longest closed, as many as hold the
// excess, each at its first poll once stalled for long enough, and no
// more; a connection that is not stalled is never closed.
func TestSendBudgetReclaims(t *testing.T) {
	const half = 512 << 10
	b := NewSendBudget(2 * half)
	a1, a2, a3, a4 := newBudgetConn(b), newBudgetConn(b), newBudgetConn(b), newBudgetConn(b)
	for _, g := range []struct {
		a    *budgetConn
		n    int
		want int
	}{{a1, half, half}, {a2, half, half}, {a3, 1 << 20, MinSendShare}, {a4, 1 << 20, MinSendShare}} {
		if got := g.a.Grow(g.n); got != g.want {
			t.Fatalf("granted %d, want %d", got, g.want)
		}
	}
	t0 := time.Unix(1000, 0)
	poll := func(name string, a *budgetConn, since, now time.Time, want bool) {
		t.Helper()
		if got := a.reclaim(since, now, ReclaimStall); got != want {
			used, _ := b.Used()
			t.Fatalf("%s: reclaim %v, want %v (used %d, send limit %d, pending %d)", name, got, want, used, b.sendLimit(), b.pending)
		}
	}
	// Four connections of 128 KiB each leave 512 KiB to the send
	// buffers, which hold 1 MiB + 32 KiB: a1 and a2 must both go.
	b.SetConnCost(128 << 10)
	at := t0.Add(ReclaimStall / 2)
	poll("a1 stalled for less than ReclaimStall", a1, t0, at, false)
	poll("a2 likewise", a2, t0.Add(100*time.Millisecond), at, false)
	poll("a4 reads", a4, time.Time{}, at, false)
	at = t0.Add(2 * ReclaimStall)
	poll("a2, though a1 stalled longer", a2, t0.Add(100*time.Millisecond), at, true)
	poll("a3, at its share", a3, t0, at, false)
	poll("a1", a1, t0, at, true)
	poll("a4, reading, the budget still over", a4, time.Time{}, at, false)
	if b.Reclaimed() != 2 {
		t.Fatalf("reclaimed %d, want 2", b.Reclaimed())
	}
	a1.Free(half)
	a2.Free(half)
	a1.close()
	a2.close()
	// A smaller excess: one connection covers it.
	b.SetConnCost(0)
	a5, a6 := newBudgetConn(b), newBudgetConn(b)
	a5.Grow(half)
	a6.Grow(half)
	used, _ := b.Used()
	b.SetConnCost((2*half - (used - 64<<10)) / 4) // 64 KiB over
	at = t0.Add(10 * ReclaimStall)
	poll("a5, the longest stalled", a5, t0, at, true)
	poll("a6: a5 covers the excess", a6, t0.Add(time.Second), at, false)
	a5.Free(int(a5.held))
	poll("a6, within the limit", a6, t0.Add(time.Second), at, false)
}
