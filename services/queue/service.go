package queue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/eventsettings"
	"github.com/vwr-go/vwr/internal/token"
)

// Config holds the domain's tunables. Zero fields take the seed's defaults
// (§4.5) in WithDefaults.
type Config struct {
	Threshold          int64         // default per event; QUEUE_THRESHOLD, default 1000
	ActiveTTL          time.Duration // QUEUE_ACTIVE_TTL_SECONDS, 600s
	SeenTTL            time.Duration // QUEUE_SEEN_TTL_SECONDS, 600s
	AdmissionBatchSize int64         // QUEUE_ADMISSION_BATCH_SIZE, 100
	// EntryTokenTTL is how long one entry token lasts (at most the slot):
	// the protected site renews it through heartbeat while the slot runs.
	// QUEUE_ENTRY_TOKEN_TTL_SECONDS, 20s.
	EntryTokenTTL time.Duration
	// RecoveryWindow is how long admissions pause after a loss of the
	// queue's Redis is detected (QUEUE_RECOVERY_WINDOW_SECONDS). Default:
	// EntryTokenTTL + MaxClockSkew, the least that lets every token issued
	// before the loss expire or be counted again.
	RecoveryWindow time.Duration
	// ActiveIdle frees an active user's slot once they have not shown up
	// (check or heartbeat) for this long (QUEUE_ACTIVE_IDLE_SECONDS, 60s;
	// at most ActiveTTL, which turns it off). It is at least
	// EntryTokenTTL + MaxClockSkew, so the last token such a holder got has
	// expired when the slot is handed on.
	ActiveIdle time.Duration
}

// Defaults of Config (seed §4.5).
const (
	DefaultThreshold          = 1000
	DefaultActiveTTL          = 600 * time.Second
	DefaultSeenTTL            = 600 * time.Second
	DefaultAdmissionBatchSize = 100
	DefaultEntryTokenTTL      = 20 * time.Second
	DefaultActiveIdle         = 60 * time.Second
)

// MaxSeenTTL bounds SeenTTL: heartbeat ticks wrap after 1,024 ticks
// (85 min), and a sweep must see a silent waiter before its tick comes round.
const MaxSeenTTL = time.Hour

// MaxClockSkew is the clock difference between instances that the recovery
// window allows for: instances must keep their clocks (NTP) within it.
const MaxClockSkew = 5 * time.Second

// LongestNextPoll is the longest nextPoll the API ever asks of a waiting page.
const LongestNextPoll = 60 * time.Second

// WithDefaults fills zero fields with the defaults.
func (c Config) WithDefaults() Config {
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if c.ActiveTTL == 0 {
		c.ActiveTTL = DefaultActiveTTL
	}
	if c.SeenTTL == 0 {
		c.SeenTTL = DefaultSeenTTL
	}
	if c.AdmissionBatchSize == 0 {
		c.AdmissionBatchSize = DefaultAdmissionBatchSize
	}
	if c.EntryTokenTTL == 0 {
		c.EntryTokenTTL = min(DefaultEntryTokenTTL, c.ActiveTTL)
	}
	if c.RecoveryWindow == 0 {
		c.RecoveryWindow = c.EntryTokenTTL + MaxClockSkew
	}
	if c.ActiveIdle == 0 {
		c.ActiveIdle = min(max(DefaultActiveIdle, c.EntryTokenTTL+MaxClockSkew), c.ActiveTTL)
	}
	return c
}

// Validate checks a defaulted Config; messages name the variable.
func (c Config) Validate() error {
	var errs []error
	if c.Threshold < MinThreshold || c.Threshold > MaxThreshold {
		errs = append(errs, fmt.Errorf("QUEUE_THRESHOLD must be from %d to %d", MinThreshold, MaxThreshold))
	}
	if c.ActiveTTL < time.Second {
		errs = append(errs, errors.New("QUEUE_ACTIVE_TTL_SECONDS must be at least 1"))
	}
	if c.SeenTTL < time.Second || c.SeenTTL > MaxSeenTTL {
		errs = append(errs, fmt.Errorf("QUEUE_SEEN_TTL_SECONDS must be from 1 to %d", int(MaxSeenTTL/time.Second)))
	}
	if c.AdmissionBatchSize < 1 {
		errs = append(errs, errors.New("QUEUE_ADMISSION_BATCH_SIZE must be positive"))
	}
	if c.EntryTokenTTL < time.Second || c.EntryTokenTTL > c.ActiveTTL {
		errs = append(errs, errors.New("QUEUE_ENTRY_TOKEN_TTL_SECONDS must be from 1 to QUEUE_ACTIVE_TTL_SECONDS"))
	}
	if c.ActiveIdle > c.ActiveTTL || c.ActiveIdle < min(c.EntryTokenTTL+MaxClockSkew, c.ActiveTTL) {
		// Shorter, and a holder's last token would outlive their slot.
		errs = append(errs, fmt.Errorf("QUEUE_ACTIVE_IDLE_SECONDS must be from QUEUE_ENTRY_TOKEN_TTL_SECONDS + %d to QUEUE_ACTIVE_TTL_SECONDS", int(MaxClockSkew/time.Second)))
	}
	if c.RecoveryWindow < c.EntryTokenTTL+MaxClockSkew {
		// Shorter, and a token issued before a loss could outlive the pause
		// without having been counted again.
		errs = append(errs, fmt.Errorf("QUEUE_RECOVERY_WINDOW_SECONDS must be at least QUEUE_ENTRY_TOKEN_TTL_SECONDS + %d", int(MaxClockSkew/time.Second)))
	}
	return errors.Join(errs...)
}

// Observer hears about store calls and admissions so that an adapter (the
// Prometheus metrics of the HTTP API) can count them without the domain
// importing a metrics library. Implementations must be safe for concurrent
// use and must not block.
type Observer interface {
	// ScriptDone reports one store operation (a Lua script or a command
	// on Redis): name is check, touch, leave, set_threshold, stats,
	// ranking, active_events (Listed), epoch (Epochs), lock and unlock
	// (ClaimAdmission, ReleaseAdmission), admit, retire, replay, logged,
	// relog, sweep_due (ClaimSweep), cleanup (Sweep), beat, lease, due
	// (DueVisits), schedule, wake, enlist, due_sweeps, schedule_sweep,
	// ping, lines (LineStates), or the ledger's ledger_append,
	// ledger_read and put_epoch. The names stay as they were when the
	// methods were renamed: they are metric labels.
	ScriptDone(name string, d time.Duration, err error)
	// Admitted reports n users let into eventID (direct entries in Check
	// and the worker's admissions).
	Admitted(eventID string, n int)
	// QueueDepth reports an event's line and active sizes after each
	// admission pass of the worker.
	QueueDepth(eventID string, queued, active int64)
}

// NopObserver ignores everything.
type NopObserver struct{}

// ScriptDone does nothing.
func (NopObserver) ScriptDone(string, time.Duration, error) {}

// Admitted does nothing.
func (NopObserver) Admitted(string, int) {}

// QueueDepth does nothing.
func (NopObserver) QueueDepth(string, int64, int64) {}

// Service is the Tier 2 queue: it validates input, drives the Store and mints
// entry tokens. It is safe for concurrent use.
type Service struct {
	store  Store
	keys   *token.KeyRing
	clk    clock.Clock
	notify Notifier
	obs    Observer
	cfg    Config
	// settings holds the configured events; nil means open events
	// (QUEUE_OPEN_EVENTS=true): any valid id is an event, and its threshold
	// is QUEUE_THRESHOLD or the override kept in the store.
	settings *eventsettings.Cache
	// epochs remembers, per event, the epoch this instance last saw in the
	// store: finding it gone is how a lost Redis is detected. The worker
	// forgets events that are no longer listed (pruneEpochs).
	epochs sync.Map // event id → epoch id
	// unlisted counts, per remembered event, the worker's readings of the
	// active events in a row that found it missing.
	unlistedMu sync.Mutex
	unlisted   map[string]int
	// unclaimed remembers whom this instance's worker let in until they
	// fetch a token, so that a loss does not take their admission back.
	unclaimed unclaimed
	// ledger is the durable copy of every event's served record (nil: none,
	// as in open-events mode): what a lost store is rebuilt from.
	ledger Ledger
	// onLoss hears of each event whose loss this instance finds (the
	// worker, which replays the ledger at once); nil: nobody.
	onLoss func(eventID string)
	// woken are the events where a request to this instance may have made
	// work for the admission pass (a slot freed by a leave, a direct
	// admission to rank and log, a threshold raised here): this
	// instance's worker visits them at its next tick, so that no request
	// writes a key outside its event's slot to ask for it.
	wokenMu sync.Mutex
	woken   map[string]bool
	// beats are the queued users this instance heard from since its
	// worker's last tick, per event, with when (nil: each step writes its
	// user's heartbeat itself; a worker turns batching on): the worker
	// writes them in one call per event (Store.Beat) instead of one write
	// per poll.
	beatMu sync.Mutex
	beats  map[string]map[string]time.Time
	// lines remembers queued visitors' places, so that their polls are
	// answered without a store call (lines.go); on where a worker runs.
	lines lines
}

// batching reports whether queued users' heartbeats wait in this
// instance's batch (a worker runs, which writes it).
func (s *Service) batching() bool {
	s.beatMu.Lock()
	defer s.beatMu.Unlock()
	return s.beats != nil
}

// batchBeats has queued users' heartbeats wait in this instance's batch,
// which the worker writes (takeBeats) at every tick.
func (s *Service) batchBeats() {
	s.beatMu.Lock()
	defer s.beatMu.Unlock()
	if s.beats == nil {
		s.beats = map[string]map[string]time.Time{}
	}
}

// heard notes that a queued user was heard from at now, for the next batch.
func (s *Service) heard(eventID, userID string, now time.Time) {
	s.beatMu.Lock()
	defer s.beatMu.Unlock()
	if s.beats == nil {
		return // the step itself wrote the heartbeat
	}
	users := s.beats[eventID]
	if users == nil {
		users = map[string]time.Time{}
		s.beats[eventID] = users
	}
	if now.After(users[userID]) {
		users[userID] = now
	}
}

// takeBeats returns the batch and starts a new one.
func (s *Service) takeBeats() map[string]map[string]time.Time {
	s.beatMu.Lock()
	defer s.beatMu.Unlock()
	if len(s.beats) == 0 {
		return nil
	}
	b := s.beats
	s.beats = map[string]map[string]time.Time{}
	return b
}

// putBackBeats returns a batch whose write failed, so the next tick tries
// it again (a later heartbeat of the same user wins).
func (s *Service) putBackBeats(b map[string]map[string]time.Time) {
	for ev, users := range b {
		for uid, at := range users {
			s.heard(ev, uid, at)
		}
	}
}

// wake has this instance's worker visit eventID at its next tick.
func (s *Service) wake(eventID string) {
	s.wokenMu.Lock()
	if s.woken == nil {
		s.woken = map[string]bool{}
	}
	s.woken[eventID] = true
	s.wokenMu.Unlock()
}

// takeWoken returns the events woken since the last call and forgets them.
func (s *Service) takeWoken() []string {
	s.wokenMu.Lock()
	defer s.wokenMu.Unlock()
	evs := make([]string, 0, len(s.woken))
	for ev := range s.woken {
		evs = append(evs, ev)
	}
	clear(s.woken)
	return evs
}

// New returns a Service. A nil Notifier or clock gets a no-op notifier or the
// system clock; cfg gets WithDefaults.
func New(store Store, entryKeys *token.KeyRing, clk clock.Clock, n Notifier, cfg Config) *Service {
	if clk == nil {
		clk = clock.System{}
	}
	if n == nil {
		n = NopNotifier{}
	}
	return &Service{store: store, keys: entryKeys, clk: clk, notify: n, obs: NopObserver{}, cfg: cfg.WithDefaults()}
}

// SetObserver installs o (nil restores the no-op). Call it before the
// Service is used; it is not synchronised with running calls.
func (s *Service) SetObserver(o Observer) {
	if o == nil {
		o = NopObserver{}
	}
	s.obs = o
}

// UseSettings makes the Service serve configured events only: an event
// absent from settings, or closed, is ErrUnknownEvent, and every threshold
// comes from settings. Call it before the Service is used.
func (s *Service) UseSettings(settings *eventsettings.Cache) { s.settings = settings }

// UseLedger keeps every event's served record in l too, so that a pass
// stays served, and a leave a leave, across a loss of the queue's store
// and restarts of every instance; with settings (UseSettings) the event's
// epoch is kept durable as well, so such a loss is found even then. Call
// it before the Service is used.
func (s *Service) UseLedger(l Ledger) { s.ledger = l }

// Settings returns the configured events' settings, or nil in open-events mode.
func (s *Service) Settings() *eventsettings.Cache { return s.settings }

// threshold is what the store is told about eventID's threshold: in
// open-events mode the default (the store applies its override), else the
// configured value, fixed.
func (s *Service) threshold(eventID string) (n int64, fixed bool, err error) {
	if s.settings == nil {
		return s.cfg.Threshold, false, nil
	}
	if !s.settings.Loaded() {
		return 0, false, fmt.Errorf("%w: event settings not loaded yet", ErrUnavailable)
	}
	es, ok := s.settings.Lookup(eventID)
	if !ok || !es.Open {
		return 0, false, ErrUnknownEvent
	}
	return es.Threshold, true, nil
}

// errSettingsLost is why an event the settings do not know, but the queue's
// store has state for, is 503 rather than 404: the settings store lost it,
// and an instance that still knows it writes it back within a refresh (or
// an operator configures it again).
var errSettingsLost = errors.New("the event has queue state but no settings: the settings store may have lost them")

// visitorThreshold is threshold for a visitor's or an admin's request: an
// event the settings do not know is 404 unless the queue's store holds an
// epoch for it, which only a configured event ever gets (then 503 until
// the settings are back, never a wrong 404).
func (s *Service) visitorThreshold(ctx context.Context, eventID string) (int64, bool, error) {
	n, fixed, err := s.threshold(eventID)
	if !errors.Is(err, ErrUnknownEvent) {
		return n, fixed, err
	}
	if _, known := s.settings.Lookup(eventID); known {
		return n, fixed, err // configured, and closed
	}
	start := time.Now()
	ids, serr := s.store.Epochs(ctx, []string{eventID})
	s.observe("epoch", start, serr)
	switch {
	case serr != nil:
		return 0, false, unavailable("epoch", eventID, serr)
	case len(ids) == 1 && ids[0] != "":
		return 0, false, unavailable("settings", eventID, errSettingsLost)
	}
	return n, fixed, err
}

// epochInput is what a per-event step needs to detect a loss of eventID's
// state: the epoch this instance saw last, or, before it saw any (a fresh
// instance), the one the durable settings keep.
func (s *Service) epochInput(eventID string) EpochInput {
	return EpochInput{Known: s.knownEpoch(eventID), Candidate: token.NewTokenID(), Window: s.cfg.RecoveryWindow}
}

func (s *Service) knownEpoch(eventID string) string {
	if known, ok := s.epochs.Load(eventID); ok {
		return known.(string)
	}
	if s.settings != nil && s.ledger != nil {
		es, _ := s.settings.Lookup(eventID)
		return es.Epoch
	}
	return ""
}

// sawEpoch remembers the epoch a step reported. An epoch other than the one
// this instance knew means the event's state was lost: first the users its
// worker let in who had not fetched a token yet are put back (see
// unclaimed), and returned. Until that succeeds the old epoch stays known,
// so the next step tries again.
func (s *Service) sawEpoch(ctx context.Context, eventID string, e EpochState) []Served {
	if e.ID == "" {
		return nil
	}
	k := s.knownEpoch(eventID)
	if k == e.ID {
		if _, ok := s.epochs.Load(eventID); !ok {
			s.epochs.Store(eventID, e.ID)
		}
		return nil // the common case: nothing to write
	}
	var users []Served
	if k != "" {
		if s.onLoss != nil {
			s.onLoss(eventID)
		}
		now := s.clk.Now()
		if users = s.unclaimed.pending(eventID, now); len(users) > 0 {
			start := time.Now()
			_, err := s.store.Replay(ctx, ReplayInput{EventID: eventID, Entries: users, Now: now, Ledger: s.ledger != nil,
				RebuildGrace: min(RebuildGrace, s.cfg.RecoveryWindow)})
			s.observe("replay", start, err)
			if err != nil {
				return nil
			}
		}
	}
	s.epochs.Store(eventID, e.ID)
	return users
}

// pruneEpochs forgets the epoch of every event missing from the active
// events (listed) at two of the worker's readings of them in a row (once
// per stale cleanup interval: Worker.enlist), with no unclaimed
// admissions here, whose durable settings hold that very epoch: knownEpoch
// then answers the same from the settings, so forgetting loses nothing,
// and a loss of the queue's Redis (which also empties the active events)
// is found as before. Two readings, because a retire unlists an event for a
// moment before putting it back. So the map follows the live events rather
// than every event the process ever saw. Open events (no durable epoch)
// keep theirs: there the map is the only memory of the epoch.
func (s *Service) pruneEpochs(listed []string) {
	if s.settings == nil || s.ledger == nil {
		return
	}
	s.unlistedMu.Lock()
	defer s.unlistedMu.Unlock()
	if s.unlisted == nil {
		s.unlisted = map[string]int{}
	}
	live := make(map[string]bool, len(listed))
	for _, ev := range listed {
		live[ev] = true
	}
	held := map[string]bool{}
	for _, ev := range s.unclaimed.eventIDs() {
		held[ev] = true
	}
	s.epochs.Range(func(k, v any) bool {
		ev := k.(string)
		if es, ok := s.settings.Lookup(ev); live[ev] || held[ev] || !ok || es.Epoch != v.(string) {
			delete(s.unlisted, ev)
			return true
		}
		if s.unlisted[ev]++; s.unlisted[ev] >= 2 {
			s.epochs.Delete(ev)
			delete(s.unlisted, ev)
		}
		return true
	})
	for ev := range s.unlisted {
		if _, ok := s.epochs.Load(ev); !ok {
			delete(s.unlisted, ev)
		}
	}
}

// RememberedEpochs is how many events this instance holds an epoch for.
func (s *Service) RememberedEpochs() int {
	n := 0
	s.epochs.Range(func(any, any) bool { n++; return true })
	return n
}

func wasRestored(rs []Served, userID string) bool {
	return slices.ContainsFunc(rs, func(r Served) bool { return r.UserID == userID })
}

// holderSlotEnd is the slot end of the entry token who presented, when it is
// valid for eventID and the same user; zero otherwise.
func (s *Service) holderSlotEnd(eventID string, who Identity, now time.Time) time.Time {
	if who.EntryToken == "" {
		return time.Time{}
	}
	e, err := s.keys.VerifyEntry(who.EntryToken, eventID, now)
	if err != nil || e.UserID != who.UserID {
		return time.Time{}
	}
	if e.SlotEndsAt.IsZero() {
		return e.ExpiresAt
	}
	return e.SlotEndsAt
}

// errReplayPending is why a holder the store lost hears 503 for a moment:
// the ledger's replay, which tells whether they left, is not done yet.
var errReplayPending = errors.New("the ledger's replay is pending")

// unavailable wraps a store failure so callers can test for ErrUnavailable
// while logs keep the cause.
func unavailable(op, eventID string, err error) error {
	return fmt.Errorf("%w: %s %s: %w", ErrUnavailable, op, eventID, err)
}

// observe times one store call. Latency is measured on the monotonic wall
// clock, not the injected one: tests freeze that clock, and a frozen clock
// would report every call as instantaneous.
func (s *Service) observe(name string, start time.Time, err error) {
	s.obs.ScriptDone(name, time.Since(start), err)
}

func validate(eventID, userID string) error {
	if !ValidID(eventID) {
		return ErrInvalidEvent
	}
	if !ValidUser(userID) {
		return ErrInvalidUser
	}
	return nil
}

// Check joins the user to the event's line, or reports where they stand:
// already queued users get their heartbeat refreshed and their place, already
// active users get their entry token re-minted with the unchanged expiry, and
// when the line is empty and fewer than the threshold are active the user is
// let in at once. A Tier 1 position orders the line; without one, arrival
// time does.
func (s *Service) Check(ctx context.Context, eventID string, who Identity) (View, error) {
	return s.check(ctx, eventID, who, false)
}

// check is Check, or with renewal a status or heartbeat from an entry-token
// holder the store does not hold (CheckInput.Renewal): then an empty
// View.Status means they were not counted back.
func (s *Service) check(ctx context.Context, eventID string, who Identity, renewal bool) (View, error) {
	if err := validate(eventID, who.UserID); err != nil {
		return View{}, err
	}
	th, fixed, err := s.visitorThreshold(ctx, eventID)
	if err != nil {
		return View{}, err
	}
	now := s.clk.Now()
	score := who.Position
	if score <= 0 {
		score = now.UnixMilli()
	}
	if !renewal && who.EntryToken == "" {
		if v, ok := s.fromMemory(ctx, eventID, who.UserID, now, th, fixed); ok {
			return v, nil
		}
	}
	in := CheckInput{
		EventID:          eventID,
		UserID:           who.UserID,
		Score:            score,
		Now:              now,
		ActiveTTL:        s.cfg.ActiveTTL,
		DefaultThreshold: th,
		FixedThreshold:   fixed,
		HolderSlotEnd:    s.holderSlotEnd(eventID, who, now),
		Pass:             who.Pass,
		Idle:             s.cfg.ActiveIdle,
		Ledger:           s.ledger != nil,
		Renewal:          renewal,
		BatchBeat:        s.batching(),
	}
	for again := true; ; again = false {
		in.Epoch = s.epochInput(eventID)
		start := time.Now()
		snap, err := s.store.Check(ctx, in)
		s.observe("check", start, err)
		if snap.Activated || snap.Wake {
			s.wake(eventID) // rank and log the admission, or schedule the event
		}
		if err == nil && snap.Status == StatusQueued {
			s.heard(eventID, in.UserID, now)
		}
		restored := s.sawEpoch(ctx, eventID, snap.Epoch)
		if err != nil {
			if snap.Activated {
				s.admitted(newAdmission(eventID, who.UserID, now, snap.ExpiresAt))
			}
			return View{}, unavailable("check", eventID, err)
		}
		if again && wasRestored(restored, who.UserID) {
			// This very check found the loss and queued the user again
			// before the restore put them back: ask once more.
			continue
		}
		if !renewal {
			s.lines.learn(eventID, who.UserID, snap, now)
		}
		switch snap.Status {
		case "":
			return View{Done: snap.Done}, nil
		case StatusWait:
			return View{}, unavailable("check", eventID, errReplayPending)
		}
		return s.view(eventID, who.UserID, now, snap)
	}
}

// Status reports where the user stands, changing nothing but a heartbeat:
// it serves both the status and the heartbeat route, which the seed's
// clients poll interchangeably, and an active user's call renews the entry
// token (up to the slot's end) and restarts the idle limit. A renewal (a
// valid entry token) from a holder whose slot is over is a *GoneError
// (ErrGone): after a leave, at once, whatever the token's expiry; during a
// recovery window a holder the store lost is counted back in. A served pass
// without a token hears StatusDone; anyone else neither queued nor active
// gets ErrNotQueued. Status never queues anyone.
func (s *Service) Status(ctx context.Context, eventID string, who Identity) (View, error) {
	if err := validate(eventID, who.UserID); err != nil {
		return View{}, err
	}
	th, fixed, err := s.visitorThreshold(ctx, eventID)
	if err != nil {
		return View{}, err
	}
	now := s.clk.Now()
	if who.EntryToken == "" {
		if v, ok := s.fromMemory(ctx, eventID, who.UserID, now, th, fixed); ok {
			return v, nil
		}
	}
	start := time.Now()
	snap, err := s.store.Touch(ctx, TouchInput{EventID: eventID, UserID: who.UserID, Now: now, DefaultThreshold: th, Idle: s.cfg.ActiveIdle, Ledger: s.ledger != nil,
		BatchBeat: s.batching()})
	s.observe("touch", start, err)
	if err != nil {
		return View{}, unavailable("touch", eventID, err)
	}
	if snap.Status == StatusQueued {
		s.heard(eventID, who.UserID, now)
	}
	if restored := s.sawEpoch(ctx, eventID, snap.Epoch); snap.Status != StatusActive && wasRestored(restored, who.UserID) {
		// Put back by the restore this very step set off: read again.
		return s.Status(ctx, eventID, who)
	}
	s.lines.learn(eventID, who.UserID, snap, now)
	if snap.Status == "" {
		holder := !s.holderSlotEnd(eventID, who, now).IsZero()
		switch {
		case holder && snap.Done == DoneLeft:
			return View{}, &GoneError{Reason: DoneLeft}
		case holder:
			// An entry-token holder the store does not hold: after a loss
			// (a flushed Redis) check counts them back in during the
			// recovery window, finding the loss first if need be; it never
			// queues them.
			v, err := s.check(ctx, eventID, who, true)
			switch {
			case err != nil || v.Status != "":
				return v, err
			case v.Done != "":
				return View{}, &GoneError{Reason: v.Done}
			}
			return View{}, ErrNotQueued
		case snap.Done != "" && who.Pass:
			snap.Status = StatusDone
		default:
			return View{}, ErrNotQueued
		}
	}
	if fixed {
		// Touch only reports the threshold; a stale override must not show.
		snap.Threshold = th
	}
	return s.view(eventID, who.UserID, now, snap)
}

// view turns a Snapshot into the answer, minting the entry token for active
// users and notifying a direct admission.
func (s *Service) view(eventID, userID string, now time.Time, snap Snapshot) (View, error) {
	v := View{
		EventID:          eventID,
		Status:           snap.Status,
		QueueSize:        snap.QueueSize,
		CurrentUsers:     snap.ActiveCount,
		Threshold:        snap.Threshold,
		PeopleAheadExact: true,
	}
	if snap.Epoch.RecoveringUntil.After(now) {
		v.RecoveringUntil = snap.Epoch.RecoveringUntil
	}
	if snap.Status == StatusDone {
		v.Done = snap.Done
		v.NextPoll = NextPoll(StatusActive, 0)
		s.unclaimed.forget(eventID, userID)
		return v, nil
	}
	if snap.Status == StatusQueued {
		v.Position = snap.Rank + 1
		v.PeopleAhead = snap.Rank
		v.PeopleBehind = max(snap.QueueSize-snap.Rank-1, 0)
		v.EstimatedWait = EstimateQueued(v.Position, snap, now)
		if !v.RecoveringUntil.IsZero() {
			// Nobody is let in before the window ends.
			v.EstimatedWait += int((v.RecoveringUntil.Sub(now) + time.Second - 1) / time.Second)
		}
		v.NextPoll = NextPoll(StatusQueued, v.Position)
		if !v.RecoveringUntil.IsZero() && v.Position <= RecoveringFastPollRank {
			v.NextPoll = min(v.NextPoll, RecoveringNextPoll)
		}
		return v, nil
	}
	v.NextPoll = NextPoll(StatusActive, 0)
	v.ExpiresAt = snap.ExpiresAt
	s.unclaimed.forget(eventID, userID)
	a := newAdmission(eventID, userID, now, snap.ExpiresAt)
	// Report the admission before minting: the store has already let the
	// user in, and a later check only re-mints (Activated is false then), so
	// a failed mint here must not lose the notification.
	if snap.Activated {
		s.admitted(a)
	}
	// A short token, renewed by every check or heartbeat while the slot
	// runs: after a loss, the recovery window only has to outlast it.
	tokenExp := now.Add(s.cfg.EntryTokenTTL)
	if snap.ExpiresAt.Before(tokenExp) {
		tokenExp = snap.ExpiresAt
	}
	tok, err := s.keys.IssueEntry(token.Entry{
		EventID:    eventID,
		UserID:     userID,
		ID:         a.EntryJTI,
		IssuedAt:   now,
		ExpiresAt:  tokenExp,
		SlotEndsAt: snap.ExpiresAt,
	})
	if err != nil {
		return View{}, fmt.Errorf("queue: mint entry token: %w", err)
	}
	v.EntryToken, v.TokenExpiresAt = tok, tokenExp
	return v, nil
}

// newAdmission describes userID let into eventID at now until expiresAt.
func newAdmission(eventID, userID string, now, expiresAt time.Time) Admission {
	return Admission{EventID: eventID, UserID: userID, EntryJTI: EntryTokenID(eventID, userID, expiresAt), ExpiresAt: expiresAt, AdmittedAt: now}
}

// admitted reports a direct entry made by Check to the notifier and observer.
func (s *Service) admitted(a Admission) {
	s.notify.Admitted(a)
	s.obs.Admitted(a.EventID, 1)
}

// EntryTokenID is the jti of the entry token for one admission. It is derived
// from the admission itself, so every re-mint while the user stays active
// carries the same jti, and the worker can report it before any token exists.
func EntryTokenID(eventID, userID string, expiresAt time.Time) string {
	sum := sha256.Sum256([]byte(eventID + "\x00" + userID + "\x00" + strconv.FormatInt(expiresAt.UnixMilli(), 10)))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// MinRateSpan is the shortest span a rate is measured over: a first burst of
// admissions (a line opening at once) is not a rate yet.
const MinRateSpan = 5 * time.Second

// RateSpan is the span the admissions of the last RateWindow were made in:
// from the first of them (since) to now, within MinRateSpan…RateWindow, or
// the whole window when since is zero. Dividing by the whole window while
// the sale (or the store, after a loss) is younger than it would make every
// estimate too long.
func RateSpan(now, since time.Time) time.Duration {
	if since.IsZero() {
		return RateWindow
	}
	return min(max(now.Sub(since), MinRateSpan), RateWindow)
}

// EstimateQueued is the wait in seconds of the queued user at position:
// a second when there are free slots for everyone up to them (the worker's
// next pass lets them in), else EstimateWait at the measured rate.
func EstimateQueued(position int64, snap Snapshot, now time.Time) int {
	if position > 0 && snap.Threshold-snap.ActiveCount >= position {
		return 1
	}
	return EstimateWait(position, snap.AdmittedLastMinute, RateSpan(now, snap.RateSince))
}

// EstimateWait is the expected wait in seconds of the user at position:
// position ÷ (admissions in the last RateWindow ÷ the span they were made
// in, see RateSpan). However few the admissions, they are the rate: a slow
// line is slow (the seed's position ÷ 50 s fallback told someone 5th in a
// line admitting three a minute that they would be in within 5 s). With none
// in the last minute it is the seed's max(position/50, 5).
func EstimateWait(position, admitted int64, span time.Duration) int {
	if position <= 0 {
		return 0
	}
	if admitted <= 0 {
		return int(max(position/50, 5))
	}
	// ceil(position × span ÷ admitted) in whole seconds, in integers.
	ms := span.Milliseconds()
	return int((position*ms + admitted*1000 - 1) / (admitted * 1000))
}

// Leave removes the user from the event's line or active set at once, freeing
// the slot, and records the leave: a pass is done (its next check answers
// StatusDone), and the user's entry token is refused by status and
// heartbeat and never counted back after a loss. It reports whether they
// were there.
func (s *Service) Leave(ctx context.Context, eventID string, who Identity) (bool, error) {
	userID := who.UserID
	if err := validate(eventID, userID); err != nil {
		return false, err
	}
	if _, _, err := s.visitorThreshold(ctx, eventID); err != nil {
		return false, err
	}
	s.lines.forget(eventID, userID)
	start := time.Now()
	removed, err := s.store.Leave(ctx, LeaveInput{EventID: eventID, UserID: userID, Pass: who.Pass, Ledger: s.ledger != nil})
	s.observe("leave", start, err)
	s.unclaimed.forget(eventID, userID)
	// A poll in flight during the leave may have learnt the place again,
	// from a step before the leave: forget it, and answer them from no
	// read that began before the leave was done.
	s.lines.forget(eventID, userID)
	s.lines.changedHere(eventID, []string{userID}, false)
	if err != nil {
		return false, unavailable("leave", eventID, err)
	}
	if removed {
		s.wake(eventID) // a slot may be free
	}
	if s.ledger != nil {
		// The leave is durable before it is answered, so that no loss of
		// the store can count this user's token back in. Should the write
		// fail, the store still holds the leave for the worker to append.
		start = time.Now()
		err := s.ledger.AppendQueueLedger(ctx, eventID, []Served{{UserID: userID, Pass: who.Pass, Left: true}}, s.clk.Now())
		s.observe("ledger_append", start, err)
	}
	return removed, nil
}

// SetThreshold sets the event's threshold (MinThreshold…MaxThreshold). With
// configured events it writes the durable settings store and opens the event;
// in open-events mode it stores an override in the queue's store.
func (s *Service) SetThreshold(ctx context.Context, eventID string, n int64) error {
	if !ValidID(eventID) {
		return ErrInvalidEvent
	}
	if n < MinThreshold || n > MaxThreshold {
		return ErrInvalidThreshold
	}
	start := time.Now()
	var err error
	if s.settings != nil {
		// The durable settings store, not Redis: a flush cannot undo it.
		_, err = s.settings.Put(ctx, eventID, eventsettings.Settings{Threshold: n, Open: true})
	} else {
		err = s.store.SetThreshold(ctx, eventID, n)
	}
	s.observe("set_threshold", start, err)
	if err != nil {
		return unavailable("set threshold", eventID, err)
	}
	s.wake(eventID)
	return nil
}

// Stats reports the event's counters.
func (s *Service) Stats(ctx context.Context, eventID string) (Stats, error) {
	if !ValidID(eventID) {
		return Stats{}, ErrInvalidEvent
	}
	th, fixed, err := s.visitorThreshold(ctx, eventID)
	if err != nil {
		return Stats{}, err
	}
	now := s.clk.Now()
	start := time.Now()
	st, err := s.store.Stats(ctx, eventID, now, th)
	s.observe("stats", start, err)
	if err != nil {
		return Stats{}, unavailable("stats", eventID, err)
	}
	if fixed {
		st.Threshold = th
	}
	out := Stats{
		EventID:             eventID,
		QueueSize:           st.QueueSize,
		CurrentUsers:        st.ActiveCount,
		Threshold:           st.Threshold,
		AdmittedLastMinute:  st.AdmittedLastMinute,
		EstimatedClearAfter: EstimateWait(st.QueueSize, st.AdmittedLastMinute, RateSpan(now, st.RateSince)),
	}
	if !st.OldestHeartbeat.IsZero() {
		out.OldestHeartbeatAge = max(now.Sub(st.OldestHeartbeat), 0)
	}
	if st.RecoveringUntil.After(now) {
		out.RecoveringUntil = st.RecoveringUntil
	}
	return out, nil
}

// Limits of Events.
const (
	DefaultEventsLimit = 100
	MaxEventsLimit     = 500
)

// eventsParallelism bounds the Stats reads Events makes at once.
const eventsParallelism = 8

// Events is the operator's event list: the events the worker visits (someone
// waits or holds a slot), then the other configured events, limit in all
// (0 or less: DefaultEventsLimit; at most MaxEventsLimit), each with its
// Stats. truncated says there were more.
func (s *Service) Events(ctx context.Context, limit int) (list []Stats, truncated bool, err error) {
	if limit < 1 {
		limit = DefaultEventsLimit
	}
	limit = min(limit, MaxEventsLimit)
	start := time.Now()
	busy, err := s.store.Listed(ctx)
	s.observe("active_events", start, err)
	if err != nil {
		return nil, false, unavailable("list events", "", err)
	}
	slices.Sort(busy)
	ids := busy
	if s.settings != nil {
		ids = append(ids, s.settings.Open()...)
	}
	seen := map[string]bool{}
	var uniq []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	if truncated = len(uniq) > limit; truncated {
		uniq = uniq[:limit]
	}
	stats := make([]Stats, len(uniq))
	errs := make([]error, len(uniq))
	sem := make(chan struct{}, eventsParallelism)
	var wg sync.WaitGroup
	for i, id := range uniq {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			stats[i], errs[i] = s.Stats(ctx, id)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case errors.Is(err, ErrUnknownEvent):
			// Closed, or listed a moment before its settings were: not listed.
		case err != nil:
			return nil, false, err
		default:
			list = append(list, stats[i])
		}
	}
	return list, truncated, nil
}

// Ranking periods.
const (
	PeriodDaily   = "daily"
	PeriodWeekly  = "weekly"
	PeriodMonthly = "monthly"
)

// Ranking bounds: a limit outside 1…MaxRankingLimit is clamped (0 or less
// means DefaultRankingLimit).
const (
	DefaultRankingLimit = 10
	MaxRankingLimit     = 100
)

// Ranking lists the events with the most admissions in the current UTC day,
// ISO week or month, best first.
func (s *Service) Ranking(ctx context.Context, period string, limit int) ([]RankEntry, error) {
	switch period {
	case PeriodDaily, PeriodWeekly, PeriodMonthly:
	default:
		return nil, ErrInvalidPeriod
	}
	if limit <= 0 {
		limit = DefaultRankingLimit
	}
	limit = min(limit, MaxRankingLimit)
	start := time.Now()
	r, err := s.store.Ranking(ctx, period, s.clk.Now(), limit)
	s.observe("ranking", start, err)
	if err != nil {
		return nil, unavailable("ranking", period, err)
	}
	return r, nil
}

// Ping checks the store.
func (s *Service) Ping(ctx context.Context) error {
	start := time.Now()
	err := s.store.Ping(ctx)
	s.observe("ping", start, err)
	if err != nil {
		return unavailable("ping", "", err)
	}
	return nil
}
