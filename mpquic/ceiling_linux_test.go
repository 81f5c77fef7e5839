//go:build linux

package mpquic

import (
	"net"
	"slices"
	"testing"
	"time"
)

// ceilingBytes is what one run of the ceiling sends: the size of one
// transfer of BenchmarkLoopbackThroughput.
const ceilingBytes = 64 << 20

// BenchmarkLoopbackCeiling is the machine's loopback ceiling for
// BenchmarkLoopbackThroughput: a raw UDP sender and receiver in one
// process with mpquic's socket options and system calls and no QUIC at
// all. The sender writes runs of 1452-byte datagrams (the benchmark's
// packet size) of at most gsoMaxSegments and gsoMaxBytes in one GSO write
// each, as writeRun does, as fast as the socket takes them; the receiver
// reads through newBatchReader (recvmmsg, UDP GRO) and counts. Both
// sockets have mpquic's 4 MB buffers. It reports the rate the receiver
// saw, from its first datagram to its last, over the median of the
// iterations, and the share of datagrams lost (the socket's buffer
// overflowing: the sender is not paced).
//
//	go test ./mpquic -run '^$' -bench LoopbackCeiling -benchtime 5x
func BenchmarkLoopbackCeiling(b *testing.B) {
	var rates, losses []float64
	for range b.N {
		rate, loss := ceilingRun(b, ceilingBytes)
		rates = append(rates, rate)
		losses = append(losses, loss)
	}
	b.ReportMetric(ceilingMedian(rates), "Mbit/s")
	b.ReportMetric(ceilingMedian(losses), "loss")
	b.ReportMetric(0, "ns/op")
}

// TestLoopbackCeiling runs the ceiling once on 4 MB: the datagrams must
// arrive (some may be lost) and the rate must be a rate.
func TestLoopbackCeiling(t *testing.T) {
	rate, loss := ceilingRun(t, 4<<20)
	if rate <= 0 || loss >= 0.9 {
		t.Fatalf("ceiling: %.0f Mbit/s, %.3f lost", rate, loss)
	}
	t.Logf("loopback ceiling, 4 MB: %.0f Mbit/s, %.3f of the datagrams lost", rate, loss)
}

func ceilingMedian(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ceilingRun sends n bytes and returns the receiver's rate in Mbit/s and
// the share of datagrams lost.
func ceilingRun(tb testing.TB, n int) (rate, loss float64) {
	tb.Helper()
	const size = 1452
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	defer rx.Close()
	tx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Close()
	for _, c := range []*net.UDPConn{rx, tx} {
		_ = c.SetReadBuffer(4 << 20)
		_ = c.SetWriteBuffer(4 << 20)
	}
	gso := gsoSupported(tx)
	reader := newBatchReader(rx, recvBatch, true)
	to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	total := (n + size - 1) / size

	type result struct {
		got         int
		first, last time.Time
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for r.got < total {
			// The sender may lose datagrams: a pause of 200 ms ends it.
			_ = rx.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			ds, err := reader.read()
			if err != nil {
				break
			}
			if r.got == 0 && len(ds) > 0 {
				r.first = time.Now()
			}
			r.got += len(ds)
			r.last = time.Now()
		}
		done <- r
	}()

	per := min(gsoMaxSegments, gsoMaxBytes/size)
	buf := make([]byte, per*size)
	var oob []byte
	if gso {
		oob = gsoControl(nil, size)
	}
	for sent := 0; sent < total; {
		k := min(per, total-sent)
		if !gso {
			k = 1
		}
		if _, _, err := tx.WriteMsgUDPAddrPort(buf[:k*size], oob, to); err != nil {
			tb.Fatal(err)
		}
		sent += k
	}
	r := <-done
	if r.got < 2 {
		tb.Fatalf("ceiling: %d of %d datagrams arrived", r.got, total)
	}
	d := r.last.Sub(r.first).Seconds()
	return float64(r.got-1) * size * 8 / d / 1e6, 1 - float64(r.got)/float64(total)
}
