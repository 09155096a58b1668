package queue

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Queued polls from memory. A queued visitor's poll almost always learns
// "still queued, a little further ahead", and asking the store for that
// cost one script call per poll. Where a worker runs, an instance instead
// remembers, per visitor it answered from the store, where they stood (their
// base, their exact rank, the line's change count then), and reads an
// event's line when a poll finds the last read older than SnapshotInterval
// (Store.LineStates, one call, at most one in flight per event: the polls
// meanwhile wait for it): the changes to the line since its last read and
// the counters an answer shows. So an instance reads an event at most once
// per interval and never more often than it is polled there, and not at
// all while nobody polls. A poll is answered from that read: rank = the
// rank then + joins ahead − leaves and sweeps ahead − admissions since. It
// goes to the store instead (and remembers its answer) whenever the
// visitor may not be queued any more or may soon be let in:
//
//   - the last read is older than SnapshotInterval and the read it sets off
//     fails (so nobody let in hears "queued" for longer than that), or the
//     read found another epoch than the one this instance knows, a
//     recovery window or a pending replay; a read that finds another epoch
//     or another count (LineState.Gen) than the one its cursor came from,
//     or another change at its cursor (LineState.Prev: the count went back
//     and forward again), forgets the line; a read more than an interval
//     ahead of the clock (stepped back) is stale too;
//   - this instance took the visitor out of the line (a leave, an
//     admission pass) since the last read began;
//   - the visitor left or was swept since (the log names them), or an
//     admission since reached their base (the frontier), or their base is
//     not above the highest base ever let in;
//   - no line changes are pushed here (no WatchLines) and fewer than the
//     free slots + two batches are ahead of them (they may be let in within
//     two passes: they hear it from the store at once; with pushes, an
//     admission anywhere makes the line stale at once instead);
//   - what is remembered of them is older than MemoryMaxAge, or the
//     changes since fell out of what is kept;
//   - the request carries an entry token (a holder's renewal).
//
// Where the worker runs, it also subscribes to the store's line changes
// (WatchLines): an admission pass or a waiter's leave anywhere in the fleet
// makes the line's last read stale at once, so the next poll reads it
// again (within milliseconds, not up to SnapshotInterval later); a join
// ahead of someone waiting (Tier 1 lets a batch through at once, and lower
// positions arrive later) comes with its change count and base, and the
// answers count it from then on, with no read, until a read brings it in
// from the log (pending joins: counted once, by change count). While that
// subscription is down, every poll goes to the store. Where the store can
// tell (Store.LineChanges' caughtUp), an answer from memory first waits, at
// most caughtUpWait, until every change it has already sent was heard.
//
// Memory never answers "active" nor "done": those come from the store's
// step, and so does every token. docs/tier2-store.md, "Queued polls from
// memory".

// SnapshotInterval is how old a read of a line may be when a poll is
// answered from it, and so how often at most a polled line is read.
const SnapshotInterval = 200 * time.Millisecond

// MemoryMaxAge is how long a visitor's place learnt from the store answers
// their polls; then the next poll asks the store again.
const MemoryMaxAge = 2 * time.Minute

// MaxRemembered bounds the visitors one instance remembers, all events
// together; beyond it polls go to the store.
const MaxRemembered = 200_000

// maxKeptChanges bounds the changes kept per event: a visitor whose place
// is older than what is kept asks the store again.
const maxKeptChanges = 20_000

// maxKeptTotal bounds the changes kept by one instance, all lines
// together (about 50 bytes each, plus the user id of a leave or a sweep):
// beyond it, each read cuts its line's oldest changes, and the places that
// needed them ask the store again.
const maxKeptTotal = 1_000_000

// maxPendingJoins bounds the pushed joins a line keeps until a read brings
// them in: beyond it the line is stale, and the next poll reads it.
const maxPendingJoins = MaxLineChanges

// compactFrom is the fewest kept changes of a line worth dropping those
// every remembered place is past.
const compactFrom = 1024

// pruneEvery is how often the worker drops places older than MemoryMaxAge
// and the lines nobody is remembered in.
const pruneEvery = 5 * time.Second

// lines is one instance's memory of the lines its queued visitors wait in.
type lines struct {
	on   atomic.Bool // a worker runs, which reads the lines
	n    atomic.Int64
	kept atomic.Int64 // changes kept, all lines together
	// keptCap is maxKeptTotal (0), or a test's smaller bound.
	keptCap int64
	mu      sync.RWMutex
	events  map[string]*lineMemo
	pruned  atomic.Int64 // unix ns of the last prune
	// push says WatchLines runs; live that its subscription holds. With
	// push and not live, memory answers nobody (a change may be missed).
	push, live atomic.Bool
	// caughtUp, where the store can tell, says whether every change it has
	// sent was heard (Store.LineChanges); an answer from memory waits for
	// that a moment (heardAll), else asks the store.
	caughtUp atomic.Pointer[func() bool]
}

// A poll that finds a line change sent but not yet heard yields a few
// times, then sleeps a little at a time, up to caughtUpWait, for the
// subscriber to hear it (on a loaded machine it waits for a processor),
// before it asks the store instead: a store step costs a round trip too.
const (
	caughtUpYields = 3
	caughtUpNap    = 100 * time.Microsecond
	caughtUpWait   = 5 * time.Millisecond
)

// heardAll says that every line change the store has sent was heard, or
// that the store cannot tell (then a change is heard when it is delivered).
func (l *lines) heardAll() bool {
	f := l.caughtUp.Load()
	if f == nil || (*f)() {
		return true
	}
	for range caughtUpYields {
		runtime.Gosched() // the subscriber may be runnable: let it run
		if (*f)() {
			return true
		}
	}
	for slept := time.Duration(0); slept < caughtUpWait; slept += caughtUpNap {
		time.Sleep(caughtUpNap)
		if (*f)() {
			return true
		}
	}
	return false
}

// lineMemo is what the instance knows of one event's line.
type lineMemo struct {
	mu sync.Mutex
	st LineState // the last read, without its changes
	// readAt is the clock before the last read; ok says it may answer
	// (same epoch as this instance knows, no recovery window).
	readAt time.Time
	ok     bool
	// changes are the log's entries base+1 … base+len(changes), of the
	// count gen in epoch (read says a read has set gen).
	base    int64
	changes []LineChange
	epoch   string
	gen     string
	read    bool
	places  map[string]*place
	dead    bool // no longer in lines.events
	// reading is closed when the read in flight is applied (nil: none).
	reading chan struct{}
	// here counts the leaves and admissions this instance made in the
	// line; changed holds, for each visitor one of them took out, its
	// count: until a read that began after it, that visitor's poll asks
	// the store (a poll in flight may have learnt their place again).
	here    uint64
	changed map[string]uint64
	// compactAt is how many kept changes make the next read compact them.
	compactAt int
	counted   int // len(changes) as counted in lines.kept
	// pushed counts the line changes heard (stale): a read claimed before
	// the last of them may not have seen it, so it leaves the line stale.
	pushed, claimPushed uint64 // claimPushed: pushed when the read in flight was claimed
	// joins are the joins ahead heard since the cursor (seq above it), kept
	// while the line is fresh or a read is in flight: answers count them
	// until a read's changes include them. claims counts the reads
	// claimed: a read claimed after a join was heard has it in its log if
	// the join belongs to the count read, so apply keeps only the joins
	// heard since its read was claimed and numbered above the new cursor
	// (a join of a count that started again since does not linger).
	joins  []pendingJoin
	claims uint64
}

// pendingJoin is a join ahead heard (LinePush), and the reads claimed when
// it was.
type pendingJoin struct {
	seq, base int64
	claims    uint64
}

// cursor is the change count up to which m holds the log.
func (m *lineMemo) cursor() int64 { return m.base + int64(len(m.changes)) }

// account brings lines.kept up to date with m's changes (under m.mu).
func (m *lineMemo) account(l *lines) {
	l.kept.Add(int64(len(m.changes) - m.counted))
	m.counted = len(m.changes)
}

// cut drops m's oldest n changes and the places that needed them.
func (m *lineMemo) cut(l *lines, n int) {
	m.base += int64(n)
	m.changes = append([]LineChange(nil), m.changes[n:]...)
	for uid, p := range m.places {
		if p.seq < m.base {
			delete(m.places, uid)
			l.n.Add(-1)
		}
	}
}

// restart forgets the line: its places, its changes, and which count they
// belong to; base is where the next changes start.
func (m *lineMemo) restart(l *lines, base int64, epoch string) {
	l.n.Add(-int64(len(m.places)))
	m.places = map[string]*place{}
	m.base, m.changes, m.epoch, m.gen, m.read, m.ok = base, nil, epoch, "", false, false
}

// place is what one step told of a queued visitor.
type place struct {
	base int64     // the base they sort by
	rank int64     // their rank as of seq
	seq  int64     // the line's change count then
	at   time.Time // when the store told it
	// beat is when this instance last put them in its batch of
	// heartbeats (beatEvery).
	beat time.Time
}

// beatEvery is how often an answer from memory puts the visitor in the
// batch of heartbeats: a tenth of SeenTTL, within one HeartbeatTick (the
// store keeps none finer) and 30 s. Each instance writes a visitor's
// heartbeat at least that often while they poll, so the stale sweep drops
// only those silent for SeenTTL + beatEvery (CleanupOnce): never early, at
// most beatEvery later than before, for a batch of heartbeats several
// times smaller (its one ZSCORE per visitor heard was most of the Redis
// time left to polls answered from memory).
func beatEvery(seenTTL time.Duration) time.Duration {
	return min(max(seenTTL/10, HeartbeatTick), 30*time.Second)
}

// heard takes in a pushed line change at now: a join ahead is kept for the
// answers (unless a read already has it, or the line is stale with no read
// in flight: the next poll reads it anyway); anything else makes the line
// stale.
func (l *lines) heard(p LinePush, now time.Time) {
	if p.Seq <= 0 {
		l.stale(p.EventID)
		return
	}
	m := l.memo(p.EventID)
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	age := now.Sub(m.readAt)
	fresh := m.ok && age <= SnapshotInterval && age >= -SnapshotInterval
	switch {
	case p.Seq <= m.cursor(), !fresh && m.reading == nil:
	case len(m.joins) >= maxPendingJoins:
		// More joins than an answer should count one by one: read.
		m.joins = nil
		m.pushed++
		m.readAt = time.Time{}
	default:
		m.joins = append(m.joins, pendingJoin{seq: p.Seq, base: p.Base, claims: m.claims})
	}
}

// stale makes eventID's last read stale (a change to its line was heard),
// or every line's with eventID "".
func (l *lines) stale(eventID string) {
	mark := func(m *lineMemo) {
		m.mu.Lock()
		m.pushed++
		m.readAt = time.Time{}
		m.mu.Unlock()
	}
	if eventID != "" {
		if m := l.memo(eventID); m != nil {
			mark(m)
		}
		return
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, m := range l.events {
		mark(m)
	}
}

func (l *lines) memo(eventID string) *lineMemo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.events[eventID]
}

// learn remembers where a step placed a queued visitor.
func (l *lines) learn(eventID, userID string, snap Snapshot, now time.Time) {
	if !l.on.Load() {
		return
	}
	if snap.Status != StatusQueued || snap.LineSeq <= 0 || snap.Epoch.RecoveringUntil.After(now) {
		l.forget(eventID, userID)
		return
	}
	m := l.memo(eventID)
	if m == nil {
		l.mu.Lock()
		if m = l.events[eventID]; m == nil {
			if l.events == nil {
				l.events = map[string]*lineMemo{}
			}
			m = &lineMemo{base: snap.LineSeq, epoch: snap.Epoch.ID, places: map[string]*place{}}
			l.events[eventID] = m
		}
		l.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return // dropped meanwhile: the next poll learns again
	}
	if snap.Epoch.ID != m.epoch {
		// Another epoch: another line, counted from the start again.
		m.restart(l, snap.LineSeq, snap.Epoch.ID)
		m.account(l)
		m.joins = nil // heard in the other epoch's line
	}
	p := m.places[userID]
	switch {
	case snap.LineSeq < m.base:
		// Older than the changes kept: cannot be brought forward.
		if p != nil {
			delete(m.places, userID)
			l.n.Add(-1)
		}
		return
	case p == nil && l.n.Load() >= MaxRemembered:
		return
	case p == nil:
		p = &place{}
		m.places[userID] = p
		l.n.Add(1)
	}
	*p = place{base: snap.LineBase, rank: snap.Rank, seq: snap.LineSeq, at: now, beat: now}
}

// forget drops what is remembered of a visitor.
func (l *lines) forget(eventID, userID string) {
	m := l.memo(eventID)
	if m == nil {
		return
	}
	m.mu.Lock()
	if _, ok := m.places[userID]; ok {
		delete(m.places, userID)
		l.n.Add(-1)
	}
	m.mu.Unlock()
}

// changedHere notes that this instance took users out of eventID's line
// (a leave, an admission pass): their polls ask the store until a read
// that began after it, so that this instance never answers them "queued"
// from before its own change; everyone else's answers are unchanged. With
// remembered, only users it remembers are noted (an admission pass: a
// leaver is noted even when not remembered, for a poll in flight may
// learn their place after the leave).
func (l *lines) changedHere(eventID string, userIDs []string, remembered bool) {
	m := l.memo(eventID)
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.here++
	for _, uid := range userIDs {
		if _, ok := m.places[uid]; ok || !remembered {
			if m.changed == nil {
				m.changed = map[string]uint64{}
			}
			m.changed[uid] = m.here
		}
	}
}

// verdict is what memory makes of a poll.
type verdict int

const (
	askStore verdict = iota // the store's step answers
	readLine                // read the line (it is stale), then ask again
	answered
)

// answer is the Snapshot of a queued visitor from memory, when it may be
// given (see the package comment above); th and fixed are the event's
// threshold as Check sees it, batch the admission batch size. readLine
// means only a fresh read is missing. beat says the visitor's heartbeat
// goes into the batch: none went there from this instance for every
// (beatEvery).
func (l *lines) answer(eventID, userID string, now time.Time, th int64, fixed bool, batch int64, every time.Duration) (snap Snapshot, beat bool, vd verdict) {
	if !l.on.Load() || (l.push.Load() && !l.live.Load()) {
		return Snapshot{}, false, askStore
	}
	m := l.memo(eventID)
	if m == nil || !l.heardAll() {
		// Not remembered, or a change sent before this poll came may be
		// unheard yet.
		return Snapshot{}, false, askStore
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	snap, p, vd := l.place(m, userID, now, th, fixed, batch)
	if vd == answered && now.Sub(p.beat) >= every {
		beat, p.beat = true, now
	}
	return snap, beat, vd
}

// place is answer's work, under m.mu.
func (l *lines) place(m *lineMemo, userID string, now time.Time, th int64, fixed bool, batch int64) (Snapshot, *place, verdict) {
	p := m.places[userID]
	if p == nil {
		return Snapshot{}, nil, askStore
	}
	// A read "from the future" (the clock stepped back since) is no
	// fresher than one from the past.
	age := now.Sub(m.readAt)
	stale := age > SnapshotInterval || age < -SnapshotInterval
	if _, ok := m.changed[userID]; ok {
		return Snapshot{}, nil, askStore // taken out here since the last read began
	}
	if !m.ok && !stale {
		return Snapshot{}, nil, askStore // a window, or another epoch: the store answers
	}
	drop := func() (Snapshot, *place, verdict) {
		delete(m.places, userID)
		l.n.Add(-1)
		return Snapshot{}, nil, askStore
	}
	if now.Sub(p.at) > MemoryMaxAge || p.seq < m.base {
		return drop()
	}
	rank := p.rank
	for i := p.seq - m.base; i < int64(len(m.changes)); i++ {
		switch c := m.changes[i]; c.Kind {
		case LineJoined:
			if c.Base < p.base {
				rank++
			}
		case LineAdmitted:
			if c.Base >= p.base {
				return drop() // may be among them
			}
			rank -= c.N // all from ahead of them
		case LineLeft, LineSwept:
			if c.UserID == userID {
				return drop()
			}
			if c.Base < p.base {
				rank--
			}
		}
	}
	if p.base <= m.st.Front || rank < 0 {
		return drop()
	}
	// Joins heard since the cursor that the visitor's step did not see.
	ahead := rank
	for _, j := range m.joins {
		if j.seq > p.seq && j.base < p.base {
			ahead++
		}
	}
	threshold := m.st.Threshold
	if fixed {
		threshold = th
	}
	if !l.push.Load() && ahead < max(threshold-m.st.ActiveCount, 0)+2*batch {
		// May be let in within two passes, and no push would say so:
		// ask the store.
		return Snapshot{}, nil, askStore
	}
	if stale || !m.ok {
		return Snapshot{}, nil, readLine
	}
	if cursor := m.cursor(); p.seq < cursor {
		p.rank, p.seq = rank, cursor
	}
	return Snapshot{
		Status:             StatusQueued,
		Rank:               ahead,
		QueueSize:          max(m.st.QueueSize+int64(len(m.joins)), ahead+1),
		ActiveCount:        m.st.ActiveCount,
		Threshold:          threshold,
		AdmittedLastMinute: m.st.AdmittedLastMinute,
		RateSince:          m.st.RateSince,
		Epoch:              EpochState{ID: m.st.Epoch.ID},
	}, p, answered
}

// claim marks a read of m in flight and returns its cursor and the
// channel to close once it is applied (release); ok is false while
// another read is in flight (wait on ch instead).
func (m *lineMemo) claim() (since int64, here uint64, ch chan struct{}, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reading != nil {
		return 0, 0, m.reading, false
	}
	m.reading = make(chan struct{})
	m.claimPushed = m.pushed
	m.claims++
	return m.cursor(), m.here, m.reading, true
}

// release ends the read claim began.
func (m *lineMemo) release() {
	m.mu.Lock()
	ch := m.reading
	m.reading = nil
	m.mu.Unlock()
	close(ch)
}

// tidy drops places older than MemoryMaxAge (prune) and the lines nobody is
// remembered in.
func (l *lines) tidy(now time.Time) {
	l.prune(now)
	l.mu.Lock()
	defer l.mu.Unlock()
	for ev, m := range l.events {
		m.mu.Lock()
		if len(m.places) == 0 && m.reading == nil {
			m.dead = true
			m.changes, m.joins = nil, nil
			m.account(l)
			delete(l.events, ev)
		}
		m.mu.Unlock()
	}
}

// drop forgets an event's line.
func (l *lines) drop(eventID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.events[eventID]; m != nil {
		m.mu.Lock()
		l.n.Add(-int64(len(m.places)))
		m.places = map[string]*place{}
		m.ok = false
		m.mu.Unlock()
	}
}

// apply takes in a read of m made at readAt from the cursor since, claimed
// when this instance had made here changes of its own; known is the
// event's epoch as this instance knows it.
func (l *lines) apply(m *lineMemo, since int64, here uint64, st LineState, readAt time.Time, known string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case st.Epoch.ID == "" || st.Epoch.ID != known || st.Epoch.RecoveringUntil.After(readAt):
		// A loss, or a window: only the store's steps answer until it ends.
		m.restart(l, st.Seq, st.Epoch.ID)
		m.account(l)
		return
	case st.Epoch.ID != m.epoch || (m.read && st.Gen != m.gen):
		// Another epoch or another count than the cursor's: what is
		// remembered was counted in a line that is gone.
		m.restart(l, st.Seq, st.Epoch.ID)
	case st.Gap || since != m.cursor():
		m.restart(l, st.Seq, st.Epoch.ID)
	case st.Prev != nil && len(m.changes) > 0 && *st.Prev != m.changes[len(m.changes)-1]:
		// The change at the cursor is not the one read under its number:
		// the count went back (a failover to a replica behind) and came
		// forward with other changes.
		m.restart(l, st.Seq, st.Epoch.ID)
	default:
	changes:
		for _, c := range st.Changes {
			if c.Kind == LineReset {
				m.restart(l, st.Seq, st.Epoch.ID)
				break changes
			}
			m.changes = append(m.changes, c)
		}
	}
	if len(m.changes) >= max(m.compactAt, compactFrom) {
		// Drop the changes every remembered place is past: an answer
		// brings its place forward to the cursor, so what is kept spans
		// the changes since the least recently answered visitor here (at
		// most MemoryMaxAge), not the line's whole history.
		least := m.cursor()
		for _, p := range m.places {
			least = min(least, p.seq)
		}
		if n := least - m.base; n > 0 {
			m.cut(l, int(n))
		}
		m.compactAt = 2 * len(m.changes)
	}
	if len(m.changes) > maxKeptChanges {
		m.cut(l, len(m.changes)/2)
	}
	limit := l.keptCap
	if limit <= 0 {
		limit = maxKeptTotal
	}
	if over := l.kept.Load() + int64(len(m.changes)-m.counted) - limit; over > 0 && len(m.changes) > 0 {
		m.cut(l, min(len(m.changes), max(len(m.changes)/2, int(over))))
	}
	m.account(l)
	m.dropJoins()
	st.Changes = nil
	m.st, m.readAt, m.ok, m.gen, m.read = st, readAt, true, st.Gen, true
	if m.pushed != m.claimPushed {
		m.readAt = time.Time{} // a change heard during the read: read again
	}
	for uid, at := range m.changed {
		if at <= here {
			delete(m.changed, uid) // the read began after: its log has them
		}
	}
}

// dropJoins, as a read claimed as number m.claims is applied, drops the
// pending joins its log holds (up to the cursor) and those heard before it
// was claimed (its log holds them, unless they belong to another count).
func (m *lineMemo) dropJoins() {
	keep := m.joins[:0]
	for _, j := range m.joins {
		if j.seq > m.cursor() && j.claims >= m.claims {
			keep = append(keep, j)
		}
	}
	clear(m.joins[len(keep):])
	m.joins = keep
}

// prune drops places older than MemoryMaxAge.
func (l *lines) prune(now time.Time) {
	last := l.pruned.Load()
	if now.UnixNano()-last < int64(pruneEvery) || !l.pruned.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, m := range l.events {
		m.mu.Lock()
		for uid, p := range m.places {
			if now.Sub(p.at) > MemoryMaxAge {
				delete(m.places, uid)
				l.n.Add(-1)
			}
		}
		m.mu.Unlock()
	}
}

// RefreshLines reads, in one call (Store.LineStates), every event whose
// queued visitors this instance remembers and that no read is in flight
// for. Polls read the lines they need themselves (fromMemory); this reads
// them all at once, ahead of the polls.
func (s *Service) RefreshLines(ctx context.Context) error {
	now := s.clk.Now()
	type claimed struct {
		m     *lineMemo
		since int64
		here  uint64
	}
	s.lines.mu.RLock()
	memos := make(map[string]*lineMemo, len(s.lines.events))
	for ev, m := range s.lines.events {
		memos[ev] = m
	}
	s.lines.mu.RUnlock()
	var qs []LineQuery
	var cs []claimed
	for ev, m := range memos {
		th, fixed, err := s.threshold(ev)
		if err != nil {
			s.lines.drop(ev) // closed, or settings not loaded: the store answers
			continue
		}
		since, here, _, ok := m.claim()
		if !ok {
			continue
		}
		qs = append(qs, LineQuery{EventID: ev, Since: since, Now: now, DefaultThreshold: th, FixedThreshold: fixed})
		cs = append(cs, claimed{m, since, here})
	}
	defer func() {
		for _, c := range cs {
			c.m.release()
		}
	}()
	if len(qs) == 0 {
		return nil
	}
	start := time.Now()
	sts, err := s.store.LineStates(ctx, qs)
	s.observe("lines", start, err)
	if err != nil {
		return unavailable("lines", "", err)
	}
	for i, st := range sts {
		s.lines.apply(cs[i].m, cs[i].since, cs[i].here, st, now, s.knownEpoch(st.EventID))
	}
	return nil
}

// readLine reads eventID's line for a poll that found the last read stale:
// one LineStates call, or, while one is in flight, a wait for it. A failed
// read leaves the line stale, and the poll to the store.
func (s *Service) readLine(ctx context.Context, eventID string, th int64, fixed bool) {
	m := s.lines.memo(eventID)
	if m == nil {
		return
	}
	since, here, ch, ok := m.claim()
	if !ok {
		select {
		case <-ch:
		case <-ctx.Done():
		}
		return
	}
	defer m.release()
	now := s.clk.Now()
	start := time.Now()
	sts, err := s.store.LineStates(ctx, []LineQuery{{EventID: eventID, Since: since, Now: now, DefaultThreshold: th, FixedThreshold: fixed}})
	s.observe("lines", start, err)
	if err != nil || len(sts) != 1 {
		return
	}
	s.lines.apply(m, since, here, sts[0], now, s.knownEpoch(eventID))
}

// WatchLines subscribes to the store's line changes until ctx is done
// (the worker runs it): a join ahead heard is counted in the answers
// (lines.heard), any other change heard makes its line's last read stale;
// while the subscription is down, and once it holds again, every line is
// stale, and until it holds memory answers nobody. failed hears each
// failure; the next try comes after a pause that doubles up to a second.
func (s *Service) WatchLines(ctx context.Context, failed func(error)) {
	s.lines.push.Store(true)
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := s.store.LineChanges(ctx, func(caughtUp func() bool) {
			if caughtUp != nil {
				s.lines.caughtUp.Store(&caughtUp)
			}
			s.lines.stale("") // whatever was published before is unheard
			s.lines.live.Store(true)
			pause = 50 * time.Millisecond
		}, func(p LinePush) { s.lines.heard(p, s.clk.Now()) })
		s.lines.live.Store(false)
		s.lines.caughtUp.Store(nil)
		s.lines.stale("")
		if ctx.Err() != nil {
			return
		}
		if failed != nil {
			failed(err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// AnswerFromMemory turns answering queued polls from memory on or off
// (on wherever a worker runs): off, every poll is the store's step, as
// before memory existed; the benchmark measures both in one run.
func (s *Service) AnswerFromMemory(on bool) { s.lines.on.Store(on) }

// RememberedPlaces is how many queued visitors this instance remembers.
func (s *Service) RememberedPlaces() int { return int(s.lines.n.Load()) }

// fromMemory answers a queued visitor's poll from memory when it may
// (lines.answer), reading the line first when only a fresh read is
// missing, and notes their heartbeat for the next batch.
func (s *Service) fromMemory(ctx context.Context, eventID, userID string, now time.Time, th int64, fixed bool) (View, bool) {
	snap, beat, vd := s.lines.answer(eventID, userID, now, th, fixed, s.cfg.AdmissionBatchSize, beatEvery(s.cfg.SeenTTL))
	if vd == readLine {
		s.readLine(ctx, eventID, th, fixed)
		snap, beat, vd = s.lines.answer(eventID, userID, s.clk.Now(), th, fixed, s.cfg.AdmissionBatchSize, beatEvery(s.cfg.SeenTTL))
	}
	if vd != answered {
		return View{}, false
	}
	if beat {
		s.heard(eventID, userID, now)
	}
	v, err := s.view(eventID, userID, now, snap)
	if err != nil {
		return View{}, false
	}
	v.PeopleAheadExact = false
	return v, true
}
