package tier1api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/emf"
	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
	"github.com/vwr-go/vwr/internal/tier1/tier1app"
	"github.com/vwr-go/vwr/internal/token"
)

// fixtureEvent is the event id every events/*.json file uses.
const fixtureEvent = "concert-2026"

const adminToken = "test-admin-token-0123456789"

var epoch = time.Date(2026, 11, 22, 1, 30, 0, 0, time.UTC)

// testBundle is one isolated Tier 1 stack: a Service on the shared real
// redis-server under its own key prefix, a manual clock, and handlers whose
// logs and metrics are captured.
type testBundle struct {
	clk      *clock.Manual
	keys     *token.KeyRing
	store    tier1.Store
	svc      *tier1.Service
	api      *tier1api.API
	assign   http.Handler // each function's handler, as its Lambda serves it (assign: with the challenge)
	check    http.Handler
	status   http.Handler
	admin    http.Handler
	draw     http.Handler
	adv      *tier1api.Advancer
	beacon   tier1.DrawConfig // the local beacon stand-in the service draws with
	logs     *lambdatest.LogBuffer
	metrics  *lambdatest.LogBuffer
	deps     tier1api.Deps
	adminOpt tier1api.AdminOptions
}

type setupOpts struct {
	store    func(tier1.Store) tier1.Store // wraps the Redis store (fault injection)
	rdb      redis.UniversalClient         // replaces the test Redis (outage tests)
	trustIAM bool
	token    string
	insecure bool
	// clientLimit > 0 bounds arrivals per CloudFront-Viewer-Address (per
	// 10-minute window), as the AWS templates configure it.
	clientLimit int64
	// originVerify is Deps.OriginVerify.
	originVerify string
}

func setup(t *testing.T, o setupOpts) *testBundle {
	t.Helper()
	rdb := o.rdb
	if rdb == nil {
		c := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
		t.Cleanup(func() { _ = c.Close() })
		rdb = c
	}
	var store tier1.Store = redisstore.New(rdb, redisstore.WithPrefix(testenv.UniqueID(t)+":"))
	if o.store != nil {
		store = o.store(store)
	}
	keys, err := token.NewKeyRing("t1", []byte(strings.Repeat("s", 32)))
	if err != nil {
		t.Fatal(err)
	}
	b := &testBundle{clk: clock.NewManual(epoch), keys: keys, store: store, logs: &lambdatest.LogBuffer{}, metrics: &lambdatest.LogBuffer{}}
	// The beacon's own clock stands far ahead: every round is out.
	_, b.beacon = storetest.Beacon(t, clock.NewManual(epoch.AddDate(1, 0, 0)))
	b.svc = tier1.New(store, keys, b.clk, tier1.Config{
		Clients:   tier1.ClientBound{Limit: o.clientLimit},
		Draw:      b.beacon,
		TickEvery: 10 * time.Second,
		Sleep: func(ctx context.Context, d time.Duration) error {
			b.clk.Advance(d)
			return ctx.Err()
		},
	})
	b.deps = tier1api.Deps{
		Service:        b.svc,
		Clock:          b.clk,
		Logger:         newJSONLogger(b.logs),
		Metrics:        emf.New(b.metrics, tier1api.Namespace, tier1api.MetricDimension, b.clk.Now),
		InsecureCookie: o.insecure,
		OriginVerify:   o.originVerify,
	}
	if o.clientLimit > 0 {
		b.deps.ClientHeader = tier1api.ViewerAddressHeader
	}
	b.adminOpt = tier1api.AdminOptions{Token: o.token}
	if o.trustIAM {
		b.adminOpt.Trusted = tier1app.IAMCaller
	}
	b.api = tier1api.New(b.deps, b.adminOpt)
	b.assign = b.api.Handler(tier1api.AssignRoutes...)
	b.check = b.api.Handler(tier1api.RouteCheck)
	b.status = b.api.Handler(tier1api.RouteStatus)
	b.admin = b.api.Handler(tier1api.AdminRoutes...)
	b.draw = b.api.Handler(tier1api.DrawRoutes...)
	b.adv = tier1api.NewAdvancer(b.deps, tier1api.AdvancerOptions{Ticks: 3})
	return b
}

// fixture loads events/<name> as an HTTP API v2 request.
func fixture(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return req
}

// withRequestID points a check event at another requestId, as API Gateway
// would fill it in for that path.
func withRequestID(req events.APIGatewayV2HTTPRequest, rid string) events.APIGatewayV2HTTPRequest {
	old := req.PathParameters["requestId"]
	req.PathParameters = map[string]string{"eventId": req.PathParameters["eventId"], "requestId": rid}
	req.RawPath = strings.Replace(req.RawPath, old, url.PathEscape(rid), 1)
	req.RequestContext.HTTP.Path = req.RawPath
	return req
}

func withEvent(req events.APIGatewayV2HTTPRequest, ev string) events.APIGatewayV2HTTPRequest {
	old := req.PathParameters["eventId"]
	params := map[string]string{}
	for k, v := range req.PathParameters {
		params[k] = v
	}
	params["eventId"] = ev
	req.PathParameters = params
	req.RawPath = strings.Replace(req.RawPath, old, url.PathEscape(ev), 1)
	req.RequestContext.HTTP.Path = req.RawPath
	return req
}

func withHeader(req events.APIGatewayV2HTTPRequest, k, v string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{}
	for hk, hv := range req.Headers {
		h[hk] = hv
	}
	if v == "" {
		delete(h, k)
	} else {
		h[k] = v
	}
	req.Headers = h
	return req
}

func withoutIAM(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	req.RequestContext.Authorizer = nil
	return withHeader(req, "authorization", "")
}

func withBearer(req events.APIGatewayV2HTTPRequest, tok string) events.APIGatewayV2HTTPRequest {
	return withHeader(withoutIAM(req), "authorization", "Bearer "+tok)
}

// call runs req through h behind the same adapter the Lambdas use
// (aws-lambda-go-api-proxy's httpadapter.NewV2), so the tests see what API
// Gateway would answer.
func call(t *testing.T, h http.Handler, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := httpadapter.NewV2(h).ProxyWithContext(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: the adapter failed (API Gateway would answer an opaque 500): %v", req.RouteKey, err)
	}
	return resp
}

func decode[T any](t *testing.T, resp events.APIGatewayV2HTTPResponse) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil {
		t.Fatalf("decode %d %q: %v", resp.StatusCode, resp.Body, err)
	}
	return v
}

func wantStatus(t *testing.T, resp events.APIGatewayV2HTTPResponse, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, resp.Body)
	}
}

type errorDoc struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func wantError(t *testing.T, resp events.APIGatewayV2HTTPResponse, status int, code string) {
	t.Helper()
	wantStatus(t, resp, status)
	e := decode[errorDoc](t, resp)
	if e.Code != code || e.Error == "" {
		t.Fatalf("error body %+v, want code %q and a message", e, code)
	}
	if ct := resp.Headers["Content-Type"]; ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
}

type adminDoc struct {
	EventID        string  `json:"eventId"`
	Active         bool    `json:"active"`
	Paused         bool    `json:"paused"`
	Shards         int     `json:"shards"`
	BatchSize      int64   `json:"batchSize"`
	ServingCounter int64   `json:"servingCounter"`
	MaxAssigned    int64   `json:"maxAssigned"`
	Assigned       int64   `json:"assigned"`
	Admitted       int64   `json:"admitted"`
	Waiting        int64   `json:"waiting"`
	ShardCounters  []int64 `json:"shardCounters"`
}

type assignDoc struct {
	Active         bool   `json:"active"`
	Admitted       bool   `json:"admitted"`
	Token          string `json:"token"`
	RequestID      string `json:"requestId"`
	EventID        string `json:"eventId"`
	Position       int64  `json:"position"`
	ServingCounter int64  `json:"servingCounter"`
	PeopleAhead    int64  `json:"peopleAhead"`
	EstimatedWait  int    `json:"estimatedWait"`
	NextPoll       int    `json:"nextPoll"`
}

type checkDoc struct {
	Admitted       bool   `json:"admitted"`
	Token          string `json:"token"`
	Position       int64  `json:"position"`
	ServingCounter int64  `json:"servingCounter"`
	PeopleAhead    int64  `json:"peopleAhead"`
	EstimatedWait  int    `json:"estimatedWait"`
	NextPoll       int    `json:"nextPoll"`
}

type statusDoc struct {
	EventID            string    `json:"eventId"`
	Active             bool      `json:"active"`
	ServingCounter     int64     `json:"servingCounter"`
	MaxAssigned        int64     `json:"maxAssigned"`
	AdmitRatePerMinute int64     `json:"admitRatePerMinute"`
	UpdatedAt          time.Time `json:"updatedAt"`
}

// activate turns fixtureEvent (or ev) on through the Service directly.
func (b *testBundle) activate(t *testing.T, ev string, shards int, batch int64) {
	t.Helper()
	if _, err := b.svc.Activate(context.Background(), ev, shards, batch); err != nil {
		t.Fatalf("activate: %v", err)
	}
}

// emf returns the EMF documents written so far.
func (b *testBundle) emf(t *testing.T) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.metrics.String()), "\n") {
		if line == "" {
			continue
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("EMF line %q: %v", line, err)
		}
		docs = append(docs, d)
	}
	return docs
}

// metricSum adds up metric name for event ev over every EMF line.
func (b *testBundle) metricSum(t *testing.T, ev, name string) (sum float64, n int) {
	t.Helper()
	for _, d := range b.emf(t) {
		if d["EventId"] != ev {
			continue
		}
		if v, ok := d[name].(float64); ok {
			sum += v
			n++
		}
	}
	return sum, n
}
