// Package redisconn turns a binary's Redis settings into a go-redis client,
// the same way for every tier: a redis:// or rediss:// URL for one server, a
// redis+cluster:// or rediss+cluster:// URL or a list of seed addresses for
// a Redis Cluster. rediss means TLS (what ElastiCache's in-transit
// encryption needs, usually with an AUTH password in the URL). Clients get
// short timeouts, one dial attempt per connection and one command retry, so
// that an outage becomes a quick 503 rather than a request hanging on
// retries, unless the URL sets its own.
// Errors name the variable to fix and never repeat a password.
package redisconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults applied to every client unless the URL sets them.
const (
	DialTimeout = 2 * time.Second
	IOTimeout   = 2 * time.Second // read and write
	// MaxRetries is how often a failed command is retried.
	MaxRetries = 1
	// DialAttempts is how often one connection is dialled before the
	// command fails (go-redis would try 5 times, each up to DialTimeout).
	DialAttempts = 1
)

// Vars names the environment variables the settings came from, for errors.
type Vars struct {
	URL          string // e.g. REDIS_URL
	ClusterAddrs string // e.g. REDIS_CLUSTER_ADDRS
}

// Default are the Tier 2 queue's variables.
var Default = Vars{URL: "REDIS_URL", ClusterAddrs: "REDIS_CLUSTER_ADDRS"}

// Open is Default.Open.
func Open(rawURL string, clusterAddrs []string) (redis.UniversalClient, error) {
	return Default.Open(rawURL, clusterAddrs)
}

// Open returns a client for rawURL or, when clusterAddrs is set, for the
// Redis Cluster those seed addresses (host:port) belong to. Exactly one of
// the two must be set. URL schemes:
//
//	redis://[user:password@]host:port[/db][?option=value…]   one server
//	rediss://…                                                 one server over TLS
//	unix://[user:password@]/path/to/socket[?db=N]              one server on a socket
//	redis+cluster://[user:password@]host:port[,host:port…][?option=value…]
//	rediss+cluster://…                                         a cluster over TLS
//
// The options are go-redis' (dial_timeout, read_timeout, max_retries, …).
// It does not connect.
func (v Vars) Open(rawURL string, clusterAddrs []string) (redis.UniversalClient, error) {
	switch {
	case rawURL != "" && len(clusterAddrs) > 0:
		return nil, fmt.Errorf("set %s or %s, not both (for a cluster with TLS or a password use %s=rediss+cluster://user:password@host:port,host:port)",
			v.URL, v.ClusterAddrs, v.URL)
	case len(clusterAddrs) > 0:
		opt, err := clusterFromAddrs(clusterAddrs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.ClusterAddrs, err)
		}
		return redis.NewClusterClient(opt), nil
	case rawURL == "":
		return nil, fmt.Errorf("%s or %s is required", v.URL, v.ClusterAddrs)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL, password included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s: not a URL: %v", v.URL, err)
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
		opt, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", v.URL, err)
		}
		withDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries, &opt.DialerRetries)
		return redis.NewClient(opt), nil
	case "redis+cluster", "rediss+cluster":
		opt, err := clusterFromURL(u)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", v.URL, err)
		}
		return redis.NewClusterClient(opt), nil
	default:
		return nil, fmt.Errorf("%s: scheme %q: want redis://, rediss://, unix://, redis+cluster:// or rediss+cluster://", v.URL, u.Scheme)
	}
}

// clusterFromURL reads a redis+cluster:// URL: the comma-separated hosts
// become seed addresses, the rest is go-redis' cluster URL (its own syntax
// takes further hosts as ?addr=).
func clusterFromURL(u *url.URL) (*redis.ClusterOptions, error) {
	if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
		return nil, fmt.Errorf("database %q: a Redis Cluster has only database 0", p)
	}
	hosts := strings.Split(u.Host, ",")
	for i, h := range hosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "6379") // a host without a port
		}
		if err := checkAddr(h); err != nil {
			return nil, err
		}
		hosts[i] = h
	}
	q := u.Query()
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	base := url.URL{Scheme: strings.TrimSuffix(u.Scheme, "+cluster"), User: u.User, Host: hosts[0], RawQuery: q.Encode()}
	opt, err := redis.ParseClusterURL(base.String())
	if err != nil {
		return nil, err
	}
	if opt.TLSConfig != nil {
		opt.TLSConfig.MinVersion = tls.VersionTLS12
	}
	withDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries, &opt.DialerRetries)
	return opt, nil
}

// clusterFromAddrs reads a list of seed addresses: plain TCP, no password.
func clusterFromAddrs(addrs []string) (*redis.ClusterOptions, error) {
	for _, a := range addrs {
		if err := checkAddr(a); err != nil {
			return nil, err
		}
	}
	opt := &redis.ClusterOptions{Addrs: addrs}
	withDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries, &opt.DialerRetries)
	return opt, nil
}

// checkAddr accepts host:port with a non-empty host and a port in 1…65535.
func checkAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return fmt.Errorf("address %q: want host:port", a)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("address %q: port must be 1-65535", a)
	}
	return nil
}

func withDefaults(dial, read, write *time.Duration, retries, dials *int) {
	if *dial == 0 {
		*dial = DialTimeout
	}
	if *read == 0 {
		*read = IOTimeout
	}
	if *write == 0 {
		*write = IOTimeout
	}
	if *retries == 0 {
		*retries = MaxRetries
	}
	if *dials == 0 {
		*dials = DialAttempts
	}
}

// Describe names where c connects, for logs: host:port, or the cluster's
// seed addresses, and whether TLS is on. It never includes a password.
func Describe(c redis.UniversalClient) string {
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		return o.Addr + tlsNote(o.TLSConfig)
	case *redis.ClusterClient:
		o := c.Options()
		return "cluster " + strings.Join(o.Addrs, ",") + tlsNote(o.TLSConfig)
	default:
		return fmt.Sprintf("%T", c)
	}
}

func tlsNote(c *tls.Config) string {
	if c != nil {
		return " (TLS)"
	}
	return ""
}
