// Package redistrips is a go-redis hook for the Tier 2 tests that count what
// one call costs: network round trips (one per single command, one per
// pipeline) and the commands each carried. "One Lua script, one round trip
// per check" is asserted through it at the store, the API and the binary's
// start-up.
package redistrips

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Hook records every round trip a client makes. Add it with
// (*redis.Client).AddHook; it is safe for concurrent use.
type Hook struct {
	mu    sync.Mutex
	trips Trips
}

var _ redis.Hook = (*Hook)(nil)

// Trips are recorded round trips, each as the lower-case names of the
// commands it carried, in order.
type Trips [][]string

// DialHook passes dials through.
func (h *Hook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records a single command as one round trip.
func (h *Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook records a pipeline as one round trip.
func (h *Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.record(cmds...)
		return next(ctx, cmds)
	}
}

func (h *Hook) record(cmds ...redis.Cmder) {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = strings.ToLower(c.Name())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trips = append(h.trips, names)
}

// Reset returns the round trips recorded since the last Reset and forgets them.
func (h *Hook) Reset() Trips {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.trips
	h.trips = nil
	return t
}

// Names lists every command of every trip, in order.
func (t Trips) Names() []string {
	var out []string
	for _, trip := range t {
		out = append(out, trip...)
	}
	return out
}

// Scripts counts the script calls (EVAL, EVALSHA and their _RO forms).
func (t Trips) Scripts() int {
	n := 0
	for _, name := range t.Names() {
		if strings.HasPrefix(name, "eval") {
			n++
		}
	}
	return n
}
