package core

// controlQueue is the connection's single mechanism for delivering control
// frames reliably: a frame kind (and, where it applies, a stream ID or
// sequence number) is marked pending; the packet builder writes the frame
// from the *current* state when it has room; if the packet is lost the mark
// is set again unless the state has moved on (for example a newer MAX_DATA
// was sent meanwhile). Retransmitting the current state instead of the lost
// bytes makes every control frame idempotent (RFC 9000 Section 13.3).
type controlQueue struct {
	handshakeDone     bool
	maxData           bool
	dataBlocked       bool
	maxStreams        [2]bool // indexed by uni (0: bidi, 1: uni)
	streamsBlocked    [2]bool
	ping              bool
	retire            bool // RETIRE_CONNECTION_ID in connIDs.retireQueue
	maxStreamData     idSet
	streamDataBlocked idSet
	resetStream       idSet
	stopSending       idSet
	newConnIDs        idSet // cidKeys
	// Multipath (draft-ietf-quic-multipath-21).
	pathAbandon     idSet // path IDs
	pathStatus      idSet // path IDs
	pathCIDsBlocked idSet // path IDs
	maxPathID       bool
	pathsBlocked    bool
}

// idSet is an insertion-ordered set of IDs.
type idSet struct {
	list []uint64
	in   map[uint64]struct{}
}

func (s *idSet) add(id uint64) {
	if s.in == nil {
		s.in = map[uint64]struct{}{}
	}
	if _, ok := s.in[id]; ok {
		return
	}
	s.in[id] = struct{}{}
	s.list = append(s.list, id)
}

func (s *idSet) has(id uint64) bool {
	_, ok := s.in[id]
	return ok
}

func (s *idSet) remove(id uint64) {
	if _, ok := s.in[id]; !ok {
		return
	}
	delete(s.in, id)
	for i, v := range s.list {
		if v == id {
			s.list = append(s.list[:i], s.list[i+1:]...)
			return
		}
	}
}

func (s *idSet) empty() bool { return len(s.list) == 0 }

// pending reports whether any control frame waits.
func (q *controlQueue) pending() bool {
	return q.handshakeDone || q.maxData || q.dataBlocked || q.maxStreams[0] || q.maxStreams[1] ||
		q.streamsBlocked[0] || q.streamsBlocked[1] || q.ping || q.retire ||
		!q.maxStreamData.empty() || !q.streamDataBlocked.empty() || !q.resetStream.empty() ||
		!q.stopSending.empty() || !q.newConnIDs.empty() ||
		!q.pathAbandon.empty() || !q.pathStatus.empty() || !q.pathCIDsBlocked.empty() ||
		q.maxPathID || q.pathsBlocked
}

// Kinds of frame records attached to sent packets (recovery.FrameRef.Kind).
const (
	refStream uint8 = iota + 1
	refCrypto
	refAck
	refResetStream
	refStopSending
	refMaxData
	refMaxStreamData
	refMaxStreams
	refDataBlocked
	refStreamDataBlocked
	refStreamsBlocked
	refNewConnID
	refRetireConnID
	refHandshakeDone
	refPing
	refPathAbandon
	refPathStatus
	refMaxPathID
	refPathsBlocked
	refPathCIDsBlocked
	// refRepair: a REPAIR frame, never retransmitted.
	refRepair
)
