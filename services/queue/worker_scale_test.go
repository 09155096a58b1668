package queue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/redistrips"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
)

// TestFreedSlotRefilledBesideManyListedEvents: with 20,000 other events
// listed (half full with nobody waiting, half full with a line), the very
// next admission pass refills a freed slot on the real event, and that pass
// costs one read of the visit schedule and the real event's own lock,
// admit (with its rankings), schedule and unlock: nothing per listed
// event, which waits unvisited until a slot of its own may free. Passes
// run every QUEUE_ADMISSION_INTERVAL_MS, so a slot freed at any moment is
// refilled within 2 intervals. (The worker before the schedule read every
// listed event's counters at every pass: 6 commands per event.)
func TestFreedSlotRefilledBesideManyListedEvents(t *testing.T) {
	t.Parallel()
	b, rdb, rs := setupRedis(t, &redis.Options{Addr: testenv.Redis(t)}, queue.Config{Threshold: 1})
	const others = 20_000
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < others; i += 8 {
				ev := fmt.Sprintf("%s-o%05d", b.ev[:min(len(b.ev), 50)], i)
				if _, err := b.svc.Check(b.ctx, ev, queue.Identity{UserID: "holder", Position: 1}); err != nil {
					errs <- err
					return
				}
				if i%2 == 1 {
					if _, err := b.svc.Check(b.ctx, ev, queue.Identity{UserID: "waiter", Position: 2}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The safety net's reading of every listed event (enlist) comes once
	// per cleanup interval: an hour here, so that a slow first pass on a
	// loaded machine does not bring it into the pass this test counts.
	w := queue.NewWorker(b.svc, queue.WorkerConfig{StaleCleanupInterval: time.Hour}, nil)
	// The first pass adds every event's direct admission to the rankings;
	// after that a full event costs nothing but its share of the scan.
	b.admitOnce(t, w, 0)
	b.slotFreedForB(t)

	if err := rs.Load(b.ctx); err != nil { // no NOSCRIPT retries in the count
		t.Fatal(err)
	}
	hook := &redistrips.Hook{}
	rdb.AddHook(hook)
	b.admitOnce(t, w, 1)
	trips := hook.Reset()
	if v := b.check(t, "b", 2); v.Status != queue.StatusActive {
		t.Fatalf("b after the pass: %+v", v)
	}
	listed, err := b.store.Listed(b.ctx)
	if err != nil || len(listed) != others+1 {
		t.Fatalf("listed %d events, %v; want %d", len(listed), err, others+1)
	}
	// The instance's batch of queued heartbeats (b's) + ZRANGEBYSCORE of the
	// schedule + SET NX lock + admit + its rankings pipeline + the
	// schedule's pipeline + unlock.
	if maxTrips := 7; len(trips) > maxTrips || trips.Scripts() != 3 {
		t.Fatalf("the pass took %d round trips with %d scripts; want at most %d and 3 (the heartbeats' batch, the real event's admit and unlock)",
			len(trips), trips.Scripts(), maxTrips)
	}
}
