package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/httpapi"
	"github.com/vwr-go/vwr/services/queue/redisstore"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	tier1Secret = "tier1-test-secret-0123456789abcdef-0123"
	entrySecret = "entry-test-secret-0123456789abcdef-0123"
	adminToken  = "admin-test-token"
	activeTTL   = 600 * time.Second
)

// options vary one test bundle.
type options struct {
	threshold    int64
	userHeader   string
	adminToken   string
	cookieSecure bool
	redisAddr    string // default: the package's redis-server
	redisDB      int
	dialRetries  int // go-redis DialerRetries; 0: its default (5, 100 ms apart)
	notifier     queue.Notifier
	clock        *clock.Manual
	prefix       string        // default: a unique one
	logLevel     slog.Level    // of the request log (default info)
	log          applog.Config // request-log rules (default: slow at 500 ms)
}

type testBundle struct {
	rdb     *redis.Client
	prefix  string
	clk     *clock.Manual
	tier1   *token.KeyRing
	entry   *token.KeyRing
	svc     *queue.Service
	api     *httpapi.API
	metrics *httpapi.Metrics
	srv     *httptest.Server
	logs    *syncBuffer
}

// syncBuffer is a log sink safe for concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func setup(t *testing.T, o options) *testBundle {
	t.Helper()
	if o.redisAddr == "" {
		o.redisAddr = testenv.Redis(t)
	}
	if o.clock == nil {
		o.clock = clock.NewManual(time.Now().UTC().Truncate(time.Millisecond))
	}
	if o.prefix == "" {
		o.prefix = testenv.UniqueID(t) + ":"
	}
	rdb := redis.NewClient(&redis.Options{Addr: o.redisAddr, DB: o.redisDB, MaxRetries: -1,
		DialTimeout: time.Second, DialerRetries: o.dialRetries, ReadTimeout: 5 * time.Second, PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	tier1, err := token.ParseKeyRing("t1:" + tier1Secret)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := token.NewKeyRing("e1", []byte(entrySecret))
	if err != nil {
		t.Fatal(err)
	}
	b := &testBundle{rdb: rdb, prefix: o.prefix, clk: o.clock, tier1: tier1, entry: entry, logs: &syncBuffer{}}
	store := redisstore.New(rdb, redisstore.Options{Prefix: o.prefix})
	b.svc = queue.New(store, entry, o.clock, o.notifier, queue.Config{Threshold: o.threshold, ActiveTTL: activeTTL, SeenTTL: time.Hour})
	b.metrics = httpapi.NewMetrics()
	b.svc.SetObserver(b.metrics)
	b.api = httpapi.New(b.svc, httpapi.Config{
		Tier1Keys:    tier1,
		EntryKeys:    entry,
		UserHeader:   o.userHeader,
		AdminToken:   o.adminToken,
		CookieSecure: o.cookieSecure,
		Clock:        o.clock,
		Logger:       slog.New(slog.NewJSONHandler(b.logs, &slog.HandlerOptions{Level: o.logLevel})),
		Log:          o.log,
		Metrics:      b.metrics,
	})
	b.srv = httptest.NewServer(b.api.Handler())
	t.Cleanup(b.srv.Close)
	return b
}

// pass mints a Tier 1 pass for uid at pos, valid for an hour of the bundle's clock.
func (b *testBundle) pass(t testing.TB, ev, uid string, pos int64) string {
	t.Helper()
	now := b.clk.Now()
	raw, err := b.tier1.IssueTier1(token.Tier1{Subject: uid, EventID: ev, Position: pos, IssuedAt: now.Add(-time.Second), ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// reply is a decoded response.
type reply struct {
	status int
	header http.Header
	raw    string
	body   map[string]any
	cookie *http.Cookie // urr-entry-token, if set
}

func (r reply) str(k string) string  { s, _ := r.body[k].(string); return s }
func (r reply) num(k string) int64   { f, _ := r.body[k].(float64); return int64(f) }
func (r reply) flag(k string) bool   { v, _ := r.body[k].(bool); return v }
func (r reply) has(k string) bool    { _, ok := r.body[k]; return ok }
func (r reply) String() string       { return fmt.Sprintf("%d %s", r.status, r.raw) }
func bearer(tok string) http.Header  { return http.Header{"Authorization": {"Bearer " + tok}} }
func userHdr(uid string) http.Header { return http.Header{"X-User-Id": {uid}} }

func (b *testBundle) do(t testing.TB, method, path string, hdr http.Header, body io.Reader) reply {
	t.Helper()
	return doAt(t, b.srv.URL, method, path, hdr, body)
}

func doAt(t testing.TB, base, method, path string, hdr http.Header, body io.Reader) reply {
	t.Helper()
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range hdr {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(path, "/metrics") {
		t.Fatalf("%s %s: Content-Type %q, body %q", method, path, ct, raw)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("%s %s: body is not a JSON object: %q", method, path, raw)
		}
	}
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.EntryCookie {
			r.cookie = c
		}
	}
	return r
}

// keysUnder lists every Redis key of the bundle (they all carry its prefix).
func (b *testBundle) keysUnder(t testing.TB) []string {
	t.Helper()
	var out []string
	iter := b.rdb.Scan(context.Background(), 0, b.prefix+"*", 1000).Iterator()
	for iter.Next(context.Background()) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (b *testBundle) mustBeUntouched(t testing.TB) {
	t.Helper()
	if ks := b.keysUnder(t); len(ks) > 0 {
		t.Fatalf("a rejected request wrote to Redis: %v", ks)
	}
}

func wantError(t testing.TB, r reply, status int, code string) {
	t.Helper()
	if r.status != status || r.str("code") != code || r.str("error") == "" {
		t.Fatalf("got %v, want %d with code %q", r, status, code)
	}
}

func clockAt(t time.Time) *clock.Manual { return clock.NewManual(t) }

// algNone is a Tier 1 pass with "alg":"none" and no signature.
func algNone(ev string, now time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	h := enc([]byte(`{"alg":"none","typ":"JWT","kid":"t1"}`))
	c, _ := json.Marshal(map[string]any{
		"iss": token.Issuer, "aud": token.AudienceTier1, "tier": 1, "sub": "p1", "eid": ev, "pos": 1,
		"iat": now.Add(-time.Second).Unix(), "exp": now.Add(time.Hour).Unix(),
	})
	return h + "." + enc(c) + "."
}
