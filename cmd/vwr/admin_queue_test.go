package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
)

// TestAdminQueueThresholdAndRecoveringStats: `vwr admin threshold` opens an
// event in the durable settings, and `vwr admin stats` reports it, and says
// "recovering" once the queue noticed its Redis was flushed.
func TestAdminQueueThresholdAndRecoveringStats(t *testing.T) {
	t.Parallel()
	redisURL := "redis://" + testenv.Redis(t) + "/6"
	base, _ := startLocal(t, map[string]string{"REDIS_URL": redisURL, "QUEUE_OPEN_EVENTS": "false"})
	ev := testenv.UniqueID(t)
	admin := func(args ...string) (int, map[string]any, string) {
		t.Helper()
		out, errb := &syncBuf{}, &syncBuf{}
		code := dispatch(context.Background(), invocation{Args: append([]string{"admin"}, args...), Stdout: out, Stderr: errb, Env: map[string]string{}})
		var body map[string]any
		_ = json.Unmarshal([]byte(out.String()), &body)
		return code, body, errb.String()
	}
	if code, _, errs := admin("stats", "-event", ev, "-url", base); code != exitError || !strings.Contains(errs, "unknown_event") {
		t.Fatalf("stats of an unconfigured event: exit %d, %s", code, errs)
	}
	if code, _, errs := admin("threshold", "-event", ev, "-n", "0", "-url", base); code != exitUsage {
		t.Fatalf("threshold 0: exit %d, %s", code, errs)
	}
	if code, body, errs := admin("threshold", "-event", ev, "-n", "3", "-url", base); code != exitOK || body["threshold"] != float64(3) {
		t.Fatalf("threshold: exit %d, %v, %s", code, body, errs)
	}
	if r := post(t, base+"/api/queue/check/"+ev, map[string]string{"X-User-Id": "someone"}); r["status"] != "active" {
		t.Fatalf("check = %v", r)
	}
	if code, body, errs := admin("stats", "-event", ev, "-url", base); code != exitOK || body["threshold"] != float64(3) ||
		body["currentUsers"] != float64(1) || body["recovering"] != false {
		t.Fatalf("stats: exit %d, %v, %s", code, body, errs)
	}

	rdb, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(rdb)
	defer c.Close()
	if err := c.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	// The settings were in the same Redis here (vwr local with REDIS_URL):
	// the instance keeps its cached copy rather than forget the threshold
	// (and writes it back). The check that finds the loss, and any before
	// the worker's replay of the ledger (at once), hear 503: come back.
	var r map[string]any
	for i := 0; i < 50; i++ {
		if r = post(t, base+"/api/queue/check/"+ev, map[string]string{"X-User-Id": "other"}); r["_status"] != float64(503) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r["status"] != "queued" || r["recovering"] != true {
		t.Fatalf("check after the flush = %v, want queued and recovering", r)
	}
	if code, body, errs := admin("stats", "-event", ev, "-url", base); code != exitOK || body["recovering"] != true || body["threshold"] != float64(3) {
		t.Fatalf("stats after the flush: exit %d, %v, %s", code, body, errs)
	}
}
