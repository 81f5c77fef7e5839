package kernelnet

import (
	"context"
	"net"
	"net/netip"
	"syscall"

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
