package udpenv

import (
	"errors"
	"fmt"

	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/scheduler"
)

// Beyond env.Conn, a connection offers what the traffic generator and the
// experiment runner use through optional interfaces, as the simulator's
// connections do (package simenv): opening paths, announcing periodic
// sources to the path scheduler, and path statistics. They are called on
// the loop like every method of the connection.

// AddPath opens a path of a client connection from the local UDP address
// local to the server's address remote ("host:port" both; local port 0
// picks one) and calls done on the loop with the path's ID once it is
// validated, or with the error that ended the attempt (the server did not
// negotiate multipath, validation failed, the connection or the
// environment closed, the transport has no paths of its own). A helper
// goroutine waits for mpquic's AddPathTo; several paths may be opening at
// once, and their IDs then follow the order in which mpquic started them,
// not necessarily the order of the calls.
func (c *conn) AddPath(local, remote string, done func(id uint64, err error)) {
	po, ok := c.c.(pathOpener)
	if !ok {
		c.e.Post(func() { done(0, errors.New("udpenv: the transport opens no paths")) })
		return
	}
	go func() {
		id, err := po.AddPathTo(c.e.ctx, local, remote)
		c.e.Post(func() { done(id, err) })
	}()
}

// SetPathStatus sends PATH_STATUS_BACKUP (backup) or PATH_STATUS_AVAILABLE
// for path id; our own path scheduler follows it too. Transports without
// paths of their own fail.
func (c *conn) SetPathStatus(id uint64, backup bool) error {
	ps, ok := c.c.(pathStatusSetter)
	if !ok {
		return fmt.Errorf("udpenv: status of path %d: the transport has no path status", id)
	}
	if err := ps.SetPathStatus(id, backup); err != nil {
		return fmt.Errorf("udpenv: status of path %d: %w", id, err)
	}
	return nil
}

type pathStatusSetter interface {
	SetPathStatus(id uint64, backup bool) error
}

// AnnounceSource passes a periodic source to the path scheduler, if the
// transport has one.
func (c *conn) AnnounceSource(s scheduler.Source) {
	if a, ok := c.c.(announcer); ok {
		a.AnnounceSource(s)
	}
}

// WithdrawSource removes an announced source.
func (c *conn) WithdrawSource(id uint64) {
	if a, ok := c.c.(announcer); ok {
		a.WithdrawSource(id)
	}
}

type announcer interface {
	AnnounceSource(s scheduler.Source)
	WithdrawSource(id uint64)
}

// PathStats returns the statistics of every path (nil if the transport
// keeps none).
func (c *conn) PathStats() []core.PathStats {
	if p, ok := c.c.(pathStatser); ok {
		return p.Paths()
	}
	return nil
}

// PathEvents returns the connection's path events (nil without).
func (c *conn) PathEvents() []core.PathEvent {
	if p, ok := c.c.(pathEventer); ok {
		return p.PathEvents()
	}
	return nil
}

// MultipathEnabled reports whether both ends negotiated multipath (for a
// transport without the notion: whether it reports more than one path).
func (c *conn) MultipathEnabled() bool {
	if m, ok := c.c.(multipather); ok {
		return m.MultipathEnabled()
	}
	return false
}

// CopiesDropped returns, per reason, the copies the path scheduler asked
// for that were not sent (nil for transports without path schedulers).
func (c *conn) CopiesDropped() map[string]uint64 {
	if d, ok := c.c.(copyDropper); ok {
		return d.CopiesDropped()
	}
	return nil
}

// RepairStats returns the connection's REPAIR counts, and whether its
// transport counts them (mpquic's connections do).
func (c *conn) RepairStats() (core.RepairStats, bool) {
	if r, ok := c.c.(repairCounter); ok {
		return r.RepairStats(), true
	}
	return core.RepairStats{}, false
}

// ReceiveQueueDropped returns how many datagrams the connection dropped
// at its full receive queue, and whether its transport counts them
// (mpquic's connections do).
func (c *conn) ReceiveQueueDropped() (uint64, bool) {
	if d, ok := c.c.(queueDropper); ok {
		return d.ReceiveQueueDropped(), true
	}
	return 0, false
}

// Transport returns the connection of the environment's transport, for
// what only that transport offers (kernel statistics, for example).
func (c *conn) Transport() TransportConn { return c.c }
