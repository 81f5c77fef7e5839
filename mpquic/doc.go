// Package mpquic is a QUIC v1 implementation (RFC 9000, 9001, 9002) with the
// multipath extension (draft-ietf-quic-multipath-21), written for research on
// multipath scheduling.
//
// This package is the UDP driver: Listen and Dial give connections and
// streams in the shape Go programs know from package net and quic-go. The
// protocol itself lives in the sans-IO package mpquic/core, which the
// simulator of package network/netsim drives on a virtual clock instead.
package mpquic

// # Resumption and 0-RTT
//
// A server with Config.SessionTickets sends a session ticket after the
// handshake; a client whose Config.TLS has a ClientSessionCache resumes the
// next connection to that server with it. With Config.Allow0RTT on both
// ends, DialEarly returns before the handshake completes and streams
// opened with Conn.OpenEarlyStream send their data in 0-RTT packets (data
// that an attacker can replay: mark only requests that are safe to
// repeat); Listener.Accept hands over a server connection as soon as it
// accepted 0-RTT, so that its answers leave before the handshake completes.
// Conn.EarlyData says whether 0-RTT was accepted; rejected 0-RTT data is
// sent again after the handshake.
