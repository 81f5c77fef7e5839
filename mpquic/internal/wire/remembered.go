package wire

import (
	"bytes"
	"errors"
	"time"
)

// rememberedPrefix starts the encoding of remembered transport parameters,
// so that it can be found among other entries of a TLS session's Extra
// field (crypto/tls asks every layer to recognise its own entries).
var rememberedPrefix = []byte("mpq-0rtt-tp-v1:")

// errRemembered is returned for a malformed or foreign encoding.
var errRemembered = errors.New("wire: not mpq's remembered transport parameters")

// Remembered are the server transport parameters that 0-RTT depends on
// (RFC 9000 Section 7.4.1): a client stores them with a session ticket and
// applies them to the 0-RTT packets of the next connection; a server stores
// the values it sent in the ticket and rejects 0-RTT when its current ones
// are smaller. The parameters a client must not remember (ack_delay_exponent,
// max_ack_delay, the connection IDs, preferred_address, the stateless reset
// token) and initial_max_path_id (draft-ietf-quic-multipath-21 Section 2.1)
// are not part of it.
type Remembered struct {
	MaxIdleTimeout                 time.Duration
	MaxUDPPayloadSize              uint64
	InitialMaxData                 uint64
	InitialMaxStreamDataBidiLocal  uint64
	InitialMaxStreamDataBidiRemote uint64
	InitialMaxStreamDataUni        uint64
	InitialMaxStreamsBidi          uint64
	InitialMaxStreamsUni           uint64
	ActiveConnectionIDLimit        uint64
	MaxDatagramFrameSize           uint64
	DisableActiveMigration         bool
}

// RememberedOf extracts the remembered subset of p.
func RememberedOf(p *TransportParameters) Remembered {
	return Remembered{
		MaxIdleTimeout:                 p.MaxIdleTimeout,
		MaxUDPPayloadSize:              p.MaxUDPPayloadSize,
		InitialMaxData:                 p.InitialMaxData,
		InitialMaxStreamDataBidiLocal:  p.InitialMaxStreamDataBidiLocal,
		InitialMaxStreamDataBidiRemote: p.InitialMaxStreamDataBidiRemote,
		InitialMaxStreamDataUni:        p.InitialMaxStreamDataUni,
		InitialMaxStreamsBidi:          p.InitialMaxStreamsBidi,
		InitialMaxStreamsUni:           p.InitialMaxStreamsUni,
		ActiveConnectionIDLimit:        p.ActiveConnectionIDLimit,
		MaxDatagramFrameSize:           p.MaxDatagramFrameSize,
		DisableActiveMigration:         p.DisableActiveMigration,
	}
}

// Apply writes the remembered values into p, leaving the others as they
// are.
func (r *Remembered) Apply(p *TransportParameters) {
	p.MaxIdleTimeout = r.MaxIdleTimeout
	p.MaxUDPPayloadSize = r.MaxUDPPayloadSize
	p.InitialMaxData = r.InitialMaxData
	p.InitialMaxStreamDataBidiLocal = r.InitialMaxStreamDataBidiLocal
	p.InitialMaxStreamDataBidiRemote = r.InitialMaxStreamDataBidiRemote
	p.InitialMaxStreamDataUni = r.InitialMaxStreamDataUni
	p.InitialMaxStreamsBidi = r.InitialMaxStreamsBidi
	p.InitialMaxStreamsUni = r.InitialMaxStreamsUni
	p.ActiveConnectionIDLimit = r.ActiveConnectionIDLimit
	p.MaxDatagramFrameSize = r.MaxDatagramFrameSize
	p.DisableActiveMigration = r.DisableActiveMigration
}

// Reduced names the first limit of RFC 9000 Section 7.4.1 that now is
// smaller than it was when remembered (then is the remembered value), or ""
// when none is: a server that accepts 0-RTT must not reduce them.
func (r *Remembered) Reduced(then *Remembered) string {
	switch {
	case r.ActiveConnectionIDLimit < then.ActiveConnectionIDLimit:
		return "active_connection_id_limit"
	case r.InitialMaxData < then.InitialMaxData:
		return "initial_max_data"
	case r.InitialMaxStreamDataBidiLocal < then.InitialMaxStreamDataBidiLocal:
		return "initial_max_stream_data_bidi_local"
	case r.InitialMaxStreamDataBidiRemote < then.InitialMaxStreamDataBidiRemote:
		return "initial_max_stream_data_bidi_remote"
	case r.InitialMaxStreamDataUni < then.InitialMaxStreamDataUni:
		return "initial_max_stream_data_uni"
	case r.InitialMaxStreamsBidi < then.InitialMaxStreamsBidi:
		return "initial_max_streams_bidi"
	case r.InitialMaxStreamsUni < then.InitialMaxStreamsUni:
		return "initial_max_streams_uni"
	case r.MaxUDPPayloadSize < then.MaxUDPPayloadSize:
		// Optional in Section 7.4.1; smaller packets than the client
		// sent in 0-RTT would be dropped.
		return "max_udp_payload_size"
	}
	return ""
}

// Append appends the encoding of r: the prefix, then every value as a
// variable-length integer (durations in milliseconds, the flag as 0 or 1).
func (r *Remembered) Append(b []byte) []byte {
	b = append(b, rememberedPrefix...)
	flag := uint64(0)
	if r.DisableActiveMigration {
		flag = 1
	}
	for _, v := range [...]uint64{
		durationMillis(r.MaxIdleTimeout), r.MaxUDPPayloadSize, r.InitialMaxData,
		r.InitialMaxStreamDataBidiLocal, r.InitialMaxStreamDataBidiRemote,
		r.InitialMaxStreamDataUni, r.InitialMaxStreamsBidi, r.InitialMaxStreamsUni,
		r.ActiveConnectionIDLimit, r.MaxDatagramFrameSize, flag,
	} {
		b = AppendVarint(b, min(v, MaxVarint))
	}
	return b
}

// IsRemembered reports whether b starts like an encoding of Append.
func IsRemembered(b []byte) bool { return bytes.HasPrefix(b, rememberedPrefix) }

// ParseRemembered decodes what Append encoded. Anything else (another
// prefix, a truncated or longer value, out-of-range numbers) is an error.
func ParseRemembered(b []byte) (Remembered, error) {
	if !IsRemembered(b) {
		return Remembered{}, errRemembered
	}
	rd := reader{b: b, i: len(rememberedPrefix)}
	var v [11]uint64
	for i := range v {
		v[i] = rd.varint()
	}
	if rd.bad || rd.left() != 0 || v[10] > 1 || v[0] > uint64(maxDurationMillis) {
		return Remembered{}, errRemembered
	}
	return Remembered{
		MaxIdleTimeout:                 time.Duration(v[0]) * time.Millisecond,
		MaxUDPPayloadSize:              v[1],
		InitialMaxData:                 v[2],
		InitialMaxStreamDataBidiLocal:  v[3],
		InitialMaxStreamDataBidiRemote: v[4],
		InitialMaxStreamDataUni:        v[5],
		InitialMaxStreamsBidi:          v[6],
		InitialMaxStreamsUni:           v[7],
		ActiveConnectionIDLimit:        v[8],
		MaxDatagramFrameSize:           v[9],
		DisableActiveMigration:         v[10] == 1,
	}, nil
}

// FindRemembered returns the first entry of extra that ParseRemembered
// accepts.
func FindRemembered(extra [][]byte) (Remembered, bool) {
	for _, e := range extra {
		if r, err := ParseRemembered(e); err == nil {
			return r, true
		}
	}
	return Remembered{}, false
}
