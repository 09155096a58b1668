package tier1api

import (
	"math"
	"net/http"
	"time"

	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/tier1"
)

// StatusCacheControl lets the CDN serve one status document to every waiting
// visitor for a second, so polling costs no database read per visitor.
const StatusCacheControl = "public, max-age=1, stale-while-revalidate=2"

type statusResponse struct {
	EventID            string    `json:"eventId"`
	Active             bool      `json:"active"`
	Paused             bool      `json:"paused"`
	ServingCounter     int64     `json:"servingCounter"`
	MaxAssigned        int64     `json:"maxAssigned"`
	AdmitRatePerMinute int64     `json:"admitRatePerMinute"`
	UpdatedAt          time.Time `json:"updatedAt"`
	// Sale is set for a scheduled sale: phase, opening, beacon round and, once
	// the list closed, its commitment R.
	Sale *saleJSON `json:"sale,omitempty"`
	// What a page needs to count the people ahead of its place and estimate
	// its wait as assign and check do (static/vwr/wait.js).
	ShardCounters      []int64   `json:"shardCounters"`
	AsOf               time.Time `json:"asOf"`
	EnterRatePerSecond float64   `json:"enterRatePerSecond"`
	Pace               PaceDoc   `json:"pace"`
}

// PaceDoc is the status document's pace: tier1.Pace plus how long a page
// takes to see a raise.
type PaceDoc struct {
	Batch         int64     `json:"batch"`
	TickSeconds   float64   `json:"tickSeconds"`
	NextTickAt    time.Time `json:"nextTickAt"`
	Measured      bool      `json:"measured"`
	NoticeSeconds float64   `json:"noticeSeconds"`
}

// PageStatus is the part of the status document a waiting page estimates
// its wait from (static/vwr/wait.js reads the same fields).
type PageStatus struct {
	Active         bool  `json:"active"`
	Paused         bool  `json:"paused"`
	ServingCounter int64 `json:"servingCounter"`
	Sale           *struct {
		Phase string `json:"phase"`
	} `json:"sale"`
	ShardCounters      []int64   `json:"shardCounters"`
	AsOf               time.Time `json:"asOf"`
	EnterRatePerSecond float64   `json:"enterRatePerSecond"`
	Pace               PaceDoc   `json:"pace"`
}

// Page is the document as tier1.Page, for the estimate.
func (d PageStatus) Page() tier1.Page {
	sec := func(s float64) time.Duration { return time.Duration(math.Round(s*1000)) * time.Millisecond }
	return tier1.Page{
		ServingCounter: d.ServingCounter, Paused: d.Paused,
		AfterDraw: d.Sale != nil && (d.Sale.Phase == tier1.PhasePrequeue || d.Sale.Phase == tier1.PhaseDrawing),
		Counters:  d.ShardCounters, AsOf: d.AsOf, EnterRate: d.EnterRatePerSecond,
		Batch: d.Pace.Batch, Tick: sec(d.Pace.TickSeconds), NextTick: d.Pace.NextTickAt, Notice: sec(d.Pace.NoticeSeconds),
	}
}

// status serves GET /vwr/status/{eventId}, the public document waiting pages
// poll. An event that was never activated is inactive, not an error.
func (a *API) status(w http.ResponseWriter, r *http.Request, eventID string) error {
	st, err := a.d.Service.Status(r.Context(), eventID)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", StatusCacheControl)
	counters := st.ShardCounters
	if counters == nil {
		counters = []int64{}
	}
	jsonhttp.WriteJSON(w, http.StatusOK, statusResponse{
		EventID: st.EventID, Active: st.Active, Paused: st.Paused, ServingCounter: st.ServingCounter,
		MaxAssigned: st.MaxAssigned, AdmitRatePerMinute: st.AdmitRatePerMinute, UpdatedAt: st.UpdatedAt.UTC(),
		Sale:          a.saleOf(&st.Sale),
		ShardCounters: counters, AsOf: st.AsOf.UTC(), EnterRatePerSecond: st.EnterRate,
		Pace: PaceDoc{
			Batch: st.Pace.Batch, TickSeconds: st.Pace.Interval.Seconds(), NextTickAt: st.Pace.NextTick.UTC(),
			Measured: st.Pace.Measured, NoticeSeconds: st.Notice.Seconds(),
		},
	})
	return nil
}
