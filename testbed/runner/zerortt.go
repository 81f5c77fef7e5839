package runner

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/testbed/env/simenv"
	"github.com/mpq/mpq/testbed/netsim"
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
// stores.
type ticketCache struct {
	tls.ClientSessionCache
	stored int
}

// Put implements tls.ClientSessionCache.
func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		c.stored++
	}
}

// simWarmUp runs the warm-up connection from chost to addr in the
// simulator until tickets holds a session ticket.
func simWarmUp(sim *netsim.Sim, chost *simenv.Host, addr string, tickets *ticketCache) error {
	var conn appenv.Conn
	var dialErr error
	chost.Dial(addr, func(c appenv.Conn, err error) { conn, dialErr = c, err })
	deadline := sim.Now().Add(warmUpLimit)
	for tickets.stored == 0 && dialErr == nil && sim.Now().Before(deadline) {
		sim.RunUntil(sim.Now().Add(drainStep))
	}
	switch {
	case dialErr != nil:
		return fmt.Errorf("zero_rtt warm-up connection: %w", dialErr)
	case tickets.stored == 0:
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
