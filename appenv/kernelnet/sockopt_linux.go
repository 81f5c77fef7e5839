package kernelnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mpq/mpq/mpquic/core"
)

// MPTCP socket options (linux/mptcp.h).
const (
	solMPTCP           = 284
	mptcpTCPInfo       = 2
	mptcpSubflowAddrs  = 3
	subflowDataHdr     = 16  // struct mptcp_subflow_data
	subflowAddrsLen    = 256 // struct mptcp_subflow_addrs: two sockaddr_storage
	sockaddrStorageLen = 128
)

func setCongestion(fd int, name string) error {
	return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
}

func getCongestion(rc syscall.RawConn) (string, error) {
	var name string
	var serr error
	err := rc.Control(func(fd uintptr) {
		name, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	if err == nil {
		err = serr
	}
	return name, err
}

// The kernel's congestion states (tcpi_ca_state, enum tcp_ca_state in
// include/uapi/linux/tcp.h) and its "no threshold yet"
// (TCP_INFINITE_SSTHRESH).
const (
	caOpen           = 0
	caDisorder       = 1
	infiniteSSThresh = 0x7fffffff
)

// fromTCPInfo converts the kernel's tcp_info. TCP keeps no cumulative
// count of losses: PacketsLost and BytesLost are its retransmissions
// (tcpi_total_retrans, tcpi_bytes_retrans), spurious ones included, as
// docs/reference/transports.md says. The window, the threshold and the
// bytes in flight are the kernel's segment counts times tcpi_snd_mss;
// in flight is the kernel's tcp_packets_in_flight (unacknowledged minus
// SACKed minus marked lost, plus retransmitted). CongestionState is
// "recovery" in the kernel's CWR, Recovery and Loss states, else
// "slow_start" below the threshold and "congestion_avoidance" at or
// above it (the kernel's bbr does not follow the threshold, so for it
// the state says only where the window is against it).
func fromTCPInfo(ti *unix.TCPInfo) core.PathStats {
	us := func(v uint32) time.Duration { return time.Duration(v) * time.Microsecond }
	mss := uint64(ti.Snd_mss)
	ssthresh := uint64(math.MaxUint64)
	if ti.Snd_ssthresh < infiniteSSThresh {
		ssthresh = uint64(ti.Snd_ssthresh) * mss
	}
	var inFlight uint64
	if out, gone := uint64(ti.Unacked)+uint64(ti.Retrans), uint64(ti.Sacked)+uint64(ti.Lost); out > gone {
		inFlight = (out - gone) * mss
	}
	state := "congestion_avoidance"
	switch {
	case ti.Ca_state != caOpen && ti.Ca_state != caDisorder:
		state = "recovery"
	case ti.Snd_cwnd < ti.Snd_ssthresh:
		state = "slow_start"
	}
	return core.PathStats{
		PacketsSent: uint64(ti.Segs_out), PacketsReceived: uint64(ti.Segs_in), PacketsLost: uint64(ti.Total_retrans),
		BytesSent: ti.Bytes_sent, BytesReceived: ti.Bytes_received, BytesLost: ti.Bytes_retrans,
		SmoothedRTT: us(ti.Rtt), MinRTT: us(ti.Min_rtt), LatestRTT: us(ti.Rtt), RTTVariance: us(ti.Rttvar),
		CongestionWindow: uint64(ti.Snd_cwnd) * mss, SSThresh: ssthresh, BytesInFlight: inFlight,
		CongestionState: state,
		Validated:       true, Status: "available", State: "active",
	}
}

func tcpStats(rc syscall.RawConn) (core.PathStats, error) {
	var ti *unix.TCPInfo
	var serr error
	err := rc.Control(func(fd uintptr) { ti, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	if err == nil {
		err = serr
	}
	if err != nil {
		return core.PathStats{}, err
	}
	return fromTCPInfo(ti), nil
}

// getsockopt reads an MPTCP subflow option: a struct mptcp_subflow_data
// header asking for elements of size elem, then up to max elements. It
// returns the reply and what subflowData finds in it.
func getsockopt(fd int, opt int, elem, max int) ([]byte, int, int, error) {
	buf := make([]byte, subflowDataHdr+elem*max)
	binary.NativeEndian.PutUint32(buf[0:], subflowDataHdr)
	binary.NativeEndian.PutUint32(buf[12:], uint32(elem))
	l := uint32(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), solMPTCP, uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return nil, 0, 0, e
	}
	n, stride, err := subflowData(buf[:min(int(l), len(buf))], elem, max)
	return buf, n, stride, err
}

// subflowData reads the header of a struct mptcp_subflow_data reply that
// asked for elements of size elem: the number of elements in it (at most
// max, and at most what the reply holds) and their stride. The kernel
// writes each element with the smaller of elem and its own structure's
// size (size_user, updated), so a kernel whose tcp_info is shorter than
// the one this program was built with gives a shorter stride, and a
// longer one is cut to elem.
func subflowData(buf []byte, elem, max int) (n, stride int, err error) {
	if len(buf) < subflowDataHdr {
		return 0, 0, errors.New("kernelnet: short mptcp_subflow_data reply")
	}
	n = int(binary.NativeEndian.Uint32(buf[4:]))
	stride = int(binary.NativeEndian.Uint32(buf[12:]))
	if stride <= 0 || stride > elem {
		return 0, 0, fmt.Errorf("kernelnet: the kernel's subflow element size %d, asked for %d", stride, elem)
	}
	return min(n, max, (len(buf)-subflowDataHdr)/stride), stride, nil
}

// element copies the i-th element of a subflow reply into dst, which is
// zeroed beyond the element's stride (fields the kernel does not have).
func element(dst []byte, buf []byte, i, stride int) {
	clear(dst)
	copy(dst, buf[subflowDataHdr+i*stride:subflowDataHdr+(i+1)*stride])
}

// subflowStats returns the statistics of an MPTCP connection's subflows,
// in the order of their local addresses, numbered from 0.
func subflowStats(rc syscall.RawConn) []core.PathStats {
	const most = 8
	var out []core.PathStats
	rc.Control(func(fd uintptr) {
		infos, n, istride, err := getsockopt(int(fd), mptcpTCPInfo, unix.SizeofTCPInfo, most)
		if err != nil {
			return
		}
		addrs, m, astride, err := getsockopt(int(fd), mptcpSubflowAddrs, subflowAddrsLen, most)
		if err != nil || m != n {
			return
		}
		out = decodeSubflows(infos, addrs, n, istride, astride)
	})
	slices.SortStableFunc(out, func(a, b core.PathStats) int { return a.Local.Compare(b.Local) })
	for i := range out {
		out[i].ID = uint64(i)
	}
	return out
}

// decodeSubflows decodes n subflows' tcp_info and addresses from the two
// replies, with the strides the kernel reported.
func decodeSubflows(infos, addrs []byte, n, istride, astride int) []core.PathStats {
	out := make([]core.PathStats, 0, n)
	var a [subflowAddrsLen]byte
	for i := range n {
		var ti unix.TCPInfo
		element(unsafe.Slice((*byte)(unsafe.Pointer(&ti)), unix.SizeofTCPInfo), infos, i, istride)
		ps := fromTCPInfo(&ti)
		element(a[:], addrs, i, astride)
		ps.Local, ps.Remote = sockaddr(a[:sockaddrStorageLen]), sockaddr(a[sockaddrStorageLen:])
		out = append(out, ps)
	}
	return out
}

// sockaddr decodes a sockaddr_in or sockaddr_in6.
func sockaddr(b []byte) netip.AddrPort {
	port := binary.BigEndian.Uint16(b[2:])
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port)
	}
	return netip.AddrPort{}
}
