package runner

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/mpq/mpq/experiment"
)

// The two ends of a two-process run (mpq run --role) talk over a small
// UDP protocol beside the experiment, on the server's first address at
// the QUIC port plus one (SyncPort): before each run the client measures
// the offset of the server's clock with NTP-style probes and tells the
// server when the run starts, in the server's clock; after the run it
// measures the offset again. Both ends check that they run the same
// configuration. The probes cross path 0 before and after the run, never
// during it.
//
// A request is 56 bytes: "MQCK", version 1, its kind (1 probe, 2 start),
// two reserved bytes, the SHA-256 of the run's configuration (32 bytes),
// the client's send time t1 and, in a start, the run's time zero in the
// server's clock (nanoseconds since 1970, big-endian). A reply is 32
// bytes: "MQCK", version 1, the kind with bit 7 set, a status (0 ok, 1
// other configuration), a reserved byte, t1 echoed, the server's receive
// time t2 and its send time t3. Every probe is answered with its times;
// the status says whether the server waits for the request's
// configuration (0), another one (1), or none yet, being between runs or
// running another (2).
// A start of the awaited configuration is acknowledged (status 0) once
// the server is ready for the client's connection.

// SyncPort is the port of the clock and start protocol for a server
// listening on QUIC port p.
func SyncPort(p uint16) uint16 { return p + 1 }

const (
	syncMagic   = "MQCK"
	syncVersion = 1
	kindProbe   = 1
	kindStart   = 2
	requestLen  = 56
	replyLen    = 32
	statusOK    = 0 // the server waits for (or runs) this configuration
	statusOther = 1 // it waits for another one
	statusIdle  = 2 // it is between runs
)

// syncRequest is a client's request.
type syncRequest struct {
	kind   byte
	config [32]byte
	t1     int64
	t0     int64 // start only
}

func (r *syncRequest) append(b []byte) []byte {
	b = append(b, syncMagic...)
	b = append(b, syncVersion, r.kind, 0, 0)
	b = append(b, r.config[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(r.t1))
	return binary.BigEndian.AppendUint64(b, uint64(r.t0))
}

var errSyncMessage = errors.New("not a clock protocol message")

func parseSyncRequest(b []byte) (syncRequest, error) {
	var r syncRequest
	if len(b) != requestLen || string(b[:4]) != syncMagic || b[4] != syncVersion || (b[5] != kindProbe && b[5] != kindStart) {
		return r, errSyncMessage
	}
	r.kind = b[5]
	copy(r.config[:], b[8:40])
	r.t1 = int64(binary.BigEndian.Uint64(b[40:]))
	r.t0 = int64(binary.BigEndian.Uint64(b[48:]))
	return r, nil
}

// syncReply is the server's reply.
type syncReply struct {
	kind, status byte
	t1, t2, t3   int64
}

func (r *syncReply) append(b []byte) []byte {
	b = append(b, syncMagic...)
	b = append(b, syncVersion, r.kind|0x80, r.status, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(r.t1))
	b = binary.BigEndian.AppendUint64(b, uint64(r.t2))
	return binary.BigEndian.AppendUint64(b, uint64(r.t3))
}

func parseSyncReply(b []byte) (syncReply, error) {
	var r syncReply
	if len(b) != replyLen || string(b[:4]) != syncMagic || b[4] != syncVersion || b[5]&0x80 == 0 {
		return r, errSyncMessage
	}
	r.kind, r.status = b[5]&^0x80, b[6]
	r.t1 = int64(binary.BigEndian.Uint64(b[8:]))
	r.t2 = int64(binary.BigEndian.Uint64(b[16:]))
	r.t3 = int64(binary.BigEndian.Uint64(b[24:]))
	return r, nil
}

// configSHA256 identifies the configuration both ends must run: the
// resolved configuration without its comments (which name the file) and
// its backend.
func configSHA256(e *experiment.Experiment) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(e.ResolvedTOML()), "\n") {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "backend = ") {
			continue
		}
		b.WriteString(line)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

func configKey(e *experiment.Experiment) [32]byte {
	var k [32]byte
	h, _ := hex.DecodeString(configSHA256(e))
	copy(k[:], h)
	return k
}

// ClockReport is the client's measurement of the server's clock, written
// to clock.json. An offset is the server's clock minus the client's, from
// the probe of least round-trip time: ((t2-t1)+(t3-t4))/2. It is exact
// when the probe's two directions take the same time; otherwise it is
// off by half their difference, at most half the round trip (RTTMS): on
// a path of asymmetric delays, by half the asymmetry.
type ClockReport struct {
	Method string `json:"method"`
	// Start is measured before the run, End after it.
	Start ClockSample `json:"start"`
	End   ClockSample `json:"end"`
	// Note says how the offset distorts completion times measured
	// across the two clocks: a message the server sends appears
	// OffsetMS shorter, one the client sends OffsetMS longer. The
	// results are not corrected, unless Corrected (mpq merge
	// --correct-clock, MergeOptions).
	Note      string `json:"note"`
	Corrected bool   `json:"corrected,omitempty"`
}

// ClockSample is one measurement of the offset.
type ClockSample struct {
	OffsetMS float64 `json:"offset_ms"`
	RTTMS    float64 `json:"rtt_ms"`
	Probes   int     `json:"probes"`
	Replies  int     `json:"replies"`
	// At is when it was taken (client clock).
	At time.Time `json:"at"`
}

// syncClient is the client's end of the protocol.
type syncClient struct {
	conn   *net.UDPConn
	server netip.AddrPort
	config [32]byte
	buf    []byte
}

func newSyncClient(local string, server netip.AddrPort, config [32]byte) (*syncClient, error) {
	la, err := net.ResolveUDPAddr("udp", local)
	if err != nil {
		return nil, err
	}
	c, err := net.ListenUDP("udp", la)
	if err != nil {
		return nil, err
	}
	return &syncClient{conn: c, server: server, config: config, buf: make([]byte, 1500)}, nil
}

func (c *syncClient) Close() error { return c.conn.Close() }

// exchange sends a request and waits up to timeout for its reply.
func (c *syncClient) exchange(req syncRequest, timeout time.Duration) (syncReply, int64, error) {
	req.config = c.config
	req.t1 = time.Now().UnixNano()
	if _, err := c.conn.WriteToUDPAddrPort(req.append(nil), c.server); err != nil {
		return syncReply{}, 0, err
	}
	deadline := time.Now().Add(timeout)
	for {
		c.conn.SetReadDeadline(deadline)
		n, _, err := c.conn.ReadFromUDPAddrPort(c.buf)
		if err != nil {
			return syncReply{}, 0, err
		}
		t4 := time.Now().UnixNano()
		r, err := parseSyncReply(c.buf[:n])
		if err != nil || r.t1 != req.t1 || r.kind != req.kind {
			continue // a late reply to an earlier request
		}
		return r, t4, nil
	}
}

var errOtherConfig = errors.New("the server runs another configuration: give both ends the same experiment file, --set values and seed")

// ready waits, up to wait, until the server waits for our configuration;
// it fails at once if the server waits for another one.
func (c *syncClient) ready(ctx context.Context, timeout, wait time.Duration) error {
	giveUp := time.Now().Add(wait)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, _, err := c.exchange(syncRequest{kind: kindProbe}, timeout)
		if err == nil {
			switch r.status {
			case statusOK:
				return nil
			case statusOther:
				return errOtherConfig
			}
			err = errors.New("it is between runs")
			time.Sleep(20 * time.Millisecond)
		}
		if time.Now().After(giveUp) {
			return fmt.Errorf("the server's clock protocol at %v is not ready for this run after %v: %v", c.server, wait, err)
		}
	}
}

// maxSilentProbes is how many probes in a row may go unanswered, once
// one was answered, before measure stops: a server that has gone (its
// run over, after the run) is not waited for a timeout per probe up to 4n
// (at 5 % loss a run's end took 53 s so), while a lossy path rarely
// loses so many in a row (with 20 % of probes and of replies lost, 3 in
// 10,000).
const maxSilentProbes = 8

// measure takes probes, one at a time, until n are answered (at most 4n,
// and no more once maxSilentProbes in a row went unanswered after an
// answer), and returns the offset of the probe of least round trip; it
// fails if none is answered.
func (c *syncClient) measure(ctx context.Context, n int, timeout time.Duration) (ClockSample, error) {
	s := ClockSample{RTTMS: math.Inf(1), At: time.Now()}
	best := time.Duration(math.MaxInt64)
	var lastErr error
	silent := 0
	for s.Replies < n && s.Probes < 4*n && silent < maxSilentProbes {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		s.Probes++
		r, t4, err := c.exchange(syncRequest{kind: kindProbe}, timeout)
		if err != nil {
			lastErr = err
			if s.Replies > 0 {
				silent++
			}
			continue
		}
		silent = 0
		s.Replies++
		if rtt := time.Duration((t4 - r.t1) - (r.t3 - r.t2)); rtt < best {
			best = rtt
			s.OffsetMS = float64(((r.t2-r.t1)+(r.t3-t4))/2) / 1e6
			s.RTTMS = float64(rtt) / 1e6
		}
	}
	if s.Replies == 0 {
		return s, fmt.Errorf("no answer from the server's clock protocol at %v after %d probes: %v", c.server, s.Probes, lastErr)
	}
	return s, nil
}

// start tells the server that the run starts at t0 (its clock), retrying
// until it acknowledges or ctx ends.
func (c *syncClient) start(ctx context.Context, t0 int64, timeout time.Duration) error {
	var lastErr error
	for ctx.Err() == nil {
		r, _, err := c.exchange(syncRequest{kind: kindStart, t0: t0}, timeout)
		switch {
		case err != nil:
			lastErr = err
		case r.status == statusOK:
			return nil
		case r.status == statusOther:
			return errOtherConfig
		default:
			lastErr = errors.New("the server is between runs")
		}
	}
	return fmt.Errorf("the server at %v did not acknowledge the start: %v (%w)", c.server, lastErr, ctx.Err())
}

// syncServer is the server's end: it answers probes at once and runs the
// role's start of the configuration it waits for.
type syncServer struct {
	conn *net.UDPConn
	done chan struct{}
	// now is the server's clock (time.Now's, but for tests). It is set
	// before serve starts and never changed.
	now func() int64

	mu      sync.Mutex
	waiting bool
	config  [32]byte
	onStart func(t0 int64)
	started chan struct{}
	begun   bool
}

func newSyncServer(addr netip.AddrPort) (*syncServer, error) {
	return newSyncServerClock(addr, func() int64 { return time.Now().UnixNano() })
}

// newSyncServerClock is newSyncServer with the clock now (tests give one
// that runs ahead). The clock is fixed before the serving goroutine
// starts, which reads it.
func newSyncServerClock(addr netip.AddrPort, now func() int64) (*syncServer, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return nil, err
	}
	s := &syncServer{conn: c, done: make(chan struct{}), now: now}
	go s.serve()
	return s, nil
}

// expect makes the server wait for a start of config: the first one runs
// onStart (before it is acknowledged) and closes the returned channel.
func (s *syncServer) expect(config [32]byte, onStart func(t0 int64)) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting, s.config, s.onStart, s.begun = true, config, onStart, false
	s.started = make(chan struct{})
	return s.started
}

// idle makes the server wait for no configuration (between runs).
func (s *syncServer) idle() {
	s.mu.Lock()
	s.waiting, s.onStart = false, nil
	s.mu.Unlock()
}

func (s *syncServer) Close() error {
	err := s.conn.Close()
	<-s.done
	return err
}

func (s *syncServer) serve() {
	defer close(s.done)
	buf := make([]byte, 1500)
	var out []byte
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		t2 := s.now()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		req, err := parseSyncRequest(buf[:n])
		if err != nil {
			continue
		}
		rep := syncReply{kind: req.kind, t1: req.t1, t2: t2}
		s.mu.Lock()
		switch {
		case !s.waiting, s.begun && req.config != s.config:
			// Between runs, or running one (a client ahead of us in
			// a sweep asks for the next): not ready yet.
			rep.status = statusIdle
		case req.config != s.config:
			rep.status = statusOther
		case req.kind == kindStart && !s.begun:
			s.begun = true
			if s.onStart != nil {
				s.onStart(req.t0)
			}
			close(s.started)
		}
		s.mu.Unlock()
		rep.t3 = s.now()
		out = rep.append(out[:0])
		s.conn.WriteToUDPAddrPort(out, from)
	}
}
