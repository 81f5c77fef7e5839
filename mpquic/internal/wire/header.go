package wire

import (
	"encoding/binary"
	"errors"
)

// Version1 is QUIC version 1 (RFC 9000).
const Version1 uint32 = 1

// MaxConnIDLen is the longest connection ID of QUIC version 1 (RFC 9000
// Section 17.2). Version Negotiation and packets of unknown versions may
// carry up to 255 bytes (RFC 8999 Section 5.1).
const MaxConnIDLen = 20

// PacketType is the type of a QUIC packet.
type PacketType uint8

// Packet types. PacketUnknown is a long header packet of a version other
// than 1 and 0: only its version-independent fields are known.
const (
	PacketUnknown PacketType = iota
	PacketInitial
	Packet0RTT
	PacketHandshake
	PacketRetry
	PacketVersionNegotiation
	Packet1RTT
)

// String returns the packet type's qlog name (draft-ietf-quic-qlog-quic-events).
func (t PacketType) String() string {
	switch t {
	case PacketInitial:
		return "initial"
	case Packet0RTT:
		return "0RTT"
	case PacketHandshake:
		return "handshake"
	case PacketRetry:
		return "retry"
	case PacketVersionNegotiation:
		return "version_negotiation"
	case Packet1RTT:
		return "1RTT"
	default:
		return "unknown"
	}
}

// Long header type bits of version 1 (RFC 9000 Table 5).
const (
	longTypeInitial   = 0x0
	longType0RTT      = 0x1
	longTypeHandshake = 0x2
	longTypeRetry     = 0x3
)

// retryTagLen is the length of the Retry Integrity Tag (RFC 9001 Section 5.8).
const retryTagLen = 16

// Header is the cleartext part of a packet header, as far as it can be read
// before header protection is removed. Its slices alias the parsed data.
type Header struct {
	// Type is the packet type.
	Type PacketType
	// Version is the version of a long header packet: 0 for Version
	// Negotiation, any value for PacketUnknown, 0 for 1-RTT packets
	// (short headers carry no version).
	Version uint32
	// DstConnID and SrcConnID are the connection IDs; short headers carry
	// no source connection ID.
	DstConnID, SrcConnID []byte
	// Token is the token of an Initial packet or the Retry Token of a
	// Retry packet (without the integrity tag).
	Token []byte
	// Length is the number of bytes of the parsed data the packet
	// occupies: for Initial, 0-RTT and Handshake packets up to the end of
	// the payload their Length field announces, so that coalesced packets
	// can be split; for every other packet the rest of the data.
	Length int
	// PNOffset is the offset of the packet number field; 0 for packets
	// without one (Retry, Version Negotiation, unknown versions).
	PNOffset int
	// SupportedVersions lists the versions of a Version Negotiation packet.
	SupportedVersions []uint32
}

// Header parse errors. They only ever cause a packet to be dropped.
var (
	errHeaderTruncated   = errors.New("wire: truncated packet header")
	errFixedBit          = errors.New("wire: fixed bit is zero")
	errConnIDTooLong     = errors.New("wire: connection ID too long")
	errLengthBeyondData  = errors.New("wire: packet length beyond the datagram")
	errBadVNLength       = errors.New("wire: version negotiation list not a multiple of 4 bytes")
	errBadShortDCIDLen   = errors.New("wire: invalid short header connection ID length")
	errRetryWithoutTag   = errors.New("wire: retry packet shorter than its integrity tag")
	errTokenBeyondPacket = errors.New("wire: token beyond the packet")
)

// ParseHeader parses the header of the first packet in data, a datagram or
// what is left of it after the packets before, without removing header
// protection. Short headers have a destination connection ID of
// shortDCIDLen bytes. For versions other than 1 only the version-independent
// fields (RFC 8999) are parsed and Type is PacketUnknown, so that the caller
// can answer with Version Negotiation.
func ParseHeader(data []byte, shortDCIDLen int) (Header, error) {
	var h Header
	if len(data) == 0 {
		return h, errHeaderTruncated
	}
	b0 := data[0]
	if b0&0x80 == 0 {
		// Short header (RFC 9000 Section 17.3.1).
		if shortDCIDLen < 0 || shortDCIDLen > MaxConnIDLen {
			return h, errBadShortDCIDLen
		}
		if b0&0x40 == 0 {
			return h, errFixedBit
		}
		// At least one byte of packet number follows the DCID.
		if len(data) < 2+shortDCIDLen {
			return h, errHeaderTruncated
		}
		h.Type = Packet1RTT
		h.DstConnID = data[1 : 1+shortDCIDLen : 1+shortDCIDLen]
		h.PNOffset = 1 + shortDCIDLen
		h.Length = len(data)
		return h, nil
	}
	if len(data) < 7 {
		return h, errHeaderTruncated
	}
	h.Version = binary.BigEndian.Uint32(data[1:5])
	maxCID := 255
	if h.Version == Version1 {
		maxCID = MaxConnIDLen
	}
	i := 5
	var err error
	if h.DstConnID, i, err = parseConnID(data, i, maxCID); err != nil {
		return h, err
	}
	if h.SrcConnID, i, err = parseConnID(data, i, maxCID); err != nil {
		return h, err
	}
	switch h.Version {
	case 0:
		return parseVersionNegotiation(h, data, i)
	case Version1:
	default:
		h.Type = PacketUnknown
		h.Length = len(data)
		return h, nil
	}
	if b0&0x40 == 0 {
		return h, errFixedBit
	}
	r := reader{b: data, i: i}
	switch (b0 >> 4) & 0x3 {
	case longTypeInitial:
		h.Type = PacketInitial
		h.Token = r.bytes(r.varint())
		if r.bad {
			return h, errTokenBeyondPacket
		}
	case longType0RTT:
		h.Type = Packet0RTT
	case longTypeHandshake:
		h.Type = PacketHandshake
	default:
		h.Type = PacketRetry
		if len(data)-i < retryTagLen {
			return h, errRetryWithoutTag
		}
		end := len(data) - retryTagLen
		h.Token = data[i:end:end]
		h.Length = len(data)
		return h, nil
	}
	length := r.varint()
	if r.bad {
		return h, errHeaderTruncated
	}
	if length > uint64(r.left()) {
		return h, errLengthBeyondData
	}
	h.PNOffset = r.i
	h.Length = r.i + int(length)
	return h, nil
}

// parseConnID reads a connection ID with its one-byte length at data[i:].
func parseConnID(data []byte, i, maxLen int) ([]byte, int, error) {
	if i >= len(data) {
		return nil, i, errHeaderTruncated
	}
	n := int(data[i])
	i++
	if n > maxLen {
		return nil, i, errConnIDTooLong
	}
	if n > len(data)-i {
		return nil, i, errHeaderTruncated
	}
	return data[i : i+n : i+n], i + n, nil
}

// parseVersionNegotiation reads the version list of a Version Negotiation
// packet (RFC 9000 Section 17.2.1); the connection IDs are parsed.
func parseVersionNegotiation(h Header, data []byte, i int) (Header, error) {
	h.Type = PacketVersionNegotiation
	rest := data[i:]
	if len(rest)%4 != 0 {
		return h, errBadVNLength
	}
	h.SupportedVersions = make([]uint32, len(rest)/4)
	for k := range h.SupportedVersions {
		h.SupportedVersions[k] = binary.BigEndian.Uint32(rest[4*k:])
	}
	h.Length = len(data)
	return h, nil
}

// ParseConnIDs returns the destination connection ID of the packet at the
// start of data and whether it has a long header: the cheap parse an
// endpoint needs to route a datagram. Short headers have a destination
// connection ID of shortDCIDLen bytes. Nothing beyond the connection ID is
// checked.
func ParseConnIDs(data []byte, shortDCIDLen int) (dcid []byte, isLong bool, err error) {
	if len(data) == 0 {
		return nil, false, errHeaderTruncated
	}
	if data[0]&0x80 == 0 {
		if shortDCIDLen < 0 || shortDCIDLen > MaxConnIDLen {
			return nil, false, errBadShortDCIDLen
		}
		if len(data) < 1+shortDCIDLen {
			return nil, false, errHeaderTruncated
		}
		return data[1 : 1+shortDCIDLen : 1+shortDCIDLen], false, nil
	}
	if len(data) < 6 {
		return nil, true, errHeaderTruncated
	}
	maxCID := 255
	if binary.BigEndian.Uint32(data[1:5]) == Version1 {
		maxCID = MaxConnIDLen
	}
	dcid, _, err = parseConnID(data, 5, maxCID)
	if err != nil {
		return nil, true, err
	}
	return dcid, true, nil
}

// AppendVersionNegotiation appends a Version Negotiation packet (RFC 9000
// Section 17.2.1) listing versions. dcid and scid are the source and
// destination connection IDs of the packet being answered, echoed in that
// swapped order. The seven unused bits of the first byte come from unused,
// except that 0x40 is always set as RFC 9000 recommends for multiplexing
// with other protocols.
func AppendVersionNegotiation(b, dcid, scid []byte, versions []uint32, unused byte) []byte {
	b = append(b, 0xc0|unused&0x3f, 0, 0, 0, 0)
	b = append(b, byte(len(dcid)))
	b = append(b, dcid...)
	b = append(b, byte(len(scid)))
	b = append(b, scid...)
	for _, v := range versions {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// AppendRetry appends a Retry packet (RFC 9000 Section 17.2.5) without its
// integrity tag, which the caller computes over the result and appends.
func AppendRetry(b []byte, version uint32, dcid, scid, token []byte) []byte {
	b = append(b, 0xc0|longTypeRetry<<4)
	b = binary.BigEndian.AppendUint32(b, version)
	b = append(b, byte(len(dcid)))
	b = append(b, dcid...)
	b = append(b, byte(len(scid)))
	b = append(b, scid...)
	return append(b, token...)
}

// AppendLongHeader appends the long header of an Initial, 0-RTT or
// Handshake packet (RFC 9000 Section 17.2) with packet number pn truncated
// to pnLen bytes (clamped to 1..4). The token, preceded by its length, is
// written only for Initial packets. The Length field is a two-byte
// placeholder at lengthOff, to be filled by PutLongHeaderLength once the
// payload is known; pnOff is the offset of the packet number. Both offsets
// index out. For other packet types b is returned unchanged with both
// offsets -1.
func AppendLongHeader(b []byte, t PacketType, version uint32, dcid, scid, token []byte, pn uint64, pnLen int) (out []byte, lengthOff, pnOff int) {
	var bits byte
	switch t {
	case PacketInitial:
		bits = longTypeInitial
	case Packet0RTT:
		bits = longType0RTT
	case PacketHandshake:
		bits = longTypeHandshake
	default:
		return b, -1, -1
	}
	pnLen = min(max(pnLen, 1), 4)
	b = append(b, 0xc0|bits<<4|byte(pnLen-1))
	b = binary.BigEndian.AppendUint32(b, version)
	b = append(b, byte(len(dcid)))
	b = append(b, dcid...)
	b = append(b, byte(len(scid)))
	b = append(b, scid...)
	if t == PacketInitial {
		b = AppendVarint(b, uint64(len(token)))
		b = append(b, token...)
	}
	lengthOff = len(b)
	b = append(b, 0x40, 0)
	pnOff = len(b)
	return appendPacketNumber(b, pn, pnLen), lengthOff, pnOff
}

// maxLongHeaderLength is the largest value the two-byte Length placeholder
// of AppendLongHeader holds.
const maxLongHeaderLength = 1<<14 - 1

// PutLongHeaderLength fills the Length placeholder that AppendLongHeader
// left at pkt[lengthOff:] with length, the number of bytes of packet number
// and protected payload (including the AEAD tag), as a two-byte varint. It
// reports false, leaving pkt unchanged, if length does not fit in two bytes
// or the placeholder is outside pkt.
func PutLongHeaderLength(pkt []byte, lengthOff, length int) bool {
	if length < 0 || length > maxLongHeaderLength || lengthOff < 0 || lengthOff > len(pkt)-2 {
		return false
	}
	binary.BigEndian.PutUint16(pkt[lengthOff:], uint16(length)|0x4000)
	return true
}

// AppendShortHeader appends the header of a 1-RTT packet (RFC 9000 Section
// 17.3.1) with the key phase bit and packet number pn truncated to pnLen
// bytes (clamped to 1..4); pnOff indexes out at the packet number. The spin
// bit and the reserved bits are zero.
func AppendShortHeader(b, dcid []byte, pn uint64, pnLen int, keyPhase bool) (out []byte, pnOff int) {
	pnLen = min(max(pnLen, 1), 4)
	b0 := 0x40 | byte(pnLen-1)
	if keyPhase {
		b0 |= 0x04
	}
	b = append(b, b0)
	b = append(b, dcid...)
	pnOff = len(b)
	return appendPacketNumber(b, pn, pnLen), pnOff
}
