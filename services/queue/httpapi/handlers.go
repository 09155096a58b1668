package httpapi

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/services/queue"
)

// viewBody is the JSON of check, status and heartbeat. Field names are the
// seed implementation's (cchriscode/URR queue-service), so its clients work
// unchanged; entryToken and expiresAt appear only when active.
type viewBody struct {
	Queued        bool   `json:"queued"`
	Status        string `json:"status"`
	EventID       string `json:"eventId"`
	Position      int64  `json:"position"`
	PeopleAhead   int64  `json:"peopleAhead"`
	PeopleBehind  int64  `json:"peopleBehind"`
	QueueSize     int64  `json:"queueSize"`
	EstimatedWait int    `json:"estimatedWait"`
	NextPoll      int    `json:"nextPoll"`
	CurrentUsers  int64  `json:"currentUsers"`
	Threshold     int64  `json:"threshold"`
	EntryToken    string `json:"entryToken,omitempty"`
	ExpiresAt     string `json:"expiresAt,omitempty"`
	// TokenExpiresAt is when this entry token expires: renew (heartbeat)
	// well before, up to expiresAt, the slot's end.
	TokenExpiresAt string `json:"tokenExpiresAt,omitempty"`
	// Code says why, with status "done": left, slot_ended or idle.
	Code string `json:"code,omitempty"`
	// Recovering: the queue lost its state and admits nobody new until
	// recoveringUntil, while the line rebuilds (docs/tier2-store.md).
	Recovering      bool   `json:"recovering"`
	RecoveringUntil string `json:"recoveringUntil,omitempty"`
	// PeopleAheadExact is false when the instance answered a queued poll
	// from its memory of the line: position, peopleAhead and peopleBehind
	// are then an estimate (docs/tier2-store.md, "Queued polls from
	// memory"); true when read in the store's atomic step.
	PeopleAheadExact bool `json:"peopleAheadExact"`
}

// statusNotInQueue is the seed's answer to status/heartbeat from someone who
// is neither queued nor active: 200, so polling clients simply call check.
const statusNotInQueue = "not_in_queue"

// eventID validates the {eventId} path value before anything else runs.
func eventID(r *http.Request) (string, error) {
	id := r.PathValue("eventId")
	if !queue.ValidID(id) {
		return "", queue.ErrInvalidEvent
	}
	return id, nil
}

// visitor reads and validates what every visitor endpoint needs: the event
// from the path and who is asking (renewal: see identify). Nothing is
// touched before both pass.
func (a *API) visitor(w http.ResponseWriter, r *http.Request, renewal bool) (string, queue.Identity, error) {
	ev, err := eventID(r)
	if err != nil {
		return "", queue.Identity{}, err
	}
	who, err := a.identify(r, ev, renewal)
	if err != nil {
		return "", queue.Identity{}, err
	}
	setUser(w, who.UserID)
	return ev, who, nil
}

func (a *API) check(w http.ResponseWriter, r *http.Request) error {
	ev, who, err := a.visitor(w, r, false)
	if err != nil {
		return err
	}
	v, err := a.q.Check(r.Context(), ev, who)
	if err != nil {
		return err
	}
	a.writeView(w, v)
	return nil
}

// status serves status and heartbeat: both refresh the heartbeat and answer
// the seed's 200 "not_in_queue" to someone neither queued nor active. A
// renewal from a holder whose slot is over (left, idle, ended) is 410 with
// the reason as its code, and the entry cookie is cleared.
func (a *API) status(w http.ResponseWriter, r *http.Request) error {
	ev, who, err := a.visitor(w, r, true)
	if err != nil {
		return err
	}
	v, err := a.q.Status(r.Context(), ev, who)
	if errors.Is(err, queue.ErrNotQueued) {
		a.writeNotInQueue(w, ev)
		return nil
	}
	if errors.Is(err, queue.ErrGone) {
		a.clearEntryCookie(w)
	}
	if err != nil {
		return err
	}
	a.writeView(w, v)
	return nil
}

func (a *API) leave(w http.ResponseWriter, r *http.Request) error {
	// A holder gives the slot back with the entry token alone, as they renew
	// it: a pass that expired while they waited must not keep them from
	// freeing the slot for the next person.
	ev, who, err := a.visitor(w, r, true)
	if err != nil {
		return err
	}
	removed, err := a.q.Leave(r.Context(), ev, who)
	if err != nil {
		return err
	}
	// The entry cookie is useless once the slot is gone; clear it.
	a.clearEntryCookie(w)
	jsonhttp.WriteJSON(w, http.StatusOK, struct {
		Message string `json:"message"`
		EventID string `json:"eventId"`
		Removed bool   `json:"removed"`
	}{"Left queue", ev, removed})
	return nil
}

// clearEntryCookie tells the browser to drop the entry token.
func (a *API) clearEntryCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: EntryCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: a.cfg.CookieSecure})
}

func (a *API) writeView(w http.ResponseWriter, v queue.View) {
	a.cfg.Metrics.observeView(v)
	body := viewBody{
		Queued:        v.Status == queue.StatusQueued,
		Status:        string(v.Status),
		EventID:       v.EventID,
		Position:      v.Position,
		PeopleAhead:   v.PeopleAhead,
		PeopleBehind:  v.PeopleBehind,
		QueueSize:     v.QueueSize,
		EstimatedWait: v.EstimatedWait,
		NextPoll:      v.NextPoll,
		CurrentUsers:  v.CurrentUsers,
		Threshold:     v.Threshold,
		// Exact unless memory answered (every non-queued answer is the store's).
		PeopleAheadExact: v.PeopleAheadExact || v.Status != queue.StatusQueued,
	}
	if !v.RecoveringUntil.IsZero() {
		body.Recovering = true
		body.RecoveringUntil = v.RecoveringUntil.UTC().Format(time.RFC3339)
	}
	if v.Status == queue.StatusDone {
		body.Code = v.Done
	}
	if v.Status == queue.StatusActive && v.EntryToken != "" {
		body.EntryToken = v.EntryToken
		body.ExpiresAt = v.ExpiresAt.UTC().Format(time.RFC3339)
		body.TokenExpiresAt = v.TokenExpiresAt.UTC().Format(time.RFC3339)
		// Max-Age is what is left of the token, so the cookie dies with it;
		// each renewal (check or heartbeat) sets it again.
		left := int(math.Ceil(v.TokenExpiresAt.Sub(a.now()).Seconds()))
		if left > 0 {
			http.SetCookie(w, &http.Cookie{
				Name: EntryCookie, Value: v.EntryToken, Path: "/", MaxAge: left,
				HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: a.cfg.CookieSecure,
			})
		}
	}
	jsonhttp.WriteJSON(w, http.StatusOK, body)
}

func (a *API) writeNotInQueue(w http.ResponseWriter, ev string) {
	jsonhttp.WriteJSON(w, http.StatusOK, struct {
		Queued   bool   `json:"queued"`
		Status   string `json:"status"`
		EventID  string `json:"eventId"`
		NextPoll int    `json:"nextPoll"`
	}{false, statusNotInQueue, ev, queue.NextPoll(queue.StatusActive, 0)})
}

func (a *API) setThreshold(w http.ResponseWriter, r *http.Request) error {
	ev, err := eventID(r)
	if err != nil {
		return err
	}
	var body struct {
		Threshold json.RawMessage `json:"threshold"`
	}
	if err := jsonhttp.Decode(r, &body); err != nil || len(body.Threshold) == 0 {
		return errInvalidBody
	}
	// A JSON number only: "5", true or null are malformed bodies; 1.5 or
	// 1e9 are numbers out of the accepted (integer) range.
	if c := body.Threshold[0]; c != '-' && (c < '0' || c > '9') {
		return errInvalidBody
	}
	n, err := strconv.ParseInt(string(body.Threshold), 10, 64)
	if err != nil || n < queue.MinThreshold || n > queue.MaxThreshold {
		return queue.ErrInvalidThreshold
	}
	if err := a.q.SetThreshold(r.Context(), ev, n); err != nil {
		return err
	}
	jsonhttp.WriteJSON(w, http.StatusOK, struct {
		EventID   string `json:"eventId"`
		Threshold int64  `json:"threshold"`
	}{ev, n})
	return nil
}

// statsBody extends the seed's admin answer (eventId, queueSize,
// currentUsers, threshold, available) with throughput figures.
type statsBody struct {
	EventID                   string `json:"eventId"`
	QueueSize                 int64  `json:"queueSize"`
	CurrentUsers              int64  `json:"currentUsers"`
	Threshold                 int64  `json:"threshold"`
	Available                 int64  `json:"available"`
	AdmittedLastMinute        int64  `json:"admittedLastMinute"`
	OldestHeartbeatAgeSeconds int64  `json:"oldestHeartbeatAgeSeconds"`
	EstimatedClearSeconds     int    `json:"estimatedClearSeconds"`
	Recovering                bool   `json:"recovering"`
	RecoveringUntil           string `json:"recoveringUntil,omitempty"`
}

func (a *API) stats(w http.ResponseWriter, r *http.Request) error {
	ev, err := eventID(r)
	if err != nil {
		return err
	}
	s, err := a.q.Stats(r.Context(), ev)
	if err != nil {
		return err
	}
	a.cfg.Metrics.observeStats(s)
	jsonhttp.WriteJSON(w, http.StatusOK, statsOf(s))
	return nil
}

func statsOf(s queue.Stats) statsBody {
	var until string
	if !s.RecoveringUntil.IsZero() {
		until = s.RecoveringUntil.UTC().Format(time.RFC3339)
	}
	return statsBody{
		Recovering:                until != "",
		RecoveringUntil:           until,
		EventID:                   s.EventID,
		QueueSize:                 s.QueueSize,
		CurrentUsers:              s.CurrentUsers,
		Threshold:                 s.Threshold,
		Available:                 max(0, s.Threshold-s.CurrentUsers),
		AdmittedLastMinute:        s.AdmittedLastMinute,
		OldestHeartbeatAgeSeconds: int64(s.OldestHeartbeatAge / time.Second),
		EstimatedClearSeconds:     s.EstimatedClearAfter,
	}
}

// events serves the operator's event list: every event with a line or
// active users, then the other configured ones, each as stats says.
func (a *API) events(w http.ResponseWriter, r *http.Request) error {
	if err := jsonhttp.RequireEmpty(r); err != nil {
		return err
	}
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > queue.MaxEventsLimit {
			return errInvalidEventsLimit
		}
		limit = n
	}
	list, truncated, err := a.q.Events(r.Context(), limit)
	if err != nil {
		return err
	}
	out := make([]statsBody, 0, len(list))
	for _, s := range list {
		out = append(out, statsOf(s))
	}
	jsonhttp.WriteJSON(w, http.StatusOK, struct {
		Events    []statsBody `json:"events"`
		Truncated bool        `json:"truncated"`
	}{out, truncated})
	return nil
}

type rankEntryBody struct {
	EventID    string `json:"eventId"`
	Admissions int64  `json:"admissions"`
}

func (a *API) ranking(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	period := q.Get("period")
	if period == "" {
		period = "daily"
	}
	limit := queue.DefaultRankingLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > queue.MaxRankingLimit {
			return errInvalidLimit
		}
		limit = n
	}
	entries, err := a.q.Ranking(r.Context(), period, limit)
	if err != nil {
		return err
	}
	out := make([]rankEntryBody, 0, len(entries))
	for _, e := range entries {
		out = append(out, rankEntryBody{EventID: e.EventID, Admissions: e.Admissions})
	}
	jsonhttp.WriteJSON(w, http.StatusOK, struct {
		Period  string          `json:"period"`
		Ranking []rankEntryBody `json:"ranking"`
	}{period, out})
	return nil
}

// livez answers as long as the process serves HTTP, whatever Redis does:
// it is the load balancer's health check, so a Redis failover (which every
// task sees at once) does not get every task replaced mid-sale. /healthz,
// which pings Redis, is for people and dashboards.
func (a *API) livez(w http.ResponseWriter, r *http.Request) error {
	jsonhttp.WriteJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
	}{"ok"})
	return nil
}

func (a *API) healthz(w http.ResponseWriter, r *http.Request) error {
	if err := a.q.Ping(r.Context()); err != nil {
		if !errors.Is(err, queue.ErrUnavailable) {
			err = errors.Join(queue.ErrUnavailable, err)
		}
		return err
	}
	jsonhttp.WriteJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
	}{"ok"})
	return nil
}
