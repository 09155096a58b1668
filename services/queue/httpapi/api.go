// Package httpapi is the Tier 2 queue's JSON API on net/http: check, status,
// heartbeat and leave for visitors, threshold/stats/events/ranking for operators,
// plus /healthz and /metrics. It turns requests into queue.Service calls,
// resolves who is asking (verified Tier 1 pass or a configured trusted
// header), and maps domain errors to HTTP status in exactly one place
// (errors.go). It holds no queue logic of its own.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/gate"
)

// Queue is the port the API drives. *queue.Service satisfies it.
type Queue interface {
	Check(ctx context.Context, eventID string, who queue.Identity) (queue.View, error)
	Status(ctx context.Context, eventID string, who queue.Identity) (queue.View, error)
	Leave(ctx context.Context, eventID string, who queue.Identity) (bool, error)
	SetThreshold(ctx context.Context, eventID string, n int64) error
	Stats(ctx context.Context, eventID string) (queue.Stats, error)
	Events(ctx context.Context, limit int) ([]queue.Stats, bool, error)
	Ranking(ctx context.Context, period string, limit int) ([]queue.RankEntry, error)
	Ping(ctx context.Context) error
}

var _ Queue = (*queue.Service)(nil)

// Names of the cookies the API reads and writes (the seed's names). The
// entry cookie is the one the gate reads; both names live in internal/token.
const (
	Tier1Cookie = token.Tier1Cookie
	EntryCookie = gate.TokenCookie
)

// Config tunes the API. The zero value serves visitors only through a
// verified Tier 1 pass and keeps the admin endpoints disabled.
type Config struct {
	// Tier1Keys verify Tier 1 passes. Nil means no pass is ever accepted.
	Tier1Keys *token.KeyRing
	// EntryKeys verify entry tokens, which alone identify a holder renewing
	// their slot (status, heartbeat). Nil: only passes and the header do.
	EntryKeys *token.KeyRing
	// UserHeader, when set, names a header carrying the user id, trusted
	// because an authenticating gateway in front of the service sets it.
	UserHeader string
	// AdminToken guards /api/queue/admin/*. Empty disables those endpoints:
	// they are not registered and answer 404 like any unknown path.
	AdminToken string
	// CookieSecure adds Secure to the entry-token cookie.
	CookieSecure bool
	// Clock tells "now" for token expiry; defaults to the wall clock.
	Clock clock.Clock
	// Logger receives the request log (see Log) and the API's warnings;
	// defaults to slog.Default().
	Logger *slog.Logger
	// Log decides each request's log level: debug when healthy, info when
	// slow (LOG_SLOW_MS), error on a 5xx.
	Log applog.Config
	// Metrics records request counts and queue gauges; nil disables them.
	Metrics *Metrics
}

// API serves the Tier 2 endpoints.
type API struct {
	q   Queue
	cfg Config
}

// New returns an API over q.
func New(q Queue, cfg Config) *API {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &API{q: q, cfg: cfg}
}

// route is one endpoint: the ServeMux pattern and its handler.
type route struct {
	pattern string
	admin   bool
	h       func(w http.ResponseWriter, r *http.Request) error
}

func (a *API) routes() []route {
	return []route{
		{pattern: "POST /api/queue/check/{eventId}", h: a.check},
		{pattern: "GET /api/queue/status/{eventId}", h: a.status},
		{pattern: "POST /api/queue/heartbeat/{eventId}", h: a.status},
		{pattern: "POST /api/queue/leave/{eventId}", h: a.leave},
		{pattern: "PUT /api/queue/admin/threshold/{eventId}", admin: true, h: a.setThreshold},
		{pattern: "GET /api/queue/admin/stats/{eventId}", admin: true, h: a.stats},
		{pattern: "GET /api/queue/admin/events", admin: true, h: a.events},
		{pattern: "GET /api/queue/admin/ranking", admin: true, h: a.ranking},
		{pattern: "GET /healthz", h: a.healthz},
		{pattern: "GET /livez", h: a.livez},
	}
}

// Routes lists the ServeMux patterns ("METHOD /path") the API registers,
// /metrics included. docs/openapi.yaml is tested against it.
func (a *API) Routes() []string {
	var out []string
	for _, rt := range a.enabledRoutes() {
		out = append(out, rt.pattern)
	}
	if a.cfg.Metrics != nil {
		out = append(out, metricsPattern)
	}
	return out
}

const metricsPattern = "GET /metrics"

// enabledRoutes drops the admin endpoints when no admin token is configured,
// so they answer the same JSON 404 as a path that never existed.
func (a *API) enabledRoutes() []route {
	var out []route
	for _, rt := range a.routes() {
		if rt.admin && a.cfg.AdminToken == "" {
			continue
		}
		out = append(out, rt)
	}
	return out
}

// Register adds the API's routes to mux, with a JSON 405 (and Allow) for a
// known path asked with another method. It does not claim "/"; use NotFound
// (or Handler, which does) for the JSON 404 fallback.
func (a *API) Register(mux *http.ServeMux) {
	var routes []jsonhttp.Route
	for _, rt := range a.enabledRoutes() {
		routes = append(routes, jsonhttp.Route{Pattern: rt.pattern, Handler: a.endpoint(rt)})
	}
	if a.cfg.Metrics != nil {
		routes = append(routes, jsonhttp.Route{Pattern: metricsPattern, Handler: a.cfg.Metrics.handler()})
	}
	jsonhttp.Register(mux, routes, a.instrument)
}

// Handler returns a ServeMux with the API's routes and a JSON 404 for
// everything else: the whole Tier 2 HTTP surface.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	a.Register(mux)
	mux.Handle("/", a.NotFound())
	return mux
}

// NotFound answers 404 JSON for unknown routes, counted and logged like any
// other request.
func (a *API) NotFound() http.Handler { return a.instrument("not_found", jsonhttp.NotFound()) }

// endpoint runs what every route shares: admin auth, the body limit (every
// endpoint rejects an oversized body with 413 before touching the store,
// including those that ignore their body), then the handler.
func (a *API) endpoint(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt.admin {
			if err := a.authorizeAdmin(r); err != nil {
				a.fail(w, err)
				return
			}
		}
		if _, err := jsonhttp.ReadBody(r); err != nil {
			a.fail(w, err)
			return
		}
		if err := rt.h(w, r); err != nil {
			a.fail(w, err)
		}
	})
}

func (a *API) now() time.Time { return a.cfg.Clock.Now() }
