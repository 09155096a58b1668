package loadtest

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// RedisCounter is a go-redis hook that counts the commands and round trips
// sent on behalf of HTTP requests that passed through its Middleware, and
// those requests; the admission worker's traffic (no such mark) is left out.
type RedisCounter struct {
	requests, commands, trips atomic.Int64
}

type markKey struct{}

// Middleware marks each request's context so its Redis traffic is counted.
func (c *RedisCounter) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), markKey{}, true)))
	})
}

func marked(ctx context.Context) bool { v, _ := ctx.Value(markKey{}).(bool); return v }

// DialHook passes dials through.
func (c *RedisCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

// ProcessHook counts one command, one round trip.
func (c *RedisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if marked(ctx) {
			c.commands.Add(1)
			c.trips.Add(1)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts a pipeline's commands and one round trip.
func (c *RedisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if marked(ctx) {
			c.commands.Add(int64(len(cmds)))
			c.trips.Add(1)
		}
		return next(ctx, cmds)
	}
}

// Counts returns requests, commands and round trips so far.
func (c *RedisCounter) Counts() (requests, commands, trips int64) {
	return c.requests.Load(), c.commands.Load(), c.trips.Load()
}

// Reset zeroes the counts.
func (c *RedisCounter) Reset() { c.requests.Store(0); c.commands.Store(0); c.trips.Store(0) }

// EventMemory sums MEMORY USAGE (every element sampled) over the keys of one
// event's hash tag, {event}*, found with SCAN; embedded Redis has no MEMORY
// command and returns an error.
func EventMemory(ctx context.Context, rdb redis.UniversalClient, event string) (int64, error) {
	var total int64
	iter := rdb.Scan(ctx, 0, "{"+event+"}*", 1000).Iterator()
	for iter.Next(ctx) {
		n, err := rdb.MemoryUsage(ctx, iter.Val(), 0).Result()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, iter.Err()
}
