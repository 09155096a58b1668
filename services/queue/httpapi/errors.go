package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/vwr-go/vwr/internal/ids"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/services/queue"
)

// Rejections decided by the HTTP layer itself (bad token, bad query). Domain
// errors are mapped in failure.
var (
	errUnauthenticated    = &jsonhttp.Error{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: "a Tier 1 pass or an authenticated user is required"}
	errInvalidToken       = &jsonhttp.Error{Status: http.StatusUnauthorized, Code: "invalid_token", Message: "the Tier 1 pass is invalid, expired or for another event"}
	errAdminAuth          = &jsonhttp.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "admin bearer token required"}
	errInvalidLimit       = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_limit", Message: "limit must be an integer from 1 to 100"}
	errInvalidEventsLimit = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_limit",
		Message: "limit must be an integer from 1 to " + strconv.Itoa(queue.MaxEventsLimit)}
	errInvalidBody = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: `request body must be JSON like {"threshold":N} with Content-Type: application/json`}
)

// failure maps err to its HTTP answer. It is the one place where Tier 2's
// errors become status codes; 5xx bodies carry a fixed message, never
// err.Error().
func failure(err error) *jsonhttp.Error {
	if e, ok := jsonhttp.As(err); ok {
		return e
	}
	var gone *queue.GoneError
	if errors.As(err, &gone) {
		return &jsonhttp.Error{Status: http.StatusGone, Code: gone.Reason, Message: goneMessages[gone.Reason]}
	}
	switch {
	case errors.Is(err, queue.ErrInvalidEvent):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_event_id", Message: "event id must match " + ids.Pattern}
	case errors.Is(err, queue.ErrUnknownEvent):
		return &jsonhttp.Error{Status: http.StatusNotFound, Code: "unknown_event", Message: "no such event: it is not configured for the queue"}
	case errors.Is(err, queue.ErrInvalidUser):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_user_id", Message: ids.UserRule}
	case errors.Is(err, queue.ErrInvalidThreshold):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_threshold", Message: "threshold must be an integer from 1 to 1000000"}
	case errors.Is(err, queue.ErrInvalidPeriod):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_period", Message: "period must be daily, weekly or monthly"}
	case errors.Is(err, queue.ErrUnavailable):
		return jsonhttp.Unavailable("unavailable", "the queue is temporarily unavailable; retry shortly")
	default:
		return jsonhttp.ErrInternal
	}
}

// goneMessages explain a 410 to a renewal, by its code (queue.Done*).
var goneMessages = map[string]string{
	queue.DoneLeft:      "you left: this entry token no longer renews; join again through the waiting room",
	queue.DoneSlotEnded: "your slot has ended; join again through the waiting room",
	queue.DoneIdle:      "your slot was freed after no heartbeat for too long; join again through the waiting room",
}

// fail writes the answer for err and hands the cause to the request log.
func (a *API) fail(w http.ResponseWriter, err error) {
	jsonhttp.WriteError(w, failure(err))
	if rec, ok := w.(*recorder); ok {
		rec.err = err
	}
}
