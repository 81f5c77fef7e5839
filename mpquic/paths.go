package mpquic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/mpquic/qerr"
)

// ErrPathFailed is returned by AddPath when the new path's validation
// fails (the path is then abandoned).
var ErrPathFailed = errors.New("mpquic: path validation failed")

// AddPath opens a new path of a client connection from the local UDP
// address localAddr ("host:port", port 0 for any) to the server's address,
// and waits until the path is validated (draft-ietf-quic-multipath-21
// Section 3.1). It fails with core.ErrNoMultipath when the server did not
// offer multipath. It returns the new path's ID.
func (c *Conn) AddPath(ctx context.Context, localAddr string) (uint64, error) {
	c.mu.Lock()
	ps := c.c.Paths()
	c.mu.Unlock()
	if len(ps) == 0 {
		return 0, ErrConnClosed
	}
	return c.AddPathTo(ctx, localAddr, ps[0].Remote.String())
}

// AddPathTo is AddPath towards a given server address.
func (c *Conn) AddPathTo(ctx context.Context, localAddr, remoteAddr string) (uint64, error) {
	if c.ep == nil {
		return 0, core.ErrServerPath
	}
	ra, err := net.ResolveUDPAddr("udp", remoteAddr)
	if err != nil {
		return 0, fmt.Errorf("mpquic: path to %s: %w", remoteAddr, err)
	}
	remote := netip.AddrPortFrom(ra.AddrPort().Addr().Unmap(), ra.AddrPort().Port())
	la, err := net.ResolveUDPAddr("udp", localAddr)
	if err != nil {
		return 0, fmt.Errorf("mpquic: path from %s: %w", localAddr, err)
	}
	uc, err := net.ListenUDP("udp", la)
	if err != nil {
		return 0, fmt.Errorf("mpquic: path from %s: %w", localAddr, err)
	}
	sock := newSocket(uc, c.ep)
	sock.disableGSO(c.noGSO)
	c.mu.Lock()
	c.sockets[sock.local] = sock
	sock.register(c.c, c)
	c.ownSockets = append(c.ownSockets, sock)
	c.mu.Unlock()
	go sock.readLoop()

	for {
		c.mu.Lock()
		id, err := c.c.AddPath(sock.local, remote)
		var done chan error
		if err == nil {
			done = make(chan error, 1)
			c.pathWaiters[id] = done
		}
		c.mu.Unlock()
		c.kick()
		switch {
		case err == nil:
			select {
			case err := <-done:
				return id, err
			case <-c.closed:
				return 0, c.closeErr
			case <-ctx.Done():
				c.mu.Lock()
				delete(c.pathWaiters, id)
				_ = c.c.AbandonPath(id, uint64(qerr.ApplicationAbandonPath))
				c.mu.Unlock()
				c.kick()
				return 0, ctx.Err()
			}
		case errors.Is(err, core.ErrNoPathCIDs):
			// The server's connection IDs for a new path are on the way.
			select {
			case <-c.pathsSig:
			case <-c.closed:
				return 0, c.closeErr
			case <-ctx.Done():
				return 0, fmt.Errorf("mpquic: add path: %w (%w)", ctx.Err(), err)
			}
		default:
			return 0, fmt.Errorf("mpquic: add path from %s: %w", sock.local, err)
		}
	}
}

// AbandonPath closes a path with PATH_ABANDON.
func (c *Conn) AbandonPath(id uint64, code uint64) error {
	c.mu.Lock()
	err := c.c.AbandonPath(id, code)
	c.mu.Unlock()
	c.kick()
	return err
}

// SetPathStatus marks a path as backup (or available again) for both ends'
// schedulers (PATH_STATUS_BACKUP / PATH_STATUS_AVAILABLE).
func (c *Conn) SetPathStatus(id uint64, backup bool) error {
	c.mu.Lock()
	err := c.c.SetPathStatus(id, backup)
	c.mu.Unlock()
	c.kick()
	return err
}

// MultipathEnabled reports whether both ends negotiated multipath.
func (c *Conn) MultipathEnabled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.MultipathEnabled()
}

// CopiesDropped returns, per reason, how many copies the path scheduler
// asked for were not sent (see core.Conn.CopiesDropped).
func (c *Conn) CopiesDropped() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.CopiesDropped()
}

// RepairStats returns the connection's REPAIR counts: the parities it
// sent and what the peer's parities rebuilt (see core.Conn.RepairStats).
func (c *Conn) RepairStats() core.RepairStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.RepairStats()
}

// ReceiveQueueDropped returns how many datagrams for this connection
// were dropped because its receive queue (the datagrams read from the
// socket that its goroutine had not yet taken) was full: on a real
// socket, losses that happen in this process, not on the network.
func (c *Conn) ReceiveQueueDropped() uint64 { return c.in.dropped.Load() }

// pathEvent wakes AddPath callers; called with c.mu held.
func (c *Conn) pathEvent(e core.Event) {
	switch e.Kind {
	case core.EventPathValidated, core.EventPathFailed, core.EventPathClosed:
		if w := c.pathWaiters[e.PathID]; w != nil {
			var err error
			if e.Kind != core.EventPathValidated {
				err = fmt.Errorf("%w: path %d", ErrPathFailed, e.PathID)
			}
			w <- err
			delete(c.pathWaiters, e.PathID)
		}
	case core.EventPathsAvailable:
		signal(c.pathsSig)
	}
}
