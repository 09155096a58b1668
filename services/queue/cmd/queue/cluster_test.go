package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
)

// TestRunsOnRealRedisDeployments runs the deployable binary against the 3-node
// Redis Cluster the tests start, configured both ways (seed addresses and a
// redis+cluster:// URL), and against a TLS-only redis-server with a password
// (a rediss:// URL, as ElastiCache with in-transit encryption and AUTH
// takes). On each: /healthz answers, a direct entry and a join work, the
// worker admits the queued user once the slot is free, the rankings (keys
// outside the event's slot) count both, and SIGTERM stops it cleanly.
func TestRunsOnRealRedisDeployments(t *testing.T) {
	t.Parallel()
	seeds := testenv.RedisCluster(t)
	tlsRedis := testenv.RedisTLS(t)
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
	t.Cleanup(func() { cluster.Close() })
	single := redis.NewClient(&redis.Options{Addr: tlsRedis.Addr, Password: tlsRedis.Password, TLSConfig: tlsConfig(tlsRedis)})
	t.Cleanup(func() { single.Close() })
	tests := []struct {
		name string
		env  []string
		rdb  redis.UniversalClient // to look at the keys the binary wrote
		logs string                // how the binary describes its Redis
	}{
		{"REDIS_CLUSTER_ADDRS", []string{"REDIS_CLUSTER_ADDRS=" + strings.Join(seeds, ",")}, cluster, `"redis":"cluster ` + strings.Join(seeds, ",") + `"`},
		{"redis+cluster URL", []string{"REDIS_URL=redis+cluster://" + seeds[2]}, cluster, `"redis":"cluster ` + seeds[2] + `"`},
		{"rediss URL with a password", []string{
			"REDIS_URL=rediss://:" + tlsRedis.Password + "@" + tlsRedis.Addr + "/0",
			"SSL_CERT_FILE=" + tlsRedis.CAFile, // trust the test server's certificate
		}, single, `"redis":"` + tlsRedis.Addr + ` (TLS)"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startEnv(t, append(tc.env, "QUEUE_THRESHOLD=1", "QUEUE_ADMISSION_INTERVAL_MS=20", "QUEUE_ADMIN_TOKEN=adm"))
			if !strings.Contains(p.stderr.String(), tc.logs) {
				t.Fatalf("start-up log lacks %s:\n%s", tc.logs, p.stderr.String())
			}
			ev := testenv.UniqueID(t)
			if code, body := call(t, p, "GET", "/healthz", ""); code != 200 {
				t.Fatalf("healthz = %d %v\n%s", code, body, p.stderr.String())
			}
			if _, body := call(t, p, "POST", "/api/queue/check/"+ev, "alice"); body["status"] != "active" || body["entryToken"] == "" {
				t.Fatalf("alice = %v", body)
			}
			if _, body := call(t, p, "POST", "/api/queue/check/"+ev, "bob"); body["status"] != "queued" || body["position"] != 1.0 {
				t.Fatalf("bob = %v", body)
			}
			if _, body := call(t, p, "POST", "/api/queue/leave/"+ev, "alice"); body["removed"] != true {
				t.Fatalf("alice's leave = %v", body)
			}
			// Only the worker can let bob in now. The deadline is a hang guard.
			deadline := time.Now().Add(20 * time.Second)
			for {
				code, body := call(t, p, "GET", "/api/queue/status/"+ev, "bob")
				if code == 200 && body["status"] == "active" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the worker never admitted bob: %d %v\n%s", code, body, p.stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			ctx := context.Background()
			if _, err := tc.rdb.ZScore(ctx, "{"+ev+"}:active", "bob").Result(); err != nil {
				t.Fatalf("bob is not in {%s}:active: %v", ev, err)
			}
			if ok, err := tc.rdb.SIsMember(ctx, "queue:active-events", ev).Result(); err != nil || !ok {
				t.Fatalf("%s in queue:active-events = %v, %v", ev, ok, err)
			}
			// Rankings reach the ranking keys on the pass after bob's admission.
			for {
				_, body := call(t, p, "GET", "/api/queue/admin/ranking?period=daily&limit=100", "")
				if rankedAdmissions(body, ev) == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("daily ranking %v lacks %s with 2 admissions", body, ev)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := p.wait(t, 30*time.Second); err != nil {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
			}
			if strings.Contains(p.stderr.String(), `"level":"ERROR"`) {
				t.Fatalf("errors logged:\n%s", p.stderr.String())
			}
		})
	}
}

// call sends one request to the binary, as uid (X-User-Id) or, without
// one, with the admin token, and decodes the JSON reply.
func call(t *testing.T, p *proc, method, path, uid string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+p.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if uid != "" {
		req.Header.Set("X-User-Id", uid)
	} else {
		req.Header.Set("Authorization", "Bearer adm")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", method, path, err, p.stderr.String())
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, body
}

// rankedAdmissions reads ev's admissions from a ranking reply (0 if absent).
func rankedAdmissions(body map[string]any, ev string) float64 {
	list, _ := body["ranking"].([]any)
	for _, e := range list {
		if m, _ := e.(map[string]any); m["eventId"] == ev {
			n, _ := m["admissions"].(float64)
			return n
		}
	}
	return 0
}

func tlsConfig(r testenv.TLSRedis) *tls.Config {
	return &tls.Config{RootCAs: r.RootCAs, MinVersion: tls.VersionTLS12}
}
