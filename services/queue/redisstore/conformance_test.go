package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/redistrips"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// backend builds a Store with a private key prefix on one kind of Redis.
type backend struct {
	name string
	new  func(t *testing.T) *Store
}

func newPrefixed(t *testing.T, rdb redis.UniversalClient) *Store {
	t.Helper()
	t.Cleanup(func() { _ = rdb.Close() })
	return New(rdb, Options{Prefix: testenv.UniqueID(t) + ":"})
}

func realRedis(t *testing.T) *Store {
	t.Helper()
	return newPrefixed(t, redis.NewClient(&redis.Options{Addr: testenv.Redis(t)}))
}

func miniRedis(t *testing.T) *Store {
	t.Helper()
	mr := miniredis.RunT(t)
	return newPrefixed(t, redis.NewClient(&redis.Options{Addr: mr.Addr()}))
}

func clusterRedis(t *testing.T) *Store {
	t.Helper()
	return newPrefixed(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: testenv.RedisCluster(t)}))
}

var backends = []backend{
	{"redis", realRedis},
	{"miniredis", miniRedis},
	{"cluster", clusterRedis},
}

// TestConformance runs the one Store suite against a real redis-server,
// miniredis (what `vwr local` uses) and a 3-node Redis Cluster.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			runConformance(t, b.new)
		})
	}
}

var t0 = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

const ttl = 600 * time.Second

type fixture struct {
	t   *testing.T
	s   *Store
	ctx context.Context
	ev  string
}

func setup(t *testing.T, newStore func(t *testing.T) *Store) *fixture {
	t.Helper()
	return &fixture{t: t, s: newStore(t), ctx: context.Background(), ev: "ev-" + fmt.Sprint(time.Now().UnixNano())}
}

func (f *fixture) check(uid string, score int64, now time.Time, threshold int64) queue.Snapshot {
	f.t.Helper()
	snap, err := f.s.Check(f.ctx, queue.CheckInput{EventID: f.ev, UserID: uid, Score: score, Now: now, ActiveTTL: ttl, DefaultThreshold: threshold})
	if err != nil {
		f.t.Fatalf("Check(%s): %v", uid, err)
	}
	return snap
}

func (f *fixture) admit(now time.Time, threshold, batch int64) queue.AdmitResult {
	f.t.Helper()
	res, err := f.s.Admit(f.ctx, queue.AdmitInput{EventID: f.ev, Now: now, ActiveTTL: ttl, DefaultThreshold: threshold, Batch: batch})
	if err != nil {
		f.t.Fatalf("Admit: %v", err)
	}
	return res
}

// emptied leaves the event listed but empty: uid joins and leaves, and an
// admission pass drains the ranking count the join left pending, so that a
// retire may drop the event.
func (f *fixture) emptied(uid string) {
	f.t.Helper()
	f.check(uid, 1, t0, 1)
	f.leave(uid)
	f.admit(t0, 1, 10)
}

// script runs only check.lua for uid, as a join whose relist (SADD, then
// relisted.lua) is still on its way, and returns the snapshot and the
// relist token.
func (f *fixture) script(uid string, score int64) (queue.Snapshot, string) {
	f.t.Helper()
	reply, err := f.s.runCheck(f.ctx, f.s.k.eventKeys(f.ev),
		checkArgs(queue.CheckInput{EventID: f.ev, UserID: uid, Score: score, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1}))
	if err != nil {
		f.t.Fatalf("check.lua(%s): %v", uid, err)
	}
	snap, relist, _, err := parseCheck(reply)
	if err != nil {
		f.t.Fatalf("check.lua(%s) reply: %v", uid, err)
	}
	return snap, relist
}

// leave removes uid, failing the test on a store error.
func (f *fixture) leave(uid string) {
	f.t.Helper()
	if _, err := f.s.Leave(f.ctx, queue.LeaveInput{EventID: f.ev, UserID: uid}); err != nil {
		f.t.Fatalf("Leave(%s): %v", uid, err)
	}
}

func (f *fixture) listed() bool {
	f.t.Helper()
	evs, err := f.s.Listed(f.ctx)
	if err != nil {
		f.t.Fatalf("ActiveEvents: %v", err)
	}
	for _, e := range evs {
		if e == f.ev {
			return true
		}
	}
	return false
}

func (f *fixture) zcard(key string) int64 {
	f.t.Helper()
	n, err := f.s.rdb.ZCard(f.ctx, key).Result()
	if err != nil {
		f.t.Fatalf("ZCARD %s: %v", key, err)
	}
	return n
}

func runConformance(t *testing.T, newStore func(t *testing.T) *Store) {
	t.Run("a batch of heartbeats moves the ticks of those still queued and puts nobody back", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.check("holder", 1, t0, 1)
		f.check("w1", 2, t0, 1)
		f.check("w2", 3, t0, 1)
		f.check("gone", 4, t0, 1)
		f.leave("gone")
		// A queued poll whose caller batches writes nothing.
		later := t0.Add(time.Minute)
		if _, err := f.s.Check(f.ctx, queue.CheckInput{EventID: f.ev, UserID: "w1", Score: 2, Now: later, ActiveTTL: ttl, DefaultThreshold: 1, BatchBeat: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.Touch(f.ctx, queue.TouchInput{EventID: f.ev, UserID: "w2", Now: later, DefaultThreshold: 1, BatchBeat: true}); err != nil {
			t.Fatal(err)
		}
		score := func(uid string) (float64, bool) {
			sc, err := f.s.rdb.ZScore(f.ctx, f.s.k.queue(f.ev), uid).Result()
			return sc, err == nil
		}
		w1, _ := score("w1")
		w2, _ := score("w2")
		if w1 != float64(2*1024+(t0.UnixMilli()/5000)%1024) || w2 != float64(3*1024+(t0.UnixMilli()/5000)%1024) {
			t.Fatalf("batched polls wrote their heartbeats: %v %v", w1, w2)
		}
		err := f.s.Beat(f.ctx, map[string]map[string]time.Time{f.ev: {"w1": later, "w2": later.Add(-30 * time.Second), "gone": later}})
		if err != nil {
			t.Fatal(err)
		}
		tick := func(at time.Time) float64 { return float64((at.UnixMilli() / 5000) % 1024) }
		if sc, _ := score("w1"); sc != 2*1024+tick(later) {
			t.Fatalf("w1 after the batch: %v, want base 2 at %v's tick", sc, later)
		}
		if sc, _ := score("w2"); sc != 3*1024+tick(later.Add(-30*time.Second)) {
			t.Fatalf("w2 after the batch: %v, want base 3 at the tick it was heard", sc)
		}
		if _, ok := score("gone"); ok {
			t.Fatal("the batch put a leaver back in line")
		}
		if _, ok := score("holder"); ok {
			t.Fatal("the holder is in the line")
		}
	})
	t.Run("empty line and free slot activates at once", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		got := f.check("alice", 7, t0, 2)
		// The event's first check lists it: Wake asks the caller's worker to visit it.
		want := queue.Snapshot{Status: queue.StatusActive, Activated: true, ActiveCount: 1, Threshold: 2, AdmittedLastMinute: 1, ExpiresAt: t0.Add(ttl), Wake: true}
		if got != want {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		if !f.listed() {
			t.Fatal("event not in the active-events set after check")
		}
		if _, ok, err := f.s.QueueScore(f.ctx, f.ev, "alice"); ok || err != nil {
			t.Fatalf("an active user has a queue score (ok=%v, err=%v)", ok, err)
		}
	})

	t.Run("full event queues by score", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.check("a", 1, t0, 1)
		for _, u := range []struct {
			id    string
			score int64
		}{{"p9", 9}, {"p3", 3}, {"p5", 5}} {
			if s := f.check(u.id, u.score, t0, 1); s.Status != queue.StatusQueued || s.Activated {
				t.Fatalf("%s: got %+v, want queued", u.id, s)
			}
		}
		for _, c := range []struct {
			id          string
			rank, score int64
		}{{"p3", 0, 3}, {"p5", 1, 5}, {"p9", 2, 9}} {
			s := f.check(c.id, 999, t0.Add(time.Second), 1)
			if score, ok, err := f.s.QueueScore(f.ctx, f.ev, c.id); err != nil || !ok || score != c.score {
				t.Fatalf("%s: QueueScore = %d, %v, %v; a re-check must keep the first score", c.id, score, ok, err)
			}
			if s.Status != queue.StatusQueued || s.Rank != c.rank || s.QueueSize != 3 || s.ActiveCount != 1 {
				t.Fatalf("%s: got %+v, want queued rank %d of 3", c.id, s, c.rank)
			}
		}
		// Rechecking with another score never moves anyone.
		if score, _, _ := f.s.QueueScore(f.ctx, f.ev, "p3"); score != 3 {
			t.Fatalf("p3's base moved to %v", score)
		}
	})

	t.Run("a non-empty line is never jumped even with free slots", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.check("a", 1, t0, 1)
		f.check("b", 2, t0, 1)
		if _, err := f.s.Leave(f.ctx, queue.LeaveInput{EventID: f.ev, UserID: "a"}); err != nil {
			t.Fatal(err)
		}
		if s := f.check("c", 3, t0, 1); s.Status != queue.StatusQueued || s.Rank != 1 {
			t.Fatalf("c jumped the line: %+v", s)
		}
	})

	t.Run("polling never extends an active session", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		first := f.check("a", 1, t0, 5)
		for i := 1; i <= 3; i++ {
			now := t0.Add(time.Duration(i) * 100 * time.Second)
			s := f.check("a", 1, now, 5)
			if s.Status != queue.StatusActive || s.Activated || !s.ExpiresAt.Equal(first.ExpiresAt) {
				t.Fatalf("check %d: got %+v, want active with expiry %v", i, s, first.ExpiresAt)
			}
			ts, err := f.s.Touch(f.ctx, queue.TouchInput{EventID: f.ev, UserID: "a", Now: now, DefaultThreshold: 5})
			if err != nil || !ts.ExpiresAt.Equal(first.ExpiresAt) {
				t.Fatalf("touch %d: %+v, %v", i, ts, err)
			}
		}
		// Once expired, the next check is a fresh join.
		s := f.check("a", 1, t0.Add(ttl), 5)
		if !s.Activated || !s.ExpiresAt.Equal(t0.Add(2*ttl)) {
			t.Fatalf("after expiry: %+v", s)
		}
	})

	t.Run("touch refreshes only and reports unknown users", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		s, err := f.s.Touch(f.ctx, queue.TouchInput{EventID: f.ev, UserID: "ghost", Now: t0, DefaultThreshold: 3})
		if err != nil || s.Status != "" {
			t.Fatalf("ghost: %+v, %v", s, err)
		}
		if n, _ := f.s.rdb.Exists(f.ctx, f.s.k.eventKeys(f.ev)...).Result(); n != 0 {
			t.Fatalf("touch of an unknown user wrote %d keys", n)
		}
		f.check("a", 1, t0, 1)
		f.check("b", 2, t0, 1)
		later := t0.Add(time.Minute)
		s, err = f.s.Touch(f.ctx, queue.TouchInput{EventID: f.ev, UserID: "b", Now: later, DefaultThreshold: 1})
		if err != nil || s.Status != queue.StatusQueued || s.Rank != 0 {
			t.Fatalf("b: %+v, %v", s, err)
		}
		// The heartbeat is the score's tick; the base (the order) stays.
		sc, _ := f.s.rdb.ZScore(f.ctx, f.s.k.queue(f.ev), "b").Result()
		if want := 2*hbTicks + later.UnixMilli()/queue.HeartbeatTick.Milliseconds()%hbTicks; int64(sc) != want {
			t.Fatalf("score %v, want %v", int64(sc), want)
		}
		if f.zcard(f.s.k.queue(f.ev)) != 1 || f.zcard(f.s.k.active(f.ev)) != 1 {
			t.Fatal("touch changed the line or the active set")
		}
	})

	t.Run("leave frees the slot", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.check("a", 1, t0, 1)
		f.check("b", 2, t0, 1)
		for _, c := range []struct {
			uid  string
			want bool
		}{{"a", true}, {"a", false}, {"nobody", false}} {
			got, err := f.s.Leave(f.ctx, queue.LeaveInput{EventID: f.ev, UserID: c.uid})
			if err != nil || got != c.want {
				t.Fatalf("Leave(%s) = %v, %v; want %v", c.uid, got, err, c.want)
			}
		}
		res := f.admit(t0, 1, 10)
		if fmt.Sprint(res.Admitted) != "[b]" || res.ActiveCount != 1 || res.QueueSize != 0 {
			t.Fatalf("after leave: %+v", res)
		}
		if ok, _ := f.s.Leave(f.ctx, queue.LeaveInput{EventID: f.ev, UserID: "b"}); !ok {
			t.Fatal("leave of an active user reported nothing removed")
		}
		for _, k := range []string{f.s.k.queue(f.ev), f.s.k.active(f.ev)} {
			if n := f.zcard(k); n != 0 {
				t.Fatalf("leave of an active user left %d members in %s", n, k)
			}
		}
	})

	t.Run("admission follows position and never exceeds threshold", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.check("first", 100, t0, 1) // direct; the line forms behind it
		for _, p := range []int64{8, 2, 6, 4, 10, 1, 9, 3, 7, 5} {
			f.check(fmt.Sprintf("p%02d", p), p, t0, 1)
		}
		// p1 and p2 both fit (threshold 3, one active) but the batch is 1.
		steps := []struct {
			now   time.Time
			batch int64
			want  string
		}{
			{t0, 1, "[p01]"},
			{t0, 5, "[p02]"},
			{t0.Add(time.Second), 5, "[]"},
			{t0.Add(ttl), 2, "[p03 p04]"}, // first, p01 and p02 expired together
			{t0.Add(ttl), 5, "[p05]"},
		}
		for i, st := range steps {
			res := f.admit(st.now, 3, st.batch)
			if got := fmt.Sprint(res.Admitted); got != st.want {
				t.Fatalf("step %d: admitted %s, want %s", i, got, st.want)
			}
			if res.ActiveCount > 3 {
				t.Fatalf("step %d: %d active, threshold 3", i, res.ActiveCount)
			}
			if len(res.Admitted) > 0 && !res.ExpiresAt.Equal(st.now.Add(ttl)) {
				t.Fatalf("step %d: expiry %v", i, res.ExpiresAt)
			}
		}
		if n := f.zcard(f.s.k.queue(f.ev)); n != 5 {
			t.Fatalf("%d in line, want the 5 still queued", n)
		}
	})

	t.Run("per-event threshold overrides the default", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		if err := f.s.SetThreshold(f.ctx, f.ev, 1); err != nil {
			t.Fatal(err)
		}
		f.check("a", 1, t0, 100)
		if s := f.check("b", 2, t0, 100); s.Status != queue.StatusQueued || s.Threshold != 1 {
			t.Fatalf("b: %+v", s)
		}
		if err := f.s.SetThreshold(f.ctx, f.ev, 2); err != nil {
			t.Fatal(err)
		}
		if res := f.admit(t0, 100, 100); fmt.Sprint(res.Admitted) != "[b]" {
			t.Fatalf("after raising: %+v", res)
		}
	})

	t.Run("admission rate counts the last minute", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.check("a", 1, t0, 1)
		for i := 2; i <= 4; i++ {
			f.check(fmt.Sprint("u", i), int64(i), t0, 1)
		}
		if _, err := f.s.Leave(f.ctx, queue.LeaveInput{EventID: f.ev, UserID: "a"}); err != nil {
			t.Fatal(err)
		}
		f.admit(t0.Add(30*time.Second), 10, 10)
		for _, c := range []struct {
			at   time.Duration
			want int64
		}{{30 * time.Second, 4}, {59 * time.Second, 4}, {60 * time.Second, 3}, {90 * time.Second, 0}} {
			st, err := f.s.Stats(f.ctx, f.ev, t0.Add(c.at), 10)
			if err != nil || st.AdmittedLastMinute != c.want {
				t.Fatalf("at +%v: %+v, %v; want %d admitted", c.at, st, err, c.want)
			}
		}
	})

	t.Run("stats read counters without writing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.check("a", 1, t0, 1)
		f.check("b", 2, t0.Add(time.Second), 1)
		f.check("c", 3, t0.Add(2*time.Second), 1)
		// Before any stale sweep the oldest heartbeat is unknown.
		if st, err := f.s.Stats(f.ctx, f.ev, t0.Add(30*time.Second), 1); err != nil || !st.OldestHeartbeat.IsZero() {
			t.Fatalf("oldest heartbeat before a sweep: %+v, %v", st, err)
		}
		if n, err := f.s.Sweep(f.ctx, f.ev, t0.Add(30*time.Second), ttl); err != nil || n != 0 {
			t.Fatalf("Sweep = %d, %v", n, err)
		}
		st, err := f.s.Stats(f.ctx, f.ev, t0.Add(30*time.Second), 1)
		// b's heartbeat at t0+1 s, to its tick's start.
		want := queue.StoreStats{QueueSize: 2, ActiveCount: 1, Threshold: 1, AdmittedLastMinute: 1, RateSince: t0,
			OldestHeartbeat: t0.Add(time.Second).Truncate(queue.HeartbeatTick)}
		if err != nil || st != want {
			t.Fatalf("got %+v, %v; want %+v", st, err, want)
		}
		st, _ = f.s.Stats(f.ctx, f.ev, t0.Add(ttl), 1)
		if st.ActiveCount != 0 || f.zcard(f.s.k.active(f.ev)) != 1 {
			t.Fatalf("expired active counted (%d) or removed by stats", st.ActiveCount)
		}
	})

	t.Run("stale cleanup drops silent waiters, never early, and notes the oldest kept", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		const seenTTL = 100 * time.Second
		f.check("a", 1, t0, 1)
		f.check("silent", 2, t0, 1)
		f.check("alive", 3, t0, 1)
		f.check("late", 4, t0, 1)
		f.check("alive", 3, t0.Add(500*time.Second), 1) // heartbeats
		f.check("late", 4, t0.Add(410*time.Second), 1)
		// 100 s after late's heartbeat: silent that long at most, so kept.
		n, err := f.s.Sweep(f.ctx, f.ev, t0.Add(510*time.Second), seenTTL)
		if err != nil || n != 1 {
			t.Fatalf("Sweep = %d, %v; want 1 (silent)", n, err)
		}
		if members, _ := f.s.rdb.ZRange(f.ctx, f.s.k.queue(f.ev), 0, -1).Result(); fmt.Sprint(members) != "[alive late]" {
			t.Fatalf("line = %v, want [alive late]", members)
		}
		// The oldest heartbeat kept is late's, to the start of its tick.
		st, err := f.s.Stats(f.ctx, f.ev, t0.Add(510*time.Second), 1)
		tick := queue.HeartbeatTick
		if want := t0.Add(410 * time.Second).Truncate(tick); err != nil || !st.OldestHeartbeat.Equal(want) {
			t.Fatalf("oldest heartbeat %v, %v; want %v", st.OldestHeartbeat, err, want)
		}
		// Two ticks later late has surely been silent for the TTL.
		if n, err := f.s.Sweep(f.ctx, f.ev, t0.Add(410*time.Second+seenTTL+2*tick), seenTTL); err != nil || n != 1 {
			t.Fatalf("second sweep = %d, %v; want 1 (late)", n, err)
		}
		if f.zcard(f.s.k.active(f.ev)) != 1 {
			t.Fatal("cleanup touched the active user")
		}
	})

	t.Run("stale cleanup sweeps the line in pages", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.check("a", 1, t0, 1)
		for i := 0; i < sweepPage+5; i++ {
			f.check(fmt.Sprint("u", i), int64(i+2), t0, 1)
		}
		keep := fmt.Sprint("u", sweepPage+2) // on the second page
		f.check(keep, int64(sweepPage+4), t0.Add(time.Hour), 1)
		n, err := f.s.Sweep(f.ctx, f.ev, t0.Add(time.Hour), time.Minute)
		if err != nil || n != sweepPage+4 {
			t.Fatalf("removed %d, %v; want %d", n, err, sweepPage+4)
		}
		if members, _ := f.s.rdb.ZRange(f.ctx, f.s.k.queue(f.ev), 0, -1).Result(); fmt.Sprint(members) != "["+keep+"]" {
			t.Fatalf("line = %v, want [%s]", members, keep)
		}
	})

	t.Run("lock is owned and released by compare-and-delete", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		steps := []struct {
			op, owner string
			want      bool
		}{
			{"lock", "w1", true},
			{"lock", "w2", false},
			{"unlock", "w2", false},
			{"lock", "w2", false},
			{"unlock", "w1", true},
			{"unlock", "w1", false},
			{"lock", "w2", true},
		}
		for i, st := range steps {
			var got bool
			var err error
			if st.op == "lock" {
				got, err = f.s.ClaimAdmission(f.ctx, f.ev, st.owner, 4*time.Second)
			} else {
				got, err = f.s.ReleaseAdmission(f.ctx, f.ev, st.owner)
			}
			if err != nil || got != st.want {
				t.Fatalf("step %d %s(%s) = %v, %v; want %v", i, st.op, st.owner, got, err, st.want)
			}
		}
		if pttl, _ := f.s.rdb.PTTL(f.ctx, f.s.k.lock(f.ev)).Result(); pttl <= 0 || pttl > 4*time.Second {
			t.Fatalf("lock PTTL %v, want (0, 4s]", pttl)
		}
	})

	t.Run("rankings count admissions with TTL set once", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		// 2021-01-03 is a Sunday in ISO week 2020-W53.
		now := time.Date(2021, 1, 3, 23, 59, 0, 0, time.UTC)
		f.check("direct", 1, now, 1)
		for i := 2; i <= 4; i++ {
			f.check(fmt.Sprint("u", i), int64(i), now, 1)
		}
		if res := f.admit(now, 2, 10); len(res.Admitted) != 1 {
			t.Fatalf("admitted %v", res.Admitted)
		}
		want := map[string]time.Duration{
			"ranking:daily:2021-01-03": 48 * time.Hour,
			"ranking:weekly:2020-W53":  8 * 24 * time.Hour,
			"ranking:monthly:2021-01":  32 * 24 * time.Hour,
		}
		for key, ttl := range want {
			full := f.s.k.prefix + key
			if score, err := f.s.rdb.ZScore(f.ctx, full, f.ev).Result(); err != nil || score != 2 {
				t.Fatalf("%s score %v, %v; want 2 (direct + worker)", key, score, err)
			}
			if got, _ := f.s.rdb.TTL(f.ctx, full).Result(); got <= ttl-time.Minute || got > ttl {
				t.Fatalf("%s TTL %v, want %v", key, got, ttl)
			}
			// A key that has a TTL keeps it: shorten it and admit again.
			if err := f.s.rdb.Expire(f.ctx, full, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
		}
		f.leave("direct")
		if res := f.admit(now, 2, 10); len(res.Admitted) != 1 {
			t.Fatalf("second pass admitted %v", res.Admitted)
		}
		for key := range want {
			full := f.s.k.prefix + key
			if got, _ := f.s.rdb.TTL(f.ctx, full).Result(); got > time.Hour {
				t.Fatalf("%s TTL reset to %v", key, got)
			}
		}
		for _, period := range []string{"daily", "weekly", "monthly"} {
			r, err := f.s.Ranking(f.ctx, period, now, 10)
			if err != nil || len(r) != 1 || r[0] != (queue.RankEntry{EventID: f.ev, Admissions: 3}) {
				t.Fatalf("Ranking(%s) = %+v, %v", period, r, err)
			}
		}
	})

	t.Run("retire drops only empty events", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.check("a", 1, t0, 1)
		f.check("b", 2, t0, 1)
		for _, c := range []struct {
			name  string
			leave string
			want  bool
		}{{"queued and active", "", false}, {"active only", "b", false}, {"rank pending only", "a", false}} {
			if c.leave != "" {
				f.leave(c.leave)
			}
			removed, err := f.s.Retire(f.ctx, f.ev)
			if err != nil || removed != c.want || !f.listed() {
				t.Fatalf("%s: Retire = %v, %v, listed %v", c.name, removed, err, f.listed())
			}
		}
		f.admit(t0, 1, 10) // drains the pending ranking count
		removed, err := f.s.Retire(f.ctx, f.ev)
		if err != nil || !removed || f.listed() {
			t.Fatalf("empty: Retire = %v, %v, listed %v", removed, err, f.listed())
		}
	})

	t.Run("a join whose script runs inside the retire keeps the event listed", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.emptied("a")
		// The join's script runs between the SREM and the re-check: it
		// finds the event unmarked and would list it itself, and the
		// re-check puts it back too.
		var token string
		f.s.afterSREM = func() {
			if _, token = f.script("b", 2); token == "" || token == "+" {
				t.Errorf("relist token %q inside a retire; want the retire's tombstone", token)
			}
		}
		removed, err := f.s.Retire(f.ctx, f.ev)
		if err != nil || removed || !f.listed() {
			t.Fatalf("Retire = %v, %v; listed %v", removed, err, f.listed())
		}
		if n, err := relistedScript.Run(f.ctx, f.s.rdb, []string{f.s.k.retired(f.ev), f.s.k.listed(f.ev)}, token).Int64(); err != nil || n != 1 {
			t.Fatalf("the join's relisted.lua = %d, %v; want 1", n, err)
		}
		if _, relist := f.script("c", 3); relist != "" {
			t.Fatalf("relist token %q once listed again", relist)
		}
	})

	t.Run("a worker that dies inside a retire leaves the event to the next join", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.emptied("a")
		// 'begin' ran; the SREM did too, the re-check never did.
		if keep, err := retireScript.Run(f.ctx, f.s.rdb, f.s.k.eventKeys(f.ev), "begin", 60000, "dead-worker").Int64(); err != nil || keep != 0 {
			t.Fatalf("begin = %d, %v", keep, err)
		}
		if err := f.s.rdb.SRem(f.ctx, f.s.k.activeEvents(), f.ev).Err(); err != nil {
			t.Fatal(err)
		}
		if s := f.check("b", 2, t0, 1); s.Status != queue.StatusActive || !f.listed() {
			t.Fatalf("join after a dead retire: %+v, listed %v", s, f.listed())
		}
	})

	t.Run("every join after a retire lists the event until one has", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.emptied("a")
		if removed, err := f.s.Retire(f.ctx, f.ev); err != nil || !removed || f.listed() {
			t.Fatalf("Retire = %v, %v; listed %v", removed, err, f.listed())
		}
		// b's script finds the tombstone, but b's relist is still on its
		// way when c's script runs: c must relist too, or c's Check would
		// return with c queued in an unlisted event.
		_, tb := f.script("b", 2)
		_, tc := f.script("c", 3)
		if tb == "" || tb == "+" || tc != tb {
			t.Fatalf("relist tokens b=%q c=%q; want the same tombstone for both", tb, tc)
		}
		if f.listed() {
			t.Fatal("setup: listed before any relist")
		}

		// Through Store.Check (scripts cached): the script, the SADD, then
		// relisted.lua clears the tombstone and marks the event listed.
		if err := f.s.Load(f.ctx); err != nil {
			t.Fatal(err)
		}
		h := &redistrips.Hook{}
		f.s.rdb.AddHook(h)
		f.check("d", 4, t0, 1)
		trips, scripts, names := counts(h)
		if trips != 3 || scripts != 2 || fmt.Sprint(names) != "[evalsha sadd evalsha]" || !f.listed() {
			t.Fatalf("check after a retire sent %d trips %v; want [evalsha] [sadd] [evalsha]", trips, names)
		}
		if n, _ := f.s.rdb.Exists(f.ctx, f.s.k.retired(f.ev)).Result(); n != 0 {
			t.Fatal("the tombstone outlived its relist")
		}
		counts(h)
		f.check("d", 4, t0, 1)
		if trips, _, names := counts(h); trips != 1 || fmt.Sprint(names) != "[evalsha]" {
			t.Fatalf("check after the relist sent %v; want one script call alone", names)
		}
	})

	t.Run("a relist marks the event only if no retire began since its script", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name    string
			retired bool // a retire ran before the join's script
		}{{"a tombstone's token", true}, {"no tombstone", false}} {
			t.Run(c.name, func(t *testing.T) {
				f := setup(t, newStore)
				if c.retired {
					f.emptied("a")
					if removed, err := f.s.Retire(f.ctx, f.ev); err != nil || !removed {
						t.Fatalf("Retire = %v, %v", removed, err)
					}
				}
				_, old := f.script("b", 2) // b's relist is slow...
				if old == "" {
					t.Fatal("a join of an unlisted event got no relist token")
				}
				if err := f.s.rdb.SAdd(f.ctx, f.s.k.activeEvents(), f.ev).Err(); err != nil { // ...its SADD lands...
					t.Fatal(err)
				}
				f.leave("b")
				f.admit(t0, 1, 10)
				if removed, err := f.s.Retire(f.ctx, f.ev); err != nil || !removed { // ...a retire runs...
					t.Fatalf("second Retire = %v, %v", removed, err)
				}
				// ...so b's late relisted.lua must mark nothing: the event is unlisted.
				if n, err := relistedScript.Run(f.ctx, f.s.rdb, []string{f.s.k.retired(f.ev), f.s.k.listed(f.ev)}, old).Int64(); err != nil || n != 0 {
					t.Fatalf("stale relisted.lua = %d, %v; want 0", n, err)
				}
				if _, relist := f.script("c", 3); relist == "" || relist == old {
					t.Fatalf("relist token %q after the second retire (old %q)", relist, old)
				}
			})
		}
	})

	t.Run("a lost queue is rebuilt at the same positions", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.check("x", 0, t0, 1)
		for p := int64(2); p <= 5; p++ {
			f.check(fmt.Sprint("p", p), p, t0, 1)
		}
		// Losing every key of the event (the service test runs a real
		// FLUSHDB; this store shares its Redis with parallel tests).
		for _, k := range append(f.s.k.eventKeys(f.ev), f.s.k.activeEvents()) {
			if err := f.s.rdb.Del(f.ctx, k).Err(); err != nil {
				t.Fatal(err)
			}
		}
		f.check("x", 0, t0.Add(time.Second), 1)
		for _, p := range []int64{4, 2, 5, 3} {
			f.check(fmt.Sprint("p", p), p, t0.Add(time.Second), 1)
		}
		for p := int64(2); p <= 5; p++ {
			if s := f.check(fmt.Sprint("p", p), p, t0.Add(2*time.Second), 1); s.Status != queue.StatusQueued || s.Rank != p-2 {
				t.Fatalf("p%d: %+v, want rank %d", p, s, p-2)
			}
		}
		if !f.listed() {
			t.Fatal("event not relisted after the loss")
		}
	})
	runServedConformance(t, newStore)
}
