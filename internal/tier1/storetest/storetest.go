// Package storetest is the conformance suite every tier1.Store must pass:
// the Redis adapter (against redis-server and miniredis) and the DynamoDB
// adapter (against moto) run the very same cases, on the port directly and
// through the Service.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/token"
)

// Factory returns a fresh store isolated from every other test (unique
// tables or key prefix), cleaned up with t.Cleanup.
type Factory func(t *testing.T) tier1.Store

// Epoch is the manual clock's start in every case.
var Epoch = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// Keys returns a fixed-secret key ring for tests.
func Keys(t testing.TB) *token.KeyRing {
	t.Helper()
	kr, err := token.NewKeyRing("t1", []byte("storetest-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

type bundle struct {
	ctx   context.Context
	store tier1.Store
	clk   *clock.Manual
	svc   *tier1.Service
	keys  *token.KeyRing
	event string
}

func setup(t *testing.T, f Factory) *bundle {
	t.Helper()
	clk := clock.NewManual(Epoch)
	store := f(t)
	keys := Keys(t)
	return &bundle{
		ctx: context.Background(), store: store, clk: clk, keys: keys,
		svc:   tier1.New(store, keys, clk, cfg()),
		event: testenv.UniqueID(t),
	}
}

func (b *bundle) configure(t *testing.T, s tier1.Settings) {
	t.Helper()
	if err := b.store.Configure(b.ctx, b.event, s, b.clk.Now()); err != nil {
		t.Fatalf("Configure(%+v): %v", s, err)
	}
}

func (b *bundle) snapshot(t *testing.T) tier1.Snapshot {
	t.Helper()
	snap, err := b.store.Snapshot(b.ctx, b.event)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return snap
}

func (b *bundle) assign(t *testing.T, shard, shards int, key string) (tier1.Position, bool) {
	t.Helper()
	pos, reused, err := b.store.Assign(b.ctx, tier1.NewPosition{
		EventID: b.event, Shard: shard, Shards: shards, RequestID: tier1.NewRequestID(),
		IdempotencyKey: key, Now: b.clk.Now(), TTL: 24 * time.Hour,
	})
	if err != nil {
		t.Fatalf("Assign(shard %d of %d, key %q): %v", shard, shards, key, err)
	}
	return pos, reused
}

// quiet drops the advancer's log lines in tests.
var quiet = slog.New(slog.DiscardHandler)

func cfg() tier1.Config { return tier1.Config{Logger: quiet} }

// Options size the suite for a store. Every case runs with any Options;
// only how many items the sizable ones write changes.
type Options struct {
	// SaleTickets is the scheduled sale's pre-queue (0: SaleTickets). Its
	// properties do not depend on the size once the published list spans
	// two chunks, the last one partial (the case checks), so a store whose
	// every write is an emulator's HTTP request (moto) may ask for fewer.
	SaleTickets int
}

// Run runs the whole suite against stores from f.
func Run(t *testing.T, f Factory) { RunWith(t, f, Options{}) }

// RunWith runs the whole suite against stores from f, sized by o.
func RunWith(t *testing.T, f Factory, o Options) {
	if o.SaleTickets == 0 {
		o.SaleTickets = SaleTickets
	}
	t.Run("Store", func(t *testing.T) { t.Parallel(); runStore(t, f) })
	t.Run("Service", func(t *testing.T) { t.Parallel(); runService(t, f) })
	t.Run("Sale", func(t *testing.T) { t.Parallel(); runSale(t, f, o.SaleTickets) })
	t.Run("Guard", func(t *testing.T) { t.Parallel(); runGuard(t, f) })
}

func runStore(t *testing.T, f Factory) {
	t.Run("never activated event is not found", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		if snap := b.snapshot(t); snap.Found {
			t.Fatalf("snapshot of a new event: %+v, want Found=false", snap)
		}
		_, _, err := b.store.Assign(b.ctx, tier1.NewPosition{EventID: b.event, Shard: 0, Shards: 1, RequestID: tier1.NewRequestID(), Now: b.clk.Now(), TTL: time.Hour})
		if !errors.Is(err, tier1.ErrConflict) {
			t.Fatalf("Assign on unconfigured event: %v, want ErrConflict", err)
		}
		if err := b.store.Advance(b.ctx, tier1.AdvanceWrite{EventID: b.event, From: 0, To: 1, Now: b.clk.Now()}); !errors.Is(err, tier1.ErrConflict) {
			t.Fatalf("Advance on unconfigured event: %v, want ErrConflict", err)
		}
	})

	t.Run("configure round-trips and maintains the active set", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		b.configure(t, tier1.Settings{Active: true, Shards: 3, BatchSize: 42})
		snap := b.snapshot(t)
		ev := snap.Event
		if !snap.Found || !ev.Active || ev.Paused || ev.Shards != 3 || ev.BatchSize != 42 || ev.ServingCounter != 0 {
			t.Fatalf("snapshot after configure: %+v", snap)
		}
		if !ev.UpdatedAt.Equal(Epoch) {
			t.Errorf("UpdatedAt = %v, want %v", ev.UpdatedAt, Epoch)
		}
		if fmt.Sprint(snap.Counters) != "[0 0 0]" {
			t.Errorf("counters = %v, want [0 0 0]", snap.Counters)
		}
		assertActive(t, b, true)
		b.configure(t, tier1.Settings{Active: true, Paused: true, Shards: 3, BatchSize: 42})
		if snap := b.snapshot(t); !snap.Event.Paused || !snap.Event.Active {
			t.Fatalf("pause not stored: %+v", snap.Event)
		}
		b.configure(t, tier1.Settings{Active: false, Shards: 3, BatchSize: 42})
		assertActive(t, b, false)
		if snap := b.snapshot(t); !snap.Found || snap.Event.Active {
			t.Fatalf("deactivated event: %+v", snap)
		}
	})

	t.Run("events index lists every configured event, latest first", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		if ids, err := b.store.Events(b.ctx, 10); err != nil || len(ids) != 0 {
			t.Fatalf("Events of an empty store = %v, %v; want none", ids, err)
		}
		a, c, d := b.event+"-a", b.event+"-c", b.event+"-d"
		for _, ev := range []string{a, c, d} {
			if err := b.store.Configure(b.ctx, ev, tier1.Settings{Active: true, Shards: 1, BatchSize: 5}, b.clk.Now()); err != nil {
				t.Fatalf("Configure %s: %v", ev, err)
			}
			b.clk.Advance(time.Second)
		}
		// Deactivating a is a change too: it moves to the front and stays listed.
		if err := b.store.Configure(b.ctx, a, tier1.Settings{Active: false, Shards: 1, BatchSize: 5}, b.clk.Now()); err != nil {
			t.Fatalf("Configure %s: %v", a, err)
		}
		ids, err := b.store.Events(b.ctx, 10)
		if err != nil || fmt.Sprint(ids) != fmt.Sprint([]string{a, d, c}) {
			t.Fatalf("Events = %v, %v; want [%s %s %s]", ids, err, a, d, c)
		}
		if ids, err := b.store.Events(b.ctx, 2); err != nil || fmt.Sprint(ids) != fmt.Sprint([]string{a, d}) {
			t.Fatalf("Events(limit 2) = %v, %v; want [%s %s]", ids, err, a, d)
		}
		if ids, err := b.store.Events(b.ctx, 0); err != nil || len(ids) != 0 {
			t.Fatalf("Events(limit 0) = %v, %v; want none", ids, err)
		}
	})

	t.Run("strided positions per shard", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		b.configure(t, tier1.Settings{Active: true, Shards: 3, BatchSize: 10})
		var got []int64
		for _, k := range []int{0, 0, 1, 2, 2, 2} {
			pos, reused := b.assign(t, k, 3, "")
			if reused || pos.Shard != k || pos.EventID != b.event {
				t.Fatalf("assign shard %d: %+v reused=%v", k, pos, reused)
			}
			got = append(got, pos.Position)
		}
		if fmt.Sprint(got) != "[1 4 2 3 6 9]" {
			t.Fatalf("positions = %v, want [1 4 2 3 6 9]", got)
		}
		if c := b.snapshot(t).Counters; fmt.Sprint(c) != "[2 1 3]" {
			t.Fatalf("counters = %v, want [2 1 3]", c)
		}
	})

	t.Run("position lookup is scoped to its event", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		b.configure(t, tier1.Settings{Active: true, Shards: 1, BatchSize: 10})
		pos, _ := b.assign(t, 0, 1, "")
		got, err := b.store.Position(b.ctx, b.event, pos.RequestID)
		if err != nil {
			t.Fatalf("Position: %v", err)
		}
		if got.Position != 1 || got.RequestID != pos.RequestID || got.EventID != b.event || !got.CreatedAt.Equal(Epoch) {
			t.Fatalf("Position = %+v, want position 1 created %v", got, Epoch)
		}
		if _, err := b.store.Position(b.ctx, b.event+"-other", pos.RequestID); !errors.Is(err, tier1.ErrNotFound) {
			t.Fatalf("Position under another event: %v, want ErrNotFound", err)
		}
		if _, err := b.store.Position(b.ctx, b.event, tier1.NewRequestID()); !errors.Is(err, tier1.ErrNotFound) {
			t.Fatalf("unknown requestId: %v, want ErrNotFound", err)
		}
	})

	t.Run("stale shard count is a conflict and writes nothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		b.configure(t, tier1.Settings{Active: true, Shards: 2, BatchSize: 10})
		_, _, err := b.store.Assign(b.ctx, tier1.NewPosition{EventID: b.event, Shard: 0, Shards: 1, RequestID: tier1.NewRequestID(), Now: b.clk.Now(), TTL: time.Hour})
		if !errors.Is(err, tier1.ErrConflict) {
			t.Fatalf("Assign with stale shard count: %v, want ErrConflict", err)
		}
		if c := b.snapshot(t).Counters; fmt.Sprint(c) != "[0 0]" {
			t.Fatalf("counters after conflict = %v, want [0 0]", c)
		}
	})

	t.Run("idempotency key returns the first answer", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		b.configure(t, tier1.Settings{Active: true, Shards: 2, BatchSize: 10})
		first, reused := b.assign(t, 1, 2, "retry-me")
		if reused {
			t.Fatal("first enter reported reused")
		}
		b.clk.Advance(time.Second)
		again, reused := b.assign(t, 0, 2, "retry-me")
		if !reused || again.RequestID != first.RequestID || again.Position != first.Position || again.Shard != first.Shard {
			t.Fatalf("retry = %+v (reused %v), want %+v", again, reused, first)
		}
		if c := b.snapshot(t).Counters; fmt.Sprint(c) != "[0 1]" {
			t.Fatalf("counters = %v, want [0 1]: a retry must not hand out a position", c)
		}
		other, reused := b.assign(t, 0, 2, "another-key")
		if reused || other.RequestID == first.RequestID {
			t.Fatalf("another key got %+v reused=%v", other, reused)
		}
		if _, err := b.store.Position(b.ctx, b.event, first.RequestID); err != nil {
			t.Fatalf("Position of the idempotent enter: %v", err)
		}
	})

	t.Run("idempotent enters racing get one position", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		b.configure(t, tier1.Settings{Active: true, Shards: 4, BatchSize: 10})
		const racers = 8
		results := make([]tier1.Position, racers)
		var wg sync.WaitGroup
		errs := make(chan error, racers)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pos, _, err := b.store.Assign(b.ctx, tier1.NewPosition{EventID: b.event, Shard: i % 4, Shards: 4, RequestID: tier1.NewRequestID(), IdempotencyKey: "same", Now: b.clk.Now(), TTL: time.Hour})
				if err != nil {
					errs <- err
				}
				results[i] = pos
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("racing Assign: %v", err)
		}
		for _, r := range results {
			if r.RequestID != results[0].RequestID || r.Position != results[0].Position {
				t.Fatalf("racers disagree: %+v vs %+v", r, results[0])
			}
		}
	})

	t.Run("shard count is fixed once positions exist", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		b.configure(t, tier1.Settings{Active: true, Shards: 4, BatchSize: 10})
		b.configure(t, tier1.Settings{Active: true, Shards: 2, BatchSize: 10}) // nothing handed out yet: allowed
		if snap := b.snapshot(t); snap.Event.Shards != 2 || len(snap.Counters) != 2 {
			t.Fatalf("after shrinking to 2: %+v", snap)
		}
		b.assign(t, 1, 2, "")
		for _, n := range []int{1, 3} {
			err := b.store.Configure(b.ctx, b.event, tier1.Settings{Active: false, Shards: n, BatchSize: 99}, b.clk.Now())
			if !errors.Is(err, tier1.ErrInvalidConfig) {
				t.Fatalf("changing shards 2→%d after a position: %v, want ErrInvalidConfig", n, err)
			}
		}
		snap := b.snapshot(t)
		if snap.Event.Shards != 2 || snap.Event.BatchSize != 10 || !snap.Event.Active || fmt.Sprint(snap.Counters) != "[0 1]" {
			t.Fatalf("rejected configure wrote something: %+v", snap)
		}
		assertActive(t, b, true)
	})

	t.Run("advance is a compare-and-set", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		b.configure(t, tier1.Settings{Active: true, Shards: 1, BatchSize: 10})
		hist := []tier1.Advance{{At: Epoch, Admitted: 5}}
		if err := b.store.Advance(b.ctx, tier1.AdvanceWrite{EventID: b.event, From: 0, To: 5, Now: Epoch, TickSlot: 7, Advances: hist}); err != nil {
			t.Fatalf("Advance 0→5: %v", err)
		}
		for _, w := range []tier1.AdvanceWrite{
			{EventID: b.event, From: 0, To: 9, Now: Epoch},              // stale from
			{EventID: b.event, From: 5, To: 9, Now: Epoch, TickSlot: 7}, // slot taken
			{EventID: b.event, From: 5, To: 9, Now: Epoch, TickSlot: 6}, // older slot
		} {
			if err := b.store.Advance(b.ctx, w); !errors.Is(err, tier1.ErrConflict) {
				t.Fatalf("Advance %+v: %v, want ErrConflict", w, err)
			}
		}
		later := Epoch.Add(10 * time.Second)
		if err := b.store.Advance(b.ctx, tier1.AdvanceWrite{EventID: b.event, From: 5, To: 8, Now: later, Advances: append(hist, tier1.Advance{At: later, Admitted: 3})}); err != nil {
			t.Fatalf("manual Advance 5→8: %v", err)
		}
		ev := b.snapshot(t).Event
		if ev.ServingCounter != 8 || ev.TickSlot != 7 || !ev.UpdatedAt.Equal(later) {
			t.Fatalf("event after advances: %+v", ev)
		}
		if len(ev.Advances) != 2 || ev.Advances[1].Admitted != 3 || !ev.Advances[1].At.Equal(later) {
			t.Fatalf("advance history = %+v", ev.Advances)
		}
		b.configure(t, tier1.Settings{Active: true, Paused: true, Shards: 1, BatchSize: 10})
		if ev := b.snapshot(t).Event; ev.ServingCounter != 8 || ev.TickSlot != 7 {
			t.Fatalf("configure reset the serving counter: %+v", ev)
		}
	})

	t.Run("concurrent enters get unique contiguous positions", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		const shards, workers, each = 4, 8, 25
		b.configure(t, tier1.Settings{Active: true, Shards: shards, BatchSize: 10})
		var mu sync.Mutex
		var all []tier1.Position
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					pos, _, err := b.store.Assign(b.ctx, tier1.NewPosition{EventID: b.event, Shard: (w + i) % shards, Shards: shards, RequestID: tier1.NewRequestID(), Now: b.clk.Now(), TTL: time.Hour})
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					all = append(all, pos)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("Assign: %v", err)
		}
		CheckStrided(t, all, shards, b.snapshot(t).Counters)
	})
}

// CheckStrided asserts that positions are unique, that each lies on its
// shard's stride, and that shard k's positions are exactly its first
// counters[k] strided values (contiguous per shard).
func CheckStrided(t *testing.T, all []tier1.Position, shards int, counters []int64) {
	t.Helper()
	seen := map[int64]bool{}
	per := make([][]int64, shards)
	for _, p := range all {
		if seen[p.Position] {
			t.Fatalf("position %d handed out twice", p.Position)
		}
		seen[p.Position] = true
		if (p.Position-1)%int64(shards) != int64(p.Shard) {
			t.Fatalf("position %d is not on shard %d's stride", p.Position, p.Shard)
		}
		per[p.Shard] = append(per[p.Shard], p.Position)
	}
	for k, ps := range per {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		if int64(len(ps)) != counters[k] {
			t.Fatalf("shard %d: %d positions, counter says %d", k, len(ps), counters[k])
		}
		for i, p := range ps {
			if want := tier1.StridedPosition(k, shards, int64(i+1)); p != want {
				t.Fatalf("shard %d: position #%d is %d, want %d (not contiguous)", k, i+1, p, want)
			}
		}
	}
}

func assertActive(t *testing.T, b *bundle, want bool) {
	t.Helper()
	ids, err := b.store.ActiveEvents(b.ctx)
	if err != nil {
		t.Fatalf("ActiveEvents: %v", err)
	}
	found := false
	for _, id := range ids {
		found = found || id == b.event
	}
	if found != want {
		t.Fatalf("event in ActiveEvents = %v, want %v (%v)", found, want, ids)
	}
}
