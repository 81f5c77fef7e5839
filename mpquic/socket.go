package mpquic

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

// recvBufSize is the size of the buffers datagrams are read into.
const recvBufSize = 2048

// socket is one UDP socket with its reader goroutine. It routes datagrams
// through the shared sans-IO endpoint to the driver of each connection.
type socket struct {
	conn  *net.UDPConn
	local netip.AddrPort
	ep    *core.Endpoint
	// accept is called for connections the endpoint creates (servers).
	accept func(*core.Conn, *socket) *Conn

	mu     sync.Mutex
	owners map[*core.Conn]*Conn
	closed bool
	done   chan struct{}
	// users counts the connections that depend on the socket when it is
	// owned by dialled connections; the socket closes with the last one.
	users int
	// gso is set while runs of datagrams may be sent in one write with
	// UDP generic segmentation offload (Linux); it is cleared for good
	// when the kernel refuses such a write.
	gso atomic.Bool
}

// gsoMaxSegments and gsoMaxBytes bound one GSO write: the segment limit of
// the first kernels with GSO, and an IPv4 UDP payload with room to spare.
const (
	gsoMaxSegments = 64
	gsoMaxBytes    = 65000
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, recvBufSize); return &b }}

func newSocket(conn *net.UDPConn, ep *core.Endpoint) *socket {
	ap := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	s := &socket{conn: conn, local: ap, ep: ep, owners: map[*core.Conn]*Conn{}, done: make(chan struct{})}
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	// MPQUIC_DISABLE_GSO=1 turns segmentation offload off, for devices
	// or tunnels that mishandle it.
	s.gso.Store(os.Getenv("MPQUIC_DISABLE_GSO") != "1" && gsoSupported(conn))
	return s
}

// disableGSO turns segmentation offload off for good when off is set
// (Config.DisableGSO).
func (s *socket) disableGSO(off bool) {
	if off {
		s.gso.Store(false)
	}
}

func (s *socket) register(cc *core.Conn, c *Conn) {
	s.mu.Lock()
	s.owners[cc] = c
	s.mu.Unlock()
}

func (s *socket) unregister(cc *core.Conn) {
	s.mu.Lock()
	delete(s.owners, cc)
	s.mu.Unlock()
}

// readLoop runs until the socket closes.
func (s *socket) readLoop() {
	defer close(s.done)
	for {
		bp := bufPool.Get().(*[]byte)
		n, from, err := s.conn.ReadFromUDPAddrPort(*bp)
		if err != nil {
			bufPool.Put(bp)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		d := core.Datagram{Local: s.local, Remote: from, Data: (*bp)[:n]}
		r := s.ep.Route(time.Now(), d)
		if r.Reply != nil {
			_, _ = s.conn.WriteToUDPAddrPort(r.Reply.Data, r.Reply.Remote)
		}
		if r.Conn == nil {
			bufPool.Put(bp)
			continue
		}
		s.mu.Lock()
		c := s.owners[r.Conn]
		s.mu.Unlock()
		if c == nil && r.New && s.accept != nil {
			c = s.accept(r.Conn, s)
		}
		if c == nil {
			bufPool.Put(bp)
			continue
		}
		c.deliver(d, bp)
	}
}

func (s *socket) write(b []byte, to netip.AddrPort) error {
	_, err := s.conn.WriteToUDPAddrPort(b, to)
	return err
}

// writeRun sends a run of datagrams to one destination: dgrams[0] is the
// largest, and every datagram but the last has its size. With GSO the run
// is copied into buf and goes in one write; otherwise, or if the kernel
// refuses segmentation, one write per datagram. buf and oob are the
// caller's scratch space, returned for reuse.
func (s *socket) writeRun(dgrams [][]byte, to netip.AddrPort, buf, oob []byte) ([]byte, []byte) {
	if len(dgrams) > 1 && s.gso.Load() {
		buf = buf[:0]
		for _, d := range dgrams {
			buf = append(buf, d...)
		}
		oob = gsoControl(oob, len(dgrams[0]))
		_, _, err := s.conn.WriteMsgUDPAddrPort(buf, oob, to)
		if err == nil || !isGSOError(err) {
			return buf, oob
		}
		s.gso.Store(false)
	}
	for _, d := range dgrams {
		_ = s.write(d, to)
	}
	return buf, oob
}

func (s *socket) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.conn.Close()
	<-s.done
	return err
}
