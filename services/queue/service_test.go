package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/memstore"
	"github.com/vwr-go/vwr/services/queue/redisstore"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// recorder is a Notifier and an Observer that keeps what it heard.
type recorder struct {
	mu         sync.Mutex
	admissions []queue.Admission
	admitted   map[string]int
	scripts    map[string]int
	maxActive  int64
}

func (r *recorder) Admitted(a queue.Admission) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.admissions = append(r.admissions, a)
}

type observer struct{ *recorder }

func (o observer) ScriptDone(name string, _ time.Duration, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.scripts[name]++
}

func (o observer) Admitted(ev string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.admitted[ev] += n
}

func (o observer) QueueDepth(_ string, _, active int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.maxActive = max(o.maxActive, active)
}

func (r *recorder) users() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.admissions))
	for i, a := range r.admissions {
		out[i] = a.UserID
	}
	return out
}

type testBundle struct {
	svc   *queue.Service
	clk   *clock.Manual
	rec   *recorder
	keys  *token.KeyRing
	store queue.Store
	// mem is store when the bundle runs on the in-memory store (setup):
	// the domain's tests need no Redis. Its claims and leases lapse on
	// the wall clock, as Redis' do.
	mem *memstore.Store
	ev  string
	ctx context.Context
}

// setup is a bundle on memstore, which passes the Redis store's
// conformance suite (storetest).
func setup(t *testing.T, cfg queue.Config) *testBundle {
	t.Helper()
	mem := memstore.New(nil)
	b := setupWith(t, mem, cfg)
	b.mem = mem
	return b
}

// setupRedis is a bundle on the Redis store over opts, for the tests of
// what only Redis shows (round trips, an unreachable server).
func setupRedis(t *testing.T, opts *redis.Options, cfg queue.Config) (*testBundle, *redis.Client, *redisstore.Store) {
	t.Helper()
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	store := redisstore.New(rdb, redisstore.Options{Prefix: testenv.UniqueID(t) + ":"})
	return setupWith(t, store, cfg), rdb, store
}

func setupWith(t *testing.T, store queue.Store, cfg queue.Config) *testBundle {
	t.Helper()
	keys, err := token.NewKeyRing("", []byte(strings.Repeat("s", 32)))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(t0)
	rec := &recorder{admitted: map[string]int{}, scripts: map[string]int{}}
	svc := queue.New(store, keys, clk, rec, cfg)
	svc.SetObserver(observer{rec})
	return &testBundle{svc: svc, clk: clk, rec: rec, keys: keys, store: store, ev: testenv.UniqueID(t), ctx: context.Background()}
}

// slotFreedForB leaves an event of threshold 1 with b waiting at the head
// of the line and the slot free: a takes the slot directly and leaves, so
// only a worker pass can let b in.
func (b *testBundle) slotFreedForB(t *testing.T) {
	t.Helper()
	b.check(t, "a", 1)
	b.check(t, "b", 2)
	if _, err := b.svc.Leave(b.ctx, b.ev, queue.Identity{UserID: "a"}); err != nil {
		t.Fatalf("Leave(a): %v", err)
	}
}

// leave removes uid, failing the test unless it was queued or active.
func (b *testBundle) leave(t *testing.T, uid string) {
	t.Helper()
	if removed, err := b.svc.Leave(b.ctx, b.ev, queue.Identity{UserID: uid}); err != nil || !removed {
		t.Fatalf("Leave(%s) = %v, %v; want removed", uid, removed, err)
	}
}

// admitOnce runs one admission pass of w and fails the test on an error or
// unless it admitted want users.
func (b *testBundle) admitOnce(t *testing.T, w *queue.Worker, want int) {
	t.Helper()
	if n, err := w.AdmitOnce(b.ctx); err != nil || n != want {
		t.Fatalf("AdmitOnce = %d, %v; want %d admitted", n, err, want)
	}
}

func (b *testBundle) check(t *testing.T, uid string, pos int64) queue.View {
	t.Helper()
	v, err := b.svc.Check(b.ctx, b.ev, queue.Identity{UserID: uid, Position: pos})
	if err != nil {
		t.Fatalf("Check(%s): %v", uid, err)
	}
	return v
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	got := queue.Config{}.WithDefaults()
	want := queue.Config{Threshold: 1000, ActiveTTL: 600 * time.Second, SeenTTL: 600 * time.Second, AdmissionBatchSize: 100,
		EntryTokenTTL: 20 * time.Second, RecoveryWindow: 25 * time.Second, ActiveIdle: 60 * time.Second}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if kept := (queue.Config{Threshold: 7}).WithDefaults(); kept.Threshold != 7 {
		t.Fatalf("WithDefaults overwrote Threshold: %+v", kept)
	}
	wc := queue.WorkerConfig{}.WithDefaults()
	if wc.AdmissionInterval != time.Second || wc.StaleCleanupInterval != 30*time.Second {
		t.Fatalf("worker defaults %+v", wc)
	}
}

func TestEstimateWait(t *testing.T) {
	t.Parallel()
	cases := []struct {
		position, admitted int64
		span               time.Duration
		want               int
	}{
		{0, 100, time.Minute, 0},
		{1, 0, time.Minute, 5},       // nobody let in for a minute: max(1/50, 5)
		{1000, 0, time.Minute, 20},   // 1000/50
		{6, 3, time.Minute, 120},     // three a minute is slow, not unknown
		{1000, 9, time.Minute, 6667}, // nine a minute
		{100, 60, time.Minute, 100},  // one per second
		{100, 120, time.Minute, 50},
		{7, 60, time.Minute, 7},
		{1, 600, time.Minute, 1},         // rounds up
		{100, 60, 10 * time.Second, 17},  // 60 in the last 10 s: 6 per second
		{300, 100, 20 * time.Second, 60}, // 5 per second
		{301, 100, 20 * time.Second, 61}, // rounds up
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d_after_%d_in_%s", c.position, c.admitted, c.span), func(t *testing.T) {
			t.Parallel()
			if got := queue.EstimateWait(c.position, c.admitted, c.span); got != c.want {
				t.Fatalf("EstimateWait(%d, %d, %s) = %d, want %d", c.position, c.admitted, c.span, got, c.want)
			}
		})
	}
}

// TestEstimateQueued: with a free slot for everyone up to the user, the
// worker's next pass lets them in, whatever the last minute's rate was.
func TestEstimateQueued(t *testing.T) {
	t.Parallel()
	now := time.Now()
	slow := queue.Snapshot{Threshold: 50, ActiveCount: 44, AdmittedLastMinute: 3, RateSince: now.Add(-time.Minute)}
	for _, c := range []struct {
		position int64
		want     int
	}{{5, 1}, {6, 1}, {7, 140}} {
		if got := queue.EstimateQueued(c.position, slow, now); got != c.want {
			t.Errorf("6 free slots, 3 let in a minute: position %d waits %d s, want %d", c.position, got, c.want)
		}
	}
}

// TestEstimateUsesTheRateSpan: 20 admissions in a sale 10 s old are 2 per
// second, not 20 per minute; the 30th in line hears 15 s, not 90 s.
func TestEstimateUsesTheRateSpan(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 20})
	for i := 1; i <= 20; i++ {
		if v := b.check(t, fmt.Sprintf("u%d", i), int64(i)); v.Status != queue.StatusActive {
			t.Fatalf("u%d: %+v", i, v)
		}
	}
	b.clk.Advance(10 * time.Second)
	var v queue.View
	for i := 1; i <= 30; i++ {
		v = b.check(t, fmt.Sprintf("q%d", i), int64(100+i))
	}
	if v.Position != 30 || v.EstimatedWait != 15 {
		t.Fatalf("q30: position %d, estimate %d s; want 30 and 15 s", v.Position, v.EstimatedWait)
	}
}

func TestRateSpan(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		since time.Time
		want  time.Duration
	}{
		{time.Time{}, queue.RateWindow},                // nobody admitted lately
		{now.Add(-20 * time.Second), 20 * time.Second}, // the sale opened 20 s ago
		{now.Add(-time.Second), queue.MinRateSpan},     // a first burst
		{now.Add(-queue.RateWindow), queue.RateWindow},
	} {
		if got := queue.RateSpan(now, c.since); got != c.want {
			t.Errorf("RateSpan(since %v) = %v, want %v", now.Sub(c.since), got, c.want)
		}
	}
}

func TestNextPoll(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status   queue.Status
		position int64
		want     int
	}{
		{queue.StatusActive, 0, 3}, {queue.StatusQueued, 1, 1}, {queue.StatusQueued, 1000, 1},
		{queue.StatusQueued, 1001, 5}, {queue.StatusQueued, 5000, 5}, {queue.StatusQueued, 10000, 10},
		{queue.StatusQueued, 100000, 30}, {queue.StatusQueued, 100001, 60},
	}
	for _, c := range cases {
		if got := queue.NextPoll(c.status, c.position); got != c.want {
			t.Errorf("NextPoll(%s, %d) = %d, want %d", c.status, c.position, got, c.want)
		}
	}
}

func TestCheckEntersAndQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 2})

	first := b.check(t, "alice", 10)
	if first.Status != queue.StatusActive || first.NextPoll != 3 || first.CurrentUsers != 1 || first.Threshold != 2 {
		t.Fatalf("alice: %+v", first)
	}
	wantExp := t0.Add(queue.DefaultActiveTTL)
	if !first.ExpiresAt.Equal(wantExp) {
		t.Fatalf("expiry %v, want %v", first.ExpiresAt, wantExp)
	}
	ent, err := b.keys.VerifyEntry(first.EntryToken, b.ev, t0)
	// The token is short (renewed by polling), and names the slot's end.
	if err != nil || ent.UserID != "alice" || !ent.ExpiresAt.Equal(t0.Add(queue.DefaultEntryTokenTTL)) ||
		!ent.SlotEndsAt.Equal(wantExp) || ent.ID == "" {
		t.Fatalf("entry token: %+v, %v", ent, err)
	}
	if _, err := b.keys.VerifyEntry(first.EntryToken, "other-event", t0); !errors.Is(err, token.ErrWrongEvent) {
		t.Fatalf("token passed for another event: %v", err)
	}

	// Polling later renews the token, never moves the slot's end, and
	// notifies nobody.
	var again queue.View
	for range 10 {
		b.clk.Advance(30 * time.Second)
		again = b.check(t, "alice", 10)
	}
	ent2, err := b.keys.VerifyEntry(again.EntryToken, b.ev, b.clk.Now())
	if err != nil || !ent2.SlotEndsAt.Equal(wantExp) || !again.ExpiresAt.Equal(wantExp) ||
		!ent2.ExpiresAt.Equal(b.clk.Now().Add(queue.DefaultEntryTokenTTL)) {
		t.Fatalf("re-check moved expiry: %+v, %v", ent2, err)
	}
	if got := b.rec.users(); fmt.Sprint(got) != "[alice]" {
		t.Fatalf("notified %v, want [alice] once", got)
	}
	if a := b.rec.admissions[0]; a.EventID != b.ev || a.EntryJTI != ent.ID || !a.ExpiresAt.Equal(wantExp) || !a.AdmittedAt.Equal(t0) {
		t.Fatalf("admission %+v", a)
	}

	b.check(t, "bob", 11)
	for i, uid := range []string{"p3", "p1", "p2"} {
		b.check(t, uid, int64([]int{3, 1, 2}[i]))
	}
	v := b.check(t, "p2", 2)
	// One admission (bob's) in the last minute, just now: one per 5 s at
	// least (MinRateSpan), so the second in line waits 10 s.
	want := queue.View{EventID: b.ev, Status: queue.StatusQueued, Position: 2, PeopleAhead: 1, PeopleBehind: 1,
		QueueSize: 3, EstimatedWait: 10, NextPoll: 1, CurrentUsers: 2, Threshold: 2, PeopleAheadExact: true}
	if v != want {
		t.Fatalf("p2:\n got %+v\nwant %+v", v, want)
	}
	if b.rec.admitted[b.ev] != 2 || b.rec.scripts["check"] != 16 {
		t.Fatalf("observer: admitted %v, scripts %v", b.rec.admitted, b.rec.scripts)
	}
}

func TestStatusHeartbeatLeave(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1})
	if _, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "ghost"}); !errors.Is(err, queue.ErrNotQueued) {
		t.Fatalf("unknown user: %v, want ErrNotQueued", err)
	}
	b.check(t, "a", 0)
	b.check(t, "b", 0)
	v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "b"})
	if err != nil || v.Status != queue.StatusQueued || v.Position != 1 {
		t.Fatalf("status b: %+v, %v", v, err)
	}
	v, err = b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "a"})
	if err != nil || v.Status != queue.StatusActive || v.EntryToken == "" {
		t.Fatalf("heartbeat a: %+v, %v", v, err)
	}
	removed, err := b.svc.Leave(b.ctx, b.ev, queue.Identity{UserID: "a"})
	if err != nil || !removed {
		t.Fatalf("leave a: %v, %v", removed, err)
	}
	if removed, err := b.svc.Leave(b.ctx, b.ev, queue.Identity{UserID: "a"}); err != nil || removed {
		t.Fatalf("second leave = %v, %v; want nothing removed", removed, err)
	}
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	if n, err := w.AdmitOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("AdmitOnce = %d, %v; want b admitted into the freed slot", n, err)
	}
	if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "b"}); err != nil || v.Status != queue.StatusActive {
		t.Fatalf("b after admission: %+v, %v", v, err)
	}
}

// TestInvalidInputWritesNothing sends bad ids and thresholds to every method
// and checks both the error and that no key was written.
func TestInvalidInputWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	long := strings.Repeat("x", 65)
	badEvents := []string{"", "a b", "{x}", "x:y", long, "é"}
	badUsers := []string{"", " a", "a ", "a\nb", "a\x00b", "\xff", strings.Repeat("u", 257)}
	type call struct {
		name string
		run  func() error
		want error
	}
	var calls []call
	for _, bad := range badEvents {
		calls = append(calls,
			call{"check event " + bad, func() error { _, err := b.svc.Check(b.ctx, bad, queue.Identity{UserID: "u"}); return err }, queue.ErrInvalidEvent},
			call{"status event " + bad, func() error { _, err := b.svc.Status(b.ctx, bad, queue.Identity{UserID: "u"}); return err }, queue.ErrInvalidEvent},
			call{"threshold event " + bad, func() error { return b.svc.SetThreshold(b.ctx, bad, 5) }, queue.ErrInvalidEvent},
			call{"stats event " + bad, func() error { _, err := b.svc.Stats(b.ctx, bad); return err }, queue.ErrInvalidEvent},
		)
	}
	for _, bad := range badUsers {
		calls = append(calls,
			call{"check user " + bad, func() error { _, err := b.svc.Check(b.ctx, b.ev, queue.Identity{UserID: bad}); return err }, queue.ErrInvalidUser},
			call{"status user " + bad, func() error { _, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: bad}); return err }, queue.ErrInvalidUser},
			call{"leave user " + bad, func() error { _, err := b.svc.Leave(b.ctx, b.ev, queue.Identity{UserID: bad}); return err }, queue.ErrInvalidUser},
		)
	}
	for _, n := range []int64{-1, 0, 1_000_001} {
		calls = append(calls, call{fmt.Sprint("threshold ", n), func() error { return b.svc.SetThreshold(b.ctx, b.ev, n) }, queue.ErrInvalidThreshold})
	}
	calls = append(calls, call{"ranking period", func() error { _, err := b.svc.Ranking(b.ctx, "yearly", 10); return err }, queue.ErrInvalidPeriod})
	for _, c := range calls {
		if err := c.run(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if !b.mem.Empty() {
		t.Fatal("rejected calls wrote to the store")
	}
	for _, n := range []int64{1, 1_000_000} {
		if err := b.svc.SetThreshold(b.ctx, b.ev, n); err != nil {
			t.Fatalf("SetThreshold(%d): %v", n, err)
		}
	}
}

// TestStoreOutageIsUnavailable points the service at a port nobody listens on.
func TestStoreOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	b, _, _ := setupRedis(t, &redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), MaxRetries: -1, DialTimeout: 200 * time.Millisecond}, queue.Config{})
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	calls := map[string]func() error{
		"check":     func() error { _, err := b.svc.Check(b.ctx, b.ev, queue.Identity{UserID: "u"}); return err },
		"status":    func() error { _, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "u"}); return err },
		"leave":     func() error { _, err := b.svc.Leave(b.ctx, b.ev, queue.Identity{UserID: "u"}); return err },
		"threshold": func() error { return b.svc.SetThreshold(b.ctx, b.ev, 3) },
		"stats":     func() error { _, err := b.svc.Stats(b.ctx, b.ev); return err },
		"ranking":   func() error { _, err := b.svc.Ranking(b.ctx, queue.PeriodDaily, 10); return err },
		"ping":      func() error { return b.svc.Ping(b.ctx) },
		"admit":     func() error { _, err := w.AdmitOnce(b.ctx); return err },
		"cleanup":   func() error { _, err := w.CleanupOnce(b.ctx); return err },
	}
	for name, f := range calls {
		if err := f(); !errors.Is(err, queue.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", name, err)
		}
	}
}

func TestStatsAndRanking(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1})
	b.check(t, "a", 1)
	b.clk.Advance(10 * time.Second)
	b.check(t, "b", 2)
	b.check(t, "c", 3)
	heard := b.clk.Now()
	b.clk.Advance(20 * time.Second)
	// The oldest heartbeat is what the last stale sweep kept, to its tick;
	// the admission pass that finds the line schedules its sweep.
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.admitOnce(t, w, 0)
	if n, err := w.CleanupOnce(b.ctx); err != nil || n != 0 {
		t.Fatalf("CleanupOnce = %d, %v", n, err)
	}
	st, err := b.svc.Stats(b.ctx, b.ev)
	// One admission in the 30 s since the first: the line of 2 clears in 60 s.
	want := queue.Stats{EventID: b.ev, QueueSize: 2, CurrentUsers: 1, Threshold: 1, AdmittedLastMinute: 1,
		OldestHeartbeatAge: b.clk.Now().Sub(heard.Truncate(queue.HeartbeatTick)), EstimatedClearAfter: 60}
	if err != nil || st != want {
		t.Fatalf("stats:\n got %+v, %v\nwant %+v", st, err, want)
	}
	if err := b.svc.SetThreshold(b.ctx, b.ev, 3); err != nil {
		t.Fatal(err)
	}
	if n, err := w.AdmitOnce(b.ctx); err != nil || n != 2 {
		t.Fatalf("AdmitOnce = %d, %v", n, err)
	}
	for _, c := range []struct {
		period string
		limit  int
	}{{queue.PeriodDaily, 10}, {queue.PeriodWeekly, 0}, {queue.PeriodMonthly, 1000}} {
		r, err := b.svc.Ranking(b.ctx, c.period, c.limit)
		if err != nil || len(r) != 1 || r[0] != (queue.RankEntry{EventID: b.ev, Admissions: 3}) {
			t.Fatalf("Ranking(%s, %d) = %+v, %v", c.period, c.limit, r, err)
		}
	}
	if err := b.svc.Ping(b.ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWorkersAdmitInPositionOrder lets two workers race over one line of
// shuffled Tier 1 positions: admissions come in position order, the
// threshold is never exceeded and everyone is admitted exactly once.
func TestWorkersAdmitInPositionOrder(t *testing.T) {
	t.Parallel()
	const threshold, users = 5, 60
	b := setup(t, queue.Config{Threshold: threshold, AdmissionBatchSize: 3, ActiveTTL: time.Minute})
	var want []string
	for i := 0; i < threshold; i++ {
		b.check(t, fmt.Sprint("early", i), 0) // fill the slots directly
		want = append(want, fmt.Sprint("early", i))
	}
	positions := rand.Perm(users)
	var wg sync.WaitGroup
	for _, p := range positions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v := b.check(t, fmt.Sprintf("p%03d", p+1), int64(p+1)); v.Status != queue.StatusQueued {
				t.Errorf("p%d: %+v", p+1, v)
			}
		}()
	}
	wg.Wait()
	for p := 1; p <= users; p++ {
		want = append(want, fmt.Sprintf("p%03d", p))
	}

	workers := []*queue.Worker{queue.NewWorker(b.svc, queue.WorkerConfig{}, nil), queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)}
	for round := 0; len(b.rec.users()) < len(want) && round < 200; round++ {
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := w.AdmitOnce(b.ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		st, err := b.svc.Stats(b.ctx, b.ev)
		if err != nil || st.CurrentUsers > threshold {
			t.Fatalf("round %d: %+v, %v", round, st, err)
		}
		b.clk.Advance(time.Minute) // everyone active expires
	}
	if got := b.rec.users(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("admission order:\n got %v\nwant %v", got, want)
	}
	if b.rec.maxActive > threshold {
		t.Fatalf("%d active after a pass, threshold %d", b.rec.maxActive, threshold)
	}
	if b.rec.admitted[b.ev] != len(want) {
		t.Fatalf("observer counted %d admissions, want %d", b.rec.admitted[b.ev], len(want))
	}
}

// rankingsLost is the store, except that Admit then fails the way
// redisstore's does when the ranking pipeline breaks after admit.lua ran:
// the users are active, and the error comes with them.
type rankingsLost struct{ queue.Store }

func (s rankingsLost) Admit(ctx context.Context, in queue.AdmitInput) (queue.AdmitResult, error) {
	res, err := s.Store.Admit(ctx, in)
	if err != nil {
		return res, err
	}
	return res, errors.New("redisstore: admit rankings: connection reset")
}

// TestWorkerReportsAdmissionsDespiteALateStoreError: users let in by an
// admission step whose follow-up failed still reach the notifier (and so
// SQS) and the metrics.
func TestWorkerReportsAdmissionsDespiteALateStoreError(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1})
	b.slotFreedForB(t)
	svc := queue.New(rankingsLost{b.store}, b.keys, b.clk, b.rec, queue.Config{Threshold: 1})
	svc.SetObserver(observer{b.rec})
	n, err := queue.NewWorker(svc, queue.WorkerConfig{}, nil).AdmitOnce(b.ctx)
	if n != 1 || !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("AdmitOnce = %d, %v; want 1 admitted and the error", n, err)
	}
	if got := fmt.Sprint(b.rec.users()); got != "[a b]" {
		t.Fatalf("notifier heard %s, want [a b]", got)
	}
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	if b.rec.admitted[b.ev] != 2 {
		t.Fatalf("observer counted %d admissions, want 2", b.rec.admitted[b.ev])
	}
}

// relistLost is the store, except that Check then fails the way
// redisstore's does when the relist SADD breaks after check.lua ran.
type relistLost struct{ queue.Store }

func (s relistLost) Check(ctx context.Context, in queue.CheckInput) (queue.Snapshot, error) {
	snap, err := s.Store.Check(ctx, in)
	if err != nil {
		return snap, err
	}
	return snap, errors.New("redisstore: check relist: connection reset")
}

// TestCheckReportsADirectEntryDespiteALateStoreError: the user is active
// (their next check only re-mints), so the failed call must still report
// the admission; the caller gets ErrUnavailable and retries.
func TestCheckReportsADirectEntryDespiteALateStoreError(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1})
	svc := queue.New(relistLost{b.store}, b.keys, b.clk, b.rec, queue.Config{Threshold: 1})
	svc.SetObserver(observer{b.rec})
	if _, err := svc.Check(b.ctx, b.ev, queue.Identity{UserID: "a", Position: 1}); !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("Check = %v, want ErrUnavailable", err)
	}
	if _, err := svc.Check(b.ctx, b.ev, queue.Identity{UserID: "b", Position: 2}); !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("Check = %v, want ErrUnavailable", err)
	}
	if v := b.check(t, "a", 1); v.Status != queue.StatusActive {
		t.Fatalf("a after the failed call: %+v, want active", v)
	}
	if got := fmt.Sprint(b.rec.users()); got != "[a]" {
		t.Fatalf("notifier heard %s, want [a] (b was only queued)", got)
	}
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	if b.rec.admitted[b.ev] != 1 {
		t.Fatalf("observer counted %d admissions, want 1", b.rec.admitted[b.ev])
	}
}

func TestWorkerRespectsAnotherWorkersLock(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1})
	b.slotFreedForB(t)
	if ok, err := b.store.ClaimAdmission(b.ctx, b.ev, "someone-else", queue.LockTTL); err != nil || !ok {
		t.Fatalf("Lock: %v, %v", ok, err)
	}
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	if n, err := w.AdmitOnce(b.ctx); err != nil || n != 0 {
		t.Fatalf("admitted %d under a foreign lock (%v)", n, err)
	}
	if _, err := b.store.ReleaseAdmission(b.ctx, b.ev, "someone-else"); err != nil {
		t.Fatal(err)
	}
	if n, err := w.AdmitOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("after unlock: %d, %v", n, err)
	}
	// The worker released its own lock.
	if ok, err := b.store.ClaimAdmission(b.ctx, b.ev, "next", queue.LockTTL); err != nil || !ok {
		t.Fatalf("worker left its lock behind (%v)", err)
	}
}

// TestCleanupOncePerInterval: each line is swept once per cleanup interval
// however many instances' workers run (the due marker), and a sweep needs
// no admission lock: an admission pass holding it does not hold the sweep up.
func TestCleanupOncePerInterval(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1, SeenTTL: time.Minute, ActiveTTL: time.Hour, ActiveIdle: time.Hour})
	b.check(t, "a", 1)
	b.check(t, "silent", 2)
	const every = 300 * time.Millisecond
	w1 := queue.NewWorker(b.svc, queue.WorkerConfig{StaleCleanupInterval: every}, nil)
	w2 := queue.NewWorker(b.svc, queue.WorkerConfig{StaleCleanupInterval: every}, nil) // another instance's
	b.admitOnce(t, w1, 0)                                                              // finds the line: schedules its sweep
	b.clk.Advance(2 * time.Minute)
	if ok, err := b.store.ClaimAdmission(b.ctx, b.ev, "an-admission-pass", queue.LockTTL); err != nil || !ok {
		t.Fatalf("Lock: %v, %v", ok, err)
	}
	if n, err := w1.CleanupOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("CleanupOnce under an admission lock = %d, %v; want the silent user", n, err)
	}
	b.check(t, "silent2", 3)
	b.clk.Advance(2 * time.Minute)
	cleanups := func() int {
		b.rec.mu.Lock()
		defer b.rec.mu.Unlock()
		return b.rec.scripts["cleanup"]
	}
	before := cleanups()
	if n, err := w2.CleanupOnce(b.ctx); err != nil || n != 0 || cleanups() != before {
		t.Fatalf("a second worker within the interval: removed %d, %v, %d sweeps; want the line left alone", n, err, cleanups()-before)
	}
	time.Sleep(every) // the marker lives 0.9 of the interval
	if n, err := w2.CleanupOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("CleanupOnce once the interval passed = %d, %v; want silent2", n, err)
	}
}

func TestWorkerCleanupAndRetire(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1, SeenTTL: time.Minute, ActiveTTL: time.Hour, ActiveIdle: time.Hour})
	b.check(t, "a", 1)
	b.check(t, "silent", 2)
	b.check(t, "alive", 3)
	b.clk.Advance(50 * time.Second)
	if _, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "alive"}); err != nil {
		t.Fatal(err)
	}
	// silent: 80 s, past SeenTTL + the heartbeat spacing (lines.go).
	b.clk.Advance(30 * time.Second)
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.admitOnce(t, w, 0) // finds the line: schedules its sweep
	if n, err := w.CleanupOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("CleanupOnce = %d, %v; want the silent user", n, err)
	}
	if _, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "silent"}); !errors.Is(err, queue.ErrNotQueued) {
		t.Fatalf("silent still there: %v", err)
	}
	if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "alive"}); err != nil || v.Position != 1 {
		t.Fatalf("alive: %+v, %v", v, err)
	}
	b.leave(t, "a")
	b.leave(t, "alive")
	b.admitOnce(t, w, 0) // drains the pending ranking count
	b.admitOnce(t, w, 0) // retires
	if evs, err := b.store.Listed(b.ctx); err != nil || containsStr(evs, b.ev) {
		t.Fatalf("empty event still listed: %v, %v", evs, err)
	}
	b.check(t, "late", 9)
	if evs, err := b.store.Listed(b.ctx); err != nil || !containsStr(evs, b.ev) {
		t.Fatalf("a new join did not list the event: %v, %v", evs, err)
	}
}

func containsStr(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestWorkerRunLoops(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1})
	b.slotFreedForB(t)
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() {
		queue.NewWorker(b.svc, queue.WorkerConfig{AdmissionInterval: 5 * time.Millisecond, StaleCleanupInterval: 5 * time.Millisecond}, nil).Run(ctx)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(b.rec.users()) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if got := fmt.Sprint(b.rec.users()); got != "[a b]" {
		t.Fatalf("Run admitted %s, want [a b]", got)
	}
}

// TestFlushSelfHeal wipes the store (memstore.Lose, what a FLUSHALL does)
// under a waiting line: each user's next check puts them back at their Tier 1
// position and the worker then admits in that order.
func TestFlushSelfHeal(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 2})
	const users = 30
	x := b.check(t, "x", 0)
	b.check(t, "y", 0)
	for _, p := range rand.Perm(users) {
		b.check(t, fmt.Sprintf("p%02d", p+1), int64(p+1))
	}
	b.mem.Lose()
	// x's site renews its entry token (heartbeat): the store lost x, so x
	// is counted back in, and a recovery window starts.
	v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "x", EntryToken: x.EntryToken})
	if err != nil || v.Status != queue.StatusActive || v.RecoveringUntil.IsZero() {
		t.Fatalf("x renewing after the flush: %+v, %v; want active and recovering", v, err)
	}
	// y never comes back, but its token is still valid: its slot is not
	// handed out during the window. Everyone else, in random order, lands
	// at their old place; nobody is admitted although a slot looks free.
	for _, p := range rand.Perm(users) {
		v := b.check(t, fmt.Sprintf("p%02d", p+1), int64(p+1))
		if v.Status != queue.StatusQueued || v.RecoveringUntil.IsZero() {
			t.Fatalf("p%02d during the window: %+v", p+1, v)
		}
		if pause := v.RecoveringUntil.Sub(b.clk.Now()); time.Duration(v.EstimatedWait)*time.Second < pause {
			t.Fatalf("p%02d hears %d s while admissions pause for %s", p+1, v.EstimatedWait, pause)
		}
	}
	for p := 1; p <= users; p++ {
		v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: fmt.Sprintf("p%02d", p)})
		if err != nil || v.Position != int64(p) {
			t.Fatalf("p%02d after the flush: %+v, %v", p, v, err)
		}
	}
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	before := len(b.rec.users())
	b.admitOnce(t, w, 0)
	// After the window (longer than y's token could live) the free slot
	// goes to the head of the line.
	b.clk.Advance(queue.Config{}.WithDefaults().RecoveryWindow + time.Millisecond)
	b.admitOnce(t, w, 1)
	b.leave(t, "x")
	for i := 0; i < users; i++ {
		want := 2 // both slots free again after each expiry
		if i == 0 {
			want = 1 // x's slot, just left; p01 holds the other
		}
		b.admitOnce(t, w, min(want, users-(len(b.rec.users())-before)))
		b.clk.Advance(queue.DefaultActiveTTL)
		if len(b.rec.users())-before == users {
			break
		}
	}
	got := b.rec.users()[before:]
	for i, uid := range got {
		if uid != fmt.Sprintf("p%02d", i+1) {
			t.Fatalf("admission %d was %s: %v", i, uid, got)
		}
	}
	if len(got) != users {
		t.Fatalf("admitted %d of %d", len(got), users)
	}
}

// TestFlushKeepsUnclaimedAdmissions: the worker lets p1 in, and Redis is
// lost before p1's page checks again to fetch its token. p1 must not wait
// again behind the recovery window while the worker hands its slot to p2:
// the instance puts p1 back, and p1's next check finds it active with its
// original slot; p2 is admitted only when a slot frees, and nobody twice.
func TestFlushKeepsUnclaimedAdmissions(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 2})
	b.check(t, "x", 0)
	y := b.check(t, "y", 0)
	for p := 1; p <= 5; p++ {
		b.check(t, fmt.Sprintf("p%d", p), int64(p))
	}
	b.leave(t, "x")
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.admitOnce(t, w, 1)
	slot := b.clk.Now().Add(queue.DefaultActiveTTL)
	b.mem.Lose()
	// y's site renews y's token: the loss is found, a window starts, and
	// p1 is put back.
	b.clk.Advance(time.Second)
	if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "y", EntryToken: y.EntryToken}); err != nil || v.Status != queue.StatusActive {
		t.Fatalf("y after the flush: %+v, %v", v, err)
	}
	for _, p := range []int{4, 2, 5, 3} {
		if v := b.check(t, fmt.Sprintf("p%d", p), int64(p)); v.Status != queue.StatusQueued || v.RecoveringUntil.IsZero() || v.CurrentUsers != 2 {
			t.Fatalf("p%d during the window: %+v, want queued with y and p1 active", p, v)
		}
	}
	if v := b.check(t, "p1", 1); v.Status != queue.StatusActive || !v.ExpiresAt.Equal(slot) || v.EntryToken == "" {
		t.Fatalf("p1 after the flush: %+v, want active until %v", v, slot)
	}
	// After the window both slots are held (y, p1): nobody is let in until
	// y leaves, and then p2.
	b.clk.Advance(queue.Config{}.WithDefaults().RecoveryWindow)
	b.admitOnce(t, w, 0)
	b.leave(t, "y")
	b.admitOnce(t, w, 1)
	if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "p3"}); err != nil || v.Position != 1 {
		t.Fatalf("p3 after p2's admission: %+v, %v; want first in line", v, err)
	}
	if got := fmt.Sprint(b.rec.users()); got != "[x y p1 p2]" {
		t.Fatalf("admissions %s, want [x y p1 p2]", got)
	}
}

// TestUnclaimedUserFindsTheLossItself: p1's own check is the first step
// after the loss. It queues p1 again before the restore puts p1 back, so the
// service asks once more and p1 hears "active" at once.
func TestUnclaimedUserFindsTheLossItself(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1})
	b.check(t, "x", 0)
	b.check(t, "p1", 1)
	b.leave(t, "x")
	b.admitOnce(t, queue.NewWorker(b.svc, queue.WorkerConfig{}, nil), 1)
	b.mem.Lose()
	if v := b.check(t, "p1", 1); v.Status != queue.StatusActive || v.RecoveringUntil.IsZero() || v.EntryToken == "" {
		t.Fatalf("p1 finding the loss: %+v, want active during the window", v)
	}
}

// TestAnotherInstanceFindsTheLoss: instance 1's worker lets p1 in; after
// the loss, instance 2 is the one to find it, and p1's page polls instance
// 2, which knows nothing of p1's admission. Instance 1's loss watch reads
// the new epoch and puts p1 back, so p1's next poll finds it active.
func TestAnotherInstanceFindsTheLoss(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1})
	other := queue.New(b.store, b.keys, b.clk, nil, queue.Config{Threshold: 1})
	check2 := func(uid string, pos int64) queue.View {
		t.Helper()
		v, err := other.Check(b.ctx, b.ev, queue.Identity{UserID: uid, Position: pos})
		if err != nil {
			t.Fatalf("instance 2 Check(%s): %v", uid, err)
		}
		return v
	}
	b.check(t, "x", 0)
	b.check(t, "p1", 1)
	check2("z", 5) // instance 2 has seen the epoch too
	b.leave(t, "x")
	w1 := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.admitOnce(t, w1, 1)
	slot := b.clk.Now().Add(queue.DefaultActiveTTL)
	b.mem.Lose()
	if v := check2("z", 5); v.RecoveringUntil.IsZero() {
		t.Fatalf("z on instance 2 after the flush: %+v, want a recovery window", v)
	}
	if v := check2("p1", 1); v.Status != queue.StatusQueued {
		t.Fatalf("p1 on instance 2 before instance 1 noticed: %+v", v)
	}
	if n, err := w1.WatchLossesOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("WatchLossesOnce = %d, %v; want p1 put back", n, err)
	}
	if v := check2("p1", 1); v.Status != queue.StatusActive || !v.ExpiresAt.Equal(slot) {
		t.Fatalf("p1 on instance 2 after instance 1's watch: %+v, want active until %v", v, slot)
	}
	if n, err := w1.WatchLossesOnce(b.ctx); err != nil || n != 0 {
		t.Fatalf("second watch = %d, %v; want nothing more", n, err)
	}
}

// TestConcurrentChecksAndWorkers has users join concurrently while two
// workers run and the clock moves: a sampler never sees more active users
// than the threshold, and every user is admitted exactly once.
func TestConcurrentChecksAndWorkers(t *testing.T) {
	t.Parallel()
	const threshold, users = 10, 300
	b := setup(t, queue.Config{Threshold: threshold, ActiveTTL: time.Second, SeenTTL: time.Hour, AdmissionBatchSize: 4})
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()

	var bg sync.WaitGroup
	for i := 0; i < 2; i++ {
		w := queue.NewWorker(b.svc, queue.WorkerConfig{AdmissionInterval: 2 * time.Millisecond, StaleCleanupInterval: time.Hour}, nil)
		bg.Add(1)
		go func() { defer bg.Done(); w.Run(ctx) }()
	}
	bg.Add(2)
	go func() { // the clock: actives expire as time passes
		defer bg.Done()
		for ctx.Err() == nil {
			b.clk.Advance(100 * time.Millisecond)
			time.Sleep(time.Millisecond)
		}
	}()
	var maxSeen atomic.Int64
	go func() { // the sampler
		defer bg.Done()
		for ctx.Err() == nil {
			if st, err := b.svc.Stats(ctx, b.ev); err == nil {
				if st.CurrentUsers > maxSeen.Load() {
					maxSeen.Store(st.CurrentUsers)
				}
			}
		}
	}()

	var joins sync.WaitGroup
	for _, p := range rand.Perm(users) {
		joins.Add(1)
		go func() {
			defer joins.Done()
			if _, err := b.svc.Check(ctx, b.ev, queue.Identity{UserID: fmt.Sprint("u", p), Position: int64(p + 1)}); err != nil {
				t.Error(err)
			}
		}()
	}
	joins.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for len(b.rec.users()) < users && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	bg.Wait()

	seen := map[string]int{}
	for _, uid := range b.rec.users() {
		seen[uid]++
	}
	if len(seen) != users {
		t.Fatalf("%d of %d users admitted", len(seen), users)
	}
	for uid, n := range seen {
		if n != 1 {
			t.Fatalf("%s admitted %d times", uid, n)
		}
	}
	if m := maxSeen.Load(); m > threshold || m == 0 {
		t.Fatalf("sampled at most %d active users; threshold %d", m, threshold)
	}
	if b.rec.maxActive > threshold {
		t.Fatalf("%d active after a pass; threshold %d", b.rec.maxActive, threshold)
	}
}

// The worker admits before any token exists; the jti it reports must be the
// one the user's next check mints, so SQS consumers can correlate the two.
func TestWorkerAdmissionJTIMatchesMintedToken(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1, ActiveTTL: time.Minute})
	b.check(t, "first", 1)
	if v := b.check(t, "second", 2); v.Status != queue.StatusQueued {
		t.Fatalf("second: %+v", v)
	}
	if _, err := b.svc.Leave(b.ctx, b.ev, queue.Identity{UserID: "first"}); err != nil {
		t.Fatal(err)
	}
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	if n, err := w.AdmitOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("AdmitOnce = %d, %v", n, err)
	}
	b.rec.mu.Lock()
	adm := b.rec.admissions[len(b.rec.admissions)-1]
	b.rec.mu.Unlock()
	if adm.UserID != "second" || adm.EntryJTI == "" {
		t.Fatalf("worker admission %+v", adm)
	}
	for i := 0; i < 2; i++ { // re-mints keep the jti
		b.clk.Advance(time.Second)
		v := b.check(t, "second", 2)
		ent, err := b.keys.VerifyEntry(v.EntryToken, b.ev, b.clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if ent.ID != adm.EntryJTI {
			t.Fatalf("minted jti %q, worker reported %q", ent.ID, adm.EntryJTI)
		}
	}
}

// TestHostileUserIDsInTokensAndNotices: an id made of what key layouts,
// globs, Lua and JSON give meaning to comes back unchanged in the entry
// token, in both admission paths' notices, and in the SQS message built
// from a notice, whose jti is the token's.
func TestHostileUserIDsInTokensAndNotices(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1})
	direct, queued := `{other-event}:queue *?[]"\ x`, `"},"userId":"admin {`+b.ev+`}:active`
	v := b.check(t, direct, 1)
	if v.Status != queue.StatusActive {
		t.Fatalf("%q: %+v", direct, v)
	}
	if v := b.check(t, queued, 2); v.Status != queue.StatusQueued {
		t.Fatalf("%q: %+v", queued, v)
	}
	b.leave(t, direct)
	b.admitOnce(t, queue.NewWorker(b.svc, queue.WorkerConfig{}, nil), 1)
	w := b.check(t, queued, 2)
	for _, c := range []struct {
		uid string
		tok string
	}{{direct, v.EntryToken}, {queued, w.EntryToken}} {
		e, err := b.keys.VerifyEntry(c.tok, b.ev, b.clk.Now())
		if err != nil || e.UserID != c.uid {
			t.Fatalf("entry token of %q: %+v, %v", c.uid, e, err)
		}
		var adm *queue.Admission
		b.rec.mu.Lock()
		for i := range b.rec.admissions {
			if b.rec.admissions[i].UserID == c.uid {
				adm = &b.rec.admissions[i]
			}
		}
		b.rec.mu.Unlock()
		if adm == nil || adm.EntryJTI != e.ID {
			t.Fatalf("notice of %q: %+v; want jti %q", c.uid, adm, e.ID)
		}
		m := admitted.Message{Action: admitted.Action, EventID: adm.EventID, UserID: adm.UserID,
			EntryTokenID: adm.EntryJTI, ExpiresAt: adm.ExpiresAt, Timestamp: adm.AdmittedAt}
		body, err := m.Encode()
		if err != nil {
			t.Fatalf("message of %q: %v", c.uid, err)
		}
		if got, err := admitted.Parse(string(body)); err != nil || got.UserID != c.uid || got.EntryTokenID != e.ID {
			t.Fatalf("message of %q parsed as %+v, %v", c.uid, got, err)
		}
	}
}

// TestOpenEventsKeepTheirEpochs: with open events no durable store keeps
// an event's epoch, so an instance never forgets one (the worker prunes
// only what the settings hold too): a retired event's epoch stays.
func TestOpenEventsKeepTheirEpochs(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1, ActiveTTL: time.Hour, ActiveIdle: time.Hour})
	b.check(t, "a", 1)
	w := queue.NewWorker(b.svc, queue.WorkerConfig{}, nil)
	b.leave(t, "a")
	for range 4 { // drains the ranking count, retires, then two passes without it
		b.admitOnce(t, w, 0)
	}
	if evs, err := b.store.Listed(b.ctx); err != nil || containsStr(evs, b.ev) {
		t.Fatalf("setup: the event is still listed: %v, %v", evs, err)
	}
	if n := b.svc.RememberedEpochs(); n != 1 {
		t.Fatalf("%d epochs remembered, want the open event's 1", n)
	}
}

// TestPeriodicPassesOncePerFleet: two instances' workers run side by side
// on one store; one of them at a time makes the periodic admission pass
// (a cluster-wide lease), so the fleet scans the listed events about once
// per interval, not once per instance, and a freed slot is still refilled.
func TestPeriodicPassesOncePerFleet(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Threshold: 1, ActiveTTL: time.Hour, ActiveIdle: time.Hour})
	rec2 := &recorder{admitted: map[string]int{}, scripts: map[string]int{}}
	svc2 := queue.New(b.store, b.keys, b.clk, rec2, queue.Config{Threshold: 1, ActiveTTL: time.Hour, ActiveIdle: time.Hour})
	svc2.SetObserver(observer{rec2})
	b.slotFreedForB(t)

	const every, span = 50 * time.Millisecond, 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(b.ctx, span)
	defer cancel()
	var wg sync.WaitGroup
	for _, svc := range []*queue.Service{b.svc, svc2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			queue.NewWorker(svc, queue.WorkerConfig{AdmissionInterval: every, StaleCleanupInterval: time.Hour}, nil).Run(ctx)
		}()
	}
	wg.Wait()
	scans := func(r *recorder) int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.scripts["due"]
	}
	one, two := scans(b.rec), scans(rec2)
	ticks := int(span / every)
	if one+two > ticks*13/10 || one+two < ticks/3 {
		t.Fatalf("the two workers scanned %d + %d times in %d intervals; want about one scan per interval in all", one, two, ticks)
	}
	if v, err := b.svc.Status(b.ctx, b.ev, queue.Identity{UserID: "b"}); err != nil || v.Status != queue.StatusActive {
		t.Fatalf("b after the workers ran: %+v, %v; want let in", v, err)
	}
}
