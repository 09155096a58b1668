package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
)

// TestEventKeysShareOneSlot asks the real cluster (CLUSTER KEYSLOT) where
// each key goes: every key a per-event script receives, and the event's
// lock, hash to one slot, with or without a prefix; so no script ever
// crosses slots. The active-events set and the rankings are the only keys
// outside it, and only single-key commands touch them.
func TestEventKeysShareOneSlot(t *testing.T) {
	t.Parallel()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testenv.RedisCluster(t)})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	slot := func(key string) int64 {
		t.Helper()
		n, err := c.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
		}
		return n
	}
	slots := map[int64]bool{}
	for _, prefix := range []string{"", "tenant-a:", "x-1:"} {
		k := keys{prefix: prefix}
		for _, ev := range []string{"a", "concert-2026", "E_9", "zz-top", "x"} {
			want := slot(k.queue(ev))
			slots[want] = true
			for _, key := range append(k.eventKeys(ev), k.lock(ev)) {
				if got := slot(key); got != want {
					t.Fatalf("%s is in slot %d, %s in %d", key, got, k.queue(ev), want)
				}
			}
		}
	}
	if len(slots) < 3 {
		t.Fatalf("events landed in %d slots; the test did not spread them", len(slots))
	}
	// The global keys hash on their whole name; a per-event script never gets them.
	k := keys{prefix: "p:"}
	for _, key := range k.eventKeys("a") {
		if key == k.activeEvents() || key == k.ranking("daily", time.Now()) {
			t.Fatalf("a global key %s is among the event's script keys", key)
		}
	}
}
