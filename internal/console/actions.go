package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/vwr-go/vwr/internal/ids"
	"github.com/vwr-go/vwr/internal/jsonhttp"
)

// An action is one control of the page: the admin call it makes, and the
// fields of the console's request it takes. The page sends only what the
// operator typed; the console passes on only the fields the action names,
// and the API decides what is valid (its answer goes back to the page).
type actionSpec struct {
	tier   int
	method string
	route  string   // the admin route before /{eventId}
	fields []string // the request fields it takes; nil: a body-less call
}

// Actions are the console's controls.
var actions = map[string]actionSpec{
	"activate":   {tier: 1, method: http.MethodPost, route: "/vwr/admin/activate", fields: []string{"shards", "batchSize", "pow"}},
	"deactivate": {tier: 1, method: http.MethodPost, route: "/vwr/admin/deactivate"},
	"pause":      {tier: 1, method: http.MethodPost, route: "/vwr/admin/pause"},
	"resume":     {tier: 1, method: http.MethodPost, route: "/vwr/admin/resume"},
	"batch":      {tier: 1, method: http.MethodPost, route: "/vwr/admin/batch", fields: []string{"batchSize"}},
	"advance":    {tier: 1, method: http.MethodPost, route: "/vwr/admin/advance", fields: []string{"by"}},
	"schedule":   {tier: 1, method: http.MethodPost, route: "/vwr/admin/schedule", fields: []string{"opensAt", "prequeueFrom", "pow"}},
	"cancel":     {tier: 1, method: http.MethodPost, route: "/vwr/admin/cancel"},
	"threshold":  {tier: 2, method: http.MethodPut, route: "/api/queue/admin/threshold", fields: []string{"threshold"}},
}

// actionRequest is every field any action takes; which are allowed is the
// action's.
type actionRequest struct {
	Shards       *int64  `json:"shards,omitempty"`
	BatchSize    *int64  `json:"batchSize,omitempty"`
	Pow          *int64  `json:"pow,omitempty"`
	By           *int64  `json:"by,omitempty"`
	Threshold    *int64  `json:"threshold,omitempty"`
	OpensAt      *string `json:"opensAt,omitempty"`
	PrequeueFrom *string `json:"prequeueFrom,omitempty"`
}

var (
	errUnknownAction = &jsonhttp.Error{Status: http.StatusNotFound, Code: "unknown_action",
		Message: "no such control; the console has activate, deactivate, pause, resume, batch, advance, schedule, cancel and threshold"}
	errActionBody = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_body",
		Message: "the body must be a JSON object with only the fields this control takes"}
	errUnreachable502 = &jsonhttp.Error{Status: http.StatusBadGateway, Code: "upstream_unreachable",
		Message: "the admin API did not answer (the console's log says why)"}
	errCredentials502 = &jsonhttp.Error{Status: http.StatusBadGateway, Code: "upstream_credentials",
		Message: "the console could not add the operator's credentials (its log says why)"}
)

// actionBody is the answer to a control: the admin call made and what the
// API answered, as it answered it.
type actionBody struct {
	Action  string          `json:"action"`
	EventID string          `json:"eventId"`
	Tier    int             `json:"tier"`
	Method  string          `json:"method"`
	URL     string          `json:"url"`
	Sent    json.RawMessage `json:"sent,omitempty"`
	Status  int             `json:"status"`
	Answer  json.RawMessage `json:"answer"`
}

// action serves POST api/events/{event}/{action}.
func (s *Server) action(w http.ResponseWriter, r *http.Request, _ auth) error {
	ev, name := r.PathValue("event"), r.PathValue("action")
	if !ids.Valid(ev) {
		return errInvalidEvent
	}
	spec, ok := actions[name]
	if !ok {
		return errUnknownAction
	}
	var in actionRequest
	if err := jsonhttp.DecodeOptional(r, &in); err != nil {
		return errActionBody
	}
	body, err := spec.body(in)
	if err != nil {
		return errActionBody
	}
	c := call{Tier: spec.tier, Method: spec.method, Path: spec.route + "/" + ev, Body: body}
	a, err := s.cfg.Upstream.do(r.Context(), c)
	if err != nil {
		s.cfg.Logger.Warn("console action got no answer", "action", name, "event", ev, "err", err)
		if errors.Is(err, errCredentials) {
			return errCredentials502
		}
		return errUnreachable502
	}
	s.cfg.Logger.Info("console action", "action", name, "event", ev, "tier", spec.tier, "status", a.Status, "client", r.RemoteAddr)
	out := actionBody{Action: name, EventID: ev, Tier: spec.tier, Method: spec.method, URL: s.cfg.Upstream.URL(c), Status: a.Status, Answer: a.Body}
	if body != nil {
		out.Sent = body
	}
	if !json.Valid(a.Body) {
		out.Answer, _ = json.Marshal(string(a.Body))
	}
	jsonhttp.WriteJSON(w, http.StatusOK, out)
	return nil
}

// body is the admin request's body: the fields the action takes, as sent.
// A field it does not take is refused, so a control can never reach a
// setting it does not name.
func (spec actionSpec) body(in actionRequest) ([]byte, error) {
	all := map[string]any{}
	if in.Shards != nil {
		all["shards"] = *in.Shards
	}
	if in.BatchSize != nil {
		all["batchSize"] = *in.BatchSize
	}
	if in.Pow != nil {
		all["pow"] = *in.Pow
	}
	if in.By != nil {
		all["by"] = *in.By
	}
	if in.Threshold != nil {
		all["threshold"] = *in.Threshold
	}
	if in.OpensAt != nil {
		if _, err := time.Parse(time.RFC3339, *in.OpensAt); err != nil {
			return nil, fmt.Errorf("console: opensAt: %w", err)
		}
		all["opensAt"] = *in.OpensAt
	}
	if in.PrequeueFrom != nil {
		if _, err := time.Parse(time.RFC3339, *in.PrequeueFrom); err != nil {
			return nil, fmt.Errorf("console: prequeueFrom: %w", err)
		}
		all["prequeueFrom"] = *in.PrequeueFrom
	}
	out := map[string]any{}
	for _, f := range spec.fields {
		if v, ok := all[f]; ok {
			out[f] = v
			delete(all, f)
		}
	}
	if len(all) > 0 {
		return nil, errors.New("console: a field this control does not take")
	}
	if spec.fields == nil {
		return nil, nil
	}
	return json.Marshal(out)
}
