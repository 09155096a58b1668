package tier1api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vwr-go/vwr/internal/tier1"
)

// Admin route paths, all served by one Admin handler (one Lambda).
const (
	AdminActivatePath   = "/vwr/admin/activate/{eventId}"
	AdminDeactivatePath = "/vwr/admin/deactivate/{eventId}"
	AdminPausePath      = "/vwr/admin/pause/{eventId}"
	AdminResumePath     = "/vwr/admin/resume/{eventId}"
	AdminStatusPath     = "/vwr/admin/status/{eventId}"
	AdminAdvancePath    = "/vwr/admin/advance/{eventId}"
)

// AdminOptions decide who may call the admin routes.
type AdminOptions struct {
	// Token is the bearer token (VWR_ADMIN_TOKEN). Empty disables bearer auth.
	Token string
	// TrustIAM accepts requests whose requestContext carries an IAM
	// authorizer. Only API Gateway fills that in, after verifying the SigV4
	// signature of a route with AWS_IAM auth, so the Lambda sets it and vwr
	// local (whose adapter never fills it in) does not.
	TrustIAM bool
}

// Admin serves the operator routes: activate, deactivate, pause, resume,
// status (with per-shard counters) and advance.
type Admin struct {
	d    Deps
	opts AdminOptions
	hash [sha256.Size]byte
}

// NewAdmin returns the admin handler.
func NewAdmin(d Deps, opts AdminOptions) *Admin {
	return &Admin{d: d.withDefaults(), opts: opts, hash: sha256.Sum256([]byte(opts.Token))}
}

type activateRequest struct {
	Shards    int   `json:"shards"`
	BatchSize int64 `json:"batchSize"`
}

type advanceRequest struct {
	By int64 `json:"by"`
}

type adminStatusResponse struct {
	EventID            string    `json:"eventId"`
	Active             bool      `json:"active"`
	Paused             bool      `json:"paused"`
	Shards             int       `json:"shards"`
	BatchSize          int64     `json:"batchSize"`
	ServingCounter     int64     `json:"servingCounter"`
	MaxAssigned        int64     `json:"maxAssigned"`
	Assigned           int64     `json:"assigned"`
	Admitted           int64     `json:"admitted"`
	Waiting            int64     `json:"waiting"`
	AdmitRatePerMinute int64     `json:"admitRatePerMinute"`
	ShardCounters      []int64   `json:"shardCounters"`
	UpdatedAt          time.Time `json:"updatedAt"`
	// QueueAdmittedLastMinute is what the SQS consumer counted for the last
	// complete minute; only the status route with QueueAdmissions set, and
	// only when the read succeeds, carries it.
	QueueAdmittedLastMinute *int64 `json:"queueAdmittedLastMinute,omitempty"`
}

// queueAdmissionsTimeout bounds the stats read so a slow table delays the
// admin status by at most this much.
const queueAdmissionsTimeout = 2 * time.Second

// Handle authenticates, then dispatches on the route key.
func (h *Admin) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := time.Now()
	if err := h.authorize(req); err != nil {
		return h.d.finish(ctx, req, "", start, events.APIGatewayV2HTTPResponse{}, err)
	}
	eventID, err := pathParam(req, "eventId", tier1.ErrInvalidEvent)
	if err != nil {
		return h.d.finish(ctx, req, "", start, events.APIGatewayV2HTTPResponse{}, err)
	}
	st, err := h.dispatch(ctx, req, eventID)
	if err != nil {
		return h.d.finish(ctx, req, eventID, start, events.APIGatewayV2HTTPResponse{}, err)
	}
	if req.RouteKey == "POST "+AdminAdvancePath {
		h.d.Metrics.Gauge(eventID, MetricServingCounter, st.ServingCounter)
	}
	body := adminStatusResponse{
		EventID: st.EventID, Active: st.Active, Paused: st.Paused, Shards: st.Shards,
		BatchSize: st.BatchSize, ServingCounter: st.ServingCounter, MaxAssigned: st.MaxAssigned,
		Assigned: st.Assigned, Admitted: st.Admitted, Waiting: st.Waiting,
		AdmitRatePerMinute: st.AdmitRatePerMinute, ShardCounters: st.ShardCounters,
		UpdatedAt: st.UpdatedAt.UTC(),
	}
	if req.RouteKey == "GET "+AdminStatusPath {
		body.QueueAdmittedLastMinute = h.queueAdmitted(ctx, eventID)
	}
	return h.d.finish(ctx, req, eventID, start, jsonResponse(200, body), nil)
}

// queueAdmitted reads the consumer's count for the last complete minute. The
// stats are auxiliary: a failed read is logged and the field left out, never
// turned into an error.
func (h *Admin) queueAdmitted(ctx context.Context, eventID string) *int64 {
	if h.d.QueueAdmissions == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, queueAdmissionsTimeout)
	defer cancel()
	n, err := h.d.QueueAdmissions.AdmittedLastMinute(ctx, eventID)
	if err != nil {
		h.d.Logger.WarnContext(ctx, "tier1 queue admissions", "event", eventID, "err", err)
		return nil
	}
	return &n
}

func (h *Admin) dispatch(ctx context.Context, req events.APIGatewayV2HTTPRequest, eventID string) (tier1.AdminStatus, error) {
	svc := h.d.Service
	switch req.RouteKey {
	case "POST " + AdminActivatePath:
		var body activateRequest
		if err := decodeJSON(req, &body); err != nil {
			return tier1.AdminStatus{}, err
		}
		return svc.Activate(ctx, eventID, body.Shards, body.BatchSize)
	case "POST " + AdminAdvancePath:
		var body advanceRequest
		if err := decodeJSON(req, &body); err != nil {
			return tier1.AdminStatus{}, err
		}
		return svc.AdvanceBy(ctx, eventID, body.By)
	}
	// The remaining routes take no body; refuse one rather than ignore it.
	if b, err := requestBody(req); err != nil {
		return tier1.AdminStatus{}, err
	} else if body := strings.TrimSpace(string(b)); body != "" && body != "{}" {
		return tier1.AdminStatus{}, errBadBody
	}
	switch req.RouteKey {
	case "POST " + AdminDeactivatePath:
		return svc.Deactivate(ctx, eventID)
	case "POST " + AdminPausePath:
		return svc.Pause(ctx, eventID)
	case "POST " + AdminResumePath:
		return svc.Resume(ctx, eventID)
	case "GET " + AdminStatusPath:
		return svc.AdminStatus(ctx, eventID)
	}
	return tier1.AdminStatus{}, errUnknownRoute
}

// authorize accepts an IAM-authorized API Gateway request (when trusted) or
// the bearer token, compared in constant time over fixed-length hashes so
// neither content nor length leaks through timing.
func (h *Admin) authorize(req events.APIGatewayV2HTTPRequest) error {
	if h.opts.TrustIAM {
		if a := req.RequestContext.Authorizer; a != nil && a.IAM != nil && a.IAM.UserARN != "" {
			return nil
		}
	}
	if h.opts.Token == "" {
		if h.opts.TrustIAM {
			return errUnauthorized
		}
		return errAdminDisabled
	}
	auth := header(req, "Authorization")
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return errUnauthorized
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(sum[:], h.hash[:]) != 1 {
		return errUnauthorized
	}
	return nil
}
