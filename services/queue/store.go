package queue

import (
	"context"
	"time"
)

// Store is the port the Tier 2 domain keeps its state behind, in the
// domain's words: a visitor checks, touches or leaves a line, a worker's
// pass admits, sweeps, replays and retires, and a planner says which
// events a pass must visit and which worker of the fleet makes it. Every
// method that changes an event's line is one atomic step on the backing
// store (one Lua script for Redis), so any number of API servers and
// workers can share it. Implementations wrap every backend failure so that
// the Service can report ErrUnavailable; ids reaching a Store are already
// validated. redisstore is the production adapter and memstore the
// in-memory one; storetest is the conformance suite both pass.
type Store interface {
	Lines
	Passes
	Planner
}

// Lines is what visitors' and operators' requests ask of the store.
type Lines interface {
	// Check joins userID to the event's line or refreshes them (see CheckInput).
	// An error after the step itself succeeded still comes with the
	// Snapshot, so that a user it activated is reported.
	Check(ctx context.Context, in CheckInput) (Snapshot, error)
	// Touch refreshes a queued user's heartbeat, or an active user's (see
	// CheckInput.Idle), and reports where the user stands. It returns a
	// Snapshot with an empty Status when the user is neither queued nor
	// active (with Done set when they were served before); it never joins
	// anyone.
	Touch(ctx context.Context, in TouchInput) (Snapshot, error)
	// Leave removes the user from both the line and the active set, and
	// records the leave as served (Served.Left): a pass is then done, and
	// the user's entry token is never counted back after a loss.
	Leave(ctx context.Context, in LeaveInput) (bool, error)
	// SetThreshold stores the event's override of the default threshold
	// and, as a raised threshold frees slots, makes the event due for a
	// visit at once.
	SetThreshold(ctx context.Context, eventID string, n int64) error
	// Stats reads the event's counters without changing anything.
	Stats(ctx context.Context, eventID string, now time.Time, defaultThreshold int64) (StoreStats, error)
	// Ranking returns the events with the most admissions in the period
	// (daily, weekly or monthly, as of now), best first.
	Ranking(ctx context.Context, period string, now time.Time, limit int) ([]RankEntry, error)
	// Listed lists the events with state the worker may have to visit:
	// listed by their first waiter's or holder's check (or a relog), until
	// a pass retires them empty.
	Listed(ctx context.Context) ([]string, error)
	// Epochs reads the epoch id of each event ("" where there is none), in
	// their order, and starts nothing: an epoch other than the one an
	// instance saw means the event's state was lost.
	Epochs(ctx context.Context, eventIDs []string) ([]string, error)
	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// LineStates reads, for each query, the event's line as its change log
	// and counters show it now (one read per event, all at once: one
	// pipeline on Redis), so that an instance answers queued users' polls
	// from memory (lines.go). It changes nothing.
	LineStates(ctx context.Context, qs []LineQuery) ([]LineState, error)
	// LineChanges subscribes to the store's line changes: ready runs once
	// the subscription holds, with caughtUp, which says whether every
	// change the store has sent so far was handed to fn and fn returned
	// (nil: the store cannot tell, or it delivers before the change's
	// step returns), then fn for each admission pass that
	// admitted anyone, each waiter's leave and each join ahead of someone
	// already waiting (LinePush), anywhere in the fleet, in the order the
	// store made them, until ctx is done or the subscription fails (its
	// error: what was published meanwhile may be lost), so that an
	// instance's answers from memory follow the line at once (lines.go).
	LineChanges(ctx context.Context, ready func(caughtUp func() bool), fn func(LinePush)) error
}

// Passes is what the worker's passes over one event do.
type Passes interface {
	// ClaimAdmission claims the event's admission pass for owner for at
	// most ttl, unless another pass holds it: one pass at a time per
	// event, fleet-wide (a pass that dies blocks the event for ttl at most).
	ClaimAdmission(ctx context.Context, eventID, owner string, ttl time.Duration) (bool, error)
	// ReleaseAdmission ends owner's claim; false when owner no longer held it.
	ReleaseAdmission(ctx context.Context, eventID, owner string) (bool, error)
	// Admit lets the head of the line in while the event has free slots.
	// An error after the admission step itself succeeded still comes with
	// the result, so that the admitted users are reported.
	Admit(ctx context.Context, in AdmitInput) (AdmitResult, error)
	// Retire drops an event whose line and active set are empty (and that
	// has no admissions left to rank or changes left to log) from the
	// listed events and both schedules, without ever losing an event that
	// someone joins meanwhile: true when it did.
	Retire(ctx context.Context, eventID string) (bool, error)
	// Replay rebuilds the event's served record after a loss of its state,
	// from the durable ledger or from the admissions this instance made and
	// nobody had claimed yet, in the order they were recorded: users whose
	// slot runs past now are put back into the active set until the window
	// ends (they claim the rest by showing up), leavers and served passes
	// leave the line. It does so only while the recovery window runs or the
	// ledger's replay is pending, when nobody new is admitted, so that no
	// slot they held has been handed out again. With finish set to the
	// event's epoch, the ledger's replay is done and admissions may resume
	// once the window ends. It returns how many it put back into active.
	Replay(ctx context.Context, in ReplayInput) (int, error)
	// Logged forgets the served changes an admission pass reported
	// (AdmitResult.Unlogged) once they are in the durable ledger; a change
	// made meanwhile stays for the next pass.
	Logged(ctx context.Context, eventID string, entries []Served) error
	// Relog queues the event's whole served record for the durable ledger
	// again (after the store that keeps the ledger lost data), leaving any
	// change already queued as it is, and lists the event so that an
	// admission pass appends it. It returns how many entries it queued.
	Relog(ctx context.Context, eventID string) (int, error)
	// ClaimSweep claims eventID's stale sweep for the interval every, for
	// owner: true when no worker of any instance has swept (or begun to
	// sweep) it in the last every, so that each line is swept once per
	// interval cluster-wide, however many instances run.
	ClaimSweep(ctx context.Context, eventID, owner string, every time.Duration) (bool, error)
	// Sweep removes the queued users silent for at least seenTTL as of now
	// (never earlier, at most one HeartbeatTick later), and notes the
	// oldest heartbeat it kept (StoreStats.OldestHeartbeat).
	Sweep(ctx context.Context, eventID string, now time.Time, seenTTL time.Duration) (int, error)
	// Beat writes queued users' heartbeats in batches (event id → user id →
	// when this instance last heard from them): a user no longer queued is
	// skipped. One write per event, however many users.
	Beat(ctx context.Context, beats map[string]map[string]time.Time) error
}

// Planner is what decides which events the worker's passes visit, and
// which worker of the fleet makes the periodic ones.
type Planner interface {
	// Lease takes duty's cluster-wide lease for owner, or renews it while
	// owner holds it, for ttl: true when owner holds it afterwards.
	Lease(ctx context.Context, duty, owner string, ttl time.Duration) (bool, error)
	// DueVisits lists the events whose visit by the admission pass is due
	// at now (at most a page of them, the most overdue first): every event
	// that may need one is scheduled (Schedule, Wake, and a check that
	// lists an event or queues its first waiter), so the pass reads no
	// event that has nothing to do.
	DueVisits(ctx context.Context, now time.Time) ([]string, error)
	// Schedule sets the event's next visit to visit and, when sweep is not
	// zero and the event has no stale sweep scheduled, its first sweep to
	// sweep. A retire takes the event off both schedules.
	Schedule(ctx context.Context, eventID string, visit, sweep time.Time) error
	// Wake makes each event due for a visit at once (a visit due sooner
	// stays).
	Wake(ctx context.Context, eventIDs []string) error
	// Enlist puts each of eventIDs not on the visit schedule on it, due at
	// once, and returns how many it put there.
	Enlist(ctx context.Context, eventIDs []string) (int, error)
	// DueSweeps lists the events whose stale sweep is due at now (a page).
	DueSweeps(ctx context.Context, now time.Time) ([]string, error)
	// ScheduleSweep sets the event's next stale sweep to at.
	ScheduleSweep(ctx context.Context, eventID string, at time.Time) error
}

// LineQuery asks for one event's LineState.
type LineQuery struct {
	EventID string
	// Since is the last change the caller has read: the state carries the
	// changes after it. -1: none yet, send only the count.
	Since            int64
	Now              time.Time
	DefaultThreshold int64
	FixedThreshold   bool // as in CheckInput
}

// MaxLineChanges is the most changes one LineState carries: more since
// the caller's cursor is a gap.
const MaxLineChanges = 5000

// LineState is an event's line as one atomic read saw it.
type LineState struct {
	EventID string
	// Seq counts the changes logged so far: every step that changes who
	// is in the line (Check that queues, Admit that lets people in, Leave
	// of a waiter, a sweep's removal, a Replay that takes waiters out)
	// logs one (Admit one per batch) and the Snapshot of Check and Touch
	// carries the count as of that step (LineSeq).
	Seq int64
	// Gap says the changes after the query's Since are not all here (the
	// log dropped them, there were more than MaxLineChanges, or Since is
	// ahead of Seq: the log started again): forget what was learnt.
	Gap bool
	// Changes are those after Since, oldest first (Seq-len+1 … Seq).
	Changes []LineChange
	// Prev is the change numbered Since, the last the caller read, when
	// the log still holds it (nil otherwise): if the caller read another
	// change under that number, the count went back and forward again (a
	// failover to a replica behind) and the caller must forget the line.
	Prev *LineChange
	// Gen names the count Seq belongs to: another Gen means the count
	// started again (its key was lost while the epoch stayed), and a
	// cursor read under the old one means nothing in it. "" before the
	// first change (and on a store whose count only a loss of the epoch
	// restarts).
	Gen string
	// Front is the highest base the admission pass has let in (-1: none):
	// a waiter whose base is above it has not been let in.
	Front              int64
	QueueSize          int64
	ActiveCount        int64 // unexpired
	Threshold          int64
	AdmittedLastMinute int64
	RateSince          time.Time // as in Snapshot
	Epoch              EpochState
}

// Kinds of LineChange.
const (
	LineJoined   = 'J' // Base joined the line
	LineAdmitted = 'A' // N let in from the head, the highest base Base
	LineLeft     = 'L' // UserID, at Base, left the line
	LineSwept    = 'S' // UserID, at Base, was swept as silent
	LineReset    = 'X' // anything else: forget what was learnt of the line
)

// LinePush is one message of Store.LineChanges.
type LinePush struct {
	EventID string
	// Seq > 0: a visitor joined ahead of someone already waiting, logged
	// as change Seq, at Base: an instance counts it in its answers until
	// a read of the log brings it in. Seq 0: an admission pass or a
	// waiter's leave: the instance reads the line again.
	Seq, Base int64
}

// LineChange is one entry of an event's change log.
type LineChange struct {
	Kind   byte
	Base   int64
	N      int64  // LineAdmitted only
	UserID string // LineLeft and LineSwept only
}

// RateWindow is the span over which admissions are counted for the wait
// estimate and Stats.AdmittedLastMinute.
const RateWindow = 60 * time.Second

// CheckInput is one check request. When the user is already queued the
// heartbeat is refreshed; when already active nothing changes (the expiry
// stays); when the line is empty and fewer than the threshold
// are active the user is activated until Now+ActiveTTL; otherwise they are
// queued with Score.
type CheckInput struct {
	EventID          string
	UserID           string
	Score            int64 // Tier 1 position, or arrival ms without one
	Now              time.Time
	ActiveTTL        time.Duration
	DefaultThreshold int64
	// FixedThreshold makes DefaultThreshold the event's threshold, ignoring
	// any override kept in the store (events configured in the settings store).
	FixedThreshold bool
	Epoch          EpochInput
	// HolderSlotEnd is set when the user presented a valid entry token for
	// this event: the end of the slot it stands for. During a recovery
	// window such a user, missing from the active set and not recorded as
	// having left, is counted back into it until then instead of joining
	// the line.
	HolderSlotEnd time.Time
	// Pass says the user came with a Tier 1 pass (Identity.Pass): a pass
	// already served is answered StatusDone instead of joining.
	Pass bool
	// Idle is how long an active user's slot is held past their last check
	// or heartbeat (never past its end); zero: no idle limit.
	Idle time.Duration
	// Ledger says the durable ledger is on: served changes are queued for
	// it (AdmitResult.Unlogged) and a loss awaits its replay.
	Ledger bool
	// BatchBeat says the caller batches queued users' heartbeats (Store.Beat):
	// an already queued user's heartbeat is not written by this step.
	BatchBeat bool
	// Renewal is a status or heartbeat with a valid entry token from a user
	// the store does not hold: counted back during a recovery window, else
	// left out (Snapshot.Status "", with Done when served before). A
	// renewal never joins the line nor admits anyone.
	Renewal bool
}

// TouchInput is one status or heartbeat request.
type TouchInput struct {
	EventID          string
	UserID           string
	Now              time.Time
	DefaultThreshold int64
	Idle             time.Duration // as in CheckInput
	Ledger           bool          // as in CheckInput: a slot the idle limit frees is noted for it
	BatchBeat        bool          // as in CheckInput
}

// LeaveInput is one leave request.
type LeaveInput struct {
	EventID string
	UserID  string
	Pass    bool // as in CheckInput
	Ledger  bool // as in CheckInput
}

// ReplayInput is one Store.Replay call.
type ReplayInput struct {
	EventID string
	Entries []Served
	Now     time.Time
	// Finish, when set, is the epoch whose ledger replay this call ends.
	Finish string
	Ledger bool // as in CheckInput
	// RebuildGrace: while the ledger's replay is pending the window lasts
	// at least until Now + RebuildGrace, and the replay that ends it (with
	// Finish) moves the window's end there if it was sooner, so that the
	// line, asked to come back while the replay was pending, forms again
	// before anyone is admitted.
	RebuildGrace time.Duration
}

// EpochInput is what a per-event step needs to detect a lost Redis: the
// event's epoch this instance last saw ("" when none), a fresh id to start
// a new epoch with, and how long a recovery window lasts.
type EpochInput struct {
	Known     string
	Candidate string
	Window    time.Duration
}

// EpochState is an event's epoch as a step found or started it.
type EpochState struct {
	ID string
	// RecoveringUntil is the end of the recovery window (zero when none is
	// running): until then no one new is admitted.
	RecoveringUntil time.Time
}

// Snapshot is where a user stands plus the event counters a View needs, as
// read in the same atomic step.
type Snapshot struct {
	Status             Status // "" when neither queued nor active (Touch only)
	Activated          bool   // became active in this very call
	Rank               int64  // 0-based place in line when queued
	QueueSize          int64
	ActiveCount        int64
	Threshold          int64
	AdmittedLastMinute int64
	// RateSince is the first admission among those counted in
	// AdmittedLastMinute (zero when there is none, and in answers for
	// active users): the rate is measured from then, not over the whole
	// window, while the sale is younger.
	RateSince time.Time
	ExpiresAt time.Time // the slot's end, when active
	Epoch     EpochState
	// Wake says the step may have made work for the admission pass that
	// no schedule shows yet (Check only: it queued the first waiter of an
	// empty line, or listed the event again): the caller has its worker
	// visit the event (Service.wake).
	Wake bool
	// Done is set for a user served before who holds no slot now (a Done*
	// constant): with Status StatusDone from Check (a pass), or an empty
	// Status from Touch.
	Done string
	// For a queued user: the line's change count as of this step
	// (LineState.Seq) and the base the user sorts by (Tier 1 position or
	// arrival ms), so that their later polls may be answered from memory.
	LineSeq  int64
	LineBase int64
}

// MaxLineBase is the largest Tier 1 position or arrival ms a line orders
// by: the store keeps each waiter's heartbeat in the low bits of its score,
// which must stay an exact integer (arrival ms reach it in the year 2248).
const MaxLineBase = 1<<43 - 1

// HeartbeatTick is how finely a queued user's heartbeat is kept: a waiter
// silent for SeenTTL is dropped by the first stale sweep at least one tick
// later.
const HeartbeatTick = 5 * time.Second

// StoreStats are an event's raw counters.
type StoreStats struct {
	QueueSize          int64
	ActiveCount        int64
	Threshold          int64
	AdmittedLastMinute int64
	RateSince          time.Time // as in Snapshot
	// OldestHeartbeat is the oldest heartbeat the last stale sweep kept,
	// to HeartbeatTick (zero when nobody is queued or no sweep ran yet).
	OldestHeartbeat time.Time
	RecoveringUntil time.Time // zero when no recovery window runs
}

// AdmitInput is one admission pass over one event.
type AdmitInput struct {
	EventID          string
	Now              time.Time
	ActiveTTL        time.Duration
	DefaultThreshold int64
	FixedThreshold   bool // as in CheckInput
	Batch            int64
	Epoch            EpochInput
	// ClaimGrace is how long an admitted user's slot is held before they
	// first show up (check) to fetch the token; then CheckInput.Idle runs.
	// Zero: until the slot's end.
	ClaimGrace time.Duration
	Ledger     bool // as in CheckInput
}

// AdmitResult is what one admission pass did.
type AdmitResult struct {
	Admitted []string // user ids, in line order
	// Header lists those of Admitted named by a trusted header rather than
	// a Tier 1 pass (usually none).
	Header    []string
	ExpiresAt time.Time
	// NextFree is the earliest a slot frees by time after the pass (zero
	// when nobody is active): the pass's next visit is due then at the
	// latest, as leaves, joins and threshold changes wake it sooner.
	NextFree    time.Time
	QueueSize   int64 // after the pass
	ActiveCount int64 // after the pass
	Epoch       EpochState
	// Replay says the event lost its state and awaits the replay of the
	// durable ledger (Store.Replay with Finish) before admitting anyone.
	Replay bool
	// Unlogged are the served changes not yet in the durable ledger (none
	// while a replay is pending): append them, then call Store.Logged.
	Unlogged []Served
}
