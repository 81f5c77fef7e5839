// Package floodgen makes the datagrams of connection floods for the tests
// and the load tool (mpquic/testdata/flood) that check how a server holds
// under them. Nothing in the mpq binary imports it.
package floodgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mpq/mpq/mpquic/core"
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

// Hello is a connection attempt of a client that follows the server's
// Retry and then goes quiet: what holds a handshake slot of a server for
// the least effort once addresses are validated. It holds a client
// connection until AnswerRetry or End.
type Hello struct {
	c    *core.Conn
	scid []byte
	from netip.AddrPort
}

// NewHello starts a client connection from local to remote and returns it
// with its first flight (a genuine ClientHello).
func NewHello(cfg *core.Config, local, remote netip.AddrPort, now time.Time) (*Hello, [][]byte, error) {
	c, err := core.NewClientConn(cfg, local, remote, "", now)
	if err != nil {
		return nil, nil, fmt.Errorf("floodgen: client: %w", err)
	}
	h := &Hello{c: c, from: local}
	out := h.poll(now)
	if len(out) == 0 {
		h.End(now)
		return nil, nil, fmt.Errorf("floodgen: client sent nothing")
	}
	hdr, err := wire.ParseHeader(out[0], 0)
	if err != nil {
		h.End(now)
		return nil, nil, fmt.Errorf("floodgen: own Initial: %w", err)
	}
	h.scid = append([]byte(nil), hdr.SrcConnID...)
	return h, out, nil
}

// SCID is the client's connection ID: the destination connection ID of
// the server's answers, a Retry included.
func (h *Hello) SCID() []byte { return h.scid }

// AnswerRetry passes the server's datagram d to the client and, if it was
// a Retry, returns the client's ClientHello again with the Retry's token.
// The client is then ended: it never answers again.
func (h *Hello) AnswerRetry(d []byte, remote netip.AddrPort, now time.Time) [][]byte {
	h.c.HandleDatagram(now, core.Datagram{Local: h.from, Remote: remote, Data: d})
	out := h.poll(now)
	h.End(now)
	return out
}

// End ends the client and its TLS goroutine.
func (h *Hello) End(now time.Time) {
	h.c.Close(0, "")
	h.c.HandleTimeout(now.Add(time.Hour))
}

func (h *Hello) poll(now time.Time) [][]byte {
	var out [][]byte
	for {
		d, ok := h.c.PollDatagram(now, nil)
		if !ok {
			return out
		}
		out = append(out, append([]byte(nil), d.Data...))
	}
}

// IsRetry reports whether d is a version 1 Retry packet and returns its
// destination connection ID.
func IsRetry(d []byte) ([]byte, bool) {
	hdr, err := wire.ParseHeader(d, 0)
	if err != nil || hdr.Type != wire.PacketRetry || hdr.Version != wire.Version1 {
		return nil, false
	}
	return hdr.DstConnID, true
}

// RetryFloodStats counts what RetryFlood did.
type RetryFloodStats struct {
	// Hellos counts the ClientHellos sent, Retries the Retry packets
	// received and answered, Other the other datagrams received (the
	// server's first flight, refusals).
	Hellos, Retries, Other uint64
}

// retryWait is how long a Hello waits for its Retry before it is ended.
const retryWait = time.Second

// RetryFlood sends n ClientHellos, each of a new client connection, at
// rate a second (spread over socks, round robin) to server, and answers
// every Retry with the ClientHello and its token, then goes quiet: each
// validated attempt can hold a handshake slot of the server. It returns
// when the n are sent and retryWait has passed, or ctx is done. The
// sockets are the caller's; RetryFlood reads them until it returns (it
// sets their read deadlines).
func RetryFlood(ctx context.Context, cfg *core.Config, socks []*net.UDPConn, server netip.AddrPort, rate float64, n int) (RetryFloodStats, error) {
	var (
		mu      sync.Mutex
		pending = map[string]*Hello{}
		started = map[string]time.Time{}
		st      RetryFloodStats
		wg      sync.WaitGroup
	)
	done := make(chan struct{})
	for _, s := range socks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 65536)
			for {
				s.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				m, from, err := s.ReadFromUDPAddrPort(buf)
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
				dcid, ok := IsRetry(buf[:m])
				mu.Lock()
				h := pending[string(dcid)]
				if ok && h != nil {
					delete(pending, string(dcid))
					delete(started, string(dcid))
					st.Retries++
				} else {
					st.Other++
				}
				mu.Unlock()
				if h == nil {
					continue
				}
				for _, d := range h.AnswerRetry(buf[:m], from, time.Now()) {
					s.WriteToUDPAddrPort(d, server)
				}
			}
		}()
	}
	defer func() {
		close(done)
		wg.Wait()
		now := time.Now()
		for _, h := range pending {
			h.End(now)
		}
	}()
	snapshot := func() RetryFloodStats {
		mu.Lock()
		defer mu.Unlock()
		return st
	}
	start := time.Now()
	expire := func(now time.Time) {
		mu.Lock()
		defer mu.Unlock()
		for k, t := range started {
			if now.Sub(t) > retryWait {
				pending[k].End(now)
				delete(pending, k)
				delete(started, k)
			}
		}
	}
	for i := range n {
		if ahead := time.Duration(float64(i)/rate*float64(time.Second)) - time.Since(start); ahead > 0 {
			select {
			case <-time.After(ahead):
			case <-ctx.Done():
				return snapshot(), ctx.Err()
			}
		}
		s := socks[i%len(socks)]
		now := time.Now()
		h, out, err := NewHello(cfg, s.LocalAddr().(*net.UDPAddr).AddrPort(), server, now)
		if err != nil {
			return snapshot(), err
		}
		mu.Lock()
		pending[string(h.SCID())] = h
		started[string(h.SCID())] = now
		st.Hellos++
		mu.Unlock()
		for _, d := range out {
			s.WriteToUDPAddrPort(d, server)
		}
		if i%256 == 0 {
			expire(now)
		}
	}
	select {
	case <-time.After(retryWait):
	case <-ctx.Done():
	}
	return snapshot(), nil
}
