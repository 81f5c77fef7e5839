package core

import (
	"net/netip"
	"slices"
	"time"

	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/recovery"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qlog"
	"github.com/mpq/mpq/scheduler"
)

// minInitialDatagram is the size datagrams carrying ack-eliciting Initial
// packets are padded to (RFC 9000 Section 14.1).
const minInitialDatagram = 1200

// aeadTag is the size of the AEAD authentication tag of every QUIC suite.
const aeadTag = 16

// sendMode says what a datagram may carry.
type sendMode uint8

const (
	// modeNormal: everything, within the congestion window.
	modeNormal sendMode = iota
	// modeAckOnly: only ACK frames (and path responses): not congestion
	// controlled.
	modeAckOnly
	// modeProbe: a PTO probe, exempt from the congestion window, which must
	// be ack-eliciting (RFC 9002 Section 6.2.4).
	modeProbe
	// modePathProbe: the frames bound to one path (PATH_CHALLENGE,
	// PATH_RESPONSE) with ACKs, padded to 1200 bytes (RFC 9000 Section
	// 8.2), outside the schedulers.
	modePathProbe
)

// pktBuild is one packet being assembled inside a datagram.
type pktBuild struct {
	l level
	// early: a 0-RTT packet (l is levelApp: it shares path 0's
	// application packet number space).
	early                  bool
	sp                     *pnSpace
	pn                     uint64
	start, pnOff, pnLen    int
	lengthOff, payloadOff  int
	ackEliciting, inFlight bool
	// pathBound: the packet carries PATH_CHALLENGE or PATH_RESPONSE,
	// which belong to its path and are never duplicated elsewhere.
	pathBound bool
	refs      []recovery.FrameRef
	frames    []qlog.Frame
}

// buildParams are the decisions one datagram is built with. They travel
// with the datagram through the build functions (dgram.bp) and never stay
// on the Conn.
type buildParams struct {
	mode sendMode
	// class is what the path scheduler was told the 1-RTT packet carries
	// (ClassControl for packets built outside the schedulers).
	class scheduler.Class
	// sizeCap bounds the datagram, and every copy of its 1-RTT packet, to
	// the size the path scheduler approved; 0: only the path's limits.
	sizeCap int
	// noStreams keeps stream data out: the scheduler held it back and
	// the packet carries control frames alone.
	noStreams bool
	// firstStream is the stream the stream scheduler chose for the packet
	// (when hasFirst).
	firstStream uint64
	hasFirst    bool
	// dups are the further paths that get a copy of the 1-RTT packet (a
	// path scheduler's redundancy decision).
	dups []uint64
	// copyOf, for a copy, names the original packet.
	copyOf *pktKey
	// tuple, if set, sends the datagram to other addresses than its
	// path's: a PATH_RESPONSE to where its challenge came from, alone
	// with ACKs.
	tuple *pathResponse
	// repair: the datagram carries the first queued parity (repair.go).
	repair bool
}

// dgram assembles one datagram of up to limit bytes.
type dgram struct {
	b     []byte
	limit int
	// path is the path the datagram is built for.
	path *path
	// payloadCap, if positive, bounds the payload of the 1-RTT packet so
	// that the packet fits every path it is copied to (see copyRoom).
	payloadCap int
	// bp is held by value, so that building a datagram allocates
	// nothing for it.
	bp   buildParams
	pkts [3]pktBuild
	n    int
}

// PollDatagram assembles the next datagram to send into buf (which should
// have a capacity of at least the maximum packet size; a smaller one is
// replaced) and reports whether there is one. Call it until it returns false.
func (c *Conn) PollDatagram(now time.Time, buf []byte) (Datagram, bool) {
	c.now = now
	switch c.state {
	case stateClosed, stateDraining:
		return Datagram{}, false
	case stateClosing:
		if !c.closeSend {
			return Datagram{}, false
		}
		c.closeSend = false
		c.closeLastTx = now
		p := c.primary()
		if p == nil {
			return Datagram{}, false
		}
		return c.buildClose(now, p, buf)
	}
	// 0. Copies of a packet the path scheduler sent on several paths.
	if len(c.dupQueue) > 0 {
		q := c.dupQueue[0]
		c.dupQueue[0] = queuedDatagram{}
		c.dupQueue = c.dupQueue[1:]
		return Datagram{Local: q.local, Remote: q.remote, Data: append(buf[:0], q.data...)}, true
	}
	// 1. PTO probes, bound to the path whose timer fired.
	for _, p := range c.paths {
		if c.hasProbe(p) {
			if d, ok := c.buildOn(now, p, buf, &buildParams{mode: modeProbe}); ok {
				return d, true
			}
		}
	}
	// 2. Path validation: PATH_CHALLENGE and PATH_RESPONSE on their path,
	// and responses to challenges that came from other addresses.
	for _, p := range c.paths {
		if p.challengeSend || c.hasResponseFor(p) {
			if d, ok := c.buildOn(now, p, buf, &buildParams{mode: modePathProbe}); ok {
				return d, true
			}
		}
		for i := range c.pathResponses {
			r := c.pathResponses[i]
			if r.pathID != p.id || r.onTuple(p) {
				continue
			}
			if d, ok := c.buildOn(now, p, buf, &buildParams{mode: modePathProbe, tuple: &r}); ok {
				d.Local, d.Remote = r.local, r.remote
				return d, true
			}
		}
	}
	// 3. The handshake, and the client's 0-RTT data, on path 0, outside
	// the schedulers.
	if p0 := c.openPath(0); p0 != nil && (c.handshakePending() || c.earlyPending()) {
		mode := modeNormal
		if !c.cwndAllows(now, p0) {
			mode = modeAckOnly
		}
		if d, ok := c.buildOn(now, p0, buf, &buildParams{mode: mode}); ok {
			return d, true
		}
	}
	// 4. Application data and control frames, where the schedulers say.
	if c.app.haveSeal && (c.tlsDone || !c.isClient) {
		if d, ok := c.pollRepair(now, buf); ok {
			return d, true
		}
		if d, ok := c.pollScheduled(now, buf); ok {
			return d, true
		}
	}
	// 5. ACK-only packets for spaces whose ACK is due; those of abandoned
	// paths go on another path.
	for _, p := range c.paths {
		if c.ackDue(now, p) {
			if d, ok := c.buildOn(now, p, buf, &buildParams{mode: modeAckOnly}); ok {
				return d, true
			}
		}
	}
	if c.foreignAckDue(now) {
		if p := c.ackCarrier(now); p != nil {
			if d, ok := c.buildOn(now, p, buf, &buildParams{mode: modeAckOnly}); ok {
				return d, true
			}
		}
	}
	c.noteAppLimited(now)
	return Datagram{}, false
}

// noteAppLimited tells the controllers that want to know
// (congestion.AppLimitedObserver) that their path could send a full-size
// packet now (window and pacer) and nothing more will be sent on it.
// Called when a poll finds nothing to send, once the handshake is done.
// Following the delivery rate draft's first condition (less than a
// packet of unsent data), that is every such path when the connection
// has no stream data to send and the application is not waiting for
// room in a send buffer. Data that the peer's flow control holds back
// does not count as none (Linux's receive-window-limited state is not
// application limited either), nor does a full send buffer: the
// application has data that the stack's bounded buffer does not take
// yet (Linux would count it, but grows its send buffer to twice the
// window so that it rarely happens; ours is bounded, and counting it
// kept a 100 ms path's bbr in Startup with a standing queue). While
// stream data waits, only the paths that the path scheduler keeps idle
// by a rule (scheduler.IdleKeeper): a path the scheduler finds full is
// limited by that, not by the application. (The draft's fourth
// condition, no lost data waiting, holds in the first case, since lost
// stream data is stream data to send; in the second a path may be kept
// idle while another path's lost data waits.)
func (c *Conn) noteAppLimited(now time.Time) {
	if !c.tlsDone || c.streams.flowBlocked {
		return
	}
	none := len(c.streams.infos) == 0
	if !none && c.idleKeeper == nil {
		return
	}
	looked, appIdle := false, false // appIdle: none and no writer waits
	for _, p := range c.paths {
		if p.appLim == nil || p.state != pathActive || !c.cwndAllows(now, p) {
			continue
		}
		if none && !looked {
			looked, appIdle = true, !c.writerWaiting()
		}
		if appIdle || c.idleKeeper != nil && c.idleKeeper.KeepsIdle(p.id) {
			p.appLim.OnAppLimited(c.bytesInFlight(p))
		}
	}
}

// writerWaiting reports whether the application has more to write on a
// stream than its send buffer took: its last write there was short.
func (c *Conn) writerWaiting() bool {
	for _, s := range c.streams.m {
		if s.writeShort && s.send != nil {
			return true
		}
	}
	return false
}

// queuedDatagram is a datagram built ahead, returned by the next poll.
type queuedDatagram struct {
	local, remote netip.AddrPort
	data          []byte
}

// hasResponseFor reports whether a PATH_RESPONSE waits for path p's
// addresses.
func (c *Conn) hasResponseFor(p *path) bool {
	for _, r := range c.pathResponses {
		if r.pathID == p.id && r.onTuple(p) {
			return true
		}
	}
	return false
}

// ownAckPath reports whether path q can carry the ACKs of its own space:
// it is open and has a connection ID of the peer.
func (c *Conn) ownAckPath(q *path) bool {
	if q.state == pathClosing {
		return false
	}
	_, ok := c.ids.dcidFor(q.id)
	return ok
}

// foreignAckDue reports whether a path that cannot carry its own ACKs has
// one due.
func (c *Conn) foreignAckDue(now time.Time) bool {
	for _, q := range c.closing {
		if c.ackDueSpace(now, &q.app) {
			return true
		}
	}
	for _, q := range c.paths {
		if !c.ownAckPath(q) && c.ackDueSpace(now, &q.app) {
			return true
		}
	}
	return false
}

// ackCarrier is the path that carries the ACKs of paths that cannot: one
// of the open paths that have a connection ID of the peer, as the path
// scheduler chooses (scheduler.AckPathChooser), by default the one with
// the lowest smoothed RTT.
func (c *Conn) ackCarrier(now time.Time) *path {
	c.ackCand = c.ackCand[:0]
	for _, p := range c.paths {
		if p.state == pathActive && c.ownAckPath(p) {
			c.ackCand = append(c.ackCand, p)
		}
	}
	if len(c.ackCand) == 0 {
		return nil
	}
	c.pathInfos(c.ackCand, now)
	if ch, ok := c.pathSch.(scheduler.AckPathChooser); ok {
		id := ch.AckPath(now, c.pathBuf)
		for _, p := range c.ackCand {
			if p.id == id {
				return p
			}
		}
	}
	return c.ackCand[scheduler.DefaultAckPath(c.pathBuf)]
}

// pollScheduled asks the stream and path schedulers what to send next.
func (c *Conn) pollScheduled(now time.Time, buf []byte) (Datagram, bool) {
	w := scheduler.Work{Class: scheduler.ClassControl, Size: c.cfg.MaxPacketSize}
	first := -1
	infos := c.sendableStreams()
	w.Waiting.Control = c.ctrl.pending()
	w.Waiting.SendWindow = c.streams.connSend.Credit()
	w.Waiting.Repair = c.repair.policy != nil && c.repairNegotiated()
	for i := range infos {
		w.Waiting.Retransmission = w.Waiting.Retransmission || infos[i].HasRetransmission
		if infos[i].Priority {
			w.Waiting.PriorityBytes += infos[i].Pending
		} else {
			w.Waiting.BackgroundBytes += infos[i].Pending
		}
	}
	if len(infos) == 0 && !w.Waiting.Control && !c.crypto[levelApp].send.HasPendingData() {
		return Datagram{}, false
	}
	c.pathInfos(c.paths, now)
	if len(infos) > 0 {
		first = c.strSch.Next(now, infos)
		c.streamWork(&w, infos, first)
	}
	bp := buildParams{mode: modeNormal}
	c.pathSel = c.pathSch.Select(now, c.pathBuf, w, c.pathSel[:0])
	for len(c.pathSel) == 0 && first >= 0 && !w.Priority && c.skipHeld != nil && c.skipHeld.SkipsHeldBack() && c.strSch.MaxStreamFrames() == 1 {
		// The path scheduler holds back a stream without priority: offer
		// the stream scheduler's next choice among the others, if a
		// stream with priority is among them. (Only with one STREAM
		// frame a packet: else the packet's other frames would take the
		// held-back stream's data after all.)
		infos = append(infos[:first], infos[first+1:]...)
		if !slices.ContainsFunc(infos, func(s scheduler.StreamInfo) bool { return s.Priority }) {
			break
		}
		first = c.strSch.Next(now, infos)
		c.streamWork(&w, infos, first)
		c.pathSel = c.pathSch.Select(now, c.pathBuf, w, c.pathSel[:0])
	}
	if len(c.pathSel) == 0 && first >= 0 && (w.Waiting.Control || c.crypto[levelApp].send.HasPendingData()) {
		// The stream data is held back; control frames are not: ask
		// for a path for them alone.
		first = -1
		w = scheduler.Work{Class: scheduler.ClassControl, Size: c.cfg.MaxPacketSize, Waiting: w.Waiting}
		c.pathSel = c.pathSch.Select(now, c.pathBuf, w, c.pathSel[:0])
		bp.noStreams = true
	}
	if len(c.pathSel) == 0 {
		return Datagram{}, false
	}
	p := c.openPath(c.pathSel[0])
	if p == nil || p.state != pathActive {
		return Datagram{}, false
	}
	bp.class, bp.sizeCap, bp.dups = w.Class, w.Size, c.pathSel[1:]
	if first >= 0 {
		bp.firstStream, bp.hasFirst = infos[first].ID, true
	}
	return c.buildOn(now, p, buf, &bp)
}

// streamWork fills w (whose Waiting is set) for a packet of infos[first],
// the stream the stream scheduler chose; c.pathBuf holds the paths.
func (c *Conn) streamWork(w *scheduler.Work, infos []scheduler.StreamInfo, first int) {
	st := infos[first]
	*w = scheduler.Work{Waiting: w.Waiting, StreamID: st.ID, Priority: st.Priority, Pending: st.Pending}
	// The packet's expected size: the stream data it will carry (one
	// stream's, or all waiting, as the stream scheduler allows) with the
	// packet's overhead and room for an ACK or a few control frames. The
	// packet built never exceeds it, so that a scheduler's room check
	// (e.g. a reservation sized for a message's real bytes) holds for a
	// message's last, short packet too. Lost data is sized by the path
	// scheduler (scheduler.RetransmissionSizer), full size by default.
	pending := st.Pending
	if c.strSch.MaxStreamFrames() != 1 {
		pending = w.Waiting.PriorityBytes + w.Waiting.BackgroundBytes
	}
	if !st.HasRetransmission {
		w.Size = int(min(uint64(c.cfg.MaxPacketSize), pending+packetOverhead+scheduler.PacketSlack))
	} else {
		w.Size = scheduler.DefaultRetransmissionSize(c.cfg.MaxPacketSize)
	}
	switch {
	case st.HasRetransmission:
		w.Class = scheduler.ClassRetransmission
		s := c.streams.m[st.ID]
		w.LostBytes = s.send.LostBytes()
		w.Pinned, w.PinnedPath = s.pinned, s.pinPath
		if c.rtxSizer != nil {
			w.Size = min(max(c.rtxSizer.RetransmissionSize(*w, c.pathBuf), scheduler.MinRetransmissionSize), c.cfg.MaxPacketSize)
		}
	case st.Priority:
		w.Class = scheduler.ClassPriority
	default:
		w.Class = scheduler.ClassBackground
	}
}

// cwndAllows reports whether path p may send a full-size packet now.
func (c *Conn) cwndAllows(now time.Time, p *path) bool {
	size := uint64(c.maxPacketSize(p))
	return c.bytesInFlight(p)+size <= c.sendWindow(p) && p.pacingBudget(now) >= size
}

// sendWindow is the window path p's packets must fit in: the congestion
// window, plus a maximum-size datagram with Config.SendBelowWindow
// (MPQUIC's test, bytes in flight at most the window).
func (c *Conn) sendWindow(p *path) uint64 {
	if c.cfg.SendBelowWindow {
		return p.cc.Window() + uint64(c.maxPacketSize(p))
	}
	return p.cc.Window()
}

func (c *Conn) hasProbe(p *path) bool {
	if p.id != 0 || c.handshakeSpacesGone { // p.app alone (spacesOf)
		return p.app.probes > 0
	}
	var buf [3]*pnSpace
	for _, sp := range c.spacesOf(p, buf[:0]) {
		if sp.probes > 0 {
			return true
		}
	}
	return false
}

// handshakePending reports whether the Initial or Handshake level has
// something to send.
func (c *Conn) handshakePending() bool {
	if c.handshakeSpacesGone { // and their keys with them (discardLevel)
		return false
	}
	for l := levelInitial; l <= levelHandshake; l++ {
		if !c.keys[l].haveSeal {
			continue
		}
		if c.crypto[l].send.HasPendingData() || !c.spaces[l].recv.AckDeadline().IsZero() {
			return true
		}
	}
	return false
}

// ackDue reports whether an ACK of a space carried by p is due now.
func (c *Conn) ackDue(now time.Time, p *path) bool {
	if p.id != 0 || c.handshakeSpacesGone { // p.app alone (spacesOf)
		return c.ackDueSpace(now, &p.app)
	}
	var buf [3]*pnSpace
	for _, sp := range c.spacesOf(p, buf[:0]) {
		if d := sp.recv.AckDeadline(); !d.IsZero() && !d.After(now) {
			return true
		}
	}
	return false
}

// buildOn assembles one datagram on path p, coalescing Initial, Handshake
// and 1-RTT packets as needed, as bp says; bp.dups name further paths that
// get a copy of the 1-RTT packet.
func (c *Conn) buildOn(now time.Time, p *path, buf []byte, bp *buildParams) (Datagram, bool) {
	limit := c.packetLimit(p, bp.sizeCap)
	if limit < 64 {
		return Datagram{}, false
	}
	d := &dgram{b: buf[:0], limit: limit, bp: *bp, path: p}
	bp = &d.bp
	if len(bp.dups) > 0 {
		d.payloadCap = c.copyRoom(p, bp)
	}
	padInitial := false
	if p.id == 0 && !c.handshakeSpacesGone {
		for l := levelInitial; l <= levelHandshake; l++ {
			k := &c.keys[l]
			if !k.haveSeal {
				continue
			}
			pk := c.buildLong(now, p, d, l, bp.mode)
			if pk != nil && l == levelInitial && (c.isClient || pk.ackEliciting) {
				padInitial = true
			}
		}
	}
	mode := bp.mode
	if p.id == 0 && mode == modeNormal && c.CanSendEarly() {
		c.buildEarly(now, p, d)
	}
	if c.app.haveSeal && (c.tlsDone || !c.isClient || mode == modeAckOnly || mode == modePathProbe) && d.n < len(d.pkts) {
		c.buildShort(now, p, d)
	}
	if d.n == 0 {
		return Datagram{}, false
	}
	if padInitial && len(d.b)+aeadTag*d.n < minInitialDatagram {
		// Pad the last packet so that the datagram reaches 1200 bytes.
		last := &d.pkts[d.n-1]
		pad := minInitialDatagram - len(d.b) - aeadTag*d.n
		if pad > 0 && len(d.b)+pad+aeadTag*d.n <= limit {
			d.b = append(d.b, make([]byte, pad)...)
			last.inFlight = true
			if c.qlog != nil {
				last.frames = append(last.frames, qlog.Frame{FrameType: "padding", Length: uint64(pad)})
			}
		}
	}
	var src *copySource
	if len(bp.dups) > 0 {
		src = c.copySource(p, d)
	}
	out := c.seal(now, p, d)
	if src != nil {
		c.sendCopies(now, p, src, bp)
	}
	return Datagram{Local: p.local, Remote: p.remote, Data: out}, true
}

// packetLimit is the largest datagram path p may send now, bounded by
// sizeCap when it is positive.
func (c *Conn) packetLimit(p *path, sizeCap int) int {
	limit := min(c.maxPacketSize(p), c.amplificationRoom(p))
	if sizeCap > 0 {
		limit = min(limit, sizeCap)
	}
	return limit
}

func (c *Conn) ackDueSpace(now time.Time, sp *pnSpace) bool {
	dl := sp.recv.AckDeadline()
	return !dl.IsZero() && !dl.After(now)
}

// startPacket reserves a packet's header in the datagram.
func (c *Conn) startPacket(d *dgram, l level, sp *pnSpace, dcid []byte) *pktBuild {
	return c.startPacketOf(d, l, false, sp, dcid)
}

// startPacketOf is startPacket, of a 0-RTT packet when early.
func (c *Conn) startPacketOf(d *dgram, l level, early bool, sp *pnSpace, dcid []byte) *pktBuild {
	pk := &d.pkts[d.n]
	pnLen := wire.PacketNumberLen(sp.nextPN, sp.sent.LargestAcked())
	// The frame references go into the connection's scratch slices,
	// which seal hands back (onPacketSent copies them).
	*pk = pktBuild{l: l, early: early, sp: sp, pn: sp.nextPN, start: len(d.b), pnLen: pnLen, refs: c.refScratch[d.n][:0], frames: pk.frames[:0]}
	if early {
		d.b, pk.lengthOff, pk.pnOff = wire.AppendLongHeader(d.b, wire.Packet0RTT, wire.Version1, dcid, c.ids.srcCID(), nil, sp.nextPN, pnLen)
	} else if l == levelApp {
		d.b, pk.pnOff = wire.AppendShortHeader(d.b, dcid, sp.nextPN, pnLen, c.app.keyPhase())
	} else {
		var token []byte
		if l == levelInitial {
			token = c.token
		}
		d.b, pk.lengthOff, pk.pnOff = wire.AppendLongHeader(d.b, l.packetType(), wire.Version1, dcid, c.ids.srcCID(), token, sp.nextPN, pnLen)
	}
	pk.payloadOff = len(d.b)
	return pk
}

// abandon removes an empty packet from the datagram.
func (d *dgram) abandon(pk *pktBuild) { d.b = d.b[:pk.start] }

// buildLong appends an Initial or Handshake packet if the level has
// anything to send; nil if not.
func (c *Conn) buildLong(now time.Time, p *path, d *dgram, l level, mode sendMode) *pktBuild {
	sp := &c.spaces[l]
	ackDue := !sp.recv.AckDeadline().IsZero()
	cs := &c.crypto[l]
	probe := mode == modeProbe && sp.probes > 0
	wantData := mode != modeAckOnly && cs.send.HasPendingData()
	if !ackDue && !wantData && !probe {
		return nil
	}
	pk := c.startPacket(d, l, sp, c.ids.dcid())
	room := d.left() // payload bytes left, every packet's tag counted
	if room < 8 {
		d.abandon(pk)
		return nil
	}
	if ackDue || wantData || probe {
		room = c.appendAck(now, d, pk, sp, l, room, 0)
	}
	if mode != modeAckOnly {
		room = c.appendCrypto(d, pk, l, room)
	}
	if probe && !pk.ackEliciting && room > 0 {
		d.b = append(d.b, 0x01) // PING
		pk.ackEliciting, pk.inFlight = true, true
		pk.refs = append(pk.refs, recovery.FrameRef{Kind: refPing})
		c.traceFrame(pk, &wire.PingFrame{})
	}
	if len(d.b) == pk.payloadOff {
		d.abandon(pk)
		return nil
	}
	if probe {
		sp.probes--
	}
	c.finishPayload(d, pk)
	d.n++
	return pk
}

// buildShort appends a 1-RTT packet on path p. A path that is not active
// (validating) carries only ACKs and path validation frames.
func (c *Conn) buildShort(now time.Time, p *path, d *dgram) {
	dcid, ok := c.ids.dcidFor(p.id)
	if !ok {
		return
	}
	if t := d.bp.tuple; t != nil && t.dcid != nil {
		dcid = t.dcid
	}
	c.maybeInitiateKeyUpdate(now)
	bp := &d.bp
	mode := bp.mode
	sp := &p.app
	pk := c.startPacket(d, levelApp, sp, dcid)
	room := d.left()
	if d.payloadCap > 0 {
		room = min(room, d.payloadCap)
	}
	if room < 8 {
		d.abandon(pk)
		return
	}
	probe := mode == modeProbe && sp.probes > 0
	full := mode == modeNormal || mode == modeProbe
	if p.state != pathActive {
		full = false
	}
	if probe && (p.health.failed || c.otherActivePath(p)) {
		// A PTO probe of a path that may be broken, or the probe of a
		// failed path, only checks it: data and control frames go where
		// the schedulers send them.
		full = false
	}
	if !sp.recv.AckDeadline().IsZero() || sp.recv.HasNewInfo() && mode != modeAckOnly {
		room = c.appendAck(now, d, pk, sp, levelApp, room, p.id)
	}
	room = c.appendForeignAcks(now, d, pk, p, room)
	if len(bp.dups) == 0 {
		// PATH_RESPONSE belongs to its path: a packet to be copied
		// leaves it to a packet of its own.
		room = c.appendPathResponses(d, pk, p, room)
	}
	if p.challengeSend && (p.state == pathValidating || p.migration.active) && bp.tuple == nil {
		if left := c.appendFrame(d, pk, &wire.PathChallengeFrame{Data: p.challengeData}, room); left >= 0 {
			room = left
			pk.pathBound = true
			c.onPathChallengeSent(now, p)
		}
	}
	if full {
		if bp.repair {
			room = c.appendRepairs(d, pk, p, room)
		}
		room = c.appendControl(d, pk, room)
		room = c.appendCrypto(d, pk, levelApp, room)
		if !bp.noStreams {
			var first *uint64
			if bp.hasFirst {
				first = &bp.firstStream
			}
			room = c.appendStreams(now, d, pk, room, first)
		}
	}
	if probe && !pk.ackEliciting && room > 0 {
		d.b = append(d.b, 0x01)
		pk.ackEliciting, pk.inFlight = true, true
		pk.refs = append(pk.refs, recovery.FrameRef{Kind: refPing})
		c.traceFrame(pk, &wire.PingFrame{})
	}
	if len(d.b) == pk.payloadOff {
		d.abandon(pk)
		return
	}
	if probe {
		sp.probes--
	}
	if pk.pathBound {
		// RFC 9000 Section 8.2: datagrams with PATH_CHALLENGE or
		// PATH_RESPONSE are expanded to 1200 bytes, as far as the
		// anti-amplification limit allows.
		if pad := minInitialDatagram - (len(d.b) + aeadTag*(d.n+1)); pad > 0 {
			pad = min(pad, d.limit-len(d.b)-aeadTag*(d.n+1))
			if pad > 0 {
				d.b = append(d.b, make([]byte, pad)...)
				pk.inFlight = true
				if c.qlog != nil {
					pk.frames = append(pk.frames, qlog.Frame{FrameType: "padding", Length: uint64(pad)})
				}
			}
		}
	}
	c.finishPayload(d, pk)
	d.n++
}

// earlyPending reports whether the client has 0-RTT data to send.
func (c *Conn) earlyPending() bool {
	return c.CanSendEarly() && len(c.sendableStreams()) > 0
}

// buildEarly appends a 0-RTT packet on path 0 with the data of the streams
// opened for it (early.go): STREAM frames only, never an ACK
// (RFC 9000 Section 12.4).
func (c *Conn) buildEarly(now time.Time, p *path, d *dgram) {
	if d.n >= len(d.pkts) || len(c.sendableStreams()) == 0 {
		return
	}
	pk := c.startPacketOf(d, levelApp, true, &p.app, c.ids.dcid())
	room := d.left()
	if room < 8 {
		d.abandon(pk)
		return
	}
	c.appendStreams(now, d, pk, room, nil)
	if len(d.b) == pk.payloadOff {
		d.abandon(pk)
		return
	}
	c.finishPayload(d, pk)
	d.n++
}

// appendForeignAcks adds the PATH_ACKs of paths that cannot carry their
// own (abandoned, or without a connection ID of the peer).
func (c *Conn) appendForeignAcks(now time.Time, d *dgram, pk *pktBuild, p *path, room int) int {
	if !c.mp.enabled {
		return room
	}
	add := func(q *path) {
		if q == p {
			return
		}
		if sp := &q.app; !sp.recv.AckDeadline().IsZero() || sp.recv.HasNewInfo() {
			room = c.appendAck(now, d, pk, sp, levelApp, room, q.id)
		}
	}
	for _, q := range c.closing {
		add(q)
	}
	for _, q := range c.paths {
		if !c.ownAckPath(q) {
			add(q)
		}
	}
	return room
}

// finishPayload pads the payload so that header protection has its sample
// (RFC 9001 Section 5.4.2: at least 4 bytes of packet number and payload).
func (c *Conn) finishPayload(d *dgram, pk *pktBuild) {
	if n := len(d.b) - pk.payloadOff + pk.pnLen; n < 4 {
		d.b = append(d.b, make([]byte, 4-n)...)
	}
}

func (c *Conn) traceFrame(pk *pktBuild, f wire.Frame) {
	if c.qlog != nil {
		pk.frames = append(pk.frames, qlog.FrameFromWire(f))
	}
}

// appendFrame writes f if it fits in room and returns the new room, or -1.
func (c *Conn) appendFrame(d *dgram, pk *pktBuild, f wire.Frame, room int) int {
	n := f.Len()
	if n > room {
		return -1
	}
	d.b = f.Append(d.b)
	if wire.AckEliciting(f) {
		pk.ackEliciting, pk.inFlight = true, true
	}
	c.traceFrame(pk, f)
	return room - n
}

// appendAck writes the ACK (or, with multipath, PATH_ACK) frame of space
// sp of level l; for 1-RTT, pathID names the path whose space it is.
func (c *Conn) appendAck(now time.Time, d *dgram, pk *pktBuild, sp *pnSpace, l level, room int, pathID uint64) int {
	rs := sp.recv.Ranges()
	if len(rs) == 0 {
		return room
	}
	ranges := c.ackRanges[:0]
	for _, r := range rs {
		ranges = append(ranges, wire.AckRange{Smallest: r.Smallest, Largest: r.Largest})
	}
	var delay uint64
	if l == levelApp {
		delay = uint64(sp.recv.AckDelay(now).Microseconds()) >> c.cfg.AckDelayExponent
	}
	c.ackRanges = ranges
	// With multipath every 1-RTT space is acknowledged with PATH_ACK,
	// path 0's too, as deployed peers expect.
	var f wire.Frame
	var fr *[]wire.AckRange
	// The frames are the connection's scratch ones: appendFrame
	// encodes them at once.
	if l == levelApp && c.mp.enabled {
		pf := &c.pathAckFrame
		*pf = wire.PathAckFrame{PathID: pathID, Ranges: ranges, AckDelay: delay}
		f, fr = pf, &pf.Ranges
	} else {
		af := &c.ackFrame
		*af = wire.AckFrame{Ranges: ranges, AckDelay: delay}
		f, fr = af, &af.Ranges
	}
	// Drop the oldest ranges until the frame fits.
	for len(*fr) > 1 && f.Len() > room {
		*fr = (*fr)[:len(*fr)-1]
	}
	left := c.appendFrame(d, pk, f, room)
	if left < 0 {
		return room
	}
	sp.recv.OnAckSent(now)
	ref := uint64(l)
	if l == levelApp {
		ref += pathID
	}
	pk.refs = append(pk.refs, recovery.FrameRef{Kind: refAck, ID: ref, Offset: (*fr)[0].Largest})
	return left
}

// appendCrypto writes CRYPTO frames of level l.
func (c *Conn) appendCrypto(d *dgram, pk *pktBuild, l level, room int) int {
	cs := c.crypto[l].send
	for cs.HasPendingData() {
		off := cs.NextOffset()
		n := wire.MaxCryptoDataLen(off, room)
		if n <= 0 {
			break
		}
		ch, ok := cs.NextChunk(n, 1<<62)
		if !ok || len(ch.Data) == 0 {
			break
		}
		f := &wire.CryptoFrame{Offset: ch.Offset, Data: ch.Data}
		left := c.appendFrame(d, pk, f, room)
		if left < 0 {
			cs.OnLost(ch.Offset, len(ch.Data), false)
			break
		}
		room = left
		pk.refs = append(pk.refs, recovery.FrameRef{Kind: refCrypto, ID: uint64(l), Offset: ch.Offset, Length: uint64(len(ch.Data))})
	}
	return room
}

// appendStreams fills the packet with STREAM frames chosen by the stream
// scheduler, starting with firstStream when given.
func (c *Conn) appendStreams(now time.Time, d *dgram, pk *pktBuild, room int, firstStream *uint64) int {
	maxFrames := c.strSch.MaxStreamFrames()
	frames := 0
	for room > 0 && (maxFrames == 0 || frames < maxFrames) {
		var id uint64
		if firstStream != nil {
			id, firstStream = *firstStream, nil
		} else {
			infos := c.sendableStreams()
			if len(infos) == 0 {
				break
			}
			id = infos[c.strSch.Next(now, infos)].ID
		}
		s := c.streams.get(id)
		if s == nil || s.send == nil {
			break
		}
		off := s.send.NextOffset()
		n := wire.MaxStreamDataLen(id, off, room)
		if n < 0 {
			break
		}
		ch, ok := s.send.NextChunk(n, c.streams.connSend.Credit())
		if !ok {
			break
		}
		f := &c.streamFrame // encoded at once by appendFrame
		*f = wire.StreamFrame{StreamID: id, Offset: ch.Offset, Data: ch.Data, Fin: ch.Fin, DataLenPresent: true}
		// New bytes count against connection flow control once taken
		// from the stream, even if the frame does not fit after all and
		// goes back as a retransmission.
		c.streams.connSend.Consume(uint64(ch.NewBytes))
		left := c.appendFrame(d, pk, f, room)
		// Encoded: f must not keep the send buffer alive (once all is
		// acknowledged the stream frees it, and the budget counts it
		// free).
		f.Data = nil
		if left < 0 {
			s.send.OnLost(ch.Offset, len(ch.Data), ch.Fin)
			break
		}
		room = left
		pk.refs = append(pk.refs, recovery.FrameRef{Kind: refStream, ID: id, Offset: ch.Offset, Length: uint64(len(ch.Data)), Fin: ch.Fin})
		c.noteStreamSent(s, d.path, ch)
		frames++
		c.notifyWritable(s)
	}
	return room
}

// seal encrypts every packet of the datagram in place and records them with
// loss recovery.
func (c *Conn) seal(now time.Time, p *path, d *dgram) []byte {
	// Packets were laid out back to back; sealing appends a tag to each,
	// so move them apart from the last one backwards.
	ends := [3]int{}
	for i := 0; i < d.n; i++ {
		if i+1 < d.n {
			ends[i] = d.pkts[i+1].start
		} else {
			ends[i] = len(d.b)
		}
	}
	total := len(d.b) + aeadTag*d.n
	if cap(d.b) < total {
		// The caller's buffer was smaller than a packet: grow it.
		grown := make([]byte, len(d.b), total)
		copy(grown, d.b)
		d.b = grown
	}
	out := d.b[:total]
	for i := d.n - 1; i >= 0; i-- {
		pk := &d.pkts[i]
		shift := aeadTag * i
		if shift > 0 {
			copy(out[pk.start+shift:ends[i]+shift], d.b[pk.start:ends[i]])
		}
		pk.start += shift
		pk.pnOff += shift
		pk.payloadOff += shift
		if pk.lengthOff > 0 {
			pk.lengthOff += shift
		}
		ends[i] += shift
	}
	for i := 0; i < d.n; i++ {
		pk := &d.pkts[i]
		pkt := out[pk.start : ends[i]+aeadTag]
		plainEnd := ends[i] - pk.start
		hdrLen := pk.payloadOff - pk.start
		if pk.l != levelApp || pk.early {
			wire.PutLongHeaderLength(pkt, pk.lengthOff-pk.start, plainEnd-(pk.pnOff-pk.start)+aeadTag)
		}
		var aead *protection.AEAD
		var hp *protection.HeaderProtector
		pathID := uint32(0)
		if pk.early {
			aead, hp = c.early.keys.seal.AEAD, c.early.keys.seal.HP
			c.early.packetsSent++
			for _, r := range pk.refs {
				if r.Kind == refStream {
					c.early.streamBytes += r.Length
				}
			}
		} else if pk.l == levelApp {
			pathID = uint32(p.id)
			aead, hp = c.app.write, c.app.sealHP
			c.app.noteSent(p.id, pk.pn)
		} else {
			k := &c.keys[pk.l]
			aead, hp = k.seal.AEAD, k.seal.HP
		}
		if _, err := protection.SealPacket(aead, hp, pkt[:plainEnd], hdrLen, pk.pnOff-pk.start, pk.pnLen, pathID, pk.pn); err != nil {
			// Only a packet too short for the sample fails, which
			// finishPayload prevents.
			panic("mpquic: sealing failed: " + err.Error())
		}
		c.onPacketSent(now, p, pk, len(pkt), &d.bp)
		c.refScratch[i] = pk.refs[:0]
	}
	if d.n > 0 && d.pkts[0].l == levelHandshake || d.n > 1 && d.pkts[1].l == levelHandshake {
		if c.isClient {
			// The client discards Initial keys once it sends a
			// Handshake packet (RFC 9001 Section 4.9.1).
			c.discardLevel(levelInitial)
		}
	}
	if !c.isClient && !p.validated {
		p.bytesSentPre += uint64(len(out))
	}
	p.bytesSent += uint64(len(out))
	return out
}

// onPacketSent records a sealed packet (RFC 9002 Section A.5) built with
// bp.
func (c *Conn) onPacketSent(now time.Time, p *path, pk *pktBuild, size int, bp *buildParams) {
	sp := pk.sp
	slot := sp.sent.Prepare(pk.pn)
	slot.TimeSent = now
	slot.Size = size
	slot.AckEliciting = pk.ackEliciting
	slot.InFlight = pk.inFlight
	slot.Frames = append(slot.Frames, pk.refs...)
	sp.sent.OnSent(slot)
	sp.nextPN++
	p.packetsSent++
	if c.pktObs != nil && pk.l == levelApp && pk.inFlight {
		info := c.info(p, now)
		info.BytesInFlight -= uint64(size)
		c.pktObs.OnPacketSent(now, &info, pk.pn, size, bp.class)
	}
	if pk.inFlight {
		inFlight := c.bytesInFlight(p)
		p.cc.OnPacketSent(now, size, inFlight)
		switch {
		case p.rater != nil:
			p.pacer.SetBytesPerSecond(p.rater.PacingRate())
			p.pacer.OnPacketSent(now, size)
		case p.pacer != nil:
			p.pacer.SetRate(p.cc.Window(), p.rtt.Smoothed())
			p.pacer.OnPacketSent(now, size)
		}
	}
	if pk.ackEliciting && !c.ackElicitingSince {
		c.lastActivity = now
		c.ackElicitingSince = true
	}
	if c.qlog != nil {
		h := qlog.PacketHeader{PacketType: pk.l.String(), PacketNumber: pk.pn, HasPacketNumber: true}
		if pk.early {
			h.PacketType = "0RTT"
		}
		if bp.copyOf != nil {
			c.qlog.PacketSentCopy(now, p.id, h, size, pk.frames, bp.copyOf.path, bp.copyOf.pn)
		} else {
			c.qlog.PacketSent(now, p.id, h, size, pk.frames)
		}
	}
	if c.obs != nil && pk.l == levelApp {
		for _, r := range pk.refs {
			if r.Kind == refStream && r.Length > 0 {
				prio := false
				if s := c.streams.get(r.ID); s != nil {
					prio = s.priority
				}
				c.obs.StreamDataSent(now, p.id, r.ID, prio, int(r.Length))
			}
		}
	}
	if pk.inFlight && (c.qlog != nil || c.obs != nil) {
		c.updateMetrics(now, p)
	}
}

// maybeInitiateKeyUpdate starts a key update when the configured interval
// or the AEAD confidentiality limit is reached (RFC 9001 Sections 6 and 6.6).
func (c *Conn) maybeInitiateKeyUpdate(now time.Time) {
	k := &c.app
	if !c.confirmed || !k.canInitiateUpdate() {
		return
	}
	due := c.cfg.KeyUpdateInterval > 0 && k.packetsInPhase >= c.cfg.KeyUpdateInterval ||
		k.packetsInPhase >= k.suite.ConfidentialityLimit()-1000
	if !due {
		return
	}
	if err := k.rotate(now.Add(3 * c.maxPTO())); err != nil {
		return
	}
	k.updateInitiated = true
	c.qlog.KeyUpdated(now, k.generation, "local_update")
}
