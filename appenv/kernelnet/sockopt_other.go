//go:build !linux

package kernelnet

import (
	"errors"
	"syscall"

	"github.com/mpq/mpq/mpquic/core"
)

var errNotLinux = errors.New("kernelnet: kernel statistics and congestion control need Linux")

func setCongestion(int, string) error                  { return errNotLinux }
func getCongestion(syscall.RawConn) (string, error)    { return "", errNotLinux }
func tcpStats(syscall.RawConn) (core.PathStats, error) { return core.PathStats{}, errNotLinux }
func subflowStats(syscall.RawConn) []core.PathStats    { return nil }
