package tier1api

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/tier1"
)

// Cache lifetimes of the draw routes: a drawn sale's data never changes, so
// the CDN and browsers may keep it for good; before that, a second.
const (
	DrawnCacheControl   = "public, max-age=31536000, immutable"
	DrawingCacheControl = "public, max-age=1, stale-while-revalidate=2"
)

// saleJSON is the sale part of the assign, check and status answers.
type saleJSON struct {
	Phase   string    `json:"phase"`
	OpensAt time.Time `json:"opensAt"`
	// PrequeueFrom is when the pre-queue opens, when the schedule set one
	// (otherwise it was open from the schedule on).
	PrequeueFrom *time.Time `json:"prequeueFrom,omitempty"`
	Round        uint64     `json:"round"`
	RoundAt      time.Time  `json:"roundAt"`
	Root         draw.Hex   `json:"root,omitempty"`
}

func (a *API) saleOf(sum *tier1.SaleSummary) *saleJSON {
	if sum == nil || sum.Phase == tier1.SaleNone {
		return nil
	}
	c := a.d.Service.Config().Draw.Chain
	out := &saleJSON{Phase: sum.Public(), OpensAt: sum.OpensAt.UTC(), Round: sum.Round, RoundAt: c.TimeOf(sum.Round), Root: sum.Root}
	if !sum.PrequeueFrom.IsZero() {
		from := sum.PrequeueFrom.UTC()
		out.PrequeueFrom = &from
	}
	return out
}

// prequeueResponse is a pre-queue ticket: no position yet, but everything
// the page needs for its receipt and its countdown.
type prequeueResponse struct {
	Active     bool           `json:"active"`
	Phase      string         `json:"phase"`
	RequestID  string         `json:"requestId"`
	EventID    string         `json:"eventId"`
	TicketHash draw.Hex       `json:"ticketHash"`
	OpensAt    time.Time      `json:"opensAt"`
	Round      uint64         `json:"round"`
	RoundAt    time.Time      `json:"roundAt"`
	Chain      draw.ChainInfo `json:"chain"`
	Rule       string         `json:"rule"`
	NextPoll   int            `json:"nextPoll"`
}

func (a *API) writePrequeue(w http.ResponseWriter, res tier1.AssignResult) {
	c := a.d.Service.Config().Draw.Chain
	jsonhttp.WriteJSON(w, http.StatusCreated, prequeueResponse{
		Active: true, Phase: res.Phase, RequestID: res.RequestID, EventID: res.EventID,
		TicketHash: res.TicketHash[:], OpensAt: res.Sale.OpensAt.UTC(), Round: res.Sale.Round,
		RoundAt: c.TimeOf(res.Sale.Round), Chain: c, Rule: draw.Rule, NextPoll: res.NextPoll,
	})
}

// ticketCheckResponse answers a ticket holder before the draw.
type ticketCheckResponse struct {
	Admitted   bool      `json:"admitted"`
	Phase      string    `json:"phase"`
	TicketHash draw.Hex  `json:"ticketHash"`
	Sale       *saleJSON `json:"sale"`
	NextPoll   int       `json:"nextPoll"`
}

// proofJSON is a Merkle proof of a ticket hash under the Merkle root.
type proofJSON struct {
	Index    int        `json:"index"`
	N        int        `json:"n"`
	Siblings []draw.Hex `json:"siblings"`
}

func proofOf(p *draw.Proof) *proofJSON {
	if p == nil {
		return nil
	}
	out := &proofJSON{Index: p.Index, N: p.N, Siblings: make([]draw.Hex, len(p.Siblings))}
	for i := range p.Siblings {
		out.Siblings[i] = p.Siblings[i][:]
	}
	return out
}

// scheduleRequest is the body of POST /vwr/admin/schedule/{eventId}.
type scheduleRequest struct {
	OpensAt      time.Time  `json:"opensAt"`
	PrequeueFrom *time.Time `json:"prequeueFrom,omitempty"`
	// Pow is the proof of work each arrival (ticket or position) pays, in
	// expected hashes; 0 or missing: none.
	Pow int64 `json:"pow,omitempty"`
}

// saleStatusResponse is the operator's view of a sale.
type saleStatusResponse struct {
	EventID      string         `json:"eventId"`
	Phase        string         `json:"phase"`
	OpensAt      time.Time      `json:"opensAt"`
	PrequeueFrom *time.Time     `json:"prequeueFrom,omitempty"`
	Round        uint64         `json:"round"`
	RoundAt      time.Time      `json:"roundAt"`
	MarginMs     int64          `json:"marginMs"`
	CancelledAt  *time.Time     `json:"cancelledAt,omitempty"`
	Chain        draw.ChainInfo `json:"chain"`
}

func writeSaleStatus(w http.ResponseWriter, st tier1.SaleStatus) {
	round := st.CurrentRound()
	resp := saleStatusResponse{
		EventID: st.EventID, Phase: st.Phase(), OpensAt: st.OpensAt.UTC(), Round: round,
		RoundAt: st.Chain.TimeOf(round), MarginMs: st.Margin.Milliseconds(), Chain: st.Chain,
	}
	if !st.PrequeueFrom.IsZero() {
		f := st.PrequeueFrom.UTC()
		resp.PrequeueFrom = &f
	}
	if st.Cancelled {
		c := st.CancelledAt.UTC()
		resp.CancelledAt = &c
	}
	jsonhttp.WriteJSON(w, http.StatusOK, resp)
}

// schedule serves POST /vwr/admin/schedule/{eventId}: set the opening, with
// a pre-queue until then and a beacon-drawn order at it.
func (a *API) schedule(w http.ResponseWriter, r *http.Request, eventID string) error {
	var body scheduleRequest
	if err := jsonhttp.Decode(r, &body); err != nil {
		return err
	}
	var from time.Time
	if body.PrequeueFrom != nil {
		from = *body.PrequeueFrom
	}
	st, err := a.d.Service.Schedule(r.Context(), eventID, body.OpensAt, from, tier1.WithPow(body.Pow))
	if err != nil {
		return err
	}
	writeSaleStatus(w, st)
	return nil
}

// cancel serves POST /vwr/admin/cancel/{eventId}: the sale is never drawn,
// its list closes for good, and the draw document records the cancellation.
func (a *API) cancel(w http.ResponseWriter, r *http.Request, eventID string) error {
	if err := jsonhttp.RequireEmpty(r); err != nil {
		return err
	}
	st, err := a.d.Service.Cancel(r.Context(), eventID)
	if err != nil {
		return err
	}
	writeSaleStatus(w, st)
	return nil
}

// drawDoc serves GET /vwr/draw/{eventId}: the public draw document. Once
// the round is out, the first call after it draws if no advancer has yet.
func (a *API) drawDoc(w http.ResponseWriter, r *http.Request, eventID string) error {
	doc, err := a.d.Service.DrawDocDrawing(r.Context(), eventID)
	if err != nil {
		return err
	}
	cacheFor(w, doc.Status == draw.StatusDrawn)
	jsonhttp.WriteJSON(w, http.StatusOK, doc)
	return nil
}

// drawChunk serves GET /vwr/draw/{eventId}/chunks/{chunk}: a slice of the
// sorted ticket list with positions, immutable.
func (a *API) drawChunk(w http.ResponseWriter, r *http.Request, eventID string) error {
	j, err := strconv.Atoi(r.PathValue("chunk"))
	if err != nil || j < 0 || strconv.Itoa(j) != r.PathValue("chunk") {
		return errInvalidChunk
	}
	c, err := a.d.Service.DrawChunk(r.Context(), eventID, j)
	if err != nil {
		return err
	}
	cacheFor(w, true)
	jsonhttp.WriteJSON(w, http.StatusOK, c)
	return nil
}

// placeResponse is one ticket's drawn position and Merkle proof.
type placeResponse struct {
	EventID    string     `json:"eventId"`
	TicketHash draw.Hex   `json:"ticketHash"`
	Position   uint32     `json:"position"`
	Proof      *proofJSON `json:"proof"`
}

// drawProof serves GET /vwr/draw/{eventId}/proof/{ticketHash}.
func (a *API) drawProof(w http.ResponseWriter, r *http.Request, eventID string) error {
	raw, err := hex.DecodeString(r.PathValue("ticketHash"))
	if err != nil || len(raw) != 32 || hex.EncodeToString(raw) != r.PathValue("ticketHash") {
		return errInvalidTicketHash
	}
	var h draw.Hash
	copy(h[:], raw)
	p, err := a.d.Service.Place(r.Context(), eventID, h)
	if err != nil {
		return err
	}
	cacheFor(w, true)
	jsonhttp.WriteJSON(w, http.StatusOK, placeResponse{EventID: eventID, TicketHash: raw, Position: p.Position, Proof: proofOf(&p.Proof)})
	return nil
}

func cacheFor(w http.ResponseWriter, immutable bool) {
	if immutable {
		w.Header().Set("Cache-Control", DrawnCacheControl)
		return
	}
	w.Header().Set("Cache-Control", DrawingCacheControl)
}
