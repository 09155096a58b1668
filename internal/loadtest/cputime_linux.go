package loadtest

import (
	"syscall"
	"time"
)

// threadCPU is the calling OS thread's CPU time (the caller locks its
// goroutine to the thread); ok is false where the system cannot tell.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
