package app

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
)

// scriptCalls is a go-redis hook recording the commands sent.
type scriptCalls struct {
	mu    sync.Mutex
	names []string
}

func (h *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd)
		return next(ctx, cmd)
	}
}

func (h *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.add(cmds...)
		return next(ctx, cmds)
	}
}

func (h *scriptCalls) add(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		h.names = append(h.names, strings.ToLower(c.Name()))
	}
}

func (h *scriptCalls) reset() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.names
	h.names = nil
	return n
}

// TestPreloadWarmsTheScriptCache: after Preload, the very first check on a
// Redis with an empty script cache is a single EVALSHA (no NOSCRIPT retry).
// It runs on a private miniredis so that no other test's cache is touched.
func TestPreloadWarmsTheScriptCache(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	h := &scriptCalls{}
	rdb.AddHook(h)
	a, err := Open(Config{EntryTokenSecret: secret, UserHeader: "X-User-Id"}, Options{Redis: rdb, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a.Preload(context.Background())
	if got := h.reset(); len(got) == 0 || got[0] != "script" {
		t.Fatalf("Preload sent %v, want SCRIPT LOAD calls", got)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("POST", srv.URL+"/api/queue/check/"+testenv.UniqueID(t), nil)
	req.Header.Set("X-User-Id", "u1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("check = %d", resp.StatusCode)
	}
	if got := strings.Join(h.reset(), " "); got != "evalsha sadd" {
		t.Fatalf("first check sent %q, want %q", got, "evalsha sadd")
	}
}

// TestPreloadWithRedisDownOnlyWarns: a Redis that is down at start costs a
// warning, not the process.
func TestPreloadWithRedisDownOnlyWarns(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	var logs bytes.Buffer
	a, err := Open(Config{EntryTokenSecret: secret, UserHeader: "X-User-Id"}, Options{Redis: rdb, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	a.Preload(context.Background())
	if !strings.Contains(logs.String(), "redis scripts not preloaded") {
		t.Fatalf("no warning logged:\n%s", logs.String())
	}
}
