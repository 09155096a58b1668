package tier1api

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// StatusCacheControl lets the CDN serve one status document to every waiting
// visitor for a second, so polling costs no database read per visitor.
const StatusCacheControl = "public, max-age=1, stale-while-revalidate=2"

// Status serves GET /vwr/status/{eventId}.
type Status struct{ d Deps }

// NewStatus returns the status handler.
func NewStatus(d Deps) *Status { return &Status{d: d.withDefaults()} }

type statusResponse struct {
	EventID            string    `json:"eventId"`
	Active             bool      `json:"active"`
	ServingCounter     int64     `json:"servingCounter"`
	MaxAssigned        int64     `json:"maxAssigned"`
	AdmitRatePerMinute int64     `json:"admitRatePerMinute"`
	UpdatedAt          time.Time `json:"updatedAt"`
}

// Handle answers the event's public status document. An event that was never
// activated is inactive, not an error.
func (h *Status) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return h.d.serve(ctx, req, func(eventID string) (events.APIGatewayV2HTTPResponse, error) {
		st, err := h.d.Service.Status(ctx, eventID)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		resp := jsonResponse(200, statusResponse{
			EventID: st.EventID, Active: st.Active, ServingCounter: st.ServingCounter,
			MaxAssigned: st.MaxAssigned, AdmitRatePerMinute: st.AdmitRatePerMinute, UpdatedAt: st.UpdatedAt.UTC(),
		})
		resp.Headers["Cache-Control"] = StatusCacheControl
		return resp, nil
	})
}
