package eventsettings

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// DefaultRefresh is how often Cache re-reads the Store's
// version (QUEUE_SETTINGS_REFRESH_MS).
const DefaultRefresh = 2 * time.Second

// Cache is an instance's in-memory copy of every event's Settings.
// Lookups never touch a store. Refresh re-reads the Store when its
// version changed; a write through Put is visible to this instance at once
// and to the others after their next refresh. A store that lost its data
// is found by its version (a new generation, or a number gone back) or by
// an event missing from it: the instance then writes back every event it
// holds that the store lacks, so no configured event disappears while any
// instance remembers it, and every instance converges on the store's copy.
// It is safe for concurrent use.
type Cache struct {
	store Store
	every time.Duration
	log   *slog.Logger

	mu      sync.RWMutex
	byEvent map[string]Settings
	version Version
	loaded  bool
	// lost counts the refreshes that found the store had lost data.
	lost int
}

// NewCache returns an empty cache over store; call Refresh (or Run) to
// fill it. every ≤ 0 means DefaultRefresh; a nil logger discards.
func NewCache(store Store, every time.Duration, log *slog.Logger) *Cache {
	if every <= 0 {
		every = DefaultRefresh
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Cache{store: store, every: every, log: log, byEvent: map[string]Settings{}}
}

// Lookup returns eventID's settings; ok is false when the event is unknown.
func (s *Cache) Lookup(eventID string) (Settings, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	es, ok := s.byEvent[eventID]
	return es, ok
}

// Open lists the configured events that take visitors, sorted.
func (s *Cache) Open() []string {
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
func (s *Cache) Events() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := make([]string, 0, len(s.byEvent))
	for id := range s.byEvent {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Range calls fn for every configured event, open or not, in no order,
// under the cache's read lock (fn must not call back into the cache).
func (s *Cache) Range(fn func(eventID string, es Settings)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for id, es := range s.byEvent {
		fn(id, es)
	}
}

// Loaded reports whether a refresh has succeeded at least once.
func (s *Cache) Loaded() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.loaded
}

// Losses is how many refreshes found that the store had lost data.
func (s *Cache) Losses() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lost
}

// Refresh reads the store's version and, when it differs from the cached
// one, every event's settings. When the store lost data (see Cache) it
// writes back what it lacks first, and keeps the cache until that worked.
func (s *Cache) Refresh(ctx context.Context) error {
	v, err := s.store.QueueSettingsVersion(ctx)
	if err != nil {
		return fmt.Errorf("eventsettings: settings version: %w", err)
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
		return fmt.Errorf("eventsettings: settings: %w", err)
	}
	lost := loaded && cur.Generation != "" && (v.Generation != cur.Generation || v.N < cur.N)
	missing := map[string]Settings{}
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
			return fmt.Errorf("eventsettings: the settings store lost %d events; writing them back failed (keeping the cached settings): %w", len(missing), err)
		}
		s.log.Error("the settings store lost data; wrote back the events it lacked", "missing", len(missing), "written", n)
		if all, v, err = s.store.QueueSettings(ctx); err != nil {
			return fmt.Errorf("eventsettings: settings after writing back: %w", err)
		}
		for ev := range missing {
			if _, ok := all[ev]; !ok {
				return fmt.Errorf("eventsettings: the settings store still lacks %s after writing it back (keeping the cached settings)", ev)
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
func (s *Cache) Put(ctx context.Context, eventID string, es Settings) (Settings, error) {
	got, err := s.store.PutQueueSettings(ctx, eventID, es)
	if err != nil {
		return Settings{}, err
	}
	s.cache(eventID, got)
	return got, nil
}

// PutEpoch writes eventID's epoch through the store and caches the result;
// an event the store does not hold is left alone.
func (s *Cache) PutEpoch(ctx context.Context, eventID, epoch string) error {
	got, ok, err := s.store.PutQueueEpoch(ctx, eventID, epoch)
	if err != nil || !ok {
		return err
	}
	s.cache(eventID, got)
	return nil
}

func (s *Cache) cache(eventID string, got Settings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.byEvent[eventID]; !ok || cur.Version <= got.Version {
		s.byEvent[eventID] = got
	}
}

// Run refreshes every interval until ctx is done, logging failures (the
// cached settings stay in force meanwhile).
func (s *Cache) Run(ctx context.Context) {
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
