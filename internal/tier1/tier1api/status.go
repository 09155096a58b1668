package tier1api

import (
	"net/http"
	"time"

	"github.com/vwr-go/vwr/internal/jsonhttp"
)

// StatusCacheControl lets the CDN serve one status document to every waiting
// visitor for a second, so polling costs no database read per visitor.
const StatusCacheControl = "public, max-age=1, stale-while-revalidate=2"

type statusResponse struct {
	EventID            string    `json:"eventId"`
	Active             bool      `json:"active"`
	ServingCounter     int64     `json:"servingCounter"`
	MaxAssigned        int64     `json:"maxAssigned"`
	AdmitRatePerMinute int64     `json:"admitRatePerMinute"`
	UpdatedAt          time.Time `json:"updatedAt"`
	// Sale is set for a scheduled sale: phase, opening, beacon round and, once
	// the list closed, its commitment R.
	Sale *saleJSON `json:"sale,omitempty"`
}

// status serves GET /vwr/status/{eventId}, the public document waiting pages
// poll. An event that was never activated is inactive, not an error.
func (a *API) status(w http.ResponseWriter, r *http.Request, eventID string) error {
	st, err := a.d.Service.Status(r.Context(), eventID)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", StatusCacheControl)
	jsonhttp.WriteJSON(w, http.StatusOK, statusResponse{
		EventID: st.EventID, Active: st.Active, ServingCounter: st.ServingCounter,
		MaxAssigned: st.MaxAssigned, AdmitRatePerMinute: st.AdmitRatePerMinute, UpdatedAt: st.UpdatedAt.UTC(),
		Sale: a.saleOf(&st.Sale),
	})
	return nil
}
