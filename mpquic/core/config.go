package core

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/mpquic/qlog"
	"github.com/mpq/mpq/scheduler"
)

// Config configures a connection. The zero value of every field except TLS
// selects a documented default; Validate fills them in.
type Config struct {
	// TLS is the TLS configuration: certificates for servers, roots or
	// InsecureSkipVerify for clients, and NextProtos (ALPN, required by
	// RFC 9001 Section 8.1). MinVersion is raised to TLS 1.3.
	TLS *tls.Config

	// MaxIdleTimeout is the idle timeout advertised to the peer
	// (RFC 9000 Section 10.1). Default 30 s.
	MaxIdleTimeout time.Duration
	// HandshakeTimeout bounds the handshake: a client gives up when it
	// has heard nothing for this long before its handshake completes, and
	// a server drops a connection whose handshake has not completed this
	// long after the client's first packet. Default 10 s.
	HandshakeTimeout time.Duration
	// InitialRTT is the RTT assumed before the first sample
	// (RFC 9002 Section 6.2.2). Default 333 ms.
	InitialRTT time.Duration
	// MaxPacketSize is the largest UDP payload sent. Default 1350 bytes;
	// at least 1200.
	MaxPacketSize int
	// MaxUDPPayloadSize is the largest UDP payload this endpoint receives,
	// advertised to the peer as max_udp_payload_size (RFC 9000 Section
	// 18.2). Default 65527, the most a UDP datagram carries; the mpquic
	// driver lowers it to what its socket receives (65507 over IPv4).
	// Between 1200 and 65527.
	MaxUDPPayloadSize int

	// Flow control (RFC 9000 Section 4). Receive windows start at the
	// Initial values and auto-tune up to the Max values.
	InitialStreamWindow uint64 // default 512 KiB
	MaxStreamWindow     uint64 // default 16 MiB
	InitialConnWindow   uint64 // default 768 KiB
	MaxConnWindow       uint64 // default 24 MiB
	// ConnWindowFollowsStream keeps the connection's receive window at
	// least 1.5 times a stream's whenever auto-tuning grows the stream's,
	// as quic-go and MPQUIC do (their ConnectionFlowControlMultiplier,
	// after Chromium); off, the connection's window auto-tunes by itself.
	ConnWindowFollowsStream bool
	// SendBelowWindow lets a path send while its bytes in flight are at
	// most its congestion window, as MPQUIC does, instead of only when
	// the whole packet fits within the window (RFC 9002 Section 7): the
	// core and the path scheduler (PathInfo.CWND) see the window plus a
	// maximum-size datagram, so that a full-size packet goes whenever
	// the flight is at most the window.
	SendBelowWindow bool
	// StreamSendBuffer bounds the unacknowledged bytes buffered per stream.
	// Default 4 MiB.
	StreamSendBuffer int
	// SendBudget, if set, is shared by the connections of this
	// configuration (a server's): it bounds the memory of their send
	// buffers together, and each connection's to its share, after
	// the fixed cost it charges each open connection (SetConnCost); an
	// Endpoint refuses the connections it does not afford, and while
	// it is exceeded the connection above its share whose peer has
	// read nothing for the longest (ReclaimStall) ends with
	// ErrSendReclaimed.
	SendBudget *SendBudget
	// SendStallTimeout, if positive, ends a connection that has stream
	// data buffered and sees none of it acknowledged for this long (a
	// peer that stopped reading), with ErrSendStalled and a
	// CONNECTION_CLOSE of NO_ERROR. Default 0: never.
	SendStallTimeout time.Duration
	// MaxIncomingStreams and MaxIncomingUniStreams limit concurrently open
	// peer-initiated streams. Default 100 each; negative means none.
	MaxIncomingStreams    int64
	MaxIncomingUniStreams int64

	// AckDelayExponent and MaxAckDelay are advertised to the peer
	// (RFC 9000 Section 18.2). Defaults 3 and 25 ms.
	AckDelayExponent uint8
	MaxAckDelay      time.Duration
	// ActiveConnectionIDLimit is how many connection IDs we accept from the
	// peer. Default 4.
	ActiveConnectionIDLimit uint64

	// Congestion names the congestion controller (see package congestion).
	// Default "newreno".
	Congestion string
	// NewRenoGrowth is NewReno's congestion avoidance growth, "per-ack"
	// (default) or "per-rtt" (see congestion.Growth); only newreno and
	// newreno-cwl take "per-rtt".
	NewRenoGrowth string
	// SlowStart is how the controllers leave their initial slow start:
	// "standard" or "hystart++" (RFC 9406; see congestion.SlowStartMode);
	// "" is the controller's default (congestion.DefaultSlowStart:
	// HyStart++ for cubic, standard for the others). bbr takes none.
	SlowStart string
	// CongestionReadings are the controllers' readings of another
	// implementation (MPQUIC's), each off in the zero value: the initial
	// window in datagrams, emulated connections, the loss reduction,
	// growth only while the window is used and the RTO collapse (see
	// congestion.Config).
	CongestionReadings congestion.Readings
	// Pacing enables the pacer of RFC 9002 Section 7.7. Off by default, as
	// in the 2017 MP-QUIC of the experiments this stack reproduces.
	Pacing bool
	// PacingBurst is how much the pacer lets leave back to back, as a
	// time at its rate: a burst is what the rate carries in PacingBurst,
	// and never less than 10 datagrams (congestion.BurstPackets). 0 is
	// the driver's default: 1 ms for package mpquic's UDP driver
	// (DefaultPacingBurst; Linux TCP sizes its TSO bursts to about a
	// millisecond of its pacing rate, up to 64 KB), so that at gigabits
	// per second the sender does not wake up for every 10 datagrams;
	// none in the simulator, whose timers are exact and whose wake-ups
	// cost nothing. Negative: 10 datagrams on every driver.
	PacingBurst time.Duration
	// PathScheduler and StreamScheduler name the schedulers (see package
	// scheduler); "" for scheduler.DefaultPath and DefaultStream.
	PathScheduler   string
	StreamScheduler string
	// PathSchedulerOptions are the path scheduler's options, resolved
	// once (scheduler.ResolvePathOptions: the experiment file's
	// transport.scheduler_options); options not in it take their
	// defaults, nil all of them. Each connection builds its path
	// scheduler from them once, when it is created.
	PathSchedulerOptions scheduler.Options

	// MaxPathID is the largest path ID the peer may open paths with, the
	// initial_max_path_id transport parameter of
	// draft-ietf-quic-multipath-21: up to MaxPathID+1 paths at once. Each
	// path ID is used once; when an abandoned path is forgotten the limit
	// rises by one (MAX_PATH_ID). Default 3; at least 1, because some
	// implementations take 0 as "not negotiated".
	MaxPathID uint64
	// Repair offers the experimental REPAIR frames (stream-level XOR
	// parity, mpquic/internal/wire/repair.go; transport parameter
	// 0x3fec4). Both ends must offer it; then a path scheduler that is a
	// scheduler.Repairer decides which streams get parity, and received
	// parities rebuild lost bytes. It also offers REPAIR_Q frames (a
	// second, Reed-Solomon parity; transport parameter 0x3fec6), which a
	// scheduler.SecondRepairer sends where the peer offered them too.
	// Off by default.
	Repair bool
	// DisableMultipath turns the multipath extension off: the connection
	// is plain RFC 9000 with one path.
	DisableMultipath bool
	// DisablePathFailure turns the path failure detection off (see
	// PathEvent): a silent path is then handled by its probe timeouts
	// alone, as before the detection existed. For comparisons.
	DisablePathFailure bool
	// PathAbandonAfter, when positive, abandons a path (PATH_ABANDON,
	// PATH_UNSTABLE_OR_POOR) that has been failed for that long: found
	// broken while another path works and silent to its probes since
	// (see PathEvent). Zero keeps probing it for as long as the
	// connection lives. Not negative.
	PathAbandonAfter time.Duration

	// DisableGSO makes the UDP driver (package mpquic) send every datagram
	// with its own write instead of runs of datagrams in one write with
	// UDP generic segmentation offload, so that captures on a loopback
	// device show one packet per datagram (with GSO, tcpdump on lo sees
	// one oversized packet per run). The sans-IO core ignores it. The
	// environment variable MPQUIC_DISABLE_GSO=1 does the same for every
	// connection.
	DisableGSO bool

	// SessionTickets makes a server send a TLS session ticket after the
	// handshake, with which a client resumes the next connection to it
	// (a client stores tickets in TLS.ClientSessionCache, and resumes
	// when that cache is set). Off by default: a ticket adds a CRYPTO
	// frame to every connection.
	SessionTickets bool
	// Allow0RTT enables 0-RTT (RFC 9001 Section 4.6; see
	// Conn.OpenEarlyStream). A server's tickets then allow early data
	// (SessionTickets is implied) and it accepts 0-RTT when its limits
	// are at least those of the ticket. A client offers early data when
	// it resumes with a ticket that allows it. Only data of streams the
	// application opens with OpenEarlyStream goes in 0-RTT packets:
	// that data may be replayed by an attacker (RFC 8446 Section 8).
	// Off by default.
	Allow0RTT bool

	// KeyUpdateInterval, when non-zero, makes the endpoint initiate a key
	// update after that many packets in a key phase (RFC 9001 Section 6).
	// Updates are always initiated before the AEAD confidentiality limit.
	KeyUpdateInterval uint64

	// SimNullProtection replaces the 1-RTT packet protection (AES-GCM or
	// ChaCha20-Poly1305) with a null protection that sends the payload in
	// clear, for the simulator only (package network/netsim), where the
	// AEAD is a fifth of a saturated run's time and protects nothing: the
	// packets keep their sizes (a 16-byte tag that still tells keys apart
	// and catches modified packets), their header protection and their
	// key updates, so that a simulated run's results are the same byte for
	// byte (see protection.NewNullAEAD). Both ends must set it. No
	// transport parameter announces it, and the UDP driver (package
	// mpquic) refuses a configuration that sets it: it never protects a
	// packet on a real socket.
	SimNullProtection bool

	// Rand is the source of connection IDs, tokens and path challenges.
	// Default crypto/rand; the simulator passes a seeded source.
	Rand io.Reader

	// Qlog, if set, is called once per connection and returns where its
	// qlog trace (JSON-SEQ) goes; nil means no trace. Each event is one
	// Write of one whole record, made as the event happens: the writer
	// buffers if it wants to (mpq's commands use internal/qlogfile, which
	// writes at least every second). It is closed when the connection
	// ends.
	Qlog func(vantage string, odcid []byte) io.WriteCloser
	// QlogReferenceTime, if set, is the time zero of the qlog traces
	// (their reference_time) instead of the connection's creation: an
	// experiment sets its own time zero so that the traces and its other
	// result files share one time base.
	QlogReferenceTime time.Time

	// Observer, if set, is called once per connection ("client" or
	// "server") and returns the Observer that receives its measurements;
	// nil means none.
	Observer func(vantage string) Observer
}

// Observer receives a connection's measurements as they happen, for
// experiment logs. Its methods run synchronously on the connection's
// goroutine, at the connection's (possibly virtual) time, and must not
// call back into the connection.
type Observer interface {
	// PathMetricsUpdated reports a path's congestion and RTT state after
	// it changed (a packet sent or acknowledged, a loss, a timer).
	PathMetricsUpdated(now time.Time, m PathMetrics)
	// StreamDataSent reports n bytes of stream data sent on a path,
	// retransmissions and copies on several paths included.
	StreamDataSent(now time.Time, pathID, streamID uint64, priority bool, n int)
}

// PathMetrics is a path's recovery state.
type PathMetrics struct {
	PathID                                    uint64
	CongestionWindow, BytesInFlight, SSThresh uint64
	SmoothedRTT, MinRTT, LatestRTT            time.Duration
	// CongestionState is the controller's phase ("slow_start",
	// "congestion_avoidance", "recovery", "application_limited"; bbr's
	// "startup", "drain", "probe_bw", "probe_rtt").
	CongestionState string
}

// Validate checks the configuration and returns a copy with defaults filled.
func (c *Config) Validate() (*Config, error) {
	if c == nil {
		return nil, errors.New("mpquic: nil config")
	}
	n := *c
	if n.TLS == nil {
		return nil, errors.New("mpquic: config has no TLS configuration")
	}
	n.TLS = n.TLS.Clone()
	if n.TLS.MinVersion < tls.VersionTLS13 {
		n.TLS.MinVersion = tls.VersionTLS13
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&n.MaxIdleTimeout, 30*time.Second)
	def(&n.HandshakeTimeout, 10*time.Second)
	def(&n.InitialRTT, 333*time.Millisecond)
	def(&n.MaxAckDelay, 25*time.Millisecond)
	if n.MaxPacketSize == 0 {
		n.MaxPacketSize = 1350
	}
	if n.MaxPacketSize < 1200 || n.MaxPacketSize > 65527 {
		return nil, fmt.Errorf("mpquic: MaxPacketSize %d outside [1200, 65527]", n.MaxPacketSize)
	}
	if n.MaxUDPPayloadSize == 0 {
		n.MaxUDPPayloadSize = 65527
	}
	if n.MaxUDPPayloadSize < 1200 || n.MaxUDPPayloadSize > 65527 {
		return nil, fmt.Errorf("mpquic: MaxUDPPayloadSize %d outside [1200, 65527]", n.MaxUDPPayloadSize)
	}
	defU := func(v *uint64, d uint64) {
		if *v == 0 {
			*v = d
		}
	}
	defU(&n.InitialStreamWindow, 512<<10)
	defU(&n.MaxStreamWindow, 16<<20)
	defU(&n.InitialConnWindow, 768<<10)
	defU(&n.MaxConnWindow, 24<<20)
	n.MaxStreamWindow = max(n.MaxStreamWindow, n.InitialStreamWindow)
	n.MaxConnWindow = max(n.MaxConnWindow, n.InitialConnWindow)
	if n.StreamSendBuffer == 0 {
		n.StreamSendBuffer = 4 << 20
	}
	if n.MaxIncomingStreams == 0 {
		n.MaxIncomingStreams = 100
	}
	if n.MaxIncomingUniStreams == 0 {
		n.MaxIncomingUniStreams = 100
	}
	n.MaxIncomingStreams = max(n.MaxIncomingStreams, 0)
	n.MaxIncomingUniStreams = max(n.MaxIncomingUniStreams, 0)
	if n.AckDelayExponent == 0 {
		n.AckDelayExponent = 3
	}
	if n.AckDelayExponent > 20 {
		return nil, fmt.Errorf("mpquic: AckDelayExponent %d > 20", n.AckDelayExponent)
	}
	if n.MaxAckDelay >= 1<<14*time.Millisecond {
		return nil, fmt.Errorf("mpquic: MaxAckDelay %v too large", n.MaxAckDelay)
	}
	if n.ActiveConnectionIDLimit == 0 {
		n.ActiveConnectionIDLimit = 4
	}
	if n.ActiveConnectionIDLimit < 2 {
		return nil, errors.New("mpquic: ActiveConnectionIDLimit must be at least 2")
	}
	if n.MaxPathID == 0 {
		n.MaxPathID = 3
	}
	if n.PathAbandonAfter < 0 {
		return nil, fmt.Errorf("mpquic: PathAbandonAfter %v is negative", n.PathAbandonAfter)
	}
	if n.MaxPathID > MaxPathIDLimit {
		return nil, fmt.Errorf("mpquic: MaxPathID %d above 2^32-1", n.MaxPathID)
	}
	if n.Congestion == "" {
		n.Congestion = "newreno"
	}
	if _, err := congestion.New(n.Congestion, n.congestionConfig(nil)); err != nil {
		return nil, fmt.Errorf("mpquic: %w", err)
	}
	if n.PathScheduler == "" {
		n.PathScheduler = scheduler.DefaultPath
	}
	if n.StreamScheduler == "" {
		n.StreamScheduler = scheduler.DefaultStream
	}
	if err := scheduler.CheckPath(n.PathScheduler, n.PathSchedulerOptions); err != nil {
		return nil, fmt.Errorf("mpquic: %w", err)
	}
	if err := scheduler.CheckStream(n.StreamScheduler); err != nil {
		return nil, fmt.Errorf("mpquic: %w", err)
	}
	if n.Rand == nil {
		n.Rand = rand.Reader
	}
	return &n, nil
}

// newTrace opens the qlog trace of a connection, if configured.
func (c *Config) newTrace(vantage string, odcid []byte, now time.Time) *qlog.Trace {
	if c.Qlog == nil {
		return nil
	}
	w := c.Qlog(vantage, odcid)
	if w == nil {
		return nil
	}
	ref := now
	if !c.QlogReferenceTime.IsZero() {
		ref = c.QlogReferenceTime
	}
	return qlog.NewTrace(w, qlog.VantagePoint(vantage), odcid, ref, "mpquic "+vantage)
}

// congestionConfig is the configuration of a path's congestion controller
// in a connection whose controllers form group g.
func (c *Config) congestionConfig(g *congestion.Group) congestion.Config {
	r := c.CongestionReadings
	return congestion.Config{MaxDatagramSize: c.MaxPacketSize, Group: g, RenoGrowth: congestion.Growth(c.NewRenoGrowth),
		SlowStart: congestion.SlowStartMode(c.SlowStart), Paced: c.Pacing, InitialWindowPackets: r.InitialWindow,
		EmulatedConnections: r.EmulatedConnections, LossReduction: r.LossReduction, CwndLimited: r.CwndLimited, RTOCollapse: r.RTOCollapse,
		CubicAlpha: r.CubicAlpha, CubicTarget: r.CubicTarget, OLIABestOverflow: r.OLIABestOverflow}
}
