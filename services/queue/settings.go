package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
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
	// settings; it only grows (within one SettingsVersion.Generation).
	Version int64
	// Epoch is the queue's epoch for the event as the workers last saw it
	// in the queue's store ("" before any): an instance that finds another
	// one there, or none, knows the queue lost the event's state, even
	// when it has just started and remembers nothing itself.
	Epoch string
}

// SettingsVersion is a ConfigStore's store-wide version.
type SettingsVersion struct {
	// Generation is a random id the store writes with its first setting. A
	// different one (or none, once there was one) means the store lost
	// its data: version numbers of different generations do not compare.
	Generation string
	// N changes whenever any event's settings change.
	N int64
}

// ConfigStore is the durable home of every event's EventSettings. Both
// Tier 1 stores implement it (internal/tier1/dynamostore and
// internal/tier1/redisstore); services/queue/configtest is the conformance
// suite they share.
type ConfigStore interface {
	// QueueSettingsVersion is the store-wide version: it changes whenever
	// any event's settings change, so a refresh can skip the full read.
	QueueSettingsVersion(ctx context.Context) (SettingsVersion, error)
	// QueueSettings reads every event's settings and a store-wide version
	// read no later than they were: a write racing the read can only make
	// the next refresh read again.
	QueueSettings(ctx context.Context) (map[string]EventSettings, SettingsVersion, error)
	// PutQueueSettings stores eventID's Threshold and Open (keeping its
	// Epoch) and returns what is stored afterwards, with its new Version.
	// When a concurrent write with a newer version won, that write's
	// settings are returned.
	PutQueueSettings(ctx context.Context, eventID string, s EventSettings) (EventSettings, error)
	// PutQueueEpoch stores eventID's Epoch, keeping the rest, and returns
	// what is stored afterwards; ok is false (and nothing is written) when
	// the event has no settings.
	PutQueueEpoch(ctx context.Context, eventID, epoch string) (s EventSettings, ok bool, err error)
	// RestoreQueueSettings writes back settings the store lost: each event
	// absent from the store gets the given Threshold, Open and Epoch under
	// a new version; an event present is left alone (it was written since).
	// It returns how many it wrote.
	RestoreQueueSettings(ctx context.Context, all map[string]EventSettings) (int, error)
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
// and to the others after their next refresh. A store that lost its data
// is found by its version (a new generation, or a number gone back) or by
// an event missing from it: the instance then writes back every event it
// holds that the store lacks, so no configured event disappears while any
// instance remembers it, and every instance converges on the store's copy.
// It is safe for concurrent use.
type Settings struct {
	store ConfigStore
	every time.Duration
	log   *slog.Logger

	mu      sync.RWMutex
	byEvent map[string]EventSettings
	version SettingsVersion
	loaded  bool
	// lost counts the refreshes that found the store had lost data.
	lost int
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

// Open lists the configured events that take visitors, sorted.
func (s *Settings) Open() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := make([]string, 0, len(s.byEvent))
	for id, es := range s.byEvent {
		if es.Open {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Events lists every configured event, open or not, sorted.
func (s *Settings) Events() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := make([]string, 0, len(s.byEvent))
	for id := range s.byEvent {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Loaded reports whether a refresh has succeeded at least once.
func (s *Settings) Loaded() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.loaded
}

// Losses is how many refreshes found that the store had lost data.
func (s *Settings) Losses() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lost
}

// Refresh reads the store's version and, when it differs from the cached
// one, every event's settings. When the store lost data (see Settings) it
// writes back what it lacks first, and keeps the cache until that worked.
func (s *Settings) Refresh(ctx context.Context) error {
	v, err := s.store.QueueSettingsVersion(ctx)
	if err != nil {
		return fmt.Errorf("queue: settings version: %w", err)
	}
	s.mu.RLock()
	cur, loaded := s.version, s.loaded
	held := maps.Clone(s.byEvent)
	s.mu.RUnlock()
	if loaded && v == cur {
		return nil
	}
	all, v, err := s.store.QueueSettings(ctx)
	if err != nil {
		return fmt.Errorf("queue: settings: %w", err)
	}
	lost := loaded && cur.Generation != "" && (v.Generation != cur.Generation || v.N < cur.N)
	missing := map[string]EventSettings{}
	if loaded {
		for ev, es := range held {
			if _, ok := all[ev]; !ok {
				missing[ev] = es
			}
		}
	}
	if len(missing) > 0 {
		// Nothing is ever deleted from the store: an event it lacks was lost.
		lost = true
		n, err := s.store.RestoreQueueSettings(ctx, missing)
		if err != nil {
			return fmt.Errorf("queue: the settings store lost %d events; writing them back failed (keeping the cached settings): %w", len(missing), err)
		}
		s.log.Error("the settings store lost data; wrote back the events it lacked", "missing", len(missing), "written", n)
		if all, v, err = s.store.QueueSettings(ctx); err != nil {
			return fmt.Errorf("queue: settings after writing back: %w", err)
		}
		for ev := range missing {
			if _, ok := all[ev]; !ok {
				return fmt.Errorf("queue: the settings store still lacks %s after writing it back (keeping the cached settings)", ev)
			}
		}
	} else if lost {
		s.log.Error("the settings store lost data (its version went back or changed generation); it lacks none of this instance's events", "was", cur, "now", v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded && v.Generation == s.version.Generation && v.N < s.version.N {
		return nil // a Put of this instance is newer
	}
	if s.loaded && v.Generation == s.version.Generation {
		// Keep this instance's own writes that the read did not see yet.
		for ev, mine := range s.byEvent {
			if got, ok := all[ev]; (!ok || got.Version < mine.Version) && mine.Version > v.N {
				all[ev] = mine
			}
		}
	}
	if lost {
		s.lost++
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
	s.cache(eventID, got)
	return got, nil
}

// PutEpoch writes eventID's epoch through the store and caches the result;
// an event the store does not hold is left alone.
func (s *Settings) PutEpoch(ctx context.Context, eventID, epoch string) error {
	got, ok, err := s.store.PutQueueEpoch(ctx, eventID, epoch)
	if err != nil || !ok {
		return err
	}
	s.cache(eventID, got)
	return nil
}

func (s *Settings) cache(eventID string, got EventSettings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.byEvent[eventID]; !ok || cur.Version <= got.Version {
		s.byEvent[eventID] = got
	}
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
