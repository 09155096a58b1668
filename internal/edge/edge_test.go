package edge

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/token"
)

var now = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func ring(t *testing.T, kid, secret string) *token.KeyRing {
	t.Helper()
	r, err := token.NewKeyRing(kid, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func pass(t *testing.T, r *token.KeyRing, event string, exp time.Time) string {
	t.Helper()
	s, err := r.IssueTier1(token.Tier1{Subject: "req1", EventID: event, Position: 7, IssuedAt: now.Add(-time.Minute), ExpiresAt: exp})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDecide(t *testing.T) {
	t.Parallel()
	keys := ring(t, "k1", strings.Repeat("s", 40))
	other := ring(t, "k1", strings.Repeat("x", 40))
	valid := pass(t, keys, "demo", now.Add(10*time.Minute))
	entry, err := keys.IssueEntry(token.Entry{EventID: "demo", UserID: "u1", IssuedAt: now, ExpiresAt: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(valid, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"k1"}`)) + "." + parts[1] + "."
	tampered := parts[0] + "." + parts[1] + "x." + parts[2]

	redirect := "/vwr/?event=demo&return=" + url.QueryEscape("/events/demo")
	tests := []struct {
		name, path, query, cookie string
		want                      Action
		location                  string
	}{
		{"unprotected path", "/api/queue/check/demo", "", "", Pass, ""},
		{"events root is not an event", "/eventsx/demo", "", "", Pass, ""},
		{"no pass", "/events/demo", "", "", Redirect, redirect},
		{"valid pass", "/events/demo", "", valid, Pass, ""},
		{"valid pass below event", "/events/demo/queue", "", valid, Pass, ""},
		{"pass for another event", "/events/other", "", valid, Redirect, "/vwr/?event=other&return=" + url.QueryEscape("/events/other")},
		{"expired pass", "/events/demo", "", pass(t, keys, "demo", now.Add(-time.Second)), Redirect, redirect},
		{"pass signed with another key", "/events/demo", "", pass(t, other, "demo", now.Add(time.Minute)), Redirect, redirect},
		{"tampered pass", "/events/demo", "", tampered, Redirect, redirect},
		{"alg none", "/events/demo", "", none, Redirect, redirect},
		{"entry token is not a tier 1 pass", "/events/demo", "", entry, Redirect, redirect},
		{"query kept in return", "/events/demo/queue", "lang=ko", "", Redirect, "/vwr/?event=demo&return=" + url.QueryEscape("/events/demo/queue?lang=ko")},
		{"malformed event", "/events/bad.id", "", "", NotFound, ""},
		{"empty event", "/events/", "", "", NotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := Decide(keys, tc.path, tc.query, tc.cookie, now)
			if d.Action != tc.want {
				t.Fatalf("action = %v, want %v", d.Action, tc.want)
			}
			if d.Location != tc.location {
				t.Fatalf("location = %q, want %q", d.Location, tc.location)
			}
		})
	}
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	keys := ring(t, "", strings.Repeat("m", 40))
	h := Middleware(keys, clock.NewManual(now), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("origin"))
	}))
	valid := pass(t, keys, "demo", now.Add(time.Minute))

	tests := []struct {
		name, path, cookie string
		code               int
		body, location     string
	}{
		{"redirects without pass", "/events/demo?x=1", "", http.StatusFound, "", "/vwr/?event=demo&return=" + url.QueryEscape("/events/demo?x=1")},
		{"passes with pass", "/events/demo", valid, http.StatusOK, "origin", ""},
		{"unprotected", "/healthz", "", http.StatusOK, "origin", ""},
		{"bad event is 404 json", "/events/a.b", "", http.StatusNotFound, `"code":"invalid_event_id"`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: CookieName, Value: tc.cookie})
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("code = %d, want %d", rec.Code, tc.code)
			}
			if got := rec.Header().Get("Location"); got != tc.location {
				t.Fatalf("Location = %q, want %q", got, tc.location)
			}
			if !strings.Contains(rec.Body.String(), tc.body) {
				t.Fatalf("body %q does not contain %q", rec.Body.String(), tc.body)
			}
			if tc.code == http.StatusFound && rec.Header().Get("Cache-Control") != "no-store" {
				t.Fatal("redirect must not be cacheable")
			}
		})
	}
}
