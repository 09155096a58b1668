// Package settingstest is the conformance suite every eventsettings.Store
// (and eventsettings.Ledger) must pass: the Redis adapter (redis-server,
// Cluster, miniredis) and the DynamoDB adapter (moto) run the same cases.
package settingstest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/eventsettings"
)

// Harness is one fresh, empty store isolated from every other test.
type Harness struct {
	Store eventsettings.Store
	// Lose makes the store lose every item it holds, as a flushed Redis or
	// a table restored empty would.
	Lose func(t *testing.T)
}

// Factory returns a new Harness.
type Factory func(t *testing.T) Harness

// Run runs every case against stores from f.
func Run(t *testing.T, f Factory) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"empty store", empty},
		{"put then read back", putThenRead},
		{"every write bumps the version", versions},
		{"concurrent writers lose nothing", concurrent},
		{"settings cache follows the store", cache},
		{"epochs are kept apart from thresholds", epochs},
		{"restore writes back only what is absent", restore},
		{"a store that lost its data is found and written back", lost},
		{"the ledger keeps each user's latest entry", ledger},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, f(t))
		})
	}
}

func empty(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Store
	v, err := s.QueueSettingsVersion(ctx)
	if err != nil || v != (eventsettings.Version{}) {
		t.Fatalf("version of an empty store = %+v, %v; want zero, nil", v, err)
	}
	all, v, err := s.QueueSettings(ctx)
	if err != nil || v != (eventsettings.Version{}) || len(all) != 0 {
		t.Fatalf("settings of an empty store = %v, %+v, %v; want none", all, v, err)
	}
}

func putThenRead(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Store
	got, err := s.PutQueueSettings(ctx, "ev-a", eventsettings.Settings{Threshold: 10, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Threshold != 10 || !got.Open || got.Version < 1 {
		t.Fatalf("put returned %+v", got)
	}
	if _, err := s.PutQueueSettings(ctx, "ev-b", eventsettings.Settings{Threshold: 7, Open: false}); err != nil {
		t.Fatal(err)
	}
	all, v, err := s.QueueSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all["ev-a"] != got || all["ev-b"].Threshold != 7 || all["ev-b"].Open {
		t.Fatalf("settings = %+v", all)
	}
	if v.N < all["ev-b"].Version || v.Generation == "" {
		t.Fatalf("store version %+v is behind a stored setting's %d, or has no generation", v, all["ev-b"].Version)
	}
	if vv, err := s.QueueSettingsVersion(ctx); err != nil || vv != v {
		t.Fatalf("QueueSettingsVersion = %+v, %v; QueueSettings said %+v", vv, err, v)
	}
}

func versions(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Store
	var last int64
	var gen string
	for i, th := range []int64{5, 6, 1, 1_000_000} {
		got, err := s.PutQueueSettings(ctx, "ev", eventsettings.Settings{Threshold: th, Open: i%2 == 0})
		if err != nil {
			t.Fatal(err)
		}
		if got.Version <= last || got.Threshold != th || got.Open != (i%2 == 0) {
			t.Fatalf("write %d returned %+v after version %d", i, got, last)
		}
		last = got.Version
		v, err := s.QueueSettingsVersion(ctx)
		if err != nil || v.N < last {
			t.Fatalf("store version %+v, %v after a write at %d", v, err, last)
		}
		if gen == "" {
			gen = v.Generation
		}
		if v.Generation == "" || v.Generation != gen {
			t.Fatalf("generation %q after write %d, want it set once and kept (%q)", v.Generation, i, gen)
		}
	}
	all, _, err := s.QueueSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (eventsettings.Settings{Threshold: 1_000_000, Open: false, Version: last}); all["ev"] != want {
		t.Fatalf("stored %+v, want the last write %+v", all["ev"], want)
	}
}

func concurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Store
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.PutQueueSettings(ctx, fmt.Sprintf("ev-%02d", i), eventsettings.Settings{Threshold: int64(i + 1), Open: true})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	all, v, err := s.QueueSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i := range n {
		es, ok := all[fmt.Sprintf("ev-%02d", i)]
		if !ok || es.Threshold != int64(i+1) || !es.Open {
			t.Fatalf("ev-%02d = %+v, %v", i, es, ok)
		}
		if seen[es.Version] || es.Version > v.N {
			t.Fatalf("version %d reused or ahead of the store's %+v", es.Version, v)
		}
		seen[es.Version] = true
	}
}

// cache: two instances' Settings over one store agree after a refresh, and
// a write is visible at once to the instance that made it.
func cache(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Store
	a, b := eventsettings.NewCache(s, 0, nil), eventsettings.NewCache(s, 0, nil)
	for _, st := range []*eventsettings.Cache{a, b} {
		if err := st.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Put(ctx, "ev", eventsettings.Settings{Threshold: 3, Open: true}); err != nil {
		t.Fatal(err)
	}
	if es, ok := a.Lookup("ev"); !ok || es.Threshold != 3 {
		t.Fatalf("writer sees %+v, %v", es, ok)
	}
	if _, ok := b.Lookup("ev"); ok {
		t.Fatal("the other instance saw the write before refreshing")
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if es, ok := b.Lookup("ev"); !ok || es.Threshold != 3 || !es.Open {
		t.Fatalf("after refresh the other instance sees %+v, %v", es, ok)
	}
	if _, ok := b.Lookup("never-configured"); ok {
		t.Fatal("an unconfigured event is known")
	}
}

// epochs: a threshold write keeps the epoch, an epoch write keeps the
// threshold, and an event without settings gets no epoch (nor settings).
func epochs(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Store
	if _, ok, err := s.PutQueueEpoch(ctx, "nobody", "e0"); err != nil || ok {
		t.Fatalf("epoch of an unconfigured event: ok=%v, %v; want nothing written", ok, err)
	}
	if _, err := s.PutQueueSettings(ctx, "ev", eventsettings.Settings{Threshold: 4, Open: true}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.PutQueueEpoch(ctx, "ev", "e1")
	if err != nil || !ok || got.Epoch != "e1" || got.Threshold != 4 || !got.Open {
		t.Fatalf("PutQueueEpoch = %+v, %v, %v", got, ok, err)
	}
	put, err := s.PutQueueSettings(ctx, "ev", eventsettings.Settings{Threshold: 9, Open: true, Epoch: "ignored"})
	if err != nil || put.Epoch != "e1" || put.Threshold != 9 || put.Version <= got.Version {
		t.Fatalf("PutQueueSettings after an epoch = %+v, %v; want threshold 9 with epoch e1 kept", put, err)
	}
	all, v, err := s.QueueSettings(ctx)
	if err != nil || all["ev"] != put || len(all) != 1 || v.N < put.Version {
		t.Fatalf("stored %+v (version %+v), %v; want only %+v", all, v, err, put)
	}
}

// restore writes back events the store lacks and leaves the others, which
// were written since.
func restore(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Store
	newer, err := s.PutQueueSettings(ctx, "kept", eventsettings.Settings{Threshold: 5, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.RestoreQueueSettings(ctx, map[string]eventsettings.Settings{
		"kept": {Threshold: 2, Open: true, Epoch: "old"},
		"lost": {Threshold: 7, Open: true, Epoch: "e9"},
		"shut": {Threshold: 3, Open: false},
	})
	if err != nil || n != 2 {
		t.Fatalf("RestoreQueueSettings = %d, %v; want 2 written", n, err)
	}
	all, v, err := s.QueueSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if all["kept"] != newer {
		t.Fatalf("kept = %+v, want the newer write %+v", all["kept"], newer)
	}
	if l := all["lost"]; l.Threshold != 7 || !l.Open || l.Epoch != "e9" || l.Version <= newer.Version || l.Version > v.N {
		t.Fatalf("lost = %+v (store %+v)", l, v)
	}
	if sh := all["shut"]; sh.Threshold != 3 || sh.Open {
		t.Fatalf("shut = %+v", sh)
	}
}

// lost: the store loses everything. An instance that held the settings
// finds out (a new generation, or none) at its next refresh, writes back
// every event, and then every instance, a fresh one too, reads the same
// settings; a write made after the loss is kept, not overwritten.
func lost(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Store
	a, b := eventsettings.NewCache(s, 0, nil), eventsettings.NewCache(s, 0, nil)
	for ev, th := range map[string]int64{"one": 1, "two": 2, "three": 3} {
		if _, err := a.Put(ctx, ev, eventsettings.Settings{Threshold: th, Open: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.PutEpoch(ctx, "one", "ep-1"); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*eventsettings.Cache{a, b} {
		if err := st.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	h.Lose(t)
	// After the loss someone sets "two" again, and a new event: the store's
	// numbers start over.
	if _, err := s.PutQueueSettings(ctx, "two", eventsettings.Settings{Threshold: 20, Open: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutQueueSettings(ctx, "four", eventsettings.Settings{Threshold: 4, Open: true}); err != nil {
		t.Fatal(err)
	}
	if err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Losses() != 1 {
		t.Fatalf("a found %d losses, want 1", a.Losses())
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := eventsettings.NewCache(s, 0, nil)
	if err := fresh.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"one": 1, "two": 20, "three": 3, "four": 4}
	for _, st := range []*eventsettings.Cache{a, b, fresh} {
		for ev, th := range want {
			if es, ok := st.Lookup(ev); !ok || es.Threshold != th || !es.Open {
				t.Fatalf("%s = %+v, %v; want threshold %d", ev, es, ok, th)
			}
		}
	}
	if es, _ := fresh.Lookup("one"); es.Epoch != "ep-1" {
		t.Fatalf("one's epoch after the write-back = %q, want ep-1", es.Epoch)
	}
}

// ledger: appends replace a user's earlier entry, pages read back every
// user's latest entry, and each event has its own ledger.
func ledger(t *testing.T, h Harness) {
	ctx := context.Background()
	l, ok := h.Store.(eventsettings.Ledger)
	if !ok {
		t.Fatalf("%T is no eventsettings.Ledger", h.Store)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	slot := now.Add(10 * time.Minute)
	if got := readLedger(t, l, "ev"); len(got) != 0 {
		t.Fatalf("empty ledger reads %v", got)
	}
	const users = 2600 // more than one page and one chunk of every store
	var first []eventsettings.LedgerEntry
	for i := range users {
		kind := "p"
		if i%3 == 0 {
			kind = "h"
		}
		first = append(first, eventsettings.LedgerEntry{UserID: fmt.Sprintf("u%04d", i), Value: kind + strconv.FormatInt(slot.UnixMilli(), 10)})
	}
	if err := l.AppendQueueLedger(ctx, "ev", first, now); err != nil {
		t.Fatal(err)
	}
	later := []eventsettings.LedgerEntry{
		{UserID: "u0001", Value: "pL"},
		{UserID: "u0002", Value: "pI"}, // a slot the idle limit freed
		{UserID: "u0003", Value: "h" + strconv.FormatInt(slot.Add(time.Minute).UnixMilli(), 10)},
		{UserID: "new", Value: "p" + strconv.FormatInt(slot.UnixMilli(), 10)},
	}
	if err := l.AppendQueueLedger(ctx, "ev", later, now); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendQueueLedger(ctx, "other", []eventsettings.LedgerEntry{{UserID: "x", Value: "pL"}}, now); err != nil {
		t.Fatal(err)
	}
	got := readLedger(t, l, "ev")
	if len(got) != users+1 {
		t.Fatalf("read %d users, want %d", len(got), users+1)
	}
	for _, e := range append(first[4:10], later...) {
		if e.UserID == "u0001" || e.UserID == "u0002" || e.UserID == "u0003" {
			continue
		}
		if got[e.UserID] != e.Value {
			t.Fatalf("%s = %q, want %q", e.UserID, got[e.UserID], e.Value)
		}
	}
	for _, e := range later {
		if got[e.UserID] != e.Value {
			t.Fatalf("%s = %q, want the later entry %q", e.UserID, got[e.UserID], e.Value)
		}
	}
	if o := readLedger(t, l, "other"); len(o) != 1 || o["x"] != "pL" {
		t.Fatalf("other event's ledger = %v", o)
	}
}

// readLedger replays every page of eventID's ledger in order and returns
// each user's latest entry.
func readLedger(t *testing.T, l eventsettings.Ledger, eventID string) map[string]string {
	t.Helper()
	out := map[string]string{}
	pages := 0
	for cursor := ""; ; pages++ {
		if pages > 10_000 {
			t.Fatal("the ledger never ends")
		}
		page, next, err := l.QueueLedger(context.Background(), eventID, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			out[e.UserID] = e.Value
		}
		if next == "" {
			return out
		}
		cursor = next
	}
}
