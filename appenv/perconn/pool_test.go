package perconn

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mpq/mpq/appenv/udpenv"
)

// fakeTransport dials fake connections, numbered from 1 in dial order.
type fakeTransport struct {
	mu    sync.Mutex
	conns []*fakeConn
}

func (f *fakeTransport) Dial(ctx context.Context, to, local string) (udpenv.TransportConn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &fakeConn{n: len(f.conns) + 1}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	f.conns = append(f.conns, c)
	return c, nil
}

func (f *fakeTransport) Listen(string) (udpenv.TransportListener, error) {
	return nil, fmt.Errorf("fake: no listener")
}

// fakeConn is a connection that opens fake streams; what it does not
// override is never called.
type fakeConn struct {
	udpenv.TransportConn
	n      int
	ctx    context.Context
	cancel context.CancelFunc
}

func (c *fakeConn) OpenStream() (udpenv.TransportStream, error) { return fakeStream{}, nil }
func (c *fakeConn) Context() context.Context                    { return c.ctx }
func (c *fakeConn) CloseWithError(uint64, string) error         { c.cancel(); return nil }

type fakeStream struct{ udpenv.TransportStream }

func (fakeStream) Close() error { return nil }

// fakeClock runs the pool's timers when advanced.
type fakeClock struct {
	now    time.Duration
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Duration
	f       func()
	stopped bool
}

func (k *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	t := &fakeTimer{at: k.now + d, f: f}
	k.timers = append(k.timers, t)
	return func() bool { was := !t.stopped; t.stopped = true; return was }
}

func (k *fakeClock) advance(d time.Duration) {
	k.now += d
	for {
		i := slices.IndexFunc(k.timers, func(t *fakeTimer) bool { return !t.stopped && t.at <= k.now })
		if i < 0 {
			return
		}
		t := k.timers[i]
		t.stopped = true
		t.f()
	}
}

// TestPoolDecisions drives a client's connections on a fake dialer and a
// fake clock: which connection each stream goes on, which connections
// close, and the counts.
func TestPoolDecisions(t *testing.T) {
	const s = time.Second
	type step struct {
		op   string // "open", "done" (the stream's Close), "wait", "end" (connection conn ends by itself)
		name string
		d    time.Duration
		conn int
	}
	open := func(n string) step { return step{op: "open", name: n} }
	done := func(n string) step { return step{op: "done", name: n} }
	wait := func(d time.Duration) step { return step{op: "wait", d: d} }
	tests := []struct {
		name   string
		cfg    *PoolConfig // nil: per-request
		steps  []step
		on     map[string]int // stream: connection it went on
		closed []int          // connections closed at the end
		stats  PoolStats
	}{
		{"overlapping requests open new connections", &PoolConfig{IdleTimeout: 90 * s, MaxIdle: 2},
			[]step{open("a"), open("b"), open("c")},
			map[string]int{"a": 1, "b": 2, "c": 3}, nil, PoolStats{MaxOpen: 3}},
		{"a finished one is reused", &PoolConfig{IdleTimeout: 90 * s, MaxIdle: 2},
			[]step{open("a"), done("a"), open("b"), done("b"), open("c")},
			map[string]int{"a": 1, "b": 1, "c": 1}, nil, PoolStats{MaxOpen: 1, Reused: 2}},
		{"the most recently used first", &PoolConfig{IdleTimeout: 90 * s, MaxIdle: 2},
			[]step{open("a"), open("b"), done("b"), done("a"), open("c"), open("d"), open("e")},
			map[string]int{"a": 1, "b": 2, "c": 1, "d": 2, "e": 3}, nil, PoolStats{MaxOpen: 3, Reused: 2}},
		{"idle timeout closes", &PoolConfig{IdleTimeout: 90 * s, MaxIdle: 2},
			[]step{open("a"), done("a"), wait(60 * s), open("b"), done("b"), wait(60 * s), open("c"), done("c"), wait(91 * s), open("d")},
			map[string]int{"a": 1, "b": 1, "c": 1, "d": 2}, []int{1}, PoolStats{MaxOpen: 1, Reused: 2, IdleClosed: 1}},
		{"no idle timeout", &PoolConfig{MaxIdle: 2},
			[]step{open("a"), done("a"), wait(1000 * s), open("b")},
			map[string]int{"a": 1, "b": 1}, nil, PoolStats{MaxOpen: 1, Reused: 1}},
		{"beyond MaxIdle closes", &PoolConfig{IdleTimeout: 90 * s, MaxIdle: 2},
			[]step{open("a"), open("b"), open("c"), done("a"), done("b"), done("c"), open("d"), open("e"), open("f")},
			map[string]int{"a": 1, "b": 2, "c": 3, "d": 2, "e": 1, "f": 4}, []int{3}, PoolStats{MaxOpen: 3, Reused: 2, ExtraClosed: 1}},
		{"any number idle", &PoolConfig{IdleTimeout: 90 * s},
			[]step{open("a"), open("b"), open("c"), done("a"), done("b"), done("c"), open("d"), open("e"), open("f")},
			map[string]int{"a": 1, "b": 2, "c": 3, "d": 3, "e": 2, "f": 1}, nil, PoolStats{MaxOpen: 3, Reused: 3}},
		{"an ended idle connection is not reused", &PoolConfig{IdleTimeout: 90 * s, MaxIdle: 2},
			[]step{open("a"), done("a"), {op: "end", conn: 1}, open("b")},
			map[string]int{"a": 1, "b": 2}, []int{1}, PoolStats{MaxOpen: 1}},
		{"per request", nil,
			[]step{open("a"), open("b"), done("a"), open("c")},
			map[string]int{"a": 1, "b": 2, "c": 3}, []int{1}, PoolStats{MaxOpen: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeTransport{}
			clock := &fakeClock{}
			tr := New(ft)
			if tc.cfg != nil {
				cfg := *tc.cfg
				cfg.AfterFunc = clock.AfterFunc
				tr = NewPool(ft, cfg)
			}
			uc, err := tr.Dial(context.Background(), "server", "")
			if err != nil {
				t.Fatal(err)
			}
			c := uc.(*clientConn)
			streams := map[string]*clientStream{}
			for _, st := range tc.steps {
				switch st.op {
				case "open":
					us, err := c.OpenStream()
					if err != nil {
						t.Fatal(err)
					}
					s := us.(*clientStream)
					if err := s.wait(); err != nil {
						t.Fatal(err)
					}
					streams[st.name] = s
				case "done":
					if err := streams[st.name].Close(); err != nil {
						t.Fatal(err)
					}
				case "wait":
					clock.advance(st.d)
				case "end":
					ft.conns[st.conn-1].cancel()
				}
			}
			for name, want := range tc.on {
				if got := streams[name].conn.(*fakeConn).n; got != want {
					t.Errorf("stream %s went on connection %d, want %d", name, got, want)
				}
			}
			var closed []int
			for _, fc := range ft.conns {
				if fc.ctx.Err() != nil {
					closed = append(closed, fc.n)
				}
			}
			if !slices.Equal(closed, tc.closed) {
				t.Errorf("connections closed %v, want %v", closed, tc.closed)
			}
			if got := c.PoolStats(); got != tc.stats {
				t.Errorf("stats %+v, want %+v", got, tc.stats)
			}
			if got, want := c.Connections(), len(ft.conns); got != want {
				t.Errorf("Connections() = %d, %d dialled", got, want)
			}
			c.CloseWithError(0, "done")
		})
	}
}
