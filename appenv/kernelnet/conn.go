package kernelnet

import (
	"context"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/mpq/mpq/appenv/bytemux"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/mpquic/core"
)

// Conn is a kernel connection carrying multiplexed streams.
type Conn struct {
	*bytemux.Conn
	raw        syscall.RawConn
	tc         *net.TCPConn
	kind       string
	client     bool
	congestion string
}

var _ udpenv.TransportConn = (*Conn)(nil)

// Kind is the connection's transport: TCP, TLS or MPTCP.
func (c *Conn) Kind() string { return c.kind }

// Congestion is the congestion controller the kernel runs on the
// connection (read back with TCP_CONGESTION; "" if unknown).
func (c *Conn) Congestion() string { return c.congestion }

// OpenStream implements udpenv.TransportConn.
func (c *Conn) OpenStream() (udpenv.TransportStream, error) { return stream(c.Conn.OpenStream()) }

// OpenUniStream implements udpenv.TransportConn.
func (c *Conn) OpenUniStream() (udpenv.TransportStream, error) { return stream(c.Conn.OpenUniStream()) }

// AcceptStream implements udpenv.TransportConn.
func (c *Conn) AcceptStream(ctx context.Context) (udpenv.TransportStream, error) {
	return stream(c.Conn.AcceptStream(ctx))
}

// AcceptUniStream implements udpenv.TransportConn.
func (c *Conn) AcceptUniStream(ctx context.Context) (udpenv.TransportStream, error) {
	return stream(c.Conn.AcceptUniStream(ctx))
}

func stream(s *bytemux.Stream, err error) (udpenv.TransportStream, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Paths returns the kernel's statistics of the connection as path
// statistics: one path (ID 0) for TCP and TLS; for MPTCP one per subflow,
// numbered in the order of the subflows' local addresses, on the client
// only (the server cannot tell which experiment path a subflow takes).
// Bytes are TCP payload bytes (TLS records included), retransmissions in
// BytesSent.
func (c *Conn) Paths() []core.PathStats {
	if c.kind == MPTCP {
		if !c.client {
			return nil
		}
		return subflowStats(c.raw)
	}
	ps, err := tcpStats(c.raw)
	if err != nil {
		return nil
	}
	ps.Local, ps.Remote = addrPort(c.tc.LocalAddr()), addrPort(c.tc.RemoteAddr())
	return []core.PathStats{ps}
}

// MultipathEnabled reports whether an MPTCP connection has more than one
// subflow.
func (c *Conn) MultipathEnabled() bool {
	return c.kind == MPTCP && len(subflowStats(c.raw)) > 1
}

func addrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	return netip.AddrPort{}
}

// Sample calls f with the kernel's state of each of the connection's
// paths (Paths: tcp_info, per subflow for MPTCP) every interval, from a
// goroutine of its own that it starts, until ctx is done, the socket is
// closed or stop is called. f must be safe to call from that goroutine.
// stop returns once the goroutine has ended: f is not called after it.
func (c *Conn) Sample(ctx context.Context, every time.Duration, f func(now time.Time, m core.PathMetrics)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !c.sample(time.Now(), f) {
					return
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// sample passes the state of each path to f; false when the socket is
// closed.
func (c *Conn) sample(now time.Time, f func(time.Time, core.PathMetrics)) bool {
	if c.raw.Control(func(uintptr) {}) != nil {
		return false
	}
	for _, ps := range c.Paths() {
		f(now, core.PathMetrics{PathID: ps.ID, CongestionWindow: ps.CongestionWindow, BytesInFlight: ps.BytesInFlight,
			SSThresh: ps.SSThresh, SmoothedRTT: ps.SmoothedRTT, MinRTT: ps.MinRTT, LatestRTT: ps.LatestRTT,
			CongestionState: ps.CongestionState})
	}
	return true
}
