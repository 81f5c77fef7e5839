//go:build !linux

package linkemu

import "time"

// sleeper sleeps on the runtime's timers, which park the goroutine.
type sleeper struct{}

func newSleeper() *sleeper { return &sleeper{} }

func (*sleeper) sleep(d time.Duration) { time.Sleep(d) }

func (*sleeper) close() {}
