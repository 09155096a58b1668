package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/redisconn"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/gate"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const secret = "app-test-secret-0123456789abcdef-0123456"

func TestFromEnvDefaults(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	c = c.WithDefaults()
	q, w := c.Queue(), c.Worker()
	if c.Addr != DefaultAddr || q.Threshold != 1000 || q.ActiveTTL != 600*time.Second || q.SeenTTL != 600*time.Second ||
		w.AdmissionInterval != time.Second || q.AdmissionBatchSize != 100 || w.StaleCleanupInterval != 30*time.Second ||
		c.UserHeader != "" || c.AdminToken != "" || c.CookieSecure || len(c.Gate.Prefixes) != 0 ||
		c.Log.Level != "info" || c.Log.Slow.D() != 500*time.Millisecond {
		t.Fatalf("defaults = %+v, queue %+v, worker %+v", c, q, w)
	}
	// The gate owns its default prefixes.
	a, err := Open(Config{OpenEvents: true, EntryTokenSecret: secret}, Options{Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.Gate.Prefixes(), ","); got != "/api/seats/,/api/reservations/" {
		t.Fatalf("gate prefixes = %s", got)
	}
}

func TestFromEnvReadsEverything(t *testing.T) {
	t.Parallel()
	c, err := FromEnv((map[string]string{
		"QUEUE_LISTEN_ADDR": ":9000", "REDIS_URL": "redis://r:6379/2", "QUEUE_ENTRY_TOKEN_SECRET": secret,
		"VWR_TIER1_TOKEN_KEYS": "a:" + secret, "QUEUE_USER_HEADER": "X-Auth-User", "QUEUE_ADMIN_TOKEN": "adm",
		"QUEUE_COOKIE_SECURE": "true", "QUEUE_THRESHOLD": "7", "QUEUE_ACTIVE_TTL_SECONDS": "30",
		"QUEUE_SEEN_TTL_SECONDS": "40", "QUEUE_ADMISSION_INTERVAL_MS": "250", "QUEUE_ADMISSION_BATCH_SIZE": "9",
		"QUEUE_STALE_CLEANUP_INTERVAL_MS": "5000", "QUEUE_GATE_PREFIXES": " /a/ , /b/ ",
		"QUEUE_GATE_USER_HEADER": "X-Site-User", "QUEUE_GATE_BYPASS_SECRET": "edge",
		"LOG_LEVEL": "debug", "LOG_SLOW_MS": "120",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Addr: ":9000", RedisURL: "redis://r:6379/2", EntryTokenSecret: secret, Tier1TokenKeys: "a:" + secret,
		UserHeader: "X-Auth-User", AdminToken: "adm", CookieSecure: true, Threshold: 7,
		ActiveTTL: envconf.Seconds(30 * time.Second), SeenTTL: envconf.Seconds(40 * time.Second),
		AdmissionInterval: envconf.Millis(250 * time.Millisecond), AdmissionBatchSize: 9,
		StaleCleanupInterval: envconf.Millis(5 * time.Second), Gate: gate.Settings{Prefixes: []string{"/a/", "/b/"},
			UserHeader: "X-Site-User", BypassSecret: "edge"},
		Log: applog.Config{Level: "debug", Slow: envconf.Millis(120 * time.Millisecond)},
	}
	if strings.Join(c.Gate.Prefixes, ",") != "/a/,/b/" {
		t.Fatalf("prefixes = %q", c.Gate.Prefixes)
	}
	c.Gate.Prefixes, want.Gate.Prefixes = nil, nil
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	if err := c.WithDefaults().validate(true, true); err != nil {
		t.Fatalf("validate: %v", err)
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	ok := map[string]string{"REDIS_URL": "redis://x:1", "QUEUE_ENTRY_TOKEN_SECRET": secret}
	tests := []struct {
		name string
		set  map[string]string
		want string
	}{
		{"missing redis", map[string]string{"REDIS_URL": ""}, "REDIS_URL is required"},
		{"missing secret", map[string]string{"QUEUE_ENTRY_TOKEN_SECRET": ""}, "QUEUE_ENTRY_TOKEN_SECRET is required"},
		{"short secret", map[string]string{"QUEUE_ENTRY_TOKEN_SECRET": "short"}, "QUEUE_ENTRY_TOKEN_SECRET must be at least 32 bytes"},
		{"bad tier1 keys", map[string]string{"VWR_TIER1_TOKEN_KEYS": "nokid"}, "VWR_TIER1_TOKEN_KEYS"},
		{"threshold text", map[string]string{"QUEUE_THRESHOLD": "many"}, "QUEUE_THRESHOLD"},
		{"threshold too big", map[string]string{"QUEUE_THRESHOLD": "1000001"}, "QUEUE_THRESHOLD"},
		{"ttl zero", map[string]string{"QUEUE_ACTIVE_TTL_SECONDS": "0"}, "QUEUE_ACTIVE_TTL_SECONDS"},
		{"seen negative", map[string]string{"QUEUE_SEEN_TTL_SECONDS": "-1"}, "QUEUE_SEEN_TTL_SECONDS"},
		{"seen beyond the tick wrap", map[string]string{"QUEUE_SEEN_TTL_SECONDS": "3601"}, "QUEUE_SEEN_TTL_SECONDS must be from 1 to 3600"},
		{"interval text", map[string]string{"QUEUE_ADMISSION_INTERVAL_MS": "1s"}, "QUEUE_ADMISSION_INTERVAL_MS"},
		{"batch", map[string]string{"QUEUE_ADMISSION_BATCH_SIZE": "x"}, "QUEUE_ADMISSION_BATCH_SIZE"},
		{"cleanup", map[string]string{"QUEUE_STALE_CLEANUP_INTERVAL_MS": "0.5"}, "QUEUE_STALE_CLEANUP_INTERVAL_MS"},
		{"cookie", map[string]string{"QUEUE_COOKIE_SECURE": "yes please"}, "QUEUE_COOKIE_SECURE"},
		{"threshold zero", map[string]string{"QUEUE_THRESHOLD": "0"}, "QUEUE_THRESHOLD"},
		{"log level", map[string]string{"LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{"slow ms", map[string]string{"LOG_SLOW_MS": "fast"}, "LOG_SLOW_MS"},
		{"user header", map[string]string{"QUEUE_USER_HEADER": "X User"}, "QUEUE_USER_HEADER"},
		{"user header authorization", map[string]string{"QUEUE_USER_HEADER": "authorization"}, "QUEUE_USER_HEADER"},
		{"gate header", map[string]string{"QUEUE_GATE_USER_HEADER": "a:b"}, "QUEUE_GATE_USER_HEADER"},
		{"gate prefix", map[string]string{"QUEUE_GATE_PREFIXES": "api/seats/"}, "QUEUE_GATE_PREFIXES"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := map[string]string{}
			for k, v := range ok {
				m[k] = v
			}
			for k, v := range tc.set {
				m[k] = v
			}
			c, err := FromEnv(m)
			if err == nil {
				_, err = Open(c, Options{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

type notes struct {
	mu  sync.Mutex
	got []queue.Admission
}

func (n *notes) Admitted(a queue.Admission) { n.mu.Lock(); n.got = append(n.got, a); n.mu.Unlock() }

// mustCheck sends POST check for uid (trusted header X-User-Id) and fails
// the test unless it is answered 200.
func mustCheck(t *testing.T, base, ev, uid string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/queue/check/"+ev, nil)
	req.Header.Set("X-User-Id", uid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("check = %d", resp.StatusCode)
	}
}

// TestOpenServesAndShutsDownGracefully assembles the runtime on the real
// Redis, serves a check through it, and stops it while a request is in flight.
func TestOpenServesAndShutsDownGracefully(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	t.Cleanup(func() { rdb.Close() })
	n := &notes{}
	a, err := Open(Config{OpenEvents: true, EntryTokenSecret: secret, UserHeader: "X-User-Id", AdminToken: "adm"}, Options{
		Redis: rdb, KeyPrefix: testenv.UniqueID(t) + ":", Notifier: n, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Warnings()) != 0 {
		t.Fatalf("warnings = %v", a.Warnings())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()

	// A slow extra route stands in for an in-flight request at shutdown.
	release := make(chan struct{})
	started := make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("/", a.Handler())
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(context.Background())
	jobRan := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ln, mux, slog.New(slog.DiscardHandler), func(ctx context.Context) { close(jobRan); <-ctx.Done() })
	}()

	ev := testenv.UniqueID(t)
	mustCheck(t, base, ev, "u1")
	n.mu.Lock()
	if len(n.got) != 1 || n.got[0].UserID != "u1" || n.got[0].EventID != ev {
		t.Fatalf("notifier got %+v", n.got)
	}
	n.mu.Unlock()
	<-jobRan

	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			slow <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- string(b)
	}()
	<-started
	cancel()
	// Shutdown has begun once the listener refuses new connections; only
	// then may the in-flight request finish. The deadline is a hang guard.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts 10s after cancel")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if got := <-slow; got != "done" {
		t.Fatalf("in-flight request during shutdown: %q", got)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestGateFromConfig(t *testing.T) {
	t.Parallel()
	a, err := Open(Config{OpenEvents: true, EntryTokenSecret: secret, Gate: gate.Settings{Prefixes: []string{"/book/"}, BypassSecret: "edge"}},
		Options{Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(a.Warnings(), "\n"); !strings.Contains(w, "VWR_TIER1_TOKEN_KEYS") || !strings.Contains(w, "QUEUE_ADMIN_TOKEN") {
		t.Fatalf("warnings = %q", w)
	}
	h := a.Gate.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	raw, err := a.EntryKeys.IssueEntry(token.Entry{EventID: "E1", UserID: "u", IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, tok, bypass string
		want              int
	}{
		{"/book/E1", "", "", 403},
		{"/book/E1", raw, "", 204},
		{"/book/E1", "", "edge", 204},
		{"/api/seats/E1", "", "", 204}, // not guarded: prefixes were replaced
	} {
		req, _ := http.NewRequest("GET", "http://site"+c.path, nil)
		if c.tok != "" {
			req.Header.Set(gate.TokenHeader, c.tok)
		}
		if c.bypass != "" {
			req.Header.Set(gate.BypassHeader, c.bypass)
		}
		rec := &statusRecorder{header: http.Header{}}
		h.ServeHTTP(rec, req)
		if rec.code != c.want {
			t.Fatalf("%s tok=%v bypass=%q: %d, want %d", c.path, c.tok != "", c.bypass, rec.code, c.want)
		}
	}
}

type statusRecorder struct {
	header http.Header
	code   int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(c int)           { r.code = c }

// TestRedisFromEnv: REDIS_URL (one server, TLS, or a cluster URL) or
// REDIS_CLUSTER_ADDRS choose the client Open builds; internal/redisconn
// tests the parsing in depth.
func TestRedisFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    string // redisconn.Describe of the client
		wantErr string
	}{
		{"one server", map[string]string{"REDIS_URL": "redis://r:6379/2"}, "r:6379", ""},
		{"TLS with a password", map[string]string{"REDIS_URL": "rediss://:tok@r:6379"}, "r:6379 (TLS)", ""},
		{"cluster URL", map[string]string{"REDIS_URL": "redis+cluster://a:7000,b:7001"}, "cluster a:7000,b:7001", ""},
		{"cluster addrs", map[string]string{"REDIS_CLUSTER_ADDRS": " a:7000 , b:7001,c:7002 "}, "cluster a:7000,b:7001,c:7002", ""},
		{"neither", map[string]string{}, "", "REDIS_URL is required"},
		{"both", map[string]string{"REDIS_URL": "redis://r:1", "REDIS_CLUSTER_ADDRS": "a:7000"}, "", "REDIS_URL or REDIS_CLUSTER_ADDRS, not both"},
		{"bad addr", map[string]string{"REDIS_CLUSTER_ADDRS": "a"}, "", "REDIS_CLUSTER_ADDRS"},
		{"bad URL", map[string]string{"REDIS_URL": "http://r"}, "", "REDIS_URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"QUEUE_ENTRY_TOKEN_SECRET": secret}
			for k, v := range tc.env {
				env[k] = v
			}
			c, err := FromEnv(env)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Open(c, Options{Logger: slog.New(slog.DiscardHandler)})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Open = %v, want an error mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			if got := redisconn.Describe(a.Redis); got != tc.want {
				t.Fatalf("client for %v is %q, want %q", tc.env, got, tc.want)
			}
		})
	}
}
