package clock

import (
	"context"
	"sync/atomic"
	"time"
)

// Offset is a Clock that runs a base clock shifted by a measured offset. The
// Tier 2 instances use it to share one "now": each measures its offset to
// the same reference (Redis TIME), so their active sets, expiries and
// recovery windows agree even when their own clocks drift.
type Offset struct {
	base Clock
	off  atomic.Int64 // nanoseconds
}

// NewOffset returns base shifted by nothing yet.
func NewOffset(base Clock) *Offset { return &Offset{base: base} }

// Now is the base clock's time plus the offset.
func (o *Offset) Now() time.Time { return o.base.Now().Add(o.Offset()) }

// Offset is the current shift.
func (o *Offset) Offset() time.Duration { return time.Duration(o.off.Load()) }

// Sync reads the reference once and sets the offset to it, taking the
// reference's time to be that of the middle of the call; the error of that
// guess is at most half the call's duration.
func (o *Offset) Sync(ctx context.Context, ref func(context.Context) (time.Time, error)) error {
	t0 := o.base.Now()
	r, err := ref(ctx)
	if err != nil {
		return err
	}
	t1 := o.base.Now()
	o.off.Store(int64(r.Sub(t0.Add(t1.Sub(t0) / 2))))
	return nil
}
