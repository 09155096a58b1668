package queue

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Queued polls from memory. A queued visitor's poll almost always learns
// "still queued, a little further ahead", and asking the store for that
// cost one script call per poll. Where a worker runs, an instance instead
// remembers, per visitor it answered from the store, where they stood (their
// base, their exact rank, the line's change count then), and reads each
// event it remembers visitors of once per SnapshotInterval (Store.LineStates,
// one pipeline for all events): the changes to the line since its last
// read and the counters an answer shows. A later poll is answered from
// that: rank = the rank then + joins ahead − leaves and sweeps ahead −
// admissions since. It goes to the store instead (and remembers its answer)
// whenever the visitor may not be queued any more or may soon be let in:
//
//   - the last read is older than SnapshotInterval (so nobody let in hears
//     "queued" for longer than that), or found another epoch than the one
//     this instance knows, a recovery window or a pending replay;
//   - the visitor left or was swept since (the log names them), or an
//     admission since reached their base (the frontier), or their base is
//     not above the highest base ever let in;
//   - fewer than the free slots + two batches are ahead of them (they may
//     be let in within two passes: they hear it from the store at once);
//   - what is remembered of them is older than MemoryMaxAge, or the
//     changes since fell out of what is kept;
//   - the request carries an entry token (a holder's renewal).
//
// Memory never answers "active" nor "done": those come from the store's
// step, and so does every token. docs/tier2-store.md, "Queued polls from
// memory".

// SnapshotInterval is how often an instance reads the lines whose visitors
// it remembers, and how old that read may be when a poll is answered from
// it.
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

// pruneEvery is how often the refresh drops places older than MemoryMaxAge.
const pruneEvery = 5 * time.Second

// lines is one instance's memory of the lines its queued visitors wait in.
type lines struct {
	on     atomic.Bool // a worker runs, which reads the lines
	n      atomic.Int64
	mu     sync.RWMutex
	events map[string]*lineMemo
	pruned atomic.Int64 // unix ns of the last prune
}

// lineMemo is what the instance knows of one event's line.
type lineMemo struct {
	mu sync.Mutex
	st LineState // the last read, without its changes
	// readAt is the clock before the last read; ok says it may answer
	// (same epoch as this instance knows, no recovery window).
	readAt time.Time
	ok     bool
	// changes are the log's entries base+1 … base+len(changes).
	base    int64
	changes []LineChange
	places  map[string]*place
	dead    bool // no longer in lines.events
}

// place is what one step told of a queued visitor.
type place struct {
	base int64     // the base they sort by
	rank int64     // their rank as of seq
	seq  int64     // the line's change count then
	at   time.Time // when the store told it
	// tick is the HeartbeatTick this instance last put them in its batch
	// of heartbeats for: the store keeps heartbeats to that tick, so a
	// second poll within it has nothing to add.
	tick int64
}

func tickOf(t time.Time) int64 { return t.UnixMilli() / HeartbeatTick.Milliseconds() }

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
			m = &lineMemo{base: snap.LineSeq, places: map[string]*place{}}
			l.events[eventID] = m
		}
		l.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return // dropped meanwhile: the next poll learns again
	}
	if m.ok && snap.Epoch.ID != m.st.Epoch.ID {
		m.ok = false // the line was read in another epoch: wait for the next read
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
	*p = place{base: snap.LineBase, rank: snap.Rank, seq: snap.LineSeq, at: now, tick: tickOf(now)}
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

// answer is the Snapshot of a queued visitor from memory, when it may be
// given (see the package comment above); th and fixed are the event's
// threshold as Check sees it, batch the admission batch size. beat says
// the poll is the visitor's first here in its HeartbeatTick: it goes into
// the batch of heartbeats.
func (l *lines) answer(eventID, userID string, now time.Time, th int64, fixed bool, batch int64) (snap Snapshot, beat, ok bool) {
	if !l.on.Load() {
		return Snapshot{}, false, false
	}
	m := l.memo(eventID)
	if m == nil {
		return Snapshot{}, false, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	snap, p, ok := l.place(m, userID, now, th, fixed, batch)
	if ok {
		t := tickOf(now)
		beat = p.tick != t
		p.tick = t
	}
	return snap, beat, ok
}

// place is answer's work, under m.mu.
func (l *lines) place(m *lineMemo, userID string, now time.Time, th int64, fixed bool, batch int64) (Snapshot, *place, bool) {
	if !m.ok || now.Sub(m.readAt) > SnapshotInterval {
		return Snapshot{}, nil, false
	}
	p := m.places[userID]
	if p == nil {
		return Snapshot{}, nil, false
	}
	drop := func() (Snapshot, *place, bool) {
		delete(m.places, userID)
		l.n.Add(-1)
		return Snapshot{}, nil, false
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
	threshold := m.st.Threshold
	if fixed {
		threshold = th
	}
	if rank < max(threshold-m.st.ActiveCount, 0)+2*batch {
		return Snapshot{}, nil, false // may be let in within two passes: ask the store
	}
	if cursor := m.base + int64(len(m.changes)); p.seq < cursor {
		p.rank, p.seq = rank, cursor
	}
	return Snapshot{
		Status:             StatusQueued,
		Rank:               rank,
		QueueSize:          max(m.st.QueueSize, rank+1),
		ActiveCount:        m.st.ActiveCount,
		Threshold:          threshold,
		AdmittedLastMinute: m.st.AdmittedLastMinute,
		RateSince:          m.st.RateSince,
		Epoch:              EpochState{ID: m.st.Epoch.ID},
	}, p, true
}

// cursors lists the events with remembered visitors and the last change
// read of each, dropping events nobody is remembered in.
func (l *lines) cursors() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int64, len(l.events))
	for ev, m := range l.events {
		m.mu.Lock()
		if len(m.places) == 0 {
			m.dead = true
			delete(l.events, ev)
		} else {
			out[ev] = m.base + int64(len(m.changes))
		}
		m.mu.Unlock()
	}
	return out
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

// apply takes in a read made at readAt from the cursor since; known is the
// event's epoch as this instance knows it.
func (l *lines) apply(since int64, st LineState, readAt time.Time, known string) {
	m := l.memo(st.EventID)
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	reset := func() {
		l.n.Add(-int64(len(m.places)))
		m.places = map[string]*place{}
		m.base, m.changes = st.Seq, nil
	}
	switch {
	case st.Epoch.ID == "" || st.Epoch.ID != known || st.Epoch.RecoveringUntil.After(readAt):
		// A loss, or a window: only the store's steps answer until it ends.
		reset()
		m.ok = false
		return
	case st.Gap || since != m.base+int64(len(m.changes)):
		reset()
	default:
	changes:
		for _, c := range st.Changes {
			if c.Kind == LineReset {
				reset()
				break changes
			}
			m.changes = append(m.changes, c)
		}
	}
	if len(m.changes) > maxKeptChanges {
		cut := len(m.changes) / 2
		m.base += int64(cut)
		m.changes = append([]LineChange(nil), m.changes[cut:]...)
		for uid, p := range m.places {
			if p.seq < m.base {
				delete(m.places, uid)
				l.n.Add(-1)
			}
		}
	}
	st.Changes = nil
	m.st, m.readAt, m.ok = st, readAt, true
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

// RefreshLines reads every event whose queued visitors this instance
// remembers, in one call (Store.LineStates), so that their polls may be
// answered from memory for SnapshotInterval. The worker calls it every
// SnapshotInterval; a failed read leaves the memory to go stale, and polls
// to the store.
func (s *Service) RefreshLines(ctx context.Context) error {
	now := s.clk.Now()
	s.lines.prune(now)
	cur := s.lines.cursors()
	if len(cur) == 0 {
		return nil
	}
	qs := make([]LineQuery, 0, len(cur))
	for ev, since := range cur {
		th, fixed, err := s.threshold(ev)
		if err != nil {
			s.lines.drop(ev) // closed, or settings not loaded: the store answers
			continue
		}
		qs = append(qs, LineQuery{EventID: ev, Since: since, Now: now, DefaultThreshold: th, FixedThreshold: fixed})
	}
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
		s.lines.apply(qs[i].Since, st, now, s.knownEpoch(st.EventID))
	}
	return nil
}

// AnswerFromMemory turns answering queued polls from memory on or off
// (on wherever a worker runs): off, every poll is the store's step, as
// before memory existed; the benchmark measures both in one run.
func (s *Service) AnswerFromMemory(on bool) { s.lines.on.Store(on) }

// RememberedPlaces is how many queued visitors this instance remembers.
func (s *Service) RememberedPlaces() int { return int(s.lines.n.Load()) }

// fromMemory answers a queued visitor's poll from memory when it may
// (lines.answer), noting their heartbeat for the next batch.
func (s *Service) fromMemory(eventID, userID string, now time.Time, th int64, fixed bool) (View, bool) {
	snap, beat, ok := s.lines.answer(eventID, userID, now, th, fixed, s.cfg.AdmissionBatchSize)
	if !ok {
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
