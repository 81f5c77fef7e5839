package linkemu

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// sleeper waits out the last stretch before an arrival time on a timerfd
// read through the runtime's network poller. The waiting goroutine is
// parked, so it holds neither a thread nor a processor of the Go runtime,
// and it wakes within microseconds: a timerfd expires on a
// high-resolution timer without the thread's timer slack, and a thread
// waiting in the poller wakes on it.
//
// Sleeping in the kernel instead (nanosleep) is as precise but keeps the
// goroutine's processor for the whole system call; the runtime takes it
// back only when its monitor sees the same call twice, up to 10 ms later.
// The emulator's pipes (one per path and direction, more than the
// processors of a small machine) then held every processor through a
// train of packets, and the experiment's ends, in the same process, ran
// only between trains (TestPipeWaitsParked).
type sleeper struct {
	fd int      // the timerfd, for timerfd_settime
	f  *os.File // the same descriptor, read through the poller
	b  [8]byte
}

// newSleeper returns a sleeper, or one that sleeps on the runtime's timers
// if the kernel refuses a timerfd.
func newSleeper() *sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &sleeper{fd: -1}
	}
	// os.NewFile registers a non-blocking descriptor with the poller.
	// (File.Fd would make it blocking again: keep fd for settime.)
	return &sleeper{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}

// sleep returns after d.
func (s *sleeper) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	if s.f == nil {
		time.Sleep(d)
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(s.fd, 0, &spec, nil); err != nil {
		time.Sleep(d)
		return
	}
	// The read returns the expiration count once the timer expired.
	if _, err := s.f.Read(s.b[:]); err != nil {
		time.Sleep(d)
	}
}

// close releases the timerfd.
func (s *sleeper) close() {
	if s.f != nil {
		s.f.Close()
	}
}
