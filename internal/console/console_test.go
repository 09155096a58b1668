package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
)

const testToken = "console-test-token"

// recorder is an upstream that records what the console sends it and
// answers 200 with the body it was sent: these tests are about the
// console's own routes, not the admin APIs (cmd/vwr's tests run the
// console against vwr local's real ones).
type recorder struct {
	mu    sync.Mutex
	calls []recorded
}

type recorded struct {
	Method, Path, Auth string
	Body               string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.calls = append(rc.calls, recorded{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), string(b)})
	rc.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if len(b) == 0 {
		b = []byte(`{}`)
	}
	_, _ = w.Write(b)
}

func (rc *recorder) last() recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.calls) == 0 {
		return recorded{}
	}
	return rc.calls[len(rc.calls)-1]
}

type bundle struct {
	srv  *Server
	h    http.Handler
	up   *recorder
	base string // the origin the console believes it is at
}

func setup(t *testing.T, mod func(*Config)) *bundle {
	t.Helper()
	rc := &recorder{}
	up := httptest.NewServer(rc)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	cfg := Config{
		Tokens: []string{testToken},
		Upstream: &Upstream{Tier1: u.JoinPath("/vwr-api"), Tier2: u, Authorize: func(_ context.Context, tier int, req *http.Request, _ []byte) error {
			req.Header.Set("Authorization", "Bearer tier"+string(rune('0'+tier)))
			return nil
		}},
		SampleEvery: 50 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{srv: s, h: s.Handler(), up: rc, base: "http://127.0.0.1:8090"}
}

// req builds a request as a browser on loopback would send it from the
// console's own page; opts change it.
func (b *bundle) req(method, path, body string, opts ...func(*http.Request)) *http.Request {
	r := httptest.NewRequest(method, b.base+path, strings.NewReader(body))
	r.RemoteAddr = "127.0.0.1:50000"
	r.Host = "127.0.0.1:8090"
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	if method != http.MethodGet {
		r.Header.Set("Origin", b.base)
	}
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	for _, o := range opts {
		o(r)
	}
	return r
}

func (b *bundle) do(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	b.h.ServeHTTP(w, r)
	return w
}

// signIn opens a session and returns its cookie and CSRF token.
func (b *bundle) signIn(t *testing.T) (*http.Cookie, string) {
	t.Helper()
	w := b.do(b.req("POST", "/vwr/console/api/session", `{"token":"`+testToken+`"}`))
	if w.Code != 200 {
		t.Fatalf("sign-in: %d %s", w.Code, w.Body)
	}
	var body struct{ CSRF string }
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	cs := w.Result().Cookies()
	if len(cs) != 1 || body.CSRF == "" {
		t.Fatalf("sign-in gave cookies %v and csrf %q", cs, body.CSRF)
	}
	return cs[0], body.CSRF
}

func withCookie(c *http.Cookie) func(*http.Request) {
	return func(r *http.Request) { r.AddCookie(c) }
}

func withHeader(k, v string) func(*http.Request) {
	return func(r *http.Request) {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
}

func code(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var e struct{ Code string }
	_ = json.Unmarshal(w.Body.Bytes(), &e)
	return e.Code
}

// TestSessionCookie: signing in sets an HttpOnly, SameSite=Strict cookie
// scoped to the console, and a second sign-in replaces the first session.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	c, csrf := b.signIn(t)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != DefaultPrefix || c.Secure || c.MaxAge <= 0 {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=%s", c, DefaultPrefix)
	}
	w := b.do(b.req("GET", "/vwr/console/api/session", "", withCookie(c)))
	if w.Code != 200 || !strings.Contains(w.Body.String(), csrf) {
		t.Fatalf("session: %d %s", w.Code, w.Body)
	}
	// A cookie sent along a new sign-in is closed: no session fixation.
	w = b.do(b.req("POST", "/vwr/console/api/session", `{"token":"`+testToken+`"}`, withCookie(c)))
	if w.Code != 200 {
		t.Fatal(w.Code)
	}
	if w := b.do(b.req("GET", "/vwr/console/api/session", "", withCookie(c))); w.Code != 401 {
		t.Fatalf("the old session still works after a new sign-in: %d", w.Code)
	}
	// Over https the cookie is Secure too.
	w = b.do(b.req("POST", "/vwr/console/api/session", `{"token":"`+testToken+`"}`, withHeader("Origin", "https://127.0.0.1:8090")))
	if cs := w.Result().Cookies(); w.Code != 200 || len(cs) != 1 || !cs[0].Secure {
		t.Fatalf("sign-in over https: %d %v", w.Code, cs)
	}
}

// TestRefusals: every hostile request the console must refuse, each with
// the code that says why, and nothing sent upstream.
func TestRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	c, csrf := b.signIn(t)
	pause := func(opts ...func(*http.Request)) *http.Request {
		return b.req("POST", "/vwr/console/api/events/demo/pause", "", append([]func(*http.Request){withCookie(c), withHeader(CSRFHeader, csrf)}, opts...)...)
	}
	live := func(opts ...func(*http.Request)) *http.Request {
		return b.req("GET", "/vwr/console/api/live", "", append([]func(*http.Request){withCookie(c)}, opts...)...)
	}
	cases := []struct {
		name   string
		req    *http.Request
		status int
		code   string
	}{
		{"a client on another machine", pause(func(r *http.Request) { r.RemoteAddr = "192.0.2.7:40000" }), 403, "forbidden_client"},
		{"a client on another machine, the page", b.req("GET", "/vwr/console/", "", func(r *http.Request) { r.RemoteAddr = "[2001:db8::1]:40000" }), 403, "forbidden_client"},
		{"an IPv4-mapped remote address", live(func(r *http.Request) { r.RemoteAddr = "[::ffff:192.0.2.7]:40000" }), 403, "forbidden_client"},
		{"DNS rebinding: another name for loopback", live(withHeader("Host", "evil.example:8090"), func(r *http.Request) { r.Host = "evil.example:8090" }), 403, "forbidden_host"},
		{"DNS rebinding, a change", pause(func(r *http.Request) { r.Host = "attacker.test"; r.Header.Set("Origin", "http://attacker.test") }), 403, "forbidden_host"},
		{"a cross-site fetch", pause(withHeader("Sec-Fetch-Site", "cross-site")), 403, "cross_site"},
		{"another port of localhost (same-site)", pause(withHeader("Sec-Fetch-Site", "same-site")), 403, "cross_site"},
		{"a cross-site read", live(withHeader("Sec-Fetch-Site", "cross-site")), 403, "cross_site"},
		{"another origin without Sec-Fetch-Site", pause(withHeader("Sec-Fetch-Site", ""), withHeader("Origin", "http://localhost:3000")), 403, "cross_site"},
		{"an origin of another scheme's port", pause(withHeader("Origin", "http://127.0.0.1:8091")), 403, "cross_site"},
		{"a null origin", pause(withHeader("Origin", "null")), 403, "cross_site"},
		{"a change without Origin", pause(withHeader("Origin", "")), 403, "origin_required"},
		{"a change without the CSRF token", pause(withHeader(CSRFHeader, "")), 403, "csrf"},
		{"a change with a wrong CSRF token", pause(withHeader(CSRFHeader, csrf+"x")), 403, "csrf"},
		{"a change with another session's CSRF token", func() *http.Request {
			_, other := b.signIn(t)
			return pause(withHeader(CSRFHeader, other))
		}(), 403, "csrf"},
		{"no session", b.req("POST", "/vwr/console/api/events/demo/pause", "", withHeader(CSRFHeader, csrf)), 401, "unauthorized"},
		{"a forged session", b.req("GET", "/vwr/console/api/live", "", withCookie(&http.Cookie{Name: SessionCookie, Value: "forged"})), 401, "unauthorized"},
		{"a wrong bearer token beside a good cookie", live(withHeader("Authorization", "Bearer nope")), 401, "unauthorized"},
		{"a basic-auth header", live(withHeader("Authorization", "Basic "+testToken)), 401, "unauthorized"},
		{"a sign-in from another origin (login CSRF)", b.req("POST", "/vwr/console/api/session", `{"token":"`+testToken+`"}`, withHeader("Origin", "http://evil.example")), 403, "cross_site"},
		{"a sign-in without Origin", b.req("POST", "/vwr/console/api/session", `{"token":"`+testToken+`"}`, withHeader("Origin", "")), 403, "origin_required"},
		{"a change by GET", live(func(r *http.Request) { r.URL.Path = "/vwr/console/api/events/demo/pause" }), 405, "method_not_allowed"},
		{"an unknown control", pause(func(r *http.Request) { r.URL.Path = "/vwr/console/api/events/demo/purge" }), 404, "unknown_action"},
		{"a bad event id", pause(func(r *http.Request) { r.URL.Path = "/vwr/console/api/events/a.b/pause" }), 400, "invalid_event_id"},
	}
	before := len(b.up.calls)
	for _, tc := range cases {
		w := b.do(tc.req)
		if w.Code != tc.status || code(t, w) != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, w.Code, w.Body, tc.status, tc.code)
		}
	}
	if n := len(b.up.calls); n != before {
		t.Errorf("refused requests reached the admin APIs: %d calls", n-before)
	}
}

// TestAllowedOthers: loopback in every form, localhost, the networks and
// host names the operator named, a navigation from elsewhere, and a bearer
// token without cookie or CSRF token all get through.
func TestAllowedOthers(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) {
		c.Allow = []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}
		c.Hosts = []string{"Ops.Example"}
	})
	bearer := withHeader("Authorization", "Bearer "+testToken)
	cases := []struct {
		name string
		req  *http.Request
		want int
	}{
		{"IPv6 loopback", b.req("GET", "/vwr/console/api/session", "", bearer, func(r *http.Request) { r.RemoteAddr = "[::1]:5000"; r.Host = "[::1]:8090" }), 200},
		{"localhost", b.req("GET", "/vwr/console/api/session", "", bearer, func(r *http.Request) { r.Host = "localhost:8090" }), 200},
		{"an allowed network and name", b.req("GET", "/vwr/console/api/session", "", bearer, func(r *http.Request) { r.RemoteAddr = "10.1.2.3:5000"; r.Host = "ops.example:8090" }), 200},
		{"a navigation from another site", b.req("GET", "/vwr/console/", "", withHeader("Sec-Fetch-Site", "cross-site"), withHeader("Sec-Fetch-Mode", "navigate")), 200},
		{"a change by bearer token, no cookie, no CSRF, no Origin", b.req("POST", "/vwr/console/api/events/demo/pause", "", bearer, withHeader("Origin", "")), 200},
	}
	for _, tc := range cases {
		if w := b.do(tc.req); w.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, w.Code, w.Body, tc.want)
		}
	}
	if c := b.up.last(); c.Path != "/vwr-api/vwr/admin/pause/demo" || c.Auth != "Bearer tier1" {
		t.Fatalf("the bearer change reached %+v", c)
	}
}

// TestPageHeaders: the page has the waiting pages' CSP and cannot be framed.
func TestPageHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	w := b.do(b.req("GET", "/vwr/console/", ""))
	h := w.Result().Header
	if w.Code != 200 || !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") ||
		!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("page: %d %v", w.Code, h)
	}
	if !strings.Contains(w.Body.String(), `<script type="module" src="console.js">`) {
		t.Fatal("the page is not the console")
	}
	if w := b.do(b.req("POST", "/vwr/console/", "")); w.Code != 405 {
		t.Fatalf("POST to the page: %d", w.Code)
	}
}

// TestSignInLimit: a guessed token gets ten tries a minute.
func TestSignInLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for i := range maxFailedSignIns {
		if w := b.do(b.req("POST", "/vwr/console/api/session", `{"token":"guess"}`)); w.Code != 401 || code(t, w) != "wrong_token" {
			t.Fatalf("guess %d: %d %s", i, w.Code, w.Body)
		}
	}
	w := b.do(b.req("POST", "/vwr/console/api/session", `{"token":"`+testToken+`"}`))
	if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); w.Code != 429 || err != nil || ra < 1 || ra > 60 {
		t.Fatalf("after %d failures even the right token got %d %v", maxFailedSignIns, w.Code, w.Header())
	}
	// The form works as the JSON body does, and redirects to the page.
	b2 := setup(t, nil)
	w = b2.do(b2.req("POST", "/vwr/console/api/session", "token="+testToken, withHeader("Content-Type", "application/x-www-form-urlencoded")))
	if w.Code != 303 || w.Header().Get("Location") != DefaultPrefix || len(w.Result().Cookies()) != 1 {
		t.Fatalf("form sign-in: %d %v", w.Code, w.Header())
	}
}

// TestControlsSendOnlyTheirFields: each control reaches its route with the
// fields it names and nothing else; any other field is refused before
// anything is sent.
func TestControlsSendOnlyTheirFields(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	c, csrf := b.signIn(t)
	send := func(action, body string) *httptest.ResponseRecorder {
		return b.do(b.req("POST", "/vwr/console/api/events/ev1/"+action, body, withCookie(c), withHeader(CSRFHeader, csrf)))
	}
	cases := []struct {
		action, body, method, path, sent, auth string
	}{
		{"pause", "", "POST", "/vwr-api/vwr/admin/pause/ev1", "", "Bearer tier1"},
		{"resume", "{}", "POST", "/vwr-api/vwr/admin/resume/ev1", "", "Bearer tier1"},
		{"batch", `{"batchSize":25}`, "POST", "/vwr-api/vwr/admin/batch/ev1", `{"batchSize":25}`, "Bearer tier1"},
		{"advance", `{"by":7}`, "POST", "/vwr-api/vwr/admin/advance/ev1", `{"by":7}`, "Bearer tier1"},
		{"activate", `{"shards":2,"batchSize":9,"pow":0}`, "POST", "/vwr-api/vwr/admin/activate/ev1", `{"batchSize":9,"pow":0,"shards":2}`, "Bearer tier1"},
		{"schedule", `{"opensAt":"2030-01-02T03:04:05Z","pow":5000}`, "POST", "/vwr-api/vwr/admin/schedule/ev1", `{"opensAt":"2030-01-02T03:04:05Z","pow":5000}`, "Bearer tier1"},
		{"threshold", `{"threshold":40}`, "PUT", "/api/queue/admin/threshold/ev1", `{"threshold":40}`, "Bearer tier2"},
	}
	for _, tc := range cases {
		w := send(tc.action, tc.body)
		var ans actionBody
		_ = json.Unmarshal(w.Body.Bytes(), &ans)
		got := b.up.last()
		if w.Code != 200 || ans.Status != 200 || got.Method != tc.method || got.Path != tc.path || got.Body != tc.sent || got.Auth != tc.auth {
			t.Errorf("%s: %d %s; upstream got %+v", tc.action, w.Code, w.Body, got)
		}
	}
	before := len(b.up.calls)
	for _, tc := range []struct{ action, body string }{
		{"pause", `{"threshold":1}`},
		{"threshold", `{"threshold":5,"batchSize":1}`},
		{"batch", `{"batchSize":5,"shards":64}`},
		{"advance", `{"by":"7"}`},
		{"advance", `{"by":1,"by":2}`},
		{"schedule", `{"opensAt":"tomorrow"}`},
		{"threshold", `{"threshold":5,"evil":1}`},
	} {
		if w := send(tc.action, tc.body); w.Code != 400 || code(t, w) != "invalid_body" {
			t.Errorf("%s %s: %d %s, want 400 invalid_body", tc.action, tc.body, w.Code, w.Body)
		}
	}
	if len(b.up.calls) != before {
		t.Errorf("refused controls reached the admin APIs")
	}
}

// TestUnreachableUpstream: an admin API that does not answer is said in
// fixed words, never the dial error.
func TestUnreachableUpstream(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) {
		dead, _ := url.Parse("http://127.0.0.1:1")
		c.Upstream.Tier1, c.Upstream.Tier2 = dead, dead
	})
	c, csrf := b.signIn(t)
	w := b.do(b.req("POST", "/vwr/console/api/events/ev1/pause", "", withCookie(c), withHeader(CSRFHeader, csrf)))
	if w.Code != 502 || code(t, w) != "upstream_unreachable" || strings.Contains(w.Body.String(), "refused") {
		t.Fatalf("pause with Tier 1 down: %d %s", w.Code, w.Body)
	}
	w = b.do(b.req("GET", "/vwr/console/api/live?event=ev1", "", withCookie(c)))
	var live liveBody
	_ = json.Unmarshal(w.Body.Bytes(), &live)
	if w.Code != 200 || live.Event == nil || live.Event.Errors["tier1"] == nil || live.Event.Errors["tier1"].Code != "unreachable" ||
		strings.Contains(w.Body.String(), "connection refused") || live.ListErrors["tier2"] == nil {
		t.Fatalf("live with both tiers down: %d %s", w.Code, w.Body)
	}
}

// TestOneReadPerIntervalForAllTabs: however many tabs ask, each tier is
// read at most once per SampleEvery for a watched event.
func TestOneReadPerIntervalForAllTabs(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.SampleEvery = 200 * time.Millisecond; c.ListEvery = time.Hour })
	c, _ := b.signIn(t)
	start := time.Now()
	var wg sync.WaitGroup
	for range 5 { // five tabs asking ten times a second for a second
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < time.Second {
				b.do(b.req("GET", "/vwr/console/api/live?event=ev1", "", withCookie(c)))
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	reads := 0
	b.up.mu.Lock()
	for _, c := range b.up.calls {
		if c.Path == "/vwr-api/vwr/admin/status/ev1" {
			reads++
		}
	}
	b.up.mu.Unlock()
	if max := int(elapsed/(200*time.Millisecond)) + 2; reads > max || reads < 2 {
		t.Fatalf("%d Tier 1 reads in %s by five tabs; want at most %d (one per 200 ms, plus the first)", reads, elapsed, max)
	}
}

// TestIdleWatchesMakeRoom: the console watches at most maxWatches events
// at once, but a watch nobody has asked for since watchIdle gives its place
// to the next event, so a long-running console never runs out.
func TestIdleWatchesMakeRoom(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	b := setup(t, func(c *Config) { c.Clock = clk; c.SampleEvery = 20 * time.Millisecond; c.ListEvery = time.Hour })
	c, _ := b.signIn(t)
	watch := func(ev string) *httptest.ResponseRecorder {
		return b.do(b.req("GET", "/vwr/console/api/live?event="+ev, "", withCookie(c)))
	}
	for i := range maxWatches {
		if w := watch(fmt.Sprintf("ev%d", i)); w.Code != 200 {
			t.Fatalf("watch %d: %d %s", i, w.Code, w.Body)
		}
	}
	if w := watch("one-more"); w.Code != 503 || code(t, w) != "too_many_watches" {
		t.Fatalf("a watch beyond %d while all are read: %d %s", maxWatches, w.Code, w.Body)
	}
	// Everyone stops asking: each reader stops once it sees the idle time.
	clk.Advance(watchIdle + time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for running := maxWatches; running > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d readers still run after their watches went idle", running)
		}
		time.Sleep(20 * time.Millisecond)
		running = 0
		b.srv.mu.Lock()
		for _, w := range b.srv.watches {
			w.mu.Lock()
			if w.running {
				running++
			}
			w.mu.Unlock()
		}
		b.srv.mu.Unlock()
	}
	if w := watch("one-more"); w.Code != 200 {
		t.Fatalf("a new watch after the others went idle: %d %s", w.Code, w.Body)
	}
	b.srv.mu.Lock()
	n := len(b.srv.watches)
	_, kept := b.srv.watches["one-more"]
	b.srv.mu.Unlock()
	if n != maxWatches || !kept {
		t.Fatalf("%d watches kept (the new one: %v), want %d", n, kept, maxWatches)
	}
}

func TestStateOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Hour), now.Add(-time.Hour)
	cases := []struct {
		name    string
		t1      *tier1Status
		t2      *tier2Stats
		absent1 bool
		state   string
		flags   string
	}{
		{"active", &tier1Status{Active: true}, &tier2Stats{}, false, StateActive, "active"},
		{"Tier 2 only, Tier 1 never activated it", nil, &tier2Stats{}, true, StateInactive, "inactive"},
		{"Tier 2 only, Tier 1 not heard", nil, &tier2Stats{}, false, StateUnknown, "unknown"},
		{"neither tier knows it", nil, nil, true, StateInactive, "inactive"},
		{"nobody answered", nil, nil, false, StateUnknown, "unknown"},
		{"recovering, Tier 1 not heard", nil, &tier2Stats{Recovering: true}, false, StateRecovering, "recovering"},
		{"paused", &tier1Status{Active: true, Paused: true}, nil, false, StatePaused, "paused"},
		{"inactive", &tier1Status{}, nil, false, StateInactive, "inactive"},
		{"scheduled", &tier1Status{Active: true, Sale: &sale{Phase: "prequeue", PrequeueFrom: &later}}, nil, false, StateScheduled, "scheduled"},
		{"pre-queue", &tier1Status{Active: true, Sale: &sale{Phase: "prequeue", PrequeueFrom: &earlier}}, nil, false, StatePrequeue, "prequeue"},
		{"pre-queue open from the schedule", &tier1Status{Active: true, Sale: &sale{Phase: "prequeue"}}, nil, false, StatePrequeue, "prequeue"},
		{"drawing", &tier1Status{Active: true, Sale: &sale{Phase: "drawing"}}, nil, false, StateDrawing, "drawing"},
		{"drawn is just active", &tier1Status{Active: true, Sale: &sale{Phase: "drawn"}}, nil, false, StateActive, "active"},
		{"cancelled", &tier1Status{Active: true, Sale: &sale{Phase: "cancelled"}}, nil, false, StateCancelled, "cancelled"},
		{"recovering and paused", &tier1Status{Active: true, Paused: true}, &tier2Stats{Recovering: true}, false, StateRecovering, "recovering paused"},
	}
	for _, tc := range cases {
		st, flags := stateOf(tc.t1, tc.t2, tc.absent1, now)
		if st != tc.state || strings.Join(flags, " ") != tc.flags {
			t.Errorf("%s: %s %v, want %s [%s]", tc.name, st, flags, tc.state, tc.flags)
		}
	}
}

func TestProjection(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	until := now.Add(20 * time.Second)
	sec := func(e *Estimate) any {
		if e.Seconds == nil {
			return nil
		}
		return *e.Seconds
	}
	cases := []struct {
		name  string
		e     *Estimate
		basis string
		secs  any
	}{
		{"tier 1 at its rate", project1(&tier1Status{Waiting: 1000, AdmitRatePerMinute: 300}), "rate", int64(200)},
		{"tier 1 rounds up", project1(&tier1Status{Waiting: 1, AdmitRatePerMinute: 300}), "rate", int64(1)},
		{"tier 1 paused", project1(&tier1Status{Waiting: 10, AdmitRatePerMinute: 300, Paused: true}), "paused", nil},
		{"tier 1 no rate", project1(&tier1Status{Waiting: 10}), "no-rate", nil},
		{"tier 1 empty", project1(&tier1Status{}), "empty", int64(0)},
		{"tier 2 the API's estimate", project2(&tier2Stats{QueueSize: 50, AdmittedLastMinute: 30, EstimatedClearSeconds: 100}, now), "rate", int64(100)},
		{"tier 2 room for all", project2(&tier2Stats{QueueSize: 3, Available: 5, AdmittedLastMinute: 1, EstimatedClearSeconds: 180}, now), "room", int64(1)},
		{"tier 2 no rate", project2(&tier2Stats{QueueSize: 3, EstimatedClearSeconds: 5}, now), "no-rate", nil},
		{"tier 2 recovering", project2(&tier2Stats{QueueSize: 3, AdmittedLastMinute: 6, EstimatedClearSeconds: 30, Recovering: true, RecoveringUntil: &until}, now), "recovering", int64(50)},
	}
	for _, tc := range cases {
		if tc.e.Basis != tc.basis || sec(tc.e) != tc.secs {
			t.Errorf("%s: %+v (seconds %v), want %s and %v", tc.name, tc.e, sec(tc.e), tc.basis, tc.secs)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("http://127.0.0.1:1")
	up := &Upstream{Tier1: u, Tier2: u}
	for name, cfg := range map[string]Config{
		"no token":      {Upstream: up},
		"short token":   {Tokens: []string{"short"}, Upstream: up},
		"no upstream":   {Tokens: []string{testToken}},
		"a bare prefix": {Tokens: []string{testToken}, Upstream: up, Prefix: "console"},
	} {
		if _, err := New(context.Background(), cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
