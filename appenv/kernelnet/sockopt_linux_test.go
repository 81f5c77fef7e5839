package kernelnet

import (
	"encoding/binary"
	"math"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reply builds a struct mptcp_subflow_data reply as the kernel writes it:
// the header with num_subflows and size_user, then each element cut to
// stride bytes.
func reply(num, stride int, elems ...[]byte) []byte {
	b := make([]byte, subflowDataHdr, subflowDataHdr+len(elems)*stride)
	binary.NativeEndian.PutUint32(b[0:], subflowDataHdr)
	binary.NativeEndian.PutUint32(b[4:], uint32(num))
	binary.NativeEndian.PutUint32(b[12:], uint32(stride))
	for _, e := range elems {
		b = append(b, e[:stride]...)
	}
	return b
}

func tcpInfoBytes(ti unix.TCPInfo) []byte {
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&ti)), unix.SizeofTCPInfo)...)
}

func addrsBytes(local, remote netip.AddrPort) []byte {
	b := make([]byte, subflowAddrsLen)
	for i, ap := range []netip.AddrPort{local, remote} {
		s := b[i*sockaddrStorageLen:]
		binary.NativeEndian.PutUint16(s, unix.AF_INET)
		binary.BigEndian.PutUint16(s[2:], ap.Port())
		a := ap.Addr().As4()
		copy(s[4:8], a[:])
	}
	return b
}

// TestSubflowReplies decodes MPTCP_TCPINFO and MPTCP_SUBFLOW_ADDRS replies
// whose elements are as long as asked and shorter (a kernel whose
// tcp_info is older than the program's: the fields beyond it read 0).
func TestSubflowReplies(t *testing.T) {
	offBytesSent := int(unsafe.Offsetof(unix.TCPInfo{}.Bytes_sent))
	infos := []unix.TCPInfo{
		{Rtt: 25000, Rttvar: 1000, Min_rtt: 24000, Snd_cwnd: 10, Snd_mss: 1000, Total_retrans: 3, Bytes_sent: 5000},
		{Rtt: 50000, Snd_cwnd: 20, Snd_mss: 1400, Bytes_sent: 7000},
	}
	l0 := netip.MustParseAddrPort("10.0.0.1:4000")
	l1 := netip.MustParseAddrPort("10.0.1.1:4001")
	r := netip.MustParseAddrPort("10.1.0.1:443")
	addrs := reply(2, subflowAddrsLen, addrsBytes(l0, r), addrsBytes(l1, r))
	for _, tc := range []struct {
		name      string
		stride    int
		num       int
		wantN     int
		wantBytes [2]uint64
	}{
		{"full", unix.SizeofTCPInfo, 2, 2, [2]uint64{5000, 7000}},
		{"older kernel", offBytesSent, 2, 2, [2]uint64{0, 0}},
		{"more subflows than fit", unix.SizeofTCPInfo, 5, 2, [2]uint64{5000, 7000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := reply(tc.num, tc.stride, tcpInfoBytes(infos[0]), tcpInfoBytes(infos[1]))
			n, stride, err := subflowData(buf, unix.SizeofTCPInfo, 8)
			if err != nil || n != tc.wantN || stride != tc.stride {
				t.Fatalf("subflowData = %d, %d, %v; want %d, %d", n, stride, err, tc.wantN, tc.stride)
			}
			m, astride, err := subflowData(addrs, subflowAddrsLen, 8)
			if err != nil || m != 2 {
				t.Fatalf("addresses: %d, %v", m, err)
			}
			got := decodeSubflows(buf, addrs, n, stride, astride)
			if len(got) != 2 {
				t.Fatalf("%d subflows", len(got))
			}
			want := []struct {
				srtt   time.Duration
				cwnd   uint64
				lost   uint64
				local  netip.AddrPort
				remote netip.AddrPort
			}{{25 * time.Millisecond, 10000, 3, l0, r}, {50 * time.Millisecond, 28000, 0, l1, r}}
			for i, w := range want {
				g := got[i]
				if g.SmoothedRTT != w.srtt || g.CongestionWindow != w.cwnd || g.PacketsLost != w.lost ||
					g.Local != w.local || g.Remote != w.remote || g.BytesSent != tc.wantBytes[i] {
					t.Errorf("subflow %d: %+v", i, g)
				}
			}
		})
	}
	// A stride longer than asked, or none, is refused.
	for _, stride := range []int{0, unix.SizeofTCPInfo + 8} {
		b := make([]byte, subflowDataHdr)
		binary.NativeEndian.PutUint32(b[4:], 1)
		binary.NativeEndian.PutUint32(b[12:], uint32(stride))
		if _, _, err := subflowData(b, unix.SizeofTCPInfo, 8); err == nil {
			t.Errorf("stride %d accepted", stride)
		}
	}
}

// TestFromTCPInfoWindow: the window, threshold and bytes in flight of
// tcp_info in bytes, and the congestion state, on hand-made tcp_info.
func TestFromTCPInfoWindow(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		ti                       unix.TCPInfo
		cwnd, ssthresh, inFlight uint64
		state                    string
	}{
		// No threshold yet (TCP_INFINITE_SSTHRESH): slow start; in
		// flight 8 - (2 + 1) + 1 = 6 segments.
		{"slow start", unix.TCPInfo{Snd_mss: 1448, Snd_cwnd: 10, Snd_ssthresh: 0x7fffffff, Unacked: 8, Sacked: 2, Lost: 1, Retrans: 1},
			14480, math.MaxUint64, 8688, "slow_start"},
		{"congestion avoidance", unix.TCPInfo{Snd_mss: 1000, Snd_cwnd: 40, Snd_ssthresh: 30, Unacked: 40, Ca_state: caDisorder},
			40000, 30000, 40000, "congestion_avoidance"},
		// Recovery (3) whatever the threshold says.
		{"recovery", unix.TCPInfo{Snd_mss: 1000, Snd_cwnd: 20, Snd_ssthresh: 30, Unacked: 30, Sacked: 5, Lost: 5, Retrans: 2, Ca_state: 3},
			20000, 30000, 22000, "recovery"},
		{"loss", unix.TCPInfo{Snd_mss: 1000, Snd_cwnd: 1, Snd_ssthresh: 15, Unacked: 30, Lost: 30, Retrans: 1, Ca_state: 4},
			1000, 15000, 1000, "recovery"},
	} {
		ps := fromTCPInfo(&tc.ti)
		if ps.CongestionWindow != tc.cwnd || ps.SSThresh != tc.ssthresh || ps.BytesInFlight != tc.inFlight || ps.CongestionState != tc.state {
			t.Errorf("%s: cwnd %d, ssthresh %d, in flight %d, state %q; want %d, %d, %d, %q", tc.name,
				ps.CongestionWindow, ps.SSThresh, ps.BytesInFlight, ps.CongestionState, tc.cwnd, tc.ssthresh, tc.inFlight, tc.state)
		}
	}
}
