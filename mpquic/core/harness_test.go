package core

import (
	"crypto/tls"
	"math/rand/v2"
	"net/netip"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/certs"
)

var (
	certOnce sync.Once
	cert     tls.Certificate
)

func testCert(t testing.TB) tls.Certificate {
	t.Helper()
	certOnce.Do(func() {
		var err error
		cert, err = certs.SelfSigned(certs.Options{Ed25519: true})
		if err != nil {
			t.Fatal(err)
		}
	})
	return cert
}

func testConfigs(t testing.TB) (client, server *Config) {
	c := testCert(t)
	server = &Config{TLS: &tls.Config{Certificates: []tls.Certificate{c}, NextProtos: []string{"test"}}}
	client = &Config{TLS: &tls.Config{RootCAs: certs.Pool(c), ServerName: "localhost", NextProtos: []string{"test"}}}
	return client, server
}

var (
	clientAddr = netip.MustParseAddrPort("10.0.0.1:5000")
	serverAddr = netip.MustParseAddrPort("10.0.0.2:4433")
)

// flight is a datagram on the wire of the test harness.
type flight struct {
	at       time.Time
	seq      int
	toServer bool
	d        Datagram
}

// pair is a client and a server connected by a link of fixed one-way delay,
// driven on a virtual clock. Tests install drop to lose or inspect
// datagrams. It is a deliberately small simulator: the full one lives in
// network/netsim.
type pair struct {
	t              *testing.T
	now            time.Time
	delay          time.Duration
	client, server *Conn
	sEP            *Endpoint
	wire           []flight
	seq            int
	// drop, if set, decides the fate of each datagram (true: lost).
	drop func(toServer bool, d []byte) bool
	// dropPath, if set, decides the fate of each datagram by its
	// addresses (true: lost).
	dropPath func(f flight) bool
	// rewrite, if set, may change a datagram's addresses as it enters the
	// wire (a NAT rebinding); it runs before dropPath.
	rewrite func(toServer bool, d *Datagram)
	// replies counts datagrams the server endpoint answered statelessly.
	replies  int
	accepted []*Conn
	buf      []byte
	sent     [2]int
}

func newPair(t *testing.T, ccfg, scfg *Config, ecfg EndpointConfig) *pair {
	t.Helper()
	p := &pair{t: t, now: time.Unix(1_000_000, 0), delay: 10 * time.Millisecond, buf: make([]byte, 0, 65536)}
	r := rand.New(rand.NewPCG(1, 2))
	ecfg.Server = scfg
	ecfg.Rand = randReader{r}
	var err error
	p.sEP, err = NewEndpoint(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	ccfg.Rand = randReader{rand.New(rand.NewPCG(3, 4))}
	p.client, err = NewClientConn(ccfg, clientAddr, serverAddr, "", p.now)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type randReader struct{ r *rand.Rand }

func (r randReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(r.r.Uint32())
	}
	return len(b), nil
}

// flush moves every datagram the connections want to send onto the wire.
func (p *pair) flush() {
	for _, c := range []*Conn{p.client, p.server} {
		if c == nil {
			continue
		}
		for i := 0; i < 10000; i++ {
			d, ok := c.PollDatagram(p.now, p.buf[:0])
			if !ok {
				break
			}
			toServer := c == p.client
			p.sent[b2i(toServer)]++
			if p.drop != nil && p.drop(toServer, d.Data) {
				continue
			}
			p.push(toServer, Datagram{Local: d.Local, Remote: d.Remote, Data: append([]byte(nil), d.Data...)})
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (p *pair) push(toServer bool, d Datagram) {
	if p.rewrite != nil {
		p.rewrite(toServer, &d)
	}
	f := flight{at: p.now.Add(p.delay), seq: p.seq, toServer: toServer, d: d}
	p.seq++
	if p.dropPath != nil && p.dropPath(f) {
		return
	}
	p.wire = append(p.wire, f)
}

// step advances to the next event (a delivery or a timer) and runs it; it
// reports false when nothing is left.
func (p *pair) step() bool {
	p.flush()
	next := time.Time{}
	for _, c := range []*Conn{p.client, p.server} {
		if c != nil {
			if t := c.NextTimeout(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	sort.SliceStable(p.wire, func(i, j int) bool {
		if !p.wire[i].at.Equal(p.wire[j].at) {
			return p.wire[i].at.Before(p.wire[j].at)
		}
		return p.wire[i].seq < p.wire[j].seq
	})
	if len(p.wire) > 0 && (next.IsZero() || !p.wire[0].at.After(next)) {
		f := p.wire[0]
		p.wire = p.wire[1:]
		if f.at.After(p.now) {
			p.now = f.at
		}
		p.deliver(f)
		return true
	}
	if next.IsZero() {
		return false
	}
	if next.After(p.now) {
		p.now = next
	}
	for _, c := range []*Conn{p.client, p.server} {
		if c != nil {
			if t := c.NextTimeout(); !t.IsZero() && !t.After(p.now) {
				c.HandleTimeout(p.now)
			}
		}
	}
	return true
}

func (p *pair) deliver(f flight) {
	d := Datagram{Local: f.d.Remote, Remote: f.d.Local, Data: f.d.Data}
	if !f.toServer {
		p.client.HandleDatagram(p.now, d)
		return
	}
	r := p.sEP.Route(p.now, d)
	if r.Reply != nil {
		p.replies++
		p.push(false, Datagram{Local: r.Reply.Local, Remote: r.Reply.Remote, Data: r.Reply.Data})
	}
	if r.Conn == nil {
		return
	}
	if r.New {
		p.server = r.Conn
		p.accepted = append(p.accepted, r.Conn)
	}
	r.Conn.HandleDatagram(p.now, d)
}

// runUntil steps until cond holds; it fails the test after max virtual time
// or max steps, so that a livelock ends quickly.
func (p *pair) runUntil(cond func() bool, max time.Duration) {
	p.t.Helper()
	deadline := p.now.Add(max)
	for steps := 0; !cond(); steps++ {
		if steps > 2_000_000 || p.now.After(deadline) {
			p.t.Fatalf("condition not reached after %v and %d steps", max, steps)
		}
		if !p.step() {
			p.t.Fatalf("nothing left to do at %v and the condition does not hold", p.now)
		}
	}
}

func (p *pair) handshake() {
	p.t.Helper()
	p.runUntil(func() bool {
		return p.client.HandshakeConfirmed() && p.server != nil && p.server.HandshakeConfirmed()
	}, 10*time.Second)
}

// events drains the events of c.
func events(c *Conn) []Event {
	var out []Event
	for {
		e, ok := c.PollEvent()
		if !ok {
			return out
		}
		out = append(out, e)
	}
}

// transfer sends data on a new stream from one end to the other and checks
// it arrives intact.
func (p *pair) transfer(from, to *Conn, data []byte, max time.Duration) {
	p.t.Helper()
	p.transferHook(from, to, data, max, func(int) {})
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 99))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
