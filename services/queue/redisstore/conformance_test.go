package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/redistrips"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/storetest"
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
	s := newPrefixed(t, redis.NewClient(&redis.Options{Addr: mr.Addr()}))
	minis.Store(s, mr)
	t.Cleanup(func() { minis.Delete(s) })
	return s
}

// minis are the miniredis servers of the stores miniRedis made: their
// keys expire only when the test moves their clock (FastForward).
var minis sync.Map // *Store → *miniredis.Miniredis

func clusterRedis(t *testing.T) *Store {
	t.Helper()
	return newPrefixed(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: testenv.RedisCluster(t)}))
}

var backends = []backend{
	{"redis", realRedis},
	{"miniredis", miniRedis},
	{"cluster", clusterRedis},
}

// TestConformance runs the one Store suite (storetest), and the cases only
// Redis has (key layout, scripts, the retire's steps), against a real
// redis-server, miniredis (what `vwr local` uses) and a 3-node Redis Cluster.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, harness(b.new))
			runRedisOnly(t, b.new)
		})
	}
}

// harness is storetest's view of a Store from newStore.
func harness(newStore func(t *testing.T) *Store) storetest.Factory {
	return func(t *testing.T) storetest.Harness {
		s := newStore(t)
		ctx := context.Background()
		return storetest.Harness{
			Store: s,
			Lose: func(t *testing.T, ev string) {
				t.Helper()
				// Every key of the event and the listing: what a FLUSHALL
				// takes (the store shares its Redis with parallel tests).
				for _, k := range append(s.k.eventKeys(ev), s.k.activeEvents()) {
					if err := s.rdb.Del(ctx, k).Err(); err != nil {
						t.Fatal(err)
					}
				}
			},
			Unlist: func(t *testing.T, ev string) {
				t.Helper()
				if err := s.rdb.SRem(ctx, s.k.activeEvents(), ev).Err(); err != nil {
					t.Fatal(err)
				}
			},
			Line: func(t *testing.T, ev string, now time.Time) []storetest.Waiter {
				t.Helper()
				zs, err := s.rdb.ZRangeWithScores(ctx, s.k.queue(ev), 0, -1).Result()
				if err != nil {
					t.Fatal(err)
				}
				tick := queue.HeartbeatTick.Milliseconds()
				cur := ms(now) / tick
				out := make([]storetest.Waiter, len(zs))
				for i, z := range zs {
					sc := int64(z.Score)
					// The score keeps the tick modulo hbTicks: the latest
					// tick at or before now with that remainder.
					back := ((cur-sc%hbTicks)%hbTicks + hbTicks) % hbTicks
					out[i] = storetest.Waiter{UserID: z.Member.(string), Base: sc / hbTicks, Heard: time.UnixMilli((cur - back) * tick).UTC()}
				}
				return out
			},
			Elapse: func(t *testing.T, d time.Duration) {
				if mr, ok := minis.Load(s); ok {
					mr.(*miniredis.Miniredis).FastForward(d)
					return
				}
				time.Sleep(d)
			},
		}
	}
}

var t0 = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

const ttl = storetest.TTL

// fixture is storetest's Fixture with the Redis store itself, for the
// looks behind the port that only Redis has.
type fixture struct {
	*storetest.Fixture
	s *Store
}

func setup(t *testing.T, newStore func(t *testing.T) *Store) *fixture {
	t.Helper()
	s := newStore(t)
	return &fixture{Fixture: storetest.NewFixture(t, s), s: s}
}

// script runs only check.lua for uid, as a join whose relist (SADD, then
// relisted.lua) is still on its way, and returns the snapshot and the
// relist token.
func (f *fixture) script(uid string, score int64) (queue.Snapshot, string) {
	f.T.Helper()
	reply, err := f.s.runCheck(f.Ctx, f.s.k.eventKeys(f.Ev),
		f.s.checkArgs(queue.CheckInput{EventID: f.Ev, UserID: uid, Score: score, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1}))
	if err != nil {
		f.T.Fatalf("check.lua(%s): %v", uid, err)
	}
	snap, relist, _, err := parseCheck(reply)
	if err != nil {
		f.T.Fatalf("check.lua(%s) reply: %v", uid, err)
	}
	return snap, relist
}

func (f *fixture) zcard(key string) int64 {
	f.T.Helper()
	n, err := f.s.rdb.ZCard(f.Ctx, key).Result()
	if err != nil {
		f.T.Fatalf("ZCARD %s: %v", key, err)
	}
	return n
}

// runRedisOnly runs the cases about how Redis keeps the state: key names
// and TTLs, and the steps of a retire around its SREM.
func runRedisOnly(t *testing.T, newStore func(t *testing.T) *Store) {
	t.Run("the admission claim is a key of its own with the claim's ttl", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		if ok, err := f.s.ClaimAdmission(f.Ctx, f.Ev, "w1", 4*time.Second); err != nil || !ok {
			t.Fatalf("ClaimAdmission = %v, %v", ok, err)
		}
		if pttl, _ := f.s.rdb.PTTL(f.Ctx, f.s.k.lock(f.Ev)).Result(); pttl <= 0 || pttl > 4*time.Second {
			t.Fatalf("lock PTTL %v, want (0, 4s]", pttl)
		}
	})

	t.Run("reads write nothing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		s, err := f.s.Touch(f.Ctx, queue.TouchInput{EventID: f.Ev, UserID: "ghost", Now: t0, DefaultThreshold: 3})
		if err != nil || s.Status != "" {
			t.Fatalf("ghost: %+v, %v", s, err)
		}
		if n, _ := f.s.rdb.Exists(f.Ctx, f.s.k.eventKeys(f.Ev)...).Result(); n != 0 {
			t.Fatalf("touch of an unknown user wrote %d keys", n)
		}
		f.Check("a", 1, t0, 1)
		if st, err := f.s.Stats(f.Ctx, f.Ev, t0.Add(ttl), 1); err != nil || st.ActiveCount != 0 || f.zcard(f.s.k.active(f.Ev)) != 1 {
			t.Fatalf("stats at the slot's end: %+v, %v; the expired slot counted or removed", st, err)
		}
	})

	t.Run("rankings live in one key per period, each with its TTL set once", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		// 2021-01-03 is a Sunday in ISO week 2020-W53.
		now := time.Date(2021, 1, 3, 23, 59, 0, 0, time.UTC)
		f.Check("direct", 1, now, 1)
		for i := 2; i <= 4; i++ {
			f.Check(fmt.Sprint("u", i), int64(i), now, 1)
		}
		if res := f.Admit(now, 2, 10); len(res.Admitted) != 1 {
			t.Fatalf("admitted %v", res.Admitted)
		}
		want := map[string]time.Duration{
			"ranking:daily:2021-01-03": 48 * time.Hour,
			"ranking:weekly:2020-W53":  8 * 24 * time.Hour,
			"ranking:monthly:2021-01":  32 * 24 * time.Hour,
		}
		for key, ttl := range want {
			full := f.s.k.prefix + key
			if score, err := f.s.rdb.ZScore(f.Ctx, full, f.Ev).Result(); err != nil || score != 2 {
				t.Fatalf("%s score %v, %v; want 2 (direct + worker)", key, score, err)
			}
			if got, _ := f.s.rdb.TTL(f.Ctx, full).Result(); got <= ttl-time.Minute || got > ttl {
				t.Fatalf("%s TTL %v, want %v", key, got, ttl)
			}
			// A key that has a TTL keeps it: shorten it and admit again.
			if err := f.s.rdb.Expire(f.Ctx, full, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
		}
		f.Leave("direct")
		if res := f.Admit(now, 2, 10); len(res.Admitted) != 1 {
			t.Fatalf("second pass admitted %v", res.Admitted)
		}
		for key := range want {
			full := f.s.k.prefix + key
			if got, _ := f.s.rdb.TTL(f.Ctx, full).Result(); got > time.Hour {
				t.Fatalf("%s TTL reset to %v", key, got)
			}
		}
		for _, period := range []string{"daily", "weekly", "monthly"} {
			r, err := f.s.Ranking(f.Ctx, period, now, 10)
			if err != nil || len(r) != 1 || r[0] != (queue.RankEntry{EventID: f.Ev, Admissions: 3}) {
				t.Fatalf("Ranking(%s) = %+v, %v", period, r, err)
			}
		}
	})

	t.Run("a join whose script runs inside the retire keeps the event listed", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Emptied("a")
		// The join's script runs between the SREM and the re-check: it
		// finds the event unmarked and would list it itself, and the
		// re-check puts it back too.
		var token string
		f.s.afterSREM = func() {
			if _, token = f.script("b", 2); token == "" || token == "+" {
				t.Errorf("relist token %q inside a retire; want the retire's tombstone", token)
			}
		}
		removed, err := f.s.Retire(f.Ctx, f.Ev)
		if err != nil || removed || !f.Listed() {
			t.Fatalf("Retire = %v, %v; listed %v", removed, err, f.Listed())
		}
		if n, err := relistedScript.Run(f.Ctx, f.s.rdb, []string{f.s.k.retired(f.Ev), f.s.k.listed(f.Ev)}, token).Int64(); err != nil || n != 1 {
			t.Fatalf("the join's relisted.lua = %d, %v; want 1", n, err)
		}
		if _, relist := f.script("c", 3); relist != "" {
			t.Fatalf("relist token %q once listed again", relist)
		}
	})

	t.Run("a worker that dies inside a retire leaves the event to the next join", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Emptied("a")
		// 'begin' ran; the SREM did too, the re-check never did.
		if keep, err := retireScript.Run(f.Ctx, f.s.rdb, f.s.k.eventKeys(f.Ev), "begin", 60000, "dead-worker").Int64(); err != nil || keep != 0 {
			t.Fatalf("begin = %d, %v", keep, err)
		}
		if err := f.s.rdb.SRem(f.Ctx, f.s.k.activeEvents(), f.Ev).Err(); err != nil {
			t.Fatal(err)
		}
		if s := f.Check("b", 2, t0, 1); s.Status != queue.StatusActive || !f.Listed() {
			t.Fatalf("join after a dead retire: %+v, listed %v", s, f.Listed())
		}
	})

	t.Run("every join after a retire lists the event until one has", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Emptied("a")
		if removed, err := f.s.Retire(f.Ctx, f.Ev); err != nil || !removed || f.Listed() {
			t.Fatalf("Retire = %v, %v; listed %v", removed, err, f.Listed())
		}
		// b's script finds the tombstone, but b's relist is still on its
		// way when c's script runs: c must relist too, or c's Check would
		// return with c queued in an unlisted event.
		_, tb := f.script("b", 2)
		_, tc := f.script("c", 3)
		if tb == "" || tb == "+" || tc != tb {
			t.Fatalf("relist tokens b=%q c=%q; want the same tombstone for both", tb, tc)
		}
		if f.Listed() {
			t.Fatal("setup: listed before any relist")
		}

		// Through Store.Check (scripts cached): the script, the SADD, then
		// relisted.lua clears the tombstone and marks the event listed.
		if err := f.s.Load(f.Ctx); err != nil {
			t.Fatal(err)
		}
		h := &redistrips.Hook{}
		f.s.rdb.AddHook(h)
		f.Check("d", 4, t0, 1)
		trips, scripts, names := counts(h)
		if trips != 3 || scripts != 2 || fmt.Sprint(names) != "[evalsha sadd evalsha]" || !f.Listed() {
			t.Fatalf("check after a retire sent %d trips %v; want [evalsha] [sadd] [evalsha]", trips, names)
		}
		if n, _ := f.s.rdb.Exists(f.Ctx, f.s.k.retired(f.Ev)).Result(); n != 0 {
			t.Fatal("the tombstone outlived its relist")
		}
		counts(h)
		f.Check("d", 4, t0, 1)
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
					f.Emptied("a")
					if removed, err := f.s.Retire(f.Ctx, f.Ev); err != nil || !removed {
						t.Fatalf("Retire = %v, %v", removed, err)
					}
				}
				_, old := f.script("b", 2) // b's relist is slow...
				if old == "" {
					t.Fatal("a join of an unlisted event got no relist token")
				}
				if err := f.s.rdb.SAdd(f.Ctx, f.s.k.activeEvents(), f.Ev).Err(); err != nil { // ...its SADD lands...
					t.Fatal(err)
				}
				f.Leave("b")
				f.Admit(t0, 1, 10)
				if removed, err := f.s.Retire(f.Ctx, f.Ev); err != nil || !removed { // ...a retire runs...
					t.Fatalf("second Retire = %v, %v", removed, err)
				}
				// ...so b's late relisted.lua must mark nothing: the event is unlisted.
				if n, err := relistedScript.Run(f.Ctx, f.s.rdb, []string{f.s.k.retired(f.Ev), f.s.k.listed(f.Ev)}, old).Int64(); err != nil || n != 0 {
					t.Fatalf("stale relisted.lua = %d, %v; want 0", n, err)
				}
				if _, relist := f.script("c", 3); relist == "" || relist == old {
					t.Fatalf("relist token %q after the second retire (old %q)", relist, old)
				}
			})
		}
	})

}
