//go:build !linux

package mpquic

import (
	"net"
	"net/netip"
)

// batchReader reads the datagrams of a socket one at a time: batched
// receive and receive offload are used on Linux only.
type batchReader struct {
	conn *net.UDPConn
	gro  bool
	buf  []byte
	out  []rxDatagram
}

func newBatchReader(c *net.UDPConn, _ int, _ bool) *batchReader {
	return &batchReader{conn: c, buf: make([]byte, recvBufSize)}
}

// read returns the next datagram, valid until the next read.
func (r *batchReader) read() ([]rxDatagram, error) {
	n, from, err := r.conn.ReadFromUDPAddrPort(r.buf)
	if err != nil {
		return nil, err
	}
	r.out = append(r.out[:0], rxDatagram{data: r.buf[:n], from: netip.AddrPortFrom(from.Addr().Unmap(), from.Port())})
	return r.out, nil
}
