//go:build !unix

package runner

import "time"

// cpuTime is the CPU time the process used; unknown here.
func cpuTime() time.Duration { return 0 }
