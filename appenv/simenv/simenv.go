// Package simenv implements the application environment of package
// appenv in the simulator: a Host is a simulated machine whose
// applications run on the simulation's event loop and virtual clock, with
// mpquic connections driven by a netsim.Node.
package simenv

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/network/netsim"
)

// Config configures a Host.
type Config struct {
	// Addrs are the host's sockets; they must be addresses of the network.
	// Dial uses the first one with a link to the server's address.
	Addrs []netip.AddrPort
	// Client configures the connections the host dials (nil: it cannot).
	Client *core.Config
	// Server configures the connections it accepts (nil: it cannot).
	Server *core.Config
}

// Host is a simulated machine implementing appenv.Env.
type Host struct {
	sim       *netsim.Sim
	net       *netsim.Network
	node      *netsim.Node
	addrs     []netip.AddrPort
	client    *core.Config
	server    bool
	listeners map[netip.AddrPort]*listener
}

var _ appenv.Env = (*Host)(nil)

// New creates a host on the network n.
func New(n *netsim.Network, cfg Config) (*Host, error) {
	h := &Host{net: n, addrs: cfg.Addrs, client: cfg.Client, server: cfg.Server != nil,
		listeners: map[netip.AddrPort]*listener{}}
	node, err := netsim.NewNode(n, cfg.Addrs, cfg.Server, h.incoming)
	if err != nil {
		return nil, err
	}
	// The host runs in its addresses' part of the simulation.
	h.node, h.sim = node, node.Sim()
	return h, nil
}

// SetQlogReferenceTime sets the qlog reference time of the connections the
// host dials or accepts from now on.
func (h *Host) SetQlogReferenceTime(t time.Time) {
	h.node.SetQlogReferenceTime(t)
	if h.client != nil {
		h.client.QlogReferenceTime = t
	}
}

// Now implements appenv.Env: the virtual time.
func (h *Host) Now() time.Time { return h.sim.Now() }

// AfterFunc implements appenv.Env on the virtual clock.
func (h *Host) AfterFunc(d time.Duration, f func()) func() bool { return h.sim.AfterFunc(d, f) }

// Dial implements appenv.Env. addr is an address of the simulated network.
func (h *Host) Dial(addr string, done func(appenv.Conn, error)) { h.dial(addr, false, done) }

// DialEarly implements appenv.EarlyDialer: the client's configuration needs
// Allow0RTT and a TLS ClientSessionCache holding a ticket of an earlier
// connection to the server.
func (h *Host) DialEarly(addr string, done func(appenv.Conn, error)) { h.dial(addr, true, done) }

func (h *Host) dial(addr string, early bool, done func(appenv.Conn, error)) {
	fail := func(err error) { h.sim.After(0, func() { done(nil, err) }) }
	remote, err := netip.ParseAddrPort(addr)
	if err != nil {
		fail(fmt.Errorf("simenv: dial %s: %w", addr, err))
		return
	}
	if h.client == nil {
		fail(errors.New("simenv: host has no client configuration"))
		return
	}
	local := h.addrs[0]
	for _, a := range h.addrs {
		if h.net.Link(a.Addr(), remote.Addr()) != nil {
			local = a
			break
		}
	}
	nc, err := h.node.Dial(h.client, local, remote)
	if err != nil {
		fail(fmt.Errorf("simenv: dial %s: %w", addr, err))
		return
	}
	c := newConn(h, nc)
	c.established = func() { done(c, nil) }
	c.failed = func(err error) { done(nil, fmt.Errorf("simenv: dial %s: %w", addr, err)) }
	if early && nc.CanSendEarly() {
		// 0-RTT: the connection is the application's from now on.
		c.early, c.up = true, true
		c.established = func() {}
		h.sim.After(0, func() { done(c, nil) })
	}
}

// Listen implements appenv.Env. addr must be one of the host's addresses, and
// the host must have a server configuration.
func (h *Host) Listen(addr string, accept func(appenv.Conn)) (appenv.Listener, error) {
	a, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("simenv: listen %s: %w", addr, err)
	}
	if !h.server {
		return nil, errors.New("simenv: host has no server configuration")
	}
	found := false
	for _, x := range h.addrs {
		found = found || x == a
	}
	if !found {
		return nil, fmt.Errorf("simenv: listen %s: not an address of the host", addr)
	}
	if h.listeners[a] != nil {
		return nil, fmt.Errorf("simenv: listen %s: already listening", addr)
	}
	l := &listener{h: h, addr: a, accept: accept}
	h.listeners[a] = l
	return l, nil
}

// incoming adopts a connection the node created for a client's Initial.
func (h *Host) incoming(nc *netsim.Conn) {
	local := nc.Paths()[0].Local
	c := newConn(h, nc)
	c.established = func() {
		if l := h.listeners[local]; l != nil {
			l.conns = append(l.conns, c)
			l.accept(c)
			return
		}
		c.Close(0x100, "not listening")
	}
	c.failed = func(error) {}
}

type listener struct {
	h      *Host
	addr   netip.AddrPort
	accept func(appenv.Conn)
	conns  []*conn
}

func (l *listener) Addr() string { return l.addr.String() }

func (l *listener) Close() error {
	if l.h.listeners[l.addr] == l {
		delete(l.h.listeners, l.addr)
	}
	for _, c := range l.conns {
		c.Close(0, "listener closed")
	}
	l.conns = nil
	return nil
}

// conn adapts a netsim.Conn to appenv.Conn.
type conn struct {
	h           *Host
	nc          *netsim.Conn
	streams     map[uint64]*stream
	onStream    func(appenv.Stream)
	pending     []*stream // accepted before OnStream was set
	onClosed    func(error)
	closed      bool
	closeErr    error
	established func()          // handshake completed
	failed      func(err error) // ended before the handshake completed
	up          bool
	// early: dialled with DialEarly and resuming with 0-RTT: streams
	// opened before the handshake completes send in 0-RTT packets.
	early bool
	adds  []*pathAdd
}

func newConn(h *Host, nc *netsim.Conn) *conn {
	c := &conn{h: h, nc: nc, streams: map[uint64]*stream{}}
	nc.OnEvent = c.event
	return c
}

// event dispatches the connection's events to the application.
func (c *conn) event(e core.Event) {
	switch e.Kind {
	case core.EventHandshakeDone, core.EventEarlyData:
		// A server that accepted 0-RTT hands the connection over at
		// once, so that it answers before the handshake completes.
		if !c.up && !c.closed {
			c.up = true
			c.established()
		}
	case core.EventStreamIncoming:
		for cs := c.nc.AcceptStream(); cs != nil; cs = c.nc.AcceptStream() {
			s := c.wrap(cs, cs.ID()&2 == 0, true)
			if c.onStream != nil {
				c.onStream(s)
			} else {
				c.pending = append(c.pending, s)
			}
		}
	case core.EventStreamReadable:
		if s := c.streams[e.StreamID]; s != nil && s.onReadable != nil {
			s.onReadable()
		}
	case core.EventStreamWritable:
		if s := c.streams[e.StreamID]; s != nil && s.onWritable != nil {
			s.onWritable()
		}
	case core.EventPathsAvailable, core.EventPathValidated, core.EventPathFailed, core.EventPathClosed:
		c.pathEvent(e)
	case core.EventClosed:
		if c.closed {
			return
		}
		for len(c.adds) > 0 {
			c.finishAdd(c.adds[0], 0, fmt.Errorf("simenv: connection closed: %w", e.Err))
		}
		c.closed, c.closeErr = true, e.Err
		if !c.up {
			c.failed(e.Err)
			return
		}
		// Waiting streams learn of the end from Read and Write; in stream
		// order, for the run to stay deterministic.
		ids := slices.Sorted(maps.Keys(c.streams))
		for _, id := range ids {
			s := c.streams[id]
			if s.onReadable != nil {
				s.onReadable()
			}
			if s.onWritable != nil {
				s.onWritable()
			}
		}
		if c.onClosed != nil {
			c.onClosed(e.Err)
		}
	}
}

func (c *conn) wrap(cs *core.Stream, send, recv bool) *stream {
	s := &stream{c: c, s: cs, readEnded: !recv, writeEnded: !send}
	c.streams[cs.ID()] = s
	return s
}

func (c *conn) open(bidi bool) (appenv.Stream, error) {
	open := c.nc.OpenStream
	if c.early {
		open = c.nc.OpenEarlyStream
	}
	cs, err := open(bidi)
	if err != nil {
		c.nc.Kick() // STREAMS_BLOCKED may be queued
		if errors.Is(err, core.ErrStreamLimit) {
			return nil, fmt.Errorf("%w: %w", appenv.ErrStreamLimit, err)
		}
		return nil, err
	}
	return c.wrap(cs, true, bidi), nil
}

func (c *conn) OpenStream() (appenv.Stream, error)    { return c.open(true) }
func (c *conn) OpenUniStream() (appenv.Stream, error) { return c.open(false) }

func (c *conn) OnStream(f func(appenv.Stream)) {
	c.onStream = f
	if len(c.pending) == 0 || f == nil {
		return
	}
	c.h.sim.After(0, func() {
		p := c.pending
		c.pending = nil
		for _, s := range p {
			if c.onStream != nil {
				c.onStream(s)
			}
		}
	})
}

func (c *conn) OnClosed(f func(error)) { c.onClosed = f }

func (c *conn) Close(code uint64, reason string) {
	c.nc.Advance(c.h.sim.Now())
	c.nc.Close(code, reason)
	c.nc.Kick()
}

// EarlyData reports the state of resumption and 0-RTT.
func (c *conn) EarlyData() core.EarlyDataState { return c.nc.EarlyData() }

func (c *conn) LocalAddr() string  { return c.nc.Paths()[0].Local.String() }
func (c *conn) RemoteAddr() string { return c.nc.Paths()[0].Remote.String() }

// stream adapts a core.Stream to appenv.Stream; every change kicks the node so
// that what it enables goes out at the current virtual time.
type stream struct {
	c                      *conn
	s                      *core.Stream
	onReadable, onWritable func()
	// readEnded and writeEnded: the application saw the end of the
	// direction (or ended it); with both the stream is forgotten.
	readEnded, writeEnded bool
}

// forget drops the stream once the application is done with both
// directions.
func (s *stream) forget() {
	if s.readEnded && s.writeEnded {
		delete(s.c.streams, s.s.ID())
	}
}

func (s *stream) ID() uint64 { return s.s.ID() }

func (s *stream) Read(p []byte) (int, error) {
	s.c.nc.Advance(s.c.h.sim.Now())
	return s.took(s.s.Read(p))
}

// Discard implements appenv.Discarder.
func (s *stream) Discard(max int) (int, error) {
	s.c.nc.Advance(s.c.h.sim.Now())
	return s.took(s.s.Discard(max))
}

// Sink implements appenv.Discarder.
func (s *stream) Sink() bool { return s.s.Sink() }

// took finishes a Read or Discard that returned n and err.
func (s *stream) took(n int, err error) (int, error) {
	if n > 0 {
		s.c.nc.Kick() // flow-control credit may be due
	}
	if err != nil && !s.c.closed {
		s.readEnded = true
		s.forget()
	}
	return n, err
}

func (s *stream) OnReadable(f func()) {
	s.onReadable = f
	if f == nil {
		return
	}
	s.s.WaitingRead()
	if s.s.Readable() || s.c.closed {
		s.c.h.sim.After(0, func() {
			if s.onReadable != nil {
				s.onReadable()
			}
		})
	}
}

func (s *stream) Write(p []byte) (int, error) { return s.write(p, 0) }

// WriteZeros implements appenv.ZeroWriter.
func (s *stream) WriteZeros(n int) (int, error) { return s.write(nil, n) }

// write is Write of p or, if zeros is positive, WriteZeros of zeros.
func (s *stream) write(p []byte, zeros int) (int, error) {
	s.c.nc.Advance(s.c.h.sim.Now())
	var n int
	var err error
	if zeros > 0 {
		n, err = s.s.WriteZeros(zeros)
	} else {
		n, err = s.s.Write(p)
	}
	if n > 0 {
		s.c.nc.Kick()
	}
	if err != nil && !s.c.closed {
		s.writeEnded = true
		s.forget()
	}
	return n, err
}

func (s *stream) OnWritable(f func()) { s.onWritable = f }

func (s *stream) Close() error {
	s.c.nc.Advance(s.c.h.sim.Now())
	err := s.s.Close()
	s.c.nc.Kick()
	s.writeEnded = true
	s.forget()
	return err
}

func (s *stream) CancelWrite(code uint64) {
	s.c.nc.Advance(s.c.h.sim.Now())
	s.s.CancelWrite(code)
	s.c.nc.Kick()
	s.writeEnded = true
	s.forget()
}

func (s *stream) CancelRead(code uint64) {
	s.c.nc.Advance(s.c.h.sim.Now())
	s.s.CancelRead(code)
	s.c.nc.Kick()
	s.readEnded = true
	s.forget()
}

func (s *stream) SetPriority(p bool) { s.s.SetPriority(p) }
