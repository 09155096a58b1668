package tier1api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
	"github.com/vwr-go/vwr/internal/token"
)

// TestFixturesAreHTTPAPIv2 loads every events/*.apigw.json, checks it has the
// HTTP API payload v2 shape of a declared route, and that every route has one.
func TestFixturesAreHTTPAPIv2(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	type route struct{ Method, Path string }
	routes := map[string]route{}
	for _, p := range b.api.Routes() {
		method, path, _ := strings.Cut(p, " ")
		routes[p] = route{method, path}
	}
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(t), "events", "*.apigw.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no events/*.apigw.json (%v)", err)
	}
	covered := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var shape map[string]any
			if err := json.Unmarshal(raw, &shape); err != nil {
				t.Fatal(err)
			}
			for _, v1 := range []string{"httpMethod", "resource", "path", "multiValueHeaders"} {
				if _, ok := shape[v1]; ok {
					t.Errorf("has REST API v1 field %q", v1)
				}
			}
			req := fixture(t, name)
			if req.Version != "2.0" {
				t.Errorf("version %q, want 2.0", req.Version)
			}
			rt, ok := routes[req.RouteKey]
			if !ok {
				t.Fatalf("routeKey %q is not a declared route", req.RouteKey)
			}
			covered[req.RouteKey] = true
			if req.RequestContext.RouteKey != req.RouteKey || req.RequestContext.HTTP.Method != rt.Method {
				t.Errorf("requestContext routeKey %q method %q disagree with %q", req.RequestContext.RouteKey, req.RequestContext.HTTP.Method, req.RouteKey)
			}
			path := rt.Path
			for k, v := range req.PathParameters {
				path = strings.Replace(path, "{"+k+"}", v, 1)
			}
			if req.RawPath != path || req.RequestContext.HTTP.Path != path {
				t.Errorf("rawPath %q / http.path %q, want %q from pathParameters", req.RawPath, req.RequestContext.HTTP.Path, path)
			}
			if strings.Contains(rt.Path, "{eventId}") && req.PathParameters["eventId"] != fixtureEvent {
				t.Errorf("eventId %q, want %q", req.PathParameters["eventId"], fixtureEvent)
			}
			if strings.HasPrefix(rt.Path, "/vwr/admin/") {
				if a := req.RequestContext.Authorizer; a == nil || a.IAM == nil || a.IAM.UserARN == "" {
					t.Error("admin fixture lacks the IAM authorizer context API Gateway adds on AWS_IAM routes")
				}
			}
		})
	}
	for key := range routes {
		if !covered[key] {
			t.Errorf("route %q has no events/ fixture", key)
		}
	}

	var eb events.EventBridgeEvent
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", "advancer.eventbridge.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &eb); err != nil {
		t.Fatal(err)
	}
	if eb.DetailType != "Scheduled Event" || eb.Source != "aws.events" || len(eb.Resources) != 1 {
		t.Errorf("advancer fixture is not a scheduled EventBridge event: %+v", eb)
	}
}

// TestJourneyOnFixtures walks an event's whole life using only the fixtures.
func TestJourneyOnFixtures(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{trustIAM: true})
	admin := b.admin

	wantError(t, call(t, admin, fixture(t, "admin-status.apigw.json")), 404, "not_found")

	resp := call(t, admin, fixture(t, "admin-activate.apigw.json"))
	wantStatus(t, resp, 200)
	st := decode[adminDoc](t, resp)
	if !st.Active || st.Shards != 4 || st.BatchSize != 500 || len(st.ShardCounters) != 4 {
		t.Fatalf("after activate: %+v", st)
	}

	first := call(t, b.assign, fixture(t, "assign.apigw.json"))
	wantStatus(t, first, 201)
	a := decode[assignDoc](t, first)
	if !a.Active || a.EventID != fixtureEvent || a.Position < 1 || a.Position > 4 || !tier1.ValidID(a.RequestID) || a.NextPoll < 1 {
		t.Fatalf("assign: %+v", a)
	}
	// The fixture carries an Idempotency-Key: the retry returns the same place.
	again := call(t, b.assign, fixture(t, "assign.apigw.json"))
	wantStatus(t, again, 201)
	if a2 := decode[assignDoc](t, again); a2.RequestID != a.RequestID || a2.Position != a.Position {
		t.Fatalf("idempotent retry: %+v, first %+v", a2, a)
	}
	if again.Headers["Idempotent-Replayed"] != "true" {
		t.Error("retry lacks Idempotent-Replayed")
	}

	// The fixture's own requestId was never handed out.
	wantError(t, call(t, b.check, fixture(t, "check.apigw.json")), 404, "not_found")

	check := withRequestID(fixture(t, "check.apigw.json"), a.RequestID)
	resp = call(t, b.check, check)
	wantStatus(t, resp, 200)
	if c := decode[checkDoc](t, resp); c.Admitted || c.Position != a.Position || c.ServingCounter != 0 || c.Token != "" || len(resp.Cookies) != 0 {
		t.Fatalf("check before advance: %+v cookies %v", c, resp.Cookies)
	}

	resp = call(t, admin, fixture(t, "admin-advance.apigw.json"))
	wantStatus(t, resp, 200)
	if st := decode[adminDoc](t, resp); st.ServingCounter != st.MaxAssigned || st.ServingCounter != a.Position {
		t.Fatalf("advance by 1000 with one visitor: %+v (never above maxAssigned)", st)
	}

	resp = call(t, b.check, check)
	wantStatus(t, resp, 200)
	c := decode[checkDoc](t, resp)
	if !c.Admitted || c.Position != a.Position {
		t.Fatalf("check after advance: %+v", c)
	}
	pass, err := b.keys.VerifyTier1(c.Token, fixtureEvent, b.clk.Now())
	if err != nil || pass.Subject != a.RequestID || pass.Position != a.Position {
		t.Fatalf("token: %+v %v", pass, err)
	}
	wantPassCookie(t, resp, c.Token)

	b.clk.Advance(2 * time.Second) // past the 1 s snapshot cache
	resp = call(t, b.status, fixture(t, "status.apigw.json"))
	wantStatus(t, resp, 200)
	if cc := resp.Headers["Cache-Control"]; cc != "public, max-age=1, stale-while-revalidate=2" {
		t.Errorf("status Cache-Control %q", cc)
	}
	if s := decode[statusDoc](t, resp); !s.Active || s.EventID != fixtureEvent || s.ServingCounter != a.Position || s.MaxAssigned != a.Position || s.UpdatedAt.IsZero() {
		t.Fatalf("status: %+v", s)
	}

	resp = call(t, admin, fixture(t, "admin-pause.apigw.json"))
	wantStatus(t, resp, 200)
	if !decode[adminDoc](t, resp).Paused {
		t.Fatal("pause did not pause")
	}
	resp = call(t, admin, fixture(t, "admin-resume.apigw.json"))
	wantStatus(t, resp, 200)
	if decode[adminDoc](t, resp).Paused {
		t.Fatal("resume did not resume")
	}
	resp = call(t, admin, fixture(t, "admin-status.apigw.json"))
	wantStatus(t, resp, 200)
	if st := decode[adminDoc](t, resp); st.Assigned != 1 || st.Admitted != 1 || st.Waiting != 0 {
		t.Fatalf("admin status: %+v", st)
	}
	resp = call(t, admin, fixture(t, "admin-deactivate.apigw.json"))
	wantStatus(t, resp, 200)
	if decode[adminDoc](t, resp).Active {
		t.Fatal("deactivate left the event active")
	}

	// Inactive: pass-through with a verifiable token and no position record.
	resp = call(t, b.assign, withHeader(fixture(t, "assign.apigw.json"), "idempotency-key", ""))
	wantStatus(t, resp, 200)
	pt := decode[assignDoc](t, resp)
	if pt.Active || !pt.Admitted || pt.Token == "" || pt.RequestID != "" {
		t.Fatalf("pass-through: %s", resp.Body)
	}
	if _, err := b.keys.VerifyTier1(pt.Token, fixtureEvent, b.clk.Now()); err != nil {
		t.Fatalf("pass-through token: %v", err)
	}
	wantPassCookie(t, resp, pt.Token) // set by the server, so HttpOnly

	if sum, _ := b.metricSum(t, fixtureEvent, tier1api.MetricAssignments); sum != 1 {
		t.Errorf("Assignments metric %v, want 1 (the replay is not a new assignment)", sum)
	}
	if sum, _ := b.metricSum(t, fixtureEvent, tier1api.MetricAdmissions); sum != 1 {
		t.Errorf("Admissions metric %v, want 1", sum)
	}
}

// wantPassCookie checks that resp sets exactly the urr-vwr-token cookie for tok.
func wantPassCookie(t *testing.T, resp events.APIGatewayV2HTTPResponse, tok string) {
	t.Helper()
	if len(resp.Cookies) != 1 {
		t.Fatalf("cookies %v", resp.Cookies)
	}
	cookie, err := http.ParseSetCookie(resp.Cookies[0])
	if err != nil {
		t.Fatal(err)
	}
	if cookie.Name != "urr-vwr-token" || cookie.Value != tok || !cookie.Secure || !cookie.HttpOnly ||
		cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/" || cookie.MaxAge != 600 {
		t.Fatalf("cookie %+v", cookie)
	}
}

// TestNeverActivatedIsPassThrough: a missing config fails open.
func TestNeverActivatedIsPassThrough(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	resp := call(t, b.assign, fixture(t, "assign.apigw.json"))
	wantStatus(t, resp, 200)
	if d := decode[assignDoc](t, resp); d.Active || !d.Admitted || d.Token == "" {
		t.Fatalf("never-activated event: %s", resp.Body)
	}
	resp = call(t, b.status, fixture(t, "status.apigw.json"))
	wantStatus(t, resp, 200)
	if d := decode[statusDoc](t, resp); d.Active || d.EventID != fixtureEvent {
		t.Fatalf("status: %+v", d)
	}
}

// TestCheckOtherEventIs404: a requestId is only valid for its own event.
func TestCheckOtherEventIs404(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.activate(t, fixtureEvent, 1, 10)
	b.activate(t, "other-event", 1, 10)
	a := decode[assignDoc](t, call(t, b.assign, withEvent(fixture(t, "assign.apigw.json"), "other-event")))
	resp := call(t, b.check, withRequestID(fixture(t, "check.apigw.json"), a.RequestID))
	wantError(t, resp, 404, "not_found")
}

// TestBadInput: every rejection is a 4xx JSON with a code and writes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", jsonhttp.MaxBodyBytes+1)
	type tc struct {
		name    string
		handler func(*testBundle) http.Handler
		req     func(t *testing.T) events.APIGatewayV2HTTPRequest
		status  int
		code    string
	}
	assign := func(b *testBundle) http.Handler { return b.assign }
	check := func(b *testBundle) http.Handler { return b.check }
	status := func(b *testBundle) http.Handler { return b.status }
	admin := func(b *testBundle) http.Handler { return b.admin }
	withBody := func(name, body string) func(t *testing.T) events.APIGatewayV2HTTPRequest {
		return func(t *testing.T) events.APIGatewayV2HTTPRequest {
			r := fixture(t, name)
			r.Body = body
			return r
		}
	}
	cases := []tc{
		{"assign bad event", assign, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withEvent(fixture(t, "assign.apigw.json"), "bad id!")
		}, 400, "invalid_event_id"},
		{"assign long event", assign, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withEvent(fixture(t, "assign.apigw.json"), strings.Repeat("e", 65))
		}, 400, "invalid_event_id"},
		{"assign missing event", assign, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withEvent(fixture(t, "assign.apigw.json"), "")
		}, 404, "not_found"},
		{"assign bad idempotency key", assign, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withHeader(fixture(t, "assign.apigw.json"), "idempotency-key", "not/valid")
		}, 400, "invalid_idempotency_key"},
		{"assign oversize body", assign, withBody("assign.apigw.json", big), 413, "body_too_large"},
		{"assign oversize base64 body", assign, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			r := fixture(t, "assign.apigw.json")
			r.Body = strings.Repeat("QUFB", 2000)
			r.IsBase64Encoded = true
			return r
		}, 413, "body_too_large"},
		{"check bad request id", check, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withRequestID(fixture(t, "check.apigw.json"), "a.b")
		}, 400, "invalid_request_id"},
		{"check braces in request id", check, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withRequestID(fixture(t, "check.apigw.json"), "{x}")
		}, 400, "invalid_request_id"},
		{"check bad event", check, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withEvent(fixture(t, "check.apigw.json"), "a.b")
		}, 400, "invalid_event_id"},
		{"status bad event", status, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withEvent(fixture(t, "status.apigw.json"), "b.d")
		}, 400, "invalid_event_id"},
		{"status without event", status, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withEvent(fixture(t, "status.apigw.json"), "")
		}, 404, "not_found"},
		{"activate not json", admin, withBody("admin-activate.apigw.json", "{shards:4"), 400, "invalid_body"},
		{"activate unknown field", admin, withBody("admin-activate.apigw.json", `{"shards":4,"owner":"me"}`), 400, "invalid_body"},
		{"activate two documents", admin, withBody("admin-activate.apigw.json", `{"shards":4}{"shards":5}`), 400, "invalid_body"},
		{"activate too many shards", admin, withBody("admin-activate.apigw.json", `{"shards":65,"batchSize":10}`), 400, "invalid_config"},
		{"activate negative batch", admin, withBody("admin-activate.apigw.json", `{"shards":1,"batchSize":-1}`), 400, "invalid_config"},
		{"activate oversize", admin, withBody("admin-activate.apigw.json", `{"shards":1,"pad":"`+big+`"}`), 413, "body_too_large"},
		{"activate bad event", admin, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withEvent(fixture(t, "admin-activate.apigw.json"), "x y")
		}, 400, "invalid_event_id"},
		{"advance zero", admin, withBody("admin-advance.apigw.json", `{"by":0}`), 400, "invalid_config"},
		{"advance string", admin, withBody("admin-advance.apigw.json", `{"by":"10"}`), 400, "invalid_body"},
		{"activate upper-case key", admin, withBody("admin-activate.apigw.json", `{"SHARDS":4}`), 400, "invalid_body"},
		{"activate duplicate key", admin, withBody("admin-activate.apigw.json", `{"shards":4,"shards":2}`), 400, "invalid_body"},
		{"activate trailing data", admin, withBody("admin-activate.apigw.json", `{"shards":4} x`), 400, "invalid_body"},
		{"activate text/plain", admin, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			return withHeader(fixture(t, "admin-activate.apigw.json"), "content-type", "text/plain")
		}, 400, "invalid_body"},
		{"pause with body", admin, withBody("admin-pause.apigw.json", `{"paused":false}`), 400, "invalid_body"},
		{"unknown admin route", admin, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			r := fixture(t, "admin-status.apigw.json")
			r.RawPath = "/vwr/admin/purge/" + fixtureEvent
			return r
		}, 404, "not_found"},
		{"admin route with the wrong method", admin, func(t *testing.T) events.APIGatewayV2HTTPRequest {
			r := fixture(t, "admin-status.apigw.json")
			r.RequestContext.HTTP.Method = "DELETE"
			return r
		}, 405, "method_not_allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{trustIAM: true})
			// A paused, 2-shard event with one visitor: rejected requests
			// must leave every field of it as it is.
			if _, err := b.svc.Activate(context.Background(), fixtureEvent, 2, 7); err != nil {
				t.Fatal(err)
			}
			if _, err := b.svc.Pause(context.Background(), fixtureEvent); err != nil {
				t.Fatal(err)
			}
			if _, err := b.svc.Assign(context.Background(), fixtureEvent, "seed"); err != nil {
				t.Fatal(err)
			}
			before, err := b.svc.AdminStatus(context.Background(), fixtureEvent)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, call(t, c.handler(b), c.req(t)), c.status, c.code)
			after, err := b.svc.AdminStatus(context.Background(), fixtureEvent)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("rejected request changed the event:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

func TestAdminAuth(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		opts  setupOpts
		req   func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest
		allow bool
		msg   string
	}{
		{"IAM context, trusted", setupOpts{trustIAM: true}, func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return r }, true, ""},
		{"IAM context, not trusted (local), no token set", setupOpts{}, func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return r }, false, "disabled"},
		{"IAM context, not trusted, token set", setupOpts{token: adminToken}, func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return r }, false, ""},
		{"no credentials, trusted", setupOpts{trustIAM: true}, withoutIAM, false, ""},
		{"right bearer", setupOpts{token: adminToken}, func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			return withBearer(r, adminToken)
		}, true, ""},
		{"right bearer, lower-case scheme", setupOpts{token: adminToken}, func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			return withHeader(withoutIAM(r), "authorization", "bearer "+adminToken)
		}, true, ""},
		{"wrong bearer", setupOpts{token: adminToken}, func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			return withBearer(r, adminToken+"x")
		}, false, ""},
		{"prefix of bearer", setupOpts{token: adminToken}, func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			return withBearer(r, adminToken[:10])
		}, false, ""},
		{"basic scheme", setupOpts{token: adminToken}, func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			return withHeader(withoutIAM(r), "authorization", "Basic "+adminToken)
		}, false, ""},
		{"bearer with empty token configured", setupOpts{}, func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return withBearer(r, "") }, false, "disabled"},
		{"IAM context without a user ARN", setupOpts{trustIAM: true}, func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			r.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{}}
			return r
		}, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, c.opts)
			resp := call(t, b.admin, c.req(fixture(t, "admin-activate.apigw.json")))
			st, err := b.svc.AdminStatus(context.Background(), fixtureEvent)
			if c.allow {
				wantStatus(t, resp, 200)
				if err != nil || !st.Active {
					t.Fatalf("allowed activate did not activate: %+v %v", st, err)
				}
				return
			}
			wantError(t, resp, 401, "unauthorized")
			if !errors.Is(err, tier1.ErrNotFound) {
				t.Fatalf("refused activate wrote the event: %+v %v", st, err)
			}
			if c.msg != "" && !strings.Contains(resp.Body, c.msg) {
				t.Errorf("body %s lacks %q", resp.Body, c.msg)
			}
		})
	}
}

// TestStoreOutage: Redis down → 503 with Retry-After, a fixed message, and
// nothing of the dependency's error text.
func TestStoreOutage(t *testing.T) {
	t.Parallel()
	dead := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = dead.Close() })
	b := setup(t, setupOpts{rdb: dead, trustIAM: true})
	cases := map[string]struct {
		h   http.Handler
		req events.APIGatewayV2HTTPRequest
	}{
		"assign":   {b.assign, fixture(t, "assign.apigw.json")},
		"check":    {b.check, fixture(t, "check.apigw.json")},
		"status":   {b.status, fixture(t, "status.apigw.json")},
		"activate": {b.admin, fixture(t, "admin-activate.apigw.json")},
		"advance":  {b.admin, fixture(t, "admin-advance.apigw.json")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			resp := call(t, c.h, c.req)
			wantError(t, resp, 503, "unavailable")
			if resp.Headers["Retry-After"] == "" {
				t.Error("503 without Retry-After")
			}
			for _, leak := range []string{"127.0.0.1", "dial", "refused", "redis", "tier1:"} {
				if strings.Contains(resp.Body, leak) {
					t.Errorf("503 body leaks %q: %s", leak, resp.Body)
				}
			}
		})
	}
	if !strings.Contains(b.logs.String(), "refused") {
		t.Error("the cause of the 503 is not in the log")
	}
	if _, err := b.adv.Handle(context.Background(), events.EventBridgeEvent{}); !errors.Is(err, tier1.ErrUnavailable) {
		t.Errorf("advancer with the store down returned %v, want an error so Lambda retries", err)
	}
}

// throttling wraps a real store and refuses every enter as DynamoDB does
// once the SDK's retries are spent.
type throttling struct{ tier1.Store }

func (throttling) Assign(context.Context, tier1.NewPosition) (tier1.Position, bool, error) {
	return tier1.Position{}, false, fmt.Errorf("dynamostore: ProvisionedThroughputExceededException after 3 attempts: %w", tier1.ErrThrottled)
}

func TestThrottled(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{store: func(s tier1.Store) tier1.Store { return throttling{s} }})
	b.activate(t, fixtureEvent, 1, 10)
	resp := call(t, b.assign, fixture(t, "assign.apigw.json"))
	wantError(t, resp, 503, "throttled")
	if resp.Headers["Retry-After"] == "" || strings.Contains(resp.Body, "Provisioned") {
		t.Fatalf("throttle answer %v %s", resp.Headers, resp.Body)
	}
	if sum, n := b.metricSum(t, fixtureEvent, tier1api.MetricThrottles); sum != 1 || n != 1 {
		t.Errorf("Throttles metric sum %v in %d lines, want 1", sum, n)
	}
	if st, _ := b.svc.AdminStatus(context.Background(), fixtureEvent); st.Assigned != 0 {
		t.Errorf("throttled enter assigned %d", st.Assigned)
	}
}

func TestAdvancerHandler(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.activate(t, fixtureEvent, 1, 2)
	b.activate(t, "paused-event", 1, 2)
	for i := 0; i < 5; i++ {
		for _, ev := range []string{fixtureEvent, "paused-event"} {
			if _, err := b.svc.Assign(context.Background(), ev, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := b.svc.Pause(context.Background(), "paused-event"); err != nil {
		t.Fatal(err)
	}
	var eb events.EventBridgeEvent
	raw, _ := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", "advancer.eventbridge.json"))
	if err := json.Unmarshal(raw, &eb); err != nil {
		t.Fatal(err)
	}
	start := b.clk.Now()
	rep, err := b.adv.Handle(context.Background(), eb)
	if err != nil {
		t.Fatal(err)
	}
	want := []tier1api.AdvanceDone{
		{EventID: fixtureEvent, From: 0, To: 2, Admitted: 2},
		{EventID: fixtureEvent, From: 2, To: 4, Admitted: 2},
		{EventID: fixtureEvent, From: 4, To: 5, Admitted: 1},
	}
	if rep.Ticks != 3 || rep.FailedTicks != 0 || fmt.Sprint(rep.Raises) != fmt.Sprint(want) {
		t.Fatalf("report %+v, want 3 ticks raising %+v", rep, want)
	}
	if got := b.clk.Now().Sub(start); got != 20*time.Second {
		t.Errorf("slept %s between 3 ticks, want 20s", got)
	}
	if st, _ := b.svc.AdminStatus(context.Background(), "paused-event"); st.ServingCounter != 0 {
		t.Errorf("paused event advanced to %d", st.ServingCounter)
	}
	if sum, n := b.metricSum(t, fixtureEvent, tier1api.MetricReleased); sum != 5 || n != 3 {
		t.Errorf("Released metric %v over %d lines, want 5 over 3", sum, n)
	}
	// Each tick says how many events had a line: the fixture event each
	// time, never the paused one (the stalled-counter alarm reads it).
	if sum, n := b.metricSum(t, tier1api.AllEvents, tier1api.MetricEventsWaiting); sum != 3 || n != 3 {
		t.Errorf("EventsWaiting metric %v over %d lines, want 3 over 3", sum, n)
	}
	// A tick with nobody left waiting reports 0, not nothing: silence
	// would mean the advancer is not running.
	b.clk.Advance(10 * time.Second)
	if _, err := b.adv.Handle(context.Background(), eb); err != nil {
		t.Fatal(err)
	}
	if sum, n := b.metricSum(t, tier1api.AllEvents, tier1api.MetricEventsWaiting); sum != 3 || n != 6 {
		t.Errorf("EventsWaiting after the line emptied: %v over %d lines, want 3 over 6", sum, n)
	}
}

func TestEMFShape(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.activate(t, fixtureEvent, 1, 10)
	wantStatus(t, call(t, b.assign, fixture(t, "assign.apigw.json")), 201)
	docs := b.emf(t)
	if len(docs) != 1 {
		t.Fatalf("%d EMF lines, want 1", len(docs))
	}
	raw, _ := json.Marshal(docs[0])
	var d struct {
		AWS struct {
			Timestamp         int64 `json:"Timestamp"`
			CloudWatchMetrics []struct {
				Namespace  string     `json:"Namespace"`
				Dimensions [][]string `json:"Dimensions"`
				Metrics    []struct{ Name, Unit string }
			} `json:"CloudWatchMetrics"`
		} `json:"_aws"`
		EventID     string `json:"EventId"`
		Assignments int64  `json:"Assignments"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	m := d.AWS.CloudWatchMetrics
	if d.AWS.Timestamp != epoch.UnixMilli() || len(m) != 1 || m[0].Namespace != "vwr/tier1" ||
		// Per event, and without dimensions: the sum over events that the
		// alarms watch (infra/ops.go).
		fmt.Sprint(m[0].Dimensions) != "[[EventId] []]" || len(m[0].Metrics) != 1 ||
		m[0].Metrics[0].Name != "Assignments" || m[0].Metrics[0].Unit != "Count" ||
		d.EventID != fixtureEvent || d.Assignments != 1 {
		t.Fatalf("EMF document %s", raw)
	}
	// The request log is one slog JSON line with the stable keys.
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(b.logs.String())), &line); err != nil {
		t.Fatalf("log %q: %v", b.logs.String(), err)
	}
	for _, k := range []string{"route", "event", "status", "ms"} {
		if _, ok := line[k]; !ok {
			t.Errorf("log line lacks %q: %v", k, line)
		}
	}
}

// TestTokenClaims pins the claim set Tier 2 verifies.
func TestTokenClaims(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.activate(t, fixtureEvent, 1, 10)
	a := decode[assignDoc](t, call(t, b.assign, fixture(t, "assign.apigw.json")))
	if _, err := b.svc.AdvanceBy(context.Background(), fixtureEvent, 1); err != nil {
		t.Fatal(err)
	}
	c := decode[checkDoc](t, call(t, b.check, withRequestID(fixture(t, "check.apigw.json"), a.RequestID)))
	parts := strings.Split(c.Token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q", c.Token)
	}
	var claims map[string]any
	if err := json.Unmarshal(mustB64(t, parts[1]), &claims); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"iss": "vwr", "aud": []any{"vwr-tier1"}, "tier": float64(1), "sub": a.RequestID,
		"eid": fixtureEvent, "pos": float64(a.Position),
		"iat": float64(epoch.Unix()), "exp": float64(epoch.Unix() + 600),
	}
	if fmt.Sprint(claims) != fmt.Sprint(want) {
		t.Fatalf("claims %v\nwant   %v", claims, want)
	}
	if _, err := b.keys.VerifyTier1(c.Token, "other-event", b.clk.Now()); !errors.Is(err, token.ErrWrongEvent) {
		t.Fatalf("token verified for another event: %v", err)
	}
}

var b64re = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	if !b64re.MatchString(s) {
		t.Fatalf("not base64url: %q", s)
	}
	out, err := base64URL(s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRequestLogLevels: at LOG_LEVEL=info (the default) a healthy request
// and a client error write no log line, and a store outage writes one ERROR
// line with its cause.
func TestRequestLogLevels(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	var logs lambdatest.LogBuffer
	deps := b.deps
	deps.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	api := tier1api.New(deps, tier1api.AdminOptions{})
	b.activate(t, fixtureEvent, 1, 10)
	wantStatus(t, call(t, api.Handler(tier1api.RouteAssign), fixture(t, "assign.apigw.json")), 201)
	wantStatus(t, call(t, api.Handler(tier1api.RouteStatus), fixture(t, "status.apigw.json")), 200)
	wantError(t, call(t, api.Handler(tier1api.RouteCheck), withRequestID(fixture(t, "check.apigw.json"), "a.b")), 400, "invalid_request_id")
	if s := logs.String(); s != "" {
		t.Fatalf("healthy and 4xx requests logged at the default level:\n%s", s)
	}

	dead := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = dead.Close() })
	down := setup(t, setupOpts{rdb: dead})
	deps = down.deps
	deps.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	wantError(t, call(t, tier1api.New(deps, tier1api.AdminOptions{}).Handler(tier1api.RouteStatus), fixture(t, "status.apigw.json")), 503, "unavailable")
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &line); err != nil {
		t.Fatalf("want one JSON line, got %q", logs.String())
	}
	if line["level"] != "ERROR" || line["status"] != float64(503) || line["code"] != "unavailable" ||
		!strings.Contains(fmt.Sprint(line["err"]), "refused") || line["route"] != tier1api.RouteStatus {
		t.Fatalf("outage log line = %v", line)
	}
}

// conflicting wraps a real store whose serving-counter writes always lose,
// as when other advancers keep moving the event.
type conflicting struct{ tier1.Store }

func (conflicting) Advance(context.Context, tier1.AdvanceWrite) error { return tier1.ErrConflict }

// TestLostConditionalWritesAreBusy: an admin advance that keeps losing its
// compare-and-set after the Service's retries is a 503 to retry, not a 500.
func TestLostConditionalWritesAreBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{trustIAM: true, store: func(s tier1.Store) tier1.Store { return conflicting{s} }})
	b.activate(t, fixtureEvent, 1, 10)
	if _, err := b.svc.Assign(context.Background(), fixtureEvent, ""); err != nil {
		t.Fatal(err)
	}
	resp := call(t, b.admin, fixture(t, "admin-advance.apigw.json"))
	wantError(t, resp, 503, "busy")
	if resp.Headers["Retry-After"] != "2" {
		t.Fatalf("busy without Retry-After: %v", resp.Headers)
	}
}
