package perconn

import (
	"slices"
	"sync"
	"time"

	"github.com/mpq/mpq/appenv/udpenv"
)

// PoolConfig configures a pool of connections (transport.connection =
// "pool"): an HTTP/1.1 client's, without pipelining.
type PoolConfig struct {
	// IdleTimeout closes a connection idle (no stream under way) for
	// longer (0: never).
	IdleTimeout time.Duration
	// MaxIdle is how many idle connections the pool keeps: a connection
	// that becomes idle while MaxIdle others are is closed (0: any
	// number), as Go's net/http closes one beyond MaxIdleConnsPerHost.
	MaxIdle int
	// AfterFunc calls f after d and returns a function that stops the
	// timer (nil: time.AfterFunc's); tests give a clock of their own.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
}

// pool decides which connection a client's stream goes on. Without a
// configuration (per-request) every stream gets a new connection, closed
// after it. With one, a stream takes the most recently used idle
// connection (the last one freed, as Go's net/http takes it), else a new
// one; a connection carries one stream at a time and becomes idle when
// its stream is closed; an idle connection is closed beyond MaxIdle or
// after IdleTimeout.
type pool struct {
	cfg *PoolConfig

	mu sync.Mutex
	// idle are the idle connections, the most recently used last.
	idle []*idleConn
	// open are the connections being dialled (nil keys are not used:
	// dialling counts in dialling) or open and not yet released.
	open      map[udpenv.TransportConn]bool
	dialling  int
	maxOpen   int
	reused    int
	closed    bool
	idleShut  int // closed for their idleness (IdleTimeout)
	extraShut int // closed beyond MaxIdle
}

type idleConn struct {
	conn udpenv.TransportConn
	stop func() bool
}

func newPool(cfg *PoolConfig) *pool {
	return &pool{cfg: cfg, open: map[udpenv.TransportConn]bool{}}
}

// take returns the idle connection a new stream goes on, or nil: the
// caller dials one (counted open from now; it calls dialled after).
// Connections that ended while idle are dropped.
func (p *pool) take() udpenv.TransportConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.idle) > 0 {
		ic := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if ic.stop != nil {
			ic.stop()
		}
		if ic.conn.Context().Err() != nil {
			delete(p.open, ic.conn)
			continue
		}
		p.reused++
		return ic.conn
	}
	p.dialling++
	p.noteOpen()
	return nil
}

func (p *pool) noteOpen() {
	p.maxOpen = max(p.maxOpen, len(p.open)+p.dialling)
}

// dialled ends a dial take asked for: conn is the new connection (nil:
// the dial failed).
func (p *pool) dialled(conn udpenv.TransportConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dialling--
	if conn != nil {
		p.open[conn] = true
	}
}

// put returns conn after its stream: it is closed (per-request, the
// pool closed, conn ended, MaxIdle idle ones already) or kept idle.
func (p *pool) put(conn udpenv.TransportConn) {
	p.mu.Lock()
	keep := p.cfg != nil && !p.closed && conn.Context().Err() == nil
	if keep && p.cfg.MaxIdle > 0 && len(p.idle) >= p.cfg.MaxIdle {
		keep = false
		p.extraShut++
	}
	if !keep {
		delete(p.open, conn)
		p.mu.Unlock()
		conn.CloseWithError(0, "request done")
		return
	}
	ic := &idleConn{conn: conn}
	p.idle = append(p.idle, ic)
	if d := p.cfg.IdleTimeout; d > 0 {
		after := p.cfg.AfterFunc
		if after == nil {
			after = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
		}
		ic.stop = after(d, func() { p.expire(ic) })
	}
	p.mu.Unlock()
}

// expire closes ic's connection if it is still idle.
func (p *pool) expire(ic *idleConn) {
	p.mu.Lock()
	i := slices.Index(p.idle, ic)
	if i < 0 {
		p.mu.Unlock()
		return
	}
	p.idle = slices.Delete(p.idle, i, i+1)
	delete(p.open, ic.conn)
	p.idleShut++
	p.mu.Unlock()
	ic.conn.CloseWithError(0, "idle")
}

// ended forgets a connection that ended by itself (the peer closed it,
// it failed).
func (p *pool) ended(conn udpenv.TransportConn) {
	p.mu.Lock()
	delete(p.open, conn)
	p.mu.Unlock()
}

// close stops the pool: its idle connections' timers stop and streams
// under way close their connections.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, ic := range p.idle {
		if ic.stop != nil {
			ic.stop()
		}
	}
	p.idle = nil
}

// PoolStats are a client's counts of its connections.
type PoolStats struct {
	// MaxOpen is the largest number of connections open at once: a
	// connection counts from the start of its dial to its close by the
	// client (after its stream per request, for its idleness, beyond
	// MaxIdle) or its end.
	MaxOpen int
	// Reused counts the streams that went on an idle connection.
	Reused int
	// IdleClosed and ExtraClosed count the connections closed for their
	// idleness (IdleTimeout) and beyond MaxIdle.
	IdleClosed, ExtraClosed int
}

func (p *pool) stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{MaxOpen: p.maxOpen, Reused: p.reused, IdleClosed: p.idleShut, ExtraClosed: p.extraShut}
}
