// Package jsonhttp is the HTTP vocabulary both tiers' JSON APIs speak: the
// error body {"error","code"} and its one writer, the one Retry-After rule,
// the one request-body limit, strict JSON decoding, and the ServeMux
// registration that answers unknown routes and wrong methods in JSON. Each
// API still maps its own domain errors to an *Error in one place; this
// package only decides how every answer is written.
package jsonhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxBodyBytes is the largest request body any route accepts.
const MaxBodyBytes = 4 << 10

// RetryAfter is what every 503 tells clients to wait.
const RetryAfter = 2 * time.Second

// Error is a client-facing failure: status, a stable code and a message that
// is safe to show. A dependency's error text never goes into one.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return "jsonhttp: " + e.Code + ": " + e.Message }

// Failures every API shares.
var (
	ErrBodyTooLarge     = &Error{http.StatusRequestEntityTooLarge, "body_too_large", "request body exceeds 4 KiB"}
	ErrInvalidBody      = &Error{http.StatusBadRequest, "invalid_body", "request body is not the expected JSON object"}
	ErrNotFound         = &Error{http.StatusNotFound, "not_found", "no such endpoint"}
	ErrInternal         = &Error{http.StatusInternalServerError, "internal", "internal error"}
	errMethodNotAllowed = &Error{http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed"}
)

// Unavailable is a 503 for a dependency that failed; WriteError adds
// Retry-After.
func Unavailable(code, msg string) *Error {
	return &Error{http.StatusServiceUnavailable, code, msg}
}

// Body is the JSON every error response carries.
type Body struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// WriteError writes e. A 503 carries Retry-After, a 401 a Bearer challenge.
func WriteError(w http.ResponseWriter, e *Error) {
	switch e.Status {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="vwr"`)
	}
	WriteJSON(w, e.Status, Body{Error: e.Message, Code: e.Code})
}

// WriteJSON writes v as the response. Responses are private and uncached
// unless the handler set its own Cache-Control first.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the APIs' own response structs reach here; they always marshal.
		slog.Error("jsonhttp: marshal response", "err", err)
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error","code":"internal"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// ReadBody returns the request body, refusing more than MaxBodyBytes, and
// leaves it readable again for the handler.
func ReadBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, ErrBodyTooLarge
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	_ = r.Body.Close()
	if err != nil {
		return nil, ErrInvalidBody
	}
	if len(b) > MaxBodyBytes {
		return nil, ErrBodyTooLarge
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

// Decode reads a required JSON object body into the struct v points to, under
// the rules of DecodeStrict. An empty body is ErrInvalidBody.
func Decode(r *http.Request, v any) error {
	b, err := ReadBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return ErrInvalidBody
	}
	return decode(r, b, v)
}

// DecodeOptional is Decode for routes whose body may be left out: an empty
// body leaves v unchanged, so its fields keep their defaults.
func DecodeOptional(r *http.Request, v any) error {
	b, err := ReadBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return decode(r, b, v)
}

func decode(r *http.Request, b []byte, v any) error {
	if !isJSON(r.Header.Get("Content-Type")) {
		return ErrInvalidBody
	}
	if err := DecodeStrict(b, v); err != nil {
		return ErrInvalidBody
	}
	return nil
}

// isJSON accepts application/json with or without parameters.
func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// RequireEmpty refuses a body on routes that take none, rather than silently
// ignoring it. White space, and {} sent as application/json, are let through.
func RequireEmpty(r *http.Request) error {
	b, err := ReadBody(r)
	if err != nil {
		return err
	}
	switch s := strings.TrimSpace(string(b)); {
	case s == "":
		return nil
	case s == "{}" && isJSON(r.Header.Get("Content-Type")):
		return nil
	}
	return ErrInvalidBody
}

// Route is one endpoint: a ServeMux pattern ("POST /vwr/assign/{eventId}")
// and its handler.
type Route struct {
	Pattern string
	Handler http.Handler
}

// Register adds routes to mux, each wrapped by wrap (nil: as they are), plus
// a JSON 405 with Allow for a known path asked with another method. It does
// not claim "/": mount NotFound there, or use NewMux.
func Register(mux *http.ServeMux, routes []Route, wrap func(pattern string, h http.Handler) http.Handler) {
	if wrap == nil {
		wrap = func(_ string, h http.Handler) http.Handler { return h }
	}
	allow := map[string][]string{}
	var paths []string
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		if _, seen := allow[path]; !seen {
			paths = append(paths, path)
		}
		allow[path] = append(allow[path], method)
		mux.Handle(rt.Pattern, wrap(rt.Pattern, rt.Handler))
	}
	for _, path := range paths {
		methods := strings.Join(allow[path], ", ")
		mux.Handle(path, wrap("method_not_allowed", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", methods)
			WriteError(w, &Error{errMethodNotAllowed.Status, errMethodNotAllowed.Code, "method not allowed; use " + methods})
		})))
	}
}

// NotFound answers every request with the JSON 404.
func NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { WriteError(w, ErrNotFound) })
}

// NewMux is Register plus NotFound on "/": a whole API surface.
func NewMux(routes []Route, wrap func(pattern string, h http.Handler) http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	Register(mux, routes, wrap)
	if wrap == nil {
		mux.Handle("/", NotFound())
	} else {
		mux.Handle("/", wrap("not_found", NotFound()))
	}
	return mux
}

// As returns err as an *Error when it is one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Recorder remembers the status a handler wrote, for the request log and
// metrics. Status is 200 once a body was written without WriteHeader.
type Recorder struct {
	http.ResponseWriter
	Status int
}

// WriteHeader records the first status.
func (r *Recorder) WriteHeader(code int) {
	if r.Status == 0 {
		r.Status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (r *Recorder) Write(b []byte) (int, error) {
	if r.Status == 0 {
		r.Status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *Recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
