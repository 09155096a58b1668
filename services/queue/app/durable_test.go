package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/eventsettings"
	esredis "github.com/vwr-go/vwr/internal/eventsettings/redisstore"
	"github.com/vwr-go/vwr/internal/testenv"
)

// instance is one Tier 2 process of a test: its App over the shared queue
// Redis and the shared ConfigStore.
type instance struct {
	app *App
	h   http.Handler
}

func openInstance(t *testing.T, queueRedis, prefix string, cs eventsettings.Store, clk clock.Clock) *instance {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: queueRedis, MaxRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	a, err := Open(Config{EntryTokenSecret: secret, UserHeader: "X-User-Id", AdminToken: "adm"},
		Options{Redis: rdb, KeyPrefix: prefix, ConfigStore: cs, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	a.Preload(context.Background())
	if !a.Settings.Loaded() {
		t.Fatal("settings not loaded at start")
	}
	return &instance{app: a, h: a.Handler()}
}

// call sends one request to the instance's handler and decodes the JSON answer.
func (in *instance) call(t *testing.T, method, path, user, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if user != "" {
		req.Header.Set("X-User-Id", user)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.Contains(path, "/admin/") {
		req.Header.Set("Authorization", "Bearer adm")
	}
	rec := httptest.NewRecorder()
	in.h.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: %d %q", method, path, rec.Code, rec.Body.String())
	}
	return rec.Code, out
}

// admitted checks users in on in and returns how many came back active and
// the threshold every answer reported.
func (in *instance) admitted(t *testing.T, ev string, users []string) (active int, thresholds map[float64]int) {
	t.Helper()
	thresholds = map[float64]int{}
	for _, u := range users {
		code, body := in.call(t, "POST", "/api/queue/check/"+ev, u, "")
		if code != 200 {
			t.Fatalf("check %s: %d %v", u, code, body)
		}
		if body["status"] == "active" {
			active++
		}
		thresholds[body["threshold"].(float64)]++
	}
	return active, thresholds
}

func users(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// afterLoss checks that a loss of the queue's Redis just happened and was
// noticed: new users are queued during the recovery window; after it one
// worker pass admits exactly the configured threshold, not QUEUE_THRESHOLD.
func afterLoss(t *testing.T, what string, in *instance, clk *clock.Manual, ev string) {
	t.Helper()
	// The first check finds the loss; until the ledger's replay (the next
	// admission pass) nobody the store lost is queued: they come back.
	if code, body := in.call(t, "POST", "/api/queue/check/"+ev, what+"-first", ""); code != 503 {
		t.Fatalf("%s: the check that finds the loss: %d %v, want 503", what, code, body)
	}
	if n, err := in.app.Worker.AdmitOnce(context.Background()); n != 0 || err != nil {
		t.Fatalf("%s, the replay: the worker admitted %d, %v; want 0", what, n, err)
	}
	if n, th := in.admitted(t, ev, users(what, 15)); n != 0 || th[10] != 15 {
		t.Fatalf("%s, during the recovery window: %d admitted, thresholds %v; want 0 and all 10", what, n, th)
	}
	// The worker replays the event's ledger (whom it let in before) and
	// admits nobody while the window runs.
	if n, err := in.app.Worker.AdmitOnce(context.Background()); n != 0 || err != nil {
		t.Fatalf("%s, during the window: the worker admitted %d, %v; want 0", what, n, err)
	}
	clk.Advance(in.app.Config.Queue().RecoveryWindow + time.Millisecond)
	if n, err := in.app.Worker.AdmitOnce(context.Background()); n != 10 || err != nil {
		t.Fatalf("%s, after the window: the worker admitted %d, %v; want 10", what, n, err)
	}
	if code, body := in.call(t, "GET", "/api/queue/admin/stats/"+ev, "", ""); code != 200 ||
		body["threshold"] != float64(10) || body["currentUsers"] != float64(10) || body["queueSize"] != float64(5) {
		t.Fatalf("%s: stats = %d %v", what, code, body)
	}
}

// TestThresholdSurvivesRedisLossAndRestarts: with events configured in the
// durable store, a threshold set through the admin API holds after the
// queue's Redis is flushed, after it is killed and restarted empty, and
// after every instance restarts together with an empty Redis (which is
// also found as a loss). QUEUE_THRESHOLD stays at its default of 1,000, so
// a reset would let everyone in.
func TestThresholdSurvivesRedisLossAndRestarts(t *testing.T) {
	t.Parallel()
	qr := testenv.NewOwnRedis(t)
	crdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	t.Cleanup(func() { crdb.Close() })
	cs := esredis.New(crdb, testenv.UniqueID(t)+":")
	prefix := testenv.UniqueID(t) + ":"
	clk := clock.NewManual(time.Now().UTC().Truncate(time.Millisecond))
	a, b := openInstance(t, qr.Addr, prefix, cs, clk), openInstance(t, qr.Addr, prefix, cs, clk)
	ev := "sale"

	if code, body := a.call(t, "POST", "/api/queue/check/"+ev, "u0", ""); code != 404 || body["code"] != "unknown_event" {
		t.Fatalf("check of an unconfigured event = %d %v, want 404 unknown_event", code, body)
	}
	if code, body := a.call(t, "PUT", "/api/queue/admin/threshold/"+ev, "", `{"threshold":10}`); code != 200 {
		t.Fatalf("set threshold = %d %v", code, body)
	}
	if code, _ := b.call(t, "POST", "/api/queue/check/"+ev, "u0", ""); code != 404 {
		t.Fatalf("the other instance knew the event before its refresh: %d", code)
	}
	if err := b.app.Settings.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}

	if n, th := b.admitted(t, ev, users("before", 15)); n != 10 || th[10] != 15 {
		t.Fatalf("before any loss: %d admitted, thresholds %v; want 10 and all 10", n, th)
	}
	a.admitted(t, ev, users("before", 1)) // a has seen the event's epoch too

	qrdb := redis.NewClient(&redis.Options{Addr: qr.Addr})
	t.Cleanup(func() { qrdb.Close() })
	if err := qrdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	afterLoss(t, "flushed", a, clk, ev)

	qr.Kill9()
	qr.Restart()
	// The clients reconnect on their own; the first call may still find
	// the dead connection (a 503 the health check absorbs).
	for _, in := range []*instance{a, b} {
		in.call(t, "GET", "/healthz", "", "")
	}
	afterLoss(t, "restarted", b, clk, ev)

	// Every instance restarts, with Redis empty again: fresh processes
	// remember nothing, but the event's durable settings keep the epoch the
	// workers saw, so the loss is found and the window runs all the same.
	if err := qrdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	a2, b2 := openInstance(t, qr.Addr, prefix, cs, clk), openInstance(t, qr.Addr, prefix, cs, clk)
	if code, body := a2.call(t, "POST", "/api/queue/check/"+ev, "finder", ""); code != 503 {
		t.Fatalf("a restarted instance finding the loss: %d %v, want 503 until the replay", code, body)
	}
	if n, err := b2.app.Worker.AdmitOnce(context.Background()); n != 0 || err != nil {
		t.Fatalf("a restarted worker during the window: admitted %d, %v; want 0", n, err)
	}
	for _, in := range []*instance{a2, b2} {
		if n, th := in.admitted(t, ev, users(fmt.Sprintf("new-%p", in), 8)); n != 0 || th[10] != 8 {
			t.Fatalf("a restarted instance during the window: %d admitted, thresholds %v; want 0", n, th)
		}
	}
	clk.Advance(a2.app.Config.Queue().RecoveryWindow + time.Millisecond)
	if n, err := a2.app.Worker.AdmitOnce(context.Background()); n != 10 || err != nil {
		t.Fatalf("after the window: the worker admitted %d, %v; want 10", n, err)
	}
}

// TestUnknownEventsCreateNothing: 20,000 junk event ids are answered 404
// unknown_event on every visitor and admin route, and none of them is
// listed for the worker or leaves a key behind.
func TestUnknownEventsCreateNothing(t *testing.T) {
	t.Parallel()
	qr := testenv.NewOwnRedis(t)
	crdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	t.Cleanup(func() { crdb.Close() })
	cs := esredis.New(crdb, testenv.UniqueID(t)+":")
	in := openInstance(t, qr.Addr, "", cs, nil)
	const junk = 20_000
	routes := []struct{ method, path string }{
		{"POST", "/api/queue/check/"}, {"GET", "/api/queue/status/"}, {"POST", "/api/queue/heartbeat/"},
		{"POST", "/api/queue/leave/"}, {"GET", "/api/queue/admin/stats/"},
	}
	for i := range junk {
		rt := routes[i%len(routes)]
		code, body := in.call(t, rt.method, fmt.Sprintf("%sjunk-%05d", rt.path, i), fmt.Sprintf("u%d", i), "")
		if code != 404 || body["code"] != "unknown_event" {
			t.Fatalf("%s %sjunk-%05d = %d %v", rt.method, rt.path, i, code, body)
		}
	}
	listed, err := in.app.Store.Listed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	qrdb := redis.NewClient(&redis.Options{Addr: qr.Addr})
	t.Cleanup(func() { qrdb.Close() })
	keys, err := qrdb.DBSize(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 0 || keys != 0 {
		t.Fatalf("after %d junk requests: %d events listed, %d keys in Redis; want none", junk, len(listed), keys)
	}
}
