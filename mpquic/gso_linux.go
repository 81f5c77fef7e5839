//go:build linux

package mpquic

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"
	"unsafe"
)

// UDP generic segmentation offload (Linux 4.18 and later): one sendmsg
// with a UDP_SEGMENT control message carries a run of datagrams of equal
// size (the last may be shorter) that the kernel splits as late as it can,
// so that the run costs about one traversal of the network stack instead
// of one per datagram.

const (
	solUDP     = syscall.IPPROTO_UDP
	udpSegment = 103 // UDP_SEGMENT of linux/udp.h
)

// gsoSupported reports whether the kernel offers UDP GSO on c.
func gsoSupported(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	if err := rc.Control(func(fd uintptr) {
		_, err := syscall.GetsockoptInt(int(fd), solUDP, udpSegment)
		ok = err == nil
	}); err != nil {
		return false
	}
	return ok
}

// gsoControl returns the control message that makes the kernel split a
// write into datagrams of segSize bytes, in b's storage when it is large
// enough (b's start is then the start of an allocation, suitably aligned
// for the header).
func gsoControl(b []byte, segSize int) []byte {
	n := syscall.CmsgSpace(2)
	if cap(b) < n {
		b = make([]byte, n)
	}
	b = b[:n]
	clear(b)
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level = solUDP
	h.Type = udpSegment
	h.SetLen(syscall.CmsgLen(2))
	binary.NativeEndian.PutUint16(b[syscall.CmsgLen(0):], uint16(segSize))
	return b
}

// isGSOError reports whether a GSO write failed because segmentation is
// unusable here (no checksum offload on the device, a segment larger than
// the path MTU, an old kernel), rather than for a reason that would fail
// the datagrams sent one by one too.
func isGSOError(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EIO, syscall.EINVAL, syscall.EMSGSIZE, syscall.ENOPROTOOPT, syscall.EOPNOTSUPP:
		return true
	}
	return false
}
