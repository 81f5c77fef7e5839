// Package scheduler holds the policies an mpquic connection consults at every
// send opportunity: a path scheduler decides which path carries the next
// packet (or that nothing is sent now, or that the packet goes on several
// paths), and a stream scheduler decides which stream's data fills it.
//
// Schedulers see read-only snapshots and return decisions; they never touch
// the connection. This keeps policy out of the transport core and makes every
// scheduler testable on fabricated paths. The core bypasses the path
// scheduler only for traffic bound to one path by the protocol: PATH_CHALLENGE
// and PATH_RESPONSE probes, PTO probes of a path, and ACK-only packets of a
// path that can carry them.
//
// A path scheduler also decides, through optional interfaces (policy.go),
// what happens to lost data and to data stranded on a path whose probe
// timeout expired (LossPolicy), which path carries the acknowledgements of a
// path that cannot (AckPathChooser), and how large packets of lost data are
// (RetransmissionSizer); without them the core applies the Default*
// decisions.
//
// Implementations register themselves by name; NewPathScheduler and
// NewStreamScheduler build them from configuration.
// docs/guides/schedulers.md in the repository walks through writing one, and Example_rateWRR is a
// complete one run from an experiment.
//
// # Backup paths
//
// Either end may mark a path backup with PATH_STATUS_BACKUP and available
// again with PATH_STATUS_AVAILABLE (draft-ietf-quic-multipath-21 Section
// 3.3; in an experiment file, [[path]] backup = true). PathInfo.Status is
// our own status of the path, PathInfo.PeerStatus the peer's. The draft
// says a backup path should carry no traffic "if another path is available
// and usable"; the rule every built-in scheduler follows, through one
// helper (candidates), reads "usable" as able to deliver, not as having
// congestion window room now (Candidates applies it):
//
//   - a path is backup if either end marked it so (the last frame of each
//     end counts);
//   - a path is usable if it is validated, not found failed by the
//     connection (PathInfo.Failed) and not behind FailedPTOs consecutive
//     probe timeouts;
//   - data goes only on the usable available paths while there is one,
//     even when their windows are full (the data waits for room there);
//     on the usable backup paths when no available path is usable; and on
//     any validated path when nothing is usable (if every path is backup,
//     the draft gives no guidance and all of them are candidates).
//
// A full window is no reason to spill onto a backup path: a backup path
// is often one that costs (a metered cellular link), and the draft asks
// for no traffic on it while the available paths work. Control frames
// follow the same rule as data; acknowledgements and the probes of path
// validation and of failure detection are not scheduled and may use any
// path. Note that the connection marks an available path failed only
// when another path shows that the peer is alive; for that it makes an
// idle path (such as a backup) send one PING when a path has gone silent
// (mpquic/core/pathfail.go).
package scheduler

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// PathStatus is the status a path was given with PATH_STATUS_AVAILABLE or
// PATH_STATUS_BACKUP (draft-ietf-quic-multipath-21 Section 3.3).
type PathStatus uint8

// Path statuses.
const (
	StatusAvailable PathStatus = iota
	StatusBackup
)

func (s PathStatus) String() string {
	if s == StatusBackup {
		return "backup"
	}
	return "available"
}

// PathInfo is a read-only snapshot of one path at a send decision.
type PathInfo struct {
	ID uint64
	// Validated reports that path validation succeeded (always true for the
	// path the handshake ran on).
	Validated bool
	// Status is the local status of the path; PeerStatus what the peer asked.
	Status     PathStatus
	PeerStatus PathStatus
	// RTT state (RFC 9002 Section 5). HasRTTSample is false while SRTT is
	// still the initial guess.
	SRTT, RTTVar, MinRTT, LatestRTT time.Duration
	HasRTTSample                    bool
	// Congestion state, in bytes.
	CWND, BytesInFlight uint64
	// SSThresh is the congestion controller's slow-start threshold in
	// bytes: math.MaxUint64 until the path's first congestion event (or,
	// with HyStart++, its first exit from slow start), so a path is in its
	// first slow start while SSThresh == math.MaxUint64 (see InStartup).
	// BBR has none: always math.MaxUint64 (LeftStartup tells its end).
	SSThresh uint64
	// LeftStartup reports that a controller without a slow-start
	// threshold (BBR) has left its Startup state: it has been in Drain or
	// ProbeBW once.
	LeftStartup bool
	// PacingBudget is how many bytes the pacer lets leave now
	// (math.MaxUint64 when pacing is off).
	PacingBudget uint64
	// MaxPacketSize is the largest datagram the path carries.
	MaxPacketSize int
	// PacketOverhead is how many bytes of a full packet on this path are
	// not stream data: the 1-RTT header, the AEAD tag and a STREAM frame
	// header. A message of n bytes takes about n/(MaxPacketSize -
	// PacketOverhead) packets; see WireBytes.
	PacketOverhead int
	// Counters since the path was opened.
	PacketsSent, PacketsLost uint64
	// BytesAcked counts the bytes of the path's in-flight packets
	// acknowledged since it was opened: its delivered bytes, from which a
	// scheduler can estimate the path's delivery rate.
	BytesAcked uint64
	// ConsecutivePTOs is the current probe-timeout backoff count: how many
	// PTOs expired since the last acknowledgement on the path.
	ConsecutivePTOs int
	// Failed reports that the connection found the path broken: its
	// packets went unacknowledged while newer packets were acknowledged
	// on another path (see the core's path failure detection). What it
	// had in flight was offered to the loss policy (LossPathFailed); the
	// core probes it until it answers and the flag clears. The built-in
	// schedulers put no data on a failed path while another path is
	// usable.
	Failed bool
	// OldestUnackedSent is when the path's oldest ack-eliciting packet
	// above its largest acknowledged one was sent (zero when there is
	// none): the first packet sent after the last one known to have
	// arrived. While the path delivers, its acknowledgement comes about a
	// round trip (plus the peer's acknowledgement delay) after that; a
	// path that went silent leaves it further and further behind, long
	// before the connection declares the path failed (Failed: three
	// smoothed RTTs or two PTOs).
	OldestUnackedSent time.Time
	// MaxAckDelay is the peer's max_ack_delay: how long it may hold an
	// acknowledgement (RFC 9000 Section 18.2).
	MaxAckDelay time.Duration
}

// Silent reports whether path p's oldest unacknowledged packet
// (OldestUnackedSent) was sent longer ago than its acknowledgement should
// take: the smoothed RTT plus max(4 RTT variations, 1 ms) (RFC 9002's
// PTO without its backoff), plus the peer's max_ack_delay while fewer
// than two full packets are in flight (a receiver acknowledges every
// second ack-eliciting packet at once, RFC 9000 Section 13.2.2, and may
// delay the acknowledgement of a lone one). A path that stopped
// delivering in the middle of a transfer is silent about that long after
// its last acknowledgement; the connection declares it failed only at
// three smoothed RTTs or two PTOs (Failed).
func (p *PathInfo) Silent(now time.Time) bool {
	if p.OldestUnackedSent.IsZero() {
		return false
	}
	wait := p.SRTT + max(4*p.RTTVar, time.Millisecond)
	if p.BytesInFlight < 2*uint64(p.MaxPacketSize) {
		wait += p.MaxAckDelay
	}
	return now.Sub(p.OldestUnackedSent) > wait
}

// InStartup reports whether the path is still in its first slow start:
// its congestion controller has had no congestion event and has not left
// slow start (SSThresh unset), and, for BBR, has not left its Startup
// (LeftStartup).
func (p *PathInfo) InStartup() bool { return p.SSThresh == math.MaxUint64 && !p.LeftStartup }

// CwndRoom is how many bytes the congestion window still admits.
func (p *PathInfo) CwndRoom() uint64 {
	if p.BytesInFlight >= p.CWND {
		return 0
	}
	return p.CWND - p.BytesInFlight
}

// CanSend reports whether a packet of size bytes fits the congestion window
// and the pacing budget of the path (RFC 9002 Section 7: bytes_in_flight may
// not exceed the congestion window).
func (p *PathInfo) CanSend(size int) bool {
	return p.Validated && p.BytesInFlight+uint64(size) <= p.CWND && p.PacingBudget >= uint64(size)
}

// Class says what the next packet will mainly carry.
type Class uint8

// Packet classes, in the order the core fills packets.
const (
	// ClassControl is a packet of control frames only (flow control
	// updates, connection IDs, path management).
	ClassControl Class = iota
	// ClassRetransmission is stream data that was declared lost.
	ClassRetransmission
	// ClassPriority is new data of a stream flagged as priority.
	ClassPriority
	// ClassBackground is new data of any other stream.
	ClassBackground
)

func (c Class) String() string {
	switch c {
	case ClassControl:
		return "control"
	case ClassRetransmission:
		return "retransmission"
	case ClassPriority:
		return "priority"
	default:
		return "background"
	}
}

// Work describes the packet the core is about to build, and what else is
// waiting.
type Work struct {
	Class Class
	// StreamID is the stream chosen by the stream scheduler (valid unless
	// Class is ClassControl); Priority is that stream's priority flag
	// (also for retransmissions).
	StreamID uint64
	Priority bool
	// Pending is the stream's bytes that could be sent now: its lost
	// bytes (LostBytes) and the new bytes flow control lets out.
	Pending, LostBytes uint64
	// Pinned reports, for a retransmission, that a LossPolicy asked for
	// the stream's lost data to go on path PinnedPath (ResendOn).
	Pinned     bool
	PinnedPath uint64
	// Size is the expected size of the packet in bytes: the core never
	// builds it larger, nor the copies it sends on other paths.
	Size int
	// Waiting summarises all data that could be sent now.
	Waiting Waiting
}

// Waiting summarises the data waiting to be sent at a send decision.
type Waiting struct {
	// Retransmission reports lost stream data waiting to be sent again.
	Retransmission bool
	// Control reports control frames waiting (flow control updates,
	// connection IDs, path management).
	Control bool
	// PriorityBytes and BackgroundBytes are the stream bytes flow control
	// lets out now, on streams with and without the priority flag.
	PriorityBytes, BackgroundBytes uint64
	// SendWindow is the connection-level flow-control credit left: how
	// many new stream bytes the peer's MAX_DATA still admits (RFC 9000
	// Section 4.1), whatever the streams' own limits.
	SendWindow uint64
	// Repair reports that the connection negotiated the REPAIR extension
	// (both ends offered it), so that the parities a Repairer asks for
	// are sent.
	Repair bool
}

// WireBytes estimates how many bytes on the wire a message of size bytes
// of stream data takes on a path: its packets' overhead included.
func WireBytes(size int, p *PathInfo) int {
	payload := p.MaxPacketSize - p.PacketOverhead
	if payload <= 0 || size <= 0 {
		return max(size, 0)
	}
	packets := (size + payload - 1) / payload
	return size + packets*p.PacketOverhead
}

// PathScheduler picks the path(s) of the next packet.
type PathScheduler interface {
	// Name is the name the scheduler is registered under.
	Name() string
	// Select appends to dst the IDs of the paths that carry the next packet
	// and returns it. An empty result means "send nothing now" (the core
	// asks again at the next send opportunity: an ACK, a timer, new data).
	// More than one ID asks for copies of the packet on each path.
	Select(now time.Time, paths []PathInfo, w Work, dst []uint64) []uint64
}

// Source describes a periodic source of priority messages that the
// application announces to the connection, so that a path scheduler knows
// which messages will be generated and when (the reservation of the CWR
// schedulers): messages of Size bytes at Next, Next+Interval, ...
type Source struct {
	// ID names the source within the connection.
	ID uint64
	// Size is the stream data of one message in bytes.
	Size int
	// Interval is the time between two messages (zero: a single message).
	Interval time.Duration
	// Next is when the next message is generated.
	Next time.Time
}

// Due calls f for the generation time of every message of s in the
// interval (from, to].
func (s *Source) Due(from, to time.Time, f func(at time.Time)) {
	t := s.Next
	if s.Interval > 0 && t.Before(from) {
		// Skip the messages before the window.
		k := from.Sub(t) / s.Interval
		t = t.Add(k * s.Interval)
	}
	for !t.After(to) {
		if t.After(from) {
			f(t)
		}
		if s.Interval <= 0 {
			return
		}
		t = t.Add(s.Interval)
	}
}

// SourceAware is implemented by path schedulers that use announced
// sources. The connection passes every announcement and withdrawal on.
type SourceAware interface {
	// Announce adds or updates a source.
	Announce(s Source)
	// Withdraw removes a source.
	Withdraw(id uint64)
}

// PacketObserver is implemented by path schedulers that keep state per
// packet (such as the bytes a redundant scheduler sent beyond a congestion
// window). The connection reports every in-flight 1-RTT packet.
type PacketObserver interface {
	// OnPacketSent: packet pn of size bytes and class left on path
	// pathID; info is the path's state just before it was sent.
	OnPacketSent(now time.Time, info *PathInfo, pn uint64, size int, class Class)
	// OnPacketAcked and OnPacketLost settle a reported packet.
	OnPacketAcked(now time.Time, pathID, pn uint64)
	OnPacketLost(now time.Time, pathID, pn uint64)
}

// Waker is implemented by path schedulers that hold data back until a
// time (for example until a reserved message is due): the connection
// asks them again at NextWakeup even if nothing else happens.
type Waker interface {
	// NextWakeup returns when Select may decide differently; zero for
	// never.
	NextWakeup(now time.Time) time.Time
}

// Counters is implemented by schedulers that count events per path (for
// example "reservations_missed"); connections expose them with the path
// statistics.
type Counters interface {
	// PathCounters returns the counters of a path; nil if none.
	PathCounters(pathID uint64) map[string]uint64
}

// StreamInfo is a read-only snapshot of one stream that has data to send.
type StreamInfo struct {
	ID uint64
	// Priority is the application's priority flag of the stream.
	Priority bool
	// HasRetransmission reports lost data waiting to be sent again.
	HasRetransmission bool
	// ReadySeq orders streams by the moment their pending data became ready
	// (lower is earlier); FIFO schedulers sort by it.
	ReadySeq uint64
	// Pending is the number of bytes the stream could send now.
	Pending uint64
}

// StreamScheduler picks the stream whose data fills the next packet.
type StreamScheduler interface {
	// Name is the name the scheduler is registered under.
	Name() string
	// Next returns the index in streams (never empty) of the stream to
	// serve next.
	Next(now time.Time, streams []StreamInfo) int
	// MaxStreamFrames is how many STREAM frames one packet may carry
	// (0: as many as fit).
	MaxStreamFrames() int
}

// The schedulers a connection uses unless told otherwise: the default of
// MP-QUIC and of MPTCP for paths, and quic-go's and MP-QUIC's for streams.
const (
	DefaultPath   = "lowrtt"
	DefaultStream = "round-robin"
)

// PathFactory builds a path scheduler.
type PathFactory func() PathScheduler

// StreamFactory builds a stream scheduler.
type StreamFactory func() StreamScheduler

var (
	mu             sync.RWMutex
	pathFactories  = map[string]PathFactory{}
	streamFactorys = map[string]StreamFactory{}
)

// RegisterPath makes a path scheduler available under name.
func RegisterPath(name string, f PathFactory) {
	mu.Lock()
	defer mu.Unlock()
	pathFactories[name] = f
}

// RegisterStream makes a stream scheduler available under name.
func RegisterStream(name string, f StreamFactory) {
	mu.Lock()
	defer mu.Unlock()
	streamFactorys[name] = f
}

// NewPathScheduler builds the path scheduler registered under name.
func NewPathScheduler(name string) (PathScheduler, error) {
	mu.RLock()
	f, ok := pathFactories[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown path scheduler %q (known: %s)", name, strings.Join(PathSchedulers(), ", "))
	}
	return f(), nil
}

// CheckStream reports whether a stream scheduler is registered under name.
func CheckStream(name string) error {
	mu.RLock()
	_, ok := streamFactorys[name]
	mu.RUnlock()
	if !ok {
		return fmt.Errorf("unknown stream scheduler %q (known: %s)", name, strings.Join(StreamSchedulers(), ", "))
	}
	return nil
}

// NewStreamScheduler builds the stream scheduler registered under name.
func NewStreamScheduler(name string) (StreamScheduler, error) {
	mu.RLock()
	f, ok := streamFactorys[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown stream scheduler %q (known: %s)", name, strings.Join(StreamSchedulers(), ", "))
	}
	return f(), nil
}

// PathSchedulers lists the registered path schedulers, sorted.
func PathSchedulers() []string {
	mu.RLock()
	defer mu.RUnlock()
	return sortedKeys(pathFactories)
}

// StreamSchedulers lists the registered stream schedulers, sorted.
func StreamSchedulers() []string {
	mu.RLock()
	defer mu.RUnlock()
	return sortedKeys(streamFactorys)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// FailedPTOs is the number of consecutive probe timeouts after which the
// built-in schedulers consider a path failed and fall back to backup paths.
const FailedPTOs = 2

// usable reports whether a path may carry data at all: validated, not
// found broken by the connection (Failed) and not failed by its own probe
// timeouts.
func usable(p *PathInfo) bool { return p.Validated && !p.Failed && p.ConsecutivePTOs < FailedPTOs }

// effectiveStatus is backup if either end asked for backup.
func effectiveStatus(p *PathInfo) PathStatus {
	if p.Status == StatusBackup || p.PeerStatus == StatusBackup {
		return StatusBackup
	}
	return StatusAvailable
}

// Candidates appends to dst[:0] the indices in paths of the paths data may
// use now, by the rule of "Backup paths" in the package documentation, and
// returns it: the usable available paths, else the usable backup paths,
// else every validated path. Every built-in scheduler starts from it; a
// scheduler of your own that does too honours backup and failed paths.
func Candidates(paths []PathInfo, dst []int) []int { return candidates(paths, dst) }

// candidates returns the indices of the paths data may use now: the usable
// available paths, or the usable backup paths if there is no usable
// available path (draft-ietf-quic-multipath-21 Section 3.3: backup paths
// carry data only when no available path can). If nothing is usable, every
// validated path is a candidate so that data can still make progress.
func candidates(paths []PathInfo, dst []int) []int {
	dst = dst[:0]
	for _, want := range []PathStatus{StatusAvailable, StatusBackup} {
		for i := range paths {
			if usable(&paths[i]) && effectiveStatus(&paths[i]) == want {
				dst = append(dst, i)
			}
		}
		if len(dst) > 0 {
			return dst
		}
	}
	for i := range paths {
		if paths[i].Validated {
			dst = append(dst, i)
		}
	}
	return dst
}

// lowestRTT returns the index of the candidate path with the lowest
// smoothed RTT among those accepted by ok; -1 if none. Ties go to the lower
// index.
func lowestRTT(paths []PathInfo, cand []int, ok func(*PathInfo) bool) int {
	best := -1
	for _, i := range cand {
		p := &paths[i]
		if !ok(p) {
			continue
		}
		if best < 0 || p.SRTT < paths[best].SRTT {
			best = i
		}
	}
	return best
}
