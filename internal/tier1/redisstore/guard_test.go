package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
)

// TestDoorKeysExpire: on a real redis-server, a spent solution is one key
// that expires with its challenge, a client's counter one key that expires
// with its window, and both are gone afterwards (so the same challenge
// could be spent again, were it not expired: the Service refuses it first).
func TestDoorKeysExpire(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	prefix := testenv.UniqueID(t) + ":"
	s := redisstore.New(rdb, redisstore.WithPrefix(prefix))
	ctx := context.Background()
	ev := "door"
	now := time.Now()
	for i := range 3 {
		sol := tier1.Solution{EventID: ev, Challenge: fmt.Sprintf("%064x", i), KeyHash: tier1.KeyHash(ev, "k"), Expires: now.Add(90 * time.Second), Now: now}
		for _, want := range []tier1.Spend{tier1.SpendFirst, tier1.SpendRetry} {
			if got, err := s.SpendSolution(ctx, sol); err != nil || got != want {
				t.Fatalf("spend %d: %v, %v; want %v", i, got, err, want)
			}
		}
	}
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) != 3 {
		t.Fatalf("keys after 3 solutions: %v, %v; want 3", keys, err)
	}
	for _, k := range keys {
		if !strings.Contains(k, "{door}:pow:") {
			t.Errorf("key %s is not a spent record under the event's hash tag", k)
		}
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil || ttl <= 85*time.Second || ttl > 90*time.Second {
			t.Errorf("%s: PTTL %v, %v; want the 90 s left of its challenge", k, ttl, err)
		}
	}
	a := tier1.ArrivalCount{EventID: ev, Client: strings.Repeat("a", 32), Window: 1, Limit: 2, Expires: now.Add(200 * time.Millisecond), Now: now}
	if _, ok, err := s.CountArrival(ctx, a); err != nil || !ok {
		t.Fatal(ok, err)
	}
	sol := tier1.Solution{EventID: ev, Challenge: strings.Repeat("f", 64), Expires: now.Add(200 * time.Millisecond), Now: now}
	if got, err := s.SpendSolution(ctx, sol); err != nil || got != tier1.SpendFirst {
		t.Fatal(got, err)
	}
	time.Sleep(400 * time.Millisecond)
	if n, err := rdb.Exists(ctx, prefix+"vwr1:{door}:pow:"+sol.Challenge, prefix+"vwr1:{door}:client:"+a.Client+":1").Result(); err != nil || n != 0 {
		t.Fatalf("%d door keys outlived their expiry (%v)", n, err)
	}
	if n, ok, err := s.CountArrival(ctx, a); err != nil || !ok || n != 1 {
		t.Fatalf("count after the window's key expired: %d, %v, %v; want a fresh 1", n, ok, err)
	}
}
