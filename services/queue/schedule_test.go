package queue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/vwr-go/vwr/services/queue"
)

// admits is how many admit.lua calls the bundle's observer has seen.
func (b *testBundle) admits() int {
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	return b.rec.scripts["admit"]
}

// TestAdmissionPassVisitsOnlyWhatMayHaveWork: a full event with a line is
// not visited again until something may have freed a slot, and each way a
// slot frees brings the visit: a leave on another instance (that
// instance's worker visits it), the first slot to free by time (the
// schedule), a threshold raised on another instance (the schedule, woken
// by the admin call), and a line formed in an event that was full.
func TestAdmissionPassVisitsOnlyWhatMayHaveWork(t *testing.T) {
	t.Parallel()
	cfg := queue.Config{Threshold: 1, ActiveTTL: time.Hour, ActiveIdle: time.Hour}
	b := setup(t, cfg)
	svc2 := queue.New(b.store, b.keys, b.clk, b.rec, cfg) // another instance
	svc2.SetObserver(observer{b.rec})
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil) // leads the periodic pass
	w2 := queue.NewWorker(svc2, queue.WorkerConfig{}, nil) // visits what its instance woke

	b.check(t, "a", 1)
	b.check(t, "b", 2) // the line forms: this instance's worker visits
	before := b.admits()
	b.admitOnce(t, w, 0)
	if b.admits() != before+1 {
		t.Fatalf("the pass after the line formed ran admit %d times, want 1", b.admits()-before)
	}
	before = b.admits()
	for range 3 {
		b.admitOnce(t, w, 0)
	}
	if b.admits() != before {
		t.Fatalf("passes over a full event nothing woke ran admit %d times, want 0", b.admits()-before)
	}

	// a leaves through the other instance: its worker refills the slot.
	if removed, err := svc2.Leave(b.ctx, b.ev, queue.Identity{UserID: "a"}); err != nil || !removed {
		t.Fatalf("Leave(a) = %v, %v", removed, err)
	}
	b.admitOnce(t, w2, 1)
	if v := b.check(t, "b", 2); v.Status != queue.StatusActive {
		t.Fatalf("b after the leave's pass: %+v", v)
	}

	// c waits behind b, whose slot frees by time (ActiveIdle: claimed
	// slots are held until the idle limit after the last check).
	b.check(t, "c", 3)
	b.admitOnce(t, w, 0)
	before = b.admits()
	b.clk.Advance(30 * time.Minute)
	b.admitOnce(t, w, 0)
	if b.admits() != before {
		t.Fatalf("a pass before any slot could free ran admit %d times, want 0", b.admits()-before)
	}
	b.clk.Advance(31 * time.Minute)
	b.admitOnce(t, w, 1)
	if v := b.check(t, "c", 3); v.Status != queue.StatusActive {
		t.Fatalf("c after b's slot freed: %+v", v)
	}

	// d waits; the threshold is raised through the other instance, whose
	// admin call wakes the event for the whole fleet.
	b.check(t, "d", 4)
	b.admitOnce(t, w, 0)
	if err := svc2.SetThreshold(b.ctx, b.ev, 2); err != nil {
		t.Fatal(err)
	}
	b.admitOnce(t, w, 1)
	if v := b.check(t, "d", 4); v.Status != queue.StatusActive {
		t.Fatalf("d after the threshold was raised: %+v", v)
	}
}

// TestListedEventMissingFromTheScheduleIsVisited: an event listed with
// someone waiting but missing from the visit schedule (a write that
// failed, a store from before the schedule) is scheduled and visited by
// the first pass of the next worker that leads.
func TestListedEventMissingFromTheScheduleIsVisited(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1, ActiveTTL: time.Hour, ActiveIdle: time.Hour})
	b.slotFreedForB(t)
	// Drop the event from every schedule; this instance forgets what it woke.
	b.mem.Unschedule(b.ev)
	svc2 := queue.New(b.store, b.keys, b.clk, b.rec, queue.Config{Threshold: 1, ActiveTTL: time.Hour, ActiveIdle: time.Hour})
	b.admitOnce(t, queue.NewWorker(svc2, queue.WorkerConfig{}, nil), 1)
	if v := b.check(t, "b", 2); v.Status != queue.StatusActive {
		t.Fatalf("b after the first pass: %+v", v)
	}
}

// lineScores reads the line of the bundle's event: each waiter's last
// heartbeat, to its tick.
func (b *testBundle) lineScores(t *testing.T) map[string]time.Time {
	t.Helper()
	return b.mem.Heartbeats(b.ev)
}

// TestQueuedHeartbeatsWrittenInOneBatchPerEvent: with a worker, a queued
// user's poll (check or status) writes no heartbeat itself; the worker's
// next tick writes every heartbeat its instance heard in one call per
// event, at the time each was heard; a stale sweep, which writes the batch
// first, keeps everyone heard in time and drops only the silent; a batch
// naming someone who left since puts nobody back in line.
func TestQueuedHeartbeatsWrittenInOneBatchPerEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1, SeenTTL: time.Minute, ActiveTTL: time.Hour, ActiveIdle: time.Hour})
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.check(t, "a", 1)
	const n = 20
	uid := func(i int) string { return fmt.Sprintf("u%02d", i) }
	for i := range n {
		b.check(t, uid(i), int64(2+i))
	}
	b.check(t, "silent", 100)
	b.check(t, "leaver", 101)
	b.admitOnce(t, w, 0) // writes the joins' batch (nothing moves) and schedules the sweep
	b.clk.Advance(50 * time.Second)
	before := b.lineScores(t)
	for i := range n {
		if i%2 == 0 {
			b.check(t, uid(i), int64(2+i))
		} else if _, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: uid(i)}); err != nil {
			t.Fatal(err)
		}
	}
	b.check(t, "leaver", 101)
	b.leave(t, "leaver")
	if got := b.lineScores(t); len(got) != len(before)-1 {
		t.Fatalf("line after the polls and a leave: %d, want %d", len(got), len(before)-1)
	} else {
		for u, sc := range got {
			if !sc.Equal(before[u]) {
				t.Fatalf("%s's poll wrote its heartbeat itself (%v → %v)", u, before[u], sc)
			}
		}
	}
	b.rec.mu.Lock()
	beats := b.rec.scripts["beat"]
	b.rec.mu.Unlock()
	b.admitOnce(t, w, 0)
	b.rec.mu.Lock()
	calls := b.rec.scripts["beat"] - beats
	b.rec.mu.Unlock()
	if calls != 1 {
		t.Fatalf("the tick wrote the batch in %d calls, want 1", calls)
	}
	after := b.lineScores(t)
	if _, back := after["leaver"]; back {
		t.Fatal("the batch put a leaver back in line")
	}
	for i := range n {
		if after[uid(i)].Equal(before[uid(i)]) {
			t.Fatalf("%s's heartbeat was not written by the batch", uid(i))
		}
	}
	if !after["silent"].Equal(before["silent"]) {
		t.Fatal("silent's heartbeat moved without a poll")
	}
	// silent was last heard 80 s ago (past SeenTTL + the 6 s heartbeat
	// spacing of answers from memory), everyone else 30 s ago.
	b.clk.Advance(30 * time.Second)
	if removed, err := w.CleanupOnce(b.ctx); err != nil || removed != 1 {
		t.Fatalf("CleanupOnce = %d, %v; want silent alone", removed, err)
	}
	for i := range n {
		if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: uid(i)}); err != nil || v.Status != queue.StatusQueued {
			t.Fatalf("%s after the sweep: %+v, %v", uid(i), v, err)
		}
	}
}
