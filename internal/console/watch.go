package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/ids"
	"github.com/vwr-go/vwr/internal/jsonhttp"
)

// Sample is one reading of a watched event: both tiers' numbers the
// charts draw, or what each tier answered instead.
type Sample struct {
	Seq int64          `json:"seq"`
	At  int64          `json:"at"` // unix ms
	T1  *point1        `json:"t1,omitempty"`
	T2  *point2        `json:"t2,omitempty"`
	E1  *upstreamError `json:"e1,omitempty"`
	E2  *upstreamError `json:"e2,omitempty"`
}

type point1 struct {
	Serving  int64  `json:"serving"`
	Assigned int64  `json:"assigned"`
	Waiting  int64  `json:"waiting"`
	Rate     int64  `json:"rate"`
	Paused   bool   `json:"paused,omitempty"`
	SQS      *int64 `json:"sqs,omitempty"`
}

type point2 struct {
	Line       int64 `json:"line"`
	Active     int64 `json:"active"`
	Threshold  int64 `json:"threshold"`
	Rate       int64 `json:"rate"`
	Recovering bool  `json:"recovering,omitempty"`
}

// watch is one event some console is looking at: a reader that samples it
// every SampleEvery while a console has asked within watchIdle, shared by
// every tab.
type watch struct {
	event string

	mu      sync.Mutex
	samples []Sample
	seq     int64
	t1      *tier1Status
	t2      *tier2Stats
	e1, e2  *upstreamError
	asked   time.Time // the last time a console asked
	running bool
	draw    *drawView
	drawAt  time.Time
}

// watchIdle stops a watch's reader once no console asked for this long.
const watchIdle = 15 * time.Second

// maxWatches bounds the events watched at once.
const maxWatches = 32

var errTooManyWatches = &jsonhttp.Error{Status: http.StatusServiceUnavailable, Code: "too_many_watches",
	Message: "the console is watching too many events at once; close some tabs"}

// watchOf returns eventID's watch, starting its reader with a first
// reading when nobody was watching it.
func (s *Server) watchOf(ctx context.Context, eventID string) (*watch, error) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	w, ok := s.watches[eventID]
	if !ok {
		if len(s.watches) >= maxWatches {
			s.forgetIdle()
		}
		if len(s.watches) >= maxWatches {
			s.mu.Unlock()
			return nil, errTooManyWatches
		}
		w = &watch{event: eventID}
		s.watches[eventID] = w
	}
	// Marked running under s.mu, so forgetIdle never drops a watch that
	// is about to start.
	w.mu.Lock()
	w.asked = now
	start := !w.running
	w.running = true
	w.mu.Unlock()
	s.mu.Unlock()
	if start {
		s.sample(ctx, w)
		go s.read(w)
	}
	return w, nil
}

// forgetIdle drops the watch nobody has asked for the longest among those
// whose reader has stopped, with its history, to make room for another
// event. Called with s.mu held.
func (s *Server) forgetIdle() {
	var oldest string
	var at time.Time
	for id, w := range s.watches {
		w.mu.Lock()
		idle, asked := !w.running, w.asked
		w.mu.Unlock()
		if idle && (oldest == "" || asked.Before(at)) {
			oldest, at = id, asked
		}
	}
	if oldest != "" {
		delete(s.watches, oldest)
	}
}

// read samples w every SampleEvery until nobody asked for watchIdle (or
// the console stops); the watch keeps its history for a later reader.
func (s *Server) read(w *watch) {
	t := time.NewTicker(s.cfg.SampleEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		idle := s.cfg.Clock.Now().Sub(w.asked) > watchIdle
		if idle {
			w.running = false
		}
		w.mu.Unlock()
		if idle {
			return
		}
		s.sample(s.ctx, w)
	}
}

// sampleTimeout bounds one reading of both tiers.
const sampleTimeout = 5 * time.Second

// sample reads both tiers of w's event at once and appends the reading.
func (s *Server) sample(ctx context.Context, w *watch) {
	ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	defer cancel()
	var t1 *tier1Status
	var t2 *tier2Stats
	var e1, e2 *upstreamError
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		t1, e1 = readJSON[tier1Status](ctx, s, call{Tier: 1, Method: http.MethodGet, Path: "/vwr/admin/status/" + w.event})
	}()
	go func() {
		defer wg.Done()
		t2, e2 = readJSON[tier2Stats](ctx, s, call{Tier: 2, Method: http.MethodGet, Path: "/api/queue/admin/stats/" + w.event})
	}()
	wg.Wait()
	now := s.cfg.Clock.Now()
	smp := Sample{At: now.UnixMilli(), E1: e1, E2: e2}
	if t1 != nil {
		smp.T1 = &point1{Serving: t1.ServingCounter, Assigned: t1.Assigned, Waiting: t1.Waiting,
			Rate: t1.AdmitRatePerMinute, Paused: t1.Paused, SQS: t1.QueueAdmittedLastMinute}
	}
	if t2 != nil {
		smp.T2 = &point2{Line: t2.QueueSize, Active: t2.CurrentUsers, Threshold: t2.Threshold,
			Rate: t2.AdmittedLastMinute, Recovering: t2.Recovering}
	}
	keep := int(s.cfg.History / s.cfg.SampleEvery)
	w.mu.Lock()
	w.seq++
	smp.Seq = w.seq
	w.samples = append(w.samples, smp)
	if len(w.samples) > keep {
		w.samples = append(w.samples[:0], w.samples[len(w.samples)-keep:]...)
	}
	w.t1, w.t2, w.e1, w.e2 = t1, t2, e1, e2
	needDraw := t1 != nil && t1.Sale != nil && (w.draw == nil || !w.draw.final()) && now.Sub(w.drawAt) >= drawEvery
	if needDraw {
		w.drawAt = now
	}
	w.mu.Unlock()
	if needDraw {
		if d := s.readDraw(ctx, w.event); d != nil {
			w.mu.Lock()
			w.draw = d
			w.mu.Unlock()
		}
	}
}

// readJSON asks c and decodes a 200 into T; anything else is the error
// the page shows. The cause of a failure without an answer is logged, and
// the page gets fixed words.
func readJSON[T any](ctx context.Context, s *Server, c call) (*T, *upstreamError) {
	a, err := s.cfg.Upstream.do(ctx, c)
	if err != nil {
		return nil, s.noAnswer(c, err)
	}
	if a.Status != http.StatusOK {
		return nil, errorOf(a)
	}
	var v T
	if err := json.Unmarshal(a.Body, &v); err != nil {
		s.cfg.Logger.Warn("console: upstream answer not understood", "tier", c.Tier, "path", c.Path, "err", err)
		return nil, &upstreamError{Status: a.Status, Code: "bad_answer", Error: "the API's answer was not the JSON expected"}
	}
	return &v, nil
}

// noAnswer is the page's words for a call that got no answer.
func (s *Server) noAnswer(c call, err error) *upstreamError {
	s.cfg.Logger.Warn("console: upstream call failed", "tier", c.Tier, "path", c.Path, "err", err)
	host := s.cfg.Upstream.Tier2.Host
	if c.Tier == 1 {
		host = s.cfg.Upstream.Tier1.Host
	}
	if errors.Is(err, errCredentials) {
		return &upstreamError{Code: "credentials", Error: "the console could not add the operator's credentials for Tier " + strconv.Itoa(c.Tier) + " (its log says why)"}
	}
	return &upstreamError{Code: "unreachable", Error: "no answer from Tier " + strconv.Itoa(c.Tier) + " at " + host}
}

// drawEvery is how often an undrawn sale's draw document is read again.
const drawEvery = 5 * time.Second

// drawView is what the console shows of a sale's public draw document.
type drawView struct {
	Status     string     `json:"status"`
	OpensAt    time.Time  `json:"opensAt"`
	Round      uint64     `json:"round"`
	RoundAt    time.Time  `json:"roundAt"`
	RoundMoved string     `json:"roundMoved,omitempty"`
	ClosedAt   *time.Time `json:"closedAt,omitempty"`
	N          *int64     `json:"n,omitempty"`
	Root       string     `json:"root,omitempty"`
	Randomness string     `json:"randomness,omitempty"`
	// URL is the public document itself; Verify the command that checks it.
	URL    string `json:"url"`
	Verify string `json:"verify"`
}

func (d *drawView) final() bool { return d.Status == "drawn" || d.Status == "cancelled" }

func (s *Server) readDraw(ctx context.Context, eventID string) *drawView {
	c := call{Tier: 1, Method: http.MethodGet, Path: "/vwr/draw/" + eventID, Public: true}
	doc, e := readJSON[struct {
		drawView
		Beacon *struct {
			Randomness string `json:"randomness"`
		} `json:"beacon"`
	}](ctx, s, c)
	if e != nil {
		return nil
	}
	d := doc.drawView
	if doc.Beacon != nil {
		d.Randomness = doc.Beacon.Randomness
	}
	d.URL = s.cfg.Upstream.URL(c)
	d.Verify = "vwr verify-draw -event " + eventID + " -url " + s.cfg.Upstream.Tier1.String()
	return &d
}

// listCache is the merged event list, read at most every ListEvery.
type listCache struct {
	mu         sync.Mutex
	at         time.Time
	rows       []Row
	truncated  bool
	errs       map[string]*upstreamError
	refreshing bool
}

// listLimit is how many events the console asks each tier for.
const listLimit = 200

// events returns the list, reading it again first when none was read yet,
// or in the background when it is older than ListEvery.
func (s *Server) events(ctx context.Context) ([]Row, bool, map[string]*upstreamError) {
	l := &s.list
	now := s.cfg.Clock.Now()
	l.mu.Lock()
	stale := now.Sub(l.at) >= s.cfg.ListEvery
	first := l.at.IsZero()
	if stale && !l.refreshing {
		l.refreshing = true
		if first {
			l.mu.Unlock()
			s.refreshList(ctx)
			l.mu.Lock()
		} else {
			go s.refreshList(s.ctx)
		}
	}
	rows, truncated, errs := l.rows, l.truncated, l.errs
	l.mu.Unlock()
	return rows, truncated, errs
}

func (s *Server) refreshList(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	type list1 struct {
		Events    []tier1Status `json:"events"`
		Truncated bool          `json:"truncated"`
	}
	type list2 struct {
		Events    []tier2Stats `json:"events"`
		Truncated bool         `json:"truncated"`
	}
	var l1 *list1
	var l2 *list2
	var e1, e2 *upstreamError
	var wg sync.WaitGroup
	wg.Add(2)
	q := "?limit=" + strconv.Itoa(listLimit)
	go func() {
		defer wg.Done()
		l1, e1 = readJSON[list1](ctx, s, call{Tier: 1, Method: http.MethodGet, Path: "/vwr/admin/events" + q})
	}()
	go func() {
		defer wg.Done()
		l2, e2 = readJSON[list2](ctx, s, call{Tier: 2, Method: http.MethodGet, Path: "/api/queue/admin/events" + q})
	}()
	wg.Wait()
	now := s.cfg.Clock.Now()
	byID := map[string]*Row{}
	var order []string
	row := func(id string) *Row {
		if r, ok := byID[id]; ok {
			return r
		}
		r := &Row{EventID: id}
		byID[id] = r
		order = append(order, id)
		return r
	}
	truncated := false
	if l1 != nil {
		truncated = l1.Truncated
		for i := range l1.Events {
			if ids.Valid(l1.Events[i].EventID) {
				row(l1.Events[i].EventID).Tier1 = &l1.Events[i]
			}
		}
	}
	if l2 != nil {
		truncated = truncated || l2.Truncated
		for i := range l2.Events {
			if ids.Valid(l2.Events[i].EventID) {
				row(l2.Events[i].EventID).Tier2 = &l2.Events[i]
			}
		}
	}
	rows := make([]Row, 0, len(order))
	for _, id := range order {
		r := byID[id]
		// An event missing from a list Tier 1 gave is one it never
		// activated, or not lately.
		r.State, r.Flags = stateOf(r.Tier1, r.Tier2, l1 != nil, now)
		rows = append(rows, *r)
	}
	// The events that need eyes first, then by id.
	sort.SliceStable(rows, func(i, j int) bool {
		ri, rj := stateRank[rows[i].State], stateRank[rows[j].State]
		if ri != rj {
			return ri < rj
		}
		return rows[i].EventID < rows[j].EventID
	})
	errs := map[string]*upstreamError{}
	if e1 != nil {
		errs["tier1"] = e1
	}
	if e2 != nil {
		errs["tier2"] = e2
	}
	l := &s.list
	l.mu.Lock()
	l.at, l.refreshing, l.errs = now, false, errs
	// A failed read keeps the rows last read rather than blanking the list.
	if l1 != nil || l2 != nil || l.rows == nil {
		l.rows, l.truncated = rows, truncated
	}
	l.mu.Unlock()
}

var stateRank = map[string]int{
	StateRecovering: 0, StateDrawing: 1, StatePrequeue: 2, StatePaused: 3, StateActive: 4,
	StateScheduled: 5, StateCancelled: 6, StateInactive: 7, StateUnknown: 8,
}

// liveBody is GET api/live: the list, and the watched event's readings
// since the seq the page has.
type liveBody struct {
	Now        int64                     `json:"now"`
	Events     []Row                     `json:"events"`
	Truncated  bool                      `json:"truncated"`
	ListErrors map[string]*upstreamError `json:"listErrors,omitempty"`
	Event      *eventBody                `json:"event,omitempty"`
	// SampleEveryMs is how often the page should ask.
	SampleEveryMs int64  `json:"sampleEveryMs"`
	Site          string `json:"site,omitempty"`
}

type eventBody struct {
	Row
	Errors     map[string]*upstreamError `json:"errors,omitempty"`
	Samples    []Sample                  `json:"samples"`
	Seq        int64                     `json:"seq"`
	Projection Projection                `json:"projection"`
	Draw       *drawView                 `json:"draw,omitempty"`
}

var errInvalidEvent = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_event_id", Message: "event id must match " + ids.Pattern}
var errInvalidSince = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_since", Message: "since must be a non-negative integer"}

// live serves GET api/live?event=E&since=N: one request a second per open
// console gives every chart its data.
func (s *Server) live(w http.ResponseWriter, r *http.Request, _ auth) error {
	q := r.URL.Query()
	body := liveBody{SampleEveryMs: s.cfg.SampleEvery.Milliseconds(), Site: s.cfg.Site}
	body.Events, body.Truncated, body.ListErrors = s.events(r.Context())
	if body.Events == nil {
		body.Events = []Row{}
	}
	if ev := q.Get("event"); ev != "" {
		if !ids.Valid(ev) {
			return errInvalidEvent
		}
		var since int64
		if v := q.Get("since"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return errInvalidSince
			}
			since = n
		}
		wt, err := s.watchOf(r.Context(), ev)
		if err != nil {
			return err
		}
		body.Event = s.view(wt, since)
		// The list's row of the watched event shows the fresher reading.
		rows := make([]Row, len(body.Events))
		copy(rows, body.Events)
		for i := range rows {
			if rows[i].EventID == ev && (body.Event.Tier1 != nil || body.Event.Tier2 != nil) {
				rows[i] = body.Event.Row
			}
		}
		body.Events = rows
	}
	body.Now = s.cfg.Clock.Now().UnixMilli()
	jsonhttp.WriteJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) view(w *watch, since int64) *eventBody {
	now := s.cfg.Clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	b := &eventBody{Row: Row{EventID: w.event, Tier1: w.t1, Tier2: w.t2}, Seq: w.seq, Draw: w.draw, Samples: []Sample{}}
	// Tier 1 knows no event it never activated (404): for its waiting room
	// that is an inactive event, not an error.
	b.State, b.Flags = stateOf(w.t1, w.t2, w.e1 != nil && w.e1.Status == http.StatusNotFound, now)
	b.Projection = Projection{Tier1: project1(w.t1), Tier2: project2(w.t2, now)}
	if w.e1 != nil || w.e2 != nil {
		b.Errors = map[string]*upstreamError{}
		if w.e1 != nil {
			b.Errors["tier1"] = w.e1
		}
		if w.e2 != nil {
			b.Errors["tier2"] = w.e2
		}
	}
	i := sort.Search(len(w.samples), func(i int) bool { return w.samples[i].Seq > since })
	b.Samples = append(b.Samples, w.samples[i:]...)
	return b
}
