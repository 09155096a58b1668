package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/storetest"
)

// hostileIDs are valid user ids (1–256 bytes of printable UTF-8) made of
// what key layouts, glob patterns, Lua and JSON give meaning to, including
// the exact key names of the other event b.
func hostileIDs(s *Store, b string) []string {
	return []string{
		"{" + b + "}:queue *?[]\"\\ x",
		s.k.queue(b), s.k.active(b), s.k.swept(b), s.k.threshold(b), s.k.retired(b), s.k.listed(b), s.k.served(b), s.k.unlogged(b), s.k.header(b),
		s.k.lock(b), s.k.activeEvents(), s.k.ranking("daily", t0),
		"*", "?", "[a-z]*", "\\", "\"", "{", "}", "{}", ":", "a b", "a  b",
		"' or 1=1 --", "]] .. redis.call('FLUSHALL') .. [[", "0", "-1", "inf", "nan", "1e3",
		"알리스 {" + b + "}", strings.Repeat("{", 256), strings.Repeat("é", 128),
	}
}

// TestHostileUserIDsStayMembers runs every user-facing store call with
// hostile ids against event a while event b has state: b's keys are
// byte-for-byte unchanged, a's keys are exactly the expected ones holding
// exactly the expected members, and the global keys hold only event ids.
func TestHostileUserIDsStayMembers(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			fa := setup(t, be.new)
			fb := &fixture{Fixture: &storetest.Fixture{T: t, S: fa.s, Ctx: fa.Ctx, Ev: fa.Ev + "-b"}, s: fa.s}
			a, b := fa.Ev, fb.Ev
			ids := hostileIDs(fa.s, b)
			for _, id := range ids {
				if !queue.ValidUser(id) {
					t.Fatalf("%q is not a valid user id; the test would prove nothing", id)
				}
			}

			// b: a threshold, one active (served), two queued (named by a
			// header), pending rankings, a lock.
			if err := fb.s.SetThreshold(fb.Ctx, b, 1); err != nil {
				t.Fatal(err)
			}
			fb.Check("b1", 1, t0, 5)
			fb.Check("b2", 2, t0, 5)
			fb.Check("b3", 3, t0, 5)
			if ok, err := fb.s.ClaimAdmission(fb.Ctx, b, "worker-b", time.Hour); err != nil || !ok {
				t.Fatalf("Lock(b) = %v, %v", ok, err)
			}
			before := dump(t, fa.s, "*{"+b+"}*")
			if len(before) != 11 {
				t.Fatalf("setup: b has %d keys, want 11: %v", len(before), before)
			}

			// a, threshold 1: the first id enters, the rest queue behind it.
			if s := fa.Check(ids[0], 1, t0, 1); !s.Activated {
				t.Fatalf("%q: %+v, want activated", ids[0], s)
			}
			for i, id := range ids[1:] {
				if s := fa.Check(id, int64(i+2), t0, 1); s.Status != queue.StatusQueued || s.Rank != int64(i) {
					t.Fatalf("%q: %+v, want queued at rank %d", id, s, i)
				}
			}
			for i, id := range ids[1:] {
				s, err := fa.s.Touch(fa.Ctx, queue.TouchInput{EventID: a, UserID: id, Now: t0, DefaultThreshold: 1})
				if err != nil || s.Status != queue.StatusQueued || s.Rank != int64(i) {
					t.Fatalf("Touch(%q) = %+v, %v", id, s, err)
				}
				if score, ok, err := fa.s.QueueScore(fa.Ctx, a, id); err != nil || !ok || score != int64(i+2) {
					t.Fatalf("QueueScore(%q) = %d, %v, %v", id, score, ok, err)
				}
			}
			if s, err := fa.s.Touch(fa.Ctx, queue.TouchInput{EventID: a, UserID: "never {" + b + "}:queue", Now: t0, DefaultThreshold: 1}); err != nil || s.Status != "" {
				t.Fatalf("Touch(stranger) = %+v, %v", s, err)
			}
			fa.Leave(ids[0])
			if res := fa.Admit(t0, 1, 10); len(res.Admitted) != 1 || res.Admitted[0] != ids[1] {
				t.Fatalf("admitted %q, want exactly [%q]", res.Admitted, ids[1])
			}
			if s := fa.Check(ids[1], 2, t0.Add(time.Second), 1); s.Status != queue.StatusActive || !s.ExpiresAt.Equal(t0.Add(ttl)) {
				t.Fatalf("%q after admission: %+v", ids[1], s)
			}
			if ok, err := fa.s.Leave(fa.Ctx, queue.LeaveInput{EventID: a, UserID: ids[2]}); err != nil || !ok {
				t.Fatalf("Leave(%q) = %v, %v", ids[2], ok, err)
			}
			if n, err := fa.s.Sweep(fa.Ctx, a, t0.Add(time.Minute), time.Second); err != nil || n != len(ids)-3 {
				t.Fatalf("Sweep = %d, %v; want the %d still queued", n, err, len(ids)-3)
			}
			if st, err := fa.s.Stats(fa.Ctx, a, t0.Add(time.Second), 1); err != nil || st.QueueSize != 0 || st.ActiveCount != 1 || st.AdmittedLastMinute != 2 {
				t.Fatalf("Stats(a) = %+v, %v", st, err)
			}

			if after := dump(t, fa.s, "*{"+b+"}*"); !mapsEqual(before, after) {
				t.Fatalf("b's keys changed:\nbefore %v\nafter  %v", before, after)
			}
			got := dump(t, fa.s, "*{"+a+"}*")
			// Both admissions share a score; a ZSET orders them by member.
			adm := []string{fmt.Sprintf("%d:%s", ms(t0), ids[0]), fmt.Sprintf("%d:%s", ms(t0), ids[1])}
			slices.Sort(adm)
			want := map[string]string{
				fa.s.k.active(a):     fmt.Sprintf("zset [%s %d]", ids[1], ms(t0.Add(ttl))),
				fa.s.k.admissions(a): fmt.Sprintf("zset [%s %d %s %d]", adm[0], ms(t0), adm[1], ms(t0)),
				// Who was let in: ids[0] (then left) and ids[1]. ids[2]
				// left the line, named by a header: no record.
				fa.s.k.served(a): fmt.Sprintf("hash %v +ttl", map[string]string{ids[0]: "hL", ids[1]: fmt.Sprintf("h%d", ms(t0.Add(ttl)))}),
				fa.s.k.listed(a): "string 1",
			}
			// The change log: the joins, the admission, the leave, the sweep.
			var changes []string
			for i := range ids[1:] {
				changes = append(changes, fmt.Sprintf("J%d", i+2))
			}
			changes = append(changes, "A1:2", "L3:"+ids[2])
			for i, id := range ids[3:] {
				changes = append(changes, fmt.Sprintf("S%d:%s", i+4, id))
			}
			want[fa.s.k.changes(a)] = fmt.Sprintf("list %v +ttl", changes)
			// The count's generation is Redis' TIME at its first change.
			gen, err := fa.s.rdb.HGet(fa.Ctx, fa.s.k.line(a), "gen").Result()
			if err != nil || gen == "" {
				t.Fatalf("the count's generation: %q, %v", gen, err)
			}
			want[fa.s.k.line(a)] = fmt.Sprintf("hash %v", map[string]string{"seq": fmt.Sprint(len(changes)), "front": "2", "gen": gen})
			if !mapsEqual(got, want) {
				t.Fatalf("a's keys:\n got %q\nwant %q", got, want)
			}
			evs, err := fa.s.Listed(fa.Ctx)
			if slices.Sort(evs); err != nil || fmt.Sprint(evs) != fmt.Sprint([]string{a, b}) {
				t.Fatalf("active events %q, %v; want [%s %s]", evs, err, a, b)
			}
			if r, err := fa.s.Ranking(fa.Ctx, "daily", t0, 10); err != nil || len(r) != 1 || r[0] != (queue.RankEntry{EventID: a, Admissions: 2}) {
				t.Fatalf("daily ranking %+v, %v; want only %s with 2", r, err, a)
			}
		})
	}
}

// dump reads every key matching match under the store's prefix (on every
// master of a cluster) as "type contents", with "+ttl" when it expires.
func dump(t *testing.T, s *Store, match string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	read := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, s.k.prefix+match, 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			typ, err := c.Type(ctx, key).Result()
			if err != nil {
				return err
			}
			var v any
			switch typ {
			case "string":
				v, err = c.Get(ctx, key).Result()
			case "zset":
				var zs []redis.Z
				zs, err = c.ZRangeWithScores(ctx, key, 0, -1).Result()
				var parts []string
				for _, z := range zs {
					parts = append(parts, fmt.Sprint(z.Member), fmt.Sprint(int64(z.Score)))
				}
				v = parts
			case "hash":
				v, err = c.HGetAll(ctx, key).Result()
			case "list":
				v, err = c.LRange(ctx, key, 0, -1).Result()
			case "set":
				var m []string
				m, err = c.SMembers(ctx, key).Result()
				slices.Sort(m)
				v = m
			default:
				err = fmt.Errorf("unexpected type %s", typ)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			entry := typ + " " + fmt.Sprint(v)
			if pttl, err := c.PTTL(ctx, key).Result(); err != nil {
				return err
			} else if pttl > 0 {
				entry += " +ttl"
			}
			out[key] = entry
		}
		return iter.Err()
	}
	var err error
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		// Masters scan concurrently; each writes only keys of its own slots.
		var mu = make(chan struct{}, 1)
		err = c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			mu <- struct{}{}
			defer func() { <-mu }()
			return read(ctx, node)
		})
	case *redis.Client:
		err = read(ctx, c)
	default:
		t.Fatalf("store client is %T", s.rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
