package mpquic

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func loopbackUDP(t *testing.T) *net.UDPConn {
	t.Helper()
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uc.Close() })
	return uc
}

func addrOf(uc *net.UDPConn) netip.AddrPort { return uc.LocalAddr().(*net.UDPAddr).AddrPort() }

// TestSendRuns sends a batch of datagrams of mixed sizes to two receivers,
// with and without GSO, and checks that every datagram arrives whole and in
// order: runs are cut where the destination changes, a datagram is larger
// than the run's first, or the run would exceed the GSO limits.
func TestSendRuns(t *testing.T) {
	sizes := []int{1200, 1200, 1200, 700, 1200, 1300, 1300, 1300, 1300, 1, 1452, 1452}
	for len(sizes) < batchSize-6 {
		sizes = append(sizes, 4000) // 16 of them exceed gsoMaxBytes
	}
	sizes = append(sizes, 4000, 3999, 1200, 1200, 1200, 1200)
	for _, gso := range []bool{false, true} {
		t.Run(fmt.Sprintf("gso=%v", gso), func(t *testing.T) {
			rx := []*net.UDPConn{loopbackUDP(t), loopbackUDP(t)}
			s := newSocket(loopbackUDP(t), nil)
			if gso && !s.gso.Load() {
				t.Skip("no UDP GSO on this system")
			}
			s.gso.Store(gso)
			c := &Conn{sockets: map[netip.AddrPort]*socket{s.local: s}}
			b := newSendBatch()
			want := [2][][]byte{}
			for i, n := range sizes {
				d := bytes.Repeat([]byte{byte(i)}, n)
				r := 0
				if i%7 == 6 {
					r = 1 // interleave another destination
				}
				b.bufs[i] = append(b.bufs[i][:0], d...)
				b.to[i], b.from[i] = addrOf(rx[r]), s.local
				want[r] = append(want[r], d)
			}
			b.n = len(sizes)
			c.send(b)
			if gso && !s.gso.Load() {
				t.Fatal("the kernel refused a GSO write")
			}
			for r := range rx {
				buf := make([]byte, 65536)
				for i, w := range want[r] {
					rx[r].SetReadDeadline(time.Now().Add(5 * time.Second))
					n, err := rx[r].Read(buf)
					if err != nil {
						t.Fatalf("receiver %d, datagram %d: %v", r, i, err)
					}
					if !bytes.Equal(buf[:n], w) {
						t.Fatalf("receiver %d, datagram %d: %d bytes of %d, want %d of %d", r, i, n, buf[0], len(w), w[0])
					}
				}
			}
			for i := 0; i < b.n; i++ {
				if len(b.bufs[i]) != 0 {
					t.Fatal("batch buffers not reset")
				}
			}
		})
	}
}

func TestIsGSOError(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("GSO is Linux only")
	}
	tests := []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "write", Err: os.NewSyscallError("sendmsg", syscall.EIO)}, true},
		{&net.OpError{Op: "write", Err: os.NewSyscallError("sendmsg", syscall.EINVAL)}, true},
		{syscall.EMSGSIZE, true},
		{&net.OpError{Op: "write", Err: os.NewSyscallError("sendmsg", syscall.ECONNREFUSED)}, false},
		{net.ErrClosed, false},
	}
	for _, tt := range tests {
		if got := isGSOError(tt.err); got != tt.want {
			t.Errorf("isGSOError(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
