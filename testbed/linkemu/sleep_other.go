//go:build !linux

package linkemu

import "time"

func preciseThread() {}

func sleep(d time.Duration) { time.Sleep(d) }
