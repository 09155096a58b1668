package tier1api

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vwr-go/vwr/internal/tier1"
)

// Assign serves POST /vwr/assign/{eventId}: a visitor enters the line.
type Assign struct{ d Deps }

// NewAssign returns the assign handler.
func NewAssign(d Deps) *Assign { return &Assign{d: d.withDefaults()} }

type assignResponse struct {
	Active         bool   `json:"active"`
	RequestID      string `json:"requestId"`
	EventID        string `json:"eventId"`
	Position       int64  `json:"position"`
	ServingCounter int64  `json:"servingCounter"`
	PeopleAhead    int64  `json:"peopleAhead"`
	EstimatedWait  int    `json:"estimatedWait"`
	NextPoll       int    `json:"nextPoll"`
}

type passThroughResponse struct {
	Active   bool   `json:"active"`
	Admitted bool   `json:"admitted"`
	Token    string `json:"token"`
}

// Handle answers 201 with the visitor's position, or 200 with a pass-through
// token (also set as the urr-vwr-token cookie) when the event is not active.
// An Idempotency-Key replay gets the first answer again, marked by
// Idempotent-Replayed: true.
func (h *Assign) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return h.d.serve(ctx, req, func(eventID string) (events.APIGatewayV2HTTPResponse, error) {
		key := header(req, "Idempotency-Key")
		if key != "" && !tier1.ValidID(key) {
			return events.APIGatewayV2HTTPResponse{}, tier1.ErrInvalidIdempotencyKey
		}
		res, err := h.d.Service.Assign(ctx, eventID, key)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		if !res.Active {
			resp := jsonResponse(200, passThroughResponse{Active: false, Admitted: true, Token: res.Token})
			resp.Cookies = []string{h.d.passCookie(res.Token, res.ExpiresAt)}
			return resp, nil
		}
		resp := jsonResponse(201, assignResponse{
			Active: true, RequestID: res.RequestID, EventID: res.EventID, Position: res.Position,
			ServingCounter: res.ServingCounter, PeopleAhead: res.PeopleAhead,
			EstimatedWait: res.EstimatedWait, NextPoll: res.NextPoll,
		})
		if res.Reused {
			resp.Headers["Idempotent-Replayed"] = "true"
		} else {
			h.d.Metrics.Count(eventID, MetricAssignments, 1)
		}
		return resp, nil
	})
}
