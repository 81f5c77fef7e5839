// Package wire encodes and parses the bytes QUIC puts on the wire: variable-
// length integers (RFC 9000 Section 16), packet headers (RFC 9000 Section
// 17, RFC 8999), packet numbers (RFC 9000 Appendix A), frames (RFC 9000
// Section 19 and the multipath frames of draft-ietf-quic-multipath-21
// Section 4) and transport parameters (RFC 9000 Section 18).
//
// The package is sans-IO and stateless. Parsers never panic, whatever the
// input, and the slices they return alias the input: callers that keep them
// beyond the life of the input buffer must copy them. Appenders write to the
// end of a caller-supplied slice so that packets can be assembled without
// extra allocations. Header protection and packet encryption are the job of
// package protection; this package only reads and writes cleartext.
package wire
