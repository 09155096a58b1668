package idle

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
)

// TestMeasureCountsWhatRedisExecuted: on a redis-server of its own, the
// commands another client sends during the measurement are counted by name
// (a script's inner commands too), and the measurement's own INFO is not.
func TestMeasureCountsWhatRedisExecuted(t *testing.T) {
	t.Parallel()
	own := testenv.NewOwnRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: own.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		for i := range 30 {
			if err := rdb.Set(ctx, "k", i, 0).Err(); err != nil {
				done <- err
				return
			}
		}
		done <- rdb.Eval(ctx, "redis.call('INCR', KEYS[1]); return redis.call('GET', KEYS[1])", []string{"n"}).Err()
	}()
	l, err := Measure(ctx, rdb, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"set": 30, "eval": 1, "incr": 1, "get": 1}
	if l.Commands != 33 || len(l.ByCommand) != len(want) || l.Seconds < 0.5 {
		t.Fatalf("%+v, want %v over ≥ 0.5 s", l, want)
	}
	for k, n := range want {
		if l.ByCommand[k] != n {
			t.Errorf("%s: %d, want %d", k, l.ByCommand[k], n)
		}
	}
}

func TestParseCommandCalls(t *testing.T) {
	t.Parallel()
	info := "# Commandstats\r\ncmdstat_get:calls=12,usec=30,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_client|setinfo:calls=4,usec=3,usec_per_call=0.75\r\nused_cpu_sys:1.0\r\n"
	got := ParseCommandCalls(info)
	if len(got) != 2 || got["get"] != 12 || got["client|setinfo"] != 4 {
		t.Fatalf("%v", got)
	}
}
