// Package linkemu emulates links in real time with the link model of
// package linkmodel, the simulator's. A Pipe drives one direction of a
// link: it runs each packet through the model when it is received and
// hands it on at the model's arrival time. The Emulator is the loopback
// backend's userspace emulator for experiments over real UDP sockets,
// without root: each path of an experiment gets a front socket the client
// sends to and a back socket that forwards to the server, and each
// direction of a path is a Pipe. The namespace testbed's forwarder
// (network/netns) drives Pipes with Ethernet frames.
//
// # Limits
//
// A Pipe never hands a packet on before the model's arrival time. It
// waits on a runtime timer until shortly before, then on a kernel timer
// (a timerfd read through the runtime's poller, parked: a wait in a
// system call would keep a processor of the Go runtime from the
// experiment's ends in the same process), so packets leave some 10 to
// 100 µs late on an idle machine (BenchmarkForward reports the mean and
// the maximum; so do the LinkStats). A loaded machine adds stalls of
// milliseconds or more: the LinkStats of a run say how late its packets
// were. Arrival times are
// taken when a reader goroutine returns from the socket, not from the
// kernel. One goroutine reads and one forwards each direction of each
// path, with one system call per datagram, which bounds the rate a link
// sustains (several hundred Mbit/s of full-size datagrams on a 2-core
// machine, see BenchmarkForward).
package linkemu

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/network/linkmodel"
)

// Config configures an Emulator.
type Config struct {
	// Paths are the experiment's paths: Up carries the client's datagrams
	// to the server, Down the server's to the client.
	Paths []experiment.Path
	// Bottlenecks are the links shared by the paths that name them.
	Bottlenecks []experiment.Bottleneck
	// Flows are further pairs of ends on the paths (competing
	// connections): flow k has sockets of its own (FlowFront, FlowBack)
	// whose datagrams take the links of its path, beside the path's own.
	Flows []Flow
	// Server is the server's address, where the back sockets forward;
	// they ignore datagrams from any other address (LinkStats.Foreign).
	// The client's address on a path is learnt from the datagrams it
	// sends to the path's front socket.
	Server netip.AddrPort
	// Start is the start of the experiment, from which the paths'
	// scheduled changes ([[path.change]]) count; zero: when Start is
	// called.
	Start time.Time
	// Seed derives every link's random source (linkmodel.Rand; links are
	// named "path<i>/up" and "path<i>/down" as in the simulator).
	Seed uint64
	// FrontAddr and BackAddr give the addresses of path i's front socket
	// (which the client sends to) and back socket (which the server sees
	// the path come from); port 0 picks a free port. Defaults:
	// 127.0.<i+1>.2:0 and 127.0.<i+1>.3:0, which need no configuration on
	// Linux, where all of 127.0.0.0/8 is local.
	FrontAddr, BackAddr func(i int) netip.AddrPort
	// MaxInFlightPackets and MaxInFlightBytes bound what the emulator
	// holds for one link (queued or propagating); beyond them datagrams
	// are dropped as overflow (see Limits).
	MaxInFlightPackets int
	MaxInFlightBytes   int64
	// SocketBuffer is the kernel receive and send buffer requested for
	// each socket; default 4 MiB (the kernel may grant less).
	SocketBuffer int
}

// Flow is a pair of ends beside the experiment's on path Path: its
// client sends to the flow's front socket, which forwards to Server.
type Flow struct {
	Path   int
	Server netip.AddrPort
}

// maxPaths is how many paths the default addresses can number.
const maxPaths = 254

// PathStats are the counters of both directions of a path, or of a
// shared bottleneck (Bottleneck is its name).
type PathStats struct {
	Up, Down   LinkStats
	Bottleneck string
}

// Emulator forwards the datagrams of every path through its links. Create
// it with Start; Close stops it.
type Emulator struct {
	paths  []*path
	flows  []*path
	shared []*SharedLink
	server netip.AddrPort
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// path is one path's sockets and pipes, or a flow's sockets and its
// path's pipes.
type path struct {
	front, back *net.UDPConn
	frontAddr   netip.AddrPort
	backAddr    netip.AddrPort
	up, down    *Pipe
	// server is where the back socket forwards, toServer and toClient
	// the outputs of the up and down pipes for this path's or flow's
	// datagrams.
	server             netip.AddrPort
	toServer, toClient func([]byte) error
	// client is the address the client last sent from on this path.
	client atomic.Pointer[netip.AddrPort]
}

// outputs sets the path's or flow's outputs: its back socket to its
// server, its front socket to its client, through the shared link sl if
// not nil.
func (p *path) outputs(sl *SharedLink) {
	back, front, server := p.back, p.front, p.server
	p.toServer = func(b []byte) error {
		_, err := back.WriteToUDPAddrPort(b, server)
		return err
	}
	p.toClient = func(b []byte) error {
		a := p.client.Load()
		if a == nil {
			return ErrUnroutable
		}
		_, err := front.WriteToUDPAddrPort(b, *a)
		return err
	}
	if sl != nil {
		p.toServer, p.toClient = Via(sl.Up, p.toServer), Via(sl.Down, p.toClient)
	}
}

// Start opens the sockets of every path and starts forwarding.
func Start(cfg Config) (*Emulator, error) {
	if len(cfg.Paths) == 0 || len(cfg.Paths) > maxPaths {
		return nil, fmt.Errorf("linkemu: need 1 to %d paths, got %d", maxPaths, len(cfg.Paths))
	}
	if !cfg.Server.IsValid() {
		return nil, errors.New("linkemu: no server address")
	}
	if cfg.FrontAddr == nil {
		cfg.FrontAddr = func(i int) netip.AddrPort {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, byte(i + 1), 2}), 0)
		}
	}
	if cfg.BackAddr == nil {
		cfg.BackAddr = func(i int) netip.AddrPort {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, byte(i + 1), 3}), 0)
		}
	}
	if cfg.SocketBuffer <= 0 {
		cfg.SocketBuffer = 4 << 20
	}
	lim := Limits{MaxPackets: cfg.MaxInFlightPackets, MaxBytes: cfg.MaxInFlightBytes}
	e := &Emulator{server: unmap(cfg.Server), done: make(chan struct{})}
	fail := func(err error) (*Emulator, error) {
		for _, p := range append(e.paths, e.flows...) {
			p.close()
		}
		return nil, err
	}
	var err error
	if e.shared, err = NewSharedLinks(cfg.Bottlenecks, cfg.Seed, lim); err != nil {
		return nil, fmt.Errorf("linkemu: %w", err)
	}
	for i, pc := range cfg.Paths {
		p := &path{}
		e.paths = append(e.paths, p)
		var err error
		if p.front, p.frontAddr, err = listen(cfg.FrontAddr(i), cfg.SocketBuffer); err != nil {
			return fail(fmt.Errorf("linkemu: path %d front: %w", i, err))
		}
		if p.back, p.backAddr, err = listen(cfg.BackAddr(i), cfg.SocketBuffer); err != nil {
			return fail(fmt.Errorf("linkemu: path %d back: %w", i, err))
		}
		up, err := NewPathModel(pc, experiment.DirectionUp, cfg.Seed, i)
		if err != nil {
			return fail(fmt.Errorf("linkemu: path %d up: %w", i, err))
		}
		down, err := NewPathModel(pc, experiment.DirectionDown, cfg.Seed, i)
		if err != nil {
			return fail(fmt.Errorf("linkemu: path %d down: %w", i, err))
		}
		sl, err := sharedLink(e.shared, pc)
		if err != nil {
			return fail(fmt.Errorf("linkemu: path %d: %w", i, err))
		}
		p.server = e.server
		p.outputs(sl)
		p.up = NewPipe(up, lim, p.toServer)
		p.down = NewPipe(down, lim, p.toClient)
		if cfg.Start.IsZero() {
			cfg.Start = time.Now()
		}
		p.up.SetStart(cfg.Start)
		p.down.SetStart(cfg.Start)
	}
	for k, fc := range cfg.Flows {
		if fc.Path < 0 || fc.Path >= len(e.paths) || !fc.Server.IsValid() {
			return fail(fmt.Errorf("linkemu: flow %d: path %d of %d, server %v", k, fc.Path, len(e.paths), fc.Server))
		}
		pp := e.paths[fc.Path]
		f := &path{up: pp.up, down: pp.down, server: unmap(fc.Server)}
		e.flows = append(e.flows, f)
		var err error
		if f.front, f.frontAddr, err = listen(cfg.FrontAddr(fc.Path), cfg.SocketBuffer); err != nil {
			return fail(fmt.Errorf("linkemu: flow %d front: %w", k, err))
		}
		if f.back, f.backAddr, err = listen(cfg.BackAddr(fc.Path), cfg.SocketBuffer); err != nil {
			return fail(fmt.Errorf("linkemu: flow %d back: %w", k, err))
		}
		sl, err := sharedLink(e.shared, cfg.Paths[fc.Path])
		if err != nil {
			return fail(fmt.Errorf("linkemu: flow %d: %w", k, err))
		}
		f.outputs(sl)
	}
	for _, p := range append(append([]*path(nil), e.paths...), e.flows...) {
		e.wg.Add(2)
		go e.read(p.front, p.up, p.toServer, func(from netip.AddrPort) bool {
			if a := p.client.Load(); a == nil || *a != from {
				p.client.Store(&from)
			}
			return true
		})
		go e.read(p.back, p.down, p.toClient, func(from netip.AddrPort) bool { return from == p.server })
	}
	for _, p := range e.paths {
		e.wg.Add(2)
		go e.run(p.up)
		go e.run(p.down)
	}
	for _, sl := range e.shared {
		sl.Up.SetStart(cfg.Start)
		sl.Down.SetStart(cfg.Start)
		e.wg.Add(2)
		go e.run(sl.Up)
		go e.run(sl.Down)
	}
	return e, nil
}

// NewModel returns the link model of an experiment link named name
// ("path0/up") on a path of round-trip propagation delay rtt, with the
// random source the simulator gives the link of that name in a run of
// seed.
func NewModel(l experiment.Link, rtt time.Duration, seed uint64, name string) (*linkmodel.Link, error) {
	cfg, err := linkmodel.FromExperiment(l, rtt)
	if err != nil {
		return nil, err
	}
	return linkmodel.New(cfg, linkmodel.Rand(seed, name))
}

// NewPathModel returns the link model of one direction ("up" or "down")
// of path i of an experiment, with its scheduled changes (whose origin
// the pipe sets, Pipe.SetStart) and the random source the simulator gives
// the link "path<i>/<direction>" in a run of seed.
func NewPathModel(p experiment.Path, direction string, seed uint64, i int) (*linkmodel.Link, error) {
	cfg, steps, err := linkmodel.ForPath(p, direction)
	if err != nil {
		return nil, err
	}
	l, err := linkmodel.New(cfg, linkmodel.Rand(seed, fmt.Sprintf("path%d/%s", i, direction)))
	if err != nil {
		return nil, err
	}
	return l, l.SetSchedule(steps)
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }

func listen(a netip.AddrPort, buf int) (*net.UDPConn, netip.AddrPort, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(a))
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	_ = c.SetReadBuffer(buf)
	_ = c.SetWriteBuffer(buf)
	return c, unmap(c.LocalAddr().(*net.UDPAddr).AddrPort()), nil
}

func (p *path) close() {
	if p.front != nil {
		p.front.Close()
	}
	if p.back != nil {
		p.back.Close()
	}
}

// Front is the address of path i's front socket, where the client sends.
func (e *Emulator) Front(i int) netip.AddrPort { return e.paths[i].frontAddr }

// FlowFront is the address of flow k's front socket, where its client
// sends.
func (e *Emulator) FlowFront(k int) netip.AddrPort { return e.flows[k].frontAddr }

// FlowBack is the address of flow k's back socket, from which its server
// receives.
func (e *Emulator) FlowBack(k int) netip.AddrPort { return e.flows[k].backAddr }

// Back is the address of path i's back socket, from which the server
// receives the path's datagrams.
func (e *Emulator) Back(i int) netip.AddrPort { return e.paths[i].backAddr }

// Paths is the number of paths.
func (e *Emulator) Paths() int { return len(e.paths) }

// Stats returns the counters of every path, then of every shared
// bottleneck.
func (e *Emulator) Stats() []PathStats {
	out := make([]PathStats, len(e.paths))
	for i, p := range e.paths {
		out[i] = PathStats{Up: p.up.Stats(), Down: p.down.Stats()}
	}
	return append(out, SharedStats(e.shared)...)
}

// SharedStats returns the counters of shared bottlenecks.
func SharedStats(links []*SharedLink) []PathStats {
	var out []PathStats
	for _, l := range links {
		out = append(out, PathStats{Up: l.Up.Stats(), Down: l.Down.Stats(), Bottleneck: l.Name})
	}
	return out
}

// Close stops forwarding, closes the sockets and waits for the emulator's
// goroutines to end; datagrams still held are dropped.
func (e *Emulator) Close() error {
	e.once.Do(func() {
		close(e.done)
		for _, p := range append(append([]*path(nil), e.paths...), e.flows...) {
			p.close()
		}
		e.wg.Wait()
	})
	return nil
}

func (e *Emulator) run(p *Pipe) {
	defer e.wg.Done()
	p.Run(e.done)
}

// read offers the datagrams a socket receives to a pipe, for out, until
// the socket closes. accept filters (and notes) their sources. The
// pipes of a path with flows have several readers: they offer under the
// pipe's lock.
func (e *Emulator) read(c *net.UDPConn, p *Pipe, out func([]byte) error, accept func(from netip.AddrPort) bool) {
	defer e.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-e.done:
				return
			default:
				continue
			}
		}
		if !accept(unmap(from)) {
			p.CountForeign()
			continue
		}
		p.OfferShared(buf[:n], out)
	}
}
