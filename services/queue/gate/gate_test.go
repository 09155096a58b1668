package gate_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue/gate"
)

const secret = "gate-test-secret-0123456789abcdef-0123456789"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type testBundle struct {
	keys    *token.KeyRing
	handler http.Handler
	reached *token.Entry
	hits    *int
}

func setup(t *testing.T, cfg gate.Config) *testBundle {
	t.Helper()
	keys, err := token.NewKeyRing("e1", []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Keys == nil {
		cfg.Keys = keys
	}
	cfg.Clock = clock.NewManual(t0)
	g, err := gate.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &testBundle{keys: keys, reached: &token.Entry{}, hits: new(int)}
	b.handler = g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*b.hits++
		if e, ok := gate.EntryFrom(r.Context()); ok {
			*b.reached = e
		}
		if r.Header.Get(gate.BypassHeader) != "" {
			t.Errorf("bypass header reached the protected handler")
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return b
}

func (b *testBundle) entry(t *testing.T, ev, uid string, exp time.Time) string {
	t.Helper()
	raw, err := b.keys.IssueEntry(token.Entry{EventID: ev, UserID: uid, IssuedAt: t0.Add(-time.Minute), ExpiresAt: exp})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// signed builds an entry-shaped token with an arbitrary method and key.
func signed(t *testing.T, m jwt.SigningMethod, key any, ev, uid string) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, jwt.MapClaims{
		"iss": token.Issuer, "aud": token.AudienceEntry, "sub": ev, "uid": uid, "jti": "x",
		"iat": t0.Add(-time.Minute).Unix(), "exp": t0.Add(10 * time.Minute).Unix(),
	})
	tok.Header["kid"] = "e1"
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func algNone(ev, uid string) string {
	enc := base64.RawURLEncoding.EncodeToString
	h := enc([]byte(`{"alg":"none","typ":"JWT","kid":"e1"}`))
	c, _ := json.Marshal(map[string]any{
		"iss": token.Issuer, "aud": token.AudienceEntry, "sub": ev, "uid": uid,
		"iat": t0.Unix(), "exp": t0.Add(10 * time.Minute).Unix(),
	})
	return h + "." + enc(c) + "."
}

func decode(t *testing.T, rec *httptest.ResponseRecorder) map[string]string {
	t.Helper()
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("403 body is not JSON: %q", rec.Body.String())
	}
	return body
}

func TestGate(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	exp := t0.Add(10 * time.Minute)
	tests := []struct {
		name     string
		cfg      gate.Config
		method   string
		path     string
		header   func(b *testBundle) http.Header
		cookie   func(b *testBundle) *http.Cookie
		wantCode int
		wantErr  string // 403 code
		wantTo   string
		wantUID  string // Entry seen downstream
	}{
		{name: "valid header", path: "/api/seats/E1/reserve", method: "POST",
			header: func(b *testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {b.entry(t, "E1", "u1", exp)}}
			},
			wantCode: 204, wantUID: "u1"},
		{name: "valid cookie every method", path: "/api/reservations/E1", method: "PATCH",
			cookie: func(b *testBundle) *http.Cookie {
				return &http.Cookie{Name: gate.TokenCookie, Value: b.entry(t, "E1", "u1", exp)}
			},
			wantCode: 204, wantUID: "u1"},
		{name: "missing token", path: "/api/seats/E1", method: "GET",
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "missing token no event", path: "/api/seats/", method: "GET",
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/"},
		{name: "expired", path: "/api/seats/E1", method: "GET",
			header: func(b *testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {b.entry(t, "E1", "u1", t0.Add(-time.Second))}}
			},
			wantCode: 403, wantErr: gate.CodeExpired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "alg none", path: "/api/seats/E1", method: "GET",
			header:   func(*testBundle) http.Header { return http.Header{"X-Queue-Entry-Token": {algNone("E1", "u1")}} },
			wantCode: 403, wantErr: gate.CodeInvalid, wantTo: "/vwr/queue.html?event=E1"},
		{name: "HS512 with the right secret", path: "/api/seats/E1", method: "GET",
			header: func(*testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {signed(t, jwt.SigningMethodHS512, []byte(secret), "E1", "u1")}}
			},
			wantCode: 403, wantErr: gate.CodeInvalid, wantTo: "/vwr/queue.html?event=E1"},
		{name: "RS256", path: "/api/seats/E1", method: "GET",
			header: func(*testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {signed(t, jwt.SigningMethodRS256, rsaKey, "E1", "u1")}}
			},
			wantCode: 403, wantErr: gate.CodeInvalid, wantTo: "/vwr/queue.html?event=E1"},
		{name: "wrong key same kid", path: "/api/seats/E1", method: "GET",
			header: func(*testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {signed(t, jwt.SigningMethodHS256, []byte(secret+"-other"), "E1", "u1")}}
			},
			wantCode: 403, wantErr: gate.CodeInvalid, wantTo: "/vwr/queue.html?event=E1"},
		{name: "wrong event", path: "/api/seats/E2/reserve", method: "POST",
			header: func(b *testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {b.entry(t, "E1", "u1", exp)}}
			},
			wantCode: 403, wantErr: gate.CodeInvalid, wantTo: "/vwr/queue.html?event=E2"},
		{name: "uid matches user header", cfg: gate.Config{UserHeader: "X-User-Id"}, path: "/api/seats/E1", method: "GET",
			header: func(b *testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {b.entry(t, "E1", "u1", exp)}, "X-User-Id": {"u1"}}
			},
			wantCode: 204, wantUID: "u1"},
		{name: "uid mismatch", cfg: gate.Config{UserHeader: "X-User-Id"}, path: "/api/seats/E1", method: "GET",
			header: func(b *testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {b.entry(t, "E1", "u1", exp)}, "X-User-Id": {"u2"}}
			},
			wantCode: 403, wantErr: gate.CodeInvalid, wantTo: "/vwr/queue.html?event=E1"},
		{name: "uid header missing", cfg: gate.Config{UserHeader: "X-User-Id"}, path: "/api/seats/E1", method: "GET",
			header: func(b *testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {b.entry(t, "E1", "u1", exp)}}
			},
			wantCode: 403, wantErr: gate.CodeInvalid, wantTo: "/vwr/queue.html?event=E1"},
		{name: "tier 1 pass as entry token", path: "/api/seats/E1", method: "GET",
			header: func(b *testBundle) http.Header {
				raw, err := b.keys.IssueTier1(token.Tier1{Subject: "u1", EventID: "E1", Position: 1, IssuedAt: t0, ExpiresAt: exp})
				if err != nil {
					t.Fatal(err)
				}
				return http.Header{"X-Queue-Entry-Token": {raw}}
			},
			wantCode: 403, wantErr: gate.CodeInvalid, wantTo: "/vwr/queue.html?event=E1"},
		{name: "bypass with the secret", cfg: gate.Config{BypassSecret: "edge-secret"}, path: "/api/seats/E1", method: "GET",
			header:   func(*testBundle) http.Header { return http.Header{gate.BypassHeader: {"edge-secret"}} },
			wantCode: 204},
		{name: "bypass with a wrong secret", cfg: gate.Config{BypassSecret: "edge-secret"}, path: "/api/seats/E1", method: "GET",
			header:   func(*testBundle) http.Header { return http.Header{gate.BypassHeader: {"true"}} },
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "bypass header when no secret configured", path: "/api/seats/E1", method: "GET",
			header:   func(*testBundle) http.Header { return http.Header{gate.BypassHeader: {"true"}} },
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "bad header secret still allows a valid token", cfg: gate.Config{BypassSecret: "edge-secret"}, path: "/api/seats/E1", method: "GET",
			header: func(b *testBundle) http.Header {
				return http.Header{gate.BypassHeader: {"nope"}, "X-Queue-Entry-Token": {b.entry(t, "E1", "u1", exp)}}
			},
			wantCode: 204, wantUID: "u1"},
		{name: "unguarded path passes", path: "/api/events/E1", method: "GET", wantCode: 204},
		{name: "dot-dot into a guarded path", path: "/api/events/../seats/E1", method: "GET",
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "double slash into a guarded path", path: "/api//seats/E1", method: "GET",
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "custom prefix", cfg: gate.Config{Prefixes: []string{"/book/"}}, path: "/book/E1", method: "DELETE",
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		// Paths a lenient server behind the gate reads as guarded ones.
		{name: "backslash into a guarded path", path: "/api\\seats/E1", method: "GET",
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "path parameter in a segment", path: "/api/seats;jsessionid=x/E1", method: "GET",
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "path parameter on the event", path: "/api/seats/E1;x=1/reserve", method: "POST",
			header: func(b *testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {b.entry(t, "E1", "u1", exp)}}
			},
			wantCode: 204, wantUID: "u1"},
		{name: "upper case prefix", path: "/API/Seats/E1", method: "GET",
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "upper case prefix keeps the event's case", path: "/API/SEATS/E2", method: "GET",
			header: func(b *testBundle) http.Header {
				return http.Header{"X-Queue-Entry-Token": {b.entry(t, "e2", "u1", exp)}}
			},
			wantCode: 403, wantErr: gate.CodeInvalid, wantTo: "/vwr/queue.html?event=E2"},
		{name: "custom redirect page", cfg: gate.Config{RedirectTo: "/events/{event}/queue"}, path: "/api/seats/E1", method: "GET",
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/events/E1/queue"},
		// Deny modes: a page load is redirected (auto), fetch and forms get JSON.
		{name: "page load is redirected", path: "/api/seats/E1", method: "GET",
			header: func(*testBundle) http.Header {
				return http.Header{"Accept": {"text/html,application/xhtml+xml,*/*;q=0.8"}}
			},
			wantCode: 302, wantTo: "/vwr/queue.html?event=E1"},
		{name: "navigation without Accept is redirected", path: "/api/seats/E1", method: "HEAD",
			header:   func(*testBundle) http.Header { return http.Header{"Sec-Fetch-Mode": {"navigate"}} },
			wantCode: 302, wantTo: "/vwr/queue.html?event=E1"},
		{name: "form post gets JSON", path: "/api/seats/E1", method: "POST",
			header:   func(*testBundle) http.Header { return http.Header{"Accept": {"text/html"}} },
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "json mode never redirects", cfg: gate.Config{Deny: gate.DenyJSON}, path: "/api/seats/E1", method: "GET",
			header:   func(*testBundle) http.Header { return http.Header{"Accept": {"text/html"}} },
			wantCode: 403, wantErr: gate.CodeRequired, wantTo: "/vwr/queue.html?event=E1"},
		{name: "redirect mode redirects fetch too", cfg: gate.Config{Deny: gate.DenyRedirect}, path: "/api/seats/E1", method: "POST",
			wantCode: 302, wantTo: "/vwr/queue.html?event=E1"},
		{name: "expired page load is redirected", path: "/api/seats/E1", method: "GET",
			header: func(b *testBundle) http.Header {
				return http.Header{"Accept": {"text/html"}, "X-Queue-Entry-Token": {b.entry(t, "E1", "u1", t0.Add(-time.Second))}}
			},
			wantCode: 302, wantTo: "/vwr/queue.html?event=E1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.cfg)
			req := httptest.NewRequest(tc.method, "http://site"+tc.path, nil)
			req.URL.Path = tc.path // keep dot-dot and double slashes unnormalised
			if tc.header != nil {
				for k, vs := range tc.header(b) {
					for _, v := range vs {
						req.Header.Add(k, v)
					}
				}
			}
			if tc.cookie != nil {
				req.AddCookie(tc.cookie(b))
			}
			rec := httptest.NewRecorder()
			b.handler.ServeHTTP(rec, req)
			if rec.Code != tc.wantCode {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tc.wantCode, rec.Body)
			}
			if tc.wantCode == http.StatusFound {
				if *b.hits != 0 {
					t.Fatalf("protected handler ran on a rejected request")
				}
				if got := rec.Header().Get("Location"); got != tc.wantTo {
					t.Fatalf("Location = %q, want %q", got, tc.wantTo)
				}
				if rec.Header().Get("Cache-Control") != "no-store" {
					t.Fatalf("a redirect away from a guarded page must not be cached")
				}
				return
			}
			if tc.wantCode == http.StatusForbidden {
				if *b.hits != 0 {
					t.Fatalf("protected handler ran on a rejected request")
				}
				body := decode(t, rec)
				if body["error"] != "Queue entry token required" || body["code"] != tc.wantErr || body["redirectTo"] != tc.wantTo {
					t.Fatalf("403 body = %v, want code %q redirectTo %q", body, tc.wantErr, tc.wantTo)
				}
				if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Fatalf("Content-Type = %q", ct)
				}
				return
			}
			if *b.hits != 1 {
				t.Fatalf("protected handler ran %d times, want 1", *b.hits)
			}
			if b.reached.UserID != tc.wantUID {
				t.Fatalf("EntryFrom uid = %q, want %q", b.reached.UserID, tc.wantUID)
			}
		})
	}
}

func TestNewRequiresKeys(t *testing.T) {
	t.Parallel()
	if _, err := gate.New(gate.Config{}); err == nil || !strings.Contains(err.Error(), "QUEUE_ENTRY_TOKEN_SECRET") {
		t.Fatalf("New without keys: err = %v", err)
	}
	keys, _ := token.NewKeyRing("k", []byte(secret))
	if _, err := gate.New(gate.Config{Keys: keys, Prefixes: []string{"api/"}}); err == nil {
		t.Fatal("New accepted a prefix without a leading slash")
	}
	if _, err := gate.New(gate.Config{Keys: keys, Deny: "teapot"}); err == nil {
		t.Fatal("New accepted an unknown deny mode")
	}
	for _, to := range []string{"javascript:alert(1)", "//evil.example/", "/\\evil.example/", "queue"} {
		if _, err := gate.New(gate.Config{Keys: keys, RedirectTo: to}); err == nil {
			t.Errorf("New accepted RedirectTo %q, which is neither a path on the site nor an http(s) URL", to)
		}
	}
	err := gate.Settings{Prefixes: []string{"x"}, UserHeader: "Cookie", Deny: "x", RedirectTo: "queue"}.Validate()
	for _, v := range []string{"QUEUE_GATE_PREFIXES", "QUEUE_GATE_USER_HEADER", "QUEUE_GATE_DENY", "QUEUE_GATE_REDIRECT_TO"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("Settings.Validate does not name %s: %v", v, err)
		}
	}
}

// TestOriginVerify: with OriginVerify set, a request that did not come
// through the front door (no header, a wrong one, one of another length)
// is refused on every path, even with a valid entry token; the header
// never reaches the site.
func TestOriginVerify(t *testing.T) {
	t.Parallel()
	const ov = "origin-verify-0123456789abcdef"
	b := setup(t, gate.Config{OriginVerify: ov})
	var sawHeader bool
	site := b.handler
	g, err := gate.New(gate.Config{Keys: b.keys, OriginVerify: ov, Clock: clock.NewManual(t0)})
	if err != nil {
		t.Fatal(err)
	}
	peek := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawHeader = r.Header.Get(gate.OriginVerifyHeader) != ""
		w.WriteHeader(http.StatusNoContent)
	}))
	tok := b.entry(t, "E1", "u1", t0.Add(time.Minute))
	for _, tc := range []struct {
		name, path, header string
		withToken          bool
		want               int
	}{
		{"no header, unguarded page", "/", "", false, http.StatusForbidden},
		{"no header, with a valid token", "/api/seats/E1", "", true, http.StatusForbidden},
		{"wrong header", "/", "origin-verify-0123456789abcdeX", false, http.StatusForbidden},
		{"a prefix of the secret", "/", ov[:10], false, http.StatusForbidden},
		{"the secret with more after it", "/", ov + "x", false, http.StatusForbidden},
		{"the header, unguarded page", "/", ov, false, http.StatusNoContent},
		{"the header and a token", "/api/seats/E1", ov, true, http.StatusNoContent},
		{"the header without a token, guarded", "/api/seats/E1", ov, false, http.StatusForbidden},
	} {
		req := httptest.NewRequest("GET", tc.path, nil)
		if tc.header != "" {
			req.Header.Set(gate.OriginVerifyHeader, tc.header)
		}
		if tc.withToken {
			req.Header.Set(gate.TokenHeader, tok)
		}
		rec := httptest.NewRecorder()
		site.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %d, want %d (%s)", tc.name, rec.Code, tc.want, rec.Body.String())
		}
		if tc.want == http.StatusForbidden && tc.header != ov && decode(t, rec)["code"] != gate.CodeOriginNotVerified {
			t.Errorf("%s: body %s", tc.name, rec.Body.String())
		}
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set(gate.OriginVerifyHeader, ov)
	peek.ServeHTTP(httptest.NewRecorder(), req)
	if sawHeader {
		t.Error("the origin-verify header reached the site")
	}
	if err := (gate.Settings{OriginVerify: "short"}).Validate(); err == nil || !strings.Contains(err.Error(), "QUEUE_GATE_ORIGIN_VERIFY") {
		t.Errorf("a short QUEUE_GATE_ORIGIN_VERIFY: %v", err)
	}
}
