package console

import (
	"encoding/json"
	"strconv"
	"time"
)

// tier1Status is Tier 1's admin status (GET /vwr/admin/status/{eventId},
// each entry of GET /vwr/admin/events) as the console reads it. Fields the
// console does not know are ignored, so either API may grow.
type tier1Status struct {
	EventID            string    `json:"eventId"`
	Active             bool      `json:"active"`
	Paused             bool      `json:"paused"`
	Shards             int       `json:"shards"`
	BatchSize          int64     `json:"batchSize"`
	ServingCounter     int64     `json:"servingCounter"`
	MaxAssigned        int64     `json:"maxAssigned"`
	Assigned           int64     `json:"assigned"`
	Admitted           int64     `json:"admitted"`
	Waiting            int64     `json:"waiting"`
	AdmitRatePerMinute int64     `json:"admitRatePerMinute"`
	UpdatedAt          time.Time `json:"updatedAt"`
	Pow                int64     `json:"pow"`
	Sale               *sale     `json:"sale,omitempty"`
	// QueueAdmittedLastMinute is what the SQS consumer counted (only where
	// the admin function has the consumer's stats table).
	QueueAdmittedLastMinute *int64 `json:"queueAdmittedLastMinute,omitempty"`
}

// sale is a scheduled sale's summary in Tier 1's admin status.
type sale struct {
	Phase        string     `json:"phase"`
	OpensAt      time.Time  `json:"opensAt"`
	PrequeueFrom *time.Time `json:"prequeueFrom,omitempty"`
	Round        uint64     `json:"round"`
	RoundAt      time.Time  `json:"roundAt"`
	Root         string     `json:"root,omitempty"`
}

// tier2Stats is Tier 2's stats (GET /api/queue/admin/stats/{eventId}, each
// entry of GET /api/queue/admin/events).
type tier2Stats struct {
	EventID               string     `json:"eventId"`
	QueueSize             int64      `json:"queueSize"`
	CurrentUsers          int64      `json:"currentUsers"`
	Threshold             int64      `json:"threshold"`
	Available             int64      `json:"available"`
	AdmittedLastMinute    int64      `json:"admittedLastMinute"`
	EstimatedClearSeconds int64      `json:"estimatedClearSeconds"`
	Recovering            bool       `json:"recovering"`
	RecoveringUntil       *time.Time `json:"recoveringUntil,omitempty"`
}

// upstreamError is a tier's answer when it was not the document asked for:
// the status and the API's own {"error","code"}, or the console's words
// when the tier could not be reached.
type upstreamError struct {
	Status int    `json:"status"` // 0: no answer
	Code   string `json:"code"`
	Error  string `json:"error"`
}

func errorOf(a answer) *upstreamError {
	var e struct{ Error, Code string }
	_ = json.Unmarshal(a.Body, &e)
	if e.Code == "" {
		e.Code = "http_" + strconv.Itoa(a.Status)
	}
	return &upstreamError{Status: a.Status, Code: e.Code, Error: e.Error}
}

// Row is one event of the console's list: both tiers' views, merged.
type Row struct {
	EventID string `json:"eventId"`
	// State is the one word the list shows (see stateOf); Flags every
	// condition that holds.
	State string       `json:"state"`
	Flags []string     `json:"flags"`
	Tier1 *tier1Status `json:"tier1,omitempty"`
	Tier2 *tier2Stats  `json:"tier2,omitempty"`
}

// States of an event, as the console names them.
const (
	StateScheduled  = "scheduled"  // a sale whose pre-queue has not opened yet
	StatePrequeue   = "prequeue"   // a sale taking pre-queue tickets
	StateDrawing    = "drawing"    // the list is closed, waiting for the beacon
	StateActive     = "active"     // queueing and letting people in
	StatePaused     = "paused"     // Tier 1's advancer stopped for the event
	StateRecovering = "recovering" // Tier 2 rebuilds its line after a lost Redis
	StateInactive   = "inactive"   // Tier 1 lets everyone through
	StateCancelled  = "cancelled"  // a scheduled sale the operator cancelled
	StateUnknown    = "unknown"    // Tier 1 did not answer for the event
)

// stateOf names an event's state from whichever tiers know it. Flags hold
// every condition; the state is the most urgent of them. Tier 1 decides
// active or inactive: absent1 says Tier 1 answered but has no record of
// the event (it never activated it, so its waiting room lets everyone
// through), while a nil t1 without absent1 means Tier 1's view is unknown.
func stateOf(t1 *tier1Status, t2 *tier2Stats, absent1 bool, now time.Time) (string, []string) {
	var flags []string
	if t2 != nil && t2.Recovering {
		flags = append(flags, StateRecovering)
	}
	switch {
	case t1 != nil:
		if s := t1.Sale; s != nil {
			switch s.Phase {
			case "prequeue":
				if s.PrequeueFrom != nil && now.Before(*s.PrequeueFrom) {
					flags = append(flags, StateScheduled)
				} else {
					flags = append(flags, StatePrequeue)
				}
			case "drawing":
				flags = append(flags, StateDrawing)
			case "cancelled":
				flags = append(flags, StateCancelled)
			}
		}
		switch {
		case !t1.Active:
			flags = append(flags, StateInactive)
		case t1.Paused:
			flags = append(flags, StatePaused)
		}
		if len(flags) == 0 {
			flags = append(flags, StateActive)
		}
	case absent1:
		flags = append(flags, StateInactive)
	case len(flags) == 0:
		flags = append(flags, StateUnknown)
	}
	return flags[0], flags
}

// Estimate is a projected time for one tier's line to empty, with what it
// was computed from, so the page can say how.
type Estimate struct {
	// Seconds is nil when there is no honest projection (Basis says why).
	Seconds *int64 `json:"seconds"`
	// Basis: "rate" (the line ÷ the measured rate), "room" (free slots for
	// everyone in line: the next admission pass), "empty", "paused",
	// "no-rate" (nobody let in over the last minute), "recovering" (Tier 2
	// admits nobody until the window ends, then at its rate).
	Basis     string     `json:"basis"`
	Waiting   int64      `json:"waiting"`
	PerMinute int64      `json:"perMinute"`
	Until     *time.Time `json:"until,omitempty"`
}

// Projection is both tiers' estimates.
type Projection struct {
	Tier1 *Estimate `json:"tier1,omitempty"`
	Tier2 *Estimate `json:"tier2,omitempty"`
}

func secs(n int64) *int64 { return &n }

// project1 is Tier 1's: the visitors not yet let through ÷ the rate the
// advancer let them through over the last minute.
func project1(t *tier1Status) *Estimate {
	if t == nil {
		return nil
	}
	e := &Estimate{Waiting: t.Waiting, PerMinute: t.AdmitRatePerMinute}
	switch {
	case t.Waiting <= 0:
		e.Basis, e.Seconds = "empty", secs(0)
	case t.Paused:
		e.Basis = "paused"
	case t.AdmitRatePerMinute <= 0:
		e.Basis = "no-rate"
	default:
		e.Basis = "rate"
		e.Seconds = secs((t.Waiting*60 + t.AdmitRatePerMinute - 1) / t.AdmitRatePerMinute)
	}
	return e
}

// project2 is Tier 2's: the API's own estimatedClearSeconds (the line ÷
// the admissions of the last minute over the span they were made in),
// which the console passes on rather than recomputes.
func project2(t *tier2Stats, now time.Time) *Estimate {
	if t == nil {
		return nil
	}
	e := &Estimate{Waiting: t.QueueSize, PerMinute: t.AdmittedLastMinute}
	switch {
	case t.QueueSize <= 0:
		e.Basis, e.Seconds = "empty", secs(0)
	case t.Recovering && t.RecoveringUntil != nil:
		e.Basis, e.Until = "recovering", t.RecoveringUntil
		if t.AdmittedLastMinute > 0 {
			e.Seconds = secs(int64(max(t.RecoveringUntil.Sub(now), 0)/time.Second) + t.EstimatedClearSeconds)
		}
	case t.Available >= t.QueueSize:
		e.Basis, e.Seconds = "room", secs(1)
	case t.AdmittedLastMinute <= 0:
		e.Basis = "no-rate"
	default:
		e.Basis, e.Seconds = "rate", secs(t.EstimatedClearSeconds)
	}
	return e
}
