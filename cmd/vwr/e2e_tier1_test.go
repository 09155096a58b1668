package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue/redisstore"
)

// TestTier1ToTier2 is the two-tier journey on real parts: `vwr local` with
// Tier 2 on a real redis-server. A visitor enters Tier 1, is advanced,
// checks and gets the Tier 1 pass; Tier 2 then queues them at exactly their
// Tier 1 position. Forged passes (another key, another event) are 401.
func TestTier1ToTier2(t *testing.T) {
	secret := token.RandomSecret()
	const db = 4
	env := map[string]string{
		"REDIS_URL":            fmt.Sprintf("redis://%s/%d", testenv.Redis(t), db),
		"VWR_TIER1_TOKEN_KEYS": "e2e:" + secret,
		"VWR_ADMIN_TOKEN":      "e2e-admin-token",
		"QUEUE_THRESHOLD":      "1",
	}
	// A tick of an hour: only the explicit advance below moves the line.
	base, _ := startLocal(t, env, "-tier1-tick", "1h")
	api := base + "/vwr-api"
	ev := testenv.UniqueID(t)
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t), DB: db})
	t.Cleanup(func() { _ = rdb.Close() })
	queueStore := redisstore.New(rdb, redisstore.Options{}) // vwr local's queue keys have no prefix

	if code, out, errOut := runVWR(t, env, "admin", "activate", "-url", api, "-event", ev, "-shards", "2", "-batch", "10"); code != exitOK {
		t.Fatalf("activate: %d %s %s", code, out, errOut)
	}

	// 1. Enter → advance → check → Tier 1 pass.
	type visitor struct {
		requestID string
		position  int64
		pass      string
	}
	var vs []visitor
	for i := 0; i < 3; i++ {
		r := do(t, "POST", api+"/vwr/assign/"+ev, "", nil)
		if r.status != 201 {
			t.Fatalf("assign %d: %d %s", i, r.status, r.raw)
		}
		vs = append(vs, visitor{requestID: r.body["requestId"].(string), position: num(r.body["position"])})
	}
	if r := do(t, "GET", api+"/vwr/check/"+ev+"/"+vs[0].requestID, "", nil); r.body["admitted"] != false {
		t.Fatalf("admitted before any advance: %s", r.raw)
	}
	if code, out, errOut := runVWR(t, env, "admin", "advance", "-url", api, "-event", ev, "-by", "100"); code != exitOK || !strings.Contains(out, `"admitted": 3`) {
		t.Fatalf("advance: %d %s %s", code, out, errOut)
	}
	// vwr local's admin and check share one Service, and an advance refreshes
	// its event cache, so the very next check sees the new serving counter.
	for i := range vs {
		r := do(t, "GET", api+"/vwr/check/"+ev+"/"+vs[i].requestID, "", nil)
		if r.status != 200 || r.body["admitted"] != true || num(r.body["position"]) != vs[i].position {
			t.Fatalf("check %d: %d %s", i, r.status, r.raw)
		}
		vs[i].pass = r.body["token"].(string)
		if !strings.Contains(r.header.Get("Set-Cookie"), "urr-vwr-token="+vs[i].pass) {
			t.Fatalf("check %d: no urr-vwr-token cookie: %v", i, r.header)
		}
	}

	// 2. Tier 2 with the pass. Someone already holds the only active slot,
	// so the visitors are queued, ordered by their Tier 1 positions.
	if r := do(t, "POST", base+"/api/queue/check/"+ev, "", map[string]string{"X-User-Id": "early-bird"}); r.body["status"] != "active" {
		t.Fatalf("first Tier 2 user: %d %s", r.status, r.raw)
	}
	for i, v := range vs {
		hdr := map[string]string{"Cookie": "urr-vwr-token=" + v.pass}
		if i%2 == 1 {
			hdr = map[string]string{"Authorization": "Bearer " + v.pass}
		}
		r := do(t, "POST", base+"/api/queue/check/"+ev, "", hdr)
		if r.status != 200 || r.body["status"] != "queued" || r.body["queued"] != true {
			t.Fatalf("Tier 2 check of visitor %d: %d %s", i, r.status, r.raw)
		}
		score, ok, err := queueStore.QueueScore(context.Background(), ev, v.requestID)
		if err != nil || !ok || score != v.position {
			t.Fatalf("visitor %d queued with score %v (%v, %v), want the Tier 1 position %d", i, score, ok, err, v.position)
		}
	}

	// 3. Forged passes are refused and queue nobody.
	otherKeys, err := token.NewKeyRing("e2e", []byte(token.RandomSecret())) // same kid, other secret
	if err != nil {
		t.Fatal(err)
	}
	rightKeys, err := token.ParseKeyRing(env["VWR_TIER1_TOKEN_KEYS"])
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	forge := func(keys *token.KeyRing, sub, event string) string {
		tok, err := keys.IssueTier1(token.Tier1{Subject: sub, EventID: event, Position: 1, IssuedAt: now, ExpiresAt: now.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for name, pass := range map[string]string{
		"other key":   forge(otherKeys, "forger-key", ev),
		"other event": forge(rightKeys, "forger-event", ev+"-x"),
	} {
		r := do(t, "POST", base+"/api/queue/check/"+ev, "", map[string]string{"Cookie": "urr-vwr-token=" + pass})
		if r.status != 401 {
			t.Fatalf("%s: %d %s, want 401", name, r.status, r.raw)
		}
	}
	for _, sub := range []string{"forger-key", "forger-event"} {
		if _, ok, err := queueStore.QueueScore(context.Background(), ev, sub); ok || err != nil {
			t.Fatalf("forged pass %s was queued (%v)", sub, err)
		}
	}
}
