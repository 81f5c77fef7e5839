package netsim

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

// transfer is one download over a simulated topology: the client opens a
// stream, sends a short request and its FIN; the server answers with size
// bytes and a FIN; the client checks them and closes the connection.
type transfer struct {
	size    int
	payload []byte

	// Results, in virtual time since Epoch.
	handshake, done time.Duration
	received        int
	sum             [32]byte
	err             error
	// trace has a line per link event (see TextTracer); losses lists
	// "link:index" for every random loss, index counting the packets
	// offered to that link.
	trace  bytes.Buffer
	losses []string
}

// payloadFor returns size deterministic bytes, the same for every seed.
func payloadFor(size int) []byte {
	b := make([]byte, size)
	RandReader{rand.New(rand.NewPCG(11, 12))}.Read(b)
	return b
}

// runTransfer runs a download of len(payload) bytes over one path with the
// given spec, bounded by deadline in virtual time and by maxSteps events
// (StepLimit).
// With contents set, the simulation's crypto randomness is fixed too, so
// that packet bytes are reproducible (see SimConfig).
func runTransfer(t *testing.T, seed uint64, spec PathSpec, payload []byte, contents bool, deadline time.Duration, maxSteps uint64) *transfer {
	t.Helper()
	if contents {
		cryptotest.SetGlobalRandom(t, seed)
	}
	sim := New(seed)
	sim.StepLimit = maxSteps
	topo, err := NewTopology(sim, []PathSpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	tr := &transfer{size: len(payload), payload: payload}
	topo.Net.AddTracer(TextTracer(sim, &tr.trace, contents))
	topo.Net.AddTracer(&Tracer{Drop: func(l *Link, _ *Packet, why DropReason) {
		if why == DropLoss {
			tr.losses = append(tr.losses, fmt.Sprintf("%s:%d", l.Name, l.Sent-1))
		}
	}})
	clientTLS, serverTLS, err := TLSConfigs(seed, "mpq-test")
	if err != nil {
		t.Fatal(err)
	}
	saddr := netip.AddrPortFrom(topo.Server[0], 4433)
	caddr := netip.AddrPortFrom(topo.Client[0], 50000)
	if _, err := NewNode(topo.Net, []netip.AddrPort{saddr}, &core.Config{TLS: serverTLS}, tr.serve); err != nil {
		t.Fatal(err)
	}
	client, err := NewNode(topo.Net, []netip.AddrPort{caddr}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := client.Dial(&core.Config{TLS: clientTLS}, caddr, saddr)
	if err != nil {
		t.Fatal(err)
	}
	finished := false
	tr.client(sim, cc, func() { finished = true })
	if !sim.RunWhile(func() bool { return !finished }, Epoch.Add(deadline)) {
		t.Fatalf("transfer unfinished at %v after %d events: %d of %d bytes (err %v)",
			sim.Elapsed(), sim.Processed, tr.received, tr.size, tr.err)
	}
	// Let the close reach the server: then no event remains.
	if !sim.RunWhile(func() bool { return sim.Pending() > 0 }, sim.Now().Add(10*time.Second)) {
		t.Fatalf("%d events left at %v", sim.Pending(), sim.Elapsed())
	}
	return tr
}

// serve is the server application: it answers every stream's request with
// the payload.
func (tr *transfer) serve(c *Conn) {
	type response struct {
		s   *core.Stream
		off int
	}
	var active []*response
	write := func(r *response) {
		for r.off < len(tr.payload) {
			n, err := r.s.Write(tr.payload[r.off:])
			r.off += n
			if err != nil || n == 0 {
				return
			}
		}
		if r.off == len(tr.payload) {
			r.s.Close()
			r.off++
		}
	}
	var buf [512]byte
	c.OnEvent = func(e core.Event) {
		switch e.Kind {
		case core.EventStreamIncoming:
			for s := c.AcceptStream(); s != nil; s = c.AcceptStream() {
				active = append(active, &response{s: s, off: -1})
			}
		case core.EventStreamWritable:
		case core.EventStreamReadable:
		default:
			return
		}
		for _, r := range active {
			if r.off < 0 {
				for {
					n, err := r.s.Read(buf[:])
					if errors.Is(err, io.EOF) {
						r.off = 0
						break
					}
					if n == 0 || err != nil {
						break
					}
				}
			}
			if r.off >= 0 {
				write(r)
			}
		}
		c.Kick()
	}
}

// client is the client application on connection c; done runs when the
// whole response arrived and checked out (or failed).
func (tr *transfer) client(sim *Sim, c *Conn, done func()) {
	var s *core.Stream
	h := sha256.New()
	buf := make([]byte, 64<<10)
	c.OnEvent = func(e core.Event) {
		switch e.Kind {
		case core.EventHandshakeDone:
			tr.handshake = sim.Elapsed()
			var err error
			if s, err = c.OpenStream(true); err != nil {
				tr.err = err
				done()
				return
			}
			s.Write([]byte("GET /payload\r\n"))
			s.Close()
			s.WaitingRead()
			c.Kick()
		case core.EventStreamReadable:
			if s == nil || e.StreamID != s.ID() {
				return
			}
			for {
				n, err := s.Read(buf)
				h.Write(buf[:n])
				tr.received += n
				if errors.Is(err, io.EOF) {
					tr.done = sim.Elapsed()
					copy(tr.sum[:], h.Sum(nil))
					c.Close(0, "")
					c.Kick()
					done()
					return
				}
				if err != nil {
					tr.err = err
					done()
					return
				}
				if n == 0 {
					break
				}
			}
			c.Kick() // flow-control updates
		case core.EventClosed:
			if tr.done == 0 {
				tr.err = e.Err
				done()
			}
		}
	}
}

// path50ms is the path of the issue: 100 Mbit/s each way and a 50 ms
// round trip, i.e. 25 ms one-way propagation delay per direction, with
// 0.05 % Bernoulli loss each way and the default one-BDP queues.
func path50ms() PathSpec {
	return Symmetric(LinkConfig{Rate: 100e6, Delay: 25 * time.Millisecond, Loss: Bernoulli{P: 0.0005}})
}

// A handshake and a 10 MB download over a 50 ms RTT, 100 Mbit/s path with
// 0.05 % loss complete with the right bytes; two runs with the same seed
// give byte-identical traces of every link event (times, sizes, order,
// drops, deliveries and packet contents); another seed loses other packets.
func TestTransfer10MB(t *testing.T) {
	const size = 10_000_000
	payload := payloadFor(size)
	want := sha256.Sum256(payload)
	run := func(seed uint64) *transfer {
		tr := runTransfer(t, seed, path50ms(), payload, true, 60*time.Second, 2_000_000)
		if tr.err != nil || tr.received != size || tr.sum != want {
			t.Fatalf("seed %d: received %d of %d bytes, sha256 ok %v, err %v", seed, tr.received, size, tr.sum == want, tr.err)
		}
		xfer := tr.done - tr.handshake
		t.Logf("seed %d: handshake %v, 10 MB in %v after it (%.1f Mbit/s), %d random losses, trace %d lines",
			seed, tr.handshake, xfer, float64(size)*8/xfer.Seconds()/1e6, len(tr.losses), bytes.Count(tr.trace.Bytes(), []byte{'\n'}))
		// One round trip for the handshake: 50 ms plus transmission.
		if tr.handshake < 50*time.Millisecond || tr.handshake > 80*time.Millisecond {
			t.Errorf("seed %d: handshake took %v", seed, tr.handshake)
		}
		// 10 MB need 0.8 s at line rate; slow start from 10 packets
		// needs about 10 round trips to reach the 625 kB BDP.
		if xfer < 800*time.Millisecond || xfer > 4*time.Second {
			t.Errorf("seed %d: transfer took %v", seed, xfer)
		}
		return tr
	}
	a, b, c := run(1), run(1), run(2)
	if !bytes.Equal(a.trace.Bytes(), b.trace.Bytes()) {
		t.Errorf("same seed, different traces: %s", firstDiff(a.trace.Bytes(), b.trace.Bytes()))
	}
	if len(a.losses) == 0 || len(c.losses) == 0 {
		t.Fatalf("no random losses: %d and %d", len(a.losses), len(c.losses))
	}
	if fmt.Sprint(a.losses) == fmt.Sprint(c.losses) {
		t.Errorf("seeds 1 and 2 lost the same packets: %v", a.losses)
	}
	if bytes.Equal(a.trace.Bytes(), c.trace.Bytes()) {
		t.Error("seeds 1 and 2 gave the same trace")
	}
}

func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte{'\n'}), bytes.Split(b, []byte{'\n'})
	for i := 0; i < len(la) && i < len(lb); i++ {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d: %q vs %q", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d vs %d lines", len(la), len(lb))
}

// Without testing/cryptotest, Go's crypto/tls draws X25519 keys and
// ML-KEM encapsulations from crypto/rand whatever TLS.Rand says, so packet
// bytes differ between runs; everything else the trace records (times,
// sizes, order, queue occupancy, drops, deliveries) is still identical,
// which is what experiments outside tests rely on.
func TestTraceDeterministicWithoutCryptoSeed(t *testing.T) {
	payload := payloadFor(1_000_000)
	spec := Symmetric(LinkConfig{Rate: 20e6, Delay: 10 * time.Millisecond, Loss: Bernoulli{P: 0.005}, Jitter: time.Millisecond})
	a := runTransfer(t, 5, spec, payload, false, 30*time.Second, 500_000)
	b := runTransfer(t, 5, spec, payload, false, 30*time.Second, 500_000)
	if a.received != len(payload) || b.received != len(payload) || a.sum != b.sum {
		t.Fatalf("received %d and %d bytes", a.received, b.received)
	}
	if !bytes.Equal(a.trace.Bytes(), b.trace.Bytes()) {
		t.Errorf("same seed, different traces: %s", firstDiff(a.trace.Bytes(), b.trace.Bytes()))
	}
	if len(a.losses) == 0 {
		t.Error("no random loss")
	}
}
