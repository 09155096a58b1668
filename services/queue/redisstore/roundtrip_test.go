package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/redistrips"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
)

// counts reads and forgets what h recorded: round trips, script calls and
// the command names in order.
func counts(h *redistrips.Hook) (trips, scripts int, names []string) {
	t := h.Reset()
	return len(t), t.Scripts(), t.Names()
}

// TestCheckIsOneRoundTrip counts, through a go-redis hook, what one Check
// sends once the script cache is warm: one round trip carrying one script
// call and nothing else, for every outcome, once the event is listed. The
// event's first check lists it: the script, the SADD, relisted.lua.
func TestCheckIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	h := &redistrips.Hook{}
	rdb.AddHook(h)
	s := newPrefixed(t, rdb)
	ctx := context.Background()
	ev := testenv.UniqueID(t)
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	counts(h)
	if _, err := s.Check(ctx, queue.CheckInput{EventID: ev, UserID: "first", Score: 0, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1}); err != nil {
		t.Fatal(err)
	}
	if trips, scripts, names := counts(h); trips != 3 || scripts != 2 || fmt.Sprint(names) != "[evalsha sadd evalsha]" {
		t.Fatalf("the event's first check sent %d trips %v; want [evalsha] [sadd] [evalsha]", trips, names)
	}
	if _, err := s.Leave(ctx, queue.LeaveInput{EventID: ev, UserID: "first"}); err != nil {
		t.Fatal(err)
	}
	counts(h)

	cases := []struct {
		name, uid string
		want      queue.Status
	}{
		{"direct entry", "a", queue.StatusActive},
		{"already active", "a", queue.StatusActive},
		{"join the line", "b", queue.StatusQueued},
		{"already queued", "b", queue.StatusQueued},
		{"second in line", "c", queue.StatusQueued},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap, err := s.Check(ctx, queue.CheckInput{EventID: ev, UserID: c.uid, Score: int64(i + 1), Now: t0, ActiveTTL: ttl, DefaultThreshold: 1})
			if err != nil || snap.Status != c.want {
				t.Fatalf("Check = %+v, %v; want %s", snap, err, c.want)
			}
			trips, scripts, names := counts(h)
			if trips != 1 || scripts != 1 {
				t.Fatalf("%d round trips and %d script calls (%v); want 1 and 1", trips, scripts, names)
			}
			if got := fmt.Sprint(names); got != "[evalsha]" {
				t.Fatalf("commands %s, want [evalsha]", got)
			}
		})
	}
}

// TestColdScriptCache runs on a private miniredis, because SCRIPT FLUSH on
// the package's shared redis-server would turn the EVALSHAs of tests running
// in parallel into NOSCRIPT retries and upset their command counts. A cold
// cache costs one extra trip (NOSCRIPT, then EVAL), once; Load avoids even
// that.
func TestColdScriptCache(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	h := &redistrips.Hook{}
	rdb.AddHook(h)
	s := newPrefixed(t, rdb)
	ctx := context.Background()
	ev := testenv.UniqueID(t)
	check := func(uid string, score int64) {
		t.Helper()
		if _, err := s.Check(ctx, queue.CheckInput{EventID: ev, UserID: uid, Score: score, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	counts(h)
	check("d", 9)
	// NOSCRIPT, EVAL; then the first check lists the event (SADD, and
	// relisted.lua, which is cold too).
	if trips, _, names := counts(h); trips != 5 || fmt.Sprint(names) != "[evalsha eval sadd evalsha eval]" {
		t.Fatalf("cold: %d trips %v", trips, names)
	}
	check("e", 10)
	if trips, scripts, _ := counts(h); trips != 1 || scripts != 1 {
		t.Fatalf("after warming: %d trips, %d scripts", trips, scripts)
	}

	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	counts(h)
	check("f", 11)
	if trips, scripts, names := counts(h); trips != 1 || scripts != 1 || fmt.Sprint(names) != "[evalsha]" {
		t.Fatalf("after Load: %d trips, %d scripts %v; want one EVALSHA trip", trips, scripts, names)
	}
}

// TestCheckTouchesOneClusterNode runs checks of 30 events on the project's
// 3-node Cluster and records, per call, the nodes its commands reached: a
// check of a listed event touches exactly one node, its event's, whatever
// the outcome, even for the events whose slot is not on the node holding
// the active-events set. Only the event's first check lists it, there.
func TestCheckTouchesOneClusterNode(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testenv.RedisCluster(t)})
	rdb.OnNewNode(func(n *redis.Client) { n.AddHook(redistrips.NodeHook(n.Options().Addr)) })
	s := newPrefixed(t, rdb)
	ctx := context.Background()
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	nodeOf := func(key string) string {
		t.Helper()
		sh, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return sh.Options().Addr
	}
	registry := nodeOf(s.k.activeEvents())
	check := func(ev, uid string, score int64) (queue.Snapshot, map[string]bool) {
		t.Helper()
		cctx, ns := redistrips.WithNodes(ctx)
		snap, err := s.Check(cctx, queue.CheckInput{EventID: ev, UserID: uid, Score: score, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1})
		if err != nil {
			t.Fatal(err)
		}
		return snap, ns.Set()
	}
	elsewhere := 0
	for i := range 30 {
		ev := fmt.Sprintf("%s-%02d", testenv.UniqueID(t), i)
		home := nodeOf(s.k.queue(ev))
		if home != registry {
			elsewhere++
		}
		if _, nodes := check(ev, "first", 1); !nodes[home] || !nodes[registry] {
			t.Fatalf("%s's first check reached %v; want its node %s and the registry's %s", ev, nodes, home, registry)
		}
		for _, c := range []struct {
			uid  string
			want queue.Status
		}{{"first", queue.StatusActive}, {"second", queue.StatusQueued}, {"second", queue.StatusQueued}, {"third", queue.StatusQueued}} {
			snap, nodes := check(ev, c.uid, 2)
			if snap.Status != c.want || len(nodes) != 1 || !nodes[home] {
				t.Fatalf("%s %s: %s, nodes %v; want %s on %s alone", ev, c.uid, snap.Status, nodes, c.want, home)
			}
		}
	}
	if elsewhere == 0 {
		t.Fatal("every event landed on the registry's node: the test proved nothing")
	}
}

// TestEpochsOfIsOnePipeline: the loss watch reads the epochs of many events
// in one round trip, each event's the one its checks saw ("" for an event
// with none), on every backend.
func TestEpochsOfIsOnePipeline(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.new(t)
			h := &redistrips.Hook{}
			s.rdb.AddHook(h)
			ctx := context.Background()
			var evs, want []string
			for i := range 5 {
				ev := fmt.Sprintf("%s-%d", testenv.UniqueID(t), i)
				snap, err := s.Check(ctx, queue.CheckInput{EventID: ev, UserID: "u", Score: 1, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1,
					Epoch: queue.EpochInput{Candidate: fmt.Sprint("epoch-", i)}})
				if err != nil || snap.Epoch.ID == "" {
					t.Fatalf("Check(%s) = %+v, %v", ev, snap, err)
				}
				evs, want = append(evs, ev), append(want, snap.Epoch.ID)
			}
			evs, want = append(evs, testenv.UniqueID(t)+"-none"), append(want, "")
			h.Reset()
			got, err := s.Epochs(ctx, evs)
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("EpochsOf = %q, %v; want %q", got, err, want)
			}
			if tr := h.Reset(); len(tr) != 1 || len(tr.Names()) != len(evs) {
				t.Fatalf("EpochsOf sent %v; want one pipeline of %d HGETs", tr, len(evs))
			}
		})
	}
}
