package tier1_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

type testBundle struct {
	ctx context.Context
	mr  *miniredis.Miniredis
	st  *redisstore.Store
	clk *clock.Manual
	svc *tier1.Service
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	mr := miniredis.RunT(t)
	// No client retries: the outage test wants the failure, not a wait.
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	st := redisstore.New(rdb)
	clk := clock.NewManual(storetest.Epoch)
	return &testBundle{
		ctx: context.Background(), mr: mr, st: st, clk: clk,
		svc: tier1.New(st, storetest.Keys(t), clk, tier1.Config{Logger: slog.New(slog.DiscardHandler)}),
	}
}

// Rejected requests write nothing.
func TestValidation(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 65)
	cases := []struct {
		name string
		call func(b *testBundle) error
		want error
	}{
		{"assign bad event", func(b *testBundle) error { _, err := b.svc.Assign(b.ctx, "bad/id", ""); return err }, tier1.ErrInvalidEvent},
		{"assign long event", func(b *testBundle) error { _, err := b.svc.Assign(b.ctx, long, ""); return err }, tier1.ErrInvalidEvent},
		{"assign bad key", func(b *testBundle) error { _, err := b.svc.Assign(b.ctx, "ev", "key with space"); return err }, tier1.ErrInvalidIdempotencyKey},
		{"assign long key", func(b *testBundle) error { _, err := b.svc.Assign(b.ctx, "ev", long); return err }, tier1.ErrInvalidIdempotencyKey},
		{"check bad event", func(b *testBundle) error { _, err := b.svc.Check(b.ctx, "", "rid"); return err }, tier1.ErrInvalidEvent},
		{"check bad request id", func(b *testBundle) error { _, err := b.svc.Check(b.ctx, "ev", "idem#ev#k"); return err }, tier1.ErrInvalidRequestID},
		{"status bad event", func(b *testBundle) error { _, err := b.svc.Status(b.ctx, "é"); return err }, tier1.ErrInvalidEvent},
		{"activate bad event", func(b *testBundle) error { _, err := b.svc.Activate(b.ctx, "a b", 1, 1); return err }, tier1.ErrInvalidEvent},
		{"activate 65 shards", func(b *testBundle) error { _, err := b.svc.Activate(b.ctx, "ev", 65, 1); return err }, tier1.ErrInvalidConfig},
		{"activate negative shards", func(b *testBundle) error { _, err := b.svc.Activate(b.ctx, "ev", -1, 1); return err }, tier1.ErrInvalidConfig},
		{"activate huge batch", func(b *testBundle) error { _, err := b.svc.Activate(b.ctx, "ev", 1, 1_000_001); return err }, tier1.ErrInvalidConfig},
		{"activate negative batch", func(b *testBundle) error { _, err := b.svc.Activate(b.ctx, "ev", 1, -5); return err }, tier1.ErrInvalidConfig},
		{"advance by zero", func(b *testBundle) error { _, err := b.svc.AdvanceBy(b.ctx, "ev", 0); return err }, tier1.ErrInvalidConfig},
		{"advance too far", func(b *testBundle) error { _, err := b.svc.AdvanceBy(b.ctx, "ev", 1_000_000_001); return err }, tier1.ErrInvalidConfig},
		{"pause bad event", func(b *testBundle) error { _, err := b.svc.Pause(b.ctx, "ev!"); return err }, tier1.ErrInvalidEvent},
		{"admin status bad event", func(b *testBundle) error { _, err := b.svc.AdminStatus(b.ctx, "ev?"); return err }, tier1.ErrInvalidEvent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if err := tc.call(b); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if keys := b.mr.Keys(); len(keys) != 0 {
				t.Fatalf("a rejected request wrote %v", keys)
			}
		})
	}
}

func TestActivateDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	st, err := b.svc.Activate(b.ctx, "ev", 0, 0)
	if err != nil || st.Shards != 1 || st.BatchSize != 500 || !st.Active || len(st.ShardCounters) != 1 {
		t.Fatalf("Activate(0, 0) = %+v, %v; want the seed's 1 shard, batch 500", st, err)
	}
}

// An enter that still believes in an old shard count re-reads and retries.
func TestAssignRetriesOnShardChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.svc.Activate(b.ctx, "ev", 2, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Status(b.ctx, "ev"); err != nil { // caches 2 shards
		t.Fatal(err)
	}
	admin := tier1.New(b.st, storetest.Keys(t), b.clk, tier1.Config{})
	if _, err := admin.Activate(b.ctx, "ev", 8, 10); err != nil {
		t.Fatal(err)
	}
	r, err := b.svc.Assign(b.ctx, "ev", "")
	if err != nil || !r.Active {
		t.Fatalf("Assign after a shard change = %+v, %v", r, err)
	}
	if r.Position < 1 || r.Position > 8 {
		t.Fatalf("position %d is not a first position of 8 shards", r.Position)
	}
	st, _ := admin.AdminStatus(b.ctx, "ev")
	if st.Shards != 8 || st.Assigned != 1 {
		t.Fatalf("status = %+v", st)
	}
}

// The wait estimate counts ticks of the advancer from the snapshot's
// moment: the configured pace until the event has a history, then the pace
// its full raises show; the status document carries what a page needs to do
// the same.
func TestWaitEstimateFollowsTheAdvancer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.svc.Activate(b.ctx, "ev", 1, 10); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := b.svc.Assign(b.ctx, "ev", ""); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing let in yet: 10 per 10 s tick, the next half a tick away on
	// average; 100 ahead is the 11th tick, plus a second to notice it.
	r, _ := b.svc.Assign(b.ctx, "ev", "")
	if r.Position != 101 || r.PeopleAhead != 100 || r.EstimatedWait != 5+100+1 || r.NextPoll != 4 {
		t.Fatalf("before any advance: %+v; want 100 ahead, 106 s", r)
	}
	// The advancer raises every 12 s (late against its 10 s): after three
	// full raises it is timed, and the next tick is 12 s after the last.
	for range 3 {
		if _, err := b.svc.Tick(b.ctx); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(12 * time.Second)
	}
	c, err := b.svc.Check(b.ctx, "ev", r.RequestID)
	if err != nil || c.Admitted || c.PeopleAhead != 70 || c.ServingCounter != 30 {
		t.Fatalf("after three ticks: %+v, %v; want 70 ahead", c, err)
	}
	// Now is 12 s after the last raise: the next tick is 12 s away, 70 ahead
	// is its 8th.
	if want := 12 + 7*12 + 1; c.EstimatedWait != want {
		t.Fatalf("after three ticks: wait %d, want %d", c.EstimatedWait, want)
	}
	st, _ := b.svc.Status(b.ctx, "ev")
	// 30 let in over 36 s plus the tick before the first raise: 39 a minute.
	if st.AdmitRatePerMinute != 39 || st.MaxAssigned != 101 || !st.Pace.Measured || st.Pace.Interval != 12*time.Second ||
		st.Pace.Batch != 10 || len(st.ShardCounters) != 1 || st.ShardCounters[0] != 101 {
		t.Fatalf("status = %+v", st)
	}
	if got := tier1.EstimateAhead(st.ShardCounters, st.Shards, st.ServingCounter, r.Position, 0); got != c.PeopleAhead {
		t.Fatalf("the status document counts %d ahead, check %d", got, c.PeopleAhead)
	}
	// Paused: the page says so, and the estimate counts from a resumption.
	if _, err := b.svc.Pause(b.ctx, "ev"); err != nil {
		t.Fatal(err)
	}
	if c, _ := b.svc.Check(b.ctx, "ev", r.RequestID); !c.Paused || c.EstimatedWait != 8*12+1 {
		t.Fatalf("paused: %+v, want paused and 97 s from a resumption", c)
	}
}

// A store outage surfaces as ErrUnavailable (503 + Retry-After), never as a
// pass-through: failing open is only for events that are not active.
func TestStoreOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.svc.Activate(b.ctx, "ev", 1, 10); err != nil {
		t.Fatal(err)
	}
	b.mr.Close()
	b.clk.Advance(2 * time.Second) // past the snapshot cache
	calls := map[string]func() error{
		"Assign":   func() error { _, err := b.svc.Assign(b.ctx, "ev", ""); return err },
		"Check":    func() error { _, err := b.svc.Check(b.ctx, "ev", "rid"); return err },
		"Status":   func() error { _, err := b.svc.Status(b.ctx, "ev"); return err },
		"Activate": func() error { _, err := b.svc.Activate(b.ctx, "ev", 1, 10); return err },
		"Advance":  func() error { _, err := b.svc.AdvanceBy(b.ctx, "ev", 1); return err },
		"Tick":     func() error { _, err := b.svc.Tick(b.ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, tier1.ErrUnavailable) {
			t.Errorf("%s during an outage: %v, want ErrUnavailable", name, err)
		}
	}
}

func BenchmarkNextServing64Shards(b *testing.B) {
	counters := make([]int64, 64)
	for k := range counters {
		counters[k] = 1_000_000 + int64(k*37%101)
	}
	top := tier1.MaxAssigned(counters, 64)
	for b.Loop() {
		if s := tier1.NextServing(counters, 64, top/2, 500); s <= top/2 {
			b.Fatal("no progress")
		}
	}
}
