package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/vwr-go/vwr/services/queue"
)

// runConcurrency is the hostile part of the suite: steps racing on one
// event must keep the promises each keeps alone.
func runConcurrency(t *testing.T, newStore Factory) {
	t.Run("racing joins, passes and leaves never let more than the threshold in, nor anyone twice", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		const th, joiners, each = 5, 8, 15
		var (
			mu       sync.Mutex
			admitted = map[string]int{}
			holders  []string // in the order they were let in
			errs     []string
		)
		fail := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, fmt.Sprintf(format, args...))
		}
		// in notes uid's admission; holders keep their slots until the
		// passes' loop lets them go, two at a time, so the event stays full.
		in := func(uid string) {
			mu.Lock()
			defer mu.Unlock()
			admitted[uid]++
			holders = append(holders, uid)
		}
		var wg sync.WaitGroup
		for j := range joiners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					uid := fmt.Sprintf("j%d-%02d", j, i)
					s, err := f.S.Check(f.Ctx, queue.CheckInput{EventID: f.Ev, UserID: uid, Score: int64(1 + i*joiners + j), Now: t0,
						ActiveTTL: ttl, DefaultThreshold: th, Pass: true})
					switch {
					case err != nil:
						fail("Check(%s): %v", uid, err)
					case s.ActiveCount > th:
						fail("Check(%s) saw %d active, threshold %d", uid, s.ActiveCount, th)
					case s.Activated:
						in(uid)
					case s.Status != queue.StatusQueued:
						fail("Check(%s) = %+v, want active or queued", uid, s)
					}
				}
			}()
		}
		joined := make(chan struct{})
		go func() { wg.Wait(); close(joined) }()
		for done, drains := false, 0; ; {
			select {
			case <-joined:
				done = true
			default:
			}
			if done {
				if drains++; drains > 10_000 {
					t.Fatal("the line never drained") // rather than hang the package's run
				}
			}
			res, err := f.S.Admit(f.Ctx, queue.AdmitInput{EventID: f.Ev, Now: t0, ActiveTTL: ttl, DefaultThreshold: th, Batch: 3})
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if res.ActiveCount > th {
				t.Fatalf("a pass left %d active, threshold %d", res.ActiveCount, th)
			}
			for _, uid := range res.Admitted {
				in(uid)
			}
			if done && res.QueueSize == 0 && len(res.Admitted) == 0 {
				break
			}
			mu.Lock()
			gone := holders[:min(2, len(holders))]
			holders = holders[len(gone):]
			mu.Unlock()
			for _, uid := range gone {
				if _, err := f.S.Leave(f.Ctx, queue.LeaveInput{EventID: f.Ev, UserID: uid, Pass: true}); err != nil {
					t.Fatalf("Leave(%s): %v", uid, err)
				}
			}
		}
		for _, e := range errs {
			t.Error(e)
		}
		if len(admitted) != joiners*each {
			t.Fatalf("%d of %d let in", len(admitted), joiners*each)
		}
		for uid, n := range admitted {
			if n != 1 {
				t.Fatalf("%s let in %d times", uid, n)
			}
		}
	})
}
