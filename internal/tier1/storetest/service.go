package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
)

func runService(t *testing.T, f Factory) {
	t.Run("never activated event passes through", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		res, err := b.svc.Assign(b.ctx, b.event, "")
		if err != nil {
			t.Fatalf("Assign: %v", err)
		}
		if res.Active || res.Token == "" || !tier1.ValidID(res.RequestID) {
			t.Fatalf("pass-through = %+v", res)
		}
		pass, err := b.keys.VerifyTier1(res.Token, b.event, b.clk.Now())
		if err != nil {
			t.Fatalf("pass-through token: %v", err)
		}
		if pass.Position != Epoch.UnixMilli() || pass.Subject != res.RequestID {
			t.Fatalf("pass-through claims %+v, want position = arrival ms %d", pass, Epoch.UnixMilli())
		}
		if snap := b.snapshot(t); snap.Found {
			t.Fatalf("pass-through wrote the event: %+v", snap)
		}
		st, err := b.svc.Status(b.ctx, b.event)
		if err != nil || st.Active || st.EventID != b.event {
			t.Fatalf("Status = %+v, %v", st, err)
		}
		for name, op := range map[string]func() error{
			"Pause":       func() error { _, err := b.svc.Pause(b.ctx, b.event); return err },
			"Resume":      func() error { _, err := b.svc.Resume(b.ctx, b.event); return err },
			"Deactivate":  func() error { _, err := b.svc.Deactivate(b.ctx, b.event); return err },
			"AdvanceBy":   func() error { _, err := b.svc.AdvanceBy(b.ctx, b.event, 5); return err },
			"AdminStatus": func() error { _, err := b.svc.AdminStatus(b.ctx, b.event); return err },
		} {
			if err := op(); !errors.Is(err, tier1.ErrNotFound) {
				t.Errorf("%s on a never-activated event: %v, want ErrNotFound", name, err)
			}
		}
	})

	t.Run("events lists the active ones first, each with its admin status", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		// The ids keep the unique tail of b.event and stay within 64 bytes.
		base := b.event
		if len(base) > 56 {
			base = base[len(base)-56:]
		}
		live, old, paused := base+"-live", base+"-old", base+"-paused"
		if _, err := b.svc.Activate(b.ctx, old, 1, 7); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Deactivate(b.ctx, old); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(time.Second)
		for _, ev := range []string{live, paused} {
			if _, err := b.svc.Activate(b.ctx, ev, 2, 9); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.svc.Pause(b.ctx, paused); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Assign(b.ctx, live, ""); err != nil {
			t.Fatal(err)
		}
		list, truncated, err := b.svc.Events(b.ctx, 0)
		if err != nil || truncated || len(list) != 3 {
			t.Fatalf("Events = %+v, truncated %v, %v; want 3 events", list, truncated, err)
		}
		byID := map[string]tier1.AdminStatus{}
		for i, st := range list {
			byID[st.EventID] = st
			if i < 2 && !st.Active {
				t.Errorf("Events lists inactive %s before an active one: %+v", st.EventID, list)
			}
		}
		if st := byID[live]; !st.Active || st.Paused || st.Assigned != 1 || st.Waiting != 1 || st.Shards != 2 || st.BatchSize != 9 {
			t.Errorf("live event = %+v", st)
		}
		if st := byID[paused]; !st.Active || !st.Paused {
			t.Errorf("paused event = %+v", st)
		}
		if st := byID[old]; st.Active || st.BatchSize != 7 {
			t.Errorf("deactivated event = %+v", st)
		}
		list, truncated, err = b.svc.Events(b.ctx, 2)
		if err != nil || !truncated || len(list) != 2 || !list[0].Active || !list[1].Active {
			t.Fatalf("Events(2) = %+v, truncated %v, %v; want the 2 active ones, truncated", list, truncated, err)
		}
		for _, n := range []int{-1, tier1.MaxEventsLimit + 1} {
			if _, _, err := b.svc.Events(b.ctx, n); !errors.Is(err, tier1.ErrInvalidConfig) {
				t.Errorf("Events(%d): %v, want ErrInvalidConfig", n, err)
			}
		}
	})

	t.Run("a batch-size change keeps the pause and the proof of work", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		if _, err := b.svc.SetBatchSize(b.ctx, b.event, 5); !errors.Is(err, tier1.ErrNotFound) {
			t.Fatalf("SetBatchSize on a never-activated event: %v, want ErrNotFound", err)
		}
		if _, err := b.svc.Activate(b.ctx, b.event, 3, 10, tier1.WithPow(tier1.MinPow)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Pause(b.ctx, b.event); err != nil {
			t.Fatal(err)
		}
		st, err := b.svc.SetBatchSize(b.ctx, b.event, 250)
		if err != nil || st.BatchSize != 250 || !st.Paused || !st.Active || st.Shards != 3 || st.Pow != tier1.MinPow {
			t.Fatalf("SetBatchSize = %+v, %v", st, err)
		}
		for _, n := range []int64{0, tier1.MaxBatchSize + 1} {
			if _, err := b.svc.SetBatchSize(b.ctx, b.event, n); !errors.Is(err, tier1.ErrInvalidConfig) {
				t.Errorf("SetBatchSize(%d): %v, want ErrInvalidConfig", n, err)
			}
		}
		if st, _ := b.svc.AdminStatus(b.ctx, b.event); st.BatchSize != 250 {
			t.Errorf("a refused change wrote: %+v", st)
		}
	})

	t.Run("enter, advance, check mints the Tier 1 pass", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		if _, err := b.svc.Activate(b.ctx, b.event, 1, 2); err != nil {
			t.Fatalf("Activate: %v", err)
		}
		var rs []tier1.AssignResult
		for range 3 {
			r, err := b.svc.Assign(b.ctx, b.event, "")
			if err != nil || !r.Active {
				t.Fatalf("Assign: %+v, %v", r, err)
			}
			rs = append(rs, r)
		}
		if rs[0].Position != 1 || rs[2].Position != 3 || rs[2].PeopleAhead != 2 || rs[2].NextPoll < 1 || rs[2].EstimatedWait <= 0 {
			t.Fatalf("third enter = %+v", rs[2])
		}
		c, err := b.svc.Check(b.ctx, b.event, rs[1].RequestID)
		if err != nil || c.Admitted || c.Token != "" || c.PeopleAhead != 1 || c.Position != 2 {
			t.Fatalf("Check before advance = %+v, %v", c, err)
		}
		st, err := b.svc.AdvanceBy(b.ctx, b.event, 2)
		if err != nil || st.ServingCounter != 2 || st.Admitted != 2 || st.Waiting != 1 {
			t.Fatalf("AdvanceBy = %+v, %v", st, err)
		}
		c, err = b.svc.Check(b.ctx, b.event, rs[1].RequestID)
		if err != nil || !c.Admitted || c.Position != 2 || !c.ExpiresAt.Equal(Epoch.Add(600*time.Second)) {
			t.Fatalf("Check after advance = %+v, %v", c, err)
		}
		pass, err := b.keys.VerifyTier1(c.Token, b.event, b.clk.Now())
		if err != nil || pass.Subject != rs[1].RequestID || pass.Position != 2 || pass.EventID != b.event {
			t.Fatalf("pass = %+v, %v", pass, err)
		}
		if _, err := b.keys.VerifyTier1(c.Token, b.event+"x", b.clk.Now()); err == nil {
			t.Fatal("pass verified for another event")
		}
		if st, err := b.svc.AdvanceBy(b.ctx, b.event, 1000); err != nil || st.ServingCounter != 3 {
			t.Fatalf("AdvanceBy past maxAssigned = %+v, %v; want capped at 3", st, err)
		}
	})

	t.Run("check rejects unknown and foreign request ids", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		other := testenv.UniqueID(t)
		for _, ev := range []string{b.event, other} {
			if _, err := b.svc.Activate(b.ctx, ev, 1, 10); err != nil {
				t.Fatal(err)
			}
		}
		r, err := b.svc.Assign(b.ctx, other, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Check(b.ctx, b.event, r.RequestID); !errors.Is(err, tier1.ErrNotFound) {
			t.Fatalf("foreign requestId: %v, want ErrNotFound", err)
		}
		if _, err := b.svc.Check(b.ctx, b.event, tier1.NewRequestID()); !errors.Is(err, tier1.ErrNotFound) {
			t.Fatalf("unknown requestId: %v, want ErrNotFound", err)
		}
	})

	t.Run("idempotent assign through the service", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		if _, err := b.svc.Activate(b.ctx, b.event, 4, 10); err != nil {
			t.Fatal(err)
		}
		a, err := b.svc.Assign(b.ctx, b.event, "k-1")
		if err != nil {
			t.Fatal(err)
		}
		again, err := b.svc.Assign(b.ctx, b.event, "k-1")
		if err != nil || !again.Reused || again.RequestID != a.RequestID || again.Position != a.Position {
			t.Fatalf("retry = %+v, %v; first %+v", again, err, a)
		}
		if st, _ := b.svc.AdminStatus(b.ctx, b.event); st.Assigned != 1 {
			t.Fatalf("assigned = %d after a retried enter, want 1", st.Assigned)
		}
	})

	t.Run("advancer admits a batch per tick up to maxAssigned", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		if _, err := b.svc.Activate(b.ctx, b.event, 2, 3); err != nil {
			t.Fatal(err)
		}
		for range 8 {
			if _, err := b.svc.Assign(b.ctx, b.event, ""); err != nil {
				t.Fatal(err)
			}
		}
		var admitted []int64
		for range 5 {
			if _, err := b.svc.Tick(b.ctx); err != nil {
				t.Fatalf("Tick: %v", err)
			}
			res, err := b.svc.Tick(b.ctx) // same slot: must not raise again
			if err != nil {
				t.Fatalf("Tick: %v", err)
			}
			if r := find(res, b.event); r.Skipped != "slot-done" && r.Skipped != "idle" {
				t.Fatalf("second tick in a slot = %+v", r)
			}
			st, err := b.svc.AdminStatus(b.ctx, b.event)
			if err != nil {
				t.Fatal(err)
			}
			if st.ServingCounter > st.MaxAssigned {
				t.Fatalf("serving %d passed maxAssigned %d", st.ServingCounter, st.MaxAssigned)
			}
			admitted = append(admitted, st.Admitted)
			b.clk.Advance(10 * time.Second)
		}
		if want := "[3 6 8 8 8]"; fmt.Sprint(admitted) != want {
			t.Fatalf("admitted after each tick = %v, want %s", admitted, want)
		}
		st, _ := b.svc.Status(b.ctx, b.event)
		if st.AdmitRatePerMinute != 8 || st.MaxAssigned != st.ServingCounter {
			t.Fatalf("Status = %+v, want rate 8 and serving = maxAssigned", st)
		}
		b.clk.Advance(time.Minute)
		if st, _ := b.svc.Status(b.ctx, b.event); st.AdmitRatePerMinute != 0 {
			t.Fatalf("rate a minute later = %d, want 0", st.AdmitRatePerMinute)
		}
	})

	t.Run("two advancers raise once per tick", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		other := tier1.New(b.store, b.keys, b.clk, cfg())
		if _, err := b.svc.Activate(b.ctx, b.event, 4, 7); err != nil {
			t.Fatal(err)
		}
		for range 60 {
			if _, err := b.svc.Assign(b.ctx, b.event, ""); err != nil {
				t.Fatal(err)
			}
		}
		var prev int64
		for tick := range 6 {
			var wg sync.WaitGroup
			for _, s := range []*tier1.Service{b.svc, other} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := s.Tick(b.ctx); err != nil {
						t.Errorf("Tick: %v", err)
					}
				}()
			}
			wg.Wait()
			st, err := b.svc.AdminStatus(b.ctx, b.event)
			if err != nil {
				t.Fatal(err)
			}
			if st.Admitted-prev != 7 {
				t.Fatalf("tick %d admitted %d, want exactly the batch 7", tick, st.Admitted-prev)
			}
			prev = st.Admitted
			b.clk.Advance(10 * time.Second)
		}
	})

	t.Run("RunAdvancer ticks with the injected sleeper", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		var slept []time.Duration
		svc := tier1.New(b.store, b.keys, b.clk, tier1.Config{Logger: quiet, Sleep: func(_ context.Context, d time.Duration) error {
			slept = append(slept, d)
			b.clk.Advance(d)
			return nil
		}})
		if _, err := svc.Activate(b.ctx, b.event, 1, 2); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if _, err := svc.Assign(b.ctx, b.event, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := svc.RunAdvancer(b.ctx, 6, nil); err != nil {
			t.Fatalf("RunAdvancer: %v", err)
		}
		st, _ := svc.AdminStatus(b.ctx, b.event)
		if st.ServingCounter != 12 || len(slept) != 5 {
			t.Fatalf("after 6 ticks: serving %d (want 12), slept %v (want 5 × 10s)", st.ServingCounter, slept)
		}
	})

	t.Run("pause, resume, deactivate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		if _, err := b.svc.Activate(b.ctx, b.event, 1, 5); err != nil {
			t.Fatal(err)
		}
		r, _ := b.svc.Assign(b.ctx, b.event, "")
		if st, err := b.svc.Pause(b.ctx, b.event); err != nil || !st.Paused || !st.Active {
			t.Fatalf("Pause = %+v, %v", st, err)
		}
		res, _ := b.svc.Tick(b.ctx)
		if got := find(res, b.event); got.Skipped != "paused" {
			t.Fatalf("tick while paused = %+v", got)
		}
		if w, _ := b.svc.Assign(b.ctx, b.event, ""); !w.Active || w.Position != 2 {
			t.Fatalf("enter while paused = %+v; want a position", w)
		}
		if st, err := b.svc.Resume(b.ctx, b.event); err != nil || st.Paused {
			t.Fatalf("Resume = %+v, %v", st, err)
		}
		res, _ = b.svc.Tick(b.ctx)
		if got := find(res, b.event); got.To != 2 || got.Admitted != 2 {
			t.Fatalf("tick after resume = %+v", got)
		}
		b.clk.Advance(10 * time.Second)
		late, _ := b.svc.Assign(b.ctx, b.event, "")
		if st, err := b.svc.Deactivate(b.ctx, b.event); err != nil || st.Active {
			t.Fatalf("Deactivate = %+v, %v", st, err)
		}
		if c, err := b.svc.Check(b.ctx, b.event, late.RequestID); err != nil || !c.Admitted {
			t.Fatalf("check after deactivation = %+v, %v; want fail-open admission", c, err)
		}
		if c, err := b.svc.Check(b.ctx, b.event, r.RequestID); err != nil || !c.Admitted || c.Position != 1 {
			t.Fatalf("check of position 1 = %+v, %v", c, err)
		}
		if a, err := b.svc.Assign(b.ctx, b.event, ""); err != nil || a.Active || a.Token == "" {
			t.Fatalf("enter after deactivation = %+v, %v; want pass-through", a, err)
		}
		res, _ = b.svc.Tick(b.ctx)
		if got := find(res, b.event); got.EventID != "" {
			t.Fatalf("inactive event ticked: %+v", got)
		}
	})

	t.Run("shard change after positions is rejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		if _, err := b.svc.Activate(b.ctx, b.event, 2, 5); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Assign(b.ctx, b.event, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Activate(b.ctx, b.event, 3, 5); !errors.Is(err, tier1.ErrInvalidConfig) {
			t.Fatalf("Activate with new shard count: %v, want ErrInvalidConfig", err)
		}
		if st, err := b.svc.Activate(b.ctx, b.event, 2, 50); err != nil || st.BatchSize != 50 || st.Assigned != 1 {
			t.Fatalf("re-Activate with same shards = %+v, %v", st, err)
		}
	})

	t.Run("status is cached for at most the TTL", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f)
		reader := tier1.New(b.store, b.keys, b.clk, tier1.Config{StatusCacheTTL: time.Second, Logger: quiet})
		if _, err := b.svc.Activate(b.ctx, b.event, 1, 5); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if _, err := b.svc.Assign(b.ctx, b.event, ""); err != nil {
				t.Fatal(err)
			}
		}
		if st, _ := reader.Status(b.ctx, b.event); st.ServingCounter != 0 || st.MaxAssigned != 4 || !st.Active {
			t.Fatalf("first status = %+v", st)
		}
		// An instance's first read lives 200 ms, until it has measured the
		// enter rate; then reads last the TTL.
		b.clk.Advance(200 * time.Millisecond)
		if st, _ := reader.Status(b.ctx, b.event); st.EnterRate != 0 || !st.AsOf.Equal(b.clk.Now()) {
			t.Fatalf("second status = %+v, want a read now measuring no enters", st)
		}
		advancedAt := b.clk.Now()
		if _, err := b.svc.AdvanceBy(b.ctx, b.event, 3); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(999 * time.Millisecond)
		if st, _ := reader.Status(b.ctx, b.event); st.ServingCounter != 0 {
			t.Fatalf("status within the TTL = %+v, want the cached 0", st)
		}
		b.clk.Advance(time.Millisecond)
		if st, _ := reader.Status(b.ctx, b.event); st.ServingCounter != 3 || !st.UpdatedAt.Equal(advancedAt) {
			t.Fatalf("status after the TTL = %+v, want 3", st)
		}
		// Two more enters in that second: the status document's rate.
		for range 2 {
			if _, err := b.svc.Assign(b.ctx, b.event, ""); err != nil {
				t.Fatal(err)
			}
		}
		b.clk.Advance(time.Second)
		if st, _ := reader.Status(b.ctx, b.event); st.EnterRate != 2 || len(st.ShardCounters) != 1 || st.ShardCounters[0] != 6 {
			t.Fatalf("status a second later = %+v, want 2 enters/s and 6 places", st)
		}
	})
}

func find(rs []tier1.TickResult, eventID string) tier1.TickResult {
	for _, r := range rs {
		if r.EventID == eventID {
			return r
		}
	}
	return tier1.TickResult{}
}
