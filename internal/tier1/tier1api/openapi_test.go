package tier1api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/openapitest"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

func loadContract(t *testing.T) *openapitest.Contract {
	t.Helper()
	return openapitest.Load(t, filepath.Join(testenv.RepoRoot(t), "docs", "tier1-openapi.yaml"))
}

// TestOpenAPIDocumentMatchesRoutes: docs/tier1-openapi.yaml is a valid
// OpenAPI document (openapitest.Load) whose operations are exactly the
// routes the API registers.
func TestOpenAPIDocumentMatchesRoutes(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	routes := setup(t, setupOpts{}).api.Routes()
	slices.Sort(routes)
	if !slices.Equal(c.Operations(), routes) {
		t.Fatalf("docs/tier1-openapi.yaml and the API disagree:\n spec: %v\n  API: %v", c.Operations(), routes)
	}
}

// TestOpenAPIServers: the document's servers say where each fixture's route
// is served. API Gateway serves it at its own path; CloudFront and vwr local
// put /vwr-api in front.
func TestOpenAPIServers(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(t), "events", "*.apigw.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no events/*.apigw.json (%v)", err)
	}
	for _, f := range files {
		req := fixture(t, filepath.Base(f))
		for _, tc := range []struct {
			url    string
			server int // index in the document's servers
		}{
			{"https://" + req.RequestContext.DomainName + req.RawPath, 0},
			{"https://tickets.example.com/vwr-api" + req.RawPath, 1},
			{"http://127.0.0.1:8080/vwr-api" + req.RawPath, 2},
		} {
			r, err := http.NewRequest("GET", tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			server, _, rest := c.Doc.Servers.MatchURL(r.URL)
			if server != c.Doc.Servers[tc.server] || rest != req.RawPath {
				t.Errorf("%s: %s matched server %v with path %q, want server %q and %q",
					filepath.Base(f), tc.url, server, rest, c.Doc.Servers[tc.server].URL, req.RawPath)
			}
		}
	}
}

// t1target is the bundle an exchange runs on.
type t1target int

const (
	iamAdmin       t1target = iota // the admin function trusts API Gateway's IAM context
	bearerAdmin                    // VWR_ADMIN_TOKEN set, no IAM (vwr local)
	deadStore                      // Redis unreachable
	throttledStore                 // every enter throttled, as DynamoDB after the SDK's retries
	boundedClients                 // one arrival per CloudFront-Viewer-Address and window
)

// t1exchange is one request of TestOpenAPIContract and what must come back.
type t1exchange struct {
	name string
	on   t1target
	fn   func(b *testBundle) http.Handler // the function that serves the request
	// req arranges the event's state (through the Service) and returns the
	// API Gateway request.
	req    func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest
	status int
	code   string // the error code; "" for a success
	// specRejects: the document itself refuses the request.
	specRejects bool
	// unrouted: no operation has this method and path (405, unknown path).
	unrouted bool
	want     func(t *testing.T, resp events.APIGatewayV2HTTPResponse)
}

// fixedAdmissions stands in for the SQS consumer's stats table.
type fixedAdmissions int64

func (n fixedAdmissions) AdmittedLastMinute(context.Context, string) (int64, error) {
	return int64(n), nil
}

var (
	assignFn = func(b *testBundle) http.Handler { return b.assign }
	checkFn  = func(b *testBundle) http.Handler { return b.check }
	statusFn = func(b *testBundle) http.Handler { return b.status }
	adminFn  = func(b *testBundle) http.Handler { return b.admin }
	drawFn   = func(b *testBundle) http.Handler { return b.draw }
	// localFn serves every route on one handler, as vwr local does.
	localFn = func(b *testBundle) http.Handler { return b.api.Handler() }
	// adminStatsFn is the admin function with VWR_ADMITTED_STATS_TABLE set.
	adminStatsFn = func(b *testBundle) http.Handler {
		d := b.deps
		d.QueueAdmissions = fixedAdmissions(7)
		return tier1api.New(d, b.adminOpt).Handler(tier1api.AdminRoutes...)
	}
)

// send runs req through h behind the Lambdas' adapter (call) and validates
// the request and the answer API Gateway would return against the document.
func send(t *testing.T, c *openapitest.Contract, h http.Handler, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, matched bool, reqErr error) {
	t.Helper()
	// The request the handler sees, as the adapter builds it.
	hr, err := (&core.RequestAccessorV2{}).EventToRequest(req)
	if err != nil {
		t.Fatalf("adapter request: %v", err)
	}
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp = call(t, h, req)
	header := http.Header{}
	for k, v := range resp.Headers {
		header.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			header.Add(k, v)
		}
	}
	for _, ck := range resp.Cookies {
		header.Add("Set-Cookie", ck)
	}
	out := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	c.ValidateResponse(t, hr, body, resp.StatusCode, header, out)
	matched, reqErr = c.ValidateRequest(hr, body)
	return resp, matched, reqErr
}

// at is fixture name pointed at event ev.
func at(t *testing.T, name, ev string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	return withEvent(fixture(t, name), ev)
}

func withBody(req events.APIGatewayV2HTTPRequest, body string) events.APIGatewayV2HTTPRequest {
	req = withHeader(req, "content-length", strconv.Itoa(len(body)))
	req.Body = body
	return req
}

func withMethod(req events.APIGatewayV2HTTPRequest, method string) events.APIGatewayV2HTTPRequest {
	req.RequestContext.HTTP.Method = method
	return req
}

func withPath(req events.APIGatewayV2HTTPRequest, path string) events.APIGatewayV2HTTPRequest {
	req.RawPath, req.RequestContext.HTTP.Path = path, path
	return req
}

// fx is a request of fixture name on the case's event, unchanged otherwise.
func fx(name string) func(*testing.T, *testBundle, string) events.APIGatewayV2HTTPRequest {
	return func(t *testing.T, _ *testBundle, ev string) events.APIGatewayV2HTTPRequest { return at(t, name, ev) }
}

// fxOn is a request of fixture name on event ev, whatever the case's event.
func fxOn(name, ev string) func(*testing.T, *testBundle, string) events.APIGatewayV2HTTPRequest {
	return func(t *testing.T, _ *testBundle, _ string) events.APIGatewayV2HTTPRequest { return at(t, name, ev) }
}

// active is fx after activating the event (1 shard, batch 10).
func active(name string, change ...func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest) func(*testing.T, *testBundle, string) events.APIGatewayV2HTTPRequest {
	return func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		b.activate(t, ev, 1, 10)
		req := at(t, name, ev)
		for _, f := range change {
			req = f(req)
		}
		return req
	}
}

func body(s string) func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	return func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return withBody(r, s) }
}

func method(m string) func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	return func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return withMethod(r, m) }
}

func header(k, v string) func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	return func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return withHeader(r, k, v) }
}

func bearerOf(tok string) func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	return func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return withBearer(r, tok) }
}

// listed activates the case's event and asks for the event list.
func listed(change ...func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest) func(*testing.T, *testBundle, string) events.APIGatewayV2HTTPRequest {
	return func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		b.activate(t, ev, 1, 10)
		req := fixture(t, "admin-events.apigw.json")
		req = withQuery(req, "limit="+strconv.Itoa(tier1.MaxEventsLimit))
		for _, f := range change {
			req = f(req)
		}
		return req
	}
}

func withQuery(req events.APIGatewayV2HTTPRequest, q string) events.APIGatewayV2HTTPRequest {
	vals, _ := url.ParseQuery(q)
	req.RawQueryString, req.QueryStringParameters = q, map[string]string{}
	for k := range vals {
		req.QueryStringParameters[k] = vals.Get(k)
	}
	return req
}

func query(q string) func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	return func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return withQuery(r, q) }
}

// wantListed: the event list is non-empty and every event in it is active
// or was configured (the case's own event is active).
func wantListed(t *testing.T, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	var doc struct {
		Events []struct {
			EventID string `json:"eventId"`
			Active  bool   `json:"active"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &doc); err != nil || len(doc.Events) == 0 || !doc.Events[0].Active {
		t.Fatalf("event list %s (%v): want active events first", resp.Body, err)
	}
}

func wantBodyField(k string, v any) func(*testing.T, events.APIGatewayV2HTTPResponse) {
	return func(t *testing.T, resp events.APIGatewayV2HTTPResponse) {
		t.Helper()
		var doc map[string]any
		if err := json.Unmarshal([]byte(resp.Body), &doc); err != nil || doc[k] != v {
			t.Fatalf("%s = %v in %s (%v), want %v", k, doc[k], resp.Body, err, v)
		}
	}
}

// placed activates the event, gives it one visitor, optionally serves them,
// and returns a check of that visitor.
func placed(served bool) func(*testing.T, *testBundle, string) events.APIGatewayV2HTTPRequest {
	return func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		b.activate(t, ev, 1, 10)
		a, err := b.svc.Assign(context.Background(), ev, "")
		if err != nil {
			t.Fatal(err)
		}
		if served {
			if _, err := b.svc.AdvanceBy(context.Background(), ev, 1); err != nil {
				t.Fatal(err)
			}
		}
		return withRequestID(at(t, "check.apigw.json", ev), a.RequestID)
	}
}

func wantCookie(set bool) func(*testing.T, events.APIGatewayV2HTTPResponse) {
	return func(t *testing.T, resp events.APIGatewayV2HTTPResponse) {
		t.Helper()
		if (len(resp.Cookies) == 1) != set || len(resp.Cookies) > 1 {
			t.Fatalf("cookies %v, want the pass cookie: %v", resp.Cookies, set)
		}
	}
}

func wantHeader(k, v string) func(*testing.T, events.APIGatewayV2HTTPResponse) {
	return func(t *testing.T, resp events.APIGatewayV2HTTPResponse) {
		t.Helper()
		if got := resp.Headers[http.CanonicalHeaderKey(k)]; got != v {
			t.Fatalf("%s = %q, want %q", k, got, v)
		}
	}
}

func wantBodyHas(field string, has bool) func(*testing.T, events.APIGatewayV2HTTPResponse) {
	return func(t *testing.T, resp events.APIGatewayV2HTTPResponse) {
		t.Helper()
		if got := decode[map[string]any](t, resp); (got[field] != nil) != has {
			t.Fatalf("body %s: has %q = %v, want %v", resp.Body, field, got[field] != nil, has)
		}
	}
}

// TestOpenAPIContract feeds the real handlers, on a real redis-server, the
// events/*.apigw.json requests (varied per case) through the Lambdas'
// adapter, and validates each request and each answer (status, declared
// headers, body) against docs/tier1-openapi.yaml; in the end every answer
// the document promises must have been produced.
func TestOpenAPIContract(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	// One dial attempt: the refused connection is the point, not go-redis's backoff.
	dead := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, DialerRetries: 1})
	t.Cleanup(func() { _ = dead.Close() })
	bundles := map[t1target]*testBundle{
		iamAdmin:       setup(t, setupOpts{trustIAM: true}),
		bearerAdmin:    setup(t, setupOpts{token: adminToken}),
		deadStore:      setup(t, setupOpts{rdb: dead, trustIAM: true}),
		throttledStore: setup(t, setupOpts{trustIAM: true, store: func(s tier1.Store) tier1.Store { return throttling{s} }}),
		boundedClients: setup(t, setupOpts{trustIAM: true, clientLimit: 1}),
	}
	big := strings.Repeat("x", jsonhttp.MaxBodyBytes+1)
	replay := func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		b.activate(t, ev, 1, 10)
		req := at(t, "assign.apigw.json", ev)
		if _, err := b.svc.Assign(context.Background(), ev, req.Headers["idempotency-key"]); err != nil {
			t.Fatal(err)
		}
		return req
	}
	deactivated := func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		b.activate(t, ev, 1, 10)
		if _, err := b.svc.Deactivate(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		return at(t, "assign.apigw.json", ev)
	}
	shardChange := func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		b.activate(t, ev, 1, 10)
		if _, err := b.svc.Assign(context.Background(), ev, ""); err != nil {
			t.Fatal(err)
		}
		return at(t, "admin-activate.apigw.json", ev) // asks for 4 shards
	}
	otherEvent := func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		other := "o" + ev[1:]
		if other == ev {
			other = "p" + ev[1:]
		}
		return withEvent(placed(false)(t, b, other), ev)
	}

	// scheduled schedules the case's event a week after the bundle's clock.
	scheduled := func(t *testing.T, b *testBundle, ev string) {
		t.Helper()
		if _, err := b.svc.Schedule(context.Background(), ev, epoch.Add(7*24*time.Hour), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	sale := func(name string, change ...func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest) func(*testing.T, *testBundle, string) events.APIGatewayV2HTTPRequest {
		return func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			scheduled(t, b, ev)
			req := at(t, name, ev)
			for _, f := range change {
				req = f(req)
			}
			return req
		}
	}
	nonce := header("client-nonce", "00112233445566778899aabbccddeeff")
	cancelled := func(name string, change ...func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest) func(*testing.T, *testBundle, string) events.APIGatewayV2HTTPRequest {
		return func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			req := sale(name, change...)(t, b, ev)
			if _, err := b.svc.Cancel(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			return req
		}
	}
	// drawnSale runs a whole sale on its own clock (the bundle's must not
	// move under the parallel cases), paused so nobody is admitted, and
	// returns one ticket's requestId and hash.
	drawnTicket := func(t *testing.T, b *testBundle, ev string) (string, string) {
		t.Helper()
		ctx := context.Background()
		clk := clock.NewManual(epoch)
		own := tier1.New(b.store, b.keys, clk, tier1.Config{Draw: b.beacon, Logger: slog.New(slog.DiscardHandler)})
		opens := epoch.Add(time.Hour)
		if _, err := own.Schedule(ctx, ev, opens, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, err := own.Pause(ctx, ev); err != nil {
			t.Fatal(err)
		}
		var rid, h string
		for i := range 3 {
			res, err := own.AssignWithNonce(ctx, ev, "", []byte(fmt.Sprintf("nonce-%010d", i)))
			if err != nil {
				t.Fatal(err)
			}
			rid, h = res.RequestID, fmt.Sprintf("%x", res.TicketHash)
		}
		clk.Set(opens) // the list closes at the opening
		if _, err := own.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Set(opens.Add(time.Minute))
		if _, err := own.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if out, err := own.Draw(ctx, ev); err != nil || (out != tier1.DrawDone && out != tier1.DrawAlready) {
			t.Fatalf("draw: %q, %v", out, err)
		}
		return rid, h
	}
	// admittedTicket is a drawn ticket the line has reached.
	admittedTicket := func(t *testing.T, b *testBundle, ev string) string {
		t.Helper()
		rid, _ := drawnTicket(t, b, ev)
		own := tier1.New(b.store, b.keys, clock.NewManual(epoch.Add(2*time.Hour)), tier1.Config{Draw: b.beacon, Logger: slog.New(slog.DiscardHandler)})
		if _, err := own.Resume(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		if _, err := own.AdvanceBy(context.Background(), ev, 3); err != nil {
			t.Fatal(err)
		}
		return rid
	}
	drawnSale := func(t *testing.T, b *testBundle, ev string) string {
		_, h := drawnTicket(t, b, ev)
		return h
	}
	proofOfDrawn := func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		h := drawnSale(t, b, ev)
		req := at(t, "draw-proof.apigw.json", ev)
		old := req.PathParameters["ticketHash"]
		req.PathParameters = map[string]string{"eventId": ev, "ticketHash": h}
		return withPath(req, strings.Replace(req.RawPath, old, h, 1))
	}
	chunk := func(c string) func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
		return func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			r.PathParameters = map[string]string{"eventId": r.PathParameters["eventId"], "chunk": c}
			return withPath(r, r.RawPath[:strings.LastIndex(r.RawPath, "/")+1]+c)
		}
	}

	// Bots pay at the door (docs/bots.md).
	powEvent := func(name string, change ...func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest) func(*testing.T, *testBundle, string) events.APIGatewayV2HTTPRequest {
		return func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			if _, err := b.svc.Activate(context.Background(), ev, 1, 10, tier1.WithPow(storetest.TestPow)); err != nil {
				t.Fatal(err)
			}
			req := at(t, name, ev)
			for _, f := range change {
				req = f(req)
			}
			return req
		}
	}
	spent := func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		req := powEvent("assign.apigw.json")(t, b, ev)
		h := solvedFor(t, b, ev)
		if _, err := b.svc.Enter(context.Background(), tier1.Arrival{EventID: ev, IdempotencyKey: "someone-else", Altcha: h}); err != nil {
			t.Fatal(err)
		}
		return withHeader(req, "altcha", h)
	}
	paid := func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		req := powEvent("assign.apigw.json")(t, b, ev)
		return withHeader(req, "altcha", solvedFor(t, b, ev))
	}
	tooEasy := func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		req := powEvent("assign.apigw.json")(t, b, ev)
		h := solvedFor(t, b, ev)
		// The operator raises pow after the page solved its challenge.
		if _, err := b.svc.Activate(context.Background(), ev, 1, 10, tier1.WithPow(2*storetest.TestPow)); err != nil {
			t.Fatal(err)
		}
		return withHeader(req, "altcha", h)
	}
	sameAddressAgain := func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
		b.activate(t, ev, 1, 10)
		req := at(t, "assign.apigw.json", ev)
		// Another tab behind the same address, another port.
		if _, err := b.svc.Enter(context.Background(), tier1.Arrival{EventID: ev, Client: "203.0.113.7:51000", HasClient: true, ClientWithPort: true}); err != nil {
			t.Fatal(err)
		}
		return req
	}
	noNonce := func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
		r.RawQueryString, r.QueryStringParameters = "", nil
		return r
	}
	query := func(q string) func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
		return func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			r.RawQueryString, r.QueryStringParameters = q, nil
			return r
		}
	}

	cases := []t1exchange{
		{name: "challenge for a nonce", fn: assignFn, req: powEvent("challenge.apigw.json"), status: 200, want: wantHeader("Cache-Control", "public, max-age=300")},
		{name: "challenge without a nonce", fn: assignFn, req: powEvent("challenge.apigw.json", noNonce), status: 200, want: wantHeader("Cache-Control", "no-store")},
		{name: "challenge of an event asking for none", fn: assignFn, req: fx("challenge.apigw.json"), status: 200},
		{name: "challenge bad nonce", fn: assignFn, req: active("challenge.apigw.json", query("nonce=xyz")), status: 400, code: "invalid_nonce", specRejects: true},
		{name: "challenge two nonces", fn: assignFn, req: active("challenge.apigw.json", query("nonce=0f1e2d3c4b5a69788796a5b4c3d2e1f0&nonce=00112233445566778899aabbccddeeff")), status: 400, code: "invalid_nonce"},
		{name: "challenge bad event", fn: assignFn, req: fxOn("challenge.apigw.json", "a b"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "challenge POST", fn: assignFn, req: active("challenge.apigw.json", method("POST")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "challenge too large", fn: assignFn, req: active("challenge.apigw.json", body(big)), status: 413, code: "body_too_large", specRejects: true},
		{name: "challenge store down", on: deadStore, fn: assignFn, req: fx("challenge.apigw.json"), status: 503, code: "unavailable"},
		{name: "assign without a solution", fn: assignFn, req: powEvent("assign.apigw.json"), status: 428, code: "pow_required", want: wantBodyHas("challenge", true)},
		{name: "assign with a solution", fn: assignFn, req: paid, status: 201},
		{name: "assign with a garbled solution", fn: assignFn, req: powEvent("assign.apigw.json", header("altcha", "garbage")), status: 400, code: "pow_invalid", want: wantBodyHas("challenge", true)},
		{name: "assign with a spent solution", fn: assignFn, req: spent, status: 409, code: "pow_replayed", want: wantBodyHas("challenge", true)},
		{name: "assign with a solution from before a raise", fn: assignFn, req: tooEasy, status: 428, code: "pow_too_easy", want: wantBodyHas("challenge", true)},
		{name: "assign over the client bound", on: boundedClients, fn: assignFn, req: sameAddressAgain, status: 429, code: "too_many_arrivals", want: wantHeader("Retry-After", "600")},
		{name: "assign under the client bound", on: boundedClients, fn: assignFn, req: active("assign.apigw.json"), status: 201},

		// Scheduled sales (docs/draw.md).
		{name: "schedule", fn: adminFn, req: fx("admin-schedule.apigw.json"), status: 200},
		{name: "schedule an active event", fn: adminFn, req: active("admin-schedule.apigw.json"), status: 400, code: "invalid_schedule"},
		{name: "schedule without credentials", on: bearerAdmin, fn: adminFn, req: fx("admin-schedule.apigw.json"), status: 401, code: "unauthorized"},
		{name: "schedule after a ticket", fn: adminFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			scheduled(t, b, ev)
			if _, err := b.svc.AssignWithNonce(context.Background(), ev, "", []byte("0123456789abcdef")); err != nil {
				t.Fatal(err)
			}
			return at(t, "admin-schedule.apigw.json", ev)
		}, status: 409, code: "sale_has_tickets"},
		{name: "schedule a cancelled sale", fn: adminFn, req: cancelled("admin-schedule.apigw.json"), status: 409, code: "sale_cancelled"},
		{name: "cancel", fn: adminFn, req: sale("admin-cancel.apigw.json"), status: 200, want: wantBodyHas("cancelledAt", true)},
		{name: "cancel never scheduled", fn: adminFn, req: fx("admin-cancel.apigw.json"), status: 404, code: "not_found"},
		{name: "cancel a drawn sale", fn: adminFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			drawnSale(t, b, ev)
			return at(t, "admin-cancel.apigw.json", ev)
		}, status: 409, code: "sale_drawn"},
		{name: "cancel without credentials", on: bearerAdmin, fn: adminFn, req: sale("admin-cancel.apigw.json"), status: 401, code: "unauthorized"},
		{name: "assign to a cancelled sale", fn: assignFn, req: cancelled("assign.apigw.json", nonce), status: 409, code: "sale_cancelled"},
		{name: "check a cancelled sale's ticket", fn: checkFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			scheduled(t, b, ev)
			res, err := b.svc.AssignWithNonce(context.Background(), ev, "", []byte("0123456789abcdef"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.svc.Cancel(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			return withRequestID(at(t, "check.apigw.json", ev), res.RequestID)
		}, status: 409, code: "sale_cancelled"},
		{name: "draw document of a cancelled sale", fn: drawFn, req: cancelled("draw.apigw.json"), status: 200, want: wantBodyHas("cancelledAt", true)},
		{name: "assign pre-queue ticket", fn: assignFn, req: sale("assign.apigw.json", nonce), status: 201, want: wantBodyHas("ticketHash", true)},
		{name: "assign pre-queue without nonce", fn: assignFn, req: sale("assign.apigw.json"), status: 400, code: "client_nonce_required"},
		{name: "assign bad nonce", fn: assignFn, req: sale("assign.apigw.json", header("client-nonce", "short")), status: 400, code: "invalid_client_nonce", specRejects: true},
		{name: "check pre-queue ticket", fn: checkFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			scheduled(t, b, ev)
			res, err := b.svc.AssignWithNonce(context.Background(), ev, "", []byte("0123456789abcdef"))
			if err != nil {
				t.Fatal(err)
			}
			return withRequestID(at(t, "check.apigw.json", ev), res.RequestID)
		}, status: 200, want: wantBodyHas("sale", true)},
		{name: "check drawn ticket", fn: checkFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			rid, _ := drawnTicket(t, b, ev)
			return withRequestID(at(t, "check.apigw.json", ev), rid)
		}, status: 200, want: wantBodyHas("proof", true)},
		{name: "check drawn ticket admitted", fn: checkFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			return withRequestID(at(t, "check.apigw.json", ev), admittedTicket(t, b, ev))
		}, status: 200, want: func(t *testing.T, resp events.APIGatewayV2HTTPResponse) {
			wantBodyHas("token", true)(t, resp) // admitted, and with its proof
			wantBodyHas("proof", true)(t, resp)
		}},
		{name: "status of a sale", fn: statusFn, req: sale("status.apigw.json"), status: 200, want: wantBodyHas("sale", true)},
		{name: "draw document", fn: drawFn, req: sale("draw.apigw.json"), status: 200, want: wantHeader("Cache-Control", tier1api.DrawingCacheControl)},
		{name: "draw document drawn", fn: drawFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			drawnSale(t, b, ev)
			return at(t, "draw.apigw.json", ev)
		}, status: 200, want: wantHeader("Cache-Control", tier1api.DrawnCacheControl)},
		{name: "draw bad event", fn: drawFn, req: fxOn("draw.apigw.json", "a.b"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "draw never scheduled", fn: drawFn, req: fx("draw.apigw.json"), status: 404, code: "not_found"},
		{name: "draw chunk", fn: drawFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			drawnSale(t, b, ev)
			return at(t, "draw-chunk.apigw.json", ev)
		}, status: 200, want: wantHeader("Cache-Control", tier1api.DrawnCacheControl)},
		{name: "draw chunk not a number", fn: drawFn, req: sale("draw-chunk.apigw.json", chunk("x")), status: 400, code: "invalid_chunk", specRejects: true},
		{name: "draw chunk before the draw", fn: drawFn, req: sale("draw-chunk.apigw.json"), status: 409, code: "not_drawn"},
		{name: "draw proof", fn: drawFn, req: proofOfDrawn, status: 200},
		{name: "draw proof bad hash", fn: drawFn, req: sale("draw-proof.apigw.json", func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			r.PathParameters = map[string]string{"eventId": r.PathParameters["eventId"], "ticketHash": "XYZ"}
			return withPath(r, r.RawPath[:strings.LastIndex(r.RawPath, "/")+1]+"XYZ")
		}), status: 400, code: "invalid_ticket_hash", specRejects: true},
		{name: "draw proof of a hash not drawn", fn: drawFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			drawnSale(t, b, ev)
			return at(t, "draw-proof.apigw.json", ev)
		}, status: 404, code: "not_found"},

		// 200s and 201s
		{name: "assign position", fn: assignFn, req: active("assign.apigw.json"), status: 201, want: wantHeader("Idempotent-Replayed", "")},
		{name: "assign replay", fn: assignFn, req: replay, status: 201, want: wantHeader("Idempotent-Replayed", "true")},
		{name: "assign without idempotency key", fn: assignFn, req: active("assign.apigw.json", header("idempotency-key", "")), status: 201},
		{name: "assign never activated", fn: assignFn, req: fx("assign.apigw.json"), status: 200, want: wantCookie(true)},
		{name: "assign deactivated", fn: assignFn, req: deactivated, status: 200, want: wantCookie(true)},
		{name: "assign on vwr local", fn: localFn, req: active("assign.apigw.json"), status: 201},
		{name: "check waiting", fn: checkFn, req: placed(false), status: 200, want: wantCookie(false)},
		{name: "check admitted", fn: checkFn, req: placed(true), status: 200, want: wantCookie(true)},
		{name: "status active", fn: statusFn, req: active("status.apigw.json"), status: 200},
		{name: "status never activated", fn: statusFn, req: fx("status.apigw.json"), status: 200},
		{name: "activate", fn: adminFn, req: fx("admin-activate.apigw.json"), status: 200},
		{name: "activate defaults", fn: adminFn, req: func(t *testing.T, _ *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			return withBody(at(t, "admin-activate.apigw.json", ev), "")
		}, status: 200},
		{name: "activate with bearer", on: bearerAdmin, fn: adminFn, req: func(t *testing.T, _ *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			return withBearer(at(t, "admin-activate.apigw.json", ev), adminToken)
		}, status: 200},
		{name: "deactivate", fn: adminFn, req: active("admin-deactivate.apigw.json"), status: 200},
		{name: "pause", fn: adminFn, req: active("admin-pause.apigw.json"), status: 200},
		{name: "resume", fn: adminFn, req: active("admin-resume.apigw.json", body("{}"), header("content-type", "application/json")), status: 200},
		{name: "admin status", fn: adminFn, req: active("admin-status.apigw.json"), status: 200, want: wantBodyHas("queueAdmittedLastMinute", false)},
		{name: "admin status with queue admissions", fn: adminStatsFn, req: active("admin-status.apigw.json"), status: 200, want: wantBodyHas("queueAdmittedLastMinute", true)},
		{name: "advance", fn: adminFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			placed(false)(t, b, ev)
			return at(t, "admin-advance.apigw.json", ev)
		}, status: 200},
		{name: "batch", fn: adminFn, req: active("admin-batch.apigw.json"), status: 200, want: wantBodyField("batchSize", float64(250))},
		{name: "events", fn: adminFn, req: listed(), status: 200, want: wantListed},
		{name: "events on vwr local", fn: localFn, req: listed(), status: 200, want: wantListed},
		{name: "admin status of a scheduled sale", fn: adminFn, req: func(t *testing.T, b *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			if _, err := b.svc.Schedule(context.Background(), ev, epoch.Add(7*24*time.Hour), epoch.Add(24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			return at(t, "admin-status.apigw.json", ev)
		}, status: 200, want: func(t *testing.T, resp events.APIGatewayV2HTTPResponse) {
			var doc struct {
				Sale struct {
					Phase        string    `json:"phase"`
					PrequeueFrom time.Time `json:"prequeueFrom"`
				} `json:"sale"`
			}
			if err := json.Unmarshal([]byte(resp.Body), &doc); err != nil || doc.Sale.Phase != "prequeue" || !doc.Sale.PrequeueFrom.Equal(epoch.Add(24*time.Hour)) {
				t.Fatalf("admin status of a sale: %s (%v)", resp.Body, err)
			}
		}},

		// 400s
		{name: "assign bad event", fn: assignFn, req: fxOn("assign.apigw.json", "bad id!"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "assign long event", fn: assignFn, req: fxOn("assign.apigw.json", strings.Repeat("e", 65)), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "assign bad idempotency key", fn: assignFn, req: active("assign.apigw.json", header("idempotency-key", "not/valid")), status: 400, code: "invalid_idempotency_key", specRejects: true},
		{name: "check bad request id", fn: checkFn, req: func(t *testing.T, _ *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			return withRequestID(at(t, "check.apigw.json", ev), "a.b")
		}, status: 400, code: "invalid_request_id", specRejects: true},
		{name: "check bad event", fn: checkFn, req: fxOn("check.apigw.json", "a.b"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "status bad event", fn: statusFn, req: fxOn("status.apigw.json", "b.d"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "activate bad event", fn: adminFn, req: fxOn("admin-activate.apigw.json", "x y"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "activate not json", fn: adminFn, req: active("admin-activate.apigw.json", body("{shards:4")), status: 400, code: "invalid_body", specRejects: true},
		{name: "activate unknown field", fn: adminFn, req: active("admin-activate.apigw.json", body(`{"shards":4,"owner":"me"}`)), status: 400, code: "invalid_body", specRejects: true},
		{name: "activate text/plain", fn: adminFn, req: active("admin-activate.apigw.json", header("content-type", "text/plain")), status: 400, code: "invalid_body", specRejects: true},
		// JSON Schema cannot see a repeated key; the strict decoder can.
		{name: "activate duplicate key", fn: adminFn, req: active("admin-activate.apigw.json", body(`{"shards":4,"shards":2}`)), status: 400, code: "invalid_body"},
		{name: "activate too many shards", fn: adminFn, req: active("admin-activate.apigw.json", body(`{"shards":65,"batchSize":10}`)), status: 400, code: "invalid_config", specRejects: true},
		{name: "activate negative batch", fn: adminFn, req: active("admin-activate.apigw.json", body(`{"shards":1,"batchSize":-1}`)), status: 400, code: "invalid_config", specRejects: true},
		// Only the store knows positions exist.
		{name: "activate shard change", fn: adminFn, req: shardChange, status: 400, code: "invalid_config"},
		{name: "deactivate bad event", fn: adminFn, req: fxOn("admin-deactivate.apigw.json", "x.y"), status: 400, code: "invalid_event_id", specRejects: true},
		{name: "pause with body", fn: adminFn, req: active("admin-pause.apigw.json", body(`{"paused":false}`)), status: 400, code: "invalid_body", specRejects: true},
		{name: "resume with array", fn: adminFn, req: active("admin-resume.apigw.json", body(`[]`), header("content-type", "application/json")), status: 400, code: "invalid_body", specRejects: true},
		{name: "admin status with body", fn: adminFn, req: active("admin-status.apigw.json", body(`{"x":1}`)), status: 400, code: "invalid_body", specRejects: true},
		{name: "advance zero", fn: adminFn, req: active("admin-advance.apigw.json", body(`{"by":0}`)), status: 400, code: "invalid_config", specRejects: true},
		{name: "advance without body", fn: adminFn, req: active("admin-advance.apigw.json", body("")), status: 400, code: "invalid_config", specRejects: true},
		// JSON Schema counts 1e3 as the integer 1000; the decoder wants it written as one.
		{name: "advance exponent", fn: adminFn, req: active("admin-advance.apigw.json", body(`{"by":1e3}`)), status: 400, code: "invalid_body"},
		{name: "advance string", fn: adminFn, req: active("admin-advance.apigw.json", body(`{"by":"10"}`)), status: 400, code: "invalid_body", specRejects: true},
		{name: "batch zero", fn: adminFn, req: active("admin-batch.apigw.json", body(`{"batchSize":0}`)), status: 400, code: "invalid_config", specRejects: true},
		{name: "batch without body", fn: adminFn, req: active("admin-batch.apigw.json", body("")), status: 400, code: "invalid_config", specRejects: true},
		{name: "batch unknown field", fn: adminFn, req: active("admin-batch.apigw.json", body(`{"batchSize":5,"paused":false}`)), status: 400, code: "invalid_body", specRejects: true},
		{name: "events limit zero", fn: adminFn, req: listed(query("limit=0")), status: 400, code: "invalid_limit", specRejects: true},
		{name: "events limit not a number", fn: adminFn, req: listed(query("limit=ten")), status: 400, code: "invalid_limit", specRejects: true},
		{name: "events with body", fn: adminFn, req: listed(body(`{"x":1}`)), status: 400, code: "invalid_body", specRejects: true},

		// 401s
		{name: "activate without credentials", on: bearerAdmin, fn: adminFn, req: active("admin-activate.apigw.json", withoutIAM), status: 401, code: "unauthorized", specRejects: true},
		{name: "deactivate wrong bearer", on: bearerAdmin, fn: adminFn, req: active("admin-deactivate.apigw.json", bearerOf(adminToken+"x")), status: 401, code: "unauthorized"},
		{name: "pause basic scheme", on: bearerAdmin, fn: adminFn, req: active("admin-pause.apigw.json", withoutIAM, header("authorization", "Basic "+adminToken)), status: 401, code: "unauthorized", specRejects: true},
		// vwr local never fills in an IAM context, so a signature is not enough.
		{name: "resume SigV4 on vwr local", on: bearerAdmin, fn: adminFn, req: active("admin-resume.apigw.json"), status: 401, code: "unauthorized"},
		{name: "admin status bearer disabled", fn: adminFn, req: active("admin-status.apigw.json", bearerOf("anything")), status: 401, code: "unauthorized"},
		{name: "advance without credentials", fn: adminFn, req: active("admin-advance.apigw.json", withoutIAM), status: 401, code: "unauthorized", specRejects: true},
		{name: "batch wrong bearer", on: bearerAdmin, fn: adminFn, req: active("admin-batch.apigw.json", bearerOf(adminToken+"x")), status: 401, code: "unauthorized"},
		{name: "events without credentials", on: bearerAdmin, fn: adminFn, req: listed(withoutIAM), status: 401, code: "unauthorized", specRejects: true},

		// 404s
		{name: "check unknown request id", fn: checkFn, req: active("check.apigw.json"), status: 404, code: "not_found"},
		{name: "check request id of another event", fn: checkFn, req: otherEvent, status: 404, code: "not_found"},
		{name: "deactivate never activated", fn: adminFn, req: fx("admin-deactivate.apigw.json"), status: 404, code: "not_found"},
		{name: "pause never activated", fn: adminFn, req: fx("admin-pause.apigw.json"), status: 404, code: "not_found"},
		{name: "resume never activated", fn: adminFn, req: fx("admin-resume.apigw.json"), status: 404, code: "not_found"},
		{name: "admin status never activated", fn: adminFn, req: fx("admin-status.apigw.json"), status: 404, code: "not_found"},
		{name: "advance never activated", fn: adminFn, req: fx("admin-advance.apigw.json"), status: 404, code: "not_found"},
		{name: "batch never activated", fn: adminFn, req: fx("admin-batch.apigw.json"), status: 404, code: "not_found"},
		{name: "assign without event", fn: assignFn, req: fxOn("assign.apigw.json", ""), status: 404, code: "not_found", unrouted: true},
		{name: "unknown admin route", fn: adminFn, req: func(t *testing.T, _ *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			return withPath(at(t, "admin-status.apigw.json", ev), "/vwr/admin/purge/"+ev)
		}, status: 404, code: "not_found", unrouted: true},
		{name: "unknown path on vwr local", fn: localFn, req: func(t *testing.T, _ *testBundle, ev string) events.APIGatewayV2HTTPRequest {
			return withPath(at(t, "status.apigw.json", ev), "/vwr/queue/"+ev)
		}, status: 404, code: "not_found", unrouted: true},

		// 405s: every path once.
		{name: "assign GET", fn: assignFn, req: active("assign.apigw.json", method("GET")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "check POST", fn: checkFn, req: active("check.apigw.json", method("POST")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "status DELETE", fn: statusFn, req: active("status.apigw.json", method("DELETE")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "activate GET", fn: adminFn, req: active("admin-activate.apigw.json", method("GET")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "deactivate PUT", fn: adminFn, req: active("admin-deactivate.apigw.json", method("PUT")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "pause GET", fn: adminFn, req: active("admin-pause.apigw.json", method("GET")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "resume PATCH", fn: adminFn, req: active("admin-resume.apigw.json", method("PATCH")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "admin status POST", fn: adminFn, req: active("admin-status.apigw.json", method("POST")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "advance GET on vwr local", fn: localFn, req: active("admin-advance.apigw.json", method("GET")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "batch GET", fn: adminFn, req: active("admin-batch.apigw.json", method("GET")), status: 405, code: "method_not_allowed", unrouted: true},
		{name: "events POST", fn: adminFn, req: listed(method("POST")), status: 405, code: "method_not_allowed", unrouted: true},

		// 413s: every route, GET routes included. Only activate and advance
		// document a body the size of which the document cannot limit.
		{name: "assign too large", fn: assignFn, req: active("assign.apigw.json", body(big)), status: 413, code: "body_too_large", specRejects: true},
		{name: "assign too large, base64", fn: assignFn, req: active("assign.apigw.json", func(r events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(big)), true
			return r
		}), status: 413, code: "body_too_large", specRejects: true},
		{name: "check too large", fn: checkFn, req: active("check.apigw.json", body(big)), status: 413, code: "body_too_large", specRejects: true},
		{name: "status too large", fn: statusFn, req: active("status.apigw.json", body(big)), status: 413, code: "body_too_large", specRejects: true},
		{name: "activate too large", fn: adminFn, req: active("admin-activate.apigw.json", body(`{"shards":1,"pad":"`+big+`"}`)), status: 413, code: "body_too_large", specRejects: true},
		{name: "deactivate too large", fn: adminFn, req: active("admin-deactivate.apigw.json", body(big)), status: 413, code: "body_too_large", specRejects: true},
		{name: "pause too large", fn: adminFn, req: active("admin-pause.apigw.json", body(big)), status: 413, code: "body_too_large", specRejects: true},
		{name: "resume too large", fn: adminFn, req: active("admin-resume.apigw.json", body(big)), status: 413, code: "body_too_large", specRejects: true},
		{name: "admin status too large", fn: adminFn, req: active("admin-status.apigw.json", body(big)), status: 413, code: "body_too_large", specRejects: true},
		{name: "advance too large", fn: adminFn, req: active("admin-advance.apigw.json", body(`{"by":1,"pad":"`+big+`"}`)), status: 413, code: "body_too_large", specRejects: true},
		{name: "batch too large", fn: adminFn, req: active("admin-batch.apigw.json", body(`{"batchSize":1,"pad":"`+big+`"}`)), status: 413, code: "body_too_large", specRejects: true},
		{name: "events too large", fn: adminFn, req: listed(body(big)), status: 413, code: "body_too_large", specRejects: true},

		// 503s
		{name: "assign store down", on: deadStore, fn: assignFn, req: fx("assign.apigw.json"), status: 503, code: "unavailable"},
		{name: "assign throttled", on: throttledStore, fn: assignFn, req: active("assign.apigw.json"), status: 503, code: "throttled"},
		{name: "check store down", on: deadStore, fn: checkFn, req: fx("check.apigw.json"), status: 503, code: "unavailable"},
		{name: "status store down", on: deadStore, fn: statusFn, req: fx("status.apigw.json"), status: 503, code: "unavailable"},
		{name: "activate store down", on: deadStore, fn: adminFn, req: fx("admin-activate.apigw.json"), status: 503, code: "unavailable"},
		{name: "deactivate store down", on: deadStore, fn: adminFn, req: fx("admin-deactivate.apigw.json"), status: 503, code: "unavailable"},
		{name: "pause store down", on: deadStore, fn: adminFn, req: fx("admin-pause.apigw.json"), status: 503, code: "unavailable"},
		{name: "resume store down", on: deadStore, fn: adminFn, req: fx("admin-resume.apigw.json"), status: 503, code: "unavailable"},
		{name: "admin status store down", on: deadStore, fn: adminFn, req: fx("admin-status.apigw.json"), status: 503, code: "unavailable"},
		{name: "advance store down", on: deadStore, fn: adminFn, req: fx("admin-advance.apigw.json"), status: 503, code: "unavailable"},
		{name: "batch store down", on: deadStore, fn: adminFn, req: fx("admin-batch.apigw.json"), status: 503, code: "unavailable"},
		{name: "events store down", on: deadStore, fn: adminFn, req: func(t *testing.T, _ *testBundle, _ string) events.APIGatewayV2HTTPRequest {
			return fixture(t, "admin-events.apigw.json")
		}, status: 503, code: "unavailable"},
	}
	t.Run("exchanges", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				b := bundles[tc.on]
				ev := testenv.UniqueID(t)
				resp, matched, reqErr := send(t, c, tc.fn(b), tc.req(t, b, ev))
				if tc.code != "" {
					wantError(t, resp, tc.status, tc.code)
				} else {
					wantStatus(t, resp, tc.status)
				}
				if tc.want != nil {
					tc.want(t, resp)
				}
				switch {
				case matched == tc.unrouted:
					t.Errorf("the document has an operation for this request: %v, want %v", matched, !tc.unrouted)
				case matched && tc.specRejects && reqErr == nil:
					t.Errorf("docs/tier1-openapi.yaml accepts the request the API refused with %s", tc.code)
				case matched && !tc.specRejects && reqErr != nil:
					t.Errorf("docs/tier1-openapi.yaml refuses the request: %v", reqErr)
				}
			})
		}
	})

	if missing := c.Unanswered(); len(missing) > 0 {
		t.Errorf("docs/tier1-openapi.yaml promises answers no exchange produced:\n  %s", strings.Join(missing, "\n  "))
	}
}

// solvedFor asks the Service for a challenge of ev, as an arrival without a
// solution would, and solves it.
func solvedFor(t *testing.T, b *testBundle, ev string) string {
	t.Helper()
	_, err := b.svc.Enter(context.Background(), tier1.Arrival{EventID: ev})
	var pe *tier1.PowError
	if !errors.As(err, &pe) {
		t.Fatalf("Enter without a solution: %v", err)
	}
	return storetest.Solve(t, pe.Challenge)
}
