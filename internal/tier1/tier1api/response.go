package tier1api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vwr-go/vwr/internal/tier1"
)

// MaxBodyBytes is the largest request body any Tier 1 route accepts.
const MaxBodyBytes = 4 << 10

// RetryAfterSeconds is what a 503 tells clients to wait.
const RetryAfterSeconds = "2"

// errorBody is the JSON every error response carries.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// apiError is a client-facing failure: status, stable code and a message
// safe to show (never err.Error() of a dependency).
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// Client errors the handlers raise before reaching the Service.
var (
	errBodyTooLarge  = &apiError{413, "body_too_large", "request body exceeds 4 KiB"}
	errBadBody       = &apiError{400, "invalid_body", "request body is not the expected JSON"}
	errUnauthorized  = &apiError{401, "unauthorized", "admin credentials required"}
	errAdminDisabled = &apiError{401, "unauthorized", "admin API is disabled: set VWR_ADMIN_TOKEN"}
	errUnknownRoute  = &apiError{404, "not_found", "no such route"}
)

// statusFor maps every error a handler can meet to its HTTP answer. It is the
// only place Tier 1 decides status codes.
func statusFor(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, tier1.ErrInvalidEvent):
		return &apiError{400, "invalid_event_id", "event id must match ^[A-Za-z0-9_-]{1,64}$"}
	case errors.Is(err, tier1.ErrInvalidRequestID):
		return &apiError{400, "invalid_request_id", "request id must match ^[A-Za-z0-9_-]{1,64}$"}
	case errors.Is(err, tier1.ErrInvalidIdempotencyKey):
		return &apiError{400, "invalid_idempotency_key", "Idempotency-Key must match ^[A-Za-z0-9_-]{1,64}$"}
	case errors.Is(err, tier1.ErrInvalidConfig):
		return &apiError{400, "invalid_config", "shards, batchSize or by out of range"}
	case errors.Is(err, tier1.ErrNotFound):
		return &apiError{404, "not_found", "unknown request id for this event"}
	case errors.Is(err, tier1.ErrThrottled):
		return &apiError{503, "throttled", "too many requests right now; retry shortly"}
	case errors.Is(err, tier1.ErrUnavailable):
		return &apiError{503, "unavailable", "waiting room store unavailable; retry shortly"}
	default:
		return &apiError{500, "internal", "internal error"}
	}
}

// errorResponse renders err. API Gateway handlers return it with a nil error:
// a Lambda error would only turn into API Gateway's own opaque 500.
func errorResponse(err error) events.APIGatewayV2HTTPResponse {
	ae := statusFor(err)
	resp := jsonResponse(ae.status, errorBody{Error: ae.msg, Code: ae.code})
	if ae.status == 503 {
		resp.Headers["Retry-After"] = RetryAfterSeconds
	}
	return resp
}

// jsonResponse renders v with no-store caching; routes that may be cached
// overwrite Cache-Control.
func jsonResponse(status int, v any) events.APIGatewayV2HTTPResponse {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own response structs reach here; they always marshal.
		slog.Error("tier1api: marshal response", "err", err)
		status, b = 500, []byte(`{"error":"internal error","code":"internal"}`)
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":           "application/json",
			"Cache-Control":          "no-store",
			"X-Content-Type-Options": "nosniff",
		},
		Body: string(b),
	}
}

// requestBody returns the decoded body, refusing anything over MaxBodyBytes.
func requestBody(req events.APIGatewayV2HTTPRequest) ([]byte, error) {
	if !req.IsBase64Encoded {
		if len(req.Body) > MaxBodyBytes {
			return nil, errBodyTooLarge
		}
		return []byte(req.Body), nil
	}
	if base64.StdEncoding.DecodedLen(len(req.Body)) > MaxBodyBytes+3 {
		return nil, errBodyTooLarge
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, errBadBody
	}
	if len(b) > MaxBodyBytes {
		return nil, errBodyTooLarge
	}
	return b, nil
}

// decodeJSON reads a small JSON object body into v. An empty body leaves v
// unchanged, so optional bodies fall back to defaults.
func decodeJSON(req events.APIGatewayV2HTTPRequest, v any) error {
	b, err := requestBody(req)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errBadBody
	}
	if dec.More() {
		return errBadBody
	}
	return nil
}

// header looks a header up case-insensitively. API Gateway HTTP APIs send
// lower-case names, but a hand-written event may not.
func header(req events.APIGatewayV2HTTPRequest, name string) string {
	if v, ok := req.Headers[strings.ToLower(name)]; ok {
		return v
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// pathParam returns a path parameter, validated as an id. A missing or
// malformed value is the given domain error, so statusFor picks its code.
func pathParam(req events.APIGatewayV2HTTPRequest, name string, invalid error) (string, error) {
	v := req.PathParameters[name]
	if !tier1.ValidID(v) {
		return "", invalid
	}
	return v, nil
}

// eventRequest checks what every public route shares: a valid eventId path
// parameter and a body within MaxBodyBytes (GET routes take none, but a
// hand-made request may still carry one). The eventId is returned with a
// body error, so the log line names the event.
func eventRequest(req events.APIGatewayV2HTTPRequest) (string, error) {
	eventID, err := pathParam(req, "eventId", tier1.ErrInvalidEvent)
	if err != nil {
		return "", err
	}
	if _, err := requestBody(req); err != nil {
		return eventID, err
	}
	return eventID, nil
}
