package tier1api

import (
	"net/http"
	"time"

	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/token"
)

type admittedResponse struct {
	Admitted  bool      `json:"admitted"`
	Token     string    `json:"token"`
	Position  int64     `json:"position"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Set for a drawn pre-queue ticket, as in waitingResponse: a page let
	// in by its first check after the draw still keeps its receipt.
	Phase      string     `json:"phase,omitempty"`
	TicketHash draw.Hex   `json:"ticketHash,omitempty"`
	Proof      *proofJSON `json:"proof,omitempty"`
}

type waitingResponse struct {
	Admitted       bool  `json:"admitted"`
	Position       int64 `json:"position"`
	ServingCounter int64 `json:"servingCounter"`
	PeopleAhead    int64 `json:"peopleAhead"`
	EstimatedWait  int   `json:"estimatedWait"`
	NextPoll       int   `json:"nextPoll"`
	Paused         bool  `json:"paused"`
	// Set for a drawn pre-queue ticket: its phase and Merkle proof.
	Phase      string     `json:"phase,omitempty"`
	TicketHash draw.Hex   `json:"ticketHash,omitempty"`
	Proof      *proofJSON `json:"proof,omitempty"`
}

// check serves GET /vwr/check/{eventId}/{requestId}: once the visitor's
// position is served it admits them (token in the body and the urr-vwr-token
// cookie), and otherwise reports how far they are. The requestId is the
// visitor's only identity; one of another event is 404.
func (a *API) check(w http.ResponseWriter, r *http.Request, eventID string) error {
	requestID := r.PathValue("requestId")
	if !tier1.ValidID(requestID) {
		return tier1.ErrInvalidRequestID
	}
	res, err := a.d.Service.Check(r.Context(), eventID, requestID)
	if err != nil {
		return err
	}
	if res.Phase == tier1.PhasePrequeue || res.Phase == tier1.PhaseDrawing {
		jsonhttp.WriteJSON(w, http.StatusOK, ticketCheckResponse{
			Phase: res.Phase, TicketHash: res.TicketHash[:], Sale: a.saleOf(res.Sale), NextPoll: res.NextPoll,
		})
		return nil
	}
	if !res.Admitted {
		resp := waitingResponse{
			Position: res.Position, ServingCounter: res.ServingCounter, PeopleAhead: res.PeopleAhead,
			EstimatedWait: res.EstimatedWait, NextPoll: res.NextPoll, Paused: res.Paused,
		}
		if res.Phase == tier1.PhaseDrawn {
			resp.Phase, resp.TicketHash, resp.Proof = res.Phase, res.TicketHash[:], proofOf(res.Proof)
		}
		jsonhttp.WriteJSON(w, http.StatusOK, resp)
		return nil
	}
	a.setPassCookie(w, res.Token, res.ExpiresAt)
	a.d.Metrics.Count(eventID, MetricAdmissions, 1)
	resp := admittedResponse{Admitted: true, Token: res.Token, Position: res.Position, ExpiresAt: res.ExpiresAt.UTC()}
	if res.Phase == tier1.PhaseDrawn {
		resp.Phase, resp.TicketHash, resp.Proof = res.Phase, res.TicketHash[:], proofOf(res.Proof)
	}
	jsonhttp.WriteJSON(w, http.StatusOK, resp)
	return nil
}

// setPassCookie sets the cookie that carries a Tier 1 pass to the edge check
// and to Tier 2. The server sets it, so it can be HttpOnly.
func (a *API) setPassCookie(w http.ResponseWriter, tok string, expiresAt time.Time) {
	// The pass was minted a moment ago; round so the cookie says 600, not 599.
	maxAge := int(expiresAt.Sub(a.d.Clock.Now()).Round(time.Second) / time.Second)
	http.SetCookie(w, &http.Cookie{
		Name: token.Tier1Cookie, Value: tok, Path: "/", MaxAge: max(maxAge, 1),
		SameSite: http.SameSiteLaxMode, HttpOnly: true, Secure: !a.d.InsecureCookie,
	})
}
