package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/httpapi"
)

func TestCheckAdmitsAndSetsEntryCookie(t *testing.T) {
	t.Parallel()
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("secure=%v", secure), func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{cookieSecure: secure})
			ev := testenv.UniqueID(t)
			r := b.do(t, "POST", "/api/queue/check/"+ev, bearer(b.pass(t, ev, "alice", 7)), nil)
			if r.status != 200 || r.str("status") != "active" || r.flag("queued") || r.str("eventId") != ev ||
				r.num("currentUsers") != 1 || r.num("threshold") != queue.DefaultThreshold || r.num("nextPoll") != 3 {
				t.Fatalf("check = %v", r)
			}
			for _, k := range []string{"position", "peopleAhead", "peopleBehind", "queueSize", "estimatedWait"} {
				if !r.has(k) {
					t.Fatalf("field %q missing: %v", k, r)
				}
			}
			e, err := b.entry.VerifyEntry(r.str("entryToken"), ev, b.clk.Now())
			if err != nil || e.UserID != "alice" {
				t.Fatalf("entryToken does not verify for alice: %v %+v", err, e)
			}
			exp, err := time.Parse(time.RFC3339, r.str("expiresAt"))
			if err != nil || !exp.Equal(b.clk.Now().Add(activeTTL).Truncate(time.Second)) {
				t.Fatalf("expiresAt = %q, want now+%s", r.str("expiresAt"), activeTTL)
			}
			c := r.cookie
			if c == nil {
				t.Fatalf("no %s cookie: %v", httpapi.EntryCookie, r.header)
			}
			if c.Value != r.str("entryToken") || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode ||
				c.Path != "/" || c.MaxAge != int(queue.DefaultEntryTokenTTL/time.Second) || c.Secure != secure {
				t.Fatalf("cookie = %+v (raw %q)", c, r.header.Get("Set-Cookie"))
			}

			// Polling renews the token (and its cookie) but never extends the
			// slot; near the slot's end the cookie dies with it.
			b.clk.Advance(50 * time.Second)
			for _, path := range []string{"POST /api/queue/check/", "GET /api/queue/status/", "POST /api/queue/heartbeat/"} {
				method, p, _ := strings.Cut(path, " ")
				r2 := b.do(t, method, p+ev, bearer(b.pass(t, ev, "alice", 7)), nil)
				if r2.status != 200 || r2.str("status") != "active" || r2.str("expiresAt") != r.str("expiresAt") {
					t.Fatalf("%s after 50s = %v, want same expiresAt %s", path, r2, r.str("expiresAt"))
				}
				if r2.cookie == nil || r2.cookie.MaxAge != int(queue.DefaultEntryTokenTTL/time.Second) {
					t.Fatalf("%s cookie = %+v, want Max-Age %d (renewed)", path, r2.cookie, int(queue.DefaultEntryTokenTTL/time.Second))
				}
			}
			// The page heartbeats well within the idle limit up to there.
			var r3 reply
			for left := activeTTL - 50*time.Second; left > 10*time.Second; {
				step := min(left-10*time.Second, 50*time.Second)
				b.clk.Advance(step)
				left -= step
				r3 = b.do(t, "POST", "/api/queue/heartbeat/"+ev, bearer(b.pass(t, ev, "alice", 7)), nil)
			}
			if r3.cookie == nil || r3.cookie.MaxAge != 10 || r3.str("expiresAt") != r.str("expiresAt") {
				t.Fatalf("10 s before the slot ends: %v, cookie %+v; want Max-Age 10", r3, r3.cookie)
			}
		})
	}
}

func TestCheckQueuesByTier1Position(t *testing.T) {
	t.Parallel()
	b := setup(t, options{threshold: 1, userHeader: "X-User-Id"})
	ev := testenv.UniqueID(t)
	if r := b.do(t, "POST", "/api/queue/check/"+ev, bearer(b.pass(t, ev, "first", 100)), nil); r.str("status") != "active" {
		t.Fatalf("first = %v", r)
	}
	if r := b.do(t, "POST", "/api/queue/check/"+ev, bearer(b.pass(t, ev, "late", 50)), nil); r.num("position") != 1 {
		t.Fatalf("late = %v", r)
	}
	// A header identity may not pick its own position (body, query): it
	// queues by arrival time, behind every Tier 1 position.
	r := b.do(t, "POST", "/api/queue/check/"+ev+"?position=1&vwrPosition=1", userHdr("cheat"),
		strings.NewReader(`{"vwrPosition":1,"position":1}`))
	if r.status != 200 || r.num("position") != 2 {
		t.Fatalf("cheat = %v, want position 2", r)
	}
	r = b.do(t, "POST", "/api/queue/check/"+ev, bearer(b.pass(t, ev, "early", 10)), nil)
	if r.status != 200 || !r.flag("queued") || r.str("status") != "queued" || r.num("position") != 1 ||
		r.num("peopleAhead") != 0 || r.num("peopleBehind") != 2 || r.num("queueSize") != 3 ||
		r.num("currentUsers") != 1 || r.num("threshold") != 1 || r.num("nextPoll") != 1 || r.num("estimatedWait") != 5 {
		t.Fatalf("early = %v", r)
	}
	if r.has("entryToken") || r.cookie != nil {
		t.Fatalf("queued answer carries an entry token: %v", r)
	}
	r = b.do(t, "GET", "/api/queue/status/"+ev, bearer(b.pass(t, ev, "late", 50)), nil)
	if r.status != 200 || r.num("position") != 2 || r.num("peopleAhead") != 1 || r.num("peopleBehind") != 1 {
		t.Fatalf("status late = %v", r)
	}
	r = b.do(t, "POST", "/api/queue/heartbeat/"+ev, userHdr("cheat"), nil)
	if r.status != 200 || r.str("status") != "queued" || r.num("position") != 3 {
		t.Fatalf("heartbeat cheat = %v", r)
	}
}

func TestStatusAndHeartbeatOfStranger(t *testing.T) {
	t.Parallel()
	b := setup(t, options{userHeader: "X-User-Id"})
	ev := testenv.UniqueID(t)
	for _, c := range []struct{ method, path string }{{"GET", "/api/queue/status/"}, {"POST", "/api/queue/heartbeat/"}} {
		r := b.do(t, c.method, c.path+ev, userHdr("nobody"), nil)
		if r.status != 200 || r.str("status") != "not_in_queue" || r.flag("queued") || r.str("eventId") != ev {
			t.Fatalf("%s %s = %v", c.method, c.path, r)
		}
	}
	b.mustBeUntouched(t) // status and heartbeat never join anyone
}

func TestLeaveFreesTheSlot(t *testing.T) {
	t.Parallel()
	b := setup(t, options{threshold: 1, userHeader: "X-User-Id"})
	ev := testenv.UniqueID(t)
	b.do(t, "POST", "/api/queue/check/"+ev, userHdr("a"), nil)
	if r := b.do(t, "POST", "/api/queue/check/"+ev, userHdr("b"), nil); r.str("status") != "queued" {
		t.Fatalf("b = %v", r)
	}
	r := b.do(t, "POST", "/api/queue/leave/"+ev, userHdr("a"), nil)
	if r.status != 200 || !r.flag("removed") || r.str("eventId") != ev {
		t.Fatalf("leave = %v", r)
	}
	if r.cookie == nil || r.cookie.MaxAge >= 0 || r.cookie.Value != "" {
		t.Fatalf("leave did not clear the entry cookie: %+v", r.cookie)
	}
	if r := b.do(t, "POST", "/api/queue/leave/"+ev, userHdr("a"), nil); r.status != 200 || r.flag("removed") {
		t.Fatalf("second leave = %v", r)
	}
	// b leaves the line too; a newcomer then finds it empty and a free slot.
	b.do(t, "POST", "/api/queue/leave/"+ev, userHdr("b"), nil)
	if r := b.do(t, "POST", "/api/queue/check/"+ev, userHdr("c"), nil); r.str("status") != "active" {
		t.Fatalf("c after both left = %v", r)
	}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	other, _ := token.ParseKeyRing("t1:other-secret-0123456789abcdef-012345")
	now := time.Now().UTC().Truncate(time.Millisecond)
	tests := []struct {
		name       string
		userHeader string
		hdr        func(b *testBundle, ev string) http.Header
		wantStatus int
		wantCode   string
		wantUser   string
	}{
		{name: "bearer pass", hdr: func(b *testBundle, ev string) http.Header { return bearer(b.pass(t, ev, "p1", 3)) }, wantStatus: 200},
		{name: "cookie pass", hdr: func(b *testBundle, ev string) http.Header {
			return http.Header{"Cookie": {httpapi.Tier1Cookie + "=" + b.pass(t, ev, "p1", 3)}}
		}, wantStatus: 200},
		{name: "configured header", userHeader: "X-User-Id", hdr: func(_ *testBundle, _ string) http.Header { return userHdr("h1") }, wantStatus: 200},
		{name: "header ignored when not configured", hdr: func(_ *testBundle, _ string) http.Header { return userHdr("h1") },
			wantStatus: 401, wantCode: "unauthenticated"},
		{name: "nothing", userHeader: "X-User-Id", hdr: func(_ *testBundle, _ string) http.Header { return nil },
			wantStatus: 401, wantCode: "unauthenticated"},
		{name: "invalid header user id", userHeader: "X-User-Id", hdr: func(_ *testBundle, _ string) http.Header { return userHdr("a\tb") },
			wantStatus: 400, wantCode: "invalid_user_id"},
		{name: "bad pass does not fall through to the header", userHeader: "X-User-Id", hdr: func(_ *testBundle, _ string) http.Header {
			h := userHdr("h1")
			h.Set("Authorization", "Bearer not.a.jwt")
			return h
		}, wantStatus: 401, wantCode: "invalid_token"},
		{name: "expired pass", hdr: func(b *testBundle, ev string) http.Header {
			raw, _ := b.tier1.IssueTier1(token.Tier1{Subject: "p1", EventID: ev, Position: 1, IssuedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)})
			return bearer(raw)
		}, wantStatus: 401, wantCode: "invalid_token"},
		{name: "pass for another event", hdr: func(b *testBundle, ev string) http.Header { return bearer(b.pass(t, ev+"x", "p1", 1)) },
			wantStatus: 401, wantCode: "invalid_token"},
		{name: "pass signed with an unknown key", hdr: func(_ *testBundle, ev string) http.Header {
			raw, _ := other.IssueTier1(token.Tier1{Subject: "p1", EventID: ev, Position: 1, IssuedAt: now.Add(-time.Second), ExpiresAt: now.Add(time.Hour)})
			return bearer(raw)
		}, wantStatus: 401, wantCode: "invalid_token"},
		{name: "alg none pass", hdr: func(_ *testBundle, ev string) http.Header { return bearer(algNone(ev, now)) },
			wantStatus: 401, wantCode: "invalid_token"},
		{name: "entry token presented as a pass", hdr: func(b *testBundle, ev string) http.Header {
			raw, _ := b.entry.IssueEntry(token.Entry{EventID: ev, UserID: "p1", IssuedAt: now.Add(-time.Second), ExpiresAt: now.Add(time.Hour)})
			return bearer(raw)
		}, wantStatus: 401, wantCode: "invalid_token"},
	}
	endpoints := []struct{ method, path string }{
		{"POST", "/api/queue/check/"}, {"GET", "/api/queue/status/"}, {"POST", "/api/queue/heartbeat/"}, {"POST", "/api/queue/leave/"},
	}
	for _, tc := range tests {
		for _, ep := range endpoints {
			t.Run(tc.name+"/"+ep.method+strings.ReplaceAll(ep.path, "/", "_"), func(t *testing.T) {
				t.Parallel()
				b := setup(t, options{userHeader: tc.userHeader, clock: clockAt(now)})
				ev := testenv.UniqueID(t)
				r := b.do(t, ep.method, ep.path+ev, tc.hdr(b, ev), nil)
				if tc.wantStatus != 200 {
					wantError(t, r, tc.wantStatus, tc.wantCode)
					if tc.wantStatus == 401 && r.header.Get("WWW-Authenticate") == "" {
						t.Fatalf("401 without WWW-Authenticate")
					}
					b.mustBeUntouched(t)
					return
				}
				if r.status != 200 {
					t.Fatalf("got %v, want 200", r)
				}
			})
		}
	}
}

// TestNoTier1KeysMeansHeaderOnly: a deployment without VWR_TIER1_TOKEN_KEYS
// cannot verify passes, so a bearer token there is the site's own business
// and the trusted header decides.
func TestNoTier1KeysMeansHeaderOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, options{userHeader: "X-User-Id"})
	api := httpapi.New(b.svc, httpapi.Config{UserHeader: "X-User-Id", Clock: b.clk})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	ev := testenv.UniqueID(t)
	h := userHdr("site-user")
	h.Set("Authorization", "Bearer site-session-token")
	if r := doAt(t, srv.URL, "POST", "/api/queue/check/"+ev, h, nil); r.status != 200 || r.str("status") != "active" {
		t.Fatalf("check = %v", r)
	}
	r := doAt(t, srv.URL, "POST", "/api/queue/check/"+ev, bearer(b.pass(t, ev, "p1", 1)), nil)
	wantError(t, r, 401, "unauthenticated")
}

func TestBadInputIsRejectedAndWritesNothing(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", jsonhttp.MaxBodyBytes+1)
	admin := bearer(adminToken)
	tests := []struct {
		name, method, path string
		hdr                http.Header
		body               string
		chunked            bool
		wantStatus         int
		wantCode           string
	}{
		{"check bad event", "POST", "/api/queue/check/bad.event", userHdr("u1"), "", false, 400, "invalid_event_id"},
		{"check long event", "POST", "/api/queue/check/" + strings.Repeat("a", 65), userHdr("u1"), "", false, 400, "invalid_event_id"},
		{"status bad event", "GET", "/api/queue/status/b%21d", userHdr("u1"), "", false, 400, "invalid_event_id"},
		{"heartbeat bad event", "POST", "/api/queue/heartbeat/b%20d", userHdr("u1"), "", false, 400, "invalid_event_id"},
		{"leave bad event", "POST", "/api/queue/leave/b%2Fd", userHdr("u1"), "", false, 400, "invalid_event_id"},
		{"threshold bad event", "PUT", "/api/queue/admin/threshold/b.d", admin, `{"threshold":5}`, false, 400, "invalid_event_id"},
		{"stats bad event", "GET", "/api/queue/admin/stats/b.d", admin, "", false, 400, "invalid_event_id"},
		{"check body too large", "POST", "/api/queue/check/EV", userHdr("u1"), big, false, 413, "body_too_large"},
		{"check chunked body too large", "POST", "/api/queue/check/EV", userHdr("u1"), big, true, 413, "body_too_large"},
		{"threshold body too large", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":5,"x":"` + big + `"}`, false, 413, "body_too_large"},
		{"threshold zero", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":0}`, false, 400, "invalid_threshold"},
		{"threshold negative", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":-3}`, false, 400, "invalid_threshold"},
		{"threshold too big", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":1000001}`, false, 400, "invalid_threshold"},
		{"threshold fraction", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":1.5}`, false, 400, "invalid_threshold"},
		{"threshold string", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":"5"}`, false, 400, "invalid_body"},
		{"threshold null", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":null}`, false, 400, "invalid_body"},
		{"threshold exponent", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":1e3}`, false, 400, "invalid_threshold"},
		{"threshold missing", "PUT", "/api/queue/admin/threshold/EV", admin, `{}`, false, 400, "invalid_body"},
		{"threshold not json", "PUT", "/api/queue/admin/threshold/EV", admin, `threshold=5`, false, 400, "invalid_body"},
		{"threshold unknown field", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":5,"evil":1}`, false, 400, "invalid_body"},
		{"threshold trailing data", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":5} trailing`, false, 400, "invalid_body"},
		{"threshold two objects", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":5}{"threshold":6}`, false, 400, "invalid_body"},
		{"threshold upper case key", "PUT", "/api/queue/admin/threshold/EV", admin, `{"THRESHOLD":5}`, false, 400, "invalid_body"},
		{"threshold duplicate key", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":5,"threshold":6}`, false, 400, "invalid_body"},
		{"threshold case-variant duplicate", "PUT", "/api/queue/admin/threshold/EV", admin, `{"threshold":5,"Threshold":6}`, false, 400, "invalid_body"},
		{"threshold array", "PUT", "/api/queue/admin/threshold/EV", admin, `[{"threshold":5}]`, false, 400, "invalid_body"},
		{"threshold text/plain", "PUT", "/api/queue/admin/threshold/EV", withHeader(admin, "Content-Type", "text/plain"), `{"threshold":5}`, false, 400, "invalid_body"},
		{"threshold form", "PUT", "/api/queue/admin/threshold/EV", withHeader(admin, "Content-Type", "application/x-www-form-urlencoded"), `{"threshold":5}`, false, 400, "invalid_body"},
		{"threshold no admin token", "PUT", "/api/queue/admin/threshold/EV", nil, `{"threshold":5}`, false, 401, "unauthorized"},
		{"threshold wrong admin token", "PUT", "/api/queue/admin/threshold/EV", bearer("nope"), `{"threshold":5}`, false, 401, "unauthorized"},
		{"threshold admin token as basic", "PUT", "/api/queue/admin/threshold/EV", http.Header{"Authorization": {"Basic " + adminToken}}, `{"threshold":5}`, false, 401, "unauthorized"},
		{"stats wrong admin token", "GET", "/api/queue/admin/stats/EV", bearer(adminToken + "x"), "", false, 401, "unauthorized"},
		{"ranking wrong admin token", "GET", "/api/queue/admin/ranking", bearer("x"), "", false, 401, "unauthorized"},
		{"ranking bad period", "GET", "/api/queue/admin/ranking?period=yearly", admin, "", false, 400, "invalid_period"},
		{"ranking bad limit", "GET", "/api/queue/admin/ranking?limit=0", admin, "", false, 400, "invalid_limit"},
		{"ranking huge limit", "GET", "/api/queue/admin/ranking?limit=101", admin, "", false, 400, "invalid_limit"},
		{"unknown route", "GET", "/api/queue/nope", userHdr("u1"), "", false, 404, "not_found"},
		{"unknown root", "POST", "/", nil, "", false, 404, "not_found"},
		{"wrong method", "GET", "/api/queue/check/EV", userHdr("u1"), "", false, 405, "method_not_allowed"},
		{"wrong method admin", "DELETE", "/api/queue/admin/threshold/EV", admin, "", false, 405, "method_not_allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{userHeader: "X-User-Id", adminToken: adminToken})
			path := strings.Replace(tc.path, "/EV", "/"+testenv.UniqueID(t), 1)
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequest(tc.method, b.srv.URL+path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.chunked {
				req.ContentLength = -1 // Transfer-Encoding: chunked, no Content-Length
			}
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, vs := range tc.hdr {
				req.Header[k] = vs
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got map[string]string
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if resp.StatusCode != tc.wantStatus || got["code"] != tc.wantCode || got["error"] == "" {
				t.Fatalf("got %d %v, want %d %s", resp.StatusCode, got, tc.wantStatus, tc.wantCode)
			}
			if tc.wantStatus == 405 && resp.Header.Get("Allow") == "" {
				t.Fatal("405 without Allow")
			}
			b.mustBeUntouched(t)
		})
	}
}

func TestAdminDisabledWithoutToken(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ev := testenv.UniqueID(t)
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/api/queue/admin/threshold/" + ev, `{"threshold":5}`},
		{"GET", "/api/queue/admin/stats/" + ev, ""},
		{"GET", "/api/queue/admin/ranking", ""},
	} {
		r := b.do(t, c.method, c.path, bearer(""), strings.NewReader(c.body))
		wantError(t, r, 404, "not_found")
		r = b.do(t, c.method, c.path, nil, strings.NewReader(c.body))
		wantError(t, r, 404, "not_found")
	}
	b.mustBeUntouched(t)
	for _, route := range b.api.Routes() {
		if strings.Contains(route, "/admin/") {
			t.Fatalf("admin route %q registered without an admin token", route)
		}
	}
}

func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, options{userHeader: "X-User-Id", adminToken: adminToken})
	ev := testenv.UniqueID(t)
	admin := bearer(adminToken)

	r := b.do(t, "PUT", "/api/queue/admin/threshold/"+ev, admin, strings.NewReader(`{"threshold":2}`))
	if r.status != 200 || r.num("threshold") != 2 || r.str("eventId") != ev {
		t.Fatalf("set threshold = %v", r)
	}
	for _, u := range []string{"a", "b", "c", "d"} {
		b.do(t, "POST", "/api/queue/check/"+ev, userHdr(u), nil)
	}
	heard := b.clk.Now()
	b.clk.Advance(5 * time.Second)
	// The oldest heartbeat is what the last stale sweep kept, to its tick;
	// the admission pass that finds the line schedules its sweep.
	sweeper := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	if _, err := sweeper.AdmitOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := sweeper.CleanupOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	age := int64(b.clk.Now().Sub(heard.Truncate(queue.HeartbeatTick)) / time.Second)
	r = b.do(t, "GET", "/api/queue/admin/stats/"+ev, admin, nil)
	if r.status != 200 || r.str("eventId") != ev || r.num("queueSize") != 2 || r.num("currentUsers") != 2 ||
		r.num("threshold") != 2 || r.num("available") != 0 || int64(r.num("oldestHeartbeatAgeSeconds")) != age ||
		!r.has("admittedLastMinute") || !r.has("estimatedClearSeconds") {
		t.Fatalf("stats = %v", r)
	}

	// Direct entries reach the rankings on the worker's next pass.
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	if _, err := w.AdmitOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, period := range []string{"", "daily", "weekly", "monthly"} {
		r = b.do(t, "GET", "/api/queue/admin/ranking?limit=5&period="+period, admin, nil)
		want := period
		if want == "" {
			want = "daily"
		}
		list, _ := r.body["ranking"].([]any)
		if r.status != 200 || r.str("period") != want || len(list) != 1 {
			t.Fatalf("ranking %q = %v", period, r)
		}
		first, _ := list[0].(map[string]any)
		if first["eventId"] != ev || first["admissions"] != float64(2) {
			t.Fatalf("ranking %q entry = %v, want %s with 2", period, first, ev)
		}
	}
}

func TestHealthzMetricsAndLogs(t *testing.T) {
	t.Parallel()
	b := setup(t, options{userHeader: "X-User-Id", logLevel: slog.LevelDebug})
	ev := testenv.UniqueID(t)
	if r := b.do(t, "GET", "/healthz", nil, nil); r.status != 200 || r.str("status") != "ok" {
		t.Fatalf("healthz = %v", r)
	}
	b.do(t, "POST", "/api/queue/check/"+ev, userHdr("m1"), nil)
	b.do(t, "POST", "/api/queue/check/bad.id", userHdr("m1"), nil)
	b.do(t, "GET", "/nowhere", nil, nil)

	r := b.do(t, "GET", "/metrics", nil, nil)
	if r.status != 200 {
		t.Fatalf("metrics = %d", r.status)
	}
	for _, want := range []string{
		`vwr_http_requests_total{code="200",route="POST /api/queue/check/{eventId}"} 1`,
		`vwr_http_requests_total{code="400",route="POST /api/queue/check/{eventId}"} 1`,
		`vwr_http_requests_total{code="404",route="not_found"} 1`,
		`vwr_http_requests_total{code="200",route="GET /healthz"} 1`,
		`vwr_queue_admissions_total{event="` + ev + `"} 1`,
		`vwr_queue_size{event="` + ev + `"} 0`,
		`vwr_queue_active_users{event="` + ev + `"} 1`,
		`vwr_queue_script_duration_seconds_count{result="ok",script="check"} 1`,
		`vwr_http_request_duration_seconds_bucket{route="POST /api/queue/check/{eventId}"`,
	} {
		if !strings.Contains(r.raw, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	lines := strings.Split(strings.TrimSpace(b.logs.String()), "\n")
	if len(lines) != 5 { // healthz, check, bad check, 404, metrics
		t.Fatalf("at LOG_LEVEL=debug want one log line per request, got %d:\n%s", len(lines), b.logs.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil {
		t.Fatalf("log line is not JSON: %q", lines[1])
	}
	if rec["event"] != ev || rec["uid"] != "m1" || rec["status"] != float64(200) || rec["ms"] == nil || rec["route"] != "POST /api/queue/check/{eventId}" {
		t.Fatalf("log line = %v", rec)
	}
}

// TestRequestLogLevels: at the default LOG_LEVEL (info) a healthy request
// writes no log line (one INFO line per check would cost more than the
// service at 30,000 checks/s); a 4xx stays at debug too; a request slower
// than LOG_SLOW_MS is logged at info as "slow request".
func TestRequestLogLevels(t *testing.T) {
	t.Parallel()
	quiet := setup(t, options{userHeader: "X-User-Id"})
	ev := testenv.UniqueID(t)
	quiet.do(t, "POST", "/api/queue/check/"+ev, userHdr("q1"), nil)
	quiet.do(t, "POST", "/api/queue/check/bad.id", userHdr("q1"), nil)
	quiet.do(t, "GET", "/healthz", nil, nil)
	if logs := quiet.logs.String(); logs != "" {
		t.Fatalf("healthy and 4xx requests logged at the default level:\n%s", logs)
	}

	// Every request counts as slow when the threshold is a nanosecond.
	slow := setup(t, options{userHeader: "X-User-Id", log: applog.Config{Slow: envconf.Millis(time.Nanosecond)}})
	slow.do(t, "POST", "/api/queue/check/"+ev, userHdr("s1"), nil)
	var rec map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(slow.logs.String())), &rec); err != nil {
		t.Fatalf("want one JSON line, got %q", slow.logs.String())
	}
	if rec["level"] != "INFO" || rec["msg"] != "slow request" || rec["uid"] != "s1" || rec["status"] != float64(200) {
		t.Fatalf("slow request line = %v", rec)
	}
}

func TestRedisDownIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	// A port nobody listens on: every store call fails at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	b := setup(t, options{redisAddr: dead, userHeader: "X-User-Id", adminToken: adminToken})
	ev := testenv.UniqueID(t)
	for _, c := range []struct {
		method, path string
		hdr          http.Header
		body         string
	}{
		{"POST", "/api/queue/check/" + ev, bearer(b.pass(t, ev, "u1", 1)), ""},
		{"GET", "/api/queue/status/" + ev, userHdr("u1"), ""},
		{"POST", "/api/queue/heartbeat/" + ev, userHdr("u1"), ""},
		{"POST", "/api/queue/leave/" + ev, userHdr("u1"), ""},
		{"PUT", "/api/queue/admin/threshold/" + ev, bearer(adminToken), `{"threshold":3}`},
		{"GET", "/api/queue/admin/stats/" + ev, bearer(adminToken), ""},
		{"GET", "/api/queue/admin/ranking?period=weekly", bearer(adminToken), ""},
		{"GET", "/healthz", nil, ""},
	} {
		r := b.do(t, c.method, c.path, c.hdr, strings.NewReader(c.body))
		wantError(t, r, 503, "unavailable")
		if r.header.Get("Retry-After") != fmt.Sprint(int(jsonhttp.RetryAfter/time.Second)) {
			t.Fatalf("%s %s: Retry-After = %q", c.method, c.path, r.header.Get("Retry-After"))
		}
		_, port, _ := net.SplitHostPort(dead)
		for _, leak := range []string{"dial", "refused", "redis", "127.0.0.1", port, "queue:", "tcp"} {
			if strings.Contains(strings.ToLower(r.raw), leak) {
				t.Fatalf("%s %s: 503 body leaks %q: %s", c.method, c.path, leak, r.raw)
			}
		}
	}
	// The cause is in the log, not the body.
	if !strings.Contains(b.logs.String(), "refused") {
		t.Fatalf("log lacks the cause:\n%s", b.logs.String())
	}
}

// withHeader returns a copy of h with k set to v.
func withHeader(h http.Header, k, v string) http.Header {
	out := h.Clone()
	out.Set(k, v)
	return out
}
