package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
	"github.com/vwr-go/vwr/internal/token"
)

// Where a visitor is in its journey.
type stage int

const (
	stageTier1   stage = iota // the Tier 1 waiting page (vwr.js)
	stageTier2                // the Tier 2 queue page (queue.js)
	stageSeat                 // admitted; holds a seat on the protected site (Config.Seats)
	stageDwell                // admitted, on the protected site; next: leave (or renew)
	stageReenter              // left, and tries the same pass again (Config.Reenter)
	stageDone
)

// Tier 1 page's next request.
type tier1Next int

const (
	nextAssign tier1Next = iota
	nextStatus
	nextCheck
)

// visitor is one simulated person. Its step is one request, exactly as the
// pages would send it, and it returns how long to wait before the next.
type visitor struct {
	r    *run
	id   int
	rng  *rand.Rand
	idem string

	stage  stage
	t1next tier1Next
	// late is how long this visitor's steps waited for one of the tool's
	// workers after they fell due, in all (the scheduler adds to it). A
	// browser has no such delay. A late poll while the visitor waits does
	// not hold back its turn (the line moves on without it), but the late
	// steps after the last "still waiting" answer are late in noticing it:
	// measured waits leave those out (lateWait*, the sum at that answer,
	// against the sum when the turn was seen).
	late     time.Duration
	failures int
	tier2    int // which Tier 2 instance this visitor's balancer sends it to

	// Tier 1.
	requestID string
	altcha    string // the solved challenge for the next assign (Config.Pow)
	position  int64
	serving   int64
	nextPoll  int
	enterSent time.Time
	enterRecv time.Time
	lateWait1 time.Duration // late at the last Tier 1 answer that said "wait"
	est1      float64       // the estimate shown when the place was taken, seconds
	// est1Served: the place was already served when it was taken (no wait).
	est1Served bool
	// later1 are the estimates the page made from later status documents;
	// ahead1 the people it showed ahead, for the people-ahead error.
	later1         estimates
	ahead1         []aheadShown
	dueAt1         time.Time // when the page expects its turn (zero: unknown)
	lastWaitSent1  time.Time
	tier1AdmitRecv time.Time
	lateAdmit1     time.Duration
	pass           string
	passThrough    bool
	requeued       int
	passRenewals   int
	leaveAttempts  int
	gaveUp         bool
	arrived        time.Time
	t2FirstSent    time.Time     // first Tier 2 check of the current pass
	t2FirstQueued  time.Time     // first queued answer received
	t2FirstRecv    time.Time     // first answer (queued or active) to the first check received
	lateWait2      time.Duration // late at the last queued answer
	t2LastQueued   time.Time     // last queued answer's request sent
	queuedNow      bool          // the last Tier 2 answer for this pass said "queued"
	est2           float64       // the estimate at the first queued answer, seconds
	est2Set        bool
	later2         estimates // the estimates of later queued answers
	activeRecv     time.Time
	lateActive     time.Duration
	activeSent     time.Time
	entry          string // the entry token, for the protected site
	seat           string // the seat held ("" when none)
	seatAt         time.Time
	soldOut        bool // found no seat left
	seatTries      int
	direct         bool
	leaveSent      time.Time
	left           bool
	finished       time.Time
	dwellEnds      time.Time       // when the visitor means to leave
	slots          map[string]bool // the slot ends (expiresAt) of every active answer
	reenters       bool            // will try the same pass again after leaving
	reentries      int             // times it did
	refused        bool            // was told "done" when it tried again
}

func newVisitor(r *run, id int, seed uint64) *visitor {
	v := &visitor{r: r, id: id, rng: rand.New(rand.NewPCG(seed, uint64(id)+1))}
	v.idem = v.newKey()
	v.tier2 = id % len(r.t.Tier2)
	v.reenters = v.rng.Float64() < r.cfg.Reenter
	return v
}

func (v *visitor) newKey() string { return fmt.Sprintf("lt-%d-%016x", v.id, v.rng.Uint64()) }

// step sends the visitor's next request.
func (v *visitor) step(ctx context.Context) (time.Duration, bool) {
	if v.arrived.IsZero() {
		v.arrived = v.r.cfg.Clock.Now()
		v.r.arrived.Add(1)
	}
	switch v.stage {
	case stageTier1:
		return v.tier1(ctx)
	case stageTier2:
		return v.tier2Check(ctx)
	case stageSeat:
		return v.holdSeat(ctx)
	case stageDwell:
		return v.dwell(ctx)
	case stageReenter:
		return v.reenter(ctx)
	}
	return 0, true
}

func (v *visitor) done() (time.Duration, bool) {
	v.stage = stageDone
	v.finished = v.r.cfg.Clock.Now()
	return 0, true
}

func (v *visitor) api1(path string) string { return v.r.t.Base + "/vwr-api/vwr/" + path }
func (v *visitor) api2(path string) string {
	v.tier2 = v.r.lb.pick(v.tier2)
	return v.r.t.Tier2[v.tier2] + "/api/queue/" + path + "/" + v.r.cfg.Event
}

// tier1 is one turn of vwr.js's loop.
func (v *visitor) tier1(ctx context.Context) (time.Duration, bool) {
	ev := v.r.cfg.Event
	switch v.t1next {
	case nextAssign:
		hdr := map[string]string{"Idempotency-Key": v.idem}
		endpoint := "tier1.assign"
		switch {
		case v.altcha != "":
			hdr["Altcha"] = v.altcha
		case v.r.cfg.Pow > 0:
			endpoint = endpointUnpaid // answered 428 with the challenge, as the page expects
		}
		res := v.r.call(ctx, endpoint, http.MethodPost, v.api1("assign/"+ev), hdr, nil)
		if !res.ok() && v.solveRefusal(res) {
			return 0, false // send again with the solution, as pow.js does
		}
		var b struct {
			Active         *bool   `json:"active"`
			Token          string  `json:"token"`
			RequestID      string  `json:"requestId"`
			Position       int64   `json:"position"`
			ServingCounter int64   `json:"servingCounter"`
			PeopleAhead    int64   `json:"peopleAhead"`
			EstimatedWait  float64 `json:"estimatedWait"`
			NextPoll       int     `json:"nextPoll"`
		}
		if err := res.decode(&b); err != nil {
			return v.failed1(res)
		}
		if b.Active != nil && !*b.Active {
			v.pass, v.passThrough = b.Token, true
			return v.toTier2()
		}
		if b.RequestID != v.requestID {
			// A new place (not an idempotent replay after a lost pass).
			v.enterSent, v.enterRecv, v.est1, v.lastWaitSent1 = res.sent, res.recv, b.EstimatedWait, time.Time{}
			v.est1Served = b.Position <= b.ServingCounter
			v.later1, v.ahead1 = estimates{}, nil
			v.ahead1 = append(v.ahead1, aheadShown{from: res.sent, t: res.recv, serving: b.ServingCounter, shown: b.PeopleAhead})
		}
		v.requestID, v.position, v.serving, v.nextPoll = b.RequestID, b.Position, b.ServingCounter, b.NextPoll
		v.dueAt1, v.lateWait1 = res.recv.Add(secs(b.EstimatedWait)), v.late
		return v.afterUpdate()
	case nextStatus:
		res := v.r.call(ctx, "tier1.status", http.MethodGet, v.api1("status/"+ev), nil, nil)
		var b tier1api.PageStatus
		if err := res.decode(&b); err != nil {
			return v.failed1(res)
		}
		if !b.Active {
			// The event stopped queueing: the assign answer carries the pass.
			v.requestID, v.t1next = "", nextAssign
			return 0, false
		}
		v.serving = max(v.serving, b.ServingCounter)
		// The page's own estimate from the document (wait.js).
		if w, ok := b.Page().Wait(v.position, res.recv); ok && !w.AfterDraw && v.position > b.ServingCounter {
			v.later1.add(res.recv, float64(w.Seconds))
			v.lateWait1 = v.late
			v.ahead1 = append(v.ahead1, aheadShown{from: res.recv, t: res.recv, serving: b.ServingCounter, shown: w.PeopleAhead})
			v.dueAt1, v.nextPoll = res.recv.Add(secs(float64(w.Seconds))), 0
		}
		return v.afterUpdate()
	default:
		res := v.r.call(ctx, "tier1.check", http.MethodGet, v.api1("check/"+ev+"/"+v.requestID), nil, nil)
		var b struct {
			Admitted       bool    `json:"admitted"`
			Token          string  `json:"token"`
			Position       int64   `json:"position"`
			ServingCounter int64   `json:"servingCounter"`
			NextPoll       int     `json:"nextPoll"`
			EstimatedWait  float64 `json:"estimatedWait"`
		}
		if err := res.decode(&b); err != nil {
			return v.failed1(res)
		}
		if b.Admitted {
			v.pass = b.Token
			if v.tier1AdmitRecv.IsZero() {
				v.tier1AdmitRecv, v.lateAdmit1 = res.recv, v.late
			}
			return v.toTier2()
		}
		v.lastWaitSent1 = res.sent
		if b.Position > 0 {
			v.position = b.Position
		}
		v.serving = max(v.serving, b.ServingCounter)
		v.nextPoll = b.NextPoll
		// Not yet after all (the status document ran ahead of this
		// instance's snapshot): the page shows this answer's estimate.
		v.later1.add(res.recv, b.EstimatedWait)
		v.dueAt1, v.lateWait1 = res.recv.Add(secs(b.EstimatedWait)), v.late
		v.failures = 0
		v.t1next = nextStatus
		return v.tier1Interval(), false
	}
}

// afterUpdate is the loop's tail: check when due, else wait and poll.
func (v *visitor) afterUpdate() (time.Duration, bool) {
	v.failures = 0
	if v.position <= v.serving {
		v.t1next = nextCheck
		return 0, false
	}
	v.t1next = nextStatus
	return v.tier1Interval(), false
}

// failed1 is vwr.js's catch: a lost place is taken again, a final 4xx ends
// the visit, anything else is retried after a backoff.
func (v *visitor) failed1(res response) (time.Duration, bool) {
	if res.status == http.StatusNotFound && v.requestID != "" {
		v.requeued++
		v.requestID, v.idem, v.altcha, v.t1next = "", v.newKey(), "", nextAssign
		return 0, false
	}
	if finalError(res.status) {
		v.gaveUp = true
		return v.done()
	}
	v.failures++
	return v.backoff(res.retryAfter), false
}

func (v *visitor) toTier2() (time.Duration, bool) {
	v.stage, v.t2FirstSent, v.t2FirstRecv, v.failures, v.queuedNow = stageTier2, time.Time{}, time.Time{}, 0, false
	return 0, false
}

// tier2Check is one turn of queue.js's loop.
func (v *visitor) tier2Check(ctx context.Context) (time.Duration, bool) {
	kind := KindJoin
	if v.queuedNow {
		kind = KindQueuedPoll
	}
	// A sampled queued poll reads the exact rank just before and just after.
	var ahead aheadSample
	sample := kind == KindQueuedPoll && v.r.sampleAhead()
	if sample {
		ahead.from, ahead.pos = v.r.cfg.Clock.Now(), v.position
		ahead.before = v.r.exactRank(ctx, v.pass)
	}
	res := v.r.call(ctx, "tier2.check", http.MethodPost, v.api2("check"), map[string]string{"Authorization": "Bearer " + v.pass, KindHeader: kind}, nil)
	if v.t2FirstSent.IsZero() {
		v.t2FirstSent = res.sent
	}
	if v.t2FirstRecv.IsZero() && res.ok() {
		v.t2FirstRecv = res.recv
	}
	var b struct {
		Status          string  `json:"status"`
		EstimatedWait   float64 `json:"estimatedWait"`
		NextPoll        float64 `json:"nextPoll"`
		RecoveringUntil string  `json:"recoveringUntil"`
		EntryToken      string  `json:"entryToken"`
		ExpiresAt       string  `json:"expiresAt"`
		PeopleAhead     int64   `json:"peopleAhead"`
		// Absent before issue 17: every count was exact then.
		PeopleAheadExact *bool `json:"peopleAheadExact"`
	}
	if err := res.decode(&b); err != nil {
		switch {
		case res.status == http.StatusUnauthorized:
			// No (or an expired) pass: back to the waiting room for one.
			v.passRenewals++
			v.stage, v.t1next = stageTier1, nextAssign
			return 0, false
		case finalError(res.status):
			v.gaveUp = true
			return v.done()
		case res.status == 0:
			v.r.lb.down(v.tier2) // the balancer takes a dead instance out
		}
		v.failures++
		return v.backoff(res.retryAfter), false
	}
	v.failures = 0
	if until, err := time.Parse(time.RFC3339, b.RecoveringUntil); err == nil {
		v.r.sawRecovery(until)
	}
	if b.Status == "active" {
		v.queuedNow = false
		if v.activeRecv.IsZero() {
			v.r.admitted.Add(1)
		}
		v.activeSent, v.activeRecv, v.lateActive = res.sent, res.recv, v.late
		v.direct = v.t2FirstQueued.IsZero()
		v.entry = b.EntryToken
		v.sawSlot(b.ExpiresAt)
		if v.r.cfg.Seats > 0 {
			v.stage, v.failures = stageSeat, 0
			return 0, false
		}
		return v.toDwell()
	}
	if v.t2FirstQueued.IsZero() {
		v.t2FirstQueued = res.recv
		v.est2, v.est2Set = b.EstimatedWait, true
	} else {
		v.later2.add(res.recv, b.EstimatedWait)
	}
	v.lateWait2 = v.late
	v.t2LastQueued = res.sent
	v.queuedNow = true
	if sample {
		ahead.after = v.r.exactRank(ctx, v.pass)
		ahead.to = v.r.cfg.Clock.Now()
		ahead.shown, ahead.exact = b.PeopleAhead, b.PeopleAheadExact == nil || *b.PeopleAheadExact
		v.r.sawAhead(ahead)
	}
	return jitter(time.Duration(min(max(b.NextPoll, 1), 60)*float64(time.Second)), 0.2, v.rng), false
}

// sawSlot notes the slot an active answer names (its end): a visitor
// shown two different slots was admitted twice.
func (v *visitor) sawSlot(expiresAt string) {
	if v.slots == nil {
		v.slots = map[string]bool{}
	}
	v.slots[expiresAt] = true
}

func (v *visitor) toDwell() (time.Duration, bool) {
	v.stage = stageDwell
	d := jitter(v.r.cfg.Dwell, 0.2, v.rng)
	v.dwellEnds = v.r.cfg.Clock.Now().Add(d)
	return min(d, RenewEvery), false
}

// RenewEvery is how often a visitor who stays renews the slot, as the
// seat page does (a third of the default 20 s entry token): the queue
// frees the slot of a holder who stops.
const RenewEvery = 7 * time.Second

// dwell is the protected site while the visitor stays: renew the slot
// through heartbeat until the dwell is over, then leave. A refused renewal
// (410: the slot is over) ends the visit as the seat page does.
func (v *visitor) dwell(ctx context.Context) (time.Duration, bool) {
	left := v.dwellEnds.Sub(v.r.cfg.Clock.Now())
	if left < 50*time.Millisecond { // timers fire a little early or late
		return v.leave(ctx)
	}
	auth := map[string]string{"Authorization": "Bearer " + v.pass, "Cookie": (&http.Cookie{Name: token.EntryCookie, Value: v.entry}).String()}
	auth[KindHeader] = KindActivePoll
	res := v.r.call(ctx, "tier2.heartbeat", http.MethodPost, v.api2("heartbeat"), auth, nil)
	var b struct {
		Status     string `json:"status"`
		EntryToken string `json:"entryToken"`
		ExpiresAt  string `json:"expiresAt"`
	}
	switch {
	case res.decode(&b) == nil && b.Status == "active":
		v.entry = b.EntryToken
		v.sawSlot(b.ExpiresAt)
	case res.status == http.StatusGone:
		return v.done()
	}
	return min(left, RenewEvery), false
}

// maxReentries bounds how often a re-entering visitor comes back.
const maxReentries = 3

// reenter is a visitor who left and checks again with the same pass, as
// a hostile one would, polling while queued. Admitted again (a second slot)
// it stays and leaves as before, then tries once more; told "done" it
// stops.
func (v *visitor) reenter(ctx context.Context) (time.Duration, bool) {
	res := v.r.call(ctx, "tier2.reenter", http.MethodPost, v.api2("check"), map[string]string{"Authorization": "Bearer " + v.pass, KindHeader: KindReenter}, nil)
	var b struct {
		Status     string  `json:"status"`
		NextPoll   float64 `json:"nextPoll"`
		EntryToken string  `json:"entryToken"`
		ExpiresAt  string  `json:"expiresAt"`
	}
	if err := res.decode(&b); err != nil {
		if finalError(res.status) {
			return v.done()
		}
		v.failures++
		return v.backoff(res.retryAfter), false
	}
	v.failures = 0
	switch b.Status {
	case "done":
		v.refused = true
		return v.done()
	case "active":
		v.entry = b.EntryToken
		v.sawSlot(b.ExpiresAt)
		v.left = false
		return v.toDwell()
	}
	return jitter(time.Duration(min(max(b.NextPoll, 1), 60)*float64(time.Second)), 0.2, v.rng), false
}

// maxSeatTries bounds how often a visitor who keeps losing a seat to
// someone faster lists the seats again.
const maxSeatTries = 20

// holdSeat is the seat page: list the seats, pick a free one at random and
// hold it with the entry token. A seat taken meanwhile means listing again;
// none left means sold out. Either way the visitor then stays its dwell.
func (v *visitor) holdSeat(ctx context.Context) (time.Duration, bool) {
	site := v.r.t.Site + "/api/seats/" + url.PathEscape(v.r.cfg.Event)
	// The browser sends the cookie the queue API set.
	auth := map[string]string{"Cookie": (&http.Cookie{Name: token.EntryCookie, Value: v.entry}).String()}
	list := v.r.call(ctx, "site.seats", http.MethodGet, site, auth, nil)
	var l struct {
		Remaining   int64 `json:"remaining"`
		HoldSeconds int   `json:"holdSeconds"`
		Seats       []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"seats"`
	}
	if err := list.decode(&l); err != nil {
		return v.seatFailed(list)
	}
	v.r.sawHoldTTL(time.Duration(l.HoldSeconds) * time.Second)
	var free []string
	for _, st := range l.Seats {
		if st.Status == "available" {
			free = append(free, st.ID)
		}
	}
	if len(free) == 0 {
		v.soldOut = true
		return v.toDwell()
	}
	pick := free[v.rng.IntN(len(free))]
	body, _ := json.Marshal(map[string]string{"seatId": pick})
	hold := v.r.call(ctx, "site.hold", http.MethodPost, site+"/hold", auth, body)
	if hold.ok() {
		v.seat, v.seatAt = pick, hold.recv
		return v.toDwell()
	}
	var e struct {
		Code string `json:"code"`
	}
	if hold.status == http.StatusConflict && json.Unmarshal(hold.body, &e) == nil {
		switch e.Code {
		case "sold_out":
			v.soldOut = true
			return v.toDwell()
		case "seat_taken":
			if v.seatTries++; v.seatTries < maxSeatTries {
				return 0, false // someone was faster: look again
			}
			return v.toDwell()
		}
	}
	return v.seatFailed(hold)
}

// seatFailed backs off like the seat page, and after a few failures goes
// on without a seat.
func (v *visitor) seatFailed(res response) (time.Duration, bool) {
	if v.failures++; v.failures >= 3 || finalError(res.status) {
		return v.toDwell()
	}
	return v.backoff(res.retryAfter), false
}

// leave ends the visit as the seat page's exit does: free the slot.
func (v *visitor) leave(ctx context.Context) (time.Duration, bool) {
	res := v.r.call(ctx, "tier2.leave", http.MethodPost, v.api2("leave"), map[string]string{"Authorization": "Bearer " + v.pass, KindHeader: KindLeave}, nil)
	if v.leaveSent.IsZero() {
		v.leaveSent = res.sent
	}
	var b json.RawMessage
	if res.decode(&b) == nil {
		v.left = true
		if v.reenters && v.reentries < maxReentries {
			v.reentries++
			v.stage = stageReenter
			return 0, false
		}
		return v.done()
	}
	if res.status == 0 {
		v.r.lb.down(v.tier2)
	}
	v.leaveAttempts++
	if v.leaveAttempts >= 5 || finalError(res.status) {
		return v.done() // the slot then frees at the active TTL
	}
	return v.backoff(res.retryAfter), false
}

// tier1Interval is common.js's tier1Interval: 2 s when close, up to 15 s
// when far, never below nextPoll, but no later than the turn is due (then
// up to a tenth later, never earlier).
func (v *visitor) tier1Interval() time.Duration {
	ahead := v.position - v.serving
	var s float64
	switch {
	case ahead <= 50:
		s = 2
	case ahead <= 500:
		s = 4
	case ahead <= 5000:
		s = 8
	default:
		s = 15
	}
	if v.nextPoll > 0 {
		s = math.Max(s, float64(v.nextPoll))
	}
	s = min(max(s, 2), 15)
	if !v.dueAt1.IsZero() {
		if due := v.dueAt1.Sub(v.r.cfg.Clock.Now()).Seconds(); due < s {
			return time.Duration(max(due, 1) * (1 + 0.1*v.rng.Float64()) * float64(time.Second))
		}
	}
	return jitter(time.Duration(s*float64(time.Second)), 0.2, v.rng)
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// estimates are the later estimates a visitor was shown: when, and the
// seconds it said. A long wait keeps every other one once it has 16, so a
// visitor costs a few hundred bytes however long it waits.
type estimates struct {
	t    []time.Time
	est  []float64
	skip int // keep one in 2^skip
	seen int
}

func (e *estimates) add(t time.Time, est float64) {
	e.seen++
	if (e.seen-1)%(1<<e.skip) != 0 {
		return
	}
	e.t, e.est = append(e.t, t), append(e.est, est)
	if len(e.t) == 16 {
		for i := 0; i < 8; i++ {
			e.t[i], e.est[i] = e.t[2*i], e.est[2*i]
		}
		e.t, e.est = e.t[:8], e.est[:8]
		e.skip++
	}
}

// aheadShown is a count of people ahead the page showed, with the serving
// counter it counted from: as of a moment between from and t (an assign
// answer was made while its request was under way; the page's own count
// is for when it read the document).
type aheadShown struct {
	from, t time.Time
	serving int64
	shown   int64
}

// backoff is common.js's backoff: 2, 4, 8 … 30 s jittered, at least
// Retry-After.
func (v *visitor) backoff(retryAfter time.Duration) time.Duration {
	base := min(max(math.Pow(2, float64(min(max(v.failures, 1), 5))), 2), 30)
	d := jitter(time.Duration(base*float64(time.Second)), 0.25, v.rng)
	return max(d, retryAfter)
}

// finalError is common.js's finalError: a 4xx other than 408 and 429.
func finalError(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// jitter spreads d by ±fraction.
func jitter(d time.Duration, fraction float64, rng *rand.Rand) time.Duration {
	return time.Duration(float64(d) * (1 - fraction + 2*fraction*rng.Float64()))
}
