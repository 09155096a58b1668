package redisstore

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// The line-changes subscription runs on a connection of its own, watched
// (watchedConn, where the platform has sockets) so that an instance can
// tell, before it answers a poll from memory, whether every message Redis
// has already sent it was handled: a message written before the poll's
// request reached the instance (an admission just made, say) is then never
// missed because the subscriber goroutine was not scheduled yet.

// subscriber is a client of its own for the subscription on rdb's node (a
// Cluster's master for the channel: a plain PUBLISH reaches every node),
// whose connections are watched, and the last one it dialed; or rdb itself
// and nil where it cannot be watched (another kind of client).
func subscriber(ctx context.Context, rdb redis.UniversalClient, channel string) (redis.UniversalClient, *atomic.Pointer[watchedConn], error) {
	var node *redis.Client
	switch c := rdb.(type) {
	case *redis.Client:
		node = c
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, channel)
		if err != nil {
			return nil, nil, err
		}
		node = n
	default:
		return rdb, nil, nil
	}
	opt := *node.Options()
	last := &atomic.Pointer[watchedConn]{}
	dial := opt.Dialer
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		w := watch(conn)
		if w == nil {
			return conn, nil // not a socket of its own (TLS): unwatched
		}
		last.Store(w)
		return w, nil
	}
	opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = 1, 0, 0
	// RESP2 and nothing shared with rdb: no client-side cache, no
	// maintenance notifications (their handlers live in rdb's processor).
	opt.Protocol = 2
	opt.PushNotificationProcessor, opt.MaintNotificationsConfig = nil, nil
	opt.ClientSideCache, opt.ClientSideCacheConfig = nil, nil
	return redis.NewClient(&opt), last, nil
}
