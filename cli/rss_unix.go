//go:build unix

package cli

import (
	"runtime"
	"syscall"
)

// peakRSS is the largest resident set size the process had so far, in
// bytes (getrusage's ru_maxrss); 0 if unknown.
func peakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss) // bytes there, kilobytes elsewhere
	}
	return int64(ru.Maxrss) * 1024
}
