package redisstore_test

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestConformanceRedisServer runs the small sale: it is the one store whose
// sale runs under the race detector in make test (gotest-race; miniredis and
// the Cluster run SaleTickets without it, RACE_SLOW).
func TestConformanceRedisServer(t *testing.T) {
	t.Parallel()
	addr := testenv.Redis(t)
	storetest.RunWith(t, func(t *testing.T) tier1.Store {
		t.Helper()
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = rdb.Close() })
		return redisstore.New(rdb, redisstore.WithPrefix(testenv.UniqueID(t)+":"))
	}, storetest.Options{SaleTickets: storetest.SmallSaleTickets})
}

func TestConformanceRedisCluster(t *testing.T) {
	t.Parallel()
	addrs := testenv.RedisCluster(t)
	storetest.Run(t, func(t *testing.T) tier1.Store {
		t.Helper()
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { _ = rdb.Close() })
		return redisstore.New(rdb, redisstore.WithPrefix(testenv.UniqueID(t)+":"))
	})
}

func TestConformanceMiniredis(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) tier1.Store {
		t.Helper()
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		return redisstore.New(rdb)
	})
}

// Every key of one event shares its hash tag, so each script stays in one
// Cluster slot.
func TestKeysShareTheEventSlot(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s := redisstore.New(rdb)
	ctx := context.Background()
	if err := s.Configure(ctx, "ev1", tier1.Settings{Active: true, Shards: 2, BatchSize: 5}, storetest.Epoch); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Assign(ctx, tier1.NewPosition{EventID: "ev1", Shard: 1, Shards: 2, RequestID: "rid", IdempotencyKey: "k", Now: storetest.Epoch, TTL: 3600e9}); err != nil {
		t.Fatal(err)
	}
	for _, k := range mr.Keys() {
		if k == "vwr1:active-events" || k == "vwr1:events" {
			continue
		}
		if want := "vwr1:{ev1}:"; len(k) < len(want) || k[:len(want)] != want {
			t.Errorf("key %q lacks the {ev1} hash tag", k)
		}
	}
	if ttl := mr.TTL("vwr1:{ev1}:pos:rid"); ttl.Hours() != 1 {
		t.Errorf("position TTL = %v, want 1h", ttl)
	}
	if len(mr.Keys()) != 6 {
		t.Errorf("keys = %v, want event, shards, position, idempotency record, active set, events index", mr.Keys())
	}
}
