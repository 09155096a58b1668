package tier1api

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vwr-go/vwr/internal/edge"
	"github.com/vwr-go/vwr/internal/tier1"
)

// Check serves GET /vwr/check/{eventId}/{requestId}.
type Check struct{ d Deps }

// NewCheck returns the check handler.
func NewCheck(d Deps) *Check { return &Check{d: d.withDefaults()} }

type admittedResponse struct {
	Admitted  bool      `json:"admitted"`
	Token     string    `json:"token"`
	Position  int64     `json:"position"`
	ExpiresAt time.Time `json:"expiresAt"`
}

type waitingResponse struct {
	Admitted       bool  `json:"admitted"`
	Position       int64 `json:"position"`
	ServingCounter int64 `json:"servingCounter"`
	PeopleAhead    int64 `json:"peopleAhead"`
	EstimatedWait  int   `json:"estimatedWait"`
	NextPoll       int   `json:"nextPoll"`
}

// Handle admits the visitor (token in the body and the urr-vwr-token cookie)
// once their position is served, and otherwise reports how far they are.
// The requestId is the visitor's only identity; one of another event is 404.
func (h *Check) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return h.d.serve(ctx, req, func(eventID string) (events.APIGatewayV2HTTPResponse, error) {
		requestID, err := pathParam(req, "requestId", tier1.ErrInvalidRequestID)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		res, err := h.d.Service.Check(ctx, eventID, requestID)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		if !res.Admitted {
			return jsonResponse(200, waitingResponse{
				Position: res.Position, ServingCounter: res.ServingCounter, PeopleAhead: res.PeopleAhead,
				EstimatedWait: res.EstimatedWait, NextPoll: res.NextPoll,
			}), nil
		}
		resp := jsonResponse(200, admittedResponse{Admitted: true, Token: res.Token, Position: res.Position, ExpiresAt: res.ExpiresAt.UTC()})
		resp.Cookies = []string{h.d.passCookie(res.Token, res.ExpiresAt)}
		h.d.Metrics.Count(eventID, MetricAdmissions, 1)
		return resp, nil
	})
}

// passCookie is the Set-Cookie value that carries a Tier 1 pass to the edge
// check and to Tier 2. The server sets it, so it can be HttpOnly.
func (d Deps) passCookie(tok string, expiresAt time.Time) string {
	// The pass was minted a moment ago; round so the cookie says 600, not 599.
	maxAge := int(expiresAt.Sub(d.Clock.Now()).Round(time.Second) / time.Second)
	c := &http.Cookie{
		Name: edge.CookieName, Value: tok, Path: "/", MaxAge: max(maxAge, 1),
		SameSite: http.SameSiteLaxMode, HttpOnly: true, Secure: !d.InsecureCookie,
	}
	return c.String()
}
