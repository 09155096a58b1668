package loadtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Request kinds: what a visitor was doing when it sent a Tier 2 request,
// as the visitor knows it (the server cannot tell a join from a poll
// before it has looked): the first check of a pass (join), a check while
// its last answer was "queued" (queuedPoll), a heartbeat of an admitted
// visitor (activePoll), a leave, and a check of the same pass after
// leaving (reenter).
const (
	KindJoin       = "join"
	KindQueuedPoll = "queuedPoll"
	KindActivePoll = "activePoll"
	KindLeave      = "leave"
	KindReenter    = "reenter"
	kindOther      = "other"
)

// RequestKinds are the kinds the report splits Redis traffic by.
var RequestKinds = []string{KindJoin, KindQueuedPoll, KindActivePoll, KindLeave, KindReenter}

// KindHeader carries a Tier 2 request's kind from the simulated visitor to
// the in-process stack's counting middleware; Tier 2 itself ignores it.
const KindHeader = "X-Vwr-Loadtest-Kind"

// RequestCounts are the Redis commands and round trips sent on behalf of
// Requests HTTP requests.
type RequestCounts struct {
	Requests, Commands, RoundTrips int64
}

type kindCounter struct{ requests, commands, trips atomic.Int64 }

func (k *kindCounter) load() RequestCounts {
	return RequestCounts{Requests: k.requests.Load(), Commands: k.commands.Load(), RoundTrips: k.trips.Load()}
}

func (k *kindCounter) reset() { k.requests.Store(0); k.commands.Store(0); k.trips.Store(0) }

// RedisCounter is a go-redis hook that counts the commands and round trips
// sent on behalf of HTTP requests that passed through its Middleware, by
// the request's kind (KindHeader), and those requests; everything else the
// hooked clients send (the admission worker, refreshes in the background)
// is counted apart, as background.
type RedisCounter struct {
	kinds      map[string]*kindCounter // fixed at construction: read without a lock
	background atomic.Int64
}

// NewRedisCounter counts every kind of RequestKinds (and any other).
func NewRedisCounter() *RedisCounter {
	c := &RedisCounter{kinds: map[string]*kindCounter{kindOther: {}}}
	for _, k := range RequestKinds {
		c.kinds[k] = &kindCounter{}
	}
	return c
}

type markKey struct{}

// Middleware marks each request's context with its kind, so its Redis
// traffic is counted under it.
func (c *RedisCounter) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := c.kinds[r.Header.Get(KindHeader)]
		if k == nil {
			k = c.kinds[kindOther]
		}
		k.requests.Add(1)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), markKey{}, k)))
	})
}

func (c *RedisCounter) counter(ctx context.Context) *kindCounter {
	k, _ := ctx.Value(markKey{}).(*kindCounter)
	return k
}

// DialHook passes dials through.
func (c *RedisCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

// handshake says whether cmd opens a connection (go-redis sends these
// through the hooks, in the context of the request that needed the
// connection): a connection's cost, not a request's, so counted as
// background.
func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "select":
		return true
	case "client":
		// CLIENT SETINFO, CLIENT MAINT_NOTIFICATIONS: what go-redis says
		// about itself on a new connection.
		a := cmd.Args()
		return len(a) > 1 && (strings.EqualFold(fmt.Sprint(a[1]), "setinfo") || strings.EqualFold(fmt.Sprint(a[1]), "maint_notifications"))
	}
	return false
}

// ProcessHook counts one command, one round trip.
func (c *RedisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if k := c.counter(ctx); k != nil && !handshake(cmd) {
			k.commands.Add(1)
			k.trips.Add(1)
		} else {
			c.background.Add(1)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts a pipeline's commands and one round trip.
func (c *RedisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		k := c.counter(ctx)
		var counted int64
		for _, cmd := range cmds {
			if k != nil && !handshake(cmd) {
				counted++
			} else {
				c.background.Add(1)
			}
		}
		if counted > 0 {
			k.commands.Add(counted)
			k.trips.Add(1)
		}
		return next(ctx, cmds)
	}
}

// Counts returns, for each kind that had requests, what they sent so far;
// and the commands sent on behalf of no counted request.
func (c *RedisCounter) Counts() (byKind map[string]RequestCounts, background int64) {
	byKind = map[string]RequestCounts{}
	for name, k := range c.kinds {
		if n := k.load(); n.Requests > 0 || n.Commands > 0 {
			byKind[name] = n
		}
	}
	return byKind, c.background.Load()
}

// Reset zeroes the counts.
func (c *RedisCounter) Reset() {
	for _, k := range c.kinds {
		k.reset()
	}
	c.background.Store(0)
}

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
