package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/vwr-go/vwr/internal/ids"
	"github.com/vwr-go/vwr/services/queue"
)

// apiError is a rejection decided by the HTTP layer itself (bad token, body
// too large, bad JSON). Domain errors are mapped in fail.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return "httpapi: " + e.code }

var (
	errUnauthenticated = &apiError{http.StatusUnauthorized, "unauthenticated", "a Tier 1 pass or an authenticated user is required"}
	errInvalidToken    = &apiError{http.StatusUnauthorized, "invalid_token", "the Tier 1 pass is invalid, expired or for another event"}
	errAdminAuth       = &apiError{http.StatusUnauthorized, "unauthorized", "admin bearer token required"}
	errInvalidUser     = &apiError{http.StatusBadRequest, "invalid_user_id", ids.UserRule}
	errBodyTooLarge    = &apiError{http.StatusRequestEntityTooLarge, "body_too_large", "request body exceeds 4 KiB"}
	errInvalidBody     = &apiError{http.StatusBadRequest, "invalid_body", "request body must be JSON like {\"threshold\":N}"}
	errInvalidLimit    = &apiError{http.StatusBadRequest, "invalid_limit", "limit must be an integer from 1 to 100"}
)

// fail writes the response for err. It is the one place where errors become
// HTTP status codes. 5xx bodies carry a fixed message, never err.Error().
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		if ae.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vwr"`)
		}
		writeError(w, ae.status, ae.code, ae.msg)
	case errors.Is(err, queue.ErrInvalidEvent):
		writeError(w, http.StatusBadRequest, "invalid_event_id", "event id must match "+ids.Pattern)
	case errors.Is(err, queue.ErrInvalidUser):
		writeError(w, errInvalidUser.status, errInvalidUser.code, errInvalidUser.msg)
	case errors.Is(err, queue.ErrInvalidThreshold):
		writeError(w, http.StatusBadRequest, "invalid_threshold", "threshold must be an integer from 1 to 1000000")
	case errors.Is(err, queue.ErrInvalidPeriod):
		writeError(w, http.StatusBadRequest, "invalid_period", "period must be daily, weekly or monthly")
	case errors.Is(err, queue.ErrUnavailable):
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the queue is temporarily unavailable; retry shortly")
	default:
		writeError(w, http.StatusInternalServerError, "internal", "internal error")
	}
	logCause(w, err)
}

// logCause lets the request log show the underlying error without ever
// sending it to the client.
func logCause(w http.ResponseWriter, err error) {
	if rec, ok := w.(*recorder); ok {
		rec.err = err
	}
}

// errorBody is the JSON shape of every 4xx/5xx answer.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// readBody buffers up to MaxBodyBytes of the body so that every endpoint,
// including those that ignore their body, rejects oversized ones with 413
// before touching the store.
func readBody(r *http.Request) error {
	if r.ContentLength > MaxBodyBytes {
		return errBodyTooLarge
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	_ = r.Body.Close()
	if err != nil {
		return errInvalidBody
	}
	if len(b) > MaxBodyBytes {
		return errBodyTooLarge
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return nil
}

func splitPattern(p string) (method, path string) {
	method, path, _ = strings.Cut(p, " ")
	return method, path
}

func methodNotAllowed(methods []string) http.Handler {
	allow := strings.Join(methods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed; use "+allow)
	})
}
