package tier1api

import (
	"errors"
	"net/http"

	"github.com/vwr-go/vwr/internal/ids"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/tier1"
)

// Rejections decided by the handlers themselves.
var (
	errUnauthorized  = &jsonhttp.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "admin credentials required"}
	errAdminDisabled = &jsonhttp.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "admin API is disabled: set VWR_ADMIN_TOKEN"}
)

// failure maps every error a handler can meet to its HTTP answer. It is the
// only place Tier 1 decides status codes; 5xx answers carry a fixed message,
// never the dependency's error text.
func failure(err error) *jsonhttp.Error {
	if e, ok := jsonhttp.As(err); ok {
		return e
	}
	switch {
	case errors.Is(err, tier1.ErrInvalidEvent):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_event_id", Message: "event id must match " + ids.Pattern}
	case errors.Is(err, tier1.ErrInvalidRequestID):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_request_id", Message: "request id must match " + ids.Pattern}
	case errors.Is(err, tier1.ErrInvalidIdempotencyKey):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_idempotency_key", Message: "Idempotency-Key must match " + ids.Pattern}
	case errors.Is(err, tier1.ErrInvalidConfig):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_config", Message: "shards, batchSize or by out of range"}
	case errors.Is(err, tier1.ErrNotFound):
		return &jsonhttp.Error{Status: http.StatusNotFound, Code: "not_found", Message: "unknown event, or unknown request id for this event"}
	case errors.Is(err, tier1.ErrConflict):
		// The Service retries lost conditional writes; still losing means
		// other writers keep moving the event, which passes.
		return jsonhttp.Unavailable("busy", "the event is being changed by another request; retry shortly")
	case errors.Is(err, tier1.ErrThrottled):
		return jsonhttp.Unavailable("throttled", "too many requests right now; retry shortly")
	case errors.Is(err, tier1.ErrUnavailable):
		return jsonhttp.Unavailable("unavailable", "waiting room store unavailable; retry shortly")
	default:
		return jsonhttp.ErrInternal
	}
}
