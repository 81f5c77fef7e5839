package mpquic

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// readAll reads from r until want datagrams came, and returns them with
// the number of datagrams each read returned.
func readAll(t *testing.T, uc *net.UDPConn, r *batchReader, want int) (got []rxDatagram, perRead []int) {
	t.Helper()
	uc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(got) < want {
		dgs, err := r.read()
		if err != nil {
			t.Fatalf("after %d datagrams: %v", len(got), err)
		}
		for _, d := range dgs {
			got = append(got, rxDatagram{data: bytes.Clone(d.data), from: d.from})
		}
		perRead = append(perRead, len(dgs))
	}
	return got, perRead
}

// TestBatchReadGRO sends runs of datagrams with GSO and checks that each
// arrives whole, in order, from the sender's address; with receive offload
// a run of datagrams comes out of one read of one message.
func TestBatchReadGRO(t *testing.T) {
	for _, gro := range []bool{false, true} {
		t.Run(fmt.Sprintf("gro=%v", gro), func(t *testing.T) {
			tx := newSocket(loopbackUDP(t), nil)
			if !tx.gso.Load() {
				t.Skip("no UDP GSO on this system")
			}
			rxc := loopbackUDP(t)
			r := newBatchReader(rxc, 1, gro)
			if gro && !r.gro {
				t.Skip("no UDP GRO on this system")
			}
			var want [][]byte
			var dgrams [][]byte
			for i, n := range []int{1200, 1200, 1200, 1200, 1200, 700} {
				d := bytes.Repeat([]byte{byte(i)}, n)
				dgrams = append(dgrams, d)
				want = append(want, d)
			}
			tx.writeRun(dgrams, addrOf(rxc), nil, nil)
			got, perRead := readAll(t, rxc, r, len(want))
			for i, d := range got {
				if !bytes.Equal(d.data, want[i]) {
					t.Fatalf("datagram %d: %d bytes of %d, want %d of %d", i, len(d.data), d.data[0], len(want[i]), want[i][0])
				}
				if d.from != tx.local {
					t.Fatalf("datagram %d from %v, want %v", i, d.from, tx.local)
				}
			}
			if coalesced := perRead[0] == len(want); coalesced != gro {
				t.Fatalf("datagrams per read %v (receive offload %v)", perRead, gro)
			}
		})
	}
}

// TestBatchReadMany sends datagrams one by one, faster than they are read,
// and checks that they all arrive whole and in order, from IPv4 and IPv6
// senders; on Linux reads come to return several messages at once.
func TestBatchReadMany(t *testing.T) {
	for _, network := range []string{"127.0.0.1", "::1"} {
		t.Run(network, func(t *testing.T) {
			ip := netip.MustParseAddr(network)
			rxc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
			if err != nil {
				t.Skip(err)
			}
			defer rxc.Close()
			txc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
			if err != nil {
				t.Fatal(err)
			}
			defer txc.Close()
			r := newBatchReader(rxc, recvBatch, false)
			const n = 64
			for i := range n {
				if _, err := txc.WriteToUDPAddrPort(bytes.Repeat([]byte{byte(i)}, 100+i), addrOf(rxc)); err != nil {
					t.Fatal(err)
				}
			}
			got, perRead := readAll(t, rxc, r, n)
			for i, d := range got {
				if len(d.data) != 100+i || d.data[0] != byte(i) {
					t.Fatalf("datagram %d: %d bytes of %d", i, len(d.data), d.data[0])
				}
				if d.from != addrOf(txc) {
					t.Fatalf("datagram %d from %v, want %v", i, d.from, addrOf(txc))
				}
			}
			if runtime.GOOS == "linux" && len(perRead) >= n {
				t.Fatalf("one datagram per read: %v", perRead)
			}
		})
	}
}
