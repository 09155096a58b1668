package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/redisstore"
)

// pausedCheck holds one user's Check after the store's step, until
// released: a poll in flight while something else happens.
type pausedCheck struct {
	queue.Store
	user    string
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (s *pausedCheck) Check(ctx context.Context, in queue.CheckInput) (queue.Snapshot, error) {
	snap, err := s.Store.Check(ctx, in)
	if in.UserID == s.user {
		s.once.Do(func() {
			close(s.reached)
			<-s.release
		})
	}
	return snap, err
}

// countedReads counts the events read by LineStates.
type countedReads struct {
	queue.Store
	events atomic.Int64
}

func (s *countedReads) LineStates(ctx context.Context, qs []queue.LineQuery) ([]queue.LineState, error) {
	s.events.Add(int64(len(qs)))
	return s.Store.LineStates(ctx, qs)
}

// redisStore is a Redis store on database db, and its key prefix.
func redisStore(t *testing.T, db int) (*redis.Client, *redisstore.Store, string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t), DB: db})
	t.Cleanup(func() { _ = rdb.Close() })
	prefix := testenv.UniqueID(t) + ":"
	return rdb, redisstore.New(rdb, redisstore.Options{Prefix: prefix}), prefix
}

// TestPollRacingALeaveHereIsNotQueued: a poll whose store step ran just
// before a leave on the same instance, and whose answer comes back after
// it, must not leave a place behind that memory answers "queued" from.
func TestPollRacingALeaveHereIsNotQueued(t *testing.T) {
	t.Parallel()
	_, st, _ := redisStore(t, 0)
	ps := &pausedCheck{Store: st, user: "u5", reached: make(chan struct{}), release: make(chan struct{})}
	b := setupWith(t, ps, queue.Config{Threshold: 1, AdmissionBatchSize: 1})
	queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.check(t, "holder", 1)
	for i := range 5 {
		b.check(t, fmt.Sprintf("u%d", i), int64(2+i))
	}
	b.refresh(t, b.svc)
	u5 := queue.Identity{UserID: "u5", Position: 7, Pass: true}
	done := make(chan error, 1)
	go func() {
		_, err := b.svc.Check(b.ctx, b.ev, u5) // joins; its answer is held
		done <- err
	}()
	<-ps.reached
	if removed, err := b.svc.Leave(b.ctx, b.ev, u5); err != nil || !removed {
		t.Fatalf("Leave(u5) = %v, %v", removed, err)
	}
	close(ps.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Same instant, same instance: the leave is done; nobody may hear
	// "queued" for u5 any more, from memory or not.
	if v, err := b.svc.Status(b.ctx, b.ev, u5); err != nil || v.Status != queue.StatusDone {
		t.Fatalf("status of u5 after its leave: %+v, %v; want done", v, err)
	}
	if v, err := b.svc.Check(b.ctx, b.ev, u5); err != nil || v.Status != queue.StatusDone {
		t.Fatalf("check of u5 after its leave: %+v, %v; want done", v, err)
	}
}

// TestLossOutgrownBeforeTheNextReadIsNotAnsweredFromMemory: Redis is lost,
// another epoch starts, its window ends and its line logs more changes
// than this instance had read, all before this instance reads the line
// again (no poll here meanwhile). The next read must not splice the new
// line's log onto what was remembered of the old one.
func TestLossOutgrownBeforeTheNextReadIsNotAnsweredFromMemory(t *testing.T) {
	t.Parallel()
	rdb, st, _ := redisStore(t, 12) // flushed: a database of its own
	b := setupWith(t, st, queue.Config{Threshold: 1, AdmissionBatchSize: 1})
	queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.check(t, "holder", 1)
	for i := range 10 {
		b.check(t, fmt.Sprintf("u%d", i), int64(2+i))
	}
	b.refresh(t, b.svc)
	if v := b.check(t, "u8", 10); v.PeopleAheadExact {
		t.Fatalf("u8 before the loss: %+v, want memory's answer", v)
	}
	if err := rdb.FlushDB(b.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Someone else's checks here find the loss; the window passes; the new
	// line logs 30 joins (more than the 11 changes read before).
	b.check(t, "holder2", 1)
	b.clk.Advance(time.Minute)
	for i := range 30 {
		b.check(t, fmt.Sprintf("n%02d", i), int64(100+i))
	}
	b.refresh(t, b.svc)
	// u8 is in no line now: the store says so; memory must not say queued.
	if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "u8"}); !errors.Is(err, queue.ErrNotQueued) {
		t.Fatalf("status of u8, lost with the old line: %+v, %v; want ErrNotQueued", v, err)
	}
}

// TestLineLogLostWithoutAnEpochChange: only the change log and its count
// go (an eviction, an operator's DEL), the epoch stays; a leave is logged
// in the new count and more changes follow before this instance reads.
// The leaver must not hear "queued" from memory after that read.
func TestLineLogLostWithoutAnEpochChange(t *testing.T) {
	t.Parallel()
	rdb, st, prefix := redisStore(t, 0)
	b := setupWith(t, st, queue.Config{Threshold: 1, AdmissionBatchSize: 1})
	queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	other := b.instance(queue.Config{Threshold: 1, AdmissionBatchSize: 1})
	b.check(t, "holder", 1)
	for i := range 10 {
		b.check(t, fmt.Sprintf("u%d", i), int64(2+i))
	}
	b.refresh(t, b.svc)
	u8 := queue.Identity{UserID: "u8", Position: 10, Pass: true}
	if v, err := b.svc.Check(b.ctx, b.ev, u8); err != nil || v.PeopleAheadExact {
		t.Fatalf("u8 before: %+v, %v; want memory's answer", v, err)
	}
	tag := prefix + "{" + b.ev + "}"
	if n, err := rdb.Del(b.ctx, tag+":line", tag+":changes").Result(); err != nil || n != 2 {
		t.Fatalf("DEL the log = %d, %v", n, err)
	}
	if removed, err := other.Leave(b.ctx, b.ev, u8); err != nil || !removed {
		t.Fatalf("Leave(u8) on the other instance = %v, %v", removed, err)
	}
	for i := range 30 {
		if _, err := other.Check(b.ctx, b.ev, queue.Identity{UserID: fmt.Sprintf("n%02d", i), Position: int64(100 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	b.clk.Advance(queue.SnapshotInterval + time.Millisecond)
	b.refresh(t, b.svc)
	if v, err := b.svc.Check(b.ctx, b.ev, u8); err != nil || v.Status != queue.StatusDone {
		t.Fatalf("check of u8 after its leave and a read: %+v, %v; want done", v, err)
	}
}

// TestIdleRememberedEventsCostNoReads: many small events, each visitor
// remembered on two instances, and nobody polling: the instances' workers
// read no line. When everyone polls once, each instance reads each event
// at most once (and never more lines than polls).
func TestIdleRememberedEventsCostNoReads(t *testing.T) {
	t.Parallel()
	_, st, _ := redisStore(t, 0)
	cr := &countedReads{Store: st}
	cfg := queue.Config{Threshold: 1, AdmissionBatchSize: 1}
	b := setupWith(t, cr, cfg)
	w1 := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	other := queue.New(cr, b.keys, b.clk, nil, cfg)
	w2 := queue.NewWorker(other, queue.WorkerConfig{}, nil)
	const events, waiters = 50, 3
	ev := func(e int) string { return fmt.Sprintf("%s-%d", b.ev, e) }
	polls := func() int {
		n := 0
		for e := range events {
			for _, s := range []*queue.Service{b.svc, other} {
				for i := range waiters + 1 {
					v, err := s.Check(b.ctx, ev(e), queue.Identity{UserID: fmt.Sprintf("u%d", i), Position: int64(1 + i)})
					if err != nil {
						t.Fatal(err)
					}
					if i > 0 && v.Status != queue.StatusQueued {
						t.Fatalf("event %d, u%d: %+v, want queued", e, i, v)
					}
					n++
				}
			}
		}
		return n
	}
	polls()
	if b.svc.RememberedPlaces() == 0 || other.RememberedPlaces() == 0 {
		t.Fatal("nothing remembered")
	}
	cr.events.Store(0)
	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	for _, w := range []*queue.Worker{w1, w2} {
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(ctx) }()
	}
	time.Sleep(1200 * time.Millisecond)
	cancel()
	wg.Wait()
	if n := cr.events.Load(); n != 0 {
		t.Fatalf("idle: %d lines read in 1.2 s with nobody polling, want 0", n)
	}
	b.clk.Advance(time.Second)
	n := polls()
	if got := cr.events.Load(); got > 2*events || got > int64(n) {
		t.Fatalf("%d polls read %d lines: want at most one per event and instance (%d)", n, got, 2*events)
	}
}

// TestLineLogRolledBackWithoutAnEpochChange: a failover to a replica that
// had not yet seen the last changes takes the count back a few steps, with
// the count's generation and the epoch unchanged; new changes (a leave
// among them) bring it past this instance's cursor before its next read.
// The leaver must not hear "queued" from memory after that read.
func TestLineLogRolledBackWithoutAnEpochChange(t *testing.T) {
	t.Parallel()
	rdb, st, prefix := redisStore(t, 0)
	cfg := queue.Config{Threshold: 1, AdmissionBatchSize: 1}
	b := setupWith(t, st, cfg)
	queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	other := b.instance(cfg)
	b.check(t, "holder", 1)
	for i := range 10 {
		b.check(t, fmt.Sprintf("u%d", i), int64(2+i))
	}
	b.refresh(t, b.svc)
	u8 := queue.Identity{UserID: "u8", Position: 10, Pass: true}
	if v, err := b.svc.Check(b.ctx, b.ev, u8); err != nil || v.PeopleAheadExact {
		t.Fatalf("u8 before: %+v, %v; want memory's answer", v, err)
	}
	// The replica had the first 7 of the 10 joins: the last 3 are lost.
	tag := prefix + "{" + b.ev + "}"
	if err := rdb.HIncrBy(b.ctx, tag+":line", "seq", -3).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.RPopCount(b.ctx, tag+":changes", 3).Err(); err != nil {
		t.Fatal(err)
	}
	if removed, err := other.Leave(b.ctx, b.ev, u8); err != nil || !removed {
		t.Fatalf("Leave(u8) on the other instance = %v, %v", removed, err)
	}
	for i := range 5 {
		if _, err := other.Check(b.ctx, b.ev, queue.Identity{UserID: fmt.Sprintf("n%d", i), Position: int64(100 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	b.clk.Advance(queue.SnapshotInterval + time.Millisecond)
	b.refresh(t, b.svc)
	if v, err := b.svc.Check(b.ctx, b.ev, u8); err != nil || v.Status != queue.StatusDone {
		t.Fatalf("check of u8 after its leave and a read: %+v, %v; want done", v, err)
	}
}

// TestClockSteppedBackDoesNotKeepAReadFresh: the instance's clock steps
// back (a wall clock set back before the next offset measurement) after a
// read; everyone is let in. A read "from the future" is no fresher than one
// from the past: nobody let in hears "queued" from it.
func TestClockSteppedBackDoesNotKeepAReadFresh(t *testing.T) {
	t.Parallel()
	_, st, _ := redisStore(t, 0)
	cfg := queue.Config{Threshold: 1, AdmissionBatchSize: 1}
	b := setupWith(t, st, cfg)
	queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.check(t, "holder", 1)
	for i := range 10 {
		b.check(t, fmt.Sprintf("u%d", i), int64(2+i))
	}
	b.refresh(t, b.svc)
	if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "u8"}); err != nil || v.PeopleAheadExact {
		t.Fatalf("u8 before: %+v, %v; want memory's answer", v, err)
	}
	b.admitElsewhere(t, 100, 10)
	b.clk.Set(b.clk.Now().Add(-5 * time.Second))
	if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "u8"}); err != nil || v.Status != queue.StatusActive {
		t.Fatalf("u8, let in, with the clock 5 s back: %+v, %v; want active", v, err)
	}
}

// TestLeavesHereCostNoExtraReads: leaves on this instance make only the
// leaver's place wait for the next read; the others' polls are answered
// from the read they had, so an instance still reads a line at most once
// per interval however many leave there.
func TestLeavesHereCostNoExtraReads(t *testing.T) {
	t.Parallel()
	_, st, _ := redisStore(t, 0)
	cr := &countedReads{Store: st}
	b := setupWith(t, cr, queue.Config{Threshold: 1, AdmissionBatchSize: 1})
	queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.check(t, "holder", 1)
	for i := range 30 {
		b.check(t, fmt.Sprintf("u%02d", i), int64(2+i))
	}
	b.refresh(t, b.svc)
	cr.events.Store(0)
	for i := range 10 {
		b.leave(t, fmt.Sprintf("u%02d", 10+i))
		v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "u29"})
		if err != nil || v.Status != queue.StatusQueued || v.PeopleAheadExact {
			t.Fatalf("u29 after %d leaves here: %+v, %v; want memory's answer", i+1, v, err)
		}
		if _, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: fmt.Sprintf("u%02d", 10+i)}); !errors.Is(err, queue.ErrNotQueued) {
			t.Fatalf("the leaver: %v, want ErrNotQueued", err)
		}
	}
	if n := cr.events.Load(); n != 0 {
		t.Fatalf("10 leaves here within one interval read the line %d times, want 0", n)
	}
}
