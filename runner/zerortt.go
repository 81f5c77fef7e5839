package runner

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/simenv"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/network/netsim"
)

// The warm-up of transport.zero_rtt: before the experiment's time zero the
// client connects once, without recording anything, until the server's
// session ticket arrives, and closes; the measured connection then
// resumes the session and sends its first messages in 0-RTT.

// warmUpLimit bounds the warm-up connection (virtual time in the
// simulator).
const warmUpLimit = 60 * time.Second

// warmUpQuiet is how long the network is left to carry the warm-up
// connection's close before time zero.
const warmUpQuiet = time.Second

// ticketCache is a TLS client session cache that counts the tickets it
// stores; safe for concurrent use.
type ticketCache struct {
	tls.ClientSessionCache
	stored atomic.Int64
}

func newTicketCache() *ticketCache {
	return &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4)}
}

// Put implements tls.ClientSessionCache.
func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		c.stored.Add(1)
	}
}

// simWarmUp runs the warm-up connection from chost to addr in the
// simulator until tickets holds a session ticket.
func simWarmUp(sim *netsim.Sim, chost *simenv.Host, addr string, tickets *ticketCache) error {
	var conn appenv.Conn
	var dialErr error
	chost.Dial(addr, func(c appenv.Conn, err error) { conn, dialErr = c, err })
	deadline := sim.Now().Add(warmUpLimit)
	for tickets.stored.Load() == 0 && dialErr == nil && sim.Now().Before(deadline) {
		sim.RunUntil(sim.Now().Add(drainStep))
	}
	switch {
	case dialErr != nil:
		return fmt.Errorf("zero_rtt warm-up connection: %w", dialErr)
	case tickets.stored.Load() == 0:
		return fmt.Errorf("zero_rtt warm-up connection: no session ticket within %v", warmUpLimit)
	}
	conn.Close(0, "warm-up done")
	sim.RunUntil(sim.Now().Add(warmUpQuiet))
	return nil
}

// earlyData is the 0-RTT state of the client connection c for the summary,
// with transport.zero_rtt (nil without, or without a connection).
func earlyData(e *experiment.Experiment, c appenv.Conn) *core.EarlyDataState {
	ec, ok := c.(interface{ EarlyData() core.EarlyDataState })
	if !e.Transport.ZeroRTT || !ok {
		return nil
	}
	d := ec.EarlyData()
	return &d
}

// realWarmUp runs the warm-up connection over real sockets (the client
// role) with the client configuration cfg, whose TLS cache is tickets,
// without observer or qlog trace, until the ticket came; it gives up at
// deadline.
func realWarmUp(ctx context.Context, cfg *core.Config, local, addr string, tickets *ticketCache, deadline time.Time) error {
	w := *cfg
	w.Observer, w.Qlog = nil, nil
	ev := udpenv.New(udpenv.Config{Client: &w, LocalAddr: local})
	defer ev.Close()
	type dialResult struct {
		c   appenv.Conn
		err error
	}
	dialed := make(chan dialResult, 1)
	ev.Exec(func() { ev.Dial(addr, func(c appenv.Conn, err error) { dialed <- dialResult{c, err} }) })
	var conn appenv.Conn
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for tickets.stored.Load() == 0 {
		select {
		case r := <-dialed:
			if r.err != nil {
				return fmt.Errorf("zero_rtt warm-up connection: %w", r.err)
			}
			conn = r.c
		case <-tick.C:
			if time.Now().After(deadline) {
				return fmt.Errorf("zero_rtt warm-up connection: no session ticket within %v", warmUpLimitReal)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if conn == nil {
		if r := <-dialed; r.err == nil {
			conn = r.c
		}
	}
	if conn != nil {
		ev.Exec(func() { conn.Close(0, "warm-up done") })
	}
	return nil
}

// warmUpLimitReal is the time the client role gives the warm-up
// connection before its time zero, beyond a few round trips.
const warmUpLimitReal = 5 * time.Second

// warmUpFilter wraps a server configuration's Observer and Qlog so that
// the first connection, the warm-up of transport.zero_rtt, has neither.
func warmUpFilter(cfg *core.Config) {
	var obsSeen, qlogSeen atomic.Int64
	if obs := cfg.Observer; obs != nil {
		cfg.Observer = func(v string) core.Observer {
			if obsSeen.Add(1) == 1 {
				return nil
			}
			return obs(v)
		}
	}
	if q := cfg.Qlog; q != nil {
		cfg.Qlog = func(v string, odcid []byte) io.WriteCloser {
			if qlogSeen.Add(1) == 1 {
				return nil
			}
			return q(v, odcid)
		}
	}
}
