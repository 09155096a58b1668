package queue_test

import (
	"context"
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

// Pushed joins ahead and no near-head margin while pushes are heard: the
// hostile cases (docs/tier2-store.md, "Queued polls from memory").

// pushStore watches what the instance under test reads and hears: it
// counts LineStates reads, runs beforeRead and afterRead around each (a
// read in flight while the line changes), counts the subscriptions that
// held and the messages heard, and with mute drops every message (a
// subscription that died without a word); with stall set, the next message
// waits until it is closed, after it was taken off the connection (a
// subscriber goroutine not scheduled yet), and stalled hears it.
type pushStore struct {
	queue.Store
	reads                 atomic.Int64
	beforeRead, afterRead func()
	readies, heard        atomic.Int64
	mute                  atomic.Bool
	stall                 atomic.Pointer[chan struct{}]
	stalled               chan struct{}
}

func (s *pushStore) LineStates(ctx context.Context, qs []queue.LineQuery) ([]queue.LineState, error) {
	s.reads.Add(int64(len(qs)))
	if s.beforeRead != nil {
		s.beforeRead()
	}
	st, err := s.Store.LineStates(ctx, qs)
	if s.afterRead != nil {
		s.afterRead()
	}
	return st, err
}

func (s *pushStore) LineChanges(ctx context.Context, ready func(func() bool), fn func(queue.LinePush)) error {
	return s.Store.LineChanges(ctx, func(caughtUp func() bool) { ready(caughtUp); s.readies.Add(1) }, func(p queue.LinePush) {
		if ch := s.stall.Swap(nil); ch != nil {
			s.stalled <- struct{}{}
			<-*ch
		}
		if !s.mute.Load() {
			fn(p)
			s.heard.Add(1)
		}
	})
}

// pushed is a line of 40 waiters u00…u39 at positions 1000, 2000, … behind
// one holder (threshold 1), the instance under test (b.svc, on ps, with a
// worker and WatchLines running and held) and another instance on the
// same store that makes the changes elsewhere.
func pushed(t *testing.T, addr string) (b *testBundle, ps *pushStore, other *queue.Service, failed chan error) {
	t.Helper()
	cfg := queue.Config{Threshold: 1, AdmissionBatchSize: 1}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	st := redisstore.New(rdb, redisstore.Options{Prefix: testenv.UniqueID(t) + ":"})
	ps = &pushStore{Store: st, stalled: make(chan struct{}, 1)}
	b = setupWith(t, ps, cfg)
	queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	other = queue.New(st, b.keys, b.clk, nil, cfg)
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	failed = make(chan error, 16)
	go func() {
		defer close(done)
		b.svc.WatchLines(ctx, func(err error) {
			select {
			case failed <- err:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	b.check(t, "holder", 1)
	for i := range 40 {
		b.check(t, fmt.Sprintf("u%02d", i), int64(1000*(i+1)))
	}
	waitFor(t, "the subscription to hold", func() bool { return ps.readies.Load() > 0 })
	b.refresh(t, b.svc)
	return b, ps, other, failed
}

// waitFor polls cond every millisecond for up to 5 s of wall time (the
// injected clock does not move).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("5 s and still not: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// status polls uid at b.svc.
func (b *testBundle) status(t *testing.T, uid string) queue.View {
	t.Helper()
	v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: uid})
	if err != nil {
		t.Fatalf("Status(%s): %v", uid, err)
	}
	return v
}

// joinAhead joins n visitors through svc at positions from, from+1, …,
// from concurrently (a burst), and returns once all are in.
func joinAhead(t *testing.T, b *testBundle, svc *queue.Service, prefix string, from int64, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 10 {
				if _, err := svc.Check(b.ctx, b.ev, queue.Identity{UserID: fmt.Sprintf("%s%04d", prefix, i), Position: from + int64(i), Pass: true}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestJoinsAheadElsewhereReachMemoryAtOnce: a burst of 500 late arrivals
// (lower Tier 1 positions) joins ahead of remembered visitors through
// another instance, the instance's clock not moving: its answers from
// memory count every one of them as soon as they are heard, without reading
// the line again; joins behind everyone publish nothing.
func TestJoinsAheadElsewhereReachMemoryAtOnce(t *testing.T) {
	t.Parallel()
	b, ps, other, _ := pushed(t, testenv.Redis(t))
	if v := b.status(t, "u30"); v.PeopleAheadExact || v.PeopleAhead != 30 {
		t.Fatalf("u30 before: %+v, want 30 ahead from memory", v)
	}
	reads, heard := ps.reads.Load(), ps.heard.Load()
	joinAhead(t, b, other, "late", 30001, 500) // between u29 and u30
	waitFor(t, "500 joins heard", func() bool { return ps.heard.Load() >= heard+500 })
	for uid, want := range map[string]int64{"u30": 530, "u39": 539, "u29": 29, "u00": 0} {
		if v := b.status(t, uid); v.Status != queue.StatusQueued || v.PeopleAhead != want || v.PeopleAheadExact {
			t.Fatalf("%s after 500 joins ahead of it elsewhere: %+v, want %d ahead from memory", uid, v, want)
		}
	}
	if n := ps.reads.Load() - reads; n != 0 {
		t.Fatalf("the joins made the instance read the line %d times, want 0", n)
	}
	// Joins behind everyone are nobody's business: nothing published.
	heard = ps.heard.Load()
	for i := range 20 { // one after the other, each behind the last
		if _, err := other.Check(b.ctx, b.ev, queue.Identity{UserID: fmt.Sprintf("tail%02d", i), Position: int64(100_000 + i), Pass: true}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := ps.heard.Load() - heard; n != 0 {
		t.Fatalf("20 joins at the tail published %d messages, want 0", n)
	}
	if v := b.status(t, "u39"); v.PeopleAhead != 539 || v.PeopleAheadExact {
		t.Fatalf("u39 after joins behind it: %+v, want 539 ahead from memory", v)
	}
	// The next read brings the joins in from the log: not counted twice.
	b.clk.Advance(queue.SnapshotInterval + time.Millisecond)
	if v := b.status(t, "u30"); v.PeopleAhead != 530 || v.PeopleAheadExact {
		t.Fatalf("u30 after the next read: %+v, want 530 ahead from memory", v)
	}
}

// TestPushedJoinsRacingAReadAreCountedOnce: joins ahead land while a read
// is in flight, some before the script reads the log (the read has them,
// and so do the messages heard meanwhile) and some after (only the
// messages have them): each is counted exactly once.
func TestPushedJoinsRacingAReadAreCountedOnce(t *testing.T) {
	t.Parallel()
	b, ps, other, _ := pushed(t, testenv.Redis(t))
	if v := b.status(t, "u30"); v.PeopleAhead != 30 || v.PeopleAheadExact {
		t.Fatalf("u30 before: %+v, want 30 ahead from memory", v)
	}
	during := func(prefix string, from int64) func() {
		return func() {
			heard := ps.heard.Load()
			joinAhead(t, b, other, prefix, from, 10)
			waitFor(t, "10 joins heard", func() bool { return ps.heard.Load() >= heard+10 })
		}
	}
	ps.beforeRead, ps.afterRead = during("in", 30001), during("after", 30101)
	b.clk.Advance(queue.SnapshotInterval + time.Millisecond)
	v := b.status(t, "u30") // reads the line: the joins land around that read
	ps.beforeRead, ps.afterRead = nil, nil
	if v.PeopleAhead != 50 {
		t.Fatalf("u30 in the poll that read: %+v, want 50 ahead", v)
	}
	if v := b.status(t, "u30"); v.PeopleAhead != 50 || v.PeopleAheadExact {
		t.Fatalf("u30 after the read: %+v, want 50 ahead from memory", v)
	}
	b.clk.Advance(queue.SnapshotInterval + time.Millisecond)
	if v := b.status(t, "u30"); v.PeopleAhead != 50 || v.PeopleAheadExact {
		t.Fatalf("u30 after the next read: %+v, want 50 ahead from memory", v)
	}
}

// TestJoinsAheadWhileTheSubscriptionIsDownAreNotMissed: Redis drops the
// subscription (CLIENT KILL TYPE pubsub), 20 join ahead meanwhile and
// nobody hears them; once the subscription holds again, the instance's
// clock not moving, its answers count them.
func TestJoinsAheadWhileTheSubscriptionIsDownAreNotMissed(t *testing.T) {
	t.Parallel()
	own := testenv.NewOwnRedis(t) // the test kills its Pub/Sub clients
	b, ps, other, failed := pushed(t, own.Addr)
	if v := b.status(t, "u30"); v.PeopleAhead != 30 || v.PeopleAheadExact {
		t.Fatalf("u30 before: %+v, want 30 ahead from memory", v)
	}
	admin := redis.NewClient(&redis.Options{Addr: own.Addr})
	defer admin.Close()
	if err := admin.Do(b.ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failed:
	case <-time.After(5 * time.Second):
		t.Fatal("the dropped subscription was not noticed in 5 s")
	}
	joinAhead(t, b, other, "lost", 30001, 20)
	// Down or up again, no answer may miss them.
	for {
		v := b.status(t, "u30")
		if v.PeopleAhead != 50 {
			t.Fatalf("u30 after 20 joins ahead unheard (subscriptions held %d): %+v, want 50 ahead", ps.readies.Load(), v)
		}
		if !v.PeopleAheadExact {
			break // memory answers again
		}
		if ps.readies.Load() > 1 {
			waitFor(t, "an answer from memory again", func() bool { return !b.status(t, "u30").PeopleAheadExact })
		}
		time.Sleep(time.Millisecond)
	}
}

// TestJoinsAheadAcrossAClockStepAreCounted: the instance's clock steps
// back or forward after a read; joins ahead land and are heard. The step
// makes the read stale, so the next poll reads: the joins count once.
func TestJoinsAheadAcrossAClockStepAreCounted(t *testing.T) {
	t.Parallel()
	for i, step := range []time.Duration{-5 * time.Second, 5 * time.Second} {
		t.Run(step.String(), func(t *testing.T) {
			t.Parallel()
			b, ps, other, _ := pushed(t, testenv.Redis(t))
			if v := b.status(t, "u30"); v.PeopleAhead != 30 || v.PeopleAheadExact {
				t.Fatalf("u30 before: %+v, want 30 ahead from memory", v)
			}
			b.clk.Set(b.clk.Now().Add(step))
			heard := ps.heard.Load()
			joinAhead(t, b, other, fmt.Sprintf("s%d-", i), 30001, 20)
			waitFor(t, "20 joins heard", func() bool { return ps.heard.Load() >= heard+20 })
			for range 2 {
				if v := b.status(t, "u30"); v.PeopleAhead != 50 || v.PeopleAheadExact {
					t.Fatalf("u30 after the step and 20 joins ahead: %+v, want 50 ahead from memory", v)
				}
			}
		})
	}
}

// TestNearTheHeadIsAnsweredFromMemoryWhilePushesAreHeard: with the
// subscription holding, the head of the line is answered from memory too
// (an admission reaches it at once), and those let in elsewhere hear
// "active", with a token, as soon as the pass is heard, the clock not
// moving; the next in line keeps hearing "queued", never "active".
func TestNearTheHeadIsAnsweredFromMemoryWhilePushesAreHeard(t *testing.T) {
	t.Parallel()
	b, _, _, _ := pushed(t, testenv.Redis(t))
	for i := range 3 {
		if v := b.status(t, fmt.Sprintf("u%02d", i)); v.PeopleAhead != int64(i) || v.PeopleAheadExact {
			t.Fatalf("u%02d, %d from the head: %+v, want an answer from memory", i, i, v)
		}
	}
	b.admitElsewhere(t, 11, 10)
	for i := range 10 {
		uid := fmt.Sprintf("u%02d", i)
		waitFor(t, uid+" hears active", func() bool {
			v := b.status(t, uid)
			if v.Status == queue.StatusActive && v.EntryToken == "" {
				t.Fatalf("%s active without a token: %+v", uid, v)
			}
			return v.Status == queue.StatusActive
		})
	}
	if v := b.status(t, "u10"); v.Status != queue.StatusQueued || v.PeopleAhead != 0 {
		t.Fatalf("u10, not let in: %+v, want queued, 0 ahead", v)
	}
}

// TestSilentlyDeadSubscriptionKeepsQueuedWithinOneInterval: the
// subscription holds but hears nothing (a connection that died without a
// word), so memory answers the head of the line too and no push arrives.
// Everyone is let in elsewhere: "queued" may still be heard until the last
// read is one interval old, never after.
func TestSilentlyDeadSubscriptionKeepsQueuedWithinOneInterval(t *testing.T) {
	t.Parallel()
	b, ps, _, _ := pushed(t, testenv.Redis(t))
	ps.mute.Store(true)
	if v := b.status(t, "u00"); v.PeopleAhead != 0 || v.PeopleAheadExact {
		t.Fatalf("u00 at the head: %+v, want an answer from memory", v)
	}
	b.admitElsewhere(t, 100, 40)
	admittedAt := b.clk.Now()
	queued := 0
	for step := time.Duration(0); step <= 2*queue.SnapshotInterval; step += 25 * time.Millisecond {
		b.clk.Set(admittedAt.Add(step))
		for i := range 40 {
			v := b.status(t, fmt.Sprintf("u%02d", i))
			switch {
			case v.Status == queue.StatusQueued && step > queue.SnapshotInterval:
				t.Fatalf("u%02d let in %v ago hears %+v", i, step, v)
			case v.Status == queue.StatusQueued:
				queued++
			case v.Status == queue.StatusActive && v.EntryToken == "":
				t.Fatalf("u%02d active without a token: %+v", i, v)
			}
		}
	}
	if queued == 0 {
		t.Fatal("nobody heard queued within the interval: the test did not reach memory")
	}
}

// TestChangeSentButNotYetHeardIsNotMissed: Redis has sent the instance an
// admission (or a join ahead), but its subscriber has not handled it yet
// (taken off the socket, not yet handed on: a goroutine not scheduled on a
// loaded machine). A poll that comes meanwhile must not be answered from
// memory as if nothing happened: it waits for the subscriber, or asks the
// store.
func TestChangeSentButNotYetHeardIsNotMissed(t *testing.T) {
	t.Parallel()
	b, ps, other, _ := pushed(t, testenv.Redis(t))
	if v := b.status(t, "u30"); v.PeopleAhead != 30 || v.PeopleAheadExact {
		t.Fatalf("u30 before: %+v, want 30 ahead from memory", v)
	}
	for _, c := range []struct {
		what   string
		change func()
		want   int64
	}{
		{"an admission of 10 elsewhere", func() {
			b.admitElsewhere(t, 11, 10)
		}, 20},
		{"a join ahead elsewhere", func() {
			if _, err := other.Check(b.ctx, b.ev, queue.Identity{UserID: "late", Position: 30001, Pass: true}); err != nil {
				t.Fatal(err)
			}
		}, 21},
	} {
		release := make(chan struct{})
		ps.stall.Store(&release)
		c.change()
		<-ps.stalled
		if v := b.status(t, "u30"); v.PeopleAhead != c.want {
			close(release)
			t.Fatalf("after %s, sent but not yet heard: %+v, want %d ahead", c.what, v, c.want)
		}
		close(release)
		waitFor(t, "an answer from memory again", func() bool {
			v := b.status(t, "u30")
			if v.PeopleAhead != c.want {
				t.Fatalf("after %s, heard: %+v, want %d ahead", c.what, v, c.want)
			}
			return !v.PeopleAheadExact
		})
	}
}

// TestPushedJoinsOfALostCountDoNotLinger: joins ahead were heard and
// counted, then the line's change count is lost (an eviction or a DEL,
// the epoch stays) and starts again from 1. The joins heard under the old
// numbers must not be counted again after the read that finds the new
// count, however far the new count is from reaching their numbers.
func TestPushedJoinsOfALostCountDoNotLinger(t *testing.T) {
	t.Parallel()
	b, ps, other, _ := pushed(t, testenv.Redis(t))
	if v := b.status(t, "u30"); v.PeopleAhead != 30 || v.PeopleAheadExact {
		t.Fatalf("u30 before: %+v, want 30 ahead from memory", v)
	}
	heard := ps.heard.Load()
	joinAhead(t, b, other, "late", 30001, 20)
	waitFor(t, "20 joins heard", func() bool { return ps.heard.Load() >= heard+20 })
	if v := b.status(t, "u30"); v.PeopleAhead != 50 || v.PeopleAheadExact {
		t.Fatalf("u30 after 20 joins ahead: %+v, want 50 ahead from memory", v)
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	defer rdb.Close()
	keys, err := rdb.Keys(b.ctx, "*{"+b.ev+"}:line").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("the line key: %v, %v", keys, err)
	}
	tag := keys[0][:len(keys[0])-len(":line")]
	if n, err := rdb.Del(b.ctx, tag+":line", tag+":changes").Result(); err != nil || n != 2 {
		t.Fatalf("DEL the log = %d, %v", n, err)
	}
	// A join at the tail starts the new count (change 1).
	if _, err := other.Check(b.ctx, b.ev, queue.Identity{UserID: "tail", Position: 100_000, Pass: true}); err != nil {
		t.Fatal(err)
	}
	for step := range 3 {
		b.clk.Advance(queue.SnapshotInterval + time.Millisecond)
		if v := b.status(t, "u30"); v.PeopleAhead != 50 {
			t.Fatalf("u30, read %d after the count was lost: %+v, want 50 ahead", step+1, v)
		}
	}
	if v := b.status(t, "u30"); v.PeopleAhead != 50 || v.PeopleAheadExact {
		t.Fatalf("u30 at last: %+v, want 50 ahead from memory", v)
	}
}
