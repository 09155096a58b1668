// Package configtest is the conformance suite every queue.ConfigStore must
// pass: Tier 1's Redis store (redis-server, Cluster, miniredis) and its
// DynamoDB store (moto) run the same cases.
package configtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/vwr-go/vwr/services/queue"
)

// Factory returns a fresh, empty store isolated from every other test.
type Factory func(t *testing.T) queue.ConfigStore

// Run runs every case against stores from f.
func Run(t *testing.T, f Factory) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, s queue.ConfigStore)
	}{
		{"empty store", empty},
		{"put then read back", putThenRead},
		{"every write bumps the version", versions},
		{"concurrent writers lose nothing", concurrent},
		{"settings cache follows the store", cache},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, f(t))
		})
	}
}

func empty(t *testing.T, s queue.ConfigStore) {
	ctx := context.Background()
	v, err := s.QueueSettingsVersion(ctx)
	if err != nil || v != 0 {
		t.Fatalf("version of an empty store = %d, %v; want 0, nil", v, err)
	}
	all, v, err := s.QueueSettings(ctx)
	if err != nil || v != 0 || len(all) != 0 {
		t.Fatalf("settings of an empty store = %v, %d, %v; want none", all, v, err)
	}
}

func putThenRead(t *testing.T, s queue.ConfigStore) {
	ctx := context.Background()
	got, err := s.PutQueueSettings(ctx, "ev-a", queue.EventSettings{Threshold: 10, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Threshold != 10 || !got.Open || got.Version < 1 {
		t.Fatalf("put returned %+v", got)
	}
	if _, err := s.PutQueueSettings(ctx, "ev-b", queue.EventSettings{Threshold: 7, Open: false}); err != nil {
		t.Fatal(err)
	}
	all, v, err := s.QueueSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all["ev-a"] != got || all["ev-b"].Threshold != 7 || all["ev-b"].Open {
		t.Fatalf("settings = %+v", all)
	}
	if v < all["ev-b"].Version {
		t.Fatalf("store version %d is behind a stored setting's %d", v, all["ev-b"].Version)
	}
	if vv, err := s.QueueSettingsVersion(ctx); err != nil || vv != v {
		t.Fatalf("QueueSettingsVersion = %d, %v; QueueSettings said %d", vv, err, v)
	}
}

func versions(t *testing.T, s queue.ConfigStore) {
	ctx := context.Background()
	var last int64
	for i, th := range []int64{5, 6, 1, 1_000_000} {
		got, err := s.PutQueueSettings(ctx, "ev", queue.EventSettings{Threshold: th, Open: i%2 == 0})
		if err != nil {
			t.Fatal(err)
		}
		if got.Version <= last || got.Threshold != th || got.Open != (i%2 == 0) {
			t.Fatalf("write %d returned %+v after version %d", i, got, last)
		}
		last = got.Version
		v, err := s.QueueSettingsVersion(ctx)
		if err != nil || v < last {
			t.Fatalf("store version %d, %v after a write at %d", v, err, last)
		}
	}
	all, _, err := s.QueueSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (queue.EventSettings{Threshold: 1_000_000, Open: false, Version: last}); all["ev"] != want {
		t.Fatalf("stored %+v, want the last write %+v", all["ev"], want)
	}
}

func concurrent(t *testing.T, s queue.ConfigStore) {
	ctx := context.Background()
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.PutQueueSettings(ctx, fmt.Sprintf("ev-%02d", i), queue.EventSettings{Threshold: int64(i + 1), Open: true})
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
		if seen[es.Version] || es.Version > v {
			t.Fatalf("version %d reused or ahead of the store's %d", es.Version, v)
		}
		seen[es.Version] = true
	}
}

// cache: two instances' Settings over one store agree after a refresh, and
// a write is visible at once to the instance that made it.
func cache(t *testing.T, s queue.ConfigStore) {
	ctx := context.Background()
	a, b := queue.NewSettings(s, 0, nil), queue.NewSettings(s, 0, nil)
	for _, st := range []*queue.Settings{a, b} {
		if err := st.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Put(ctx, "ev", queue.EventSettings{Threshold: 3, Open: true}); err != nil {
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
