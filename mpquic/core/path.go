package core

import (
	"math"
	"net/netip"
	"slices"
	"sort"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/scheduler"
)

// path is one network path of the connection: a pair of addresses with its
// own RTT estimate, congestion controller, pacer and application-data packet
// number space (draft-ietf-quic-multipath-21 Section 5: per-path recovery).
// Without multipath the connection has exactly path 0.
type path struct {
	id            uint64
	local, remote netip.AddrPort

	rtt     recovery.RTT
	cc      congestion.Controller
	ccState congestion.State
	pacer   *congestion.Pacer
	rater   congestion.PacingRater // the controller, if it sets the pacing rate
	// appLim is the controller, if it tells application-limited rate
	// samples from the others (noteAppLimited).
	appLim congestion.AppLimitedObserver
	// hs is the controller while it records HyStart++'s steps for the
	// qlog trace (traceHyStart); nil otherwise.
	hs  congestion.HyStartTracer
	app pnSpace
	// appOnly holds &app: spacesOf's answer once the handshake's spaces
	// are gone, a slice of it rather than one built at every call.
	appOnly  [1]*pnSpace
	ptoCount int

	// Anti-amplification (RFC 9000 Section 8.1): until the peer's address is
	// validated a server sends at most three times what it received.
	validated bool
	// unreachable counts the ICMP destination unreachable errors for the
	// path since a packet was last received on it.
	unreachable   int
	bytesReceived uint64
	bytesSentPre  uint64

	// status is ours (sent with PATH_STATUS_*, statusSeq the last sequence
	// number used); peerStatus the peer's latest.
	status          scheduler.PathStatus
	statusSeq       uint64
	peerStatus      scheduler.PathStatus
	peerStatusSeq   uint64
	peerStatusKnown bool
	// failoverBackup: the connection sent PATH_STATUS_BACKUP for the path
	// when it failed (failoverStatus) and owes PATH_STATUS_AVAILABLE when
	// it recovers.
	failoverBackup bool

	// Multipath lifecycle (draft-ietf-quic-multipath-21 Section 3).
	state             pathState
	challengeData     [8]byte
	challengeSend     bool      // a PATH_CHALLENGE is due on the path
	challengeTries    int       // PATH_CHALLENGEs sent
	challengeNext     time.Time // when to repeat it
	challengeDeadline time.Time // when validation fails
	abandonRecvd      bool
	abandonCode       uint64
	removeAt          time.Time // closing paths: when state is dropped

	mtu int

	// migration is the validation of the peer's new address (migrate.go).
	migration migration

	// health is the failure detection state (pathfail.go).
	health pathHealth
	// spuriousFailures counts the failures of the path that turned out
	// spurious: each doubles its failure threshold (failAfter), up to
	// maxFailBackoff doublings.
	spuriousFailures int

	// Statistics.
	packetsSent, packetsReceived, packetsLost uint64
	bytesSent, bytesRecv, bytesLost           uint64
	// bytesAcked counts the bytes of in-flight packets acknowledged.
	bytesAcked uint64
	// leftStartup latches once the controller was in BBR's Drain or
	// ProbeBW (PathInfo.LeftStartup).
	leftStartup bool
	lastMetrics pathMetrics
}

// pathMetrics is what was last reported to qlog, to log only changes.
type pathMetrics struct {
	cwnd, inFlight, ssthresh uint64
	srtt, minRTT, latestRTT  time.Duration
	rttVar                   time.Duration
}

func (c *Conn) newPath(id uint64, local, remote netip.AddrPort) (*path, error) {
	cc, err := c.newController()
	if err != nil {
		return nil, err
	}
	p := &path{
		id:      id,
		local:   local,
		remote:  remote,
		rtt:     recovery.NewRTT(c.cfg.InitialRTT),
		cc:      cc,
		ccState: cc.State(),
		app:     newPNSpace(c.cfg.MaxAckDelay),
		mtu:     c.cfg.MaxPacketSize,
		state:   pathActive,
	}
	p.appOnly[0] = &p.app
	p.rater, _ = cc.(congestion.PacingRater)
	p.appLim, _ = cc.(congestion.AppLimitedObserver)
	if c.cfg.Pacing || p.rater != nil {
		p.pacer = newPacer(c.cfg)
	}
	c.traceHyStart(p)
	return p, nil
}

// traceHyStart has the path's controller record HyStart++'s steps when
// the connection writes a qlog trace (updateMetrics logs them).
func (c *Conn) traceHyStart(p *path) {
	p.hs = nil
	if c.qlog == nil {
		return
	}
	if t, ok := p.cc.(congestion.HyStartTracer); ok {
		t.TraceHyStart()
		p.hs = t
	}
}

// newController builds a path's congestion controller.
// A coupled controller joins the connection's group.
func (c *Conn) newController() (congestion.Controller, error) {
	if c.ccGroup == nil {
		c.ccGroup = congestion.NewGroup()
	}
	return congestion.New(c.cfg.Congestion, c.cfg.congestionConfig(c.ccGroup))
}

// newPacer builds a path's pacer.
func newPacer(cfg *Config) *congestion.Pacer {
	return congestion.NewPacer(cfg.MaxPacketSize, cfg.PacingBurst)
}

// bytesInFlight is the path's bytes in flight across the spaces it carries.
func (c *Conn) bytesInFlight(p *path) uint64 {
	n := p.app.sent.BytesInFlight()
	if p.id == 0 && !c.handshakeSpacesGone { // discarded spaces have none
		for i := range c.spaces {
			n += c.spaces[i].sent.BytesInFlight()
		}
	}
	return n
}

// amplificationRoom is how many bytes the anti-amplification limit still
// lets the path send (unlimited once the address is validated).
func (c *Conn) amplificationRoom(p *path) int {
	if c.isClient || p.validated {
		return math.MaxInt
	}
	limit := 3 * p.bytesReceived
	if p.bytesSentPre >= limit {
		return 0
	}
	return int(limit - p.bytesSentPre)
}

// pacingBudget is how many bytes the pacer lets the path send now.
func (p *path) pacingBudget(now time.Time) uint64 {
	if p.pacer == nil {
		return math.MaxUint64
	}
	return p.pacer.Budget(now)
}

// info builds the scheduler's snapshot of the path.
func (c *Conn) info(p *path, now time.Time) scheduler.PathInfo {
	var i scheduler.PathInfo
	c.fillInfo(&i, p, now)
	return i
}

// pathInfos fills c.pathBuf with the scheduler's snapshot of each of
// paths, in place (a PathInfo is some 150 bytes, built for every path at
// every send opportunity: built where it stays, not copied there).
func (c *Conn) pathInfos(paths []*path, now time.Time) []scheduler.PathInfo {
	c.pathBuf = slices.Grow(c.pathBuf[:0], len(paths))[:len(paths)]
	for k, p := range paths {
		c.fillInfo(&c.pathBuf[k], p, now)
	}
	return c.pathBuf
}

// fillInfo writes the scheduler's snapshot of the path into i, field by
// field (every field, so that nothing of an earlier snapshot remains).
func (c *Conn) fillInfo(i *scheduler.PathInfo, p *path, now time.Time) {
	i.ID = p.id
	// Path 0 carries data from the start, the server's within the
	// anti-amplification limit (packetLimit) until the client's
	// address is validated: its 0.5-RTT answers to 0-RTT data.
	i.Validated = p.state == pathActive && (p.validated || p.id == 0) && c.ownAckPath(p)
	i.Status = p.status
	i.PeerStatus = p.peerStatus
	i.SRTT = p.rtt.Smoothed()
	i.RTTVar = p.rtt.Var()
	i.MinRTT = p.rtt.Min()
	i.LatestRTT = p.rtt.Latest()
	i.HasRTTSample = p.rtt.HasSample()
	i.CWND = c.sendWindow(p)
	i.BytesInFlight = c.bytesInFlight(p)
	i.SSThresh = p.cc.SlowStartThreshold()
	i.LeftStartup = p.leftStartup
	i.PacingBudget = p.pacingBudget(now)
	i.MaxPacketSize = c.maxPacketSize(p)
	i.PacketOverhead = packetOverhead
	i.PacketsSent = p.packetsSent
	i.PacketsLost = p.packetsLost
	i.BytesAcked = p.bytesAcked
	i.ConsecutivePTOs = p.ptoCount
	i.Failed = p.health.failed
	_, i.OldestUnackedSent, _ = p.app.sent.OldestUnackedAbove() // zero when none
	i.MaxAckDelay = c.peerMaxAckDelay()
}

// maxPacketSize is the largest datagram the path may carry: our configured
// size capped by the peer's max_udp_payload_size.
func (c *Conn) maxPacketSize(p *path) int {
	n := p.mtu
	if c.havePeerTP && c.peerParams.MaxUDPPayloadSize < uint64(n) {
		n = int(c.peerParams.MaxUDPPayloadSize)
	}
	return n
}

// PathStats are the counters and estimates of one path.
type PathStats struct {
	ID                                          uint64
	Local, Remote                               netip.AddrPort
	PacketsSent, PacketsReceived, PacketsLost   uint64
	BytesSent, BytesReceived, BytesLost         uint64
	SmoothedRTT, MinRTT, LatestRTT, RTTVariance time.Duration
	CongestionWindow, BytesInFlight, SSThresh   uint64
	CongestionState                             string
	Validated                                   bool
	// Status is our status of the path ("available" or "backup"),
	// PeerStatus the peer's ("" if it sent none).
	Status, PeerStatus string
	// State is "validating", "active" or "closing".
	State string
	// Failed reports that the path is found broken and probed (see
	// PathEvent); Events are its path events so far.
	Failed bool
	Events []PathEvent
	// SchedulerCounters are the path scheduler's counters of the path
	// (for example "reservations_missed"), if it keeps any.
	SchedulerCounters map[string]uint64
	// CopiesSent counts the copies sent on the path: packets whose
	// frames a path scheduler sent on several paths, the first of which
	// was another (Conn.CopiesDropped counts the copies not sent).
	CopiesSent uint64
}

// packetOverhead is the part of a full 1-RTT packet that is not stream
// data: a short header with our connection ID length and a 4-byte packet
// number, the AEAD tag, and a STREAM frame header with an 8-byte offset and
// a 2-byte length (schedulers estimate the packets of a message from it).
const packetOverhead = 1 + ConnIDLen + 4 + aeadTag + 1 + 4 + 8 + 2

// Paths returns the statistics of every path.
func (c *Conn) Paths() []PathStats {
	out := make([]PathStats, 0, len(c.paths)+len(c.closing))
	for _, p := range append(c.paths[:len(c.paths):len(c.paths)], c.closing...) {
		peer := ""
		if p.peerStatusKnown {
			peer = p.peerStatus.String()
		}
		out = append(out, PathStats{
			ID: p.id, Local: p.local, Remote: p.remote,
			PacketsSent: p.packetsSent, PacketsReceived: p.packetsReceived, PacketsLost: p.packetsLost,
			BytesSent: p.bytesSent, BytesReceived: p.bytesRecv, BytesLost: p.bytesLost,
			SmoothedRTT: p.rtt.Smoothed(), MinRTT: p.rtt.Min(), LatestRTT: p.rtt.Latest(), RTTVariance: p.rtt.Var(),
			CongestionWindow: p.cc.Window(), BytesInFlight: c.bytesInFlight(p), SSThresh: p.cc.SlowStartThreshold(),
			CongestionState: p.cc.State().String(),
			Validated:       p.validated || c.isClient && p.id == 0,
			Status:          p.status.String(),
			PeerStatus:      peer,
			State:           p.state.String(),
			Failed:          p.health.failed,
			Events:          c.eventsOf(p.id),
			CopiesSent:      c.copies.sent[p.id],
		})
		if sc, ok := c.pathSch.(scheduler.Counters); ok {
			out[len(out)-1].SchedulerCounters = sc.PathCounters(p.id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
