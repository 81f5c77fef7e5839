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

// recvBufSize is the size of the buffer each socket reads datagrams into:
// room for the largest UDP payload of IPv6 (65,527 bytes) and IPv4 (65,507),
// so that no datagram is cut and every size up to the max_udp_payload_size
// we advertise (maxUDPPayload) is received.
const recvBufSize = 1 << 16

// maxUDPPayload is the largest UDP payload a socket bound to local can
// receive, advertised to peers as max_udp_payload_size: an IPv4 datagram
// holds at most 65,535 bytes with a 20-byte IP and an 8-byte UDP header,
// an IPv6 UDP payload 65,527 bytes (RFC 9000 Section 18.2).
func maxUDPPayload(local netip.AddrPort) int {
	if local.Addr().Unmap().Is4() {
		return 65507
	}
	return 65527
}

// Datagrams routed to a connection wait in its inbox in a copy sized to
// them, from pools of a few size classes, so that a queued datagram holds
// no more memory than its size rounded up.
var bufClasses = [...]int{2048, 16 << 10, recvBufSize}

var bufPools [len(bufClasses)]sync.Pool

// getBuf returns a pooled buffer of at least n bytes (n <= recvBufSize).
func getBuf(n int) *[]byte {
	for i, size := range bufClasses {
		if n <= size {
			if bp, ok := bufPools[i].Get().(*[]byte); ok {
				return bp
			}
			b := make([]byte, size)
			return &b
		}
	}
	b := make([]byte, n)
	return &b
}

// putBuf returns a buffer of getBuf to its pool.
func putBuf(bp *[]byte) {
	for i, size := range bufClasses {
		if cap(*bp) == size {
			*bp = (*bp)[:size]
			bufPools[i].Put(bp)
			return
		}
	}
}

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
	// icmp is set when the kernel reports the ICMP errors of the
	// socket's datagrams (Linux).
	icmp bool
	// reader reads the socket's datagrams (readLoop's).
	reader *batchReader
}

// gsoMaxSegments and gsoMaxBytes bound one GSO write: the segment limit of
// the first kernels with GSO, and an IPv4 UDP payload with room to spare.
const (
	gsoMaxSegments = 64
	gsoMaxBytes    = 65000
)

func newSocket(conn *net.UDPConn, ep *core.Endpoint) *socket {
	ap := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	s := &socket{conn: conn, local: ap, ep: ep, owners: map[*core.Conn]*Conn{}, done: make(chan struct{})}
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	// MPQUIC_DISABLE_GSO=1 turns segmentation offload off, for devices
	// or tunnels that mishandle it.
	s.gso.Store(os.Getenv("MPQUIC_DISABLE_GSO") != "1" && gsoSupported(conn))
	s.icmp = enableICMPErrors(conn)
	// MPQUIC_DISABLE_GRO=1 turns receive offload off.
	s.reader = newBatchReader(conn, recvBatch, os.Getenv("MPQUIC_DISABLE_GRO") != "1")
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

// rxDatagram is a received datagram and its sender.
type rxDatagram struct {
	data []byte
	from netip.AddrPort
}

// recvBatch is the most messages one read of a socket returns (Linux).
const recvBatch = 8

// readLoop runs until the socket closes. Datagrams are read a batch at a
// time into the reader's buffers and routed there; only a datagram for a
// connection is copied, into a buffer of its size, so that what belongs to
// no connection costs no memory. The datagrams of a batch for one
// connection join its inbox together.
func (s *socket) readLoop() {
	defer close(s.done)
	var rx rxBatch
	for {
		dgs, err := s.reader.read()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if s.icmp {
				s.handleICMP(readICMPErrors(s.conn))
			}
			continue
		}
		now := time.Now()
		for _, d := range dgs {
			s.receive(now, d, &rx)
		}
		rx.flush()
		rx.cc, rx.c = nil, nil
	}
}

// rxBatch collects the datagrams of a batch for one connection; cc and c
// are the last connection looked up, valid for one batch.
type rxBatch struct {
	cc   *core.Conn
	c    *Conn
	dest *Conn
	q    []inDatagram
}

// add queues a datagram for c, first handing over those queued for
// another connection.
func (b *rxBatch) add(c *Conn, in inDatagram) {
	if c != b.dest {
		b.flush()
		b.dest = c
	}
	b.q = append(b.q, in)
}

// flush hands the queued datagrams to their connection.
func (b *rxBatch) flush() {
	if len(b.q) > 0 {
		b.dest.in.pushAll(b.q)
		clear(b.q)
		b.q = b.q[:0]
	}
	b.dest = nil
}

// receive routes one datagram: an answer of the endpoint goes back at
// once, a datagram for a connection joins rx.
func (s *socket) receive(now time.Time, rd rxDatagram, rx *rxBatch) {
	d := core.Datagram{Local: s.local, Remote: rd.from, Data: rd.data}
	r := s.ep.Route(now, d)
	if r.Reply != nil {
		_, _ = s.conn.WriteToUDPAddrPort(r.Reply.Data, r.Reply.Remote)
	}
	if r.Evicted != nil {
		// Its slot went to r.Conn: wake it to end.
		s.mu.Lock()
		v := s.owners[r.Evicted]
		s.mu.Unlock()
		if v != nil {
			v.kick()
		}
	}
	if r.Conn == nil {
		return
	}
	c := rx.c
	if r.Conn != rx.cc || c == nil {
		s.mu.Lock()
		c = s.owners[r.Conn]
		s.mu.Unlock()
		if c == nil && r.New && s.accept != nil {
			c = s.accept(r.Conn, s)
		}
		rx.cc, rx.c = r.Conn, c
	}
	if c == nil {
		return
	}
	bp := getBuf(len(d.Data))
	d.Data = append((*bp)[:0], d.Data...)
	rx.add(c, inDatagram{d, bp})
}

// handleICMP passes destination unreachable errors to the connections
// that sent the datagrams they quote: found by our connection ID in a long
// header; otherwise, on a client's socket, every connection on it (each
// checks the quote against its own connection IDs). A server's socket does
// not look through all its connections for a short header's.
func (s *socket) handleICMP(errs []icmpError) {
	for _, e := range errs {
		var targets []*Conn
		s.mu.Lock()
		if cc := s.ep.UnreachableConn(e.quoted); cc != nil {
			if c := s.owners[cc]; c != nil {
				targets = append(targets, c)
			}
		} else if s.accept == nil {
			for _, c := range s.owners {
				targets = append(targets, c)
			}
		}
		s.mu.Unlock()
		for _, c := range targets {
			c.unreachable(s.local, e)
		}
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
