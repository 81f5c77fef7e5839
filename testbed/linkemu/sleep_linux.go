package linkemu

import (
	"syscall"
	"time"
)

// preciseThread sets the calling thread's timer slack to 1 ns, so that
// its sleeps end within microseconds of their time instead of the
// default 50 µs.
func preciseThread() {
	const prSetTimerslack = 29
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
}

// sleep sleeps d in the kernel (nanosleep), which wakes with the timer
// slack's precision.
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
