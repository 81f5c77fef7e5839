package streams

import (
	"testing"
	"time"
)

// pipe is a steady-state transfer: one packet's worth of data written,
// sent, delivered, acknowledged and read per step, with a loss every
// lossEvery steps.
type pipe struct {
	send     *SendStream
	recv     *RecvStream
	connSend ConnSendFlow
	connRecv ConnRecvFlow
	src, dst []byte
	now      time.Time
	step     int
}

func newPipe() *pipe {
	p := &pipe{
		send:     NewSendStream(0, 1<<20, 1<<20),
		recv:     NewRecvStream(0, 1<<20),
		connSend: NewConnSendFlow(1 << 21),
		connRecv: NewConnRecvFlow(1<<21, 1<<21),
		src:      patternBytes(0, 1200),
		dst:      make([]byte, 4096),
		now:      time.Unix(0, 0),
	}
	p.recv.SetMaxWindow(1 << 20)
	return p
}

func (p *pipe) run(tb testing.TB) {
	p.step++
	p.now = p.now.Add(100 * time.Microsecond)
	if _, err := p.send.Write(p.src); err != nil {
		tb.Fatal(err)
	}
	ch, ok := p.send.NextChunk(1200, p.connSend.Credit())
	if !ok {
		tb.Fatal("nothing to send")
	}
	p.connSend.Consume(uint64(ch.NewBytes))
	if p.step%10 == 0 {
		// Lost, and sent again at once.
		p.send.OnLost(ch.Offset, len(ch.Data), ch.Fin)
		if ch, ok = p.send.NextChunk(1200, p.connSend.Credit()); !ok {
			tb.Fatal("no retransmission")
		}
	}
	n, err := p.recv.Push(ch.Offset, ch.Data, ch.Fin)
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.connRecv.OnReceived(n); err != nil {
		tb.Fatal(err)
	}
	p.send.OnAcked(ch.Offset, len(ch.Data), ch.Fin)
	m, _ := p.recv.Read(p.dst)
	p.connRecv.OnConsumed(uint64(m))
	if lim, ok := p.recv.WindowUpdate(p.now, 10*time.Millisecond); ok {
		p.send.OnMaxStreamData(lim)
	}
	if lim, ok := p.connRecv.WindowUpdate(p.now, 10*time.Millisecond); ok {
		p.connSend.OnMaxData(lim)
	}
}

func TestSteadyStateAllocations(t *testing.T) {
	p := newPipe()
	for range 5000 {
		p.run(t)
	}
	if a := testing.AllocsPerRun(2000, func() { p.run(t) }); a != 0 {
		t.Fatalf("%v allocations per packet in the steady state", a)
	}
}

func BenchmarkPipe(b *testing.B) {
	p := newPipe()
	b.SetBytes(1200)
	b.ReportAllocs()
	for b.Loop() {
		p.run(b)
	}
}
