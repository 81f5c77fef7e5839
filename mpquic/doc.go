// Package mpquic is a QUIC v1 implementation (RFC 9000, 9001, 9002) with the
// multipath extension (draft-ietf-quic-multipath-21), written for research on
// multipath scheduling.
//
// This package is the UDP driver: Listen and Dial give connections and
// streams in the shape Go programs know from package net and quic-go. The
// protocol itself lives in the sans-IO package mpquic/core, which the
// simulator of package testbed/netsim drives on a virtual clock instead.
package mpquic
