// Package queue is vwr's Tier 2 domain: a per-event line that admits people
// while fewer than a threshold are active and hands each admitted person an
// entry token. It knows nothing of HTTP or Redis; the HTTP API lives in
// services/queue/httpapi and the Redis adapter in services/queue/redisstore.
package queue

import (
	"errors"
	"time"

	"github.com/vwr-go/vwr/internal/ids"
)

// ValidID reports whether s is an acceptable event id (it goes into key
// names, so the shape is narrow: ids.Pattern).
func ValidID(s string) bool { return ids.Valid(s) }

// ValidUser reports whether s is an acceptable user id: what an identity
// provider sends, 1–256 bytes of printable UTF-8 (ids.ValidUser). User ids
// are only ever set members, script arguments and token claims.
func ValidUser(s string) bool { return ids.ValidUser(s) }

// Errors of the domain. The HTTP layer maps them to status codes in one place.
var (
	ErrInvalidEvent     = errors.New("queue: invalid event id")
	ErrInvalidUser      = errors.New("queue: invalid user id")
	ErrInvalidThreshold = errors.New("queue: threshold out of range")
	ErrInvalidPeriod    = errors.New("queue: invalid ranking period")
	ErrNotQueued        = errors.New("queue: not queued")
	// ErrUnknownEvent is the answer for an event that is not configured (or
	// is closed) while events must be configured (QUEUE_OPEN_EVENTS=false).
	ErrUnknownEvent = errors.New("queue: unknown event")
	// ErrGone is the answer to a renewal (status or heartbeat with an entry
	// token) from a holder whose slot is over: a *GoneError says why.
	ErrGone = errors.New("queue: slot gone")
	// ErrUnavailable wraps every store failure: the API answers 503 + Retry-After.
	ErrUnavailable = errors.New("queue: store unavailable")
)

// Threshold bounds accepted by SetThreshold.
const (
	MinThreshold = 1
	MaxThreshold = 1_000_000
)

// Status is where a user stands in an event's line.
type Status string

// Statuses, spelled as the seed implementation's clients expect.
const (
	StatusQueued Status = "queued"
	StatusActive Status = "active"
	// StatusDone answers a Tier 1 pass that was already served: its holder
	// was admitted (or left) once and must take a new Tier 1 place to come
	// back (View.Done says why).
	StatusDone Status = "done"
	// StatusWait appears only in a Snapshot: the store asks a token holder
	// it lost to come back in a moment, once the ledger's replay tells
	// whether they left (Service answers ErrUnavailable).
	StatusWait Status = "wait"
)

// Why a slot (or a pass) is done: View.Done and GoneError.Reason.
const (
	DoneLeft      = "left"       // the holder left (or left the line)
	DoneSlotEnded = "slot_ended" // the slot ran to its end
	DoneIdle      = "idle"       // freed early: no heartbeat for the idle limit
)

// GoneError is ErrGone with the reason (a Done* constant).
type GoneError struct{ Reason string }

func (e *GoneError) Error() string { return "queue: slot gone: " + e.Reason }

// Is makes errors.Is(err, ErrGone) hold.
func (e *GoneError) Is(target error) bool { return target == ErrGone }

// Identity is who is asking. Position is the verified Tier 1 position, or 0
// when the user came without a Tier 1 pass (then arrival time orders them).
type Identity struct {
	UserID   string
	Position int64
	// Pass says the identity came from a Tier 1 pass (or, for a renewal,
	// from the entry token alone): such a user is admitted at most once, and
	// a served pass is answered StatusDone. Users named by a trusted header
	// may join again, at the back of the line.
	Pass bool
	// EntryToken is the entry token the request carried, if any (the
	// urr-entry-token cookie). Only a valid one for this event and user
	// counts: it lets a holder the store lost be counted back in.
	EntryToken string
}

// View is what check, status and heartbeat answer. Field meanings follow the
// seed implementation's response so its clients work unchanged.
type View struct {
	EventID       string
	Status        Status
	Position      int64 // 1-based place in line; 0 when active
	PeopleAhead   int64
	PeopleBehind  int64
	QueueSize     int64
	EstimatedWait int // seconds
	NextPoll      int // seconds
	CurrentUsers  int64
	Threshold     int64
	// Set only when Status is active. ExpiresAt is the slot's end;
	// TokenExpiresAt the token's, which renewals move up to ExpiresAt.
	EntryToken     string
	ExpiresAt      time.Time
	TokenExpiresAt time.Time
	// RecoveringUntil is set while the event's recovery window runs: the
	// queue lost its state and admits nobody new until then.
	RecoveringUntil time.Time
	// Done says why, when Status is StatusDone (a Done* constant).
	Done string
	// PeopleAheadExact is false when a queued answer came from the
	// instance's memory of the line (lines.go): Position, PeopleAhead and
	// PeopleBehind are then brought forward from the store's last answer
	// by the changes read since; true when read in the store's step.
	PeopleAheadExact bool
}

// Stats is the admin view of one event.
type Stats struct {
	EventID             string
	QueueSize           int64
	CurrentUsers        int64
	Threshold           int64
	AdmittedLastMinute  int64
	OldestHeartbeatAge  time.Duration
	EstimatedClearAfter int       // seconds until the current line is admitted
	RecoveringUntil     time.Time // set while the recovery window runs
}

// RankEntry is one event in an admissions ranking.
type RankEntry struct {
	EventID    string
	Admissions int64
}

// Admission is one user let in, reported to the Notifier.
type Admission struct {
	EventID    string
	UserID     string
	EntryJTI   string
	ExpiresAt  time.Time
	AdmittedAt time.Time
}

// Notifier hears about every admission, from both the direct entry in check
// and the worker. It must not block the request or the admission pass that
// reports (internal/notify's SQS publisher only buffers).
type Notifier interface {
	Admitted(a Admission)
}

// NopNotifier discards admissions.
type NopNotifier struct{}

// Admitted does nothing.
func (NopNotifier) Admitted(Admission) {}

// While a recovery window runs, waiting pages within the first
// RecoveringFastPollRank places poll at least every RecoveringNextPoll
// seconds: the line's head rebuilds, and learns of the window's end, within
// seconds (the window itself is short, see Config.RecoveryWindow).
const (
	RecoveringNextPoll     = 2
	RecoveringFastPollRank = 10000
)

// NextPoll is the seed's (§5.7) polling schedule in seconds.
func NextPoll(status Status, position int64) int {
	switch {
	case status == StatusActive:
		return 3
	case position <= 1000:
		return 1
	case position <= 5000:
		return 5
	case position <= 10000:
		return 10
	case position <= 100000:
		return 30
	default:
		return 60
	}
}
