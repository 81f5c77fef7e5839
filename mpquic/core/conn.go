// Package core is the sans-IO QUIC connection of mpquic: QUIC v1 (RFC 9000,
// 9001, 9002) with the multipath extension (draft-ietf-quic-multipath-21).
//
// Nothing in this package reads the clock, starts a goroutine or touches a
// socket. A driver (the UDP endpoint of package mpquic, or the simulator of
// package network/netsim) owns the I/O and the time, and calls a Conn in this
// order, from one goroutine at a time:
//
//	HandleDatagram(now, d)   for every datagram that arrives for the connection
//	HandleTimeout(now)       when NextTimeout() has passed
//	PollDatagram(now, buf)   until it reports nothing more to send
//	PollEvent()              until it reports no event, to wake applications
//	NextTimeout()            to arm the single timer
//
// Application calls (OpenStream, stream reads and writes, Close) may come in
// between; they never block and never send by themselves: the driver polls
// afterwards.
package core

import (
	"crypto/tls"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/mpquic/internal/acks"
	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/internal/streams"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qlog"
	"github.com/mpq/mpq/scheduler"
)

// Datagram is one UDP datagram with its addresses.
type Datagram struct {
	Local, Remote netip.AddrPort
	Data          []byte
}

// connState is the connection's place in its lifecycle (RFC 9000 Section 10).
type connState uint8

const (
	stateHandshake connState = iota
	stateActive              // handshake complete
	stateClosing             // we sent CONNECTION_CLOSE (Section 10.2.1)
	stateDraining            // the peer sent CONNECTION_CLOSE (Section 10.2.2)
	stateClosed              // nothing more to do
)

// Encryption levels and the packet number spaces of the handshake.
type level uint8

const (
	levelInitial level = iota
	levelHandshake
	levelApp
	numLevels
)

func (l level) String() string {
	return [...]string{"initial", "handshake", "1RTT"}[l]
}

func (l level) tls() tls.QUICEncryptionLevel {
	return [...]tls.QUICEncryptionLevel{tls.QUICEncryptionLevelInitial,
		tls.QUICEncryptionLevelHandshake, tls.QUICEncryptionLevelApplication}[l]
}

func (l level) packetType() wire.PacketType {
	return [...]wire.PacketType{wire.PacketInitial, wire.PacketHandshake, wire.Packet1RTT}[l]
}

// pnSpace is one packet number space: what we sent in it and what we
// received (RFC 9000 Section 12.3). The Initial and Handshake spaces belong to
// the connection; every path has an application-data space of its own.
type pnSpace struct {
	sent      *recovery.Space
	recv      *acks.Tracker
	nextPN    uint64
	discarded bool
	// probes is how many PTO probe packets are still to be sent.
	probes int
}

func newPNSpace(maxAckDelay time.Duration) pnSpace {
	return pnSpace{sent: recovery.NewSpace(), recv: acks.NewTracker(maxAckDelay)}
}

// cryptoStream carries the TLS handshake of one encryption level in CRYPTO
// frames (RFC 9000 Section 19.6).
type cryptoStream struct {
	send *streams.SendStream
	recv *streams.RecvStream
	// framing follows the handshake messages received, to reject what
	// is not TLS with the right alert.
	framing hsFramer
}

// Conn is one QUIC connection. It is not safe for concurrent use.
type Conn struct {
	cfg      *Config
	isClient bool
	state    connState
	now      time.Time // time of the call being processed

	tls       *tls.QUICConn
	tlsDone   bool // TLS handshake complete
	confirmed bool // handshake confirmed (RFC 9001 Section 4.1.2)

	// Keys and crypto streams of each level.
	keys   [numLevels - 1]levelKeys // Initial and Handshake
	app    appKeys                  // 1-RTT, with key update
	crypto [numLevels]cryptoStream

	// Initial and Handshake packet number spaces; 1-RTT spaces are per path.
	spaces [numLevels - 1]pnSpace
	// handshakeSpacesGone: both spaces are discarded (spacesOf need not
	// look at them).
	handshakeSpacesGone bool

	// Connection IDs (RFC 9000 Section 5.1).
	ids connIDs
	// Client: the Initial DCID chosen by the client, the Retry token and
	// whether a Retry was accepted.
	origDCID   []byte
	retrySCID  []byte
	token      []byte
	gotRetry   bool
	gotInitial bool // client: a server Initial was processed

	// early is the 0-RTT state (early.go).
	early earlyState

	localParams wire.TransportParameters
	peerParams  wire.TransportParameters
	havePeerTP  bool

	// paths are the open paths (validating or active), closing the
	// abandoned ones kept to acknowledge late packets; mp is the
	// multipath extension's state.
	paths   []*path
	closing []*path
	mp      mpState
	pathBuf []scheduler.PathInfo
	pathSel []uint64
	pathSch scheduler.PathScheduler
	// The optional interfaces of pathSch: pktObs when it observes
	// packets, waker when it asks to be polled at a time, lossPol when it
	// decides what happens to lost data, rtxSizer when it sizes packets
	// of lost data, skipHeld when it may have the core look past a stream
	// it holds back, idleKeeper when it keeps paths idle by a rule.
	pktObs     scheduler.PacketObserver
	waker      scheduler.Waker
	lossPol    scheduler.LossPolicy
	rtxSizer   scheduler.RetransmissionSizer
	skipHeld   scheduler.HeldBackSkipper
	idleKeeper scheduler.IdleKeeper
	// repair is the REPAIR extension's sending state; its policy is
	// pathSch when it is a scheduler.Repairer.
	repair repairState
	// ackCand is scratch space of ackCarrier.
	ackCand []*path
	// copies tracks the packets sent on several paths and counts copies.
	copies copyTracker

	streams streamMap
	strSch  scheduler.StreamScheduler
	ctrl    controlQueue

	// Idle timeout (RFC 9000 Section 10.1).
	idleTimeout       time.Duration
	lastActivity      time.Time
	ackElicitingSince bool // an ack-eliciting packet was sent since the last receipt
	created           time.Time
	// lastReceived is when the last packet of the peer was processed: a
	// server drops a handshake whose client went quiet (quietDeadline).
	lastReceived time.Time
	// evicted is set by the endpoint (any goroutine) when it gave this
	// server connection's handshake slot to a validated client: the
	// connection ends at its next HandleTimeout. quietClosed says that
	// the connection ended because its client went quiet in the
	// handshake.
	evicted     atomic.Bool
	quietClosed bool
	// budget is the connection's account in Config.SendBudget (nil
	// without one); budgetRetry is when writers waiting for it look
	// again. lastStreamAck is when stream data was last acknowledged
	// (Config.SendStallTimeout).
	budget      *budgetConn
	budgetRetry time.Time
	// budgetCheck is when the connection next asks the budget whether
	// it is to be closed to return memory (zero: not due);
	// budgetStalled says that it told the budget it is stalled.
	budgetCheck   time.Time
	budgetStalled bool
	lastStreamAck time.Time
	// slotPrefix is the source prefix whose handshake slots a server
	// connection counts in, slotSeq its rank in admission order (the
	// endpoint's, set at creation).
	slotPrefix netip.Prefix
	slotSeq    uint64

	// Closing and draining.
	closeErr    error // why the connection ended
	closeFrame  *wire.ConnectionCloseFrame
	closeSend   bool      // send CONNECTION_CLOSE at the next poll
	closeUntil  time.Time // end of the closing or draining period
	closeLastTx time.Time

	events    []Event
	eventHead int

	undecryptable []bufferedPacket
	replay        []bufferedPacket

	pathResponses []pathResponse
	// pathEvents are the path events so far (pathfail.go).
	pathEvents []PathEvent
	// dupQueue holds copies of a packet sent on several paths, returned by
	// the next polls.
	dupQueue []queuedDatagram

	// Scratch buffers reused across packets.
	rangeBuf []recovery.Range
	ackedBuf []congestion.AckedPacket
	// ccGroup is the connection's set of path congestion controllers
	// (coupled ones read each other through it).
	ccGroup   *congestion.Group
	ackRanges []wire.AckRange
	// refScratch holds the frame references of the packets of the
	// datagram being built; the scratch frames are those appendAck and
	// appendStreams encode; frameParser parses received payloads.
	refScratch   [3][]recovery.FrameRef
	ackFrame     wire.AckFrame
	pathAckFrame wire.PathAckFrame
	streamFrame  wire.StreamFrame
	frameParser  wire.FrameParser

	// routedODCID is the client-chosen DCID the endpoint also routes to a
	// server connection until it closes.
	routedODCID []byte

	qlog *qlog.Trace
	// hsSteps is updateMetrics' buffer for HyStart++'s steps.
	hsSteps []congestion.HyStartStep
	obs     Observer

	// Handshake-done flags for the endpoint.
	addressValidated bool // server: the client's address is validated
}

type bufferedPacket struct {
	data          []byte
	local, remote netip.AddrPort
	dgSize        int
}

// Advance tells the connection the current time before an application call
// (Close, stream reads and writes) made between driver calls, so that what
// the call does (a closing period, a flow control window update, qlog
// times) is computed at the right time. Time never moves backwards.
func (c *Conn) Advance(now time.Time) {
	if now.After(c.now) {
		c.now = now
	}
}

// IsClient reports whether this is the client end.
func (c *Conn) IsClient() bool { return c.isClient }

// HandshakeComplete reports whether the TLS handshake finished.
func (c *Conn) HandshakeComplete() bool { return c.tlsDone }

// HandshakeConfirmed reports whether the handshake is confirmed
// (RFC 9001 Section 4.1.2).
func (c *Conn) HandshakeConfirmed() bool { return c.confirmed }

// ConnectionState returns the TLS state of the connection.
func (c *Conn) ConnectionState() tls.ConnectionState { return c.tls.ConnectionState() }

// Closed reports whether the connection has ended, and why.
func (c *Conn) Closed() (bool, error) { return c.state == stateClosed, c.closeErr }

// Err returns why the connection is closing or closed, nil while it is open.
func (c *Conn) Err() error {
	if c.state < stateClosing {
		return nil
	}
	return c.closeErr
}

type schedulers struct {
	path   scheduler.PathScheduler
	stream scheduler.StreamScheduler
}

func newSchedulers(cfg *Config) (schedulers, error) {
	p, err := scheduler.NewPath(cfg.PathScheduler, cfg.PathSchedulerOptions)
	if err != nil {
		return schedulers{}, err
	}
	s, err := scheduler.NewStreamScheduler(cfg.StreamScheduler)
	if err != nil {
		return schedulers{}, err
	}
	return schedulers{p, s}, nil
}
