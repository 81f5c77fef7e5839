package core

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// SendBudget bounds the memory of a set of connections (a server's),
// shared by them: each open connection is charged a fixed cost (ConnCost,
// SetConnCost: its state besides the send buffers), and the send buffers
// share the rest. The streams of a connection hold at most its share, what
// is left of the limit after the fixed costs divided by the connections
// that hold send buffer memory, and together never more than that, except
// that every connection may hold MinSendShare (so that none is starved
// while others hold the rest). Admits refuses a connection whose fixed
// cost and MinSendShare the limit cannot afford, so that the fixed costs
// and the send buffers together stay within the limit.
//
// A connection whose peer stops reading thus holds no more than its
// share, and Config.SendStallTimeout ends it. Shares shrink as
// connections open, but a connection keeps what it was granted until its
// peer acknowledges it; while the send buffers and the fixed costs exceed
// the limit, the connections above their share whose peers have read
// nothing for the longest (at least ReclaimStall, their streams blocked
// by the peers' flow control) are closed, as many as hold the excess,
// and their memory returned. It is safe for concurrent use.
type SendBudget struct {
	limit    int64
	mu       sync.Mutex
	connCost int64
	used     int64
	conns    int // connections holding memory
	open     map[*budgetConn]struct{}
	// pending is what the connections closing to return memory still
	// hold; reclaimed counts them.
	pending   int64
	reclaimed uint64
}

// MinSendShare is what every connection's send buffers may hold whatever
// the others hold.
const MinSendShare = 16 << 10

// ReclaimStall is the least time a connection's peer acknowledged none
// of its stream data, its streams blocked by flow control, before the
// connection may be closed to return memory to the budget (the longer of
// it and three PTOs).
const ReclaimStall = time.Second

// NewSendBudget returns a budget of limit bytes (at least MinSendShare)
// that charges open connections nothing besides their send buffers.
func NewSendBudget(limit int64) *SendBudget {
	return &SendBudget{limit: max(limit, MinSendShare), open: map[*budgetConn]struct{}{}}
}

// SetConnCost makes the budget charge each open connection n bytes
// besides its send buffers (its state: keys, records of packets and
// streams, the driver's goroutines).
func (b *SendBudget) SetConnCost(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.connCost = max(n, 0)
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

// Open returns how many connections the budget charges its fixed cost.
func (b *SendBudget) Open() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.open)
}

// Reclaimed returns how many connections were closed to return their
// send buffers to the budget.
func (b *SendBudget) Reclaimed() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reclaimed
}

// Admits reports whether the limit affords the fixed cost and
// MinSendShare of one more connection besides those open.
func (b *SendBudget) Admits() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int64(len(b.open)+1)*(b.connCost+MinSendShare) <= b.limit
}

// sendLimit is what the send buffers may hold together: the limit less
// the open connections' fixed costs. Called with b.mu held.
func (b *SendBudget) sendLimit() int64 {
	return max(b.limit-int64(len(b.open))*b.connCost, 0)
}

// budgetConn is one connection's account in a SendBudget: it implements
// streams.Allocator for the connection's streams.
type budgetConn struct {
	b    *SendBudget
	held int64
	// stalledSince is when the peer last acknowledged stream data, if
	// it has read nothing since for ReclaimStall and the connection's
	// streams are blocked by its flow control; else zero. reclaiming
	// says that the connection closes to return its memory. Guarded by
	// b.mu.
	stalledSince time.Time
	reclaiming   bool
}

// newBudgetConn opens an account in b: the connection is charged its
// fixed cost until close.
func newBudgetConn(b *SendBudget) *budgetConn {
	a := &budgetConn{b: b}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open[a] = struct{}{}
	return a
}

// close ends the account's fixed cost.
func (a *budgetConn) close() {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	delete(a.b.open, a)
}

// share is what the connection may hold. Called with b.mu held.
func (a *budgetConn) share() int64 {
	n := a.b.conns
	if a.held == 0 {
		n++
	}
	return a.b.sendLimit() / int64(n)
}

// available is what the connection may take now. Called with b.mu held.
func (a *budgetConn) available() int64 {
	b := a.b
	avail := min(a.share()-a.held, b.sendLimit()-b.used)
	if a.held < MinSendShare {
		avail = max(avail, MinSendShare-a.held)
	}
	return max(avail, 0)
}

// starved reports whether the connection holds less than its share and
// is granted nothing: the others hold the limit, and what they free may
// come to it (a connection holding its share waits for its peer instead).
func (a *budgetConn) starved() bool {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	return a.held < a.share() && a.available() == 0
}

// reclaim records whether the connection is stalled (since the zero time
// if not) and reports whether it is to be closed to return memory: the
// send buffers and fixed costs exceed the limit by more than the
// connections already closing for it hold, it is above its share and
// stalled for ReclaimStall (stall, if longer) at now, and what such
// connections stalled longer hold does not cover the excess. The ones
// that do all close at their next poll, the longest stalled first, and
// no more.
func (a *budgetConn) reclaim(since, now time.Time, stall time.Duration) bool {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	a.stalledSince = since
	excess := b.used - b.pending - b.sendLimit()
	if excess <= 0 || !a.reclaimable(now, stall) {
		return false
	}
	var older int64
	for o := range b.open {
		if o != a && !o.reclaiming && o.reclaimable(now, stall) && o.stalledSince.Before(a.stalledSince) {
			older += o.held
		}
	}
	if older >= excess {
		return false
	}
	b.reclaimed++
	a.stalledSince, a.reclaiming = time.Time{}, true
	b.pending += a.held
	return true
}

// reclaimable reports whether the connection may be closed for the
// budget at now: it holds more than its share (and MinSendShare) and its
// peer has read nothing for stall. Called with b.mu held.
func (a *budgetConn) reclaimable(now time.Time, stall time.Duration) bool {
	return !a.stalledSince.IsZero() && now.Sub(a.stalledSince) >= stall && a.held > max(a.share(), MinSendShare)
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
	if a.reclaiming {
		b.pending -= g
	}
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

// ErrSendReclaimed is why a connection ended that held more than its
// share of Config.SendBudget while the budget was exceeded and its peer
// read nothing for ReclaimStall.
var ErrSendReclaimed = errors.New("mpquic: peer stopped reading: send buffers reclaimed for the server's memory budget")

// reclaimPoll is how often a connection above MinSendShare whose peer
// does not read asks the budget whether it is to be closed.
const reclaimPoll = 250 * time.Millisecond

// reclaimStall is how long the peer must have read nothing before the
// connection may be closed for the budget: ReclaimStall or three PTOs.
func (c *Conn) reclaimStall() time.Duration {
	return max(ReclaimStall, 3*c.maxPTO())
}

// reclaimCandidate reports whether the connection holds more than
// MinSendShare of the budget and its peer does not read: it has stream
// data buffered and a stream, or the connection, is blocked by the peer's
// flow control.
func (c *Conn) reclaimCandidate() bool {
	if c.budget == nil || c.budget.held <= MinSendShare || c.state >= stateClosing {
		return false
	}
	if _, ok := c.streams.connSend.BlockedAt(); ok {
		return c.sendBuffered()
	}
	for _, s := range c.streams.m {
		if s.send == nil {
			continue
		}
		if _, ok := s.send.BlockedAt(); ok {
			return c.sendBuffered()
		}
	}
	return false
}

// reclaimBudget tells the budget whether the connection is stalled at
// now, and closes it with ErrSendReclaimed, freeing its send buffers at
// once, if the budget wants its memory back. It reports whether it
// closed the connection.
func (c *Conn) reclaimBudget(now time.Time) bool {
	var since time.Time
	if c.reclaimCandidate() && now.Sub(c.lastStreamAck) >= c.reclaimStall() {
		since = c.lastStreamAck
	}
	if since.IsZero() && !c.budgetStalled {
		return false
	}
	c.budgetStalled = !since.IsZero()
	if !c.budget.reclaim(since, now, c.reclaimStall()) {
		return false
	}
	c.budgetStalled = false
	err := qerr.New(qerr.NoError, "%v", ErrSendReclaimed)
	c.closeWithError(now, fmt.Errorf("%w: %w", ErrSendReclaimed, err))
	c.releaseSendBuffers()
	return true
}

// budgetAcked tells the budget that the peer acknowledged stream data:
// the connection is no longer stalled.
func (c *Conn) budgetAcked() {
	if c.budgetStalled {
		c.budgetStalled = false
		c.budget.reclaim(time.Time{}, c.now, 0)
	}
}

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
	if c.budget != nil && !c.budgetCheck.IsZero() && !now.Before(c.budgetCheck) {
		c.budgetCheck = time.Time{}
		if c.reclaimBudget(now) {
			return
		}
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
	if c.reclaimCandidate() || c.budgetStalled {
		if c.budgetCheck.IsZero() || c.budgetCheck.Before(c.now) {
			c.budgetCheck = c.now.Add(reclaimPoll)
			if at := c.lastStreamAck.Add(c.reclaimStall()); at.After(c.budgetCheck) {
				c.budgetCheck = at
			}
		}
		if t.IsZero() || c.budgetCheck.Before(t) {
			t = c.budgetCheck
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
