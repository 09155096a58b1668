package queue_test

import (
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
	keys, err := b.rdb.Keys(b.ctx, "*queue:{schedule}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := b.rdb.ZRem(b.ctx, k, b.ev).Err(); err != nil {
			t.Fatal(err)
		}
	}
	svc2 := queue.New(b.store, b.keys, b.clk, b.rec, queue.Config{Threshold: 1, ActiveTTL: time.Hour, ActiveIdle: time.Hour})
	b.admitOnce(t, queue.NewWorker(svc2, queue.WorkerConfig{}, nil), 1)
	if v := b.check(t, "b", 2); v.Status != queue.StatusActive {
		t.Fatalf("b after the first pass: %+v", v)
	}
}
