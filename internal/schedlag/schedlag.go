// Package schedlag tells whether this machine can keep time now: tests
// that check real-time figures (round trips, completion times through an
// emulator) use it to tell an emulator that is late from a machine too
// busy for any program to be on time (the development machines are
// shared: other people's builds and fuzzers run beside the tests).
package schedlag

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sleep is the sleep whose wake-up Measure times.
const Sleep = 500 * time.Microsecond

// Measure sleeps n times for Sleep in the kernel, on as many goroutines
// as there are CPUs at once, and returns the median of how late they
// woke: tens of microseconds on an idle machine, milliseconds on one whose
// CPUs are all taken.
func Measure(n int) time.Duration {
	workers := runtime.GOMAXPROCS(0)
	var mu sync.Mutex
	var lags []time.Duration
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				ts := syscall.NsecToTimespec(int64(Sleep))
				start := time.Now()
				syscall.Nanosleep(&ts, nil)
				lag := time.Since(start) - Sleep
				mu.Lock()
				lags = append(lags, lag)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	return lags[len(lags)/2]
}

// Busy reports whether the machine is too busy to keep time within
// tolerance: the median lag of Measure above a tenth of it (the
// emulators wait in many such sleeps), with the lag measured.
func Busy(tolerance time.Duration) (bool, time.Duration) {
	lag := Measure(20)
	return lag > tolerance/10, lag
}

// CPUTimes are the machine's CPU times from /proc/stat's first line, in
// clock ticks: busy (all but idle and iowait) and total, over all CPUs.
type CPUTimes struct{ Busy, Total uint64 }

// ReadCPU reads the machine's CPU times (Linux; an error elsewhere).
func ReadCPU() (CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return CPUTimes{}, fmt.Errorf("schedlag: /proc/stat starts %q", line)
	}
	var c CPUTimes
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return CPUTimes{}, fmt.Errorf("schedlag: /proc/stat: %w", err)
		}
		if i >= 8 {
			break // guest and guest_nice are counted in user and nice
		}
		c.Total += v
		if i != 3 && i != 4 { // idle, iowait
			c.Busy += v
		}
	}
	return c, nil
}

// BusyFraction is the share of all CPUs' time that was busy from a to b
// (0 when no time passed).
func BusyFraction(a, b CPUTimes) float64 {
	if b.Total <= a.Total {
		return 0
	}
	return float64(b.Busy-a.Busy) / float64(b.Total-a.Total)
}
