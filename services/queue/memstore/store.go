// Package memstore keeps the Tier 2 queue in memory: a queue.Store behind
// one mutex, for the domain's tests and for anything that needs a queue
// without a Redis. Each method is one atomic step that does what the
// Redis adapter's script for it does (services/queue/redisstore), and
// storetest, the suite that adapter passes on redis-server, a Cluster and
// miniredis, holds both to the same behaviour. "Now" comes from each
// input, as it does for the scripts; the TTLs of claims, leases, the
// served record and the rankings run on the store's clock, as Redis' PX
// runs on the server's.
package memstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/services/queue"
)

var _ queue.Store = (*Store)(nil)

// Store is the in-memory queue.Store. It is safe for concurrent use.
type Store struct {
	mu     sync.Mutex
	clk    clock.Clock
	events map[string]*event
	listed map[string]bool
	// visits and sweeps are the two schedules: event → ms of its next
	// visit or stale sweep.
	visits map[string]int64
	sweeps map[string]int64
	// claims are the admission claims, sweep claims and duties' leases by
	// kind and name: who holds each, until when (store clock).
	claims   map[string]claim
	rankings map[string]*ranking // period key (as redisstore names it) → counts
	// subs are LineChanges' callbacks (under subMu, not mu: they run after
	// mu is released, as a PUBLISH reaches subscribers after the script).
	subMu sync.Mutex
	subs  map[*func(queue.LinePush)]struct{}
}

type claim struct {
	owner string
	until time.Time
}

type ranking struct {
	counts map[string]int64
	until  time.Time
}

// waiter is one queued user: the base the line orders by and the
// heartbeat tick they were last heard in.
type waiter struct {
	base, tick int64
}

// event is one event's state, as redisstore keeps it under {E}.
type event struct {
	line   map[string]waiter
	header map[string]bool  // waiters named by a trusted header
	active map[string]int64 // user → free-at ms
	// served is the served record (user → queue.Served.Value), kept
	// ServedRetention after its last change; unlogged its changes not yet
	// in the durable ledger.
	served      map[string]string
	servedUntil time.Time
	unlogged    map[string]string
	override    int64 // the threshold override, 0 when none
	admissions  []int64
	rankPending map[int64]int64 // unix second → admissions not yet ranked
	epoch       *epoch
	oldest      int64 // what the last sweep kept: oldest heartbeat ms, -1 when none
	// The line's change log, as lib.lua's log_change keeps it: seq counts
	// the changes, changes holds the last logCap of them, front is the
	// highest base admitted (-1: none).
	seq     int64
	changes []queue.LineChange
	front   int64
}

// logCap is lib.lua's LOG_CAP.
const logCap = 10000

// logChange appends one change of who is in the line.
func (e *event) logChange(c queue.LineChange) {
	e.seq++
	e.changes = append(e.changes, c)
	if len(e.changes) > logCap+100 {
		e.changes = append([]queue.LineChange(nil), e.changes[len(e.changes)-logCap:]...)
	}
}

// place is a queued user's place in the change log (Snapshot.LineSeq,
// LineBase).
func (e *event) place(snap *queue.Snapshot, uid string) {
	if w, ok := e.line[uid]; ok && snap.Status == queue.StatusQueued {
		snap.LineSeq, snap.LineBase = e.seq, w.base
	}
}

type epoch struct {
	id          string
	born, until int64
	replay      bool
}

// New returns an empty Store whose TTLs run on clk (nil: the system clock).
func New(clk clock.Clock) *Store {
	if clk == nil {
		clk = clock.System{}
	}
	s := &Store{clk: clk}
	s.reset()
	return s
}

func (s *Store) reset() {
	s.events = map[string]*event{}
	s.listed = map[string]bool{}
	s.visits = map[string]int64{}
	s.sweeps = map[string]int64{}
	s.claims = map[string]claim{}
	s.rankings = map[string]*ranking{}
}

// Lose forgets everything, as a FLUSHALL of the queue's Redis does: the
// domain's tests of a lost store use it.
func (s *Store) Lose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

// Heartbeats reads the event's line: each waiter's last heartbeat, to the
// start of its queue.HeartbeatTick. The domain's tests of the heartbeat
// batches read it.
func (s *Store) Heartbeats(eventID string) map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]time.Time{}
	if e := s.events[eventID]; e != nil {
		for uid, w := range e.line {
			out[uid] = at(w.tick * tickMS)
		}
	}
	return out
}

// Unschedule takes the event off both schedules, as a lost write (or a
// store from before the schedules) leaves a listed event: the domain's
// tests of the worker's safety net use it.
func (s *Store) Unschedule(eventID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.visits, eventID)
	delete(s.sweeps, eventID)
}

// Empty reports whether the store holds nothing: no event state, listing,
// schedule, claim or ranking.
func (s *Store) Empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.events {
		if len(e.line)+len(e.active)+len(e.served)+len(e.unlogged)+len(e.admissions)+len(e.rankPending) > 0 || e.epoch != nil || e.override != 0 {
			return false
		}
	}
	return len(s.listed)+len(s.visits)+len(s.sweeps)+len(s.claims)+len(s.rankings) == 0
}

// The line's heartbeat encoding, as lib.lua keeps it: the score carries
// the tick modulo hbTicks, which orders waiters of one base and decides
// the sweep.
const hbTicks = 1024

var tickMS = queue.HeartbeatTick.Milliseconds()

func tickOf(ms int64) int64 { return ms / tickMS }

// noLimit stands for "no idle limit", as in redisstore.
const noLimit = 100 * 365 * 24 * time.Hour

func limit(d time.Duration) int64 {
	if d <= 0 {
		d = noLimit
	}
	return d.Milliseconds()
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func at(ms int64) time.Time { return clock.FromUnixMilli(ms) }

func kind(pass bool) string {
	if pass {
		return "p"
	}
	return "h"
}

var window = queue.RateWindow.Milliseconds()

// ev returns eventID's state, creating it empty.
func (s *Store) ev(eventID string) *event {
	e := s.events[eventID]
	if e == nil {
		e = &event{line: map[string]waiter{}, header: map[string]bool{}, active: map[string]int64{}, served: map[string]string{},
			unlogged: map[string]string{}, rankPending: map[int64]int64{}, oldest: -1, front: -1}
		s.events[eventID] = e
	}
	if len(e.served) > 0 && s.clk.Now().After(e.servedUntil) {
		clear(e.served)
	}
	return e
}

// lineKey orders the line as the Redis score does: base, then tick.
func (w waiter) key() int64 { return w.base*hbTicks + w.tick%hbTicks }

// ordered is the line in order (score, then user id, as a ZSET).
func (e *event) ordered() []string {
	ids := make([]string, 0, len(e.line))
	for uid := range e.line {
		ids = append(ids, uid)
	}
	sort.Slice(ids, func(i, j int) bool {
		ki, kj := e.line[ids[i]].key(), e.line[ids[j]].key()
		return ki < kj || ki == kj && ids[i] < ids[j]
	})
	return ids
}

// rank is uid's 0-based place in line.
func (e *event) rank(uid string) int64 {
	w := e.line[uid]
	var n int64
	for o, v := range e.line {
		if v.key() < w.key() || v.key() == w.key() && o < uid {
			n++
		}
	}
	return n
}

func (e *event) threshold(def int64, fixed bool) int64 {
	if !fixed && e.override != 0 {
		return e.override
	}
	return def
}

func (e *event) admittedSince(since int64) (n int64, first int64) {
	for _, a := range e.admissions {
		if a > since {
			n++
			if first == 0 || a < first {
				first = a
			}
		}
	}
	return n, first
}

func (s *Store) recordAdmission(e *event, now, since int64) {
	e.admissions = slices.DeleteFunc(append(e.admissions, now), func(a int64) bool { return a <= since })
	e.rankPending[now/1000]++
}

// slotOf is a served value's slot end ms, or false for none, left or idle.
func slotOf(v string) (int64, bool) {
	if len(v) < 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[1:], 10, 64)
	return n, err == nil
}

func isLeft(v string) bool { return len(v) == 2 && v[1] == 'L' }
func isGone(v string) bool { return len(v) == 2 && (v[1] == 'L' || v[1] == 'I') }

func doneReason(v string, now int64) string {
	if isLeft(v) {
		return queue.DoneLeft
	}
	if slot, ok := slotOf(v); ok && slot <= now {
		return queue.DoneSlotEnded
	}
	return queue.DoneIdle
}

func (s *Store) noteServed(e *event, uid, v string, ledger bool) {
	e.served[uid] = v
	e.servedUntil = s.clk.Now().Add(queue.ServedRetention)
	if ledger {
		e.unlogged[uid] = v
	}
}

// dropExpired frees the slots whose free-at is at or before now; one freed
// before its slot's end was freed by the idle limit, and is noted so.
func (s *Store) dropExpired(e *event, now int64, ledger bool) {
	for uid, free := range e.active {
		if free > now {
			continue
		}
		delete(e.active, uid)
		v := e.served[uid]
		if slot, ok := slotOf(v); ok && slot > now {
			s.noteServed(e, uid, v[:1]+"I", ledger)
		}
	}
}

func (s *Store) activate(e *event, uid, kind string, now, slotEnd, grace int64, ledger bool) {
	e.active[uid] = min(slotEnd, now+grace)
	s.noteServed(e, uid, kind+strconv.FormatInt(slotEnd, 10), ledger)
}

// seen is an active user showing up: the slot is held until min(slot end,
// now + idle). It returns the slot's end.
func (e *event) seen(uid string, score, now, idle int64) int64 {
	slot, ok := slotOf(e.served[uid])
	if !ok {
		slot = score
	}
	if f := min(slot, now+idle); f >= score+1000 {
		e.active[uid] = f
	}
	return slot
}

// epochOf finds or starts the event's epoch (lib.lua epoch_of).
func (e *event) epochOf(known, candidate string, now, win int64, ledger bool) (string, int64, bool) {
	if e.epoch == nil && candidate == "" {
		return "", 0, false
	}
	if e.epoch == nil {
		e.epoch = &epoch{id: candidate, born: now}
		if known != "" {
			e.epoch.until = now + win
			e.epoch.replay = ledger
		}
	} else if known != "" && known != e.epoch.id && e.epoch.until < e.epoch.born+win {
		e.epoch.until = e.epoch.born + win
		if ledger {
			e.epoch.replay = true
		}
	}
	untl := e.epoch.until
	if e.epoch.replay {
		untl = max(untl, now+1000)
	}
	return e.epoch.id, untl, e.epoch.replay
}

// epochPeek reads the epoch without starting one.
func (e *event) epochPeek(now int64) (string, int64) {
	if e.epoch == nil {
		return "", 0
	}
	untl := e.epoch.until
	if e.epoch.replay {
		untl = max(untl, now+1000)
	}
	return e.epoch.id, untl
}

// view is the snapshot every user-facing step answers.
func (e *event) view(status queue.Status, activated bool, rank, th, since, expires int64, eid string, untl int64, done string) queue.Snapshot {
	n, first := e.admittedSince(since)
	snap := queue.Snapshot{Status: status, Activated: activated, Rank: rank, QueueSize: int64(len(e.line)), ActiveCount: int64(len(e.active)),
		Threshold: th, AdmittedLastMinute: n, Done: done}
	if status == queue.StatusQueued && first > 0 {
		snap.RateSince = at(first)
	}
	if expires > 0 {
		snap.ExpiresAt = at(expires)
	}
	snap.Epoch.ID = eid
	if untl > 0 {
		snap.Epoch.RecoveringUntil = at(untl)
	}
	return snap
}

func wrap(op, ev string, err error) error { return fmt.Errorf("memstore: %s %s: %w", op, ev, err) }

// Check is check.lua.
func (s *Store) Check(ctx context.Context, in queue.CheckInput) (queue.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return queue.Snapshot{}, wrap("check", in.EventID, err)
	}
	if in.Score < 0 || in.Score > queue.MaxLineBase {
		return queue.Snapshot{}, wrap("check", in.EventID, fmt.Errorf("line base %d outside 0…%d", in.Score, queue.MaxLineBase))
	}
	var ahead *queue.LinePush
	defer func() {
		if ahead != nil {
			s.publish(*ahead)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ev(in.EventID)
	now := ms(in.Now)
	since := now - window
	uid, k, idle := in.UserID, kind(in.Pass), limit(in.Idle)
	s.dropExpired(e, now, in.Ledger)
	th := e.threshold(in.DefaultThreshold, in.FixedThreshold)
	var holder int64
	if !in.HolderSlotEnd.IsZero() {
		holder = ms(in.HolderSlotEnd)
	}
	known := in.Epoch.Known
	if known == "" && holder > now && e.epoch == nil {
		known = "?" // a valid token for an event with no epoch: its state was lost
	}
	eid, untl, replaying := e.epochOf(known, in.Epoch.Candidate, now, in.Epoch.Window.Milliseconds(), in.Ledger)
	recovering := now < untl

	status, activated, first := queue.StatusQueued, false, false
	var rank, expires int64
	var done string
	if w, ok := e.line[uid]; ok {
		if !in.BatchBeat {
			w.tick = tickOf(now)
			e.line[uid] = w
		}
		rank = e.rank(uid)
	} else {
		free, active := e.active[uid]
		served, wasServed := e.served[uid]
		back := holder
		if slot, ok := slotOf(served); ok {
			back = min(back, slot)
		}
		switch {
		case active:
			status, expires = queue.StatusActive, e.seen(uid, free, now, idle)
		case replaying:
			status = queue.StatusWait
		case recovering && back > now && !isGone(served):
			status, expires = queue.StatusActive, back
			e.active[uid] = min(back, now+idle)
			if !wasServed {
				s.noteServed(e, uid, k+strconv.FormatInt(back, 10), in.Ledger)
			}
		case in.Renewal:
			status = ""
			if wasServed {
				done = doneReason(served, now)
			}
		case wasServed && in.Pass:
			status, done = queue.StatusDone, doneReason(served, now)
		case !recovering && len(e.line) == 0 && int64(len(e.active)) < th:
			status, activated, expires = queue.StatusActive, true, now+in.ActiveTTL.Milliseconds()
			s.activate(e, uid, k, now, expires, idle, in.Ledger)
			s.recordAdmission(e, now, since)
		default:
			first = len(e.line) == 0
			e.line[uid] = waiter{base: in.Score, tick: tickOf(now)}
			e.logChange(queue.LineChange{Kind: queue.LineJoined, Base: in.Score})
			if !in.Pass {
				e.header[uid] = true
			}
			rank = e.rank(uid)
			if rank+1 < int64(len(e.line)) {
				ahead = &queue.LinePush{EventID: in.EventID, Seq: e.seq, Base: in.Score}
			}
		}
	}
	snap := e.view(status, activated, rank, th, since, expires, eid, untl, done)
	e.place(&snap, uid)
	// A check lists an unlisted event itself, as check.lua's relist does.
	snap.Wake = first || !s.listed[in.EventID]
	s.listed[in.EventID] = true
	return snap, nil
}

// Touch is touch.lua.
func (s *Store) Touch(ctx context.Context, in queue.TouchInput) (queue.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return queue.Snapshot{}, wrap("touch", in.EventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ev(in.EventID)
	now := ms(in.Now)
	since := now - window
	s.dropExpired(e, now, in.Ledger)
	th := e.threshold(in.DefaultThreshold, false)
	eid, untl := e.epochPeek(now)
	if w, ok := e.line[in.UserID]; ok {
		if !in.BatchBeat {
			w.tick = tickOf(now)
			e.line[in.UserID] = w
		}
		snap := e.view(queue.StatusQueued, false, e.rank(in.UserID), th, since, 0, eid, untl, "")
		e.place(&snap, in.UserID)
		return snap, nil
	}
	if free, ok := e.active[in.UserID]; ok {
		return e.view(queue.StatusActive, false, 0, th, since, e.seen(in.UserID, free, now, limit(in.Idle)), eid, untl, ""), nil
	}
	var done string
	if v, ok := e.served[in.UserID]; ok {
		done = doneReason(v, now)
	}
	return e.view("", false, 0, th, since, 0, eid, untl, done), nil
}

// Leave is leave.lua.
func (s *Store) Leave(ctx context.Context, in queue.LeaveInput) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, wrap("leave", in.EventID, err)
	}
	var queued bool
	defer func() {
		if queued {
			s.publish(queue.LinePush{EventID: in.EventID})
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ev(in.EventID)
	w, queued := e.line[in.UserID]
	_, active := e.active[in.UserID]
	if queued {
		e.logChange(queue.LineChange{Kind: queue.LineLeft, Base: w.base, UserID: in.UserID})
	}
	delete(e.line, in.UserID)
	delete(e.active, in.UserID)
	delete(e.header, in.UserID)
	if _, served := e.served[in.UserID]; in.Pass || served {
		s.noteServed(e, in.UserID, kind(in.Pass)+"L", in.Ledger)
	}
	return queued || active, nil
}

// LineChanges is the line-changes channel of admit.lua, leave.lua and
// check.lua: fn runs for each admission pass that admitted anyone, each
// waiter's leave and each join ahead of someone, once the store's lock is
// released, until ctx is done.
func (s *Store) LineChanges(ctx context.Context, ready func(caughtUp func() bool), fn func(queue.LinePush)) error {
	if err := ctx.Err(); err != nil {
		return wrap("line changes", "", err)
	}
	s.subMu.Lock()
	if s.subs == nil {
		s.subs = map[*func(queue.LinePush)]struct{}{}
	}
	s.subs[&fn] = struct{}{}
	s.subMu.Unlock()
	defer func() {
		s.subMu.Lock()
		delete(s.subs, &fn)
		s.subMu.Unlock()
	}()
	ready(nil) // every callback returns before the step that made the change
	<-ctx.Done()
	return wrap("line changes", "", ctx.Err())
}

// publish calls every LineChanges callback with p.
func (s *Store) publish(p queue.LinePush) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	for fn := range s.subs {
		(*fn)(p)
	}
}

// SetThreshold stores the override and wakes the event.
func (s *Store) SetThreshold(ctx context.Context, eventID string, n int64) error {
	if err := ctx.Err(); err != nil {
		return wrap("set threshold", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ev(eventID).override = n
	s.wake(eventID)
	return nil
}

// Stats is stats.lua.
func (s *Store) Stats(ctx context.Context, eventID string, now time.Time, defaultThreshold int64) (queue.StoreStats, error) {
	if err := ctx.Err(); err != nil {
		return queue.StoreStats{}, wrap("stats", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ev(eventID)
	n := ms(now)
	st := queue.StoreStats{QueueSize: int64(len(e.line)), Threshold: e.threshold(defaultThreshold, false)}
	for _, free := range e.active {
		if free > n {
			st.ActiveCount++
		}
	}
	var first int64
	st.AdmittedLastMinute, first = e.admittedSince(n - window)
	if first > 0 {
		st.RateSince = at(first)
	}
	if len(e.line) > 0 && e.oldest >= 0 {
		st.OldestHeartbeat = at(e.oldest)
	}
	if _, untl := e.epochPeek(n); untl > n {
		st.RecoveringUntil = at(untl)
	}
	return st, nil
}

// Ranking periods: the key of the period containing t, as redisstore
// names it, and how long the period's counts are kept.
var periods = map[string]struct {
	key func(time.Time) string
	ttl time.Duration
}{
	queue.PeriodDaily: {func(t time.Time) string { return t.Format("2006-01-02") }, 2 * 24 * time.Hour},
	queue.PeriodWeekly: {func(t time.Time) string {
		y, w := t.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	}, 8 * 24 * time.Hour},
	queue.PeriodMonthly: {func(t time.Time) string { return t.Format("2006-01") }, 32 * 24 * time.Hour},
}

func (s *Store) rankingOf(key string) *ranking {
	r := s.rankings[key]
	if r != nil && s.clk.Now().After(r.until) {
		delete(s.rankings, key)
		r = nil
	}
	return r
}

// Ranking reads the period's counts, best first (ties as ZREVRANGE
// orders them).
func (s *Store) Ranking(ctx context.Context, period string, now time.Time, limit int) ([]queue.RankEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrap("ranking", period, err)
	}
	p, ok := periods[period]
	if !ok {
		return nil, fmt.Errorf("memstore: ranking: unknown period %q", period)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rankingOf(period + ":" + p.key(now.UTC()))
	if r == nil {
		return []queue.RankEntry{}, nil
	}
	out := make([]queue.RankEntry, 0, len(r.counts))
	for ev, n := range r.counts {
		out = append(out, queue.RankEntry{EventID: ev, Admissions: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Admissions > b.Admissions || a.Admissions == b.Admissions && a.EventID > b.EventID
	})
	return out[:min(len(out), max(limit, 0))], nil
}

// addRankings counts the drained admissions into the periods they were
// made in; a period's counts live their TTL from its first count.
func (s *Store) addRankings(eventID string, pending map[int64]int64) {
	for sec, n := range pending {
		t := time.Unix(sec, 0).UTC()
		for name, p := range periods {
			key := name + ":" + p.key(t)
			r := s.rankingOf(key)
			if r == nil {
				r = &ranking{counts: map[string]int64{}, until: s.clk.Now().Add(p.ttl)}
				s.rankings[key] = r
			}
			r.counts[eventID] += n
		}
	}
}

// Listed lists the listed events.
func (s *Store) Listed(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrap("listed", "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.listed))
	for ev := range s.listed {
		out = append(out, ev)
	}
	slices.Sort(out)
	return out, nil
}

// Epochs reads each event's epoch id.
func (s *Store) Epochs(ctx context.Context, eventIDs []string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrap("epochs", "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(eventIDs))
	for i, ev := range eventIDs {
		if e := s.events[ev]; e != nil && e.epoch != nil {
			out[i] = e.epoch.id
		}
	}
	return out, nil
}

// Ping answers.
func (s *Store) Ping(ctx context.Context) error { return ctx.Err() }

// take is SET key owner NX PX ttl; with renew, the holder renews it.
func (s *Store) take(key, owner string, ttl time.Duration, renew bool) bool {
	now := s.clk.Now()
	c, held := s.claims[key]
	if held && !now.Before(c.until) {
		held = false
	}
	if held && !(renew && c.owner == owner) {
		return false
	}
	s.claims[key] = claim{owner: owner, until: now.Add(ttl)}
	return true
}

// ClaimAdmission claims the event's admission pass.
func (s *Store) ClaimAdmission(ctx context.Context, eventID, owner string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, wrap("claim admission", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.take("admit:"+eventID, owner, ttl, false), nil
}

// ReleaseAdmission ends owner's claim (compare-and-delete).
func (s *Store) ReleaseAdmission(ctx context.Context, eventID, owner string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, wrap("release admission", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := "admit:" + eventID
	if c, ok := s.claims[key]; !ok || c.owner != owner || !s.clk.Now().Before(c.until) {
		return false, nil
	}
	delete(s.claims, key)
	return true, nil
}

// Admit is admit.lua, then the rankings.
func (s *Store) Admit(ctx context.Context, in queue.AdmitInput) (queue.AdmitResult, error) {
	if err := ctx.Err(); err != nil {
		return queue.AdmitResult{}, wrap("admit", in.EventID, err)
	}
	var admitted bool
	defer func() {
		if admitted {
			s.publish(queue.LinePush{EventID: in.EventID})
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ev(in.EventID)
	now := ms(in.Now)
	since := now - window
	s.dropExpired(e, now, in.Ledger)
	th := e.threshold(in.DefaultThreshold, in.FixedThreshold)
	expires := now + in.ActiveTTL.Milliseconds()
	eid, untl, _ := e.epochOf(in.Epoch.Known, in.Epoch.Candidate, now, in.Epoch.Window.Milliseconds(), in.Ledger)
	replay := e.epoch != nil && e.epoch.replay
	res := queue.AdmitResult{ExpiresAt: at(expires), Replay: replay}
	slots := min(th-int64(len(e.active)), in.Batch)
	if now < untl {
		slots = 0
	}
	if slots > 0 {
		line := e.ordered()
		top := int64(-1)
		for _, uid := range line[:min(int64(len(line)), slots)] {
			top = e.line[uid].base
			k := "p"
			if e.header[uid] {
				k = "h"
				res.Header = append(res.Header, uid)
			}
			delete(e.line, uid)
			delete(e.header, uid)
			s.activate(e, uid, k, now, expires, limit(in.ClaimGrace), in.Ledger)
			s.recordAdmission(e, now, since)
			res.Admitted = append(res.Admitted, uid)
		}
		if len(res.Admitted) > 0 {
			admitted = true
			e.front = max(e.front, top)
			e.logChange(queue.LineChange{Kind: queue.LineAdmitted, N: int64(len(res.Admitted)), Base: top})
		}
	}
	var nextFree int64
	for _, free := range e.active {
		if nextFree == 0 || free < nextFree {
			nextFree = free
		}
	}
	if nextFree > 0 {
		res.NextFree = at(nextFree)
	}
	res.QueueSize, res.ActiveCount = int64(len(e.line)), int64(len(e.active))
	res.Epoch.ID = eid
	if untl > now {
		res.Epoch.RecoveringUntil = at(untl)
	}
	if !replay {
		for uid, v := range e.unlogged {
			sv, err := queue.ParseServed(uid, v)
			if err != nil {
				return res, wrap("admit", in.EventID, err)
			}
			res.Unlogged = append(res.Unlogged, sv)
		}
		sort.Slice(res.Unlogged, func(i, j int) bool { return res.Unlogged[i].UserID < res.Unlogged[j].UserID })
	}
	if len(e.rankPending) > 0 {
		s.addRankings(in.EventID, e.rankPending)
		e.rankPending = map[int64]int64{}
	}
	return res, nil
}

// Retire drops an empty event from the listed events and both schedules.
func (s *Store) Retire(ctx context.Context, eventID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, wrap("retire", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ev(eventID)
	if len(e.line) > 0 || len(e.active) > 0 || len(e.rankPending) > 0 || len(e.unlogged) > 0 {
		return false, nil
	}
	delete(s.listed, eventID)
	delete(s.visits, eventID)
	delete(s.sweeps, eventID)
	return true, nil
}

// Replay is replay.lua over all the entries.
func (s *Store) Replay(ctx context.Context, in queue.ReplayInput) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, wrap("replay", in.EventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ev(in.EventID)
	now := ms(in.Now)
	var raw int64
	pending := false
	if e.epoch != nil {
		raw, pending = e.epoch.until, e.epoch.replay
	}
	untl := raw
	if pending {
		untl = max(raw, now+in.RebuildGrace.Milliseconds())
	}
	if now >= untl {
		return 0, nil
	}
	n, moved := 0, false
	out := func(uid string) {
		if _, ok := e.line[uid]; ok {
			delete(e.line, uid)
			moved = true
		}
	}
	for _, en := range in.Entries {
		uid, v := en.UserID, en.Value()
		cur, has := e.served[uid]
		_, queuedForLedger := e.unlogged[uid]
		if fresh := has && (!in.Ledger || queuedForLedger); fresh && !(isGone(v) && !isGone(cur)) {
			continue // written since the loss: newer, unless the entry says gone
		}
		e.served[uid] = v
		slot, _ := slotOf(v)
		switch {
		case isGone(v):
			delete(e.active, uid)
			if en.Pass {
				out(uid)
			}
		case slot > now:
			if _, ok := e.active[uid]; !ok {
				e.active[uid] = min(slot, untl)
				out(uid)
				delete(e.header, uid)
				n++
			}
		case en.Pass:
			out(uid)
		}
	}
	if moved {
		e.logChange(queue.LineChange{Kind: queue.LineReset})
	}
	if len(e.served) > 0 {
		e.servedUntil = s.clk.Now().Add(queue.ServedRetention)
	}
	if in.Finish != "" && e.epoch != nil && e.epoch.id == in.Finish {
		e.epoch.replay = false
		if raw < untl {
			e.epoch.until = untl
		}
	}
	return n, nil
}

// Logged is logged.lua.
func (s *Store) Logged(ctx context.Context, eventID string, entries []queue.Served) error {
	if err := ctx.Err(); err != nil {
		return wrap("logged", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ev(eventID)
	for _, en := range entries {
		if v, ok := e.unlogged[en.UserID]; ok && v == en.Value() {
			delete(e.unlogged, en.UserID)
		}
	}
	return nil
}

// Relog is relog.lua over the whole record, then lists the event.
func (s *Store) Relog(ctx context.Context, eventID string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, wrap("relog", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ev(eventID)
	n := 0
	for uid, v := range e.served {
		if _, ok := e.unlogged[uid]; !ok {
			e.unlogged[uid] = v
			n++
		}
	}
	if n > 0 {
		s.listed[eventID] = true
		s.wake(eventID)
	}
	return n, nil
}

// ClaimSweep claims the event's stale sweep for every.
func (s *Store) ClaimSweep(ctx context.Context, eventID, owner string, every time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, wrap("claim sweep", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.take("sweep:"+eventID, owner, every, false), nil
}

// Sweep is cleanup.lua over the whole line at once.
func (s *Store) Sweep(ctx context.Context, eventID string, now time.Time, seenTTL time.Duration) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, wrap("sweep", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ev(eventID)
	n := ms(now)
	stale := int64(math.Ceil(float64(seenTTL.Milliseconds())/float64(tickMS))) + 1
	cur := tickOf(n) % hbTicks
	oldest, removed := int64(-1), 0
	for _, uid := range e.ordered() {
		w := e.line[uid]
		// Ticks are kept modulo hbTicks, as in the score: ages wrap alike.
		age := ((cur-w.tick%hbTicks)%hbTicks + hbTicks) % hbTicks
		if age >= stale {
			delete(e.line, uid)
			delete(e.header, uid)
			e.logChange(queue.LineChange{Kind: queue.LineSwept, Base: w.base, UserID: uid})
			removed++
		} else if age > oldest {
			oldest = age
		}
	}
	e.oldest = -1
	if oldest >= 0 {
		e.oldest = (tickOf(n) - oldest) * tickMS
	}
	return removed, nil
}

// LineStates is lines.lua for each query.
func (s *Store) LineStates(ctx context.Context, qs []queue.LineQuery) ([]queue.LineState, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrap("lines", "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]queue.LineState, 0, len(qs))
	for _, q := range qs {
		e := s.ev(q.EventID)
		n := ms(q.Now)
		st := queue.LineState{EventID: q.EventID, Seq: e.seq, Front: e.front, QueueSize: int64(len(e.line)),
			Threshold: e.threshold(q.DefaultThreshold, q.FixedThreshold)}
		if q.Since >= 0 && q.Since != e.seq {
			want := e.seq - q.Since
			if want < 0 || want > queue.MaxLineChanges || int64(len(e.changes)) < want {
				st.Gap = true
			} else {
				st.Changes = append([]queue.LineChange(nil), e.changes[int64(len(e.changes))-want:]...)
			}
		}
		if back := e.seq - q.Since + 1; q.Since > 0 && !st.Gap && back <= int64(len(e.changes)) {
			prev := e.changes[int64(len(e.changes))-back]
			st.Prev = &prev
		}
		for _, free := range e.active {
			if free > n {
				st.ActiveCount++
			}
		}
		var first int64
		st.AdmittedLastMinute, first = e.admittedSince(n - window)
		if first > 0 {
			st.RateSince = at(first)
		}
		eid, untl := e.epochPeek(n)
		st.Epoch.ID = eid
		if untl > 0 {
			st.Epoch.RecoveringUntil = at(untl)
		}
		out = append(out, st)
	}
	return out, nil
}

// Beat moves the heartbeat of each user still queued to when they were heard.
func (s *Store) Beat(ctx context.Context, beats map[string]map[string]time.Time) error {
	if err := ctx.Err(); err != nil {
		return wrap("beat", "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ev, users := range beats {
		e := s.events[ev]
		if e == nil {
			continue
		}
		for uid, heard := range users {
			if w, ok := e.line[uid]; ok {
				w.tick = tickOf(ms(heard))
				e.line[uid] = w
			}
		}
	}
	return nil
}

// Lease takes or renews duty's lease.
func (s *Store) Lease(ctx context.Context, duty, owner string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, wrap("lease", duty, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.take("lease:"+duty, owner, ttl, true), nil
}

// visitsPage is the most due events one DueVisits or DueSweeps returns.
const visitsPage = 10000

// due lists the schedule's events due at now, most overdue first (ties by
// id, as a ZSET orders them).
func due(schedule map[string]int64, now time.Time) []string {
	n := ms(now)
	out := []string{}
	for ev, at := range schedule {
		if at <= n {
			out = append(out, ev)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := schedule[out[i]], schedule[out[j]]
		return a < b || a == b && out[i] < out[j]
	})
	return out[:min(len(out), visitsPage)]
}

// DueVisits lists the events whose visit is due at now.
func (s *Store) DueVisits(ctx context.Context, now time.Time) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrap("due visits", "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return due(s.visits, now), nil
}

// Schedule sets the next visit and, unless one is scheduled, the first sweep.
func (s *Store) Schedule(ctx context.Context, eventID string, visit, sweep time.Time) error {
	if err := ctx.Err(); err != nil {
		return wrap("schedule", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.visits[eventID] = ms(visit)
	if _, ok := s.sweeps[eventID]; !ok && !sweep.IsZero() {
		s.sweeps[eventID] = ms(sweep)
	}
	return nil
}

// wake makes eventID due at once (score 0, as ZADD LT does).
func (s *Store) wake(eventID string) {
	if at, ok := s.visits[eventID]; !ok || at > 0 {
		s.visits[eventID] = 0
	}
}

// Wake makes each event due at once.
func (s *Store) Wake(ctx context.Context, eventIDs []string) error {
	if err := ctx.Err(); err != nil {
		return wrap("wake", "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range eventIDs {
		s.wake(ev)
	}
	return nil
}

// Enlist schedules, due at once, each event not on the visit schedule.
func (s *Store) Enlist(ctx context.Context, eventIDs []string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, wrap("enlist", "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ev := range eventIDs {
		if _, ok := s.visits[ev]; !ok {
			s.visits[ev] = 0
			n++
		}
	}
	return n, nil
}

// DueSweeps lists the events whose stale sweep is due at now.
func (s *Store) DueSweeps(ctx context.Context, now time.Time) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrap("due sweeps", "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return due(s.sweeps, now), nil
}

// ScheduleSweep sets the event's next stale sweep.
func (s *Store) ScheduleSweep(ctx context.Context, eventID string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return wrap("schedule sweep", eventID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweeps[eventID] = ms(at)
	return nil
}
