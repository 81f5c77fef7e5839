//go:build linux

package mpquic

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
)

// ICMP errors on Linux: with IP_RECVERR (IPV6_RECVERR) the kernel queues
// the ICMP errors a UDP socket's datagrams draw, with the destination and
// the start of the datagram they quote, on the socket's error queue, and
// the next read fails with the error (ECONNREFUSED for a closed port);
// without it an unconnected socket never learns of them. See ip(7),
// ipv6(7).

const (
	ipRecvErr   = 11 // IP_RECVERR
	ipv6RecvErr = 25 // IPV6_RECVERR

	soEEOriginICMP  = 2 // SO_EE_ORIGIN_ICMP
	soEEOriginICMP6 = 3 // SO_EE_ORIGIN_ICMP6
)

// enableICMPErrors asks the kernel to report the ICMP errors of c's
// datagrams; it reports whether it will.
func enableICMPErrors(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		// A dual-stack IPv6 socket takes both: IPv4 errors arrive as
		// IP_RECVERR.
		e4 := syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipRecvErr, 1)
		e6 := syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, ipv6RecvErr, 1)
		ok = e4 == nil || e6 == nil
	})
	return ok
}

// icmpError is a destination unreachable error for a datagram sent to
// remote, quoting its start.
type icmpError struct {
	remote netip.AddrPort
	quoted []byte
	reason string
}

// readICMPErrors empties the socket's error queue and returns the
// destination unreachable errors in it; others (packet too big, local
// errors) are dropped.
func readICMPErrors(c *net.UDPConn) []icmpError {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	var out []icmpError
	buf := make([]byte, 1500)
	oob := make([]byte, 512)
	_ = rc.Control(func(fd uintptr) {
		for range 64 {
			n, oobn, _, from, err := syscall.Recvmsg(int(fd), buf, oob, syscall.MSG_ERRQUEUE|syscall.MSG_DONTWAIT)
			if err != nil {
				return
			}
			reason, ok := unreachableReason(oob[:oobn])
			if !ok {
				continue
			}
			var remote netip.AddrPort
			switch sa := from.(type) {
			case *syscall.SockaddrInet4:
				remote = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
			case *syscall.SockaddrInet6:
				remote = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
			default:
				continue
			}
			out = append(out, icmpError{remote: remote, quoted: append([]byte(nil), buf[:n]...), reason: reason})
		}
	})
	return out
}

// unreachableReason reads the extended error of an error-queue message and
// says which destination unreachable error it is, if it is one.
func unreachableReason(oob []byte) (string, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return "", false
	}
	for _, m := range msgs {
		v4 := m.Header.Level == syscall.IPPROTO_IP && m.Header.Type == ipRecvErr
		v6 := m.Header.Level == syscall.IPPROTO_IPV6 && m.Header.Type == ipv6RecvErr
		if !v4 && !v6 || len(m.Data) < 16 {
			continue
		}
		// struct sock_extended_err: ee_errno (u32), ee_origin, ee_type,
		// ee_code, ee_pad (u8 each), ee_info, ee_data (u32).
		errno := syscall.Errno(binary.NativeEndian.Uint32(m.Data[0:4]))
		origin := m.Data[4]
		if origin != soEEOriginICMP && origin != soEEOriginICMP6 {
			continue
		}
		switch errno {
		case syscall.ECONNREFUSED:
			return "port unreachable", true
		case syscall.EHOSTUNREACH, syscall.EHOSTDOWN:
			return "host unreachable", true
		case syscall.ENETUNREACH:
			return "network unreachable", true
		case syscall.EACCES, syscall.EPERM:
			return "administratively prohibited", true
		}
	}
	return "", false
}
