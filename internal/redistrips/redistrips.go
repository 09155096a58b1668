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

// Nodes is the set of Cluster nodes one call's commands went to; WithNodes
// attaches one to a call's context and NodeHook fills it.
type Nodes struct {
	mu    sync.Mutex
	addrs map[string]bool
}

type nodesKey struct{}

// WithNodes returns ctx carrying a fresh Nodes for one call.
func WithNodes(ctx context.Context) (context.Context, *Nodes) {
	n := &Nodes{addrs: map[string]bool{}}
	return context.WithValue(ctx, nodesKey{}, n), n
}

// Len is how many distinct nodes the call reached.
func (n *Nodes) Len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.addrs)
}

// Set is a copy of the nodes the call reached, by address.
func (n *Nodes) Set() map[string]bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]bool, len(n.addrs))
	for a := range n.addrs {
		out[a] = true
	}
	return out
}

// NodeHook notes its node in the call's Nodes. Add it to every node of a
// Cluster client: c.OnNewNode(func(n *redis.Client) { n.AddHook(redistrips.NodeHook(n.Options().Addr)) }).
type NodeHook string

// DialHook passes dials through.
func (h NodeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook notes the node of a single command.
func (h NodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(ctx)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook notes the node of a pipeline.
func (h NodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.note(ctx)
		return next(ctx, cmds)
	}
}

func (h NodeHook) note(ctx context.Context) {
	if n, ok := ctx.Value(nodesKey{}).(*Nodes); ok {
		n.mu.Lock()
		n.addrs[string(h)] = true
		n.mu.Unlock()
	}
}
