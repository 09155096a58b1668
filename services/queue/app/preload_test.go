package app

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/redistrips"
	"github.com/vwr-go/vwr/internal/testenv"
)

// TestPreloadWarmsTheScriptCache: after Preload, the very first check on a
// Redis with an empty script cache is a single EVALSHA (no NOSCRIPT retry).
// It runs on a private miniredis so that no other test's cache is touched.
func TestPreloadWarmsTheScriptCache(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	h := &redistrips.Hook{}
	rdb.AddHook(h)
	a, err := Open(Config{OpenEvents: true, EntryTokenSecret: secret, UserHeader: "X-User-Id"}, Options{Redis: rdb, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a.Preload(context.Background())
	if got := h.Reset().Names(); len(got) == 0 || got[0] != "script" {
		t.Fatalf("Preload sent %v, want SCRIPT LOAD calls", got)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	mustCheck(t, srv.URL, testenv.UniqueID(t), "u1")
	// The event's first check lists it: SADD, then relisted.lua (cached too).
	if got := strings.Join(h.Reset().Names(), " "); got != "evalsha sadd evalsha" {
		t.Fatalf("first check sent %q, want %q", got, "evalsha sadd evalsha")
	}
}

// TestPreloadWithRedisDownOnlyWarns: a Redis that is down at start costs a
// warning, not the process.
func TestPreloadWithRedisDownOnlyWarns(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	var logs bytes.Buffer
	a, err := Open(Config{OpenEvents: true, EntryTokenSecret: secret, UserHeader: "X-User-Id"}, Options{Redis: rdb, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	a.Preload(context.Background())
	if !strings.Contains(logs.String(), "redis scripts not preloaded") {
		t.Fatalf("no warning logged:\n%s", logs.String())
	}
}

// TestClockFollowsRedisTime: without an injected clock, an instance's "now"
// is its wall clock shifted to Redis TIME, measured at start (and every
// ClockSyncInterval), so instances with drifting clocks still agree.
func TestClockFollowsRedisTime(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ahead := time.Now().Add(time.Hour)
	mr.SetTime(ahead)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	a, err := Open(Config{OpenEvents: true, EntryTokenSecret: secret, UserHeader: "X-User-Id"}, Options{Redis: rdb, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a.Preload(context.Background())
	if d := a.Clock.Now().Sub(ahead); d < -time.Second || d > time.Second {
		t.Fatalf("instance clock is %v from Redis TIME, want within 1s", d)
	}
}
