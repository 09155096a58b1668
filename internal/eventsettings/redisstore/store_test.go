package redisstore_test

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/eventsettings/redisstore"
	"github.com/vwr-go/vwr/internal/eventsettings/settingstest"
	"github.com/vwr-go/vwr/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The conformance suite on redis-server, the 3-node Cluster and miniredis.
func TestConformance(t *testing.T) {
	t.Parallel()
	addr := testenv.Redis(t)
	cluster := testenv.RedisCluster(t)
	// prefixed is a store under a fresh prefix of rdb; losing it deletes
	// every key under the prefix (on every master of a Cluster), which is
	// what a flush does to a store that has the Redis to itself.
	prefixed := func(t *testing.T, rdb redis.UniversalClient) settingstest.Harness {
		t.Cleanup(func() { _ = rdb.Close() })
		prefix := testenv.UniqueID(t) + ":"
		return settingstest.Harness{
			Store: redisstore.New(rdb, prefix),
			Lose: func(t *testing.T) {
				t.Helper()
				del := func(ctx context.Context, c *redis.Client) error {
					keys, err := c.Keys(ctx, prefix+"*").Result()
					if err != nil || len(keys) == 0 {
						return err
					}
					for _, k := range keys {
						if err := c.Del(ctx, k).Err(); err != nil {
							return err
						}
					}
					return nil
				}
				var err error
				switch c := rdb.(type) {
				case *redis.ClusterClient:
					err = c.ForEachMaster(context.Background(), del)
				case *redis.Client:
					err = del(context.Background(), c)
				}
				if err != nil {
					t.Fatal(err)
				}
			},
		}
	}
	t.Run("redis-server", func(t *testing.T) {
		t.Parallel()
		settingstest.Run(t, func(t *testing.T) settingstest.Harness {
			return prefixed(t, redis.NewClient(&redis.Options{Addr: addr}))
		})
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		settingstest.Run(t, func(t *testing.T) settingstest.Harness {
			return prefixed(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster}))
		})
	})
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		settingstest.Run(t, func(t *testing.T) settingstest.Harness {
			mr := miniredis.RunT(t)
			rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			return settingstest.Harness{Store: redisstore.New(rdb, ""), Lose: func(*testing.T) { mr.FlushAll() }}
		})
	})
}
