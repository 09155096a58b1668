package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/eventsettings"
)

// Served is one entry of an event's record of whom it let in: an admission
// with its slot's end, or a leave. The store keeps the record beside the
// line (it is what StatusDone and the refused renewal of a leaver come
// from) and queues every change for the durable Ledger, from which a lost
// store is rebuilt (Store.Replay).
type Served struct {
	UserID string
	// Pass says the user came with a Tier 1 pass: served once, done for
	// good. Users named by a trusted header may join again at the back.
	Pass bool
	// SlotEnd is the end of the slot they were given; zero once Left or
	// Idle.
	SlotEnd time.Time
	Left    bool
	// Idle says the idle limit freed their slot before its end (a closed
	// tab): like a leave, the slot is over for good, and a replay after a
	// loss must not hand it back while someone else holds it.
	Idle bool
}

// Value is the entry's encoding in the store and the ledger: "p" (pass) or
// "h" (header), then the slot's end in unix ms, "L" once they left, or "I"
// once the idle limit freed their slot.
func (s Served) Value() string {
	kind := "h"
	if s.Pass {
		kind = "p"
	}
	switch {
	case s.Left:
		return kind + "L"
	case s.Idle:
		return kind + "I"
	}
	return kind + strconv.FormatInt(s.SlotEnd.UnixMilli(), 10)
}

// ParseServed reads an entry's Value.
func ParseServed(userID, value string) (Served, error) {
	if len(value) < 2 || (value[0] != 'p' && value[0] != 'h') {
		return Served{}, fmt.Errorf("queue: malformed served value %q", value)
	}
	s := Served{UserID: userID, Pass: value[0] == 'p'}
	switch value[1:] {
	case "L":
		s.Left = true
		return s, nil
	case "I":
		s.Idle = true
		return s, nil
	}
	ms, err := strconv.ParseInt(value[1:], 10, 64)
	if err != nil || ms <= 0 {
		return Served{}, fmt.Errorf("queue: malformed served value %q", value)
	}
	s.SlotEnd = clock.FromUnixMilli(ms)
	return s, nil
}

// Ledger is the durable copy of every event's served record, kept in the
// settings store (LedgerOver adapts eventsettings.Ledger, which both
// settings adapters implement; settingstest is their conformance suite). Workers append what the queue's store noted since
// their last pass; after a loss of the queue's store, the worker that finds
// it replays the ledger into the new one before anyone new is admitted.
type Ledger interface {
	// AppendQueueLedger adds entries to eventID's ledger, kept at least
	// ServedRetention after now. A later entry for the same user replaces
	// an earlier one.
	AppendQueueLedger(ctx context.Context, eventID string, entries []Served, now time.Time) error
	// QueueLedger reads eventID's ledger a page at a time, from cursor (""
	// for the start); next is "" after the last page. Replaying every page
	// in order, each entry replacing the user's earlier one, leaves each
	// user's latest entry.
	QueueLedger(ctx context.Context, eventID, cursor string) (entries []Served, next string, err error)
}

// ServedRetention is how long an event's served record (and its ledger)
// outlives the event's last admission or leave: longer than a Tier 1
// position (24 h) and a pass minted from it can be presented.
const ServedRetention = eventsettings.LedgerRetention

// LedgerOver is the Ledger kept in a settings store, which holds each
// entry as its Value.
func LedgerOver(l eventsettings.Ledger) Ledger { return ledgerOver{l} }

type ledgerOver struct{ l eventsettings.Ledger }

func (o ledgerOver) AppendQueueLedger(ctx context.Context, eventID string, entries []Served, now time.Time) error {
	raw := make([]eventsettings.LedgerEntry, len(entries))
	for i, e := range entries {
		raw[i] = eventsettings.LedgerEntry{UserID: e.UserID, Value: e.Value()}
	}
	return o.l.AppendQueueLedger(ctx, eventID, raw, now)
}

func (o ledgerOver) QueueLedger(ctx context.Context, eventID, cursor string) ([]Served, string, error) {
	raw, next, err := o.l.QueueLedger(ctx, eventID, cursor)
	if err != nil {
		return nil, "", err
	}
	out := make([]Served, 0, len(raw))
	for _, e := range raw {
		s, err := ParseServed(e.UserID, e.Value)
		if err != nil {
			return nil, "", fmt.Errorf("queue: ledger of %s: %w", eventID, err)
		}
		out = append(out, s)
	}
	return out, next, nil
}
