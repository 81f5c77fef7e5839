package core

import (
	"errors"
	"io"
	"net/netip"
	"time"

	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
	"github.com/mpq/mpq/scheduler"
)

// Errors of path management.
var (
	// ErrNoMultipath: the peer did not offer the multipath extension (or
	// we disabled it), or the handshake is not complete yet.
	ErrNoMultipath = errors.New("mpquic: multipath not negotiated")
	// ErrPathsBlocked: every path ID the peer allows is in use or was
	// used; a PATHS_BLOCKED frame tells the peer.
	ErrPathsBlocked = errors.New("mpquic: peer's path ID limit reached")
	// ErrNoPathCIDs: the peer has not given connection IDs for a free path
	// ID yet; EventPathsAvailable reports when it does.
	ErrNoPathCIDs = errors.New("mpquic: no connection ID from the peer for a new path")
	// ErrServerPath: only clients open paths (draft-ietf-quic-multipath-21
	// Section 3).
	ErrServerPath = errors.New("mpquic: only clients open paths")
	// ErrUnknownPath: no open path has this ID.
	ErrUnknownPath = errors.New("mpquic: unknown path")
	// ErrPathExists: a path with the same addresses is open.
	ErrPathExists = errors.New("mpquic: a path with these addresses exists")
)

// MaxPathIDLimit is the largest path ID the extension allows (the path ID
// is 32 bits of the AEAD nonce).
const MaxPathIDLimit = 1<<32 - 1

// pathState is a path's place in its lifecycle.
type pathState uint8

const (
	pathValidating pathState = iota // PATH_CHALLENGE outstanding
	pathActive                      // validated (or the handshake path)
	pathClosing                     // abandoned: receive only, until removeAt
)

func (s pathState) String() string {
	return [...]string{"validating", "active", "closing"}[s]
}

// mpState is the connection's multipath extension state.
type mpState struct {
	offered bool // we sent initial_max_path_id
	enabled bool // both did and the handshake completed
	// localMax is the largest path ID we allow (initial_max_path_id, then
	// MAX_PATH_ID); localMaxSent the value last sent in MAX_PATH_ID.
	localMax, localMaxSent uint64
	// peerMax is the largest path ID the peer allows; peerInitial what its
	// transport parameter said (MAX_PATH_ID may not go below it).
	peerMax, peerInitial uint64
	// abandoned lists path IDs closed for good: never reused (the path ID
	// is part of the nonce).
	abandoned map[uint64]bool
	// used lists path IDs that had a path.
	used map[uint64]bool
	// peerStatus holds status frames for paths that are not open (yet).
	peerStatus map[uint64]statusRecord
	// pathsBlockedSent is the peer limit at which PATHS_BLOCKED was
	// queued, plus one.
	pathsBlockedSent uint64
}

type statusRecord struct {
	seq    uint64
	status scheduler.PathStatus
}

func (m *mpState) init() {
	m.abandoned = map[uint64]bool{}
	m.used = map[uint64]bool{}
	m.peerStatus = map[uint64]statusRecord{}
}

func (m *mpState) retired(id uint64) bool { return m.abandoned[id] }

// checkPathID validates the path ID of a received multipath frame
// (draft-ietf-quic-multipath-21 Section 7): multipath must be on and the ID
// within what we allow.
func (m *mpState) checkPathID(id, ft uint64) error {
	if !m.enabled {
		return qerr.NewFrame(qerr.ProtocolViolation, ft, "multipath frame without negotiated multipath")
	}
	if id > m.localMax {
		return qerr.NewFrame(qerr.ProtocolViolation, ft, "path ID %d above our limit %d", id, m.localMax)
	}
	return nil
}

// enableMultipath decides, when the handshake completes, whether the
// extension is on: both ends advertised initial_max_path_id.
func (c *Conn) enableMultipath() {
	if !c.mp.offered || !c.peerParams.HasInitialMaxPathID {
		return
	}
	c.mp.enabled = true
	c.mp.peerMax = c.peerParams.InitialMaxPathID
	c.mp.peerInitial = c.peerParams.InitialMaxPathID
	c.mp.used[0] = true
}

// MultipathEnabled reports whether the multipath extension was negotiated.
func (c *Conn) MultipathEnabled() bool { return c.mp.enabled }

// pathByID finds an open or closing path.
func (c *Conn) pathByID(id uint64) *path {
	for _, p := range c.paths {
		if p.id == id {
			return p
		}
	}
	for _, p := range c.closing {
		if p.id == id {
			return p
		}
	}
	return nil
}

// openPath finds a path that is not closing.
func (c *Conn) openPath(id uint64) *path {
	for _, p := range c.paths {
		if p.id == id {
			return p
		}
	}
	return nil
}

// AddPath opens a new path from local to remote (client only): it picks the
// lowest unused path ID for which both ends issued connection IDs and
// starts path validation with PATH_CHALLENGE (RFC 9000 Section 8.2,
// draft-ietf-quic-multipath-21 Section 3.1). The path carries data once
// EventPathValidated reports it; EventPathFailed reports a failed
// validation (the path is then abandoned).
func (c *Conn) AddPath(local, remote netip.AddrPort) (uint64, error) {
	if err := c.Err(); err != nil {
		return 0, err
	}
	if !c.isClient {
		return 0, ErrServerPath
	}
	if !c.mp.enabled || !c.tlsDone {
		return 0, ErrNoMultipath
	}
	for _, p := range c.paths {
		if p.local == local && p.remote == remote {
			return 0, ErrPathExists
		}
	}
	limit := min(c.mp.localMax, c.mp.peerMax)
	free := false
	for id := uint64(1); id <= limit; id++ {
		if c.mp.used[id] || c.mp.abandoned[id] {
			continue
		}
		free = true
		if !c.ids.hasUnusedRemote(id) || c.ids.set(id).activeLocal() == 0 {
			continue
		}
		return id, c.startPath(id, local, remote)
	}
	if free {
		// Ask for connection IDs of the lowest free path ID.
		for id := uint64(1); id <= limit; id++ {
			if !c.mp.used[id] && !c.mp.abandoned[id] && !c.ids.hasUnusedRemote(id) {
				c.ctrl.pathCIDsBlocked.add(id)
				break
			}
		}
		return 0, ErrNoPathCIDs
	}
	if c.mp.pathsBlockedSent != c.mp.peerMax+1 {
		c.mp.pathsBlockedSent = c.mp.peerMax + 1
		c.ctrl.pathsBlocked = true
	}
	return 0, ErrPathsBlocked
}

// startPath creates a path and queues its PATH_CHALLENGE.
func (c *Conn) startPath(id uint64, local, remote netip.AddrPort) error {
	p, err := c.newPath(id, local, remote)
	if err != nil {
		return err
	}
	c.mp.used[id] = true
	if r, ok := c.mp.peerStatus[id]; ok {
		p.peerStatus, p.peerStatusSeq, p.peerStatusKnown = r.status, r.seq, true
		delete(c.mp.peerStatus, id)
	}
	c.paths = append(c.paths, p)
	return c.challenge(p)
}

// challenge starts (or restarts) the validation of a path.
func (c *Conn) challenge(p *path) error {
	if _, err := io.ReadFull(c.cfg.Rand, p.challengeData[:]); err != nil {
		return qerr.New(qerr.InternalError, "random: %v", err)
	}
	p.state = pathValidating
	p.validated = false
	p.challengeSend = true
	p.challengeTries = 0
	p.challengeNext = time.Time{}
	// RFC 9000 Section 8.2.4: give up after max(3 PTO, 6 kInitialRtt).
	p.challengeDeadline = c.now.Add(max(3*p.rtt.PTO(0), 6*recovery.DefaultInitialRTT))
	return nil
}

// onPathChallengeSent arms the retransmission of a path's challenge.
func (c *Conn) onPathChallengeSent(now time.Time, p *path) {
	p.challengeSend = false
	p.challengeTries++
	p.challengeNext = now.Add(p.rtt.PTO(0) << min(p.challengeTries-1, 8))
}

// handlePathResponse completes the validation of the path whose challenge
// the response echoes, whichever path carried it (RFC 9000 Section 8.2.2).
func (c *Conn) handlePathResponse(now time.Time, data [8]byte) {
	for _, p := range c.paths {
		if c.migrationValidated(now, p, data) {
			return
		}
		if p.state == pathValidating && p.challengeTries > 0 && p.challengeData == data {
			p.state = pathActive
			p.validated = true
			p.challengeSend = false
			p.challengeNext, p.challengeDeadline = time.Time{}, time.Time{}
			c.qlogPathState(now, p)
			c.emit(Event{Kind: EventPathValidated, PathID: p.id})
			return
		}
	}
}

// acceptPath creates the server side of a path the client opened with a
// packet on a new path ID; the server validates the client's address in
// turn before sending data on it (draft-ietf-quic-multipath-21 Section 3.1).
func (c *Conn) acceptPath(id uint64, local, remote netip.AddrPort) (*path, error) {
	if c.isClient || !c.mp.enabled || c.mp.used[id] || c.mp.abandoned[id] || id > c.mp.localMax {
		return nil, nil
	}
	p, err := c.newPath(id, local, remote)
	if err != nil {
		return nil, err
	}
	c.mp.used[id] = true
	if r, ok := c.mp.peerStatus[id]; ok {
		p.peerStatus, p.peerStatusSeq, p.peerStatusKnown = r.status, r.seq, true
		delete(c.mp.peerStatus, id)
	}
	c.paths = append(c.paths, p)
	if err := c.challenge(p); err != nil {
		return nil, err
	}
	c.emit(Event{Kind: EventPathNew, PathID: id})
	return p, nil
}

// AbandonPath closes a path with PATH_ABANDON (draft-ietf-quic-multipath-21
// Section 3.4): nothing more is sent on it, what it carried unacknowledged
// is sent again on the other paths, and its state lingers three PTOs to
// acknowledge late packets. code is a path error code (qerr.NoError,
// qerr.ApplicationAbandonPath, ...).
func (c *Conn) AbandonPath(id uint64, code uint64) error {
	if err := c.Err(); err != nil {
		return err
	}
	if !c.mp.enabled {
		return ErrNoMultipath
	}
	p := c.openPath(id)
	if p == nil {
		return ErrUnknownPath
	}
	c.abandonPath(p, code, false)
	return nil
}

// abandonPath moves a path to the closing state, sending PATH_ABANDON
// unless it was sent already.
func (c *Conn) abandonPath(p *path, code uint64, received bool) {
	if p.state == pathClosing {
		if received {
			p.abandonRecvd = true
		}
		return
	}
	failed := p.state == pathValidating
	p.state = pathClosing
	p.abandonRecvd = received
	p.abandonCode = code
	c.mp.abandoned[p.id] = true
	c.ctrl.pathAbandon.add(p.id)
	c.retirePathRemote(p.id)
	// Lost or not, what is outstanding goes again elsewhere.
	p.app.sent.DeclareAllLost(func(sp *recovery.SentPacket) {
		c.onFramesLost(p, levelApp, sp.Frames)
		c.copies.settle(pktKey{p.id, sp.Number})
		if c.pktObs != nil && sp.InFlight {
			c.pktObs.OnPacketLost(c.now, p.id, sp.Number)
		}
	})
	p.app.probes = 0
	p.removeAt = c.now.Add(3 * c.maxPTO())
	for i, q := range c.paths {
		if q == p {
			c.paths = append(c.paths[:i], c.paths[i+1:]...)
			break
		}
	}
	// Coupled controllers stop counting the path.
	c.ccGroup.Leave(p.cc)
	c.closing = append(c.closing, p)
	// Answers to the peer's challenges on this path can no longer go out.
	out := c.pathResponses[:0]
	for _, r := range c.pathResponses {
		if r.pathID != p.id {
			out = append(out, r)
		}
	}
	c.pathResponses = out
	c.qlogPathState(c.now, p)
	kind := EventPathClosed
	if failed {
		kind = EventPathFailed
	}
	c.emit(Event{Kind: kind, PathID: p.id})
	if len(c.paths) == 0 {
		c.closeWithError(c.now, qerr.New(qerr.NoViablePath, "every path was abandoned"))
	}
}

// removeClosedPaths forgets abandoned paths whose lingering time is over,
// and lets the peer use one more path ID for each (MAX_PATH_ID).
func (c *Conn) removeClosedPaths(now time.Time) {
	out := c.closing[:0]
	for _, p := range c.closing {
		if now.Before(p.removeAt) {
			out = append(out, p)
			continue
		}
		c.retirePathLocal(p.id)
		if c.mp.localMax < MaxPathIDLimit && c.cfg.MaxPathID > 0 {
			c.mp.localMax++
			c.ctrl.maxPathID = true
			if err := c.issueConnIDs(); err != nil {
				c.closeWithError(now, err)
			}
		}
	}
	clear(c.closing[len(out):])
	c.closing = out
}

// SetPathStatus tells the peer whether a path should only be used as a
// backup (PATH_STATUS_BACKUP) or is available (PATH_STATUS_AVAILABLE),
// draft-ietf-quic-multipath-21 Section 3.3. The local status also steers
// our own schedulers.
func (c *Conn) SetPathStatus(id uint64, backup bool) error {
	if !c.mp.enabled {
		return ErrNoMultipath
	}
	p := c.openPath(id)
	if p == nil {
		return ErrUnknownPath
	}
	st := scheduler.StatusAvailable
	if backup {
		st = scheduler.StatusBackup
	}
	c.sendStatus(p, st)
	p.failoverBackup = false // the application's word is the last
	return nil
}

// sendStatus sets our status of p and queues the PATH_STATUS frame.
func (c *Conn) sendStatus(p *path, st scheduler.PathStatus) {
	p.status = st
	p.statusSeq++
	c.ctrl.pathStatus.add(p.id)
}

// handleMultipathFrame processes the frames of draft-ietf-quic-multipath-21
// other than PATH_ACK and the connection ID frames.
func (c *Conn) handleMultipathFrame(now time.Time, f wire.Frame) error {
	switch f := f.(type) {
	case *wire.PathAbandonFrame:
		if err := c.mp.checkPathID(f.PathID, f.Type()); err != nil {
			return err
		}
		if p := c.pathByID(f.PathID); p != nil {
			c.abandonPath(p, f.ErrorCode, true)
			return nil
		}
		if !c.mp.abandoned[f.PathID] {
			// Abandoned before use: answer and never use the ID.
			c.mp.abandoned[f.PathID] = true
			c.ctrl.pathAbandon.add(f.PathID)
			c.retirePathRemote(f.PathID)
		}
	case *wire.PathStatusFrame:
		if err := c.mp.checkPathID(f.PathID, f.Type()); err != nil {
			return err
		}
		st := scheduler.StatusAvailable
		if f.Backup {
			st = scheduler.StatusBackup
		}
		if p := c.pathByID(f.PathID); p != nil {
			if !p.peerStatusKnown || f.StatusSeq > p.peerStatusSeq {
				p.peerStatus, p.peerStatusSeq, p.peerStatusKnown = st, f.StatusSeq, true
			}
		} else if r, ok := c.mp.peerStatus[f.PathID]; !ok || f.StatusSeq > r.seq {
			c.mp.peerStatus[f.PathID] = statusRecord{seq: f.StatusSeq, status: st}
		}
	case *wire.MaxPathIDFrame:
		if !c.mp.enabled {
			return qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "multipath frame without negotiated multipath")
		}
		if f.MaxPathID > MaxPathIDLimit || f.MaxPathID < c.mp.peerInitial {
			return qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "MAX_PATH_ID %d outside [%d, 2^32-1]", f.MaxPathID, c.mp.peerInitial)
		}
		if f.MaxPathID > c.mp.peerMax {
			c.mp.peerMax = f.MaxPathID
			if err := c.issueConnIDs(); err != nil {
				return err
			}
			c.emit(Event{Kind: EventPathsAvailable})
		}
	case *wire.PathsBlockedFrame:
		if err := c.mp.checkPathID(f.MaxPathID, f.Type()); err != nil {
			return err
		}
		// Informational: our limit follows our configuration.
	case *wire.PathCIDsBlockedFrame:
		if err := c.mp.checkPathID(f.PathID, f.Type()); err != nil {
			return err
		}
		s := c.ids.sets[f.PathID]
		next := uint64(0)
		if s != nil {
			next = s.nextLocal
		}
		if f.NextSeq > next {
			return qerr.NewFrame(qerr.ProtocolViolation, f.Type(), "PATH_CIDS_BLOCKED expects sequence number %d, we issued up to %d", f.NextSeq, next)
		}
		if !c.mp.abandoned[f.PathID] {
			return c.issueConnIDs()
		}
	}
	return nil
}

// onRemoteCIDs runs when the peer gave connection IDs for a path ID.
func (c *Conn) onRemoteCIDs(pathID uint64) {
	c.ctrl.pathCIDsBlocked.remove(pathID)
	if c.isClient && pathID != 0 && c.mp.enabled && !c.mp.used[pathID] {
		c.emit(Event{Kind: EventPathsAvailable})
	}
}

// pathTimers runs the path validation and path removal timers.
func (c *Conn) pathTimers(now time.Time) {
	for i := 0; i < len(c.paths); i++ {
		p := c.paths[i]
		c.migrationTimers(now, p)
		if p.state != pathValidating {
			continue
		}
		if !p.challengeDeadline.IsZero() && !now.Before(p.challengeDeadline) {
			if p.id == 0 {
				continue
			}
			c.abandonPath(p, uint64(qerr.PathUnstableOrPoor), false)
			i--
			continue
		}
		if !p.challengeNext.IsZero() && !now.Before(p.challengeNext) {
			p.challengeSend = true
			p.challengeNext = time.Time{}
		}
	}
	c.removeClosedPaths(now)
}

// nextPathTimer is the earliest path validation or removal deadline.
func (c *Conn) nextPathTimer() time.Time {
	var t time.Time
	earliest := func(x time.Time) {
		if !x.IsZero() && (t.IsZero() || x.Before(t)) {
			t = x
		}
	}
	for _, p := range c.paths {
		if p.state == pathValidating || p.migration.active {
			earliest(p.challengeDeadline)
			earliest(p.challengeNext)
		}
	}
	for _, p := range c.closing {
		earliest(p.removeAt)
	}
	return t
}

// maxPTO is the largest PTO of the paths, which multipath uses for the
// closing period and key updates (draft-ietf-quic-multipath-21 Sections
// 2.4 and 2.5).
func (c *Conn) maxPTO() time.Duration {
	var d time.Duration
	for _, p := range c.paths {
		d = max(d, p.rtt.PTO(c.peerMaxAckDelay()))
	}
	for _, p := range c.closing {
		d = max(d, p.rtt.PTO(c.peerMaxAckDelay()))
	}
	if d == 0 {
		r := recovery.NewRTT(c.cfg.InitialRTT)
		d = r.PTO(c.peerMaxAckDelay())
	}
	return d
}

// primary is the path used for what belongs to no path in particular
// (the closing CONNECTION_CLOSE, window auto-tuning): the first open path.
func (c *Conn) primary() *path {
	if len(c.paths) > 0 {
		return c.paths[0]
	}
	if len(c.closing) > 0 {
		return c.closing[0]
	}
	return nil
}

// AnnounceSource tells the path scheduler about a periodic source of
// priority messages (see scheduler.Source): schedulers that reserve
// congestion window for them (cwr, cwr-red) use it; others ignore it.
// Announcing an existing ID updates it.
func (c *Conn) AnnounceSource(s scheduler.Source) {
	if sa, ok := c.pathSch.(scheduler.SourceAware); ok {
		sa.Announce(s)
	}
}

// WithdrawSource removes an announced source.
func (c *Conn) WithdrawSource(id uint64) {
	if sa, ok := c.pathSch.(scheduler.SourceAware); ok {
		sa.Withdraw(id)
	}
}

// PathSchedulerName and StreamSchedulerName name the connection's
// schedulers.
func (c *Conn) PathSchedulerName() string   { return c.pathSch.Name() }
func (c *Conn) StreamSchedulerName() string { return c.strSch.Name() }

// srtt is the smoothed RTT that flow control auto-tuning uses: the largest
// of the open paths', as data may take the slowest.
func (c *Conn) srtt() time.Duration {
	var d time.Duration
	for _, p := range c.paths {
		d = max(d, p.rtt.Smoothed())
	}
	return d
}

func (c *Conn) qlogPathState(now time.Time, p *path) {
	if c.qlog != nil {
		c.qlog.PathStateUpdated(now, p.id, p.state.String(), p.local, p.remote)
	}
}
