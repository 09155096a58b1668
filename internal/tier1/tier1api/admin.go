package tier1api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/tier1"
)

type activateRequest struct {
	Shards    int   `json:"shards"`
	BatchSize int64 `json:"batchSize"`
	// Pow is the proof of work each arrival pays, in expected hashes; 0 or
	// missing: none.
	Pow int64 `json:"pow"`
}

type advanceRequest struct {
	By int64 `json:"by"`
}

type batchRequest struct {
	BatchSize int64 `json:"batchSize"`
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
	Pow                int64     `json:"pow"`
	// Sale is set for a scheduled sale, as in the public status.
	Sale *saleJSON `json:"sale,omitempty"`
	// QueueAdmittedLastMinute is what the SQS consumer counted for the last
	// complete minute; only the status route with QueueAdmissions set, and
	// only when the read succeeds, carries it.
	QueueAdmittedLastMinute *int64 `json:"queueAdmittedLastMinute,omitempty"`
}

// queueAdmissionsTimeout bounds the stats read so a slow table delays the
// admin status by at most this much.
const queueAdmissionsTimeout = 2 * time.Second

func (a *API) adminStatusOf(st tier1.AdminStatus, queueAdmitted *int64) adminStatusResponse {
	counters := st.ShardCounters
	if counters == nil {
		counters = []int64{}
	}
	return adminStatusResponse{
		EventID: st.EventID, Active: st.Active, Paused: st.Paused, Shards: st.Shards,
		BatchSize: st.BatchSize, ServingCounter: st.ServingCounter, MaxAssigned: st.MaxAssigned,
		Assigned: st.Assigned, Admitted: st.Admitted, Waiting: st.Waiting,
		AdmitRatePerMinute: st.AdmitRatePerMinute, ShardCounters: counters,
		UpdatedAt: st.UpdatedAt.UTC(), Pow: st.Pow, Sale: a.saleOf(&st.Sale), QueueAdmittedLastMinute: queueAdmitted,
	}
}

func (a *API) writeAdminStatus(w http.ResponseWriter, st tier1.AdminStatus, queueAdmitted *int64) {
	jsonhttp.WriteJSON(w, http.StatusOK, a.adminStatusOf(st, queueAdmitted))
}

// errInvalidLimit is a ?limit= that is not an integer in range.
var errInvalidLimit = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_limit",
	Message: fmt.Sprintf("limit must be an integer from 1 to %d", tier1.MaxEventsLimit)}

// events serves GET /vwr/admin/events: the operator's event list, each
// event as its admin status says (without the queue's admissions, one
// read per event being enough).
func (a *API) events(w http.ResponseWriter, r *http.Request, _ string) error {
	if err := jsonhttp.RequireEmpty(r); err != nil {
		return err
	}
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > tier1.MaxEventsLimit {
			return errInvalidLimit
		}
		limit = n
	}
	list, truncated, err := a.d.Service.Events(r.Context(), limit)
	if err != nil {
		return err
	}
	out := make([]adminStatusResponse, 0, len(list))
	for _, st := range list {
		out = append(out, a.adminStatusOf(st, nil))
	}
	jsonhttp.WriteJSON(w, http.StatusOK, struct {
		Events    []adminStatusResponse `json:"events"`
		Truncated bool                  `json:"truncated"`
	}{out, truncated})
	return nil
}

// batch changes how many visitors each advancer tick admits, and nothing else.
func (a *API) batch(w http.ResponseWriter, r *http.Request, eventID string) error {
	var body batchRequest
	if err := jsonhttp.DecodeOptional(r, &body); err != nil {
		return err
	}
	st, err := a.d.Service.SetBatchSize(r.Context(), eventID, body.BatchSize)
	if err != nil {
		return err
	}
	a.writeAdminStatus(w, st, nil)
	return nil
}

// activate turns the line on; an empty body takes the configured defaults
// and asks for no proof of work.
func (a *API) activate(w http.ResponseWriter, r *http.Request, eventID string) error {
	var body activateRequest
	if err := jsonhttp.DecodeOptional(r, &body); err != nil {
		return err
	}
	st, err := a.d.Service.Activate(r.Context(), eventID, body.Shards, body.BatchSize, tier1.WithPow(body.Pow))
	if err != nil {
		return err
	}
	a.writeAdminStatus(w, st, nil)
	return nil
}

// advance raises the serving counter by `by` positions at once.
func (a *API) advance(w http.ResponseWriter, r *http.Request, eventID string) error {
	var body advanceRequest
	if err := jsonhttp.DecodeOptional(r, &body); err != nil {
		return err
	}
	st, err := a.d.Service.AdvanceBy(r.Context(), eventID, body.By)
	if err != nil {
		return err
	}
	a.d.Metrics.Gauge(eventID, MetricServingCounter, st.ServingCounter)
	a.writeAdminStatus(w, st, nil)
	return nil
}

// settings serves deactivate, pause and resume: body-less state changes.
func (a *API) settings(change func(context.Context, string) (tier1.AdminStatus, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, eventID string) error {
		if err := jsonhttp.RequireEmpty(r); err != nil {
			return err
		}
		st, err := change(r.Context(), eventID)
		if err != nil {
			return err
		}
		a.writeAdminStatus(w, st, nil)
		return nil
	}
}

// adminStatus reads the event afresh, with per-shard counters and, when the
// function may read the consumer's stats, the queue's admissions.
func (a *API) adminStatus(w http.ResponseWriter, r *http.Request, eventID string) error {
	if err := jsonhttp.RequireEmpty(r); err != nil {
		return err
	}
	st, err := a.d.Service.AdminStatus(r.Context(), eventID)
	if err != nil {
		return err
	}
	a.writeAdminStatus(w, st, a.queueAdmitted(r.Context(), eventID))
	return nil
}

// queueAdmitted reads the consumer's count for the last complete minute. The
// stats are auxiliary: a failed read is logged and the field left out, never
// turned into an error.
func (a *API) queueAdmitted(ctx context.Context, eventID string) *int64 {
	if a.d.QueueAdmissions == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, queueAdmissionsTimeout)
	defer cancel()
	n, err := a.d.QueueAdmissions.AdmittedLastMinute(ctx, eventID)
	if err != nil {
		a.d.Logger.WarnContext(ctx, "tier1 queue admissions", "event", eventID, "err", err)
		return nil
	}
	return &n
}

// authorize accepts a caller the wiring vouches for (IAM on AWS) or the
// bearer token, compared in constant time over fixed-length hashes so that
// neither content nor length leaks through timing.
func (a *API) authorize(r *http.Request) error {
	if a.admin.Trusted != nil && a.admin.Trusted(r) {
		return nil
	}
	if a.admin.Token == "" {
		if a.admin.Trusted != nil {
			return errUnauthorized
		}
		return errAdminDisabled
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return errUnauthorized
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(sum[:], a.adminHash[:]) != 1 {
		return errUnauthorized
	}
	return nil
}
