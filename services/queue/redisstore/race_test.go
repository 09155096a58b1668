package redisstore

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vwr-go/vwr/services/queue"
)

// TestSeedRetireLosesEvents replays the seed's retire (check empty, then
// SREM) with a join in between: the queued user's event drops out of the
// active-events set and nobody would ever admit them. Store.Retire, given the
// same interleaving, keeps the event.
func TestSeedRetireLosesEvents(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, b.new)
			f.Emptied("x")

			// The seed: the worker sees both sets empty...
			if f.zcard(f.s.k.queue(f.Ev))+f.zcard(f.s.k.active(f.Ev)) != 0 {
				t.Fatal("setup: event not empty")
			}
			f.Check("a", 1, t0, 1) // ...someone joins (activated: ZADD + SADD)...
			f.Check("b", 2, t0, 1) // ...someone queues behind them...
			if err := f.s.rdb.SRem(f.Ctx, f.s.k.activeEvents(), f.Ev).Err(); err != nil {
				t.Fatal(err)
			}
			if f.Listed() || f.zcard(f.s.k.queue(f.Ev)) != 1 {
				t.Fatal("seed interleaving did not lose the event")
			}
			// ...and b waits forever. Store.Retire over the same
			// interleaving: the worker's pass sees the event empty...
			if err := f.s.rdb.SAdd(f.Ctx, f.s.k.activeEvents(), f.Ev).Err(); err != nil {
				t.Fatal(err)
			}
			f.Leave("a")
			f.Leave("b")
			if res := f.Admit(t0, 1, 10); res.QueueSize+res.ActiveCount != 0 {
				t.Fatalf("setup: admit pass saw %+v", res)
			}
			// ...a and b join (ZADD and SADD both land)...
			f.Check("a", 1, t0, 1)
			f.Check("b", 2, t0, 1)
			// ...and the worker retires: only Retire's re-check can keep
			// the event, since both joins' SADDs came before its SREM.
			if removed, err := f.s.Retire(f.Ctx, f.Ev); err != nil || removed || !f.Listed() {
				t.Fatalf("Retire = %v, %v; listed %v", removed, err, f.Listed())
			}
		})
	}
}

// TestActiveEventsInvariantUnderConcurrency runs many concurrent joins and
// leaves against a worker that admits and retires the event as fast as it
// can, then checks the invariant: an event with queued (or active) users is
// in the active-events set.
func TestActiveEventsInvariantUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, b.new)
			ctx := context.Background()
			// Yield inside the retire window so joins land in it.
			f.s.afterSREM = runtime.Gosched
			const rounds, joiners, perJoiner = 15, 8, 8
			var retired, queuedSeen, retireGen, violations atomic.Int64
			// probe checks, with no retire overlapping its reads, that the
			// event of a user who is still queued is listed. Users only
			// leave the line, so queued at the second read means queued at
			// the first.
			probe := func(uid string) {
				g1 := retireGen.Load()
				listed, err1 := f.s.rdb.SIsMember(ctx, f.s.k.activeEvents(), f.Ev).Result()
				_, err2 := f.s.rdb.ZScore(ctx, f.s.k.queue(f.Ev), uid).Result()
				if g2 := retireGen.Load(); err1 == nil && err2 == nil && g1 == g2 && g1%2 == 0 && !listed {
					violations.Add(1)
				}
			}
			for r := 0; r < rounds; r++ {
				stop := make(chan struct{})
				workerDone := make(chan error, 1)
				go func() {
					for {
						select {
						case <-stop:
							workerDone <- nil
							return
						default:
						}
						// Like the real worker, visit the event only while listed.
						listed, err := f.s.rdb.SIsMember(ctx, f.s.k.activeEvents(), f.Ev).Result()
						if err != nil {
							workerDone <- err
							return
						}
						if !listed {
							runtime.Gosched()
							continue
						}
						res, err := f.s.Admit(ctx, queue.AdmitInput{EventID: f.Ev, Now: time.Now(), ActiveTTL: time.Millisecond, DefaultThreshold: 1000, Batch: 1000})
						if err != nil {
							workerDone <- err
							return
						}
						if res.QueueSize == 0 && res.ActiveCount == 0 {
							retireGen.Add(1) // odd: a retire is under way
							removed, err := f.s.Retire(ctx, f.Ev)
							retireGen.Add(1)
							if err != nil {
								workerDone <- err
								return
							}
							if removed {
								retired.Add(1)
							}
						}
					}
				}()
				var wg sync.WaitGroup
				errs := make(chan error, joiners)
				for j := 0; j < joiners; j++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < perJoiner; i++ {
							uid := fmt.Sprintf("r%d-j%d-%d", r, j, i)
							// Even joiners always queue (threshold 0 on their
							// check), odd ones enter directly when the line is empty.
							th := int64(1000 * (j % 2))
							snap, err := f.s.Check(ctx, queue.CheckInput{EventID: f.Ev, UserID: uid, Score: int64(i), Now: time.Now(), ActiveTTL: time.Millisecond, DefaultThreshold: th})
							if err != nil {
								errs <- err
								return
							}
							time.Sleep(time.Duration(j+1) * 300 * time.Microsecond)
							if snap.Status == queue.StatusQueued {
								queuedSeen.Add(1)
								probe(uid)
							}
							// Actives leave at once, so the event empties often.
							if snap.Status == queue.StatusActive {
								if _, err := f.s.Leave(ctx, queue.LeaveInput{EventID: f.Ev, UserID: uid}); err != nil {
									errs <- err
									return
								}
							}
						}
					}()
				}
				wg.Wait()
				close(stop)
				if err := <-workerDone; err != nil {
					t.Fatal(err)
				}
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				q, a := f.zcard(f.s.k.queue(f.Ev)), f.zcard(f.s.k.active(f.Ev))
				if (q > 0 || a > 0) && !f.Listed() {
					t.Fatalf("round %d: %d queued and %d active but the event is not in the active-events set", r, q, a)
				}
				// Drain this round's line so the next starts empty.
				for f.zcard(f.s.k.queue(f.Ev)) > 0 {
					if _, err := f.s.Admit(ctx, queue.AdmitInput{EventID: f.Ev, Now: time.Now(), ActiveTTL: time.Millisecond, DefaultThreshold: 1000, Batch: 1000}); err != nil {
						t.Fatalf("round %d: drain: %v", r, err)
					}
				}
			}
			if v := violations.Load(); v > 0 {
				t.Fatalf("%d times a queued user's event was missing from the active-events set", v)
			}
			if retired.Load() == 0 || queuedSeen.Load() == 0 {
				t.Fatalf("retired %d times, %d joins queued: the race was not exercised", retired.Load(), queuedSeen.Load())
			}
			t.Logf("retired %d times; %d joins queued", retired.Load(), queuedSeen.Load())
		})
	}
}
