//go:build !linux

package loadtest

import "time"

// threadCPU is unknown here: solves are timed by the wall clock instead.
func threadCPU() (time.Duration, bool) { return 0, false }
