package redisstore

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
)

// tripCounter is a go-redis hook counting network round trips (one per
// single command, one per pipeline) and the script commands sent.
type tripCounter struct {
	mu      sync.Mutex
	trips   int
	scripts int
	names   []string
}

func (h *tripCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *tripCounter) count(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trips++
	for _, c := range cmds {
		name := strings.ToLower(c.Name())
		h.names = append(h.names, name)
		if strings.HasPrefix(name, "eval") {
			h.scripts++
		}
	}
}

func (h *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds...)
		return next(ctx, cmds)
	}
}

func (h *tripCounter) reset() (trips, scripts int, names []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	trips, scripts, names = h.trips, h.scripts, h.names
	h.trips, h.scripts, h.names = 0, 0, nil
	return
}

// TestCheckIsOneRoundTrip counts, through a go-redis hook, what one Check
// sends once the script cache is warm: one round trip carrying one script
// call (plus the idempotent SADD in the same pipeline), for every outcome.
func TestCheckIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	h := &tripCounter{}
	rdb.AddHook(h)
	s := newPrefixed(t, rdb)
	ctx := context.Background()
	ev := testenv.UniqueID(t)
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	h.reset()

	cases := []struct {
		name, uid string
		want      queue.Status
	}{
		{"direct entry", "a", queue.StatusActive},
		{"already active", "a", queue.StatusActive},
		{"join the line", "b", queue.StatusQueued},
		{"already queued", "b", queue.StatusQueued},
		{"second in line", "c", queue.StatusQueued},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap, err := s.Check(ctx, queue.CheckInput{EventID: ev, UserID: c.uid, Score: int64(i + 1), Now: t0, ActiveTTL: ttl, DefaultThreshold: 1})
			if err != nil || snap.Status != c.want {
				t.Fatalf("Check = %+v, %v; want %s", snap, err, c.want)
			}
			trips, scripts, names := h.reset()
			if trips != 1 || scripts != 1 {
				t.Fatalf("%d round trips and %d script calls (%v); want 1 and 1", trips, scripts, names)
			}
			if got := fmt.Sprint(names); got != "[evalsha sadd]" {
				t.Fatalf("commands %s, want [evalsha sadd]", got)
			}
		})
	}
}

// TestColdScriptCache runs on a private miniredis, because SCRIPT FLUSH on
// the package's shared redis-server would turn the EVALSHAs of tests running
// in parallel into NOSCRIPT retries and upset their command counts. A cold
// cache costs one extra trip (NOSCRIPT, then EVAL), once; Load avoids even
// that.
func TestColdScriptCache(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	h := &tripCounter{}
	rdb.AddHook(h)
	s := newPrefixed(t, rdb)
	ctx := context.Background()
	ev := testenv.UniqueID(t)
	check := func(uid string, score int64) {
		t.Helper()
		if _, err := s.Check(ctx, queue.CheckInput{EventID: ev, UserID: uid, Score: score, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	h.reset()
	check("d", 9)
	if trips, _, names := h.reset(); trips != 2 || fmt.Sprint(names) != "[evalsha sadd eval sadd]" {
		t.Fatalf("cold: %d trips %v", trips, names)
	}
	check("e", 10)
	if trips, scripts, _ := h.reset(); trips != 1 || scripts != 1 {
		t.Fatalf("after warming: %d trips, %d scripts", trips, scripts)
	}

	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	h.reset()
	check("f", 11)
	if trips, scripts, names := h.reset(); trips != 1 || scripts != 1 || fmt.Sprint(names) != "[evalsha sadd]" {
		t.Fatalf("after Load: %d trips, %d scripts %v; want one EVALSHA trip", trips, scripts, names)
	}
}
