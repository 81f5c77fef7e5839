package wire

import "github.com/mpq/mpq/mpquic/qerr"

// MaxPathIDLimit is the largest path ID, 2^32-1, bounded by the nonce
// calculation (draft-ietf-quic-multipath-21 Sections 2.1 and 2.4).
const MaxPathIDLimit uint64 = 1<<32 - 1

// pathIDError returns the PROTOCOL_VIOLATION for a multipath frame of type t
// carrying a path ID above MaxPathIDLimit: no endpoint can allow such a
// path (draft-ietf-quic-multipath-21 Section 4).
func pathIDError(t uint64) error {
	return &qerr.TransportError{Code: qerr.ProtocolViolation, FrameType: t, Reason: "path ID above 2^32-1"}
}

// parseMultipathFrame parses the frames of draft-ietf-quic-multipath-21
// after their type; any other type is unknown.
func parseMultipathFrame(r *reader, t uint64, sc *FrameParser) (Frame, error) {
	var f Frame
	var pathID uint64
	switch t {
	case FrameTypePathAck, FrameTypePathAckECN:
		var pa *PathAckFrame
		var buf []AckRange
		if sc != nil {
			pa, buf = &sc.pathAck, sc.ranges[:0]
			*pa = PathAckFrame{}
		} else {
			a := new(pathAckAlloc)
			pa, buf = &a.f, a.buf[:0]
		}
		pa.HasECN = t == FrameTypePathAckECN
		pa.PathID = r.varint()
		var ok bool
		pa.Ranges, pa.AckDelay, pa.ECT0, pa.ECT1, pa.CE, ok = parseAckBody(r, pa.HasECN, buf)
		if !ok {
			return nil, ackError(r, t)
		}
		if sc != nil {
			sc.ranges = pa.Ranges
		}
		f, pathID = pa, pa.PathID
	case FrameTypePathAbandon:
		pa := &PathAbandonFrame{PathID: r.varint(), ErrorCode: r.varint()}
		f, pathID = pa, pa.PathID
	case FrameTypePathStatusBackup, FrameTypePathStatusAvailable:
		ps := &PathStatusFrame{Backup: t == FrameTypePathStatusBackup, PathID: r.varint(), StatusSeq: r.varint()}
		f, pathID = ps, ps.PathID
	case FrameTypePathNewConnectionID:
		nc := &PathNewConnectionIDFrame{PathID: r.varint(), Seq: r.varint(), RetirePriorTo: r.varint()}
		var err error
		if nc.ConnID, err = parseNewConnID(r, t, nc.Seq, nc.RetirePriorTo, nc.ResetToken[:]); err != nil {
			return nil, err
		}
		f, pathID = nc, nc.PathID
	case FrameTypePathRetireConnectionID:
		rc := &PathRetireConnectionIDFrame{PathID: r.varint(), Seq: r.varint()}
		f, pathID = rc, rc.PathID
	case FrameTypeMaxPathID:
		m := &MaxPathIDFrame{MaxPathID: r.varint()}
		f, pathID = m, m.MaxPathID
	case FrameTypePathsBlocked:
		pb := &PathsBlockedFrame{MaxPathID: r.varint()}
		f, pathID = pb, pb.MaxPathID
	case FrameTypePathCIDsBlocked:
		pc := &PathCIDsBlockedFrame{PathID: r.varint(), NextSeq: r.varint()}
		f, pathID = pc, pc.PathID
	default:
		return nil, frameError(t, "unknown frame type")
	}
	if r.bad {
		return nil, truncated(t)
	}
	if pathID > MaxPathIDLimit {
		return nil, pathIDError(t)
	}
	return f, nil
}

// PathAckFrame is a PATH_ACK frame (draft-ietf-quic-multipath-21 Section
// 4.1): an ACK frame for the application packet number space of path
// PathID. Its fields are those of AckFrame.
type PathAckFrame struct {
	PathID uint64
	// Ranges lists the acknowledged ranges in descending order, as in
	// AckFrame. A frame without ranges has no encoding: its Len is 0 and
	// Append writes nothing.
	Ranges []AckRange
	// AckDelay is the raw ACK Delay field.
	AckDelay uint64
	// HasECN selects type 0x3f, carrying the three ECN counts.
	HasECN         bool
	ECT0, ECT1, CE uint64
}

// pathAckAlloc puts a parsed PathAckFrame and its first ranges in one
// allocation.
type pathAckAlloc struct {
	f   PathAckFrame
	buf [inlineAckRanges]AckRange
}

// Type returns FrameTypePathAck or FrameTypePathAckECN.
func (f *PathAckFrame) Type() uint64 {
	if f.HasECN {
		return FrameTypePathAckECN
	}
	return FrameTypePathAck
}

// Len returns the length of the encoding.
func (f *PathAckFrame) Len() int {
	if len(f.Ranges) == 0 {
		return 0
	}
	return 1 + VarintLen(f.PathID) + ackBodyLen(f.Ranges, f.AckDelay, f.HasECN, f.ECT0, f.ECT1, f.CE)
}

// Append appends the frame.
func (f *PathAckFrame) Append(b []byte) []byte {
	if len(f.Ranges) == 0 {
		return b
	}
	b = AppendVarint(append(b, byte(f.Type())), f.PathID)
	return appendAckBody(b, f.Ranges, f.AckDelay, f.HasECN, f.ECT0, f.ECT1, f.CE)
}

// PathAbandonFrame is a PATH_ABANDON frame (draft-ietf-quic-multipath-21
// Section 4.2); ErrorCode is one of the qerr path abandon codes or
// NO_ERROR.
type PathAbandonFrame struct {
	PathID, ErrorCode uint64
}

// Type returns FrameTypePathAbandon.
func (f *PathAbandonFrame) Type() uint64 { return FrameTypePathAbandon }

// Len returns the length of the encoding.
func (f *PathAbandonFrame) Len() int { return 2 + VarintLen(f.PathID) + VarintLen(f.ErrorCode) }

// Append appends the frame.
func (f *PathAbandonFrame) Append(b []byte) []byte {
	b = AppendVarint(appendVarintN(b, FrameTypePathAbandon, 2), f.PathID)
	return AppendVarint(b, f.ErrorCode)
}

// PathStatusFrame is a PATH_STATUS_BACKUP (Backup) or PATH_STATUS_AVAILABLE
// frame (draft-ietf-quic-multipath-21 Section 4.3). StatusSeq is the Path
// Status Sequence Number, common to both types.
type PathStatusFrame struct {
	Backup            bool
	PathID, StatusSeq uint64
}

// Type returns FrameTypePathStatusBackup or FrameTypePathStatusAvailable.
func (f *PathStatusFrame) Type() uint64 {
	if f.Backup {
		return FrameTypePathStatusBackup
	}
	return FrameTypePathStatusAvailable
}

// Len returns the length of the encoding.
func (f *PathStatusFrame) Len() int { return 2 + VarintLen(f.PathID) + VarintLen(f.StatusSeq) }

// Append appends the frame.
func (f *PathStatusFrame) Append(b []byte) []byte {
	b = AppendVarint(appendVarintN(b, f.Type(), 2), f.PathID)
	return AppendVarint(b, f.StatusSeq)
}

// PathNewConnectionIDFrame is a PATH_NEW_CONNECTION_ID frame
// (draft-ietf-quic-multipath-21 Section 4.4): a NEW_CONNECTION_ID frame for
// path PathID, whose sequence numbers are per path. ConnID must be 1 to 20
// bytes long and RetirePriorTo at most Seq.
type PathNewConnectionIDFrame struct {
	PathID, Seq, RetirePriorTo uint64
	ConnID                     []byte
	ResetToken                 [16]byte
}

// Type returns FrameTypePathNewConnectionID.
func (f *PathNewConnectionIDFrame) Type() uint64 { return FrameTypePathNewConnectionID }

// Len returns the length of the encoding.
func (f *PathNewConnectionIDFrame) Len() int {
	return 2 + VarintLen(f.PathID) + VarintLen(f.Seq) + VarintLen(f.RetirePriorTo) + 1 + len(f.ConnID) + resetTokenLen
}

// Append appends the frame.
func (f *PathNewConnectionIDFrame) Append(b []byte) []byte {
	b = appendVarintN(b, FrameTypePathNewConnectionID, 2)
	b = AppendVarint(b, f.PathID)
	b = AppendVarint(b, f.Seq)
	b = AppendVarint(b, f.RetirePriorTo)
	b = append(b, byte(len(f.ConnID)))
	b = append(b, f.ConnID...)
	return append(b, f.ResetToken[:]...)
}

// PathRetireConnectionIDFrame is a PATH_RETIRE_CONNECTION_ID frame
// (draft-ietf-quic-multipath-21 Section 4.5).
type PathRetireConnectionIDFrame struct {
	PathID, Seq uint64
}

// Type returns FrameTypePathRetireConnectionID.
func (f *PathRetireConnectionIDFrame) Type() uint64 { return FrameTypePathRetireConnectionID }

// Len returns the length of the encoding.
func (f *PathRetireConnectionIDFrame) Len() int { return 2 + VarintLen(f.PathID) + VarintLen(f.Seq) }

// Append appends the frame.
func (f *PathRetireConnectionIDFrame) Append(b []byte) []byte {
	b = AppendVarint(appendVarintN(b, FrameTypePathRetireConnectionID, 2), f.PathID)
	return AppendVarint(b, f.Seq)
}

// MaxPathIDFrame is a MAX_PATH_ID frame (draft-ietf-quic-multipath-21
// Section 4.6).
type MaxPathIDFrame struct {
	MaxPathID uint64
}

// Type returns FrameTypeMaxPathID.
func (f *MaxPathIDFrame) Type() uint64 { return FrameTypeMaxPathID }

// Len returns the length of the encoding.
func (f *MaxPathIDFrame) Len() int { return 2 + VarintLen(f.MaxPathID) }

// Append appends the frame.
func (f *MaxPathIDFrame) Append(b []byte) []byte {
	return AppendVarint(appendVarintN(b, FrameTypeMaxPathID, 2), f.MaxPathID)
}

// PathsBlockedFrame is a PATHS_BLOCKED frame (draft-ietf-quic-multipath-21
// Section 4.7): the sender's limit on path IDs stopped it from opening a
// path.
type PathsBlockedFrame struct {
	MaxPathID uint64
}

// Type returns FrameTypePathsBlocked.
func (f *PathsBlockedFrame) Type() uint64 { return FrameTypePathsBlocked }

// Len returns the length of the encoding.
func (f *PathsBlockedFrame) Len() int { return 2 + VarintLen(f.MaxPathID) }

// Append appends the frame.
func (f *PathsBlockedFrame) Append(b []byte) []byte {
	return AppendVarint(appendVarintN(b, FrameTypePathsBlocked, 2), f.MaxPathID)
}

// PathCIDsBlockedFrame is a PATH_CIDS_BLOCKED frame
// (draft-ietf-quic-multipath-21 Section 4.7): the sender has no unused
// connection ID for path PathID; NextSeq is the sequence number it expects
// to be issued next.
type PathCIDsBlockedFrame struct {
	PathID, NextSeq uint64
}

// Type returns FrameTypePathCIDsBlocked.
func (f *PathCIDsBlockedFrame) Type() uint64 { return FrameTypePathCIDsBlocked }

// Len returns the length of the encoding.
func (f *PathCIDsBlockedFrame) Len() int { return 2 + VarintLen(f.PathID) + VarintLen(f.NextSeq) }

// Append appends the frame.
func (f *PathCIDsBlockedFrame) Append(b []byte) []byte {
	b = AppendVarint(appendVarintN(b, FrameTypePathCIDsBlocked, 2), f.PathID)
	return AppendVarint(b, f.NextSeq)
}
