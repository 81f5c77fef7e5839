//go:build linux

package mpquic

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"unsafe"
)

// Batched receive on Linux: one recvmmsg(2) fills several messages, and
// with UDP generic receive offload (UDP_GRO, Linux 5.0 and later) each
// message may hold a run of datagrams of one size from one sender (the last
// may be shorter), with the size in a control message: on loopback a run a
// peer sent with GSO arrives whole. Either way the datagrams cost one
// traversal of the stack per message and one system call per batch rather
// than per datagram.

const udpGRO = 104 // UDP_GRO of linux/udp.h

// mmsghdr is struct mmsghdr of recvmmsg(2): a message header and the
// length received, padded to the alignment of the header.
type mmsghdr struct {
	hdr syscall.Msghdr
	n   uint32
	_   [unsafe.Sizeof(uintptr(0)) - 4]byte
}

// groOOBSize is the room for the control messages of one message: the
// UDP_GRO segment size (an int) with space to spare.
const groOOBSize = 64

// batchReader reads the datagrams of a socket a batch at a time.
type batchReader struct {
	conn *net.UDPConn
	rc   syscall.RawConn
	// gro is set when the socket coalesces runs of datagrams.
	gro bool
	// mmsg is cleared for good when the kernel has no recvmmsg.
	mmsg bool
	// msgs[i] receives into bufs[i], names[i] and oob[i]; only the first
	// used of them are set up (see grow).
	used  int
	msgs  []mmsghdr
	iovs  []syscall.Iovec
	bufs  [][]byte
	names []syscall.RawSockaddrAny
	oob   []byte
	out   []rxDatagram
	// scope and zone are the last IPv6 scope seen and its name.
	scope uint32
	zone  string
}

// newBatchReader returns a reader of c reading up to max messages at a
// time; it starts with one and grows while reads fill every message, so
// that a quiet socket holds one buffer. With gro it asks the kernel to
// coalesce runs of datagrams.
func newBatchReader(c *net.UDPConn, max int, gro bool) *batchReader {
	r := &batchReader{conn: c, mmsg: true}
	var err error
	if r.rc, err = c.SyscallConn(); err != nil {
		r.mmsg = false
	}
	if r.rc != nil && gro {
		_ = r.rc.Control(func(fd uintptr) {
			r.gro = syscall.SetsockoptInt(int(fd), solUDP, udpGRO, 1) == nil
		})
	}
	r.msgs = make([]mmsghdr, max)
	r.iovs = make([]syscall.Iovec, max)
	r.bufs = make([][]byte, max)
	r.names = make([]syscall.RawSockaddrAny, max)
	r.oob = make([]byte, max*groOOBSize)
	r.grow(1)
	return r
}

// grow sets up the first n messages.
func (r *batchReader) grow(n int) {
	for i := r.used; i < n; i++ {
		r.bufs[i] = make([]byte, recvBufSize)
		r.iovs[i].Base = &r.bufs[i][0]
		r.iovs[i].SetLen(recvBufSize)
		h := &r.msgs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
		h.Iov = &r.iovs[i]
		h.Iovlen = 1
	}
	r.used = max(r.used, n)
}

// read returns the datagrams of the next batch, blocking until there is
// at least one. They are valid until the next read.
func (r *batchReader) read() ([]rxDatagram, error) {
	r.out = r.out[:0]
	if !r.mmsg {
		n, oobn, _, from, err := r.conn.ReadMsgUDPAddrPort(r.bufs[0], r.oob[:groOOBSize])
		if err != nil {
			return nil, err
		}
		r.split(r.bufs[0][:n], from, groSegment(r.oob[:oobn]))
		return r.out, nil
	}
	for i := 0; i < r.used; i++ {
		h := &r.msgs[i].hdr
		h.Namelen = syscall.SizeofSockaddrAny
		h.Control = &r.oob[i*groOOBSize]
		h.SetControllen(groOOBSize)
		h.Flags = 0
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.Syscall6(syscall.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.msgs[0])), uintptr(r.used), syscall.MSG_DONTWAIT, 0, 0)
			n, errno = int(m), e
			if errno != syscall.EINTR {
				// On EAGAIN, wait until the socket is readable.
				return errno != syscall.EAGAIN
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if errno == syscall.ENOSYS {
		r.mmsg = false
		return r.read()
	}
	if errno != 0 {
		return nil, &net.OpError{Op: "read", Net: "udp", Source: r.conn.LocalAddr(), Err: errno}
	}
	for i := 0; i < n; i++ {
		h := &r.msgs[i].hdr
		from, ok := r.sockaddr(&r.names[i])
		if !ok || h.Flags&syscall.MSG_TRUNC != 0 {
			continue
		}
		r.split(r.bufs[i][:r.msgs[i].n], from, groSegment(r.oob[i*groOOBSize:i*groOOBSize+int(h.Controllen)]))
	}
	if n == r.used && r.used < len(r.msgs) {
		r.grow(min(2*r.used, len(r.msgs)))
	}
	return r.out, nil
}

// split appends the datagrams of one message: data cut into segments of
// seg bytes when the kernel coalesced a run (seg > 0), the last of them
// possibly shorter.
func (r *batchReader) split(data []byte, from netip.AddrPort, seg int) {
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	if seg <= 0 {
		seg = len(data)
	}
	for len(data) > 0 {
		k := min(seg, len(data))
		r.out = append(r.out, rxDatagram{data: data[:k:k], from: from})
		data = data[k:]
	}
}

// groSegment returns the segment size of a UDP_GRO control message in
// oob, 0 if there is none.
func groSegment(oob []byte) int {
	hl := syscall.CmsgLen(0)
	for len(oob) >= hl {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hl || l > len(oob) {
			return 0
		}
		if h.Level == solUDP && h.Type == udpGRO && l >= hl+4 {
			return int(binary.NativeEndian.Uint32(oob[hl:]))
		}
		oob = oob[min(cmsgAlign(l), len(oob)):]
	}
	return 0
}

// cmsgAlign rounds n up to the alignment of control messages.
func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}

// sockaddr returns the address of an AF_INET or AF_INET6 socket address,
// an IPv6 one with the zone of its scope (the name of the interface, as
// package net gives it).
func (r *batchReader) sockaddr(sa *syscall.RawSockaddrAny) (netip.AddrPort, bool) {
	switch sa.Addr.Family {
	case syscall.AF_INET:
		p := (*syscall.RawSockaddrInet4)(unsafe.Pointer(sa))
		port := (*[2]byte)(unsafe.Pointer(&p.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(p.Addr), binary.BigEndian.Uint16(port[:])), true
	case syscall.AF_INET6:
		p := (*syscall.RawSockaddrInet6)(unsafe.Pointer(sa))
		port := (*[2]byte)(unsafe.Pointer(&p.Port))
		a := netip.AddrFrom16(p.Addr)
		if p.Scope_id != 0 {
			if p.Scope_id != r.scope {
				r.scope, r.zone = p.Scope_id, ""
				if ifi, err := net.InterfaceByIndex(int(p.Scope_id)); err == nil {
					r.zone = ifi.Name
				} else {
					r.zone = strconv.FormatUint(uint64(p.Scope_id), 10)
				}
			}
			a = a.WithZone(r.zone)
		}
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(port[:])), true
	}
	return netip.AddrPort{}, false
}
