package simenv

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/scheduler"
)

// Beyond env.Conn, a simulated connection offers what the traffic
// generator and the experiment runner use through optional interfaces:
// opening paths, announcing periodic sources to the path scheduler, and
// path statistics.

// pathAdd is an AddPath waiting for connection IDs or validation.
type pathAdd struct {
	local, remote netip.AddrPort
	id            uint64
	started       bool
	done          func(uint64, error)
}

// AddPath opens a path from local to remote ("host:port" addresses of the
// simulated network) and calls done on the loop once it is validated, or
// with the error that ended the attempt. It waits for the server's
// connection IDs of a new path if they have not arrived yet.
func (c *conn) AddPath(local, remote string, done func(id uint64, err error)) {
	fail := func(err error) { c.h.sim.After(0, func() { done(0, err) }) }
	l, err := netip.ParseAddrPort(local)
	if err != nil {
		fail(fmt.Errorf("simenv: add path from %s: %w", local, err))
		return
	}
	r, err := netip.ParseAddrPort(remote)
	if err != nil {
		fail(fmt.Errorf("simenv: add path to %s: %w", remote, err))
		return
	}
	c.adds = append(c.adds, &pathAdd{local: l, remote: r, done: done})
	c.tryAdds()
}

// tryAdds starts the waiting path opens that can start.
func (c *conn) tryAdds() {
	for _, a := range c.adds {
		if a.started {
			continue
		}
		id, err := c.nc.AddPath(a.local, a.remote)
		if errors.Is(err, core.ErrNoPathCIDs) {
			return // EventPathsAvailable retries
		}
		a.started = true
		if err != nil {
			c.finishAdd(a, 0, err)
			continue
		}
		a.id = id
		c.nc.Kick()
	}
}

func (c *conn) finishAdd(a *pathAdd, id uint64, err error) {
	for i, x := range c.adds {
		if x == a {
			c.adds = append(c.adds[:i], c.adds[i+1:]...)
			break
		}
	}
	a.done(id, err)
}

// pathEvent handles the path events of the connection.
func (c *conn) pathEvent(e core.Event) {
	switch e.Kind {
	case core.EventPathsAvailable:
		c.tryAdds()
	case core.EventPathValidated, core.EventPathFailed, core.EventPathClosed:
		for _, a := range c.adds {
			if a.started && a.id == e.PathID {
				var err error
				if e.Kind != core.EventPathValidated {
					err = fmt.Errorf("simenv: path %d from %v failed validation", e.PathID, a.local)
				}
				c.finishAdd(a, e.PathID, err)
				return
			}
		}
	}
}

// SetPathStatus sends PATH_STATUS_BACKUP (backup) or PATH_STATUS_AVAILABLE
// for path id; our own path scheduler follows it too.
func (c *conn) SetPathStatus(id uint64, backup bool) error {
	if err := c.nc.SetPathStatus(id, backup); err != nil {
		return fmt.Errorf("simenv: status of path %d: %w", id, err)
	}
	c.nc.Kick()
	return nil
}

// AnnounceSource passes a periodic source to the path scheduler.
func (c *conn) AnnounceSource(s scheduler.Source) {
	c.nc.AnnounceSource(s)
	c.nc.Kick()
}

// WithdrawSource removes an announced source.
func (c *conn) WithdrawSource(id uint64) { c.nc.WithdrawSource(id) }

// PathStats returns the statistics of every path.
func (c *conn) PathStats() []core.PathStats { return c.nc.Paths() }

// PathEvents returns the connection's path events.
func (c *conn) PathEvents() []core.PathEvent { return c.nc.PathEvents() }

// MultipathEnabled reports whether both ends negotiated multipath.
func (c *conn) MultipathEnabled() bool { return c.nc.MultipathEnabled() }

// CopiesDropped returns, per reason, the copies the path scheduler asked
// for that were not sent.
func (c *conn) CopiesDropped() map[string]uint64 { return c.nc.CopiesDropped() }

// RepairStats returns the connection's REPAIR counts (always counted).
func (c *conn) RepairStats() (core.RepairStats, bool) { return c.nc.RepairStats(), true }
