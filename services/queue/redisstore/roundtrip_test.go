package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/internal/redistrips"
)

// counts reads and forgets what h recorded: round trips, script calls and
// the command names in order.
func counts(h *redistrips.Hook) (trips, scripts int, names []string) {
	t := h.Reset()
	return len(t), t.Scripts(), t.Names()
}

// TestCheckIsOneRoundTrip counts, through a go-redis hook, what one Check
// sends once the script cache is warm: one round trip carrying one script
// call (plus the idempotent SADD in the same pipeline), for every outcome.
func TestCheckIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	h := &redistrips.Hook{}
	rdb.AddHook(h)
	s := newPrefixed(t, rdb)
	ctx := context.Background()
	ev := testenv.UniqueID(t)
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	counts(h)

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
			trips, scripts, names := counts(h)
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
	h := &redistrips.Hook{}
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
	counts(h)
	check("d", 9)
	if trips, _, names := counts(h); trips != 2 || fmt.Sprint(names) != "[evalsha sadd eval sadd]" {
		t.Fatalf("cold: %d trips %v", trips, names)
	}
	check("e", 10)
	if trips, scripts, _ := counts(h); trips != 1 || scripts != 1 {
		t.Fatalf("after warming: %d trips, %d scripts", trips, scripts)
	}

	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	counts(h)
	check("f", 11)
	if trips, scripts, names := counts(h); trips != 1 || scripts != 1 || fmt.Sprint(names) != "[evalsha sadd]" {
		t.Fatalf("after Load: %d trips, %d scripts %v; want one EVALSHA trip", trips, scripts, names)
	}
}
