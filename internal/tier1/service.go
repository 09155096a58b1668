package tier1

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/token"
)

// AssignResult answers an enter. When Active is false the event is not
// active (or was never activated) and Token is a pass-through Tier 1 pass.
type AssignResult struct {
	Active         bool
	RequestID      string
	EventID        string
	Position       int64
	ServingCounter int64
	PeopleAhead    int64
	EstimatedWait  int // seconds
	NextPoll       int // seconds
	Paused         bool
	Token          string
	ExpiresAt      time.Time // of the pass-through Token
	// Reused is true when an Idempotency-Key replay returned the first result.
	Reused bool
	// Phase is PhasePrequeue for a pre-queue ticket (no Position yet, see
	// TicketHash and Sale), "" for an ordinary position.
	Phase      string
	TicketHash [32]byte
	Sale       *SaleSummary
}

// CheckResult answers a check. Token and ExpiresAt are set when Admitted.
type CheckResult struct {
	Admitted       bool
	Token          string
	ExpiresAt      time.Time
	Position       int64
	ServingCounter int64
	PeopleAhead    int64
	EstimatedWait  int
	NextPoll       int
	Paused         bool
	// Phase, Sale and TicketHash are set for a pre-queue ticket's holder;
	// Proof once drawn (its Merkle proof under the sale's root).
	Phase      string
	Sale       *SaleSummary
	TicketHash [32]byte
	Proof      *draw.Proof
}

// EventStatus is the public, CDN-cacheable status document of an event:
// with it a waiting page counts the real visitors ahead of its place
// (EstimateAhead over ShardCounters) and estimates its wait (Pace), as the
// API does for assign and check.
type EventStatus struct {
	EventID            string
	Active             bool
	Paused             bool
	ServingCounter     int64
	MaxAssigned        int64
	AdmitRatePerMinute int64
	UpdatedAt          time.Time
	Sale               SaleSummary
	// Shards and ShardCounters as of AsOf, when the snapshot was read.
	Shards        int
	ShardCounters []int64
	AsOf          time.Time
	// EnterRate is the places handed out per second lately (0: unknown).
	EnterRate float64
	Pace      Pace
	// Notice is how long after a raise a poll surely sees it.
	Notice time.Duration
}

// AdminStatus is the operator's view of an event, with per-shard counters.
type AdminStatus struct {
	EventID            string
	Active             bool
	Paused             bool
	Shards             int
	BatchSize          int64
	ServingCounter     int64
	MaxAssigned        int64
	Assigned           int64 // positions handed out (Σ shard counters)
	Admitted           int64 // real visitors at or below the serving counter
	Waiting            int64 // Assigned − Admitted
	AdmitRatePerMinute int64
	ShardCounters      []int64
	UpdatedAt          time.Time
	Pow                int64 // expected hashes per arrival; 0: none
	// Sale summarises a scheduled sale (Phase SaleNone: none).
	Sale SaleSummary
}

// TickResult is what one advancer tick did to one event.
type TickResult struct {
	EventID  string
	From, To int64
	Admitted int64
	// Skipped says why the event was not raised: "paused", "idle" (nobody
	// waiting), "slot-done" (another advancer raised it this tick) or "".
	Skipped string
}

// Service is Tier 1's use cases over a Store.
type Service struct {
	store Store
	keys  *token.KeyRing
	clk   clock.Clock
	cfg   Config

	mu    sync.Mutex
	cache map[string]*cacheEntry

	blobs   blobCache  // draw data, immutable once written
	drawing sync.Mutex // one inline draw per instance at a time
	door    guard      // client keys seen over their bound
	closing sync.Mutex // one close on request per instance at a time

	openMu      sync.Mutex
	nextOpening time.Time // earliest opening the last tick saw coming
}

type cacheEntry struct {
	mu   sync.Mutex // one load per event at a time; the rest wait for it
	snap Snapshot
	at   time.Time
	ok   bool
	// The enter rate between the last two loads at least minRateGap apart,
	// for the places handed out since a snapshot was read. Until it is
	// measured the entry lives only minRateGap, so that an instance knows
	// the rate a moment after its first read instead of a second after.
	rate         float64
	measured     bool
	rateAt       time.Time
	rateAssigned int64
}

// minRateGap is the shortest span the enter rate is measured over.
const minRateGap = 200 * time.Millisecond

// maxCacheEntries bounds the snapshot cache against floods of made-up ids.
const maxCacheEntries = 10_000

// New returns a Service. cfg gets WithDefaults; callers validate it (see
// ConfigFromEnv).
func New(store Store, keys *token.KeyRing, clk clock.Clock, cfg Config) *Service {
	return &Service{store: store, keys: keys, clk: clk, cfg: cfg.WithDefaults(), cache: map[string]*cacheEntry{}}
}

// Config returns the Service's defaulted configuration.
func (s *Service) Config() Config { return s.cfg }

// NewRequestID returns a random 128-bit URL-safe id (22 characters).
func NewRequestID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("tier1: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func unavailable(op string, err error) error {
	if errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("tier1: %s: %w", op, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, op, err)
}

// reading is a snapshot, when it was read, and the enter rate seen then.
type reading struct {
	Snapshot
	At   time.Time
	Rate float64 // places handed out per second lately; 0: unknown
}

// snapshot returns the event's snapshot, at most StatusCacheTTL old.
func (s *Service) snapshot(ctx context.Context, eventID string) (Snapshot, error) {
	r, err := s.read(ctx, eventID)
	return r.Snapshot, err
}

// read is snapshot with when it was read and the enter rate.
func (s *Service) read(ctx context.Context, eventID string) (reading, error) {
	s.mu.Lock()
	e, ok := s.cache[eventID]
	if !ok {
		if len(s.cache) >= maxCacheEntries {
			s.cache = map[string]*cacheEntry{}
		}
		e = &cacheEntry{}
		s.cache[eventID] = e
	}
	s.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	now := s.clk.Now()
	ttl := s.cfg.StatusCacheTTL
	if !e.measured {
		ttl = min(ttl, minRateGap)
	}
	if e.ok && now.Sub(e.at) < ttl && !now.Before(e.at) {
		return reading{e.snap, e.at, e.rate}, nil
	}
	snap, err := s.store.Snapshot(ctx, eventID)
	if err != nil {
		return reading{}, unavailable("read event", err)
	}
	now = now.Truncate(time.Millisecond) // the status document's precision
	e.snap, e.at, e.ok = snap, now, true
	assigned := Assigned(snap.Counters, snap.Event.Shards)
	if e.rateAt.IsZero() || assigned < e.rateAssigned || now.Before(e.rateAt) {
		e.rateAt, e.rateAssigned = now, assigned
	} else if gap := now.Sub(e.rateAt); gap >= minRateGap {
		e.rate, e.measured = float64(assigned-e.rateAssigned)/gap.Seconds(), true
		e.rateAt, e.rateAssigned = now, assigned
	}
	return reading{snap, now, e.rate}, nil
}

// fresh reads the event from the store, bypassing and refreshing the cache.
func (s *Service) fresh(ctx context.Context, eventID string) (Snapshot, error) {
	s.invalidate(eventID)
	return s.snapshot(ctx, eventID)
}

// invalidate makes the next read of eventID go to the store; the entry (and
// the enter rate it measures) stays.
func (s *Service) invalidate(eventID string) {
	s.mu.Lock()
	e := s.cache[eventID]
	s.mu.Unlock()
	if e != nil {
		e.mu.Lock()
		e.ok = false
		e.mu.Unlock()
	}
}

func (s *Service) issue(requestID, eventID string, position int64, now time.Time) (string, time.Time, error) {
	exp := now.Add(s.cfg.TokenTTL)
	tok, err := s.keys.IssueTier1(token.Tier1{
		Subject: requestID, EventID: eventID, Position: position, IssuedAt: now, ExpiresAt: exp,
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("tier1: %w", err)
	}
	return tok, exp, nil
}

// wait estimates position p's wait at now from r. A page notices a raise
// within the status cache's lifetime.
func (s *Service) wait(r reading, p int64, now time.Time) Wait {
	return EstimateWait(r.Snapshot, r.At, now, p, r.Rate, s.cfg.TickEvery, s.cfg.StatusCacheTTL)
}

// Assign hands the visitor a position in eventID's line. With a non-empty
// idempotencyKey a retry returns the first answer. An event that is not
// active answers a pass-through pass instead (fails open): its position is
// the arrival time in unix milliseconds, the same number Tier 2 orders
// visitors without a Tier 1 position by, so they line up behind every
// visitor who holds a real (small) position.
func (s *Service) Assign(ctx context.Context, eventID, idempotencyKey string) (AssignResult, error) {
	return s.AssignWithNonce(ctx, eventID, idempotencyKey, nil)
}

// AssignWithNonce is Assign with the visitor's client nonce (16 bytes, or
// nil), which a scheduled event's pre-queue needs: before the opening the
// visitor gets a ticket (Phase PhasePrequeue) instead of a position. It
// asks for no proof of work: visitors come through the door (Enter).
func (s *Service) AssignWithNonce(ctx context.Context, eventID, idempotencyKey string, nonce []byte) (AssignResult, error) {
	if !ValidID(eventID) {
		return AssignResult{}, ErrInvalidEvent
	}
	if idempotencyKey != "" && !ValidID(idempotencyKey) {
		return AssignResult{}, ErrInvalidIdempotencyKey
	}
	r, err := s.read(ctx, eventID)
	if err != nil {
		return AssignResult{}, err
	}
	return s.assign(ctx, r, eventID, idempotencyKey, nonce, noDoor)
}

// noDoor is what an arrival that did not come through the door (Enter)
// paid: enough for any event.
const noDoor = int64(math.MaxInt64)

// assign hands out the pass, ticket or position that r, the one read the
// arrival was decided on, says. paid is the maxnumber of the proof of work
// the door checked (0: none); a write that must re-read the event refuses
// the place when the event now asks for more.
func (s *Service) assign(ctx context.Context, r reading, eventID, idempotencyKey string, nonce []byte, paid int64) (AssignResult, error) {
	for attempt := 0; ; attempt++ {
		snap := r.Snapshot
		now := s.clk.Now()
		if !snap.Found || !snap.Event.Active {
			rid := NewRequestID()
			tok, exp, err := s.issue(rid, eventID, now.UnixMilli(), now)
			if err != nil {
				return AssignResult{}, err
			}
			return AssignResult{Active: false, RequestID: rid, EventID: eventID, Position: now.UnixMilli(), Token: tok, ExpiresAt: exp}, nil
		}
		if err := s.paidFor(snap.Event, paid, now); err != nil {
			return AssignResult{}, err
		}
		switch snap.Event.Sale.Phase {
		case SalePrequeue:
			return s.prequeue(ctx, snap, nonce, idempotencyKey, paid)
		case SaleCancelled:
			return AssignResult{}, ErrSaleCancelled
		}
		n := snap.Event.Shards
		pos, reused, err := s.store.Assign(ctx, NewPosition{
			EventID: eventID, Shard: mrand.IntN(n), Shards: n,
			RequestID: NewRequestID(), IdempotencyKey: idempotencyKey,
			Now: now, TTL: s.cfg.PositionTTL,
		})
		if errors.Is(err, ErrConflict) && attempt < 2 {
			// The shard count changed since the snapshot: re-read and retry.
			s.invalidate(eventID)
			if r, err = s.read(ctx, eventID); err != nil {
				return AssignResult{}, err
			}
			continue
		}
		if err != nil {
			return AssignResult{}, unavailable("assign", err)
		}
		w := s.wait(r, pos.Position, now)
		return AssignResult{
			Active: true, RequestID: pos.RequestID, EventID: eventID, Position: pos.Position,
			ServingCounter: snap.Event.ServingCounter, PeopleAhead: w.PeopleAhead, EstimatedWait: w.Seconds,
			NextPoll: w.NextPoll, Paused: w.Paused, Reused: reused,
		}, nil
	}
}

// Check tells a visitor whether their position is served, and if so mints
// their Tier 1 pass. A visitor of an event that was deactivated meanwhile is
// let through (fails open).
func (s *Service) Check(ctx context.Context, eventID, requestID string) (CheckResult, error) {
	if !ValidID(eventID) {
		return CheckResult{}, ErrInvalidEvent
	}
	if !ValidID(requestID) {
		return CheckResult{}, ErrInvalidRequestID
	}
	pos, err := s.store.Position(ctx, eventID, requestID)
	if errors.Is(err, ErrNotFound) {
		return s.checkTicket(ctx, eventID, requestID)
	}
	if err != nil {
		return CheckResult{}, unavailable("read position", err)
	}
	return s.checkPosition(ctx, pos)
}

// checkPosition answers a check for a known position.
func (s *Service) checkPosition(ctx context.Context, pos Position) (CheckResult, error) {
	eventID, requestID := pos.EventID, pos.RequestID
	r, err := s.read(ctx, eventID)
	if err != nil {
		return CheckResult{}, err
	}
	snap := r.Snapshot
	now := s.clk.Now()
	sv := snap.Event.ServingCounter
	if !snap.Found || !snap.Event.Active || pos.Position <= sv {
		tok, exp, err := s.issue(requestID, eventID, pos.Position, now)
		if err != nil {
			return CheckResult{}, err
		}
		return CheckResult{Admitted: true, Token: tok, ExpiresAt: exp, Position: pos.Position, ServingCounter: sv, NextPoll: 1}, nil
	}
	w := s.wait(r, pos.Position, now)
	return CheckResult{Position: pos.Position, ServingCounter: sv, PeopleAhead: w.PeopleAhead, EstimatedWait: w.Seconds,
		NextPoll: w.NextPoll, Paused: w.Paused}, nil
}

// Status is the public status document, from the ≤ 1 s cache. An event that
// was never activated is reported inactive, not as an error.
func (s *Service) Status(ctx context.Context, eventID string) (EventStatus, error) {
	if !ValidID(eventID) {
		return EventStatus{}, ErrInvalidEvent
	}
	r, err := s.read(ctx, eventID)
	if err != nil {
		return EventStatus{}, err
	}
	if closed := s.closeIfDue(ctx, r.Snapshot); closed.Event.Sale.Phase != r.Event.Sale.Phase {
		// This request closed the list at the opening: answer with R.
		if r, err = s.read(ctx, eventID); err != nil {
			return EventStatus{}, err
		}
	}
	snap, ev := r.Snapshot, r.Event
	counters := make([]int64, ev.Shards)
	copy(counters, snap.Counters)
	return EventStatus{
		EventID:            eventID,
		Active:             snap.Found && ev.Active,
		Paused:             ev.Paused,
		ServingCounter:     ev.ServingCounter,
		MaxAssigned:        MaxAssigned(snap.Counters, ev.Shards),
		AdmitRatePerMinute: AdmitRatePerMinute(ev.Advances, s.cfg.TickEvery, r.At),
		UpdatedAt:          ev.UpdatedAt,
		Sale:               ev.Sale,
		Shards:             ev.Shards,
		ShardCounters:      counters,
		AsOf:               r.At,
		EnterRate:          RoundRate(r.Rate),
		Pace:               MeasurePace(ev, s.cfg.TickEvery, r.At),
		Notice:             s.cfg.StatusCacheTTL,
	}, nil
}

func (s *Service) adminStatus(eventID string, snap Snapshot) AdminStatus {
	ev := snap.Event
	n := ev.Shards
	assigned := Assigned(snap.Counters, n)
	admitted := Visitors(snap.Counters, n, ev.ServingCounter)
	counters := make([]int64, n)
	copy(counters, snap.Counters)
	return AdminStatus{
		EventID: eventID, Active: snap.Found && ev.Active, Paused: ev.Paused,
		Shards: n, BatchSize: ev.BatchSize, ServingCounter: ev.ServingCounter,
		MaxAssigned: MaxAssigned(snap.Counters, n), Assigned: assigned,
		Admitted: admitted, Waiting: assigned - admitted,
		AdmitRatePerMinute: AdmitRatePerMinute(ev.Advances, s.cfg.TickEvery, s.clk.Now()),
		ShardCounters:      counters, UpdatedAt: ev.UpdatedAt, Pow: ev.Pow, Sale: ev.Sale,
	}
}

// AdminStatus reads the event afresh, with per-shard counters.
func (s *Service) AdminStatus(ctx context.Context, eventID string) (AdminStatus, error) {
	if !ValidID(eventID) {
		return AdminStatus{}, ErrInvalidEvent
	}
	snap, err := s.fresh(ctx, eventID)
	if err != nil {
		return AdminStatus{}, err
	}
	if !snap.Found {
		return AdminStatus{}, ErrNotFound
	}
	return s.adminStatus(eventID, snap), nil
}

// Limits of Events.
const (
	DefaultEventsLimit = 50
	MaxEventsLimit     = 500
)

// eventsParallelism bounds the snapshots Events reads at once.
const eventsParallelism = 8

// Events is the operator's event list: every active event, then the other
// events most recently configured, limit in all (0: DefaultEventsLimit),
// each read afresh as AdminStatus does. truncated says the store holds
// more events than were listed.
func (s *Service) Events(ctx context.Context, limit int) (list []AdminStatus, truncated bool, err error) {
	if limit == 0 {
		limit = DefaultEventsLimit
	}
	if limit < 1 || limit > MaxEventsLimit {
		return nil, false, fmt.Errorf("%w: limit must be in [1, %d]", ErrInvalidConfig, MaxEventsLimit)
	}
	active, err := s.store.ActiveEvents(ctx)
	if err != nil {
		return nil, false, unavailable("list events", err)
	}
	recent, err := s.store.Events(ctx, limit+1)
	if err != nil {
		return nil, false, unavailable("list events", err)
	}
	// Active events first: an event activated before the index existed is
	// only in the active registry.
	seen := map[string]bool{}
	var ids []string
	for _, id := range append(active, recent...) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if truncated = len(ids) > limit || len(recent) > limit; len(ids) > limit {
		ids = ids[:limit]
	}
	list = make([]AdminStatus, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, eventsParallelism)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			snap, err := s.fresh(ctx, id)
			if err == nil {
				list[i] = s.adminStatus(id, snap)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, false, err
	}
	return list, truncated, nil
}

// SetBatchSize changes only how many visitors each advancer tick admits,
// leaving the pause, the shards and the proof of work as they are.
func (s *Service) SetBatchSize(ctx context.Context, eventID string, batchSize int64) (AdminStatus, error) {
	if batchSize < MinBatchSize || batchSize > MaxBatchSize {
		return AdminStatus{}, fmt.Errorf("%w: batchSize must be in [%d, %d]", ErrInvalidConfig, MinBatchSize, MaxBatchSize)
	}
	return s.configure(ctx, eventID, false, func(st *Settings) { st.BatchSize = batchSize })
}

// ActivateOption sets more of an event's settings on Activate or Schedule.
type ActivateOption func(*Settings)

// WithPow asks every arrival for a proof of work of n expected hashes (0:
// none), in [MinPow, MaxPow].
func WithPow(n int64) ActivateOption { return func(st *Settings) { st.Pow = n } }

// optionSettings applies opts to empty settings and checks them.
func optionSettings(opts []ActivateOption) (Settings, error) {
	var st Settings
	for _, o := range opts {
		o(&st)
	}
	if st.Pow != 0 && (st.Pow < MinPow || st.Pow > MaxPow) {
		return Settings{}, fmt.Errorf("%w: pow must be 0 or in [%d, %d]", ErrInvalidConfig, MinPow, MaxPow)
	}
	return st, nil
}

// Activate turns the line on with the given shard count and batch size (0
// takes the configured default) and clears a pause. The shard count cannot
// change once any position was handed out (ErrInvalidConfig). Options set
// the rest; an event activated without WithPow asks for no proof of work.
func (s *Service) Activate(ctx context.Context, eventID string, shards int, batchSize int64, opts ...ActivateOption) (AdminStatus, error) {
	if !ValidID(eventID) {
		return AdminStatus{}, ErrInvalidEvent
	}
	more, err := optionSettings(opts)
	if err != nil {
		return AdminStatus{}, err
	}
	if shards == 0 {
		shards = s.cfg.DefaultShards
	}
	if batchSize == 0 {
		batchSize = s.cfg.DefaultBatchSize
	}
	if shards < MinShards || shards > MaxShards {
		return AdminStatus{}, fmt.Errorf("%w: shards must be in [%d, %d]", ErrInvalidConfig, MinShards, MaxShards)
	}
	if batchSize < MinBatchSize || batchSize > MaxBatchSize {
		return AdminStatus{}, fmt.Errorf("%w: batchSize must be in [%d, %d]", ErrInvalidConfig, MinBatchSize, MaxBatchSize)
	}
	return s.configure(ctx, eventID, true, func(st *Settings) {
		st.Active, st.Paused, st.Shards, st.BatchSize, st.Pow = true, false, shards, batchSize, more.Pow
	})
}

// Deactivate turns the line off: every enter and check passes through.
func (s *Service) Deactivate(ctx context.Context, eventID string) (AdminStatus, error) {
	return s.configure(ctx, eventID, false, func(st *Settings) { st.Active = false })
}

// Pause stops the advancer for the event; positions are still handed out.
func (s *Service) Pause(ctx context.Context, eventID string) (AdminStatus, error) {
	return s.configure(ctx, eventID, false, func(st *Settings) { st.Paused = true })
}

// Resume lets the advancer raise the event again.
func (s *Service) Resume(ctx context.Context, eventID string) (AdminStatus, error) {
	return s.configure(ctx, eventID, false, func(st *Settings) { st.Paused = false })
}

func (s *Service) configure(ctx context.Context, eventID string, create bool, change func(*Settings)) (AdminStatus, error) {
	if !ValidID(eventID) {
		return AdminStatus{}, ErrInvalidEvent
	}
	snap, err := s.fresh(ctx, eventID)
	if err != nil {
		return AdminStatus{}, err
	}
	if !snap.Found && !create {
		return AdminStatus{}, ErrNotFound
	}
	st := snap.Event.Settings
	change(&st)
	if err := s.store.Configure(ctx, eventID, st, s.clk.Now()); err != nil {
		s.invalidate(eventID)
		if errors.Is(err, ErrInvalidConfig) {
			return AdminStatus{}, err
		}
		return AdminStatus{}, unavailable("configure", err)
	}
	if snap, err = s.fresh(ctx, eventID); err != nil {
		return AdminStatus{}, err
	}
	return s.adminStatus(eventID, snap), nil
}

// AdvanceBy raises the serving counter by `by` positions at once, never
// above the highest position handed out.
func (s *Service) AdvanceBy(ctx context.Context, eventID string, by int64) (AdminStatus, error) {
	if !ValidID(eventID) {
		return AdminStatus{}, ErrInvalidEvent
	}
	if by < 1 || by > MaxAdvanceBy {
		return AdminStatus{}, fmt.Errorf("%w: by must be in [1, %d]", ErrInvalidConfig, MaxAdvanceBy)
	}
	for attempt := 0; ; attempt++ {
		snap, err := s.fresh(ctx, eventID)
		if err != nil {
			return AdminStatus{}, err
		}
		if !snap.Found {
			return AdminStatus{}, ErrNotFound
		}
		if p := snap.Event.Sale.Phase; p == SalePrequeue || p == SaleDrawing {
			return AdminStatus{}, fmt.Errorf("%w: the pre-queue is not drawn yet", ErrInvalidConfig)
		}
		ev := snap.Event
		to := min(ev.ServingCounter+by, MaxAssigned(snap.Counters, ev.Shards))
		if to <= ev.ServingCounter {
			return s.adminStatus(eventID, snap), nil
		}
		_, err = s.raise(ctx, snap, to, 0)
		if errors.Is(err, ErrConflict) && attempt < 4 {
			continue
		}
		if err != nil {
			return AdminStatus{}, err
		}
		if snap, err = s.fresh(ctx, eventID); err != nil {
			return AdminStatus{}, err
		}
		return s.adminStatus(eventID, snap), nil
	}
}

// raise writes S → to conditionally, records the admitted visitors and
// returns how many they were.
func (s *Service) raise(ctx context.Context, snap Snapshot, to, slot int64) (int64, error) {
	ev := snap.Event
	now := s.clk.Now()
	admitted := Visitors(snap.Counters, ev.Shards, to) - Visitors(snap.Counters, ev.Shards, ev.ServingCounter)
	err := s.store.Advance(ctx, AdvanceWrite{
		EventID: ev.ID, From: ev.ServingCounter, To: to, Now: now, TickSlot: slot,
		Advances: recordAdvance(ev.Advances, Advance{At: now, Admitted: admitted}),
	})
	s.invalidate(ev.ID)
	if err != nil && !errors.Is(err, ErrConflict) {
		return 0, unavailable("advance", err)
	}
	return admitted, err
}

// Tick runs one advancer tick over every active, unpaused event: each is
// raised so that about BatchSize more real visitors are admitted, at most
// once per tick slot however many advancers run.
func (s *Service) Tick(ctx context.Context) ([]TickResult, error) {
	ids, err := s.store.ActiveEvents(ctx)
	if err != nil {
		return nil, unavailable("list events", err)
	}
	slot := s.clk.Now().UnixNano() / int64(s.cfg.TickEvery)
	s.openMu.Lock()
	s.nextOpening = time.Time{}
	s.openMu.Unlock()
	var results []TickResult
	var errs []error
	for _, id := range ids {
		r, err := s.tickEvent(ctx, id, slot)
		if err != nil {
			errs = append(errs, fmt.Errorf("tier1: tick %s: %w", id, err))
			continue
		}
		if r.EventID != "" {
			results = append(results, r)
		}
	}
	return results, errors.Join(errs...)
}

func (s *Service) tickEvent(ctx context.Context, eventID string, slot int64) (TickResult, error) {
	for attempt := 0; ; attempt++ {
		snap, err := s.fresh(ctx, eventID)
		if err != nil {
			return TickResult{}, err
		}
		ev := snap.Event
		r := TickResult{EventID: eventID, From: ev.ServingCounter, To: ev.ServingCounter}
		switch {
		case !snap.Found || !ev.Active:
			return TickResult{}, nil
		case ev.Sale.Phase == SaleCancelled:
			r.Skipped = PhaseCancelled
			return r, nil
		case ev.Sale.Phase == SalePrequeue || ev.Sale.Phase == SaleDrawing:
			skip, err := s.tickSale(ctx, snap)
			if err != nil {
				return TickResult{}, err
			}
			if skip != "" || attempt >= 4 {
				r.Skipped = cmp.Or(skip, PhaseDrawing)
				return r, nil
			}
			continue // drawn now: decide on the fresh state
		case ev.Paused:
			r.Skipped = "paused"
			return r, nil
		case ev.TickSlot >= slot:
			r.Skipped = "slot-done"
			return r, nil
		}
		to := NextServing(snap.Counters, ev.Shards, ev.ServingCounter, ev.BatchSize)
		if to == ev.ServingCounter {
			r.Skipped = "idle"
			return r, nil
		}
		admitted, err := s.raise(ctx, snap, to, slot)
		if errors.Is(err, ErrConflict) && attempt < 4 {
			// Another advancer took the slot, or an admin advance moved S:
			// re-read and decide again.
			continue
		}
		if err != nil {
			return TickResult{}, err
		}
		r.To, r.Admitted = to, admitted
		s.cfg.Logger.Info("tier1 advance", "event", eventID, "from", r.From, "to", r.To, "admitted", r.Admitted)
		return r, nil
	}
}

// RunAdvancer runs `ticks` ticks (ADVANCER_TICKS) TickEvery apart, waiting
// with the configured Sleep, and hands each tick's outcome to report when it
// is not nil. A failing tick does not stop the later ones; their errors are
// joined.
func (s *Service) RunAdvancer(ctx context.Context, ticks int, report func([]TickResult, error)) error {
	var errs []error
	for i := 0; i < ticks; i++ {
		results, err := s.Tick(ctx)
		if report != nil {
			report(results, err)
		}
		if err != nil {
			errs = append(errs, err)
		}
		if i < ticks-1 {
			if err := s.WaitTick(ctx, s.cfg.TickEvery); err != nil {
				errs = append(errs, err)
				break
			}
		} else if err := s.WakeForOpening(ctx, s.clk.Now().Add(s.cfg.TickEvery)); err != nil {
			// The next invocation starts about a tick later: an opening
			// before then is closed by this one.
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
