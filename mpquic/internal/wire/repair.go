package wire

// REPAIR frames: the project's experimental stream-level parity extension
// (not an IETF draft; docs/results/beyond-the-paper.md "Beyond the paper" names it). A REPAIR
// frame carries the XOR of a stream's data in chunks, so that a receiver
// missing the bytes of one chunk, and no two missing bytes in the same
// column, rebuilds them without a retransmission.
//
// The protected range of stream StreamID is [Offset, End), cut into
// k = ceil((End-Offset)/ChunkLen) chunks of ChunkLen bytes, the last one
// zero-padded: byte c (the column, 0 <= c < ChunkLen) of the parity is the
// XOR of the bytes Offset + i*ChunkLen + c below End, i = 0..k-1. A frame
// carries the parity's columns [Column, Column+len(Parity)), so that a
// parity longer than a packet travels in several frames. With Fin, End is
// the stream's final size.
//
//	REPAIR Frame {
//	  Type (i) = 0x3fec4..0x3fec5,   // low bit: FIN
//	  Stream ID (i),
//	  Offset (i),
//	  Chunk Length (i),
//	  End (i),
//	  Column (i),
//	  Length (i),
//	  Parity (..),
//	}
//
// REPAIR_Q frames (types 0x3fec6..0x3fec7, the same fields) carry a
// second parity of the same range, its Reed-Solomon parity: byte c of it
// is the sum over the chunks i = 0..k-1 of g^i times their byte c, in
// GF(2^8) with the polynomial x^8+x^4+x^3+x^2+1 (0x11d) and g = 2 (the
// second parity of RAID 6). With both parities a receiver rebuilds any
// two missing bytes of a column, that is any two lost packets of the
// range whose stream data are at most ChunkLen bytes each; with the
// REPAIR_Q parity alone, one. Its range has at most MaxRepairQChunks
// chunks (g^i repeats after 255). The transport parameter TPRepairQ
// (zero-length value) offers them, beside TPRepair.
//
// The frame types and the transport parameters that offer the extension
// (TransportParameters.Repair, id TPRepair, zero-length value) are taken
// from the ranges IANA leaves to first-come-first-served and
// provisional use (RFC 9000 Section 22.1), outside the greasing pattern
// 31*N+27 of transport parameters; they are unregistered and experimental.
// The frames may only be sent when both ends offered the parameter, and
// only in 1-RTT packets; they are ack-eliciting and never retransmitted.

// Frame types of REPAIR and REPAIR_Q frames.
const (
	FrameTypeRepair     uint64 = 0x3fec4
	FrameTypeRepairFin  uint64 = 0x3fec5
	FrameTypeRepairQ    uint64 = 0x3fec6
	FrameTypeRepairQFin uint64 = 0x3fec7
)

// TPRepair is the ID of the transport parameter that offers REPAIR frames,
// TPRepairQ of the one that offers REPAIR_Q frames.
const (
	TPRepair  uint64 = 0x3fec4
	TPRepairQ uint64 = 0x3fec6
)

// MaxRepairQChunks bounds the chunks of a REPAIR_Q frame's range: the
// coefficients g^i of its chunks are distinct for i < 255.
const MaxRepairQChunks = 255

// MaxRepairSpan bounds End-Offset of a REPAIR frame (and so its chunk
// length): a receiver's work for one parity stays bounded.
const MaxRepairSpan = 1 << 16

// RepairFrame is a REPAIR or REPAIR_Q frame (see above).
type RepairFrame struct {
	StreamID, Offset, ChunkLen, End uint64
	// Fin: End is the stream's final size.
	Fin bool
	// Q: a REPAIR_Q frame, the Reed-Solomon parity.
	Q bool
	// Column is the first column of Parity.
	Column uint64
	// Parity aliases the parsed packet.
	Parity []byte
}

// Chunks returns k, the number of chunks of the protected range.
func (f *RepairFrame) Chunks() uint64 { return (f.End - f.Offset + f.ChunkLen - 1) / f.ChunkLen }

// Type returns the frame's type: FrameTypeRepair or FrameTypeRepairQ,
// the FIN variant with Fin.
func (f *RepairFrame) Type() uint64 {
	t := FrameTypeRepair
	if f.Q {
		t = FrameTypeRepairQ
	}
	if f.Fin {
		t |= 1
	}
	return t
}

// IsRepairType reports whether t is the type of a REPAIR or REPAIR_Q
// frame.
func IsRepairType(t uint64) bool { return t >= FrameTypeRepair && t <= FrameTypeRepairQFin }

// RepairHeaderLen is the length of a REPAIR frame without its parity
// bytes.
func RepairHeaderLen(streamID, offset, chunkLen, end, column uint64, n int) int {
	return VarintLen(FrameTypeRepair) + VarintLen(streamID) + VarintLen(offset) + VarintLen(chunkLen) +
		VarintLen(end) + VarintLen(column) + VarintLen(uint64(n))
}

// Len returns the length of the encoding.
func (f *RepairFrame) Len() int {
	return RepairHeaderLen(f.StreamID, f.Offset, f.ChunkLen, f.End, f.Column, len(f.Parity)) + len(f.Parity)
}

// Append appends the frame.
func (f *RepairFrame) Append(b []byte) []byte {
	b = AppendVarint(b, f.Type())
	b = AppendVarint(b, f.StreamID)
	b = AppendVarint(b, f.Offset)
	b = AppendVarint(b, f.ChunkLen)
	b = AppendVarint(b, f.End)
	b = AppendVarint(b, f.Column)
	b = AppendVarint(b, uint64(len(f.Parity)))
	return append(b, f.Parity...)
}

// parseRepair parses a REPAIR or REPAIR_Q frame after its type t. The
// range must be non-empty and at most MaxRepairSpan bytes, the chunk
// length positive, the parity's columns non-empty and within a chunk,
// and a REPAIR_Q frame's chunks at most MaxRepairQChunks: else
// FRAME_ENCODING_ERROR.
func parseRepair(r *reader, t uint64) (Frame, error) {
	f := &RepairFrame{Fin: t&1 == 1, Q: t >= FrameTypeRepairQ, StreamID: r.varint(), Offset: r.varint(), ChunkLen: r.varint(), End: r.varint(), Column: r.varint()}
	n := r.varint()
	f.Parity = r.bytes(n)
	if r.bad {
		return nil, truncated(t)
	}
	switch {
	case f.End <= f.Offset || f.End-f.Offset > MaxRepairSpan:
		return nil, frameError(t, "REPAIR range empty or too long")
	case f.ChunkLen == 0 || f.ChunkLen > MaxRepairSpan:
		return nil, frameError(t, "REPAIR chunk length out of range")
	case n == 0 || f.Column >= f.ChunkLen || n > f.ChunkLen-f.Column:
		return nil, frameError(t, "REPAIR parity columns out of the chunk")
	case f.Q && f.Chunks() > MaxRepairQChunks:
		return nil, frameError(t, "REPAIR_Q range of more than 255 chunks")
	}
	return f, nil
}
