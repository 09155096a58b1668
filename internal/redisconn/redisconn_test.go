package redisconn

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// opened is what a test reads back from a client Open built.
type opened struct {
	cluster           bool
	addrs             []string
	db                int
	user, password    string
	tls               *tls.Config
	dial, read, write time.Duration
	retries, dials    int
}

func inspect(t *testing.T, c redis.UniversalClient) opened {
	t.Helper()
	t.Cleanup(func() { _ = c.Close() })
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		return opened{addrs: []string{o.Addr}, db: o.DB, user: o.Username, password: o.Password, tls: o.TLSConfig,
			dial: o.DialTimeout, read: o.ReadTimeout, write: o.WriteTimeout, retries: o.MaxRetries, dials: o.DialerRetries}
	case *redis.ClusterClient:
		o := c.Options()
		return opened{cluster: true, addrs: o.Addrs, user: o.Username, password: o.Password, tls: o.TLSConfig,
			dial: o.DialTimeout, read: o.ReadTimeout, write: o.WriteTimeout, retries: o.MaxRetries, dials: o.DialerRetries}
	}
	t.Fatalf("client is %T", c)
	return opened{}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	short := func(o opened) bool {
		return o.dial == DialTimeout && o.read == IOTimeout && o.write == IOTimeout && o.retries == MaxRetries && o.dials == DialAttempts
	}
	tests := []struct {
		name  string
		url   string
		addrs []string
		check func(o opened) bool
	}{
		{"one server", "redis://cache.internal:6380/2", nil, func(o opened) bool {
			return !o.cluster && o.addrs[0] == "cache.internal:6380" && o.db == 2 && o.tls == nil && o.password == "" && short(o)
		}},
		{"rediss with an AUTH token (ElastiCache)", "rediss://:s3cr%2Ft@master.abc.use1.cache.amazonaws.com:6379", nil, func(o opened) bool {
			return !o.cluster && o.addrs[0] == "master.abc.use1.cache.amazonaws.com:6379" && o.password == "s3cr/t" && o.user == "" &&
				o.tls != nil && o.tls.ServerName == "master.abc.use1.cache.amazonaws.com" && o.tls.MinVersion == tls.VersionTLS12 && short(o)
		}},
		{"rediss with a user (Redis ACL)", "rediss://vwr:pw@10.0.0.5:6379/0", nil, func(o opened) bool {
			return o.user == "vwr" && o.password == "pw" && o.tls != nil && o.tls.ServerName == "10.0.0.5"
		}},
		{"the URL's own timeouts win", "redis://h:1?dial_timeout=5s&read_timeout=7s&write_timeout=9s&max_retries=4", nil, func(o opened) bool {
			return o.dial == 5*time.Second && o.read == 7*time.Second && o.write == 9*time.Second && o.retries == 4
		}},
		{"unix socket", "unix:///run/redis.sock?db=3", nil, func(o opened) bool {
			return !o.cluster && o.addrs[0] == "/run/redis.sock" && o.db == 3 && short(o)
		}},
		{"cluster URL with several hosts", "redis+cluster://10.0.0.1:7000,10.0.0.2:7001,node-3.internal:7002", nil, func(o opened) bool {
			return o.cluster && strings.Join(o.addrs, " ") == "10.0.0.1:7000 10.0.0.2:7001 node-3.internal:7002" && o.tls == nil && short(o)
		}},
		{"TLS cluster with a password (ElastiCache cluster mode)", "rediss+cluster://:tok@clustercfg.abc.use1.cache.amazonaws.com:6379", nil, func(o opened) bool {
			return o.cluster && o.addrs[0] == "clustercfg.abc.use1.cache.amazonaws.com:6379" && len(o.addrs) == 1 && o.password == "tok" &&
				o.tls != nil && o.tls.ServerName == "clustercfg.abc.use1.cache.amazonaws.com" && o.tls.MinVersion == tls.VersionTLS12 && short(o)
		}},
		{"cluster URL: default port, db 0, own options", "rediss+cluster://u:p@cfg.internal/0?read_timeout=3s&addr=10.0.0.9:7000", nil, func(o opened) bool {
			return o.cluster && strings.Join(o.addrs, " ") == "cfg.internal:6379 10.0.0.9:7000" && o.user == "u" && o.read == 3*time.Second && o.dial == DialTimeout
		}},
		{"cluster URL: own dial attempts", "redis+cluster://h1:7000?dialer_retries=3", nil, func(o opened) bool {
			return o.cluster && o.dials == 3 && o.retries == MaxRetries
		}},
		{"cluster seed addresses", "", []string{"10.0.0.1:7000", "10.0.0.2:7001", "[::1]:7002"}, func(o opened) bool {
			return o.cluster && strings.Join(o.addrs, " ") == "10.0.0.1:7000 10.0.0.2:7001 [::1]:7002" && o.tls == nil && o.password == "" && short(o)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Open(tc.url, tc.addrs)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if o := inspect(t, c); !tc.check(o) {
				t.Fatalf("options %+v", o)
			}
		})
	}
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		url   string
		addrs []string
		want  []string // every one must be in the error
	}{
		{"nothing", "", nil, []string{"REDIS_URL or REDIS_CLUSTER_ADDRS is required"}},
		{"both", "redis://h:1", []string{"h:2"}, []string{"REDIS_URL or REDIS_CLUSTER_ADDRS, not both", "rediss+cluster://"}},
		{"wrong scheme", "http://h:1", nil, []string{"REDIS_URL", `scheme "http"`}},
		{"no scheme", "h:6379", nil, []string{"REDIS_URL"}},
		{"bad db", "redis://h:1/x", nil, []string{"REDIS_URL", "database"}},
		{"unknown option", "redis://h:1?nonsense=1", nil, []string{"REDIS_URL", "nonsense"}},
		{"cluster db", "redis+cluster://h:1/3", nil, []string{"REDIS_URL", "only database 0"}},
		{"cluster empty host", "redis+cluster://h1:7000,,h2:7001", nil, []string{"REDIS_URL", "want host:port"}},
		{"cluster no hosts", "redis+cluster:///", nil, []string{"REDIS_URL", "want host:port"}},
		{"cluster bad port", "redis+cluster://h1:0", nil, []string{"REDIS_URL", "port must be 1-65535"}},
		{"cluster unknown option", "rediss+cluster://h1:7000?dial=1s", nil, []string{"REDIS_URL", "dial"}},
		{"addr without port", "", []string{"10.0.0.1"}, []string{"REDIS_CLUSTER_ADDRS", `"10.0.0.1"`, "host:port"}},
		{"addr bad port", "", []string{"10.0.0.1:x"}, []string{"REDIS_CLUSTER_ADDRS", "port"}},
		{"addr URL", "", []string{"redis://10.0.0.1:7000"}, []string{"REDIS_CLUSTER_ADDRS"}},
		{"addr no host", "", []string{":7000"}, []string{"REDIS_CLUSTER_ADDRS", "host:port"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Open(tc.url, tc.addrs)
			if err == nil {
				c.Close()
				t.Fatalf("Open(%q, %q) accepted", tc.url, tc.addrs)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// A malformed URL's error must not repeat its password (it goes to logs).
func TestOpenErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"rediss://:hunter2@host:6379/x",
		"rediss://:hunter2@host:port",
		"redis+cluster://:hunter2@h1:7000,h2:x",
		"rediss://:hunter2@h:1?nonsense=1",
		"ftp://:hunter2@h:1",
	} {
		c, err := Open(u, nil)
		if err == nil {
			c.Close()
			t.Fatalf("Open(%s) accepted", u)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("error repeats the password: %v", err)
		}
	}
}

func TestVarsNameTheirVariables(t *testing.T) {
	t.Parallel()
	v := Vars{URL: "VWR_TIER1_REDIS_URL", ClusterAddrs: "VWR_TIER1_REDIS_CLUSTER_ADDRS"}
	for _, tc := range []struct {
		url   string
		addrs []string
		want  string
	}{
		{"ftp://h", nil, "VWR_TIER1_REDIS_URL: "},
		{"", []string{"h"}, "VWR_TIER1_REDIS_CLUSTER_ADDRS: "},
		{"", nil, "VWR_TIER1_REDIS_URL or VWR_TIER1_REDIS_CLUSTER_ADDRS is required"},
	} {
		if _, err := v.Open(tc.url, tc.addrs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("Open(%q, %q) = %v, want %q", tc.url, tc.addrs, err, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url   string
		addrs []string
		want  string
	}{
		{"rediss://:secret@h:6379", nil, "h:6379 (TLS)"},
		{"redis://h:6379/1", nil, "h:6379"},
		{"", []string{"a:1", "b:2"}, "cluster a:1,b:2"},
		{"rediss+cluster://:secret@a:1,b:2", nil, "cluster a:1,b:2 (TLS)"},
	} {
		c, err := Open(tc.url, tc.addrs)
		if err != nil {
			t.Fatal(err)
		}
		if got := Describe(c); got != tc.want {
			t.Fatalf("Describe = %q, want %q", got, tc.want)
		}
		c.Close()
	}
}

// TestOpenReachesRealServers: the same three spellings reach the package's
// redis-server and its 3-node cluster, and the cluster client routes keys
// of every slot.
func TestOpenReachesRealServers(t *testing.T) {
	t.Parallel()
	seeds := testenv.RedisCluster(t)
	for _, tc := range []struct {
		name  string
		url   string
		addrs []string
	}{
		{"redis URL", "redis://" + testenv.Redis(t) + "/0", nil},
		{"cluster URL", "redis+cluster://" + strings.Join(seeds, ","), nil},
		{"cluster URL, one seed", "redis+cluster://" + seeds[1], nil},
		{"cluster addrs", "", seeds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Open(tc.url, tc.addrs)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			ctx := context.Background()
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatalf("PING: %v", err)
			}
			for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
				key := testenv.UniqueID(t) + k
				if err := c.Set(ctx, key, k, time.Minute).Err(); err != nil {
					t.Fatalf("SET %s: %v", key, err)
				}
				if got, err := c.Get(ctx, key).Result(); err != nil || got != k {
					t.Fatalf("GET %s = %q, %v", key, got, err)
				}
			}
		})
	}
}

// TestOpenRedissReachesATLSServer runs a rediss:// URL with a password
// against a real TLS-only redis-server that requires one (as ElastiCache
// with in-transit encryption and AUTH does): the certificate is verified
// (an untrusted one fails) and the password is sent.
func TestOpenRedissReachesATLSServer(t *testing.T) {
	t.Parallel()
	r := testenv.RedisTLS(t)
	ctx := context.Background()
	open := func(url string, trust bool) redis.UniversalClient {
		t.Helper()
		c, err := Open(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if o := c.(*redis.Client).Options(); trust && o.TLSConfig != nil {
			// The test CA stands in for the public roots that trust
			// ElastiCache; no connection exists yet.
			o.TLSConfig.RootCAs = r.RootCAs
		}
		return c
	}
	if err := open("rediss://:"+r.Password+"@"+r.Addr+"/0", true).Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if err := open("rediss://:"+r.Password+"@"+r.Addr+"/0", false).Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("PING with an untrusted certificate = %v, want a certificate error", err)
	}
	if err := open("rediss://:wrong@"+r.Addr+"/0", true).Ping(ctx).Err(); err == nil {
		t.Fatal("PING with a wrong password succeeded")
	}
	if err := open("redis://:"+r.Password+"@"+r.Addr+"/0", true).Ping(ctx).Err(); err == nil {
		t.Fatal("plain redis:// reached a TLS-only server")
	}
}
