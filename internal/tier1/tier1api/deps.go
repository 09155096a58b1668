package tier1api

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/tier1"
)

// Deps is what every handler shares.
type Deps struct {
	Service *tier1.Service
	// Clock sets cookie lifetimes; default the system clock.
	Clock clock.Clock
	// Logger gets one JSON line per request; default slog.Default().
	Logger *slog.Logger
	// Metrics emits CloudWatch EMF lines; nil emits none.
	Metrics *Metrics
	// QueueAdmissions, when set, adds the queue's measured admissions to the
	// admin status (VWR_ADMITTED_STATS_TABLE on the admin function). Nil
	// omits them.
	QueueAdmissions QueueAdmissions
	// InsecureCookie drops Secure from the urr-vwr-token cookie. Only vwr
	// local, served over plain http on loopback, sets it.
	InsecureCookie bool
}

// QueueAdmissions reads the Tier 2 admissions the SQS consumer counted
// (internal/admitted/dynamostore.Store implements it). It keeps the handlers
// free of the stats table's shape.
type QueueAdmissions interface {
	// AdmittedLastMinute is eventID's admissions in the last complete minute.
	AdmittedLastMinute(ctx context.Context, eventID string) (int64, error)
}

func (d Deps) withDefaults() Deps {
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return d
}

// serve runs what the public routes share: the eventId and body checks of
// eventRequest, then fn, then finish.
func (d Deps) serve(ctx context.Context, req events.APIGatewayV2HTTPRequest, fn func(eventID string) (events.APIGatewayV2HTTPResponse, error)) (events.APIGatewayV2HTTPResponse, error) {
	start := time.Now()
	eventID, err := eventRequest(req)
	var resp events.APIGatewayV2HTTPResponse
	if err == nil {
		resp, err = fn(eventID)
	}
	return d.finish(ctx, req, eventID, start, resp, err)
}

// finish logs the request and counts throttles, then returns resp with a nil
// error: API Gateway handlers never ask Lambda to retry.
func (d Deps) finish(ctx context.Context, req events.APIGatewayV2HTTPRequest, eventID string, start time.Time, resp events.APIGatewayV2HTTPResponse, err error) (events.APIGatewayV2HTTPResponse, error) {
	if err != nil {
		resp = errorResponse(err)
		if errors.Is(err, tier1.ErrThrottled) {
			d.Metrics.Count(eventID, MetricThrottles, 1)
		}
	}
	attrs := []any{
		"route", req.RouteKey, "event", eventID, "status", resp.StatusCode,
		"ms", time.Since(start).Milliseconds(), "awsRequestId", req.RequestContext.RequestID,
	}
	switch {
	case resp.StatusCode >= 500:
		// The cause goes to the log only, never into the body.
		d.Logger.ErrorContext(ctx, "tier1 request", append(attrs, "err", err)...)
	case err != nil:
		d.Logger.InfoContext(ctx, "tier1 request", append(attrs, "code", statusFor(err).code)...)
	default:
		d.Logger.InfoContext(ctx, "tier1 request", attrs...)
	}
	return resp, nil
}
