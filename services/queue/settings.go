package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// EventSettings are one event's Tier 2 settings. They live in a durable
// ConfigStore (Tier 1's store: the DynamoDB events table or Tier 1's Redis);
// every instance holds them in memory (Settings) and hands the threshold to
// the Redis scripts as an argument, so losing the queue's Redis never
// changes a threshold.
type EventSettings struct {
	Threshold int64
	// Open says the event takes visitors. A closed or absent event answers
	// ErrUnknownEvent and is never listed for the worker.
	Open bool
	// Version is the store-wide version of the write that produced these
	// settings; it only grows.
	Version int64
}

// ConfigStore is the durable home of every event's EventSettings. Both
// Tier 1 stores implement it (internal/tier1/dynamostore and
// internal/tier1/redisstore); services/queue/configtest is the conformance
// suite they share.
type ConfigStore interface {
	// QueueSettingsVersion is the store-wide version: it changes whenever
	// any event's settings change, so a refresh can skip the full read.
	QueueSettingsVersion(ctx context.Context) (int64, error)
	// QueueSettings reads every event's settings and a store-wide version
	// read no later than they were: a write racing the read can only make
	// the next refresh read again.
	QueueSettings(ctx context.Context) (map[string]EventSettings, int64, error)
	// PutQueueSettings stores eventID's Threshold and Open and returns what
	// is stored afterwards, with its new Version. When a concurrent write
	// with a newer version won, that write's settings are returned.
	PutQueueSettings(ctx context.Context, eventID string, s EventSettings) (EventSettings, error)
}

// ErrUnknownEvent is the answer for an event that is not configured (or is
// closed) while events must be configured (QUEUE_OPEN_EVENTS=false).
var ErrUnknownEvent = errors.New("queue: unknown event")

// DefaultSettingsRefresh is how often Settings re-reads the ConfigStore's
// version (QUEUE_SETTINGS_REFRESH_MS).
const DefaultSettingsRefresh = 2 * time.Second

// Settings is an instance's in-memory copy of every event's EventSettings.
// Lookups never touch a store. Refresh re-reads the ConfigStore when its
// version changed; a write through Put is visible to this instance at once
// and to the others after their next refresh. It is safe for concurrent use.
type Settings struct {
	store ConfigStore
	every time.Duration
	log   *slog.Logger

	mu      sync.RWMutex
	byEvent map[string]EventSettings
	version int64
	loaded  bool
}

// NewSettings returns an empty cache over store; call Refresh (or Run) to
// fill it. every ≤ 0 means DefaultSettingsRefresh; a nil logger discards.
func NewSettings(store ConfigStore, every time.Duration, log *slog.Logger) *Settings {
	if every <= 0 {
		every = DefaultSettingsRefresh
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Settings{store: store, every: every, log: log, byEvent: map[string]EventSettings{}}
}

// Lookup returns eventID's settings; ok is false when the event is unknown.
func (s *Settings) Lookup(eventID string) (EventSettings, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	es, ok := s.byEvent[eventID]
	return es, ok
}

// Loaded reports whether a refresh has succeeded at least once.
func (s *Settings) Loaded() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.loaded
}

// Refresh reads the store's version and, when it differs from the cached
// one, every event's settings. A version that went backwards means the
// store itself lost data (a Redis-backed ConfigStore flushed): the cache is
// kept, because forgetting thresholds is the failure this type exists to
// prevent, and the error says so.
func (s *Settings) Refresh(ctx context.Context) error {
	v, err := s.store.QueueSettingsVersion(ctx)
	if err != nil {
		return fmt.Errorf("queue: settings version: %w", err)
	}
	s.mu.RLock()
	cur, loaded := s.version, s.loaded
	s.mu.RUnlock()
	if loaded && v == cur {
		return nil
	}
	if loaded && v < cur {
		return fmt.Errorf("queue: settings version went back from %d to %d; keeping the cached settings (was the config store flushed?)", cur, v)
	}
	all, v, err := s.store.QueueSettings(ctx)
	if err != nil {
		return fmt.Errorf("queue: settings: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded && v < s.version {
		return nil // a Put of this instance is newer
	}
	// Keep this instance's own writes that the read did not see yet.
	for ev, mine := range s.byEvent {
		if got, ok := all[ev]; !ok || got.Version < mine.Version {
			if mine.Version > v {
				all[ev] = mine
			}
		}
	}
	s.byEvent, s.version, s.loaded = all, v, true
	return nil
}

// Put writes eventID's settings through the store and caches the result.
func (s *Settings) Put(ctx context.Context, eventID string, es EventSettings) (EventSettings, error) {
	got, err := s.store.PutQueueSettings(ctx, eventID, es)
	if err != nil {
		return EventSettings{}, err
	}
	s.mu.Lock()
	if cur, ok := s.byEvent[eventID]; !ok || cur.Version <= got.Version {
		s.byEvent[eventID] = got
	}
	s.mu.Unlock()
	return got, nil
}

// Run refreshes every interval until ctx is done, logging failures (the
// cached settings stay in force meanwhile).
func (s *Settings) Run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("settings refresh failed", "err", err.Error())
			}
		}
	}
}
