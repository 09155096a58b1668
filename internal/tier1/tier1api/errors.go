package tier1api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/vwr-go/vwr/internal/altcha"
	"github.com/vwr-go/vwr/internal/ids"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/tier1"
)

// Rejections decided by the handlers themselves.
var (
	errUnauthorized  = &jsonhttp.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "admin credentials required"}
	errAdminDisabled = &jsonhttp.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "admin API is disabled: set VWR_ADMIN_TOKEN"}
	errInvalidChunk  = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_chunk", Message: "chunk must be a non-negative integer"}
	// errInvalidTicketHash is a ticket hash that is not 64 lowercase hex digits.
	errInvalidTicketHash = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_ticket_hash", Message: "ticket hash must be 64 lowercase hex digits"}
)

// failure maps every error a handler can meet to its HTTP answer. It is the
// only place Tier 1 decides status codes; 5xx answers carry a fixed message,
// never the dependency's error text.
// errOriginNotVerified: a visitor route called without the front door's
// origin-verify header (Deps.OriginVerify).
var errOriginNotVerified = errors.New("tier1api: not through the front door")

func failure(err error) *jsonhttp.Error {
	if e, ok := jsonhttp.As(err); ok {
		return e
	}
	switch {
	case errors.Is(err, errOriginNotVerified):
		return &jsonhttp.Error{Status: http.StatusForbidden, Code: "origin_not_verified", Message: "this API answers only through its front door"}
	case errors.Is(err, tier1.ErrInvalidEvent):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_event_id", Message: "event id must match " + ids.Pattern}
	case errors.Is(err, tier1.ErrInvalidRequestID):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_request_id", Message: "request id must match " + ids.Pattern}
	case errors.Is(err, tier1.ErrInvalidIdempotencyKey):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_idempotency_key", Message: "Idempotency-Key must match " + ids.Pattern}
	case errors.Is(err, tier1.ErrInvalidNonce):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_client_nonce", Message: "Client-Nonce must be 16 bytes: 32 hex digits or 22 base64url characters"}
	case errors.Is(err, tier1.ErrNonceRequired):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "client_nonce_required", Message: "the event is in its pre-queue: send a Client-Nonce of 16 random bytes"}
	case errors.Is(err, tier1.ErrInvalidSchedule):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_schedule", Message: "opensAt must be in the future (prequeueFrom before it), on an inactive event that has handed out no position"}
	case errors.Is(err, tier1.ErrSaleTicketed):
		return &jsonhttp.Error{Status: http.StatusConflict, Code: "sale_has_tickets", Message: "the pre-queue has handed out tickets: the sale can no longer be moved, only cancelled (POST /vwr/admin/cancel/{eventId})"}
	case errors.Is(err, tier1.ErrSaleClosed):
		return &jsonhttp.Error{Status: http.StatusConflict, Code: "sale_closed", Message: "the pre-queue has closed: the sale can no longer be moved, only cancelled"}
	case errors.Is(err, tier1.ErrSaleDrawn):
		return &jsonhttp.Error{Status: http.StatusConflict, Code: "sale_drawn", Message: "the sale is drawn: it can no longer be moved or cancelled"}
	case errors.Is(err, tier1.ErrSaleCancelled):
		return &jsonhttp.Error{Status: http.StatusConflict, Code: "sale_cancelled", Message: "the sale was cancelled (see GET /vwr/draw/{eventId}); schedule a new sale under another event id"}
	case errors.Is(err, tier1.ErrNotDrawn):
		return &jsonhttp.Error{Status: http.StatusConflict, Code: "not_drawn", Message: "the pre-queue has not been drawn yet"}
	case errors.Is(err, tier1.ErrNoSales):
		return &jsonhttp.Error{Status: http.StatusNotFound, Code: "not_found", Message: "scheduled sales are not supported by this store"}
	case errors.Is(err, tier1.ErrNotOpen):
		return jsonhttp.Unavailable("not_open", "the pre-queue of this sale has not opened yet; retry shortly")
	case errors.Is(err, tier1.ErrClosing):
		return jsonhttp.Unavailable("closing", "the pre-queue is closing; retry in a second")
	case errors.Is(err, tier1.ErrPowRequired):
		return &jsonhttp.Error{Status: http.StatusPreconditionRequired, Code: "pow_required", Message: "this event asks for a proof of work: solve the challenge and send it in the Altcha header"}
	case errors.Is(err, tier1.ErrPowInvalid):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "pow_invalid", Message: "the Altcha header is not a valid solution of an unexpired challenge for this event"}
	case errors.Is(err, tier1.ErrPowTooEasy):
		return &jsonhttp.Error{Status: http.StatusPreconditionRequired, Code: "pow_too_easy", Message: "this solution is of an easier challenge than the event asks for now: solve the new challenge"}
	case errors.Is(err, tier1.ErrPowReplayed):
		return &jsonhttp.Error{Status: http.StatusConflict, Code: "pow_replayed", Message: "this solution was already spent: solve the new challenge"}
	case errors.Is(err, tier1.ErrTooManyArrivals):
		return &jsonhttp.Error{Status: http.StatusTooManyRequests, Code: "too_many_arrivals", Message: "too many arrivals from your network for this event; retry after the time given"}
	case errors.Is(err, tier1.ErrInvalidConfig):
		return &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_config", Message: "shards, batchSize, by or pow out of range"}
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

// powErrorBody is a proof-of-work refusal: the error and its code, and a
// fresh challenge to solve instead.
type powErrorBody struct {
	Error     string           `json:"error"`
	Code      string           `json:"code"`
	Challenge altcha.Challenge `json:"challenge"`
}

// writeFailure writes failure(err), with what some refusals carry beyond
// it: a proof-of-work refusal its fresh challenge, a client over its bound
// the Retry-After of its window.
func writeFailure(w http.ResponseWriter, err error) {
	e := failure(err)
	var pe *tier1.PowError
	if errors.As(err, &pe) {
		jsonhttp.WriteJSON(w, e.Status, powErrorBody{Error: e.Message, Code: e.Code, Challenge: pe.Challenge})
		return
	}
	var re *tier1.RateError
	if errors.As(err, &re) {
		w.Header().Set("Retry-After", strconv.Itoa(int(re.RetryAfter/time.Second)))
	}
	jsonhttp.WriteError(w, e)
}
