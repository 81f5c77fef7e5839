package wire

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// Transport parameter IDs (RFC 9000 Section 18.2, RFC 9221 Section 3,
// draft-ietf-quic-multipath-21 Section 2.1).
const (
	tpOriginalDestinationConnectionID = 0x00
	tpMaxIdleTimeout                  = 0x01
	tpStatelessResetToken             = 0x02
	tpMaxUDPPayloadSize               = 0x03
	tpInitialMaxData                  = 0x04
	tpInitialMaxStreamDataBidiLocal   = 0x05
	tpInitialMaxStreamDataBidiRemote  = 0x06
	tpInitialMaxStreamDataUni         = 0x07
	tpInitialMaxStreamsBidi           = 0x08
	tpInitialMaxStreamsUni            = 0x09
	tpAckDelayExponent                = 0x0a
	tpMaxAckDelay                     = 0x0b
	tpDisableActiveMigration          = 0x0c
	tpPreferredAddress                = 0x0d
	tpActiveConnectionIDLimit         = 0x0e
	tpInitialSourceConnectionID       = 0x0f
	tpRetrySourceConnectionID         = 0x10
	tpMaxDatagramFrameSize            = 0x20
	tpInitialMaxPathID                = 0x3e
)

// Defaults and limits of RFC 9000 Section 18.2.
const (
	defaultMaxUDPPayloadSize       = 65527
	minMaxUDPPayloadSize           = 1200
	defaultAckDelayExponent        = 3
	maxAckDelayExponent            = 20
	defaultMaxAckDelay             = 25 * time.Millisecond
	maxMaxAckDelayMillis           = 1<<14 - 1
	defaultActiveConnectionIDLimit = 2
)

// maxDurationMillis is the largest millisecond count a time.Duration holds.
const maxDurationMillis = math.MaxInt64 / int64(time.Millisecond)

// PreferredAddress is the value of the preferred_address transport
// parameter (RFC 9000 Section 18.2). An all-zero address and port means the
// server offers no address of that family.
type PreferredAddress struct {
	IPv4       [4]byte
	IPv4Port   uint16
	IPv6       [16]byte
	IPv6Port   uint16
	ConnID     []byte
	ResetToken [16]byte
}

// preferredAddressFixedLen is the length of a preferred address without its
// connection ID.
const preferredAddressFixedLen = 4 + 2 + 16 + 2 + 1 + resetTokenLen

// TransportParameters are the QUIC transport parameters (RFC 9000
// Section 18.2) with the multipath extension's initial_max_path_id.
// Durations travel as whole milliseconds.
type TransportParameters struct {
	// OriginalDestinationConnectionID is sent by servers only.
	OriginalDestinationConnectionID    []byte
	HasOriginalDestinationConnectionID bool
	// MaxIdleTimeout is zero when the idle timeout is disabled.
	MaxIdleTimeout time.Duration
	// StatelessResetToken is sent by servers only; nil when absent.
	StatelessResetToken            *[16]byte
	MaxUDPPayloadSize              uint64
	InitialMaxData                 uint64
	InitialMaxStreamDataBidiLocal  uint64
	InitialMaxStreamDataBidiRemote uint64
	InitialMaxStreamDataUni        uint64
	InitialMaxStreamsBidi          uint64
	InitialMaxStreamsUni           uint64
	AckDelayExponent               uint64
	MaxAckDelay                    time.Duration
	DisableActiveMigration         bool
	// PreferredAddress is sent by servers only; nil when absent.
	PreferredAddress             *PreferredAddress
	ActiveConnectionIDLimit      uint64
	InitialSourceConnectionID    []byte
	HasInitialSourceConnectionID bool
	// RetrySourceConnectionID is sent by servers only.
	RetrySourceConnectionID    []byte
	HasRetrySourceConnectionID bool
	// MaxDatagramFrameSize is max_datagram_frame_size (RFC 9221); zero
	// when absent.
	MaxDatagramFrameSize uint64
	// InitialMaxPathID is initial_max_path_id
	// (draft-ietf-quic-multipath-21 Section 2.1); its presence enables
	// multipath.
	InitialMaxPathID    uint64
	HasInitialMaxPathID bool
	// Repair offers the experimental REPAIR frames (repair.go, TPRepair,
	// zero-length value), RepairQ the REPAIR_Q frames (TPRepairQ).
	Repair, RepairQ bool
}

// DefaultTransportParameters returns the values that absent parameters take
// (RFC 9000 Section 18.2): a max_udp_payload_size of 65527, an
// ack_delay_exponent of 3, a max_ack_delay of 25 ms, an
// active_connection_id_limit of 2 and zero or absent for the rest.
func DefaultTransportParameters() TransportParameters {
	return TransportParameters{
		MaxUDPPayloadSize:       defaultMaxUDPPayloadSize,
		AckDelayExponent:        defaultAckDelayExponent,
		MaxAckDelay:             defaultMaxAckDelay,
		ActiveConnectionIDLimit: defaultActiveConnectionIDLimit,
	}
}

// durationMillis converts d to milliseconds, rounding up; negative
// durations count as zero.
func durationMillis(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	return uint64(ms)
}

// millisDuration converts a millisecond count to a duration, saturating at
// the largest whole number of milliseconds a time.Duration holds.
func millisDuration(ms uint64) time.Duration {
	if ms > uint64(maxDurationMillis) {
		ms = uint64(maxDurationMillis)
	}
	return time.Duration(ms) * time.Millisecond
}

// Append appends the encoding of the parameters that differ from their
// defaults and of those marked present, in increasing order of ID.
func (p *TransportParameters) Append(b []byte) []byte {
	if p.HasOriginalDestinationConnectionID {
		b = appendBytesParam(b, tpOriginalDestinationConnectionID, p.OriginalDestinationConnectionID)
	}
	if ms := durationMillis(p.MaxIdleTimeout); ms != 0 {
		b = appendIntParam(b, tpMaxIdleTimeout, ms)
	}
	if p.StatelessResetToken != nil {
		b = appendBytesParam(b, tpStatelessResetToken, p.StatelessResetToken[:])
	}
	if p.MaxUDPPayloadSize != defaultMaxUDPPayloadSize {
		b = appendIntParam(b, tpMaxUDPPayloadSize, p.MaxUDPPayloadSize)
	}
	b = appendNonZeroParam(b, tpInitialMaxData, p.InitialMaxData)
	b = appendNonZeroParam(b, tpInitialMaxStreamDataBidiLocal, p.InitialMaxStreamDataBidiLocal)
	b = appendNonZeroParam(b, tpInitialMaxStreamDataBidiRemote, p.InitialMaxStreamDataBidiRemote)
	b = appendNonZeroParam(b, tpInitialMaxStreamDataUni, p.InitialMaxStreamDataUni)
	b = appendNonZeroParam(b, tpInitialMaxStreamsBidi, p.InitialMaxStreamsBidi)
	b = appendNonZeroParam(b, tpInitialMaxStreamsUni, p.InitialMaxStreamsUni)
	if p.AckDelayExponent != defaultAckDelayExponent {
		b = appendIntParam(b, tpAckDelayExponent, p.AckDelayExponent)
	}
	if p.MaxAckDelay != defaultMaxAckDelay {
		b = appendIntParam(b, tpMaxAckDelay, durationMillis(p.MaxAckDelay))
	}
	if p.DisableActiveMigration {
		b = appendBytesParam(b, tpDisableActiveMigration, nil)
	}
	if pa := p.PreferredAddress; pa != nil {
		b = AppendVarint(b, tpPreferredAddress)
		b = AppendVarint(b, uint64(preferredAddressFixedLen+len(pa.ConnID)))
		b = append(b, pa.IPv4[:]...)
		b = binary.BigEndian.AppendUint16(b, pa.IPv4Port)
		b = append(b, pa.IPv6[:]...)
		b = binary.BigEndian.AppendUint16(b, pa.IPv6Port)
		b = append(b, byte(len(pa.ConnID)))
		b = append(b, pa.ConnID...)
		b = append(b, pa.ResetToken[:]...)
	}
	if p.ActiveConnectionIDLimit != defaultActiveConnectionIDLimit {
		b = appendIntParam(b, tpActiveConnectionIDLimit, p.ActiveConnectionIDLimit)
	}
	if p.HasInitialSourceConnectionID {
		b = appendBytesParam(b, tpInitialSourceConnectionID, p.InitialSourceConnectionID)
	}
	if p.HasRetrySourceConnectionID {
		b = appendBytesParam(b, tpRetrySourceConnectionID, p.RetrySourceConnectionID)
	}
	b = appendNonZeroParam(b, tpMaxDatagramFrameSize, p.MaxDatagramFrameSize)
	if p.HasInitialMaxPathID {
		b = appendIntParam(b, tpInitialMaxPathID, p.InitialMaxPathID)
	}
	if p.Repair {
		b = appendBytesParam(b, TPRepair, nil)
	}
	if p.RepairQ {
		b = appendBytesParam(b, TPRepairQ, nil)
	}
	return b
}

// appendIntParam appends an integer parameter.
func appendIntParam(b []byte, id, v uint64) []byte {
	b = AppendVarint(b, id)
	b = AppendVarint(b, uint64(VarintLen(v)))
	return AppendVarint(b, v)
}

// appendNonZeroParam appends an integer parameter unless it is zero, its
// default.
func appendNonZeroParam(b []byte, id, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendIntParam(b, id, v)
}

// appendBytesParam appends a parameter whose value is v.
func appendBytesParam(b []byte, id uint64, v []byte) []byte {
	b = AppendVarint(b, id)
	b = AppendVarint(b, uint64(len(v)))
	return append(b, v...)
}

// tpError returns a TRANSPORT_PARAMETER_ERROR.
func tpError(format string, args ...any) error {
	return qerr.New(qerr.TransportParameterError, format, args...)
}

// ParseTransportParameters parses and validates transport parameters sent
// by a server (fromServer) or a client (RFC 9000 Sections 7.4 and 18).
// Absent parameters take their defaults; unknown and reserved parameters
// are ignored. Connection IDs and tokens are copied out of b. Errors are
// *qerr.TransportError of code TRANSPORT_PARAMETER_ERROR.
func ParseTransportParameters(b []byte, fromServer bool) (TransportParameters, error) {
	p := DefaultTransportParameters()
	var seen uint64 // bit i: parameter i (all known IDs are below 64)
	r := reader{b: b}
	for r.left() > 0 {
		id := r.varint()
		val := r.bytes(r.varint())
		if r.bad {
			return p, tpError("truncated transport parameters")
		}
		if id == TPRepair {
			if p.Repair || len(val) != 0 {
				return p, tpError("repair parameter repeated or with a value")
			}
			p.Repair = true
			continue
		}
		if id == TPRepairQ {
			if p.RepairQ || len(val) != 0 {
				return p, tpError("repair_q parameter repeated or with a value")
			}
			p.RepairQ = true
			continue
		}
		if id >= 64 {
			continue
		}
		if seen&(1<<id) != 0 {
			return p, tpError("duplicate transport parameter 0x%x", id)
		}
		seen |= 1 << id
		if err := p.parseParam(id, val, fromServer); err != nil {
			return p, err
		}
	}
	return p, nil
}

// parseParam sets the parameter id from its value.
func (p *TransportParameters) parseParam(id uint64, val []byte, fromServer bool) error {
	switch id {
	case tpOriginalDestinationConnectionID, tpStatelessResetToken, tpPreferredAddress, tpRetrySourceConnectionID:
		if !fromServer {
			return tpError("server-only transport parameter 0x%x sent by a client", id)
		}
	}
	switch id {
	case tpOriginalDestinationConnectionID, tpInitialSourceConnectionID, tpRetrySourceConnectionID:
		if len(val) > MaxConnIDLen {
			return tpError("connection ID in transport parameter 0x%x longer than %d bytes", id, MaxConnIDLen)
		}
		cid := append(make([]byte, 0, len(val)), val...)
		switch id {
		case tpOriginalDestinationConnectionID:
			p.OriginalDestinationConnectionID, p.HasOriginalDestinationConnectionID = cid, true
		case tpInitialSourceConnectionID:
			p.InitialSourceConnectionID, p.HasInitialSourceConnectionID = cid, true
		default:
			p.RetrySourceConnectionID, p.HasRetrySourceConnectionID = cid, true
		}
		return nil
	case tpStatelessResetToken:
		if len(val) != resetTokenLen {
			return tpError("stateless_reset_token of %d bytes", len(val))
		}
		p.StatelessResetToken = new([16]byte)
		copy(p.StatelessResetToken[:], val)
		return nil
	case tpDisableActiveMigration:
		if len(val) != 0 {
			return tpError("disable_active_migration with a value")
		}
		p.DisableActiveMigration = true
		return nil
	case tpPreferredAddress:
		return p.parsePreferredAddress(val)
	case tpMaxIdleTimeout, tpMaxUDPPayloadSize, tpInitialMaxData, tpInitialMaxStreamDataBidiLocal,
		tpInitialMaxStreamDataBidiRemote, tpInitialMaxStreamDataUni, tpInitialMaxStreamsBidi,
		tpInitialMaxStreamsUni, tpAckDelayExponent, tpMaxAckDelay, tpActiveConnectionIDLimit,
		tpMaxDatagramFrameSize, tpInitialMaxPathID:
	default:
		return nil // unknown
	}
	v, n := decodeVarint(val)
	if n == 0 || n != len(val) {
		return tpError("transport parameter 0x%x is not one integer", id)
	}
	switch id {
	case tpMaxIdleTimeout:
		p.MaxIdleTimeout = millisDuration(v)
	case tpMaxUDPPayloadSize:
		if v < minMaxUDPPayloadSize {
			return tpError("max_udp_payload_size %d below %d", v, minMaxUDPPayloadSize)
		}
		p.MaxUDPPayloadSize = v
	case tpInitialMaxData:
		p.InitialMaxData = v
	case tpInitialMaxStreamDataBidiLocal:
		p.InitialMaxStreamDataBidiLocal = v
	case tpInitialMaxStreamDataBidiRemote:
		p.InitialMaxStreamDataBidiRemote = v
	case tpInitialMaxStreamDataUni:
		p.InitialMaxStreamDataUni = v
	case tpInitialMaxStreamsBidi, tpInitialMaxStreamsUni:
		if v > MaxStreamCount {
			return tpError("initial_max_streams 0x%x above 2^60", v)
		}
		if id == tpInitialMaxStreamsBidi {
			p.InitialMaxStreamsBidi = v
		} else {
			p.InitialMaxStreamsUni = v
		}
	case tpAckDelayExponent:
		if v > maxAckDelayExponent {
			return tpError("ack_delay_exponent %d above %d", v, maxAckDelayExponent)
		}
		p.AckDelayExponent = v
	case tpMaxAckDelay:
		if v > maxMaxAckDelayMillis {
			return tpError("max_ack_delay %d ms not below 2^14", v)
		}
		p.MaxAckDelay = time.Duration(v) * time.Millisecond
	case tpActiveConnectionIDLimit:
		if v < defaultActiveConnectionIDLimit {
			return tpError("active_connection_id_limit %d below 2", v)
		}
		p.ActiveConnectionIDLimit = v
	case tpMaxDatagramFrameSize:
		p.MaxDatagramFrameSize = v
	case tpInitialMaxPathID:
		if v > MaxPathIDLimit {
			return tpError("initial_max_path_id 0x%x above 2^32-1", v)
		}
		p.InitialMaxPathID, p.HasInitialMaxPathID = v, true
	}
	return nil
}

// parsePreferredAddress parses the preferred_address parameter.
func (p *TransportParameters) parsePreferredAddress(val []byte) error {
	if len(val) < preferredAddressFixedLen {
		return tpError("preferred_address too short")
	}
	pa := &PreferredAddress{}
	copy(pa.IPv4[:], val[0:4])
	pa.IPv4Port = binary.BigEndian.Uint16(val[4:6])
	copy(pa.IPv6[:], val[6:22])
	pa.IPv6Port = binary.BigEndian.Uint16(val[22:24])
	l := int(val[24])
	if l == 0 || l > MaxConnIDLen {
		return tpError("preferred_address with a connection ID of %d bytes", l)
	}
	if len(val) != preferredAddressFixedLen+l {
		return tpError("preferred_address of %d bytes for a %d-byte connection ID", len(val), l)
	}
	pa.ConnID = append(make([]byte, 0, l), val[25:25+l]...)
	copy(pa.ResetToken[:], val[25+l:])
	p.PreferredAddress = pa
	return nil
}
