//go:build !linux

package mpquic

import "net"

// UDP generic segmentation offload is used on Linux only.

func gsoSupported(*net.UDPConn) bool { return false }

func gsoControl(b []byte, segSize int) []byte { return b[:0] }

func isGSOError(error) bool { return false }
