package loadtest

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling OS thread's CPU time, to the nanosecond
// (CLOCK_THREAD_CPUTIME_ID; getrusage counts in scheduler ticks, too coarse
// for a small solve); the caller locks its goroutine to the thread. ok is
// false where the system cannot tell.
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
