// Package floodgen makes the datagrams of connection floods for the tests
// and the load tool (mpquic/testdata/flood) that check how a server holds
// under them. Nothing in the mpq binary imports it.
package floodgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/wire"
)

// GarbageInitial returns a version 1 Initial packet of 1,200 to 1,499
// bytes whose header is sound (an 8-byte DCID, a Length that fits the
// datagram) and whose protected part is random: what costs a server the
// most to tell from a client's.
func GarbageInitial(r *rand.Rand) []byte {
	dcid := Random(r, 8)
	b, lengthOff, pnOff := wire.AppendLongHeader(nil, wire.PacketInitial, wire.Version1, dcid, dcid[:4], nil, 0, 4)
	b = append(b[:pnOff], Random(r, 1200+r.IntN(300)-pnOff)...)
	wire.PutLongHeaderLength(b, lengthOff, len(b)-pnOff)
	return b
}

// ClientHello returns the first flight of a new client connection with
// configuration cfg: a genuine ClientHello in Initial packets (two
// datagrams with the post-quantum key share), each of a new connection
// the server can decrypt. The client is then ended, so that it holds no
// memory.
func ClientHello(cfg *core.Config) ([][]byte, error) {
	now := time.Now()
	c, err := core.NewClientConn(cfg, netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"), "", now)
	if err != nil {
		return nil, fmt.Errorf("floodgen: client: %w", err)
	}
	var out [][]byte
	for {
		d, ok := c.PollDatagram(now, nil)
		if !ok {
			break
		}
		out = append(out, append([]byte(nil), d.Data...))
	}
	c.Close(0, "")
	c.HandleTimeout(now.Add(time.Hour)) // ends its TLS goroutine
	return out, nil
}

// Random returns n bytes from r.
func Random(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// RetryFloodStats counts what RetryFlood did.
type RetryFloodStats struct {
	// Hellos counts the ClientHellos sent, Retries the Retry packets
	// received and answered, Other the other datagrams received (the
	// server's first flight, refusals).
	Hellos, Retries, Other uint64
}

// retryWait is how long RetryFlood waits for the last Retries once it
// sent its ClientHellos.
const retryWait = time.Second

// retryPoolSize is the number of ClientHellos RetryFlood makes and reuses.
const retryPoolSize = 64

// RetryFlood sends n ClientHellos, each as a new client connection, at
// rate a second (spread over socks, round robin) to server, and answers
// every Retry with the ClientHello and its token, then goes quiet: each
// validated attempt can hold a handshake slot of the server. The
// ClientHellos come from a HelloPool of retryPoolSize, so that the flood
// costs little more than its datagrams while the server does its whole
// work for each. It returns when the n are sent and retryWait has passed,
// or ctx is done. The sockets are the caller's; RetryFlood reads them
// until it returns (it sets their read deadlines).
func RetryFlood(ctx context.Context, cfg *core.Config, socks []*net.UDPConn, server netip.AddrPort, rate float64, n int) (RetryFloodStats, error) {
	pool, err := NewHelloPool(cfg, retryPoolSize)
	if err != nil {
		return RetryFloodStats{}, err
	}
	var (
		hellos, retries, other atomic.Uint64
		wg                     sync.WaitGroup
		answerErr              = make(chan error, 1)
	)
	done := make(chan struct{})
	// The server answers each datagram of a first flight with a Retry:
	// a socket answers as many Retries as it sent ClientHellos, as the
	// clients would (each the first Retry of its connection).
	credits := make([]atomic.Int64, len(socks))
	for si, s := range socks {
		credit := &credits[si]
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 65536)
			for {
				s.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				m, err := s.Read(buf)
				if err != nil {
					select {
					case <-done:
						return
					default:
					}
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						continue
					}
					return
				}
				out, ok, err := pool.AnswerRetry(buf[:m])
				switch {
				case err != nil:
					select {
					case answerErr <- err:
					default:
					}
					continue
				case !ok || !take(credit):
					other.Add(1)
					continue
				}
				retries.Add(1)
				for _, d := range out {
					s.WriteToUDPAddrPort(d, server)
				}
			}
		}()
	}
	stats := func() (RetryFloodStats, error) {
		close(done)
		wg.Wait()
		st := RetryFloodStats{Hellos: hellos.Load(), Retries: retries.Load(), Other: other.Load()}
		select {
		case err := <-answerErr:
			return st, err
		default:
			return st, nil
		}
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	start := time.Now()
	for i := 0; i < n; {
		for due := min(n, 1+int(time.Since(start).Seconds()*rate)); i < due; i++ {
			out, err := pool.First(i, r)
			if err != nil {
				st, _ := stats()
				return st, err
			}
			s := socks[i%len(socks)]
			credits[i%len(socks)].Add(1)
			for _, d := range out {
				s.WriteToUDPAddrPort(d, server)
			}
			hellos.Add(1)
		}
		select {
		case <-tk.C:
		case <-ctx.Done():
			st, _ := stats()
			return st, ctx.Err()
		}
	}
	select {
	case <-time.After(retryWait):
	case <-ctx.Done():
	}
	return stats()
}

// take takes one from c unless it is zero, and reports whether it did.
func take(c *atomic.Int64) bool {
	for {
		v := c.Load()
		if v <= 0 {
			return false
		}
		if c.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// HelloPool holds the first flights of a few client connections, made
// once, so that a flood can send ClientHellos much faster than it could
// make them (a key share each): as an attacker would, each attempt reuses
// one of them under a new destination connection ID, which the server
// takes for a new connection and whose Initial keys it derives anew.
// Answering a Retry needs no state of the attempt: the Retry names the
// client's connection ID, which names the pooled ClientHello.
type HelloPool struct {
	hellos []*pooledHello
	bySCID map[string]*pooledHello
}

// pooledHello is one first flight: the client's connection ID (its
// ClientHello's initial_source_connection_id) and the plaintext of each
// of its Initial packets (CRYPTO and PADDING frames).
type pooledHello struct {
	scid     []byte
	payloads [][]byte
}

// helloDCIDLen is the length of the destination connection IDs the pool's
// attempts choose, the shortest a client may (RFC 9000 Section 7.2).
const helloDCIDLen = 8

// minInitialDatagram is the least size of a datagram carrying a client's
// Initial packet (RFC 9000 Section 14.1).
const minInitialDatagram = 1200

// NewHelloPool makes the first flights of n client connections with
// configuration cfg.
func NewHelloPool(cfg *core.Config, n int) (*HelloPool, error) {
	if n < 1 {
		return nil, fmt.Errorf("floodgen: a pool of %d ClientHellos", n)
	}
	p := &HelloPool{bySCID: map[string]*pooledHello{}}
	for len(p.hellos) < n {
		flight, err := ClientHello(cfg)
		if err != nil {
			return nil, err
		}
		h, err := unprotectFlight(flight)
		if err != nil {
			return nil, err
		}
		if p.bySCID[string(h.scid)] != nil {
			continue // the same random connection ID twice
		}
		p.hellos = append(p.hellos, h)
		p.bySCID[string(h.scid)] = h
	}
	return p, nil
}

// unprotectFlight removes the Initial protection of a client's first
// flight, one Initial packet a datagram.
func unprotectFlight(flight [][]byte) (*pooledHello, error) {
	h := &pooledHello{}
	for _, d := range flight {
		d = slices.Clone(d)
		hdr, err := wire.ParseHeader(d, 0)
		if err != nil || hdr.Type != wire.PacketInitial || hdr.Length != len(d) {
			return nil, fmt.Errorf("floodgen: own first flight: not one Initial a datagram (%v)", err)
		}
		_, open := protection.NewInitialKeys(hdr.DstConnID, false)
		pnLen, trunc, err := protection.UnprotectHeader(open.HP, d, hdr.PNOffset)
		if err != nil {
			return nil, fmt.Errorf("floodgen: own Initial: %w", err)
		}
		payload, err := protection.OpenPacket(open.AEAD, d, hdr.PNOffset+pnLen, 0, wire.DecodePacketNumber(-1, trunc, pnLen))
		if err != nil {
			return nil, fmt.Errorf("floodgen: own Initial: %w", err)
		}
		h.scid = slices.Clone(hdr.SrcConnID)
		h.payloads = append(h.payloads, slices.Clone(payload))
	}
	if len(h.payloads) == 0 {
		return nil, errors.New("floodgen: empty first flight")
	}
	return h, nil
}

// Len is the number of first flights in the pool.
func (p *HelloPool) Len() int { return len(p.hellos) }

// First returns the first flight of pooled ClientHello i (modulo the
// pool's size) as a new connection: under a random destination
// connection ID from r.
func (p *HelloPool) First(i int, r *rand.Rand) ([][]byte, error) {
	h := p.hellos[i%len(p.hellos)]
	return h.flight(Random(r, helloDCIDLen), nil, 0)
}

// AnswerRetry reports whether d is a Retry to one of the pool's client
// connection IDs and if so returns that ClientHello again, to the Retry's
// source connection ID with its token (packet numbers after those of the
// first flight). The integrity tag is not checked: an attacker has no use
// for it.
func (p *HelloPool) AnswerRetry(d []byte) ([][]byte, bool, error) {
	hdr, err := wire.ParseHeader(d, 0)
	if err != nil || hdr.Type != wire.PacketRetry || hdr.Version != wire.Version1 {
		return nil, false, nil
	}
	h := p.bySCID[string(hdr.DstConnID)]
	if h == nil {
		return nil, false, nil
	}
	out, err := h.flight(hdr.SrcConnID, hdr.Token, uint64(len(h.payloads)))
	return out, true, err
}

// flight protects the pooled Initial packets with the Initial keys of
// dcid, the token and the packet numbers from pn on.
func (h *pooledHello) flight(dcid, token []byte, pn uint64) ([][]byte, error) {
	const pnLen = 2
	cs, _ := protection.InitialSecrets(dcid)
	suite, err := protection.SuiteByID(tls.TLS_AES_128_GCM_SHA256)
	if err != nil {
		return nil, fmt.Errorf("floodgen: %w", err)
	}
	seal, err := protection.NewKeys(suite, cs)
	if err != nil {
		return nil, fmt.Errorf("floodgen: Initial keys: %w", err)
	}
	out := make([][]byte, 0, len(h.payloads))
	for i, payload := range h.payloads {
		b := make([]byte, 0, 64+len(token)+len(payload)+seal.AEAD.Overhead())
		b, lengthOff, pnOff := wire.AppendLongHeader(b, wire.PacketInitial, wire.Version1, dcid, h.scid, token, pn+uint64(i), pnLen)
		hdrLen := len(b)
		b = append(b, payload...)
		if pad := minInitialDatagram - len(b) - seal.AEAD.Overhead(); pad > 0 {
			b = append(b, make([]byte, pad)...) // PADDING frames
		}
		if !wire.PutLongHeaderLength(b, lengthOff, len(b)-pnOff+seal.AEAD.Overhead()) {
			return nil, errors.New("floodgen: Initial packet too long")
		}
		if b, err = protection.SealPacket(seal.AEAD, seal.HP, b, hdrLen, pnOff, pnLen, 0, pn+uint64(i)); err != nil {
			return nil, fmt.Errorf("floodgen: sealing an Initial: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}
