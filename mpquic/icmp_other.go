//go:build !linux

package mpquic

import (
	"net"
	"net/netip"
)

// icmpError is a destination unreachable error for a datagram sent to
// remote, quoting its start.
type icmpError struct {
	remote netip.AddrPort
	quoted []byte
	reason string
}

// enableICMPErrors reports false: ICMP errors are read on Linux only.
func enableICMPErrors(*net.UDPConn) bool { return false }

func readICMPErrors(*net.UDPConn) []icmpError { return nil }
