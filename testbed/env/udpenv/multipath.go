package udpenv

import (
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
// environment closed). A helper goroutine waits for mpquic's AddPathTo;
// several paths may be opening at once, and their IDs then follow the
// order in which mpquic started them, not necessarily the order of the
// calls.
func (c *conn) AddPath(local, remote string, done func(id uint64, err error)) {
	go func() {
		id, err := c.c.AddPathTo(c.e.ctx, local, remote)
		c.e.Post(func() { done(id, err) })
	}()
}

// SetPathStatus sends PATH_STATUS_BACKUP (backup) or PATH_STATUS_AVAILABLE
// for path id; our own path scheduler follows it too.
func (c *conn) SetPathStatus(id uint64, backup bool) error {
	if err := c.c.SetPathStatus(id, backup); err != nil {
		return fmt.Errorf("udpenv: status of path %d: %w", id, err)
	}
	return nil
}

// AnnounceSource passes a periodic source to the path scheduler.
func (c *conn) AnnounceSource(s scheduler.Source) { c.c.AnnounceSource(s) }

// WithdrawSource removes an announced source.
func (c *conn) WithdrawSource(id uint64) { c.c.WithdrawSource(id) }

// PathStats returns the statistics of every path.
func (c *conn) PathStats() []core.PathStats { return c.c.Paths() }

// PathEvents returns the connection's path events.
func (c *conn) PathEvents() []core.PathEvent { return c.c.PathEvents() }

// MultipathEnabled reports whether both ends negotiated multipath.
func (c *conn) MultipathEnabled() bool { return c.c.MultipathEnabled() }

// CopiesDropped returns, per reason, the copies the path scheduler asked
// for that were not sent.
func (c *conn) CopiesDropped() map[string]uint64 { return c.c.CopiesDropped() }
