package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/redistrips"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
)

// instance is a second Service (another instance) on b's store and clock,
// with a worker, so that it answers queued polls from memory too.
func (b *testBundle) instance(cfg queue.Config) *queue.Service {
	svc := queue.New(b.store, b.keys, b.clk, nil, cfg)
	queue.NewWorker(svc, queue.WorkerConfig{}, nil)
	return svc
}

func (b *testBundle) refresh(t *testing.T, svcs ...*queue.Service) {
	t.Helper()
	for _, s := range svcs {
		if err := s.RefreshLines(b.ctx); err != nil {
			t.Fatalf("RefreshLines: %v", err)
		}
	}
}

// TestQueuedPollsCostFewRedisCommands counts the Redis commands of queued
// visitors' polls (check and status) once each instance has answered them
// from the store once: at most 0.2 per poll, the polls reading the line
// themselves when the last read is older than the snapshot interval, and
// every answer the exact place (nothing changed).
func TestQueuedPollsCostFewRedisCommands(t *testing.T) {
	t.Parallel()
	// On Redis: the test counts its commands.
	b, rdb, _ := setupRedis(t, &redis.Options{Addr: testenv.Redis(t)}, queue.Config{Threshold: 1, AdmissionBatchSize: 10})
	queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	const n = 300
	b.check(t, "holder", 1)
	for i := range n {
		b.check(t, fmt.Sprintf("u%03d", i), int64(2+i))
	}
	hook := &redistrips.Hook{}
	rdb.AddHook(hook)
	polls, fromMemory := 0, 0
	for round := range 50 {
		// No explicit read: the polls read the line when it is stale.
		for i := range n {
			id := queue.Identity{UserID: fmt.Sprintf("u%03d", i), Position: int64(2 + i)}
			var v queue.View
			var err error
			if i%2 == 0 {
				v, err = b.svc.Check(b.ctx, b.ev, id)
			} else {
				v, err = b.svc.Status(b.ctx, b.ev, id)
			}
			if err != nil || v.Status != queue.StatusQueued || v.PeopleAhead != int64(i) || v.QueueSize != n || v.CurrentUsers != 1 {
				t.Fatalf("round %d, u%03d: %+v, %v; want queued with %d ahead", round, i, v, err, i)
			}
			polls++
			if !v.PeopleAheadExact {
				fromMemory++
			}
		}
		b.clk.Advance(20 * time.Millisecond)
	}
	cmds := len(hook.Reset().Names())
	if per := float64(cmds) / float64(polls); per > 0.2 {
		t.Fatalf("%d polls sent %d Redis commands: %.3f per poll, want ≤ 0.2", polls, cmds, per)
	}
	// The first 2 × batch places ask the store: they may be let in soon.
	if want := polls - 50*20; fromMemory != want {
		t.Fatalf("%d of %d polls answered from memory, want %d", fromMemory, polls, want)
	}
	if got := b.svc.RememberedPlaces(); got != n {
		t.Fatalf("remembers %d places, want %d", got, n)
	}
}

// TestNobodyAdmittedHearsQueuedLongerThanOneInterval: everyone waiting is
// let in at once (a raised threshold, which the last read did not see):
// until the next read, memory may still say "queued", but never once the
// read is older than SnapshotInterval, and never after a read that saw it.
func TestNobodyAdmittedHearsQueuedLongerThanOneInterval(t *testing.T) {
	t.Parallel()
	b, _, _ := setupRedis(t, &redis.Options{Addr: testenv.Redis(t)}, queue.Config{Threshold: 1, AdmissionBatchSize: 1})
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.check(t, "holder", 1)
	for i := range 40 {
		b.check(t, fmt.Sprintf("u%02d", i), int64(2+i))
	}
	b.refresh(t, b.svc)
	poll := func(i int) queue.View {
		t.Helper()
		v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: fmt.Sprintf("u%02d", i)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := poll(30); v.Status != queue.StatusQueued || v.PeopleAheadExact {
		t.Fatalf("u30 before: %+v, want queued from memory", v)
	}
	// Everyone is let in: the threshold rises and one pass admits them all.
	b.admitElsewhere(t, 100, 40)
	admittedAt := b.clk.Now()
	_ = w
	// Within the interval memory may lag; once the read is older than
	// it, every poll goes to the store and hears "active".
	for step := time.Duration(0); step <= 2*queue.SnapshotInterval; step += 25 * time.Millisecond {
		b.clk.Set(admittedAt.Add(step))
		for i := 10; i < 40; i++ {
			v := poll(i)
			if v.Status == queue.StatusQueued && step > queue.SnapshotInterval {
				t.Fatalf("u%02d let in %v ago hears %+v", i, step, v)
			}
			if v.Status == queue.StatusActive && v.EntryToken == "" {
				t.Fatalf("u%02d active without a token: %+v", i, v)
			}
		}
	}
	// A read after the admission: everyone hears it at once.
	b.clk.Set(admittedAt)
	b.refresh(t, b.svc)
	for i := range 40 {
		if v := poll(i); v.Status != queue.StatusActive {
			t.Fatalf("u%02d after a read that saw the admission: %+v", i, v)
		}
	}
}

// TestLeaverViaAnotherInstanceIsNotQueuedHere: a visitor this instance
// remembers leaves through another; once this instance's next read is in
// (at most one interval), or its last one is older than the interval, the
// visitor is not queued here: status and check with the pass are done (no
// slot taken), status without it is ErrNotQueued.
func TestLeaverViaAnotherInstanceIsNotQueuedHere(t *testing.T) {
	t.Parallel()
	cfg := queue.Config{Threshold: 1, AdmissionBatchSize: 1}
	b, _, _ := setupRedis(t, &redis.Options{Addr: testenv.Redis(t)}, cfg)
	queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	other := b.instance(cfg)
	b.check(t, "holder", 1)
	for i := range 10 {
		b.check(t, fmt.Sprintf("u%d", i), int64(2+i))
	}
	b.refresh(t, b.svc)
	leaver := queue.Identity{UserID: "u7", Position: 9, Pass: true}
	if v, err := b.svc.Check(b.ctx, b.ev, leaver); err != nil || v.PeopleAheadExact || v.PeopleAhead != 7 {
		t.Fatalf("u7 before leaving: %+v, %v; want 7 ahead from memory", v, err)
	}
	if removed, err := other.Leave(b.ctx, b.ev, leaver); err != nil || !removed {
		t.Fatalf("Leave on the other instance = %v, %v", removed, err)
	}
	for _, read := range []bool{false, true} {
		b.clk.Advance(queue.SnapshotInterval + time.Millisecond)
		if read {
			b.refresh(t, b.svc)
		}
		if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "u7", Pass: true}); err != nil || v.Status != queue.StatusDone || v.Done != queue.DoneLeft {
			t.Fatalf("status of the leaver (read %v): %+v, %v; want done", read, v, err)
		}
		if _, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "u7"}); !errors.Is(err, queue.ErrNotQueued) {
			t.Fatalf("status of the leaver without the pass (read %v): %v, want ErrNotQueued", read, err)
		}
		if v, err := b.svc.Check(b.ctx, b.ev, leaver); err != nil || v.Status != queue.StatusDone || v.Done != queue.DoneLeft {
			t.Fatalf("check of the leaver (read %v): %+v, %v; want done", read, v, err)
		}
	}
	// Behind the leaver, one fewer ahead, from memory.
	if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "u9"}); err != nil || v.PeopleAheadExact || v.PeopleAhead != 8 {
		t.Fatalf("u9 after the leave: %+v, %v; want 8 ahead from memory", v, err)
	}
}

// TestLostRedisSendsPollsToTheStore: after a FLUSHALL the next read finds
// no epoch (or another one), and until the recovery window is over every
// poll is the store's step, which finds the loss and queues the visitor
// again.
func TestLostRedisSendsPollsToTheStore(t *testing.T) {
	t.Parallel()
	// A database of its own: the test flushes it.
	b, rdb, _ := setupRedis(t, &redis.Options{Addr: testenv.Redis(t), DB: 11}, queue.Config{Threshold: 1, AdmissionBatchSize: 1})
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
	b.clk.Advance(10 * time.Millisecond)
	b.refresh(t, b.svc)
	if b.svc.RememberedPlaces() != 0 {
		t.Fatalf("still remembers %d places after the loss", b.svc.RememberedPlaces())
	}
	v := b.check(t, "u8", 10)
	if !v.PeopleAheadExact || v.RecoveringUntil.IsZero() || v.Status != queue.StatusQueued {
		t.Fatalf("u8 after the loss: %+v, want the store's answer in a recovery window", v)
	}
	// During the window every poll is the store's, read or not.
	for range 3 {
		b.clk.Advance(100 * time.Millisecond)
		b.refresh(t, b.svc)
		if v := b.check(t, "u8", 10); !v.PeopleAheadExact || v.RecoveringUntil.IsZero() {
			t.Fatalf("u8 in the window: %+v", v)
		}
	}
}

// TestPeopleAheadFromMemoryStaysWithinBound drives a line through random
// late joins ahead (lower Tier 1 positions arriving late), joins behind,
// leaves ahead and behind, sweeps of silent visitors and admissions, with
// the line read every 200 ms and polls every 50 ms; every answer from
// memory is checked against the exact rank read from Redis at that
// moment: within max(5, 2 %), and nobody let in more than one interval
// ago hears "queued".
func TestPeopleAheadFromMemoryStaysWithinBound(t *testing.T) {
	t.Parallel()
	cfg := queue.Config{Threshold: 5, AdmissionBatchSize: 3, SeenTTL: 30 * time.Second, ActiveTTL: time.Hour, ActiveIdle: time.Hour}
	b, rdb, _ := setupRedis(t, &redis.Options{Addr: testenv.Redis(t)}, cfg)
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	other := b.instance(cfg)
	rng := rand.New(rand.NewPCG(17, 2026))
	type visitor struct {
		id         queue.Identity
		silent     bool
		admittedAt time.Time
		gone       bool
	}
	var vs []*visitor
	join := func(svc *queue.Service, pos int64) {
		t.Helper()
		v := &visitor{id: queue.Identity{UserID: fmt.Sprintf("p%05d", pos), Position: pos, Pass: true}}
		if _, err := svc.Check(b.ctx, b.ev, v.id); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	for i := range 300 {
		join(b.svc, int64(1000+10*i))
	}
	key := func(suffix string) string {
		t.Helper()
		keys, err := rdb.Keys(b.ctx, "*{"+b.ev+"}:"+suffix).Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("the %s key: %v, %v", suffix, keys, err)
		}
		return keys[0]
	}
	queueKey, activeKey := key("queue"), key("active")
	memory, checked := 0, 0
	for step := range 400 {
		now := b.clk.Now()
		switch r := rng.IntN(100); {
		case r < 10: // a late arrival ahead of many, through the other instance
			join(other, int64(1000+rng.IntN(3000)*10+5))
		case r < 15:
			join(other, int64(5000+step*10+7)) // behind
		case r < 25: // someone leaves, through either instance
			v := vs[rng.IntN(len(vs))]
			svc := b.svc
			if rng.IntN(2) == 0 {
				svc = other
			}
			if _, err := svc.Leave(b.ctx, b.ev, v.id); err != nil {
				t.Fatal(err)
			}
			v.gone = true
		case r < 28: // someone stops polling, to be swept
			vs[rng.IntN(len(vs))].silent = true
		}
		if step%20 == 0 { // a second: free some slots and admit
			members, err := rdb.ZRange(b.ctx, activeKey, 0, 1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range members {
				if _, err := b.svc.Leave(b.ctx, b.ev, queue.Identity{UserID: m, Pass: true}); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := rdb.ZRange(b.ctx, activeKey, 0, -1).Result()
			if _, err := w.AdmitOnce(b.ctx); err != nil {
				t.Fatal(err)
			}
			after, _ := rdb.ZRange(b.ctx, activeKey, 0, -1).Result()
			in := map[string]bool{}
			for _, m := range before {
				in[m] = true
			}
			for _, m := range after {
				if !in[m] {
					for _, v := range vs {
						if v.id.UserID == m {
							v.admittedAt = now
						}
					}
				}
			}
		}
		if step%200 == 100 {
			if _, err := w.CleanupOnce(b.ctx); err != nil {
				t.Fatal(err)
			}
		}
		if step%4 == 0 {
			b.refresh(t, b.svc, other)
		}
		for _, v := range vs {
			if v.silent || v.gone || rng.IntN(3) != 0 {
				continue
			}
			got, err := b.svc.Status(b.ctx, b.ev, v.id)
			if errors.Is(err, queue.ErrNotQueued) {
				continue // swept
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != queue.StatusQueued {
				continue
			}
			if !v.admittedAt.IsZero() && now.Sub(v.admittedAt) > queue.SnapshotInterval {
				t.Fatalf("step %d: %s let in at %v hears queued at %v", step, v.id.UserID, v.admittedAt, now)
			}
			if got.PeopleAheadExact {
				continue
			}
			memory++
			rank, err := rdb.ZRank(b.ctx, queueKey, v.id.UserID).Result()
			if err != nil {
				if v.admittedAt.IsZero() {
					t.Fatalf("step %d: %s answered from memory, not in line: %v", step, v.id.UserID, err)
				}
				continue
			}
			checked++
			if diff := max(got.PeopleAhead-rank, rank-got.PeopleAhead); diff > max(5, rank/50) {
				t.Fatalf("step %d: %s hears %d ahead, %d are", step, v.id.UserID, got.PeopleAhead, rank)
			}
		}
		b.clk.Advance(50 * time.Millisecond)
	}
	if memory < 1000 || checked < 1000 {
		t.Fatalf("only %d answers from memory (%d checked against Redis): the test proved little", memory, checked)
	}
}

// TestPollsFromMemoryKeepTheirHeartbeats: an answer from memory still puts
// the visitor's heartbeat into the instance's batch (once per tenth of
// SeenTTL, and the sweep waits that much longer), so the stale sweep keeps
// everyone answered from memory and drops only the silent.
func TestPollsFromMemoryKeepTheirHeartbeats(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1, SeenTTL: time.Minute, ActiveTTL: time.Hour, ActiveIdle: time.Hour, AdmissionBatchSize: 1})
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	uid := func(i int) string { return fmt.Sprintf("u%02d", i) }
	b.check(t, "holder", 1)
	for i := range 10 {
		b.check(t, uid(i), int64(2+i))
	}
	b.check(t, "silent", 100)
	b.admitOnce(t, w, 0)
	fromMemory := 0
	for range 40 { // 80 s of polls every 2 s, the line read before each
		b.clk.Advance(2 * time.Second)
		b.refresh(t, b.svc)
		for i := range 10 {
			v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: uid(i)})
			if err != nil || v.Status != queue.StatusQueued {
				t.Fatalf("%s: %+v, %v", uid(i), v, err)
			}
			if !v.PeopleAheadExact {
				fromMemory++
			}
		}
		b.admitOnce(t, w, 0) // writes the batch
	}
	if fromMemory < 40*8 {
		t.Fatalf("%d answers from memory, want the 8 places past the margin at every round", fromMemory)
	}
	hb := b.lineScores(t)
	for i := range 10 {
		// Written every tenth of SeenTTL (6 s), kept to the 5 s tick.
		if age := b.clk.Now().Sub(hb[uid(i)]); age > 6*time.Second+queue.HeartbeatTick+2*time.Second {
			t.Fatalf("%s's heartbeat is %v old", uid(i), age)
		}
	}
	if removed, err := w.CleanupOnce(b.ctx); err != nil || removed != 1 {
		t.Fatalf("CleanupOnce = %d, %v; want silent alone", removed, err)
	}
	if hb := b.lineScores(t); len(hb) != 10 {
		t.Fatalf("line after the sweep: %v", hb)
	}
}

// TestAdmissionElsewhereReachesMemoryAtOnce: instance A answers u30 from
// memory; instance B's admission pass lets 10 in. Without A's clock moving
// (its last read is fresh), A's next polls must report the new exact rank
// within a few ms: the pass's published change makes A read the line
// again, instead of answering from a read up to SnapshotInterval old.
func TestAdmissionElsewhereReachesMemoryAtOnce(t *testing.T) {
	t.Parallel()
	b, _, _ := setupRedis(t, &redis.Options{Addr: testenv.Redis(t)}, queue.Config{Threshold: 1, AdmissionBatchSize: 1})
	queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.svc.WatchLines(ctx, func(err error) { t.Errorf("subscription failed: %v", err) })
	}()
	defer func() { cancel(); <-done }()
	b.check(t, "holder", 1)
	for i := range 40 {
		b.check(t, fmt.Sprintf("u%02d", i), int64(2+i))
	}
	if err := b.svc.SetThreshold(b.ctx, b.ev, 11); err != nil {
		t.Fatal(err)
	}
	poll := func() queue.View {
		t.Helper()
		v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "u30"})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Until the subscription holds, memory answers nobody.
	for deadline := time.Now().Add(5 * time.Second); ; {
		b.refresh(t, b.svc)
		if v := poll(); !v.PeopleAheadExact {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer from memory 5 s after WatchLines began")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v := poll(); v.Status != queue.StatusQueued || v.PeopleAhead != 30 || v.PeopleAheadExact {
		t.Fatalf("u30 before: %+v, want 30 ahead from memory", v)
	}
	q := queue.New(b.store, b.keys, b.clk, nil, queue.Config{Threshold: 1, AdmissionBatchSize: 10})
	if n, err := queue.NewWorker(q, queue.WorkerConfig{}, nil).AdmitOnce(b.ctx); err != nil || n != 10 {
		t.Fatalf("B's AdmitOnce = %d, %v; want 10", n, err)
	}
	start := time.Now()
	for {
		v := poll()
		if v.Status == queue.StatusQueued && v.PeopleAhead == 20 {
			t.Logf("A reported the new rank %v after B's pass (from memory: %v)", time.Since(start), !v.PeopleAheadExact)
			break
		}
		if v.Status != queue.StatusQueued || v.PeopleAhead != 30 {
			t.Fatalf("u30 after B's pass: %+v, want queued with 30 (stale) or 20 ahead", v)
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("2 s after B's pass, A still says %d ahead (clock not advanced)", v.PeopleAhead)
		}
		time.Sleep(time.Millisecond)
	}
}

// admitElsewhere raises the event's threshold to threshold and lets in
// everyone it allows through another instance's admission pass (batch
// 100), which must admit want.
func (b *testBundle) admitElsewhere(t *testing.T, threshold int64, want int) {
	t.Helper()
	if err := b.svc.SetThreshold(b.ctx, b.ev, threshold); err != nil {
		t.Fatal(err)
	}
	q := queue.New(b.store, b.keys, b.clk, nil, queue.Config{Threshold: 1, AdmissionBatchSize: 100})
	if n, err := queue.NewWorker(q, queue.WorkerConfig{}, nil).AdmitOnce(b.ctx); err != nil || n != want {
		t.Fatalf("the other instance's pass = %d, %v; want %d let in", n, err, want)
	}
}
