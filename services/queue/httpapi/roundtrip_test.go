package httpapi_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
)

// trips counts network round trips (single commands and pipelines) and the
// script calls inside them.
type trips struct {
	mu      sync.Mutex
	trips   int
	scripts int
}

func (h *trips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds)
		return next(ctx, cmds)
	}
}

func (h *trips) count(cmds []redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trips++
	for _, c := range cmds {
		if n := strings.ToLower(c.Name()); n == "evalsha" || n == "eval" {
			h.scripts++
		}
	}
}

func (h *trips) reset() (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, s := h.trips, h.scripts
	h.trips, h.scripts = 0, 0
	return t, s
}

var _ redis.Hook = (*trips)(nil)

// TestCheckIsOneRoundTrip counts, through a go-redis hook, what one POST
// check costs in every state: joining, queued, already active, direct entry.
func TestCheckIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, options{threshold: 1, userHeader: "X-User-Id"})
	h := &trips{}
	b.rdb.AddHook(h)
	warm := testenv.UniqueID(t)
	b.do(t, "POST", "/api/queue/check/"+warm, userHdr("w"), nil) // loads the script (NOSCRIPT → EVAL once)
	ev := testenv.UniqueID(t)
	for _, c := range []struct{ name, uid, want string }{
		{"direct entry", "a", "active"},
		{"join", "b", "queued"},
		{"already queued", "b", "queued"},
		{"already active", "a", "active"},
	} {
		h.reset()
		r := b.do(t, "POST", "/api/queue/check/"+ev, userHdr(c.uid), nil)
		if r.str("status") != c.want {
			t.Fatalf("%s: %v", c.name, r)
		}
		if tr, sc := h.reset(); tr != 1 || sc != 1 {
			t.Fatalf("%s: %d round trips and %d script calls, want 1 and 1", c.name, tr, sc)
		}
	}
}
