package core

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// SendBudget bounds the memory of the send buffers of a set of connections
// (a server's), shared by them: the streams of a connection hold at most
// its share, the limit divided by the connections that hold send buffer
// memory, and together never more than the limit, except that every
// connection may hold MinSendShare (so that none is starved while others
// hold the rest). A connection whose peer stops reading thus holds no more
// than its share; Config.SendStallTimeout ends it. It is safe for
// concurrent use.
type SendBudget struct {
	limit int64
	mu    sync.Mutex
	used  int64
	conns int // connections holding memory
}

// MinSendShare is what every connection's send buffers may hold whatever
// the others hold.
const MinSendShare = 16 << 10

// NewSendBudget returns a budget of limit bytes (at least MinSendShare).
func NewSendBudget(limit int64) *SendBudget {
	return &SendBudget{limit: max(limit, MinSendShare)}
}

// Limit returns the budget's limit in bytes.
func (b *SendBudget) Limit() int64 { return b.limit }

// Used returns the send buffer memory the connections hold now, and how
// many connections hold some.
func (b *SendBudget) Used() (bytes int64, conns int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.conns
}

// budgetConn is one connection's account in a SendBudget: it implements
// streams.Allocator for the connection's streams.
type budgetConn struct {
	b    *SendBudget
	held int64
}

// available is what the connection may take now. Called with b.mu held.
func (a *budgetConn) available() int64 {
	b := a.b
	n := b.conns
	if a.held == 0 {
		n++
	}
	share := b.limit / int64(n)
	avail := min(share-a.held, b.limit-b.used)
	if a.held < MinSendShare {
		avail = max(avail, MinSendShare-a.held)
	}
	return max(avail, 0)
}

// starved reports whether the connection holds less than its share and
// is granted nothing: the others hold the limit, and what they free may
// come to it (a connection holding its share waits for its peer instead).
func (a *budgetConn) starved() bool {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.conns
	if a.held == 0 {
		n++
	}
	return a.held < b.limit/int64(n) && a.available() == 0
}

// Available implements streams.Allocator.
func (a *budgetConn) Available() int {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	return int(a.available())
}

// Grow implements streams.Allocator.
func (a *budgetConn) Grow(n int) int {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	g := min(int64(n), a.available())
	if g <= 0 {
		return 0
	}
	if a.held == 0 {
		b.conns++
	}
	a.held += g
	b.used += g
	return int(g)
}

// Free implements streams.Allocator.
func (a *budgetConn) Free(n int) {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	g := min(int64(n), a.held)
	a.held -= g
	b.used -= g
	if a.held == 0 && g > 0 {
		b.conns--
	}
}

// budgetPoll is how often a connection whose writers wait for the budget
// (not for the peer) looks whether other connections freed some.
const budgetPoll = 20 * time.Millisecond

// ErrSendStalled is why a connection ended that had stream data buffered
// and saw none of it acknowledged for Config.SendStallTimeout.
var ErrSendStalled = errors.New("mpquic: peer stopped reading: no stream data acknowledged")

// sendBuffered reports whether stream data is buffered and unacknowledged.
func (c *Conn) sendBuffered() bool {
	for _, s := range c.streams.m {
		if s.send != nil && s.send.Buffered() > 0 {
			return true
		}
	}
	return false
}

// budgetWaiting reports whether a writer waits for the budget rather than
// for the peer: a stream wants to write, and the connection is starved.
func (c *Conn) budgetWaiting() bool {
	if c.budget == nil || !c.budget.starved() {
		return false
	}
	for _, s := range c.streams.m {
		if s.wantWrite {
			return true
		}
	}
	return false
}

// sendTimers runs the stall timeout and the budget poll at now.
func (c *Conn) sendTimers(now time.Time) {
	if t := c.cfg.SendStallTimeout; t > 0 && !now.Before(c.lastStreamAck.Add(t)) {
		if c.sendBuffered() {
			err := qerr.New(qerr.NoError, "%v for %v", ErrSendStalled, t)
			c.closeWithError(now, fmt.Errorf("%w: %w", ErrSendStalled, err))
			return
		}
		c.lastStreamAck = now
	}
	if c.budget != nil && !now.Before(c.budgetRetry) {
		c.budgetRetry = time.Time{}
		for _, s := range c.streams.m {
			c.notifyWritable(s)
		}
	}
}

// nextSendTimer is when sendTimers must run, zero if never.
func (c *Conn) nextSendTimer() time.Time {
	var t time.Time
	if st := c.cfg.SendStallTimeout; st > 0 && len(c.streams.m) > 0 {
		t = c.lastStreamAck.Add(st)
	}
	if c.budget != nil && c.budgetWaiting() {
		if c.budgetRetry.IsZero() || c.budgetRetry.Before(c.now) {
			c.budgetRetry = c.now.Add(budgetPoll)
		}
		if t.IsZero() || c.budgetRetry.Before(t) {
			t = c.budgetRetry
		}
	}
	return t
}

// releaseSendBuffers returns the memory of every send buffer to the
// budget: the connection ended.
func (c *Conn) releaseSendBuffers() {
	for _, s := range c.streams.m {
		if s.send != nil {
			s.send.ReleaseBuffer()
		}
	}
}
