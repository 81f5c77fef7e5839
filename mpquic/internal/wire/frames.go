package wire

import (
	"github.com/mpq/mpq/mpquic/qerr"
)

// Frame is a QUIC frame (RFC 9000 Section 12.4).
type Frame interface {
	// Type returns the frame type as it is written on the wire.
	Type() uint64
	// Len returns the length of the frame's encoding.
	Len() int
	// Append appends the frame's encoding, exactly Len bytes, to b.
	Append(b []byte) []byte
}

// Frame types of RFC 9000 Section 19 and draft-ietf-quic-multipath-21
// Section 4.
const (
	FrameTypePadding                uint64 = 0x00
	FrameTypePing                   uint64 = 0x01
	FrameTypeAck                    uint64 = 0x02
	FrameTypeAckECN                 uint64 = 0x03
	FrameTypeResetStream            uint64 = 0x04
	FrameTypeStopSending            uint64 = 0x05
	FrameTypeCrypto                 uint64 = 0x06
	FrameTypeNewToken               uint64 = 0x07
	FrameTypeStream                 uint64 = 0x08 // 0x08-0x0f: OFF 0x04, LEN 0x02, FIN 0x01
	FrameTypeMaxData                uint64 = 0x10
	FrameTypeMaxStreamData          uint64 = 0x11
	FrameTypeMaxStreamsBidi         uint64 = 0x12
	FrameTypeMaxStreamsUni          uint64 = 0x13
	FrameTypeDataBlocked            uint64 = 0x14
	FrameTypeStreamDataBlocked      uint64 = 0x15
	FrameTypeStreamsBlockedBidi     uint64 = 0x16
	FrameTypeStreamsBlockedUni      uint64 = 0x17
	FrameTypeNewConnectionID        uint64 = 0x18
	FrameTypeRetireConnectionID     uint64 = 0x19
	FrameTypePathChallenge          uint64 = 0x1a
	FrameTypePathResponse           uint64 = 0x1b
	FrameTypeConnectionClose        uint64 = 0x1c
	FrameTypeConnectionCloseApp     uint64 = 0x1d
	FrameTypeHandshakeDone          uint64 = 0x1e
	FrameTypePathAck                uint64 = 0x3e
	FrameTypePathAckECN             uint64 = 0x3f
	FrameTypePathAbandon            uint64 = 0x3e75
	FrameTypePathStatusBackup       uint64 = 0x3e76
	FrameTypePathStatusAvailable    uint64 = 0x3e77
	FrameTypePathNewConnectionID    uint64 = 0x3e78
	FrameTypePathRetireConnectionID uint64 = 0x3e79
	FrameTypeMaxPathID              uint64 = 0x3e7a
	FrameTypePathsBlocked           uint64 = 0x3e7b
	FrameTypePathCIDsBlocked        uint64 = 0x3e7c
)

// STREAM frame type bits (RFC 9000 Section 19.8).
const (
	streamBitFin = 0x01
	streamBitLen = 0x02
	streamBitOff = 0x04
)

// MaxStreamCount is the largest stream count MAX_STREAMS and
// STREAMS_BLOCKED frames (and the initial_max_streams_* transport
// parameters) may carry, 2^60 (RFC 9000 Section 4.6).
const MaxStreamCount uint64 = 1 << 60

// resetTokenLen is the length of a stateless reset token.
const resetTokenLen = 16

// frameError returns the FRAME_ENCODING_ERROR for a frame of type t.
func frameError(t uint64, reason string) error {
	return &qerr.TransportError{Code: qerr.FrameEncodingError, FrameType: t, Reason: reason}
}

// truncated returns the error for a frame of type t that ends too early.
func truncated(t uint64) error { return frameError(t, "truncated frame") }

// ParseFrame parses the frame at the start of b, a decrypted packet payload
// or what is left of it, and returns it with the number of bytes it takes.
// Consecutive PADDING bytes are returned as one PaddingFrame. Slices in the
// frame alias b. Errors are *qerr.TransportError of code
// FRAME_ENCODING_ERROR carrying the frame type, for unknown frame types,
// truncated frames, frame types not encoded minimally and values RFC 9000
// forbids; multipath frames with a path ID above 2^32-1 are a
// PROTOCOL_VIOLATION (draft-ietf-quic-multipath-21 Section 4).
func ParseFrame(b []byte) (Frame, int, error) { return parseFrame(b, nil) }

// FrameParser parses frames as ParseFrame does, but returns its STREAM,
// ACK and PATH_ACK frames (the frames of every packet of a transfer) in
// memory of its own, so that parsing them allocates nothing: such a frame
// is valid only until the parser's next Parse, and its Data aliases b as
// with ParseFrame. The zero value is ready to use.
type FrameParser struct {
	stream  StreamFrame
	ack     AckFrame
	pathAck PathAckFrame
	// ranges holds the ranges of the last ACK or PATH_ACK.
	ranges []AckRange
}

// Parse parses the frame at the start of b (see ParseFrame).
func (p *FrameParser) Parse(b []byte) (Frame, int, error) { return parseFrame(b, p) }

// parseFrame is ParseFrame, with the frames of sc when it is not nil.
func parseFrame(b []byte, sc *FrameParser) (Frame, int, error) {
	if len(b) == 0 {
		return nil, 0, frameError(0, "empty frame")
	}
	t := uint64(b[0])
	n := 1
	if t >= 0x40 {
		var ok bool
		if t, n, ok = parseFrameType(b); !ok {
			if n == 0 {
				return nil, 0, frameError(0, "truncated frame type")
			}
			return nil, 0, frameError(t, "frame type not minimally encoded")
		}
	}
	r := reader{b: b, i: n}
	var f Frame
	switch {
	case t == FrameTypePadding:
		i := 1
		for i < len(b) && b[i] == 0 {
			i++
		}
		return &PaddingFrame{Length: i}, i, nil
	case t == FrameTypePing:
		return &PingFrame{}, 1, nil
	case t == FrameTypeAck || t == FrameTypeAckECN:
		var err error
		if f, err = parseAck(&r, t, sc); err != nil {
			return nil, 0, err
		}
	case t == FrameTypeResetStream:
		f = &ResetStreamFrame{StreamID: r.varint(), ErrorCode: r.varint(), FinalSize: r.varint()}
	case t == FrameTypeStopSending:
		f = &StopSendingFrame{StreamID: r.varint(), ErrorCode: r.varint()}
	case t == FrameTypeCrypto:
		c := &CryptoFrame{Offset: r.varint()}
		c.Data = r.bytes(r.varint())
		if !r.bad && c.Offset+uint64(len(c.Data)) > MaxVarint {
			return nil, 0, frameError(t, "CRYPTO data beyond 2^62-1")
		}
		f = c
	case t == FrameTypeNewToken:
		tok := r.bytes(r.varint())
		if !r.bad && len(tok) == 0 {
			return nil, 0, frameError(t, "empty NEW_TOKEN")
		}
		f = &NewTokenFrame{Token: tok}
	case t >= FrameTypeStream && t <= FrameTypeStream|0x07:
		var s *StreamFrame
		if sc != nil {
			s = &sc.stream
		} else {
			s = new(StreamFrame)
		}
		*s = StreamFrame{StreamID: r.varint(), Fin: t&streamBitFin != 0, DataLenPresent: t&streamBitLen != 0}
		if t&streamBitOff != 0 {
			s.Offset = r.varint()
		}
		if s.DataLenPresent {
			s.Data = r.bytes(r.varint())
		} else if !r.bad {
			s.Data = r.bytes(uint64(r.left()))
		}
		if !r.bad && s.Offset+uint64(len(s.Data)) > MaxVarint {
			return nil, 0, frameError(t, "STREAM data beyond 2^62-1")
		}
		f = s
	case t == FrameTypeMaxData:
		f = &MaxDataFrame{Max: r.varint()}
	case t == FrameTypeMaxStreamData:
		f = &MaxStreamDataFrame{StreamID: r.varint(), Max: r.varint()}
	case t == FrameTypeMaxStreamsBidi || t == FrameTypeMaxStreamsUni:
		m := &MaxStreamsFrame{Bidi: t == FrameTypeMaxStreamsBidi, Max: r.varint()}
		if m.Max > MaxStreamCount {
			return nil, 0, frameError(t, "MAX_STREAMS above 2^60")
		}
		f = m
	case t == FrameTypeDataBlocked:
		f = &DataBlockedFrame{Limit: r.varint()}
	case t == FrameTypeStreamDataBlocked:
		f = &StreamDataBlockedFrame{StreamID: r.varint(), Limit: r.varint()}
	case t == FrameTypeStreamsBlockedBidi || t == FrameTypeStreamsBlockedUni:
		s := &StreamsBlockedFrame{Bidi: t == FrameTypeStreamsBlockedBidi, Limit: r.varint()}
		if s.Limit > MaxStreamCount {
			return nil, 0, frameError(t, "STREAMS_BLOCKED above 2^60")
		}
		f = s
	case t == FrameTypeNewConnectionID:
		nc := &NewConnectionIDFrame{Seq: r.varint(), RetirePriorTo: r.varint()}
		var err error
		if nc.ConnID, err = parseNewConnID(&r, t, nc.Seq, nc.RetirePriorTo, nc.ResetToken[:]); err != nil {
			return nil, 0, err
		}
		f = nc
	case t == FrameTypeRetireConnectionID:
		f = &RetireConnectionIDFrame{Seq: r.varint()}
	case t == FrameTypePathChallenge:
		pc := &PathChallengeFrame{}
		r.copyTo(pc.Data[:])
		f = pc
	case t == FrameTypePathResponse:
		pr := &PathResponseFrame{}
		r.copyTo(pr.Data[:])
		f = pr
	case t == FrameTypeConnectionClose || t == FrameTypeConnectionCloseApp:
		cc := &ConnectionCloseFrame{IsApplication: t == FrameTypeConnectionCloseApp, ErrorCode: r.varint()}
		if !cc.IsApplication {
			cc.FrameType = r.varint()
		}
		cc.Reason = r.bytes(r.varint())
		f = cc
	case t == FrameTypeHandshakeDone:
		return &HandshakeDoneFrame{}, 1, nil
	case IsRepairType(t):
		var err error
		if f, err = parseRepair(&r, t); err != nil {
			return nil, 0, err
		}
	default:
		var err error
		if f, err = parseMultipathFrame(&r, t, sc); err != nil {
			return nil, 0, err
		}
	}
	if r.bad {
		return nil, 0, truncated(t)
	}
	return f, r.i, nil
}

// parseFrameType reads a frame type of more than one byte; ok is false if
// it is truncated (n 0) or not minimally encoded (RFC 9000 Section 12.4).
func parseFrameType(b []byte) (t uint64, n int, ok bool) {
	t, n = decodeVarint(b)
	return t, n, n != 0 && n == VarintLen(t)
}

// parseNewConnID reads the Length, Connection ID and Stateless Reset Token
// fields shared by NEW_CONNECTION_ID and PATH_NEW_CONNECTION_ID, checking
// them against RFC 9000 Section 19.15.
func parseNewConnID(r *reader, t, seq, retirePriorTo uint64, token []byte) ([]byte, error) {
	l := r.byte1()
	cid := r.bytes(uint64(l))
	r.copyTo(token)
	if r.bad {
		return nil, truncated(t)
	}
	if l == 0 || l > MaxConnIDLen {
		return nil, frameError(t, "invalid connection ID length")
	}
	if retirePriorTo > seq {
		return nil, frameError(t, "Retire Prior To above Sequence Number")
	}
	return cid, nil
}

// AckEliciting reports whether f elicits an acknowledgment: every frame but
// ACK, PATH_ACK, PADDING and CONNECTION_CLOSE (RFC 9000 Section 13.2.1,
// draft-ietf-quic-multipath-21 Section 4).
func AckEliciting(f Frame) bool {
	switch f.(type) {
	case *AckFrame, *PathAckFrame, *PaddingFrame, *ConnectionCloseFrame:
		return false
	}
	return true
}

// IsProbing reports whether f is a probing frame: PATH_CHALLENGE,
// PATH_RESPONSE, NEW_CONNECTION_ID or PADDING (RFC 9000 Section 9.1).
func IsProbing(f Frame) bool {
	switch f.(type) {
	case *PathChallengeFrame, *PathResponseFrame, *NewConnectionIDFrame, *PaddingFrame:
		return true
	}
	return false
}

// maxDataLen returns the largest n such that a length field for n plus n
// bytes of data fit in avail bytes, -1 if not even an empty one does.
func maxDataLen(avail int) int {
	if avail < 1 {
		return -1
	}
	n := avail - VarintLen(uint64(avail))
	for n+1+VarintLen(uint64(n+1)) <= avail {
		n++
	}
	return n
}

// MaxStreamDataLen returns the largest data length of a STREAM frame for
// streamID at offset, with its Length field (and its Offset field when
// offset is not zero), whose encoding fits in room bytes and whose data
// ends at most at 2^62-1; -1 if not even an empty frame fits.
func MaxStreamDataLen(streamID, offset uint64, room int) int {
	hdr := 1 + VarintLen(streamID)
	if offset > 0 {
		hdr += VarintLen(offset)
	}
	return capDataLen(maxDataLen(room-hdr), offset)
}

// capDataLen lowers n so that offset+n stays within 2^62-1.
func capDataLen(n int, offset uint64) int {
	if n > 0 {
		if rem := MaxVarint - min(offset, MaxVarint); uint64(n) > rem {
			n = int(rem)
		}
	}
	return n
}

// MaxCryptoDataLen returns the largest data length of a CRYPTO frame at
// offset whose encoding fits in room bytes and whose data ends at most at
// 2^62-1; 0 if only an empty frame fits, -1 if not even that.
func MaxCryptoDataLen(offset uint64, room int) int {
	return capDataLen(maxDataLen(room-1-VarintLen(offset)), offset)
}

// PaddingFrame is a run of PADDING frames (RFC 9000 Section 19.1): Length
// zero bytes.
type PaddingFrame struct {
	Length int
}

// Type returns FrameTypePadding.
func (f *PaddingFrame) Type() uint64 { return FrameTypePadding }

// Len returns Length (0 if negative).
func (f *PaddingFrame) Len() int { return max(f.Length, 0) }

// Append appends Length zero bytes.
func (f *PaddingFrame) Append(b []byte) []byte {
	n := f.Len()
	b = append(b, make([]byte, n)...)
	return b
}

// PingFrame is a PING frame (RFC 9000 Section 19.2).
type PingFrame struct{}

// Type returns FrameTypePing.
func (f *PingFrame) Type() uint64 { return FrameTypePing }

// Len returns 1.
func (f *PingFrame) Len() int { return 1 }

// Append appends the frame.
func (f *PingFrame) Append(b []byte) []byte { return append(b, byte(FrameTypePing)) }

// AckRange is a range of acknowledged packet numbers, both ends included.
type AckRange struct {
	Smallest, Largest uint64
}

// AckFrame is an ACK frame (RFC 9000 Section 19.3).
type AckFrame struct {
	// Ranges lists the acknowledged ranges in descending order, without
	// overlap or adjacency: Ranges[0].Largest is the Largest
	// Acknowledged field. A frame without ranges has no encoding: its Len
	// is 0 and Append writes nothing.
	Ranges []AckRange
	// AckDelay is the ACK Delay field, in units of 2^ack_delay_exponent
	// microseconds.
	AckDelay uint64
	// HasECN selects type 0x03, carrying the three ECN counts.
	HasECN         bool
	ECT0, ECT1, CE uint64
}

// Type returns FrameTypeAck or FrameTypeAckECN.
func (f *AckFrame) Type() uint64 {
	if f.HasECN {
		return FrameTypeAckECN
	}
	return FrameTypeAck
}

// Len returns the length of the encoding.
func (f *AckFrame) Len() int {
	if len(f.Ranges) == 0 {
		return 0
	}
	return 1 + ackBodyLen(f.Ranges, f.AckDelay, f.HasECN, f.ECT0, f.ECT1, f.CE)
}

// Append appends the frame.
func (f *AckFrame) Append(b []byte) []byte {
	if len(f.Ranges) == 0 {
		return b
	}
	b = append(b, byte(f.Type()))
	return appendAckBody(b, f.Ranges, f.AckDelay, f.HasECN, f.ECT0, f.ECT1, f.CE)
}

// ackBodyLen is the length of the fields of ACK and PATH_ACK from Largest
// Acknowledged on.
func ackBodyLen(ranges []AckRange, delay uint64, ecn bool, ect0, ect1, ce uint64) int {
	first := ranges[0]
	n := VarintLen(first.Largest) + VarintLen(delay) + VarintLen(uint64(len(ranges)-1)) + VarintLen(first.Largest-first.Smallest)
	prev := first.Smallest
	for _, r := range ranges[1:] {
		n += VarintLen(prev-r.Largest-2) + VarintLen(r.Largest-r.Smallest)
		prev = r.Smallest
	}
	if ecn {
		n += VarintLen(ect0) + VarintLen(ect1) + VarintLen(ce)
	}
	return n
}

// appendAckBody appends the fields of ACK and PATH_ACK from Largest
// Acknowledged on (RFC 9000 Section 19.3.1).
func appendAckBody(b []byte, ranges []AckRange, delay uint64, ecn bool, ect0, ect1, ce uint64) []byte {
	first := ranges[0]
	b = AppendVarint(b, first.Largest)
	b = AppendVarint(b, delay)
	b = AppendVarint(b, uint64(len(ranges)-1))
	b = AppendVarint(b, first.Largest-first.Smallest)
	prev := first.Smallest
	for _, r := range ranges[1:] {
		b = AppendVarint(b, prev-r.Largest-2)
		b = AppendVarint(b, r.Largest-r.Smallest)
		prev = r.Smallest
	}
	if ecn {
		b = AppendVarint(b, ect0)
		b = AppendVarint(b, ect1)
		b = AppendVarint(b, ce)
	}
	return b
}

// inlineAckRanges is how many ranges a parsed ACK frame holds without a
// second allocation.
const inlineAckRanges = 4

// ackAlloc puts a parsed AckFrame and its first ranges in one allocation.
type ackAlloc struct {
	f   AckFrame
	buf [inlineAckRanges]AckRange
}

// parseAck parses an ACK frame of type t after its type.
func parseAck(r *reader, t uint64, sc *FrameParser) (Frame, error) {
	var f *AckFrame
	var buf []AckRange
	if sc != nil {
		f, buf = &sc.ack, sc.ranges[:0]
		*f = AckFrame{}
	} else {
		a := new(ackAlloc)
		f, buf = &a.f, a.buf[:0]
	}
	f.HasECN = t == FrameTypeAckECN
	var ok bool
	f.Ranges, f.AckDelay, f.ECT0, f.ECT1, f.CE, ok = parseAckBody(r, f.HasECN, buf)
	if !ok {
		return nil, ackError(r, t)
	}
	if sc != nil {
		sc.ranges = f.Ranges
	}
	return f, nil
}

// ackError returns the error of an ACK or PATH_ACK frame that
// parseAckBody rejected.
func ackError(r *reader, t uint64) error {
	if r.bad {
		return truncated(t)
	}
	return frameError(t, "ACK range below packet number 0")
}

// parseAckBody parses the fields of ACK and PATH_ACK from Largest
// Acknowledged on (RFC 9000 Section 19.3.1), appending the ranges to buf.
// It reports false if the frame is truncated (r.bad is set) or a range
// would go below packet number 0. A truncated ECN section leaves ok true
// and r.bad set.
func parseAckBody(r *reader, ecn bool, buf []AckRange) (ranges []AckRange, delay, ect0, ect1, ce uint64, ok bool) {
	largest := r.varint()
	delay = r.varint()
	count := r.varint()
	firstLen := r.varint()
	// Every further range takes at least two bytes; reject impossible
	// counts before allocating for them.
	if r.bad || count > uint64(r.left())/2 {
		r.bad = true
		return nil, 0, 0, 0, 0, false
	}
	if firstLen > largest {
		return nil, 0, 0, 0, 0, false
	}
	smallest := largest - firstLen
	ranges = append(buf, AckRange{Smallest: smallest, Largest: largest})
	for ; count > 0; count-- {
		gap := r.varint()
		length := r.varint()
		if r.bad {
			return nil, 0, 0, 0, 0, false
		}
		// The next range's largest is smallest - gap - 2.
		if smallest < 2 || gap > smallest-2 {
			return nil, 0, 0, 0, 0, false
		}
		largest = smallest - gap - 2
		if length > largest {
			return nil, 0, 0, 0, 0, false
		}
		smallest = largest - length
		ranges = append(ranges, AckRange{Smallest: smallest, Largest: largest})
	}
	if ecn {
		ect0, ect1, ce = r.varint(), r.varint(), r.varint()
	}
	return ranges, delay, ect0, ect1, ce, true
}

// ResetStreamFrame is a RESET_STREAM frame (RFC 9000 Section 19.4).
type ResetStreamFrame struct {
	StreamID, ErrorCode, FinalSize uint64
}

// Type returns FrameTypeResetStream.
func (f *ResetStreamFrame) Type() uint64 { return FrameTypeResetStream }

// Len returns the length of the encoding.
func (f *ResetStreamFrame) Len() int {
	return 1 + VarintLen(f.StreamID) + VarintLen(f.ErrorCode) + VarintLen(f.FinalSize)
}

// Append appends the frame.
func (f *ResetStreamFrame) Append(b []byte) []byte {
	b = append(b, byte(FrameTypeResetStream))
	b = AppendVarint(b, f.StreamID)
	b = AppendVarint(b, f.ErrorCode)
	return AppendVarint(b, f.FinalSize)
}

// StopSendingFrame is a STOP_SENDING frame (RFC 9000 Section 19.5).
type StopSendingFrame struct {
	StreamID, ErrorCode uint64
}

// Type returns FrameTypeStopSending.
func (f *StopSendingFrame) Type() uint64 { return FrameTypeStopSending }

// Len returns the length of the encoding.
func (f *StopSendingFrame) Len() int { return 1 + VarintLen(f.StreamID) + VarintLen(f.ErrorCode) }

// Append appends the frame.
func (f *StopSendingFrame) Append(b []byte) []byte {
	b = append(b, byte(FrameTypeStopSending))
	b = AppendVarint(b, f.StreamID)
	return AppendVarint(b, f.ErrorCode)
}

// CryptoFrame is a CRYPTO frame (RFC 9000 Section 19.6).
type CryptoFrame struct {
	Offset uint64
	Data   []byte
}

// Type returns FrameTypeCrypto.
func (f *CryptoFrame) Type() uint64 { return FrameTypeCrypto }

// Len returns the length of the encoding.
func (f *CryptoFrame) Len() int {
	return 1 + VarintLen(f.Offset) + VarintLen(uint64(len(f.Data))) + len(f.Data)
}

// Append appends the frame.
func (f *CryptoFrame) Append(b []byte) []byte {
	b = append(b, byte(FrameTypeCrypto))
	b = AppendVarint(b, f.Offset)
	b = AppendVarint(b, uint64(len(f.Data)))
	return append(b, f.Data...)
}

// NewTokenFrame is a NEW_TOKEN frame (RFC 9000 Section 19.7). An empty
// token is a FRAME_ENCODING_ERROR.
type NewTokenFrame struct {
	Token []byte
}

// Type returns FrameTypeNewToken.
func (f *NewTokenFrame) Type() uint64 { return FrameTypeNewToken }

// Len returns the length of the encoding.
func (f *NewTokenFrame) Len() int { return 1 + VarintLen(uint64(len(f.Token))) + len(f.Token) }

// Append appends the frame.
func (f *NewTokenFrame) Append(b []byte) []byte {
	b = append(b, byte(FrameTypeNewToken))
	b = AppendVarint(b, uint64(len(f.Token)))
	return append(b, f.Token...)
}

// StreamFrame is a STREAM frame (RFC 9000 Section 19.8). The Offset field
// is written when Offset is not zero. Without DataLenPresent the data runs
// to the end of the packet, so the frame must be the packet's last.
type StreamFrame struct {
	StreamID, Offset uint64
	Data             []byte
	Fin              bool
	DataLenPresent   bool
}

// Type returns the frame's type byte, 0x08 to 0x0f.
func (f *StreamFrame) Type() uint64 {
	t := FrameTypeStream
	if f.Offset > 0 {
		t |= streamBitOff
	}
	if f.DataLenPresent {
		t |= streamBitLen
	}
	if f.Fin {
		t |= streamBitFin
	}
	return t
}

// Len returns the length of the encoding.
func (f *StreamFrame) Len() int {
	n := 1 + VarintLen(f.StreamID) + len(f.Data)
	if f.Offset > 0 {
		n += VarintLen(f.Offset)
	}
	if f.DataLenPresent {
		n += VarintLen(uint64(len(f.Data)))
	}
	return n
}

// Append appends the frame.
func (f *StreamFrame) Append(b []byte) []byte {
	b = append(b, byte(f.Type()))
	b = AppendVarint(b, f.StreamID)
	if f.Offset > 0 {
		b = AppendVarint(b, f.Offset)
	}
	if f.DataLenPresent {
		b = AppendVarint(b, uint64(len(f.Data)))
	}
	return append(b, f.Data...)
}

// MaxDataFrame is a MAX_DATA frame (RFC 9000 Section 19.9).
type MaxDataFrame struct {
	Max uint64
}

// Type returns FrameTypeMaxData.
func (f *MaxDataFrame) Type() uint64 { return FrameTypeMaxData }

// Len returns the length of the encoding.
func (f *MaxDataFrame) Len() int { return 1 + VarintLen(f.Max) }

// Append appends the frame.
func (f *MaxDataFrame) Append(b []byte) []byte {
	return AppendVarint(append(b, byte(FrameTypeMaxData)), f.Max)
}

// MaxStreamDataFrame is a MAX_STREAM_DATA frame (RFC 9000 Section 19.10).
type MaxStreamDataFrame struct {
	StreamID, Max uint64
}

// Type returns FrameTypeMaxStreamData.
func (f *MaxStreamDataFrame) Type() uint64 { return FrameTypeMaxStreamData }

// Len returns the length of the encoding.
func (f *MaxStreamDataFrame) Len() int { return 1 + VarintLen(f.StreamID) + VarintLen(f.Max) }

// Append appends the frame.
func (f *MaxStreamDataFrame) Append(b []byte) []byte {
	b = AppendVarint(append(b, byte(FrameTypeMaxStreamData)), f.StreamID)
	return AppendVarint(b, f.Max)
}

// MaxStreamsFrame is a MAX_STREAMS frame (RFC 9000 Section 19.11) for
// bidirectional (Bidi) or unidirectional streams. Max above 2^60 is a
// FRAME_ENCODING_ERROR.
type MaxStreamsFrame struct {
	Bidi bool
	Max  uint64
}

// Type returns FrameTypeMaxStreamsBidi or FrameTypeMaxStreamsUni.
func (f *MaxStreamsFrame) Type() uint64 {
	if f.Bidi {
		return FrameTypeMaxStreamsBidi
	}
	return FrameTypeMaxStreamsUni
}

// Len returns the length of the encoding.
func (f *MaxStreamsFrame) Len() int { return 1 + VarintLen(f.Max) }

// Append appends the frame.
func (f *MaxStreamsFrame) Append(b []byte) []byte {
	return AppendVarint(append(b, byte(f.Type())), f.Max)
}

// DataBlockedFrame is a DATA_BLOCKED frame (RFC 9000 Section 19.12).
type DataBlockedFrame struct {
	Limit uint64
}

// Type returns FrameTypeDataBlocked.
func (f *DataBlockedFrame) Type() uint64 { return FrameTypeDataBlocked }

// Len returns the length of the encoding.
func (f *DataBlockedFrame) Len() int { return 1 + VarintLen(f.Limit) }

// Append appends the frame.
func (f *DataBlockedFrame) Append(b []byte) []byte {
	return AppendVarint(append(b, byte(FrameTypeDataBlocked)), f.Limit)
}

// StreamDataBlockedFrame is a STREAM_DATA_BLOCKED frame (RFC 9000 Section
// 19.13).
type StreamDataBlockedFrame struct {
	StreamID, Limit uint64
}

// Type returns FrameTypeStreamDataBlocked.
func (f *StreamDataBlockedFrame) Type() uint64 { return FrameTypeStreamDataBlocked }

// Len returns the length of the encoding.
func (f *StreamDataBlockedFrame) Len() int { return 1 + VarintLen(f.StreamID) + VarintLen(f.Limit) }

// Append appends the frame.
func (f *StreamDataBlockedFrame) Append(b []byte) []byte {
	b = AppendVarint(append(b, byte(FrameTypeStreamDataBlocked)), f.StreamID)
	return AppendVarint(b, f.Limit)
}

// StreamsBlockedFrame is a STREAMS_BLOCKED frame (RFC 9000 Section 19.14)
// for bidirectional (Bidi) or unidirectional streams. Limit above 2^60 is a
// FRAME_ENCODING_ERROR.
type StreamsBlockedFrame struct {
	Bidi  bool
	Limit uint64
}

// Type returns FrameTypeStreamsBlockedBidi or FrameTypeStreamsBlockedUni.
func (f *StreamsBlockedFrame) Type() uint64 {
	if f.Bidi {
		return FrameTypeStreamsBlockedBidi
	}
	return FrameTypeStreamsBlockedUni
}

// Len returns the length of the encoding.
func (f *StreamsBlockedFrame) Len() int { return 1 + VarintLen(f.Limit) }

// Append appends the frame.
func (f *StreamsBlockedFrame) Append(b []byte) []byte {
	return AppendVarint(append(b, byte(f.Type())), f.Limit)
}

// NewConnectionIDFrame is a NEW_CONNECTION_ID frame (RFC 9000 Section
// 19.15). ConnID must be 1 to 20 bytes long and RetirePriorTo at most Seq.
type NewConnectionIDFrame struct {
	Seq, RetirePriorTo uint64
	ConnID             []byte
	ResetToken         [16]byte
}

// Type returns FrameTypeNewConnectionID.
func (f *NewConnectionIDFrame) Type() uint64 { return FrameTypeNewConnectionID }

// Len returns the length of the encoding.
func (f *NewConnectionIDFrame) Len() int {
	return 1 + VarintLen(f.Seq) + VarintLen(f.RetirePriorTo) + 1 + len(f.ConnID) + resetTokenLen
}

// Append appends the frame.
func (f *NewConnectionIDFrame) Append(b []byte) []byte {
	b = append(b, byte(FrameTypeNewConnectionID))
	b = AppendVarint(b, f.Seq)
	b = AppendVarint(b, f.RetirePriorTo)
	b = append(b, byte(len(f.ConnID)))
	b = append(b, f.ConnID...)
	return append(b, f.ResetToken[:]...)
}

// RetireConnectionIDFrame is a RETIRE_CONNECTION_ID frame (RFC 9000
// Section 19.16).
type RetireConnectionIDFrame struct {
	Seq uint64
}

// Type returns FrameTypeRetireConnectionID.
func (f *RetireConnectionIDFrame) Type() uint64 { return FrameTypeRetireConnectionID }

// Len returns the length of the encoding.
func (f *RetireConnectionIDFrame) Len() int { return 1 + VarintLen(f.Seq) }

// Append appends the frame.
func (f *RetireConnectionIDFrame) Append(b []byte) []byte {
	return AppendVarint(append(b, byte(FrameTypeRetireConnectionID)), f.Seq)
}

// PathChallengeFrame is a PATH_CHALLENGE frame (RFC 9000 Section 19.17).
type PathChallengeFrame struct {
	Data [8]byte
}

// Type returns FrameTypePathChallenge.
func (f *PathChallengeFrame) Type() uint64 { return FrameTypePathChallenge }

// Len returns 9.
func (f *PathChallengeFrame) Len() int { return 9 }

// Append appends the frame.
func (f *PathChallengeFrame) Append(b []byte) []byte {
	return append(append(b, byte(FrameTypePathChallenge)), f.Data[:]...)
}

// PathResponseFrame is a PATH_RESPONSE frame (RFC 9000 Section 19.18).
type PathResponseFrame struct {
	Data [8]byte
}

// Type returns FrameTypePathResponse.
func (f *PathResponseFrame) Type() uint64 { return FrameTypePathResponse }

// Len returns 9.
func (f *PathResponseFrame) Len() int { return 9 }

// Append appends the frame.
func (f *PathResponseFrame) Append(b []byte) []byte {
	return append(append(b, byte(FrameTypePathResponse)), f.Data[:]...)
}

// ConnectionCloseFrame is a CONNECTION_CLOSE frame (RFC 9000 Section
// 19.19): of type 0x1c for transport errors, with the type of the frame
// that caused the error, or of type 0x1d (IsApplication) for application
// errors, without it.
type ConnectionCloseFrame struct {
	IsApplication bool
	ErrorCode     uint64
	FrameType     uint64
	Reason        []byte
}

// Type returns FrameTypeConnectionClose or FrameTypeConnectionCloseApp.
func (f *ConnectionCloseFrame) Type() uint64 {
	if f.IsApplication {
		return FrameTypeConnectionCloseApp
	}
	return FrameTypeConnectionClose
}

// Len returns the length of the encoding.
func (f *ConnectionCloseFrame) Len() int {
	n := 1 + VarintLen(f.ErrorCode) + VarintLen(uint64(len(f.Reason))) + len(f.Reason)
	if !f.IsApplication {
		n += VarintLen(f.FrameType)
	}
	return n
}

// Append appends the frame.
func (f *ConnectionCloseFrame) Append(b []byte) []byte {
	b = AppendVarint(append(b, byte(f.Type())), f.ErrorCode)
	if !f.IsApplication {
		b = AppendVarint(b, f.FrameType)
	}
	b = AppendVarint(b, uint64(len(f.Reason)))
	return append(b, f.Reason...)
}

// HandshakeDoneFrame is a HANDSHAKE_DONE frame (RFC 9000 Section 19.20).
type HandshakeDoneFrame struct{}

// Type returns FrameTypeHandshakeDone.
func (f *HandshakeDoneFrame) Type() uint64 { return FrameTypeHandshakeDone }

// Len returns 1.
func (f *HandshakeDoneFrame) Len() int { return 1 }

// Append appends the frame.
func (f *HandshakeDoneFrame) Append(b []byte) []byte {
	return append(b, byte(FrameTypeHandshakeDone))
}
