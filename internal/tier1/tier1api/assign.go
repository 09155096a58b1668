package tier1api

import (
	"net/http"

	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/tier1"
)

type assignResponse struct {
	Active         bool   `json:"active"`
	RequestID      string `json:"requestId"`
	EventID        string `json:"eventId"`
	Position       int64  `json:"position"`
	ServingCounter int64  `json:"servingCounter"`
	PeopleAhead    int64  `json:"peopleAhead"`
	EstimatedWait  int    `json:"estimatedWait"`
	NextPoll       int    `json:"nextPoll"`
	Paused         bool   `json:"paused"`
}

type passThroughResponse struct {
	Active   bool   `json:"active"`
	Admitted bool   `json:"admitted"`
	Token    string `json:"token"`
}

// assign serves POST /vwr/assign/{eventId}: a visitor enters the line. It
// answers 201 with the position, or 200 with a pass-through token (also set
// as the urr-vwr-token cookie) when the event is not active. An
// Idempotency-Key replay gets the first answer again, marked by
// Idempotent-Replayed: true. Before a scheduled opening the 201 is a
// pre-queue ticket instead (phase "prequeue", no position), for which the
// Client-Nonce header (16 random bytes, hex or base64url) is required. An
// event that asks for a proof of work wants a solved challenge in the
// Altcha header (428 hands one out), and a deployment with a client-address
// header bounds each client's arrivals (429).
func (a *API) assign(w http.ResponseWriter, r *http.Request, eventID string) error {
	key := r.Header.Get("Idempotency-Key")
	if key != "" && !tier1.ValidID(key) {
		return tier1.ErrInvalidIdempotencyKey
	}
	var nonce []byte
	if v := r.Header.Get("Client-Nonce"); v != "" {
		var err error
		if nonce, err = tier1.ParseNonce(v); err != nil {
			return err
		}
	}
	res, err := a.d.Service.Enter(r.Context(), a.arrival(r, eventID, key, nonce))
	if err != nil {
		return err
	}
	if !res.Active {
		a.setPassCookie(w, res.Token, res.ExpiresAt)
		jsonhttp.WriteJSON(w, http.StatusOK, passThroughResponse{Active: false, Admitted: true, Token: res.Token})
		return nil
	}
	if res.Reused {
		w.Header().Set("Idempotent-Replayed", "true")
	} else {
		a.d.Metrics.Count(eventID, MetricAssignments, 1)
	}
	if res.Phase == tier1.PhasePrequeue {
		a.writePrequeue(w, res)
		return nil
	}
	jsonhttp.WriteJSON(w, http.StatusCreated, assignResponse{
		Active: true, RequestID: res.RequestID, EventID: res.EventID, Position: res.Position,
		ServingCounter: res.ServingCounter, PeopleAhead: res.PeopleAhead,
		EstimatedWait: res.EstimatedWait, NextPoll: res.NextPoll, Paused: res.Paused,
	})
	return nil
}
