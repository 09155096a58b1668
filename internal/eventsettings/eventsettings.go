// Package eventsettings owns Tier 2's durable per-event settings (threshold,
// open, the queue's epoch) and the durable ledger of whom each event let in:
// the ports (Store, Ledger), the in-memory Cache every Tier 2 instance reads
// them through, and, below it, one adapter per backend (dynamostore on
// Tier 1's DynamoDB tables, redisstore on Tier 1's Redis) that the shared
// conformance suite (settingstest) runs against. It imports neither tier:
// Tier 2 reads settings through it, and Tier 1's deployment provides the
// tables and the Redis they live in, so bin/queue links none of Tier 1.
package eventsettings

import (
	"context"
	"time"
)

// Settings are one event's Tier 2 settings. They live in a durable Store;
// every instance holds them in memory (Cache) and hands the threshold to
// the queue's scripts as an argument, so losing the queue's Redis never
// changes a threshold.
type Settings struct {
	Threshold int64
	// Open says the event takes visitors. A closed or absent event is
	// unknown to Tier 2 and never listed for its worker.
	Open bool
	// Version is the store-wide version of the write that produced these
	// settings; it only grows (within one Version.Generation).
	Version int64
	// Epoch is the queue's epoch for the event as the workers last saw it
	// in the queue's store ("" before any): an instance that finds another
	// one there, or none, knows the queue lost the event's state, even
	// when it has just started and remembers nothing itself.
	Epoch string
}

// Version is a Store's store-wide version.
type Version struct {
	// Generation is a random id the store writes with its first setting. A
	// different one (or none, once there was one) means the store lost
	// its data: version numbers of different generations do not compare.
	Generation string
	// N changes whenever any event's settings change.
	N int64
}

// Store is the durable home of every event's Settings (dynamostore,
// redisstore; settingstest is their conformance suite).
type Store interface {
	// QueueSettingsVersion is the store-wide version: it changes whenever
	// any event's settings change, so a refresh can skip the full read.
	QueueSettingsVersion(ctx context.Context) (Version, error)
	// QueueSettings reads every event's settings and a store-wide version
	// read no later than they were: a write racing the read can only make
	// the next refresh read again.
	QueueSettings(ctx context.Context) (map[string]Settings, Version, error)
	// PutQueueSettings stores eventID's Threshold and Open (keeping its
	// Epoch) and returns what is stored afterwards, with its new Version.
	// When a concurrent write with a newer version won, that write's
	// settings are returned.
	PutQueueSettings(ctx context.Context, eventID string, s Settings) (Settings, error)
	// PutQueueEpoch stores eventID's Epoch, keeping the rest, and returns
	// what is stored afterwards; ok is false (and nothing is written) when
	// the event has no settings.
	PutQueueEpoch(ctx context.Context, eventID, epoch string) (s Settings, ok bool, err error)
	// RestoreQueueSettings writes back settings the store lost: each event
	// absent from the store gets the given Threshold, Open and Epoch under
	// a new version; an event present is left alone (it was written since).
	// It returns how many it wrote.
	RestoreQueueSettings(ctx context.Context, all map[string]Settings) (int, error)
}

// LedgerEntry is one user's entry in an event's ledger: Value is the
// queue's encoding of whom it let in or who left (queue.Served.Value),
// opaque to the stores.
type LedgerEntry struct {
	UserID string
	Value  string
}

// Ledger is the durable copy of every event's served record, kept beside
// the settings (both adapters implement it). Tier 2's workers append what
// the queue's store noted since their last pass; after a loss of the
// queue's store, the worker that finds it replays the ledger into the new
// one before anyone new is admitted.
type Ledger interface {
	// AppendQueueLedger adds entries to eventID's ledger, kept at least
	// LedgerRetention after now. A later entry for the same user replaces
	// an earlier one.
	AppendQueueLedger(ctx context.Context, eventID string, entries []LedgerEntry, now time.Time) error
	// QueueLedger reads eventID's ledger a page at a time, from cursor (""
	// for the start); next is "" after the last page. Replaying every page
	// in order, each entry replacing the user's earlier one, leaves each
	// user's latest entry.
	QueueLedger(ctx context.Context, eventID, cursor string) (entries []LedgerEntry, next string, err error)
}

// StoreLedger is what both adapters are: settings and ledger in one place.
type StoreLedger interface {
	Store
	Ledger
}

// LedgerRetention is how long an event's ledger outlives its last append:
// longer than a Tier 1 position (24 h) and a pass minted from it can be
// presented (Tier 2 keeps its served record as long).
const LedgerRetention = 48 * time.Hour
