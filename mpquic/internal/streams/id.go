// Package streams implements the per-stream state of QUIC (RFC 9000
// Sections 2 to 4): stream identifiers, the sending half of a stream with its
// send buffer, retransmission and reset logic, the receiving half with
// reassembly and final-size checks, and stream- and connection-level flow
// control with window auto-tuning.
//
// Everything here is sans-IO and clock-free: the connection core decides
// what goes into packets, passes the current time where one is needed, and
// reports acknowledgements and losses back. Nothing in this package panics on
// peer input; protocol violations are returned as *qerr.TransportError.
// None of the types are safe for concurrent use.
package streams

// Stream ID layout (RFC 9000 Section 2.1): the two least significant bits
// carry the initiator (bit 0, set for the server) and the direction (bit 1,
// set for unidirectional streams); the remaining bits are the stream index.
const (
	serverInitiatedBit = 0x1
	unidirectionalBit  = 0x2
)

// MaxOffset is the largest stream offset plus one that QUIC can express
// (2^62-1, RFC 9000 Section 19.8): no flow control limit or final size can
// exceed it.
const MaxOffset = 1<<62 - 1

// StreamID returns the ID of the index-th stream (counting from 0) of the
// given type: bidirectional or unidirectional, opened by the client or by
// the server (RFC 9000 Section 2.1).
func StreamID(index uint64, bidi, clientInitiated bool) uint64 {
	id := index << 2
	if !bidi {
		id |= unidirectionalBit
	}
	if !clientInitiated {
		id |= serverInitiatedBit
	}
	return id
}

// IsBidi reports whether id names a bidirectional stream.
func IsBidi(id uint64) bool { return id&unidirectionalBit == 0 }

// IsClientInitiated reports whether id names a stream opened by the client.
func IsClientInitiated(id uint64) bool { return id&serverInitiatedBit == 0 }

// Index returns the position of stream id among the streams of its type,
// counting from 0: the inverse of StreamID.
func Index(id uint64) uint64 { return id >> 2 }
