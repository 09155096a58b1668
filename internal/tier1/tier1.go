// Package tier1 is vwr's Tier 1 domain: the serverless front door that hands
// every visitor a position from a sharded counter, advances a per-event
// serving counter in batches, and mints the Tier 1 pass once a visitor's
// position is served. It knows nothing of AWS, Redis or HTTP: stores plug in
// through the Store port (internal/tier1/dynamostore, internal/tier1/redisstore)
// and the Lambda handlers call the Service.
package tier1

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vwr-go/vwr/internal/ids"
)

// ValidID reports whether s is an acceptable event id, request id or
// idempotency key.
func ValidID(s string) bool { return ids.Valid(s) }

// Errors of the domain. The handlers map them to HTTP status in one place.
var (
	ErrInvalidEvent          = errors.New("tier1: invalid event id")
	ErrInvalidRequestID      = errors.New("tier1: invalid request id")
	ErrInvalidIdempotencyKey = errors.New("tier1: invalid idempotency key")
	ErrInvalidConfig         = errors.New("tier1: invalid event config")
	ErrNotFound              = errors.New("tier1: not found")
	// ErrUnavailable wraps every store failure: the API answers 503 + Retry-After.
	ErrUnavailable = errors.New("tier1: store unavailable")
	// ErrThrottled is a store that still throttles after the SDK's retries.
	// It wraps ErrUnavailable, so a handler that maps ErrUnavailable to 503
	// covers it too.
	ErrThrottled = fmt.Errorf("%w: throttled", ErrUnavailable)
	// ErrConflict is a conditional write that lost: the serving counter moved
	// under an advancer, the tick slot was already advanced, or an enter used a
	// stale shard count. The Service handles it; handlers should not see it.
	ErrConflict = errors.New("tier1: conflict")
)

// Limits accepted by Activate and AdvanceBy.
const (
	MinShards    = 1
	MaxShards    = 64
	MinBatchSize = 1
	MaxBatchSize = 1_000_000
	MaxAdvanceBy = 1_000_000_000
)

// Settings is the operator-controlled part of an event.
type Settings struct {
	Active    bool
	Paused    bool
	Shards    int
	BatchSize int64
	// Pow is the proof of work every arrival pays, in expected SHA-256
	// hashes (guard.go); 0: none.
	Pow int64
}

// Advance is one raise of the serving counter, kept on the event for the
// admit rate over the last minute.
type Advance struct {
	At       time.Time
	Admitted int64 // real visitors let in by this raise (holes not counted)
}

// Event is an event's stored state (its config item).
type Event struct {
	ID string
	Settings
	ServingCounter int64
	UpdatedAt      time.Time
	// TickSlot is the advancer slot (unix time / tick interval) of the last
	// scheduled advance; it keeps two racing advancers to one raise per slot.
	TickSlot int64
	Advances []Advance
	// Sale summarises a scheduled sale, kept on the event so every snapshot
	// knows it without another read; the full state is SaleStore.Sale.
	Sale SaleSummary
}

// Snapshot is an event and all its shard counters, read together (one round
// trip on Redis; one BatchGetItem on DynamoDB once the store knows the
// event's shard count).
type Snapshot struct {
	Found    bool // false when the event was never activated
	Event    Event
	Counters []int64 // Counters[k] = positions handed out by shard k
}

// NewPosition asks a store to hand out the next position of one shard.
type NewPosition struct {
	EventID        string
	Shard          int // chosen by the Service at random in [0, Shards)
	Shards         int // the shard count the Service believes; a mismatch is ErrConflict
	RequestID      string
	IdempotencyKey string // empty: not idempotent
	Now            time.Time
	TTL            time.Duration
}

// Position is one visitor's place, keyed by its requestId.
type Position struct {
	RequestID string
	EventID   string
	Position  int64
	Shard     int
	CreatedAt time.Time
}

// AdvanceWrite raises an event's serving counter from From to To, only if it
// still is From and, when TickSlot > 0, only if no advance happened in that
// slot yet. Either condition failing is ErrConflict.
type AdvanceWrite struct {
	EventID  string
	From, To int64
	Now      time.Time
	TickSlot int64 // 0 for manual advances
	Advances []Advance
}

// Store is the port every Tier 1 store implements. All methods return
// ErrThrottled (wrapped) when the backend still throttles after retries.
type Store interface {
	GuardStore
	// Snapshot reads the event and all its shard counters, strongly
	// consistent, in one round trip whenever the backend allows.
	Snapshot(ctx context.Context, eventID string) (Snapshot, error)
	// Configure creates or updates an event's settings, creating its shard
	// counters at zero. Changing the shard count once any position was handed
	// out is ErrInvalidConfig: strided positions depend on it.
	Configure(ctx context.Context, eventID string, s Settings, now time.Time) error
	// Assign increments one shard counter and records the strided position
	// under a fresh requestId. With an idempotency key it returns the first
	// record for that key instead, and never records two positions for one key.
	Assign(ctx context.Context, p NewPosition) (pos Position, reused bool, err error)
	// Position returns a visitor's record; unknown or of another event is ErrNotFound.
	Position(ctx context.Context, eventID, requestID string) (Position, error)
	// Advance writes a serving-counter raise conditionally (see AdvanceWrite).
	Advance(ctx context.Context, a AdvanceWrite) error
	// ActiveEvents lists the events whose settings say active.
	ActiveEvents(ctx context.Context) ([]string, error)
	// Events lists the events ever configured (active or not, scheduled
	// ones included), the most recently configured first, at most limit.
	Events(ctx context.Context, limit int) ([]string, error)
}

// StridedPosition is the position that shard k of n hands out with its c-th
// increment: k+1, k+1+n, k+1+2n, … Stores call it so every adapter agrees.
func StridedPosition(shard, shards int, c int64) int64 {
	return int64(shard) + 1 + (c-1)*int64(shards)
}
