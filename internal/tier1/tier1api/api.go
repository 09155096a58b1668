package tier1api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/tier1"
)

// Route patterns (Go 1.22 ServeMux syntax, which is also API Gateway's route
// syntax with the method in front). template.yaml and the CDK app declare
// exactly these.
const (
	RouteAssign          = "POST /vwr/assign/{eventId}"
	RouteChallenge       = "GET /vwr/challenge/{eventId}"
	RouteCheck           = "GET /vwr/check/{eventId}/{requestId}"
	RouteStatus          = "GET /vwr/status/{eventId}"
	RouteAdminActivate   = "POST /vwr/admin/activate/{eventId}"
	RouteAdminDeactivate = "POST /vwr/admin/deactivate/{eventId}"
	RouteAdminPause      = "POST /vwr/admin/pause/{eventId}"
	RouteAdminResume     = "POST /vwr/admin/resume/{eventId}"
	RouteAdminStatus     = "GET /vwr/admin/status/{eventId}"
	RouteAdminAdvance    = "POST /vwr/admin/advance/{eventId}"
	RouteAdminSchedule   = "POST /vwr/admin/schedule/{eventId}"
	RouteAdminCancel     = "POST /vwr/admin/cancel/{eventId}"
	RouteAdminBatch      = "POST /vwr/admin/batch/{eventId}"
	RouteAdminEvents     = "GET /vwr/admin/events"
	RouteDraw            = "GET /vwr/draw/{eventId}"
	RouteDrawChunk       = "GET /vwr/draw/{eventId}/chunks/{chunk}"
	RouteDrawProof       = "GET /vwr/draw/{eventId}/proof/{ticketHash}"
)

// AssignRoutes are the assign function's routes: the proof-of-work
// challenge is signed with the keys only it holds.
var AssignRoutes = []string{RouteAssign, RouteChallenge}

// DrawRoutes are the public draw routes, served by one function.
var DrawRoutes = []string{RouteDraw, RouteDrawChunk, RouteDrawProof}

// AdminRoutes are the operator routes, served by one function.
var AdminRoutes = []string{
	RouteAdminActivate, RouteAdminDeactivate, RouteAdminPause,
	RouteAdminResume, RouteAdminStatus, RouteAdminAdvance, RouteAdminSchedule, RouteAdminCancel,
	RouteAdminBatch, RouteAdminEvents,
}

// OriginVerifyHeader is the header CloudFront adds on its way to the API
// (infra: the origin custom header; gate.OriginVerifyHeader for the site).
const OriginVerifyHeader = "X-Vwr-Origin-Verify"

// Deps is what every handler shares.
type Deps struct {
	Service *tier1.Service
	// Clock sets cookie lifetimes; default the system clock.
	Clock clock.Clock
	// Logger receives the request log (see Log); default slog.Default().
	Logger *slog.Logger
	// Log decides each request's log level: debug when healthy, info when
	// slow (LOG_SLOW_MS), error on a 5xx.
	Log applog.Config
	// RequestID, when set, names the request in its log line (the Lambda
	// request id on AWS).
	RequestID func(*http.Request) string
	// Metrics receives counters and gauges; nil records none.
	Metrics Metrics
	// QueueAdmissions, when set, adds the queue's measured admissions to the
	// admin status (VWR_ADMITTED_STATS_TABLE on the admin function).
	QueueAdmissions QueueAdmissions
	// InsecureCookie drops Secure from the urr-vwr-token cookie. Only vwr
	// local, served over plain http on loopback, sets it.
	InsecureCookie bool
	// OriginVerify, when set, is required of every visitor route as the
	// X-Vwr-Origin-Verify header, which the front door's CloudFront adds on
	// its way to the API: a call straight to the execute-api endpoint (past
	// the WAF and its rate limit on assign) is refused before the store is
	// touched. Admin routes are exempt: they are signed with SigV4 and sent
	// to the API directly.
	OriginVerify string
	// ClientHeader names the header that carries the client's address,
	// set by something the deployment trusts (VWR_TIER1_CLIENT_IP_HEADER;
	// CloudFront-Viewer-Address behind CloudFront). Empty: no per-client
	// bound, as a handler cannot tell clients apart by itself.
	ClientHeader string
}

func (d Deps) withDefaults() Deps {
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = noMetrics{}
	}
	return d
}

// QueueAdmissions reads the Tier 2 admissions the SQS consumer counted
// (internal/admitted/dynamostore implements it).
type QueueAdmissions interface {
	// AdmittedLastMinute is eventID's admissions in the last complete minute.
	AdmittedLastMinute(ctx context.Context, eventID string) (int64, error)
}

// AdminOptions decide who may call the admin routes.
type AdminOptions struct {
	// Token is the bearer token (VWR_ADMIN_TOKEN). Empty disables bearer auth.
	Token string
	// Trusted reports whether something in front of the handler already
	// authenticated the caller: API Gateway's IAM authorizer on the AWS_IAM
	// routes, which only the Lambda wiring can see. Nil trusts nobody, so
	// vwr local needs the bearer token.
	Trusted func(*http.Request) bool
}

// API serves Tier 1's routes.
type API struct {
	d         Deps
	admin     AdminOptions
	adminHash [sha256.Size]byte
	routes    map[string]http.Handler
}

// New returns the API over d.
func New(d Deps, admin AdminOptions) *API {
	d = d.withDefaults()
	a := &API{d: d, admin: admin, adminHash: sha256.Sum256([]byte(admin.Token))}
	a.routes = map[string]http.Handler{
		RouteAssign:          a.public(RouteAssign, a.assign),
		RouteChallenge:       a.public(RouteChallenge, a.challenge),
		RouteCheck:           a.public(RouteCheck, a.check),
		RouteStatus:          a.public(RouteStatus, a.status),
		RouteAdminActivate:   a.operator(RouteAdminActivate, a.activate),
		RouteAdminDeactivate: a.operator(RouteAdminDeactivate, a.settings(a.d.Service.Deactivate)),
		RouteAdminPause:      a.operator(RouteAdminPause, a.settings(a.d.Service.Pause)),
		RouteAdminResume:     a.operator(RouteAdminResume, a.settings(a.d.Service.Resume)),
		RouteAdminStatus:     a.operator(RouteAdminStatus, a.adminStatus),
		RouteAdminAdvance:    a.operator(RouteAdminAdvance, a.advance),
		RouteAdminSchedule:   a.operator(RouteAdminSchedule, a.schedule),
		RouteAdminCancel:     a.operator(RouteAdminCancel, a.cancel),
		RouteAdminBatch:      a.operator(RouteAdminBatch, a.batch),
		RouteAdminEvents:     a.serve(RouteAdminEvents, true, false, a.events),
		RouteDraw:            a.public(RouteDraw, a.drawDoc),
		RouteDrawChunk:       a.public(RouteDrawChunk, a.drawChunk),
		RouteDrawProof:       a.public(RouteDrawProof, a.drawProof),
	}
	return a
}

// Routes lists every route pattern, public ones first.
func (a *API) Routes() []string {
	out := append([]string{RouteAssign, RouteChallenge, RouteCheck, RouteStatus}, DrawRoutes...)
	return append(out, AdminRoutes...)
}

// Handler serves the given routes (all when none are named), with JSON 404
// and 405 answers for anything else. One Lambda serves one route (admin: all
// of AdminRoutes); vwr local serves them all. An unknown pattern is a wiring
// bug and panics.
func (a *API) Handler(patterns ...string) http.Handler {
	if len(patterns) == 0 {
		patterns = a.Routes()
	}
	routes := make([]jsonhttp.Route, 0, len(patterns))
	for _, p := range patterns {
		h, ok := a.routes[p]
		if !ok {
			panic(fmt.Sprintf("tier1api: no route %q", p))
		}
		routes = append(routes, jsonhttp.Route{Pattern: p, Handler: h})
	}
	return jsonhttp.NewMux(routes, nil)
}

// handlerFunc is one route's own logic, after the shared checks: it writes
// the success answer itself and returns the error to answer otherwise.
type handlerFunc func(w http.ResponseWriter, r *http.Request, eventID string) error

// public wraps a visitor route: eventId and body-size checks, then fn, then
// the error answer and the request log.
func (a *API) public(pattern string, fn handlerFunc) http.Handler {
	return a.serve(pattern, false, true, fn)
}

// operator wraps an admin route like public, after authentication.
func (a *API) operator(pattern string, fn handlerFunc) http.Handler {
	return a.serve(pattern, true, true, fn)
}

// serve wraps fn with the shared checks; perEvent routes have an {eventId}
// (the others get "").
func (a *API) serve(pattern string, admin, perEvent bool, fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &jsonhttp.Recorder{ResponseWriter: w}
		eventID, err := a.prepare(r, admin, perEvent)
		if err == nil {
			err = fn(rec, r, eventID)
		}
		if err != nil {
			switch {
			case errors.Is(err, tier1.ErrThrottled):
				a.d.Metrics.Count(eventID, MetricThrottles, 1)
			case errors.Is(err, tier1.ErrPowInvalid), errors.Is(err, tier1.ErrPowReplayed):
				a.d.Metrics.Count(eventID, MetricPowRefused, 1)
			case errors.Is(err, tier1.ErrTooManyArrivals):
				a.d.Metrics.Count(eventID, MetricClientBounded, 1)
			}
			writeFailure(rec, err)
		}
		a.logRequest(r, pattern, eventID, rec.Status, time.Since(start), err)
	})
}

// prepare runs what every route shares before its own logic: admin auth,
// a valid eventId, and a body within jsonhttp.MaxBodyBytes (GET routes take
// none, but a hand-made request may still carry one). A valid eventId is
// returned even with a later error, so the log line names the event.
func (a *API) prepare(r *http.Request, admin, perEvent bool) (string, error) {
	if admin {
		if err := a.authorize(r); err != nil {
			return "", err
		}
	} else if a.d.OriginVerify != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(OriginVerifyHeader)), []byte(a.d.OriginVerify)) != 1 {
		return "", errOriginNotVerified
	}
	if !perEvent {
		_, err := jsonhttp.ReadBody(r)
		return "", err
	}
	eventID := r.PathValue("eventId")
	if !tier1.ValidID(eventID) {
		return "", tier1.ErrInvalidEvent
	}
	if _, err := jsonhttp.ReadBody(r); err != nil {
		return eventID, err
	}
	return eventID, nil
}

func (a *API) logRequest(r *http.Request, pattern, eventID string, status int, elapsed time.Duration, cause error) {
	if lvl, _ := a.d.Log.RequestLevel(status, elapsed); !a.d.Logger.Enabled(r.Context(), lvl) {
		return
	}
	attrs := []slog.Attr{slog.String("route", pattern), slog.String("event", eventID)}
	if a.d.RequestID != nil {
		attrs = append(attrs, slog.String("requestId", a.d.RequestID(r)))
	}
	if cause != nil {
		attrs = append(attrs, slog.String("code", failure(cause).Code))
	}
	// The cause of a 5xx goes to the log only, never into the body.
	a.d.Log.Request(r.Context(), a.d.Logger, status, elapsed, cause, attrs...)
}
