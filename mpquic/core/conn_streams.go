package core

import (
	"errors"
	"time"

	"github.com/mpq/mpq/mpquic/internal/streams"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
	"github.com/mpq/mpq/scheduler"
)

// ErrStreamLimit is returned by OpenStream when the peer's MAX_STREAMS limit
// is reached; EventStreamsAvailable reports when it rises.
var ErrStreamLimit = errors.New("mpquic: peer's stream limit reached")

// ErrHandshakeIncomplete is returned by OpenStream before the peer's
// transport parameters are known.
var ErrHandshakeIncomplete = errors.New("mpquic: handshake not complete")

// stream is the connection's state of one stream.
type stream struct {
	id       uint64
	send     *streams.SendStream // nil for a receive-only stream
	recv     *streams.RecvStream // nil for a send-only stream
	priority bool
	readySeq uint64
	queued   bool // in streamMap.sendQueue
	// The application waits for these; an event is due when they change.
	wantRead, wantWrite bool
	// writeShort: the application's last write did not fit in the send
	// buffer (it has more to write than the buffer takes), until a write
	// that fits, Close, CancelWrite or the peer's STOP_SENDING.
	writeShort bool
	handle     *Stream
	// flowSettled: the unread bytes of an aborted receive side were
	// returned to connection flow control.
	flowSettled bool
	// blockedSignaled is the stream limit at which STREAM_DATA_BLOCKED was
	// last queued, plus one (0: never).
	blockedSignaled uint64
	// pinned: the path scheduler asked for the stream's lost data to go
	// on path pinPath (scheduler.ResendOn); cleared once no lost data
	// waits.
	pinned  bool
	pinPath uint64
	// burst is the data sent since the last REPAIR policy request
	// (repair.go).
	burst repairBurst
}

// dir indexes per-type arrays: 0 bidirectional, 1 unidirectional.
func dir(id uint64) int {
	if streams.IsBidi(id) {
		return 0
	}
	return 1
}

// streamMap holds the streams and the stream-count limits (RFC 9000 Section 4.6).
type streamMap struct {
	m map[uint64]*stream
	// last is the stream get found last (nil if none): the packets of a
	// bulk transfer look one stream up again and again.
	last *stream
	// Streams we open: next index, and the peer's limit.
	nextLocal  [2]uint64
	localLimit [2]uint64
	// Streams the peer opens: how many were opened, our advertised limit,
	// the limit we will advertise next, and how many finished.
	nextPeer      [2]uint64
	peerLimit     [2]uint64
	peerLimitSent [2]uint64
	incoming      []uint64 // opened by the peer, not yet accepted
	sendQueue     []uint64 // streams that may have data to send
	nextReadySeq  uint64
	blockedAt     [2]uint64 // limit at which STREAMS_BLOCKED was queued
	connSend      streams.ConnSendFlow
	connRecv      streams.ConnRecvFlow
	// dataBlockedSignaled is the connection limit at which DATA_BLOCKED
	// was last queued, plus one (0: never).
	dataBlockedSignaled uint64
	infos               []scheduler.StreamInfo
	limitRaised         [2]bool
	// flowBlocked says that the last snapshot (sendableStreams) left out
	// a stream whose new data flow control holds back.
	flowBlocked bool
}

// get returns stream id, nil if there is none.
func (sm *streamMap) get(id uint64) *stream {
	if s := sm.last; s != nil && s.id == id {
		return s
	}
	s := sm.m[id]
	if s != nil {
		sm.last = s
	}
	return s
}

func (c *Conn) initStreams() {
	c.streams.m = map[uint64]*stream{}
	c.streams.last = nil
	c.streams.peerLimit = [2]uint64{uint64(c.cfg.MaxIncomingStreams), uint64(c.cfg.MaxIncomingUniStreams)}
	c.streams.peerLimitSent = c.streams.peerLimit
	c.streams.connRecv = streams.NewConnRecvFlow(c.cfg.InitialConnWindow, c.cfg.MaxConnWindow)
}

// applyPeerStreamLimits installs the peer's transport parameters.
func (c *Conn) applyPeerStreamLimits() {
	c.streams.localLimit = [2]uint64{c.peerParams.InitialMaxStreamsBidi, c.peerParams.InitialMaxStreamsUni}
	c.streams.connSend = streams.NewConnSendFlow(c.peerParams.InitialMaxData)
}

func (c *Conn) isLocal(id uint64) bool { return streams.IsClientInitiated(id) == c.isClient }

// newStream creates the state of a stream, with the windows of RFC 9000
// Section 18.2 for its direction and initiator.
func (c *Conn) newStream(id uint64) *stream {
	s := &stream{id: id}
	local, bidi := c.isLocal(id), streams.IsBidi(id)
	if bidi || local {
		pp := &c.peerParams
		if c.sendingEarly() {
			// A 0-RTT stream: the remembered limits (RFC 9000
			// Section 7.4.1), even if the server's new ones came.
			var rp wire.TransportParameters
			c.early.remembered.Apply(&rp)
			pp = &rp
		}
		var peerMax uint64
		switch {
		case !bidi:
			peerMax = pp.InitialMaxStreamDataUni
		case local:
			peerMax = pp.InitialMaxStreamDataBidiRemote
		default:
			peerMax = pp.InitialMaxStreamDataBidiLocal
		}
		s.send = streams.NewSendStream(id, peerMax, c.cfg.StreamSendBuffer)
		if c.budget != nil {
			s.send.SetAllocator(c.budget)
		}
	}
	if bidi || !local {
		s.recv = streams.NewRecvStream(id, c.cfg.InitialStreamWindow)
		s.recv.SetMaxWindow(c.cfg.MaxStreamWindow)
		if c.cfg.Repair {
			s.recv.EnableRepair()
			s.recv.CountRebuilds(&c.repair.rebuilt)
		}
	}
	s.handle = &Stream{c: c, s: s}
	c.streams.m[id] = s
	return s
}

// OpenStream opens a new stream we initiate (bidirectional or
// unidirectional). It fails with ErrStreamLimit when the peer's limit is
// reached (a STREAMS_BLOCKED frame is then queued).
func (c *Conn) OpenStream(bidi bool) (*Stream, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	if !c.havePeerTP || !c.tlsDone {
		return nil, ErrHandshakeIncomplete
	}
	return c.openStream(bidi)
}

// OpenEarlyStream opens a stream whose data may go in 0-RTT packets: before
// the handshake completes it succeeds when the client has 0-RTT keys
// (CanSendEarly), within the stream and flow control limits remembered
// with the session ticket; afterwards it is OpenStream. Data sent in 0-RTT
// can be replayed (RFC 9001 Section 9.2): open such streams only for
// requests that are safe to repeat. ErrHandshakeIncomplete means no 0-RTT:
// wait for the handshake. If the server rejects the early data, the
// stream's data is sent again in 1-RTT packets (EarlyData reports it).
func (c *Conn) OpenEarlyStream(bidi bool) (*Stream, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	if c.tlsDone {
		return c.OpenStream(bidi)
	}
	if !c.CanSendEarly() {
		return nil, ErrHandshakeIncomplete
	}
	return c.openStream(bidi)
}

func (c *Conn) openStream(bidi bool) (*Stream, error) {
	d := 0
	if !bidi {
		d = 1
	}
	sm := &c.streams
	if sm.nextLocal[d] >= sm.localLimit[d] {
		if sm.blockedAt[d] != sm.localLimit[d]+1 {
			sm.blockedAt[d] = sm.localLimit[d] + 1
			c.ctrl.streamsBlocked[d] = true
		}
		return nil, ErrStreamLimit
	}
	id := streams.StreamID(sm.nextLocal[d], bidi, c.isClient)
	sm.nextLocal[d]++
	return c.newStream(id).handle, nil
}

// AcceptStream returns the next stream the peer opened, or nil.
func (c *Conn) AcceptStream() *Stream {
	sm := &c.streams
	for len(sm.incoming) > 0 {
		id := sm.incoming[0]
		sm.incoming = sm.incoming[1:]
		if s, ok := sm.m[id]; ok {
			return s.handle
		}
	}
	return nil
}

// getStream finds the stream a frame refers to, opening peer streams up to
// it (RFC 9000 Section 3.2). It returns nil for a stream that existed and is
// gone. wantSend/wantRecv name the direction the frame acts on; a frame for
// a direction the stream lacks is a STREAM_STATE_ERROR.
func (c *Conn) getStream(id uint64, frameType uint64, wantSend, wantRecv bool) (*stream, error) {
	local, bidi := c.isLocal(id), streams.IsBidi(id)
	if !bidi && (local && wantRecv || !local && wantSend) {
		return nil, qerr.NewFrame(qerr.StreamStateError, frameType, "stream %d has no such direction", id)
	}
	sm := &c.streams
	d := dir(id)
	idx := streams.Index(id)
	if local {
		if idx >= sm.nextLocal[d] {
			return nil, qerr.NewFrame(qerr.StreamStateError, frameType, "stream %d not opened yet", id)
		}
		return sm.get(id), nil
	}
	if idx >= sm.peerLimit[d] {
		return nil, qerr.NewFrame(qerr.StreamLimitError, frameType, "stream %d beyond our limit %d", id, sm.peerLimit[d])
	}
	if idx < sm.nextPeer[d] {
		return sm.get(id), nil
	}
	for i := sm.nextPeer[d]; i <= idx; i++ {
		nid := streams.StreamID(i, bidi, !c.isClient)
		c.newStream(nid)
		sm.incoming = append(sm.incoming, nid)
		c.emit(Event{Kind: EventStreamIncoming, StreamID: nid})
	}
	sm.nextPeer[d] = idx + 1
	return sm.get(id), nil
}

// queueSend marks a stream as possibly having data to send.
func (c *Conn) queueSend(s *stream) {
	if s.queued || s.send == nil {
		return
	}
	s.queued = true
	s.readySeq = c.streams.nextReadySeq
	c.streams.nextReadySeq++
	c.streams.sendQueue = append(c.streams.sendQueue, s.id)
}

// sendableStreams refreshes the stream scheduler's snapshot: the queued
// streams with data that flow control lets out now.
func (c *Conn) sendableStreams() []scheduler.StreamInfo {
	sm := &c.streams
	infos := sm.infos[:0]
	q := sm.sendQueue[:0]
	credit := sm.connSend.Credit()
	sm.flowBlocked = false
	for _, id := range sm.sendQueue {
		s := sm.get(id)
		if s == nil || s.send == nil {
			continue
		}
		if !s.send.HasPendingData() {
			if _, _, ok := s.send.PendingReset(); !ok {
				s.queued = false
				continue
			}
		}
		q = append(q, id)
		retx := s.send.HasRetransmission()
		if !retx {
			s.pinned = false
		}
		pending := s.send.PendingBytes(credit)
		if !retx && pending == 0 && !s.send.HasPendingFin() {
			c.signalBlocked(s)
			sm.flowBlocked = true
			continue // blocked by flow control
		}
		infos = append(infos, scheduler.StreamInfo{ID: id, Priority: s.priority,
			HasRetransmission: retx, ReadySeq: s.readySeq, Pending: pending})
	}
	sm.sendQueue = q
	sm.infos = infos
	return infos
}

// signalBlocked queues STREAM_DATA_BLOCKED or DATA_BLOCKED, once per limit,
// for a stream whose new data flow control holds back (RFC 9000 Section
// 4.1: a sender SHOULD say so when it is blocked).
func (c *Conn) signalBlocked(s *stream) {
	if lim, ok := s.send.BlockedAt(); ok {
		if s.blockedSignaled != lim+1 {
			s.blockedSignaled = lim + 1
			c.ctrl.streamDataBlocked.add(s.id)
		}
		return
	}
	if lim, ok := c.streams.connSend.BlockedAt(); ok && c.streams.dataBlockedSignaled != lim+1 {
		c.streams.dataBlockedSignaled = lim + 1
		c.ctrl.dataBlocked = true
	}
}

// settleAbortedFlow returns to connection flow control the bytes of a reset
// or stopped receive side that the application will never read, once the
// final size is known (RFC 9000 Section 4.5), so that MAX_DATA keeps
// sliding.
func (c *Conn) settleAbortedFlow(s *stream) {
	if s.flowSettled || s.recv == nil {
		return
	}
	final, ok := s.recv.FinalSize()
	if !ok {
		return
	}
	if !s.recv.Aborted() {
		return
	}
	s.flowSettled = true
	if read := s.recv.ReadOffset(); final > read {
		c.streams.connRecv.OnConsumed(final - read)
		if _, ok := c.streams.connRecv.WindowUpdate(c.now, c.srtt()); ok {
			c.ctrl.maxData = true
		}
	}
}

// handleStreamFrame processes STREAM (RFC 9000 Section 19.8).
func (c *Conn) handleStreamFrame(f *wire.StreamFrame) error {
	s, err := c.getStream(f.StreamID, wire.FrameTypeStream, false, true)
	if err != nil || s == nil {
		return err
	}
	n, err := s.recv.Push(f.Offset, f.Data, f.Fin)
	if err != nil {
		return withFrameType(err, wire.FrameTypeStream)
	}
	if err := c.streams.connRecv.OnReceived(n); err != nil {
		return withFrameType(err, wire.FrameTypeStream)
	}
	c.settleAbortedFlow(s)
	c.notifyReadable(s)
	c.maybeForget(s)
	return nil
}

func withFrameType(err error, ft uint64) error {
	var te *qerr.TransportError
	if errors.As(err, &te) && te.FrameType == 0 {
		te2 := *te
		te2.FrameType = ft
		return &te2
	}
	return err
}

func (c *Conn) notifyReadable(s *stream) {
	if s.wantRead && s.recv.Readable() {
		s.wantRead = false
		c.emit(Event{Kind: EventStreamReadable, StreamID: s.id})
	}
}

func (c *Conn) notifyWritable(s *stream) {
	if s.wantWrite && s.send != nil && s.send.Writable() > 0 {
		s.wantWrite = false
		c.emit(Event{Kind: EventStreamWritable, StreamID: s.id})
	}
}

// handleResetStream processes RESET_STREAM (Section 19.4).
func (c *Conn) handleResetStream(f *wire.ResetStreamFrame) error {
	s, err := c.getStream(f.StreamID, wire.FrameTypeResetStream, false, true)
	if err != nil || s == nil {
		return err
	}
	n, err := s.recv.OnReset(f.ErrorCode, f.FinalSize)
	if err != nil {
		return withFrameType(err, wire.FrameTypeResetStream)
	}
	if err := c.streams.connRecv.OnReceived(n); err != nil {
		return withFrameType(err, wire.FrameTypeResetStream)
	}
	// Data never read still counts as consumed for connection flow control.
	c.settleAbortedFlow(s)
	c.notifyReadable(s)
	c.maybeForget(s)
	return nil
}

// handleStopSending processes STOP_SENDING (Section 19.5).
func (c *Conn) handleStopSending(f *wire.StopSendingFrame) error {
	s, err := c.getStream(f.StreamID, wire.FrameTypeStopSending, true, false)
	if err != nil || s == nil {
		return err
	}
	s.send.OnStopSending(f.ErrorCode)
	c.ctrl.resetStream.add(s.id)
	s.writeShort = false // the writer's data will never be sent
	s.wantWrite = true
	c.notifyWritableForce(s)
	return nil
}

// notifyWritableForce wakes a writer so that it sees an error.
func (c *Conn) notifyWritableForce(s *stream) {
	if s.wantWrite {
		s.wantWrite = false
		c.emit(Event{Kind: EventStreamWritable, StreamID: s.id})
	}
}

// handleMaxStreamData processes MAX_STREAM_DATA (Section 19.10).
func (c *Conn) handleMaxStreamData(f *wire.MaxStreamDataFrame) error {
	s, err := c.getStream(f.StreamID, wire.FrameTypeMaxStreamData, true, false)
	if err != nil || s == nil {
		return err
	}
	s.send.OnMaxStreamData(f.Max)
	c.queueSend(s)
	return nil
}

// handleStreamDataBlocked processes STREAM_DATA_BLOCKED (Section 19.13):
// it only validates the stream; window updates follow reads.
func (c *Conn) handleStreamDataBlocked(f *wire.StreamDataBlockedFrame) error {
	_, err := c.getStream(f.StreamID, wire.FrameTypeStreamDataBlocked, false, true)
	return err
}

// handleMaxStreams processes MAX_STREAMS (Section 19.11).
func (c *Conn) handleMaxStreams(f *wire.MaxStreamsFrame) {
	d := 0
	if !f.Bidi {
		d = 1
	}
	if f.Max > c.streams.localLimit[d] {
		c.streams.localLimit[d] = f.Max
		c.emit(Event{Kind: EventStreamsAvailable})
	}
}

// maybeForget drops a finished stream and, for peer streams, lets the peer
// open another one (MAX_STREAMS).
func (c *Conn) maybeForget(s *stream) {
	if s.send != nil && !s.send.Done() || s.recv != nil && !s.recv.Done() {
		return
	}
	if _, ok := c.streams.m[s.id]; !ok {
		return
	}
	delete(c.streams.m, s.id)
	if c.streams.last == s {
		c.streams.last = nil
	}
	c.ctrl.maxStreamData.remove(s.id)
	c.ctrl.streamDataBlocked.remove(s.id)
	if !c.isLocal(s.id) {
		d := dir(s.id)
		sm := &c.streams
		sm.peerLimit[d]++
		// Advertise when the unannounced credit reaches half the limit
		// configured, so MAX_STREAMS frames stay rare.
		conf := uint64(c.cfg.MaxIncomingStreams)
		if d == 1 {
			conf = uint64(c.cfg.MaxIncomingUniStreams)
		}
		if sm.peerLimit[d]-sm.peerLimitSent[d] >= max(conf/2, 1) {
			c.ctrl.maxStreams[d] = true
		}
	}
}

// afterRead updates flow control after the application consumed data.
func (c *Conn) afterRead(s *stream, n int, now time.Time) {
	if n > 0 {
		c.streams.connRecv.OnConsumed(uint64(n))
	}
	if _, ok := s.recv.WindowUpdate(now, c.srtt()); ok {
		c.ctrl.maxStreamData.add(s.id)
		if c.cfg.ConnWindowFollowsStream {
			c.streams.connRecv.EnsureWindow(s.recv.Window() * 3 / 2)
		}
	}
	if _, ok := c.streams.connRecv.WindowUpdate(now, c.srtt()); ok {
		c.ctrl.maxData = true
	}
	c.maybeForget(s)
}
