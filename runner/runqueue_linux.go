package runner

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// runQueueWait returns the time the process's threads have spent runnable
// but waiting for a CPU, summed over its threads (the second field of
// /proc/self/task/*/schedstat, in nanoseconds); false if the kernel does
// not tell (schedstats missing).
func runQueueWait() (time.Duration, bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, false
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // a thread that ended meanwhile
		}
		n, ok := schedstatWait(b)
		if !ok {
			return 0, false
		}
		sum += n
	}
	return time.Duration(sum), true
}

// schedstatWait parses a schedstat line ("cpu_ns wait_ns slices") and
// returns its wait_ns.
func schedstatWait(b []byte) (int64, bool) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(f[1]), 10, 64)
	return n, err == nil && n >= 0
}
