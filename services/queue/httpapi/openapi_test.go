package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/openapitest"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/httpapi"
)

func loadContract(t *testing.T) *openapitest.Contract {
	t.Helper()
	return openapitest.Load(t, filepath.Join(testenv.RepoRoot(t), "docs", "openapi.yaml"))
}

// TestOpenAPIDocumentMatchesRoutes: docs/openapi.yaml is a valid OpenAPI
// document (openapitest.Load) whose operations are exactly the routes the
// API registers with admin routes and /metrics on.
func TestOpenAPIDocumentMatchesRoutes(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	api := httpapi.New(nil, httpapi.Config{AdminToken: adminToken, Metrics: httpapi.NewMetrics()})
	served := api.Routes()
	slices.Sort(served)
	if !slices.Equal(c.Operations(), served) {
		t.Fatalf("docs/openapi.yaml and the API disagree:\n spec: %v\n  API: %v", c.Operations(), served)
	}
}

// target is the bundle an exchange runs on.
type target int

const (
	live      target = iota // admin on, header identity on, threshold 1
	noAdmin                 // QUEUE_ADMIN_TOKEN unset
	deadRedis               // Redis unreachable
)

// exchange is one request of TestOpenAPIContract and what must come back.
type exchange struct {
	name   string
	on     target
	method string
	path   string // "{ev}" becomes the case's own event id
	hdr    func(t *testing.T, b *testBundle, ev string) http.Header
	body   string
	// before arranges the event's state first (through the API, validated too).
	before func(t *testing.T, s *contractSession, ev string)
	status int
	code   string // the error code; "" for a success
	// specRejects: docs/openapi.yaml itself refuses the request
	// (openapi3filter.ValidateRequest fails), so both agree it is wrong.
	specRejects bool
	// unrouted: no operation has this method and path (405, unknown path).
	unrouted bool
	want     func(t *testing.T, r reply) // further checks of a success
}

// contractSession sends requests to one bundle and validates every answer.
type contractSession struct {
	c *openapitest.Contract
	b *testBundle
}

// send asks the bundle's server and validates the answer against the
// document; hdr replaces the default Content-Type when it sets one.
func (s *contractSession) send(t *testing.T, method, path string, hdr http.Header, body string) (reply, *http.Request) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	out, err := http.NewRequest(method, s.b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out.Header = req.Header.Clone()
	resp, err := http.DefaultClient.Do(out)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	s.c.ValidateResponse(t, req, []byte(body), resp.StatusCode, resp.Header, raw)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
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
	return r, req
}

func asUser(uid string) func(*testing.T, *testBundle, string) http.Header {
	return func(*testing.T, *testBundle, string) http.Header { return userHdr(uid) }
}

func withPass(uid string, pos int64) func(*testing.T, *testBundle, string) http.Header {
	return func(t *testing.T, b *testBundle, ev string) http.Header { return bearer(b.pass(t, ev, uid, pos)) }
}

// admittedThenLeft checks uid in with a pass (a direct entry), keeps the
// entry token it got, leaves, and returns the pass (unless entryOnly) and
// the token's cookie: a leaver coming back.
func admittedThenLeft(uid string, pos int64, leave, entryOnly bool) func(*testing.T, *testBundle, string) http.Header {
	return func(t *testing.T, b *testBundle, ev string) http.Header {
		t.Helper()
		pass := bearer(b.pass(t, ev, uid, pos))
		r := b.do(t, "POST", "/api/queue/check/"+ev, pass, nil)
		if r.status != 200 || r.cookie == nil {
			t.Fatalf("arranging: check %s = %v", uid, r)
		}
		if leave {
			if l := b.do(t, "POST", "/api/queue/leave/"+ev, pass, nil); l.status != 200 {
				t.Fatalf("arranging: leave %s = %v", uid, l)
			}
		}
		h := http.Header{"Cookie": {httpapi.EntryCookie + "=" + r.cookie.Value}}
		if !entryOnly {
			h.Set("Authorization", pass.Get("Authorization"))
		}
		return h
	}
}

func withHdr(h http.Header) func(*testing.T, *testBundle, string) http.Header {
	return func(*testing.T, *testBundle, string) http.Header { return h }
}

// checkIn puts uid in the event first (active when the line is empty).
func checkIn(uid string) func(*testing.T, *contractSession, string) {
	return func(t *testing.T, s *contractSession, ev string) {
		t.Helper()
		if r, _ := s.send(t, "POST", "/api/queue/check/"+ev, userHdr(uid), ""); r.status != 200 {
			t.Fatalf("arranging: check %s = %v", uid, r)
		}
	}
}

func then(steps ...func(*testing.T, *contractSession, string)) func(*testing.T, *contractSession, string) {
	return func(t *testing.T, s *contractSession, ev string) {
		for _, step := range steps {
			step(t, s, ev)
		}
	}
}

func wantStatus(status string, cookie bool) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		if r.str("status") != status || (r.cookie != nil) != cookie {
			t.Fatalf("want status %q with entry cookie %v, got %v (Set-Cookie %q)", status, cookie, r, r.header.Get("Set-Cookie"))
		}
	}
}

func wantDone(code string) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		if r.str("status") != "done" || r.str("code") != code || r.cookie != nil {
			t.Fatalf("want done (%s) without an entry cookie, got %v", code, r)
		}
	}
}

func wantRemoved(removed bool) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		if r.flag("removed") != removed {
			t.Fatalf("removed = %v, want %v: %v", r.flag("removed"), removed, r)
		}
	}
}

// TestOpenAPIContract drives the real handlers, on a real redis-server,
// through every route and validates each request and each answer (status,
// declared headers, body) against docs/openapi.yaml; in the end every
// answer the document promises must have been produced.
func TestOpenAPIContract(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String() // nobody listens here once closed
	l.Close()
	sessions := map[target]*contractSession{
		live:    {c, setup(t, options{threshold: 1, userHeader: "X-User-Id", adminToken: adminToken})},
		noAdmin: {c, setup(t, options{userHeader: "X-User-Id"})},
		// One dial attempt: the refused connection is the point, not go-redis's backoff.
		deadRedis: {c, setup(t, options{redisAddr: dead, dialRetries: 1, userHeader: "X-User-Id", adminToken: adminToken})},
	}

	admin := withHdr(bearer(adminToken))
	big := strings.Repeat("x", jsonhttp.MaxBodyBytes+1)
	badUser := strings.Repeat("u", 257)
	cookiePass := func(t *testing.T, b *testBundle, ev string) http.Header {
		return http.Header{"Cookie": {httpapi.Tier1Cookie + "=" + b.pass(t, ev, "c1", 3)}}
	}
	admitted := func(t *testing.T, s *contractSession, ev string) {
		t.Helper()
		w := queue.NewWorker(s.b.svc, queue.WorkerConfig{}, nil)
		if _, err := w.AdmitOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	cases := []exchange{
		// 200s
		{name: "check admits", method: "POST", path: "/api/queue/check/{ev}", hdr: withPass("p1", 7), status: 200, want: wantStatus("active", true)},
		{name: "check queues", method: "POST", path: "/api/queue/check/{ev}", hdr: asUser("u2"), before: checkIn("u1"), status: 200, want: wantStatus("queued", false)},
		{name: "check with the pass cookie", method: "POST", path: "/api/queue/check/{ev}", hdr: cookiePass, status: 200, want: wantStatus("active", true)},
		{name: "status active", method: "GET", path: "/api/queue/status/{ev}", hdr: asUser("u1"), before: checkIn("u1"), status: 200, want: wantStatus("active", true)},
		{name: "status queued", method: "GET", path: "/api/queue/status/{ev}", hdr: asUser("u2"), before: then(checkIn("u1"), checkIn("u2")), status: 200, want: wantStatus("queued", false)},
		{name: "status stranger", method: "GET", path: "/api/queue/status/{ev}", hdr: asUser("u9"), status: 200, want: wantStatus("not_in_queue", false)},
		{name: "heartbeat queued", method: "POST", path: "/api/queue/heartbeat/{ev}", hdr: asUser("u2"), before: then(checkIn("u1"), checkIn("u2")), status: 200, want: wantStatus("queued", false)},
		{name: "heartbeat stranger", method: "POST", path: "/api/queue/heartbeat/{ev}", hdr: asUser("u9"), status: 200, want: wantStatus("not_in_queue", false)},
		{name: "check a served pass", method: "POST", path: "/api/queue/check/{ev}", hdr: admittedThenLeft("p4", 4, true, false), status: 200, want: wantDone("left")},
		{name: "status of a served pass", method: "GET", path: "/api/queue/status/{ev}", hdr: func(t *testing.T, b *testBundle, ev string) http.Header {
			h := admittedThenLeft("p5", 5, true, false)(t, b, ev)
			h.Del("Cookie") // the page that left has no entry cookie any more
			return h
		}, status: 200, want: wantDone("left")},
		{name: "heartbeat with the entry cookie alone", method: "POST", path: "/api/queue/heartbeat/{ev}", hdr: admittedThenLeft("p6", 6, false, true), status: 200, want: wantStatus("active", true)},
		{name: "leave active", method: "POST", path: "/api/queue/leave/{ev}", hdr: asUser("u1"), before: checkIn("u1"), status: 200, want: wantRemoved(true)},
		{name: "leave with the entry cookie alone", method: "POST", path: "/api/queue/leave/{ev}", hdr: admittedThenLeft("p9", 9, false, true), status: 200, want: wantRemoved(true)},
		{name: "leave stranger", method: "POST", path: "/api/queue/leave/{ev}", hdr: asUser("u9"), status: 200, want: wantRemoved(false)},
		{name: "set threshold", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":5}`, status: 200},
		{name: "stats", method: "GET", path: "/api/queue/admin/stats/{ev}", hdr: admin, before: then(checkIn("u1"), checkIn("u2")), status: 200},
		{name: "ranking", method: "GET", path: "/api/queue/admin/ranking?period=weekly&limit=5", hdr: admin, before: then(checkIn("u1"), admitted), status: 200, want: func(t *testing.T, r reply) {
			if list, _ := r.body["ranking"].([]any); len(list) == 0 {
				t.Fatalf("ranking after an admission is empty: %v", r)
			}
		}},
		{name: "ranking defaults", method: "GET", path: "/api/queue/admin/ranking", hdr: admin, status: 200},
		{name: "events", method: "GET", path: "/api/queue/admin/events?limit=500", hdr: admin, before: then(checkIn("u1"), checkIn("u2")), status: 200, want: func(t *testing.T, r reply) {
			list, _ := r.body["events"].([]any)
			for _, e := range list {
				if m, _ := e.(map[string]any); m["queueSize"] == float64(1) && m["currentUsers"] == float64(1) {
					return
				}
			}
			t.Fatalf("events lacks the event with one in line and one active: %v", r.body)
		}},
		{name: "events limited", method: "GET", path: "/api/queue/admin/events?limit=1", hdr: admin, before: checkIn("u1"), status: 200, want: func(t *testing.T, r reply) {
			if list, _ := r.body["events"].([]any); len(list) != 1 {
				t.Fatalf("events?limit=1 listed %d", len(list))
			}
		}},
		{name: "healthz", method: "GET", path: "/healthz", status: 200},
		{name: "livez", method: "GET", path: "/livez", status: 200},
		{name: "livez POST", method: "POST", path: "/livez", status: 405, code: "method_not_allowed", unrouted: true},
		{name: "metrics", method: "GET", path: "/metrics", status: 200},

		// 400s
		{name: "check bad event", method: "POST", path: "/api/queue/check/bad.event", hdr: asUser("u1"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "check long event", method: "POST", path: "/api/queue/check/" + strings.Repeat("e", 65), hdr: asUser("u1"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "status bad event", method: "GET", path: "/api/queue/status/b%21d", hdr: asUser("u1"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "heartbeat bad event", method: "POST", path: "/api/queue/heartbeat/b%20d", hdr: asUser("u1"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "leave bad event", method: "POST", path: "/api/queue/leave/b.d", hdr: asUser("u1"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "threshold bad event", method: "PUT", path: "/api/queue/admin/threshold/b.d", hdr: admin, body: `{"threshold":5}`, status: 400, code: "invalid_event_id", specRejects: true},
		{name: "stats bad event", method: "GET", path: "/api/queue/admin/stats/b.d", hdr: admin, status: 400, code: "invalid_event_id", specRejects: true},
		{name: "check bad user", method: "POST", path: "/api/queue/check/{ev}", hdr: asUser(badUser), status: 400, code: "invalid_user_id"},
		{name: "status bad user", method: "GET", path: "/api/queue/status/{ev}", hdr: asUser(badUser), status: 400, code: "invalid_user_id"},
		{name: "heartbeat bad user", method: "POST", path: "/api/queue/heartbeat/{ev}", hdr: asUser(badUser), status: 400, code: "invalid_user_id"},
		{name: "leave bad user", method: "POST", path: "/api/queue/leave/{ev}", hdr: asUser(badUser), status: 400, code: "invalid_user_id"},
		{name: "threshold string", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":"5"}`, status: 400, code: "invalid_body", specRejects: true},
		{name: "threshold missing", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{}`, status: 400, code: "invalid_body", specRejects: true},
		{name: "threshold unknown field", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":5,"evil":1}`, status: 400, code: "invalid_body", specRejects: true},
		{name: "threshold text/plain", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: withHdr(withHeader(bearer(adminToken), "Content-Type", "text/plain")), body: `{"threshold":5}`, status: 400, code: "invalid_body", specRejects: true},
		// JSON Schema cannot see a repeated key; the strict decoder can.
		{name: "threshold duplicate key", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":5,"threshold":6}`, status: 400, code: "invalid_body"},
		// JSON Schema counts 1e3 as the integer 1000; the API wants it written as one.
		{name: "threshold exponent", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":1e3}`, status: 400, code: "invalid_threshold"},
		{name: "threshold zero", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":0}`, status: 400, code: "invalid_threshold", specRejects: true},
		{name: "threshold fraction", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":1.5}`, status: 400, code: "invalid_threshold", specRejects: true},
		{name: "threshold too big", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":1000001}`, status: 400, code: "invalid_threshold", specRejects: true},
		{name: "ranking bad period", method: "GET", path: "/api/queue/admin/ranking?period=yearly", hdr: admin, status: 400, code: "invalid_period", specRejects: true},
		{name: "ranking zero limit", method: "GET", path: "/api/queue/admin/ranking?limit=0", hdr: admin, status: 400, code: "invalid_limit", specRejects: true},
		{name: "ranking huge limit", method: "GET", path: "/api/queue/admin/ranking?limit=101", hdr: admin, status: 400, code: "invalid_limit", specRejects: true},
		{name: "ranking word limit", method: "GET", path: "/api/queue/admin/ranking?limit=ten", hdr: admin, status: 400, code: "invalid_limit", specRejects: true},
		{name: "events zero limit", method: "GET", path: "/api/queue/admin/events?limit=0", hdr: admin, status: 400, code: "invalid_limit", specRejects: true},
		{name: "events huge limit", method: "GET", path: "/api/queue/admin/events?limit=501", hdr: admin, status: 400, code: "invalid_limit", specRejects: true},
		{name: "events with a body", method: "GET", path: "/api/queue/admin/events", hdr: admin, body: `{"limit":5}`, status: 400, code: "invalid_body", specRejects: true},

		// 401s
		{name: "check nobody", method: "POST", path: "/api/queue/check/{ev}", status: 401, code: "unauthenticated", specRejects: true},
		{name: "status nobody", method: "GET", path: "/api/queue/status/{ev}", status: 401, code: "unauthenticated", specRejects: true},
		{name: "heartbeat nobody", method: "POST", path: "/api/queue/heartbeat/{ev}", status: 401, code: "unauthenticated", specRejects: true},
		{name: "leave nobody", method: "POST", path: "/api/queue/leave/{ev}", status: 401, code: "unauthenticated", specRejects: true},
		{name: "check alg none", method: "POST", path: "/api/queue/check/{ev}", hdr: func(t *testing.T, b *testBundle, ev string) http.Header {
			return bearer(algNone(ev, b.clk.Now()))
		}, status: 401, code: "invalid_token"},
		{name: "check pass of another event", method: "POST", path: "/api/queue/check/{ev}", hdr: func(t *testing.T, b *testBundle, ev string) http.Header {
			return bearer(b.pass(t, ev+"x", "p1", 1))
		}, status: 401, code: "invalid_token"},
		{name: "status garbage pass", method: "GET", path: "/api/queue/status/{ev}", hdr: withHdr(bearer("a.b.c")), status: 401, code: "invalid_token"},
		{name: "leave bad pass cookie", method: "POST", path: "/api/queue/leave/{ev}", hdr: withHdr(http.Header{"Cookie": {httpapi.Tier1Cookie + "=nope"}}), status: 401, code: "invalid_token"},
		{name: "threshold no admin token", method: "PUT", path: "/api/queue/admin/threshold/{ev}", body: `{"threshold":5}`, status: 401, code: "unauthorized", specRejects: true},
		{name: "threshold basic scheme", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: withHdr(http.Header{"Authorization": {"Basic " + adminToken}}), body: `{"threshold":5}`, status: 401, code: "unauthorized", specRejects: true},
		{name: "stats wrong admin token", method: "GET", path: "/api/queue/admin/stats/{ev}", hdr: withHdr(bearer(adminToken + "x")), status: 401, code: "unauthorized"},
		{name: "ranking wrong admin token", method: "GET", path: "/api/queue/admin/ranking", hdr: withHdr(bearer("x")), status: 401, code: "unauthorized"},
		{name: "events wrong admin token", method: "GET", path: "/api/queue/admin/events", hdr: withHdr(bearer(adminToken + "x")), status: 401, code: "unauthorized"},
		{name: "events no admin token", method: "GET", path: "/api/queue/admin/events", status: 401, code: "unauthorized", specRejects: true},

		// 410s: a leaver's token renews no more.
		{name: "heartbeat after leaving", method: "POST", path: "/api/queue/heartbeat/{ev}", hdr: admittedThenLeft("p7", 7, true, false), status: 410, code: "left"},
		{name: "status after leaving, token alone", method: "GET", path: "/api/queue/status/{ev}", hdr: admittedThenLeft("p8", 8, true, true), status: 410, code: "left"},

		// 404s
		{name: "unknown path", method: "GET", path: "/api/queue/nope", hdr: asUser("u1"), status: 404, code: "not_found", unrouted: true},
		{name: "root", method: "POST", path: "/", status: 404, code: "not_found", unrouted: true},
		{name: "check without event", method: "POST", path: "/api/queue/check/", hdr: asUser("u1"), status: 404, code: "not_found", unrouted: true},
		{name: "threshold admin off", on: noAdmin, method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":5}`, status: 404, code: "not_found"},
		{name: "stats admin off", on: noAdmin, method: "GET", path: "/api/queue/admin/stats/{ev}", hdr: admin, status: 404, code: "not_found"},
		{name: "events admin off", on: noAdmin, method: "GET", path: "/api/queue/admin/events", hdr: admin, status: 404, code: "not_found"},
		{name: "ranking admin off", on: noAdmin, method: "GET", path: "/api/queue/admin/ranking", status: 404, code: "not_found", specRejects: true},

		// 405s: every path once.
		{name: "check GET", method: "GET", path: "/api/queue/check/{ev}", hdr: asUser("u1"), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "status POST", method: "POST", path: "/api/queue/status/{ev}", hdr: asUser("u1"), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "heartbeat GET", method: "GET", path: "/api/queue/heartbeat/{ev}", hdr: asUser("u1"), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "leave DELETE", method: "DELETE", path: "/api/queue/leave/{ev}", hdr: asUser("u1"), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "threshold DELETE", method: "DELETE", path: "/api/queue/admin/threshold/{ev}", hdr: admin, status: 405, code: "method_not_allowed", unrouted: true},
		{name: "stats POST", method: "POST", path: "/api/queue/admin/stats/{ev}", hdr: admin, status: 405, code: "method_not_allowed", unrouted: true},
		{name: "events POST", method: "POST", path: "/api/queue/admin/events", hdr: admin, status: 405, code: "method_not_allowed", unrouted: true},
		{name: "ranking PATCH", method: "PATCH", path: "/api/queue/admin/ranking", hdr: admin, status: 405, code: "method_not_allowed", unrouted: true},
		{name: "healthz POST", method: "POST", path: "/healthz", status: 405, code: "method_not_allowed", unrouted: true},
		{name: "metrics PUT", method: "PUT", path: "/metrics", status: 405, code: "method_not_allowed", unrouted: true},

		// 413s: every route that reads a body, GET routes included. The
		// document declares no body but threshold's, so it refuses them too.
		{name: "check too large", method: "POST", path: "/api/queue/check/{ev}", hdr: asUser("u1"), body: big, status: 413, code: "body_too_large", specRejects: true},
		{name: "status too large", method: "GET", path: "/api/queue/status/{ev}", hdr: asUser("u1"), body: big, status: 413, code: "body_too_large", specRejects: true},
		{name: "heartbeat too large", method: "POST", path: "/api/queue/heartbeat/{ev}", hdr: asUser("u1"), body: big, status: 413, code: "body_too_large", specRejects: true},
		{name: "leave too large", method: "POST", path: "/api/queue/leave/{ev}", hdr: asUser("u1"), body: big, status: 413, code: "body_too_large", specRejects: true},
		{name: "threshold too large", method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":5,"x":"` + big + `"}`, status: 413, code: "body_too_large", specRejects: true},
		{name: "stats too large", method: "GET", path: "/api/queue/admin/stats/{ev}", hdr: admin, body: big, status: 413, code: "body_too_large", specRejects: true},
		{name: "events too large", method: "GET", path: "/api/queue/admin/events", hdr: admin, body: big, status: 413, code: "body_too_large", specRejects: true},
		{name: "ranking too large", method: "GET", path: "/api/queue/admin/ranking", hdr: admin, body: big, status: 413, code: "body_too_large", specRejects: true},
		{name: "healthz too large", method: "GET", path: "/healthz", body: big, status: 413, code: "body_too_large", specRejects: true},
		{name: "livez too large", method: "GET", path: "/livez", body: big, status: 413, code: "body_too_large", specRejects: true},

		// 503s
		{name: "check Redis down", on: deadRedis, method: "POST", path: "/api/queue/check/{ev}", hdr: withPass("p1", 1), status: 503, code: "unavailable"},
		{name: "status Redis down", on: deadRedis, method: "GET", path: "/api/queue/status/{ev}", hdr: asUser("u1"), status: 503, code: "unavailable"},
		{name: "heartbeat Redis down", on: deadRedis, method: "POST", path: "/api/queue/heartbeat/{ev}", hdr: asUser("u1"), status: 503, code: "unavailable"},
		{name: "leave Redis down", on: deadRedis, method: "POST", path: "/api/queue/leave/{ev}", hdr: asUser("u1"), status: 503, code: "unavailable"},
		{name: "threshold Redis down", on: deadRedis, method: "PUT", path: "/api/queue/admin/threshold/{ev}", hdr: admin, body: `{"threshold":3}`, status: 503, code: "unavailable"},
		{name: "stats Redis down", on: deadRedis, method: "GET", path: "/api/queue/admin/stats/{ev}", hdr: admin, status: 503, code: "unavailable"},
		{name: "events Redis down", on: deadRedis, method: "GET", path: "/api/queue/admin/events", hdr: admin, status: 503, code: "unavailable"},
		{name: "ranking Redis down", on: deadRedis, method: "GET", path: "/api/queue/admin/ranking?period=monthly", hdr: admin, status: 503, code: "unavailable"},
		{name: "healthz Redis down", on: deadRedis, method: "GET", path: "/healthz", status: 503, code: "unavailable"},
		// The load balancer's check stays green through a Redis outage.
		{name: "livez Redis down", on: deadRedis, method: "GET", path: "/livez", status: 200},
	}

	t.Run("exchanges", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				s := sessions[tc.on]
				ev := testenv.UniqueID(t)
				if tc.before != nil {
					tc.before(t, s, ev)
				}
				var hdr http.Header
				if tc.hdr != nil {
					hdr = tc.hdr(t, s.b, ev)
				}
				r, req := s.send(t, tc.method, strings.ReplaceAll(tc.path, "{ev}", ev), hdr, tc.body)
				if tc.code != "" {
					wantError(t, r, tc.status, tc.code)
				} else if r.status != tc.status {
					t.Fatalf("got %v, want %d", r, tc.status)
				}
				if tc.want != nil {
					tc.want(t, r)
				}
				matched, err := c.ValidateRequest(req, []byte(tc.body))
				switch {
				case matched == tc.unrouted:
					t.Errorf("the document has an operation for this request: %v, want %v", matched, !tc.unrouted)
				case matched && tc.specRejects && err == nil:
					t.Errorf("docs/openapi.yaml accepts the request the API refused with %s", tc.code)
				case matched && !tc.specRejects && err != nil:
					t.Errorf("docs/openapi.yaml refuses the request: %v", err)
				}
			})
		}
	})

	if missing := c.Unanswered(); len(missing) > 0 {
		t.Errorf("docs/openapi.yaml promises answers no exchange produced:\n  %s", strings.Join(missing, "\n  "))
	}
}
