package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
)

// TestChangeLogGap: the log keeps its count but may drop its entries (its
// list expires 10 min after its last entry, or is trimmed): a cursor whose
// entries are gone reads a gap, and the entries still kept read as usual.
// (The rest of the change log's contract is storetest's.)
func TestChangeLogGap(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			s := be.new(t)
			ctx, ev := context.Background(), testenv.UniqueID(t)
			check := func(uid string, score int64) {
				t.Helper()
				if _, err := s.Check(ctx, queue.CheckInput{EventID: ev, UserID: uid, Score: score, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1}); err != nil {
					t.Fatal(err)
				}
			}
			read := func(since int64) queue.LineState {
				t.Helper()
				st, err := s.LineStates(ctx, []queue.LineQuery{{EventID: ev, Since: since, Now: t0, DefaultThreshold: 1}})
				if err != nil || len(st) != 1 {
					t.Fatalf("LineStates = %+v, %v", st, err)
				}
				return st[0]
			}
			check("holder", 1)
			check("w", 2)
			if err := s.rdb.Del(ctx, s.k.changes(ev)).Err(); err != nil {
				t.Fatal(err)
			}
			check("w2", 3)
			if st := read(0); !st.Gap || st.Seq != 2 {
				t.Fatalf("entries gone: %+v, want a gap", st)
			}
			if st := read(1); st.Gap || len(st.Changes) != 1 || st.Changes[0] != (queue.LineChange{Kind: queue.LineJoined, Base: 3}) {
				t.Fatalf("the entries still kept: %+v", st)
			}
			if pttl, err := s.rdb.PTTL(ctx, s.k.changes(ev)).Result(); err != nil || pttl <= 0 || pttl > 10*time.Minute {
				t.Fatalf("the log's TTL: %v, %v; want at most 10 min", pttl, err)
			}
		})
	}
}

// TestChangeLogCountStartingAgainHasAnotherGen: the count's hash lost on its
// own (evicted, deleted) while the epoch stays starts again from 1, under
// another generation, so that a reader whose cursor came from the old count
// forgets the line even once the new count has passed its cursor.
func TestChangeLogCountStartingAgainHasAnotherGen(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			s := be.new(t)
			ctx, ev := context.Background(), testenv.UniqueID(t)
			check := func(uid string, score int64) {
				t.Helper()
				if _, err := s.Check(ctx, queue.CheckInput{EventID: ev, UserID: uid, Score: score, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1}); err != nil {
					t.Fatal(err)
				}
			}
			read := func(since int64) queue.LineState {
				t.Helper()
				st, err := s.LineStates(ctx, []queue.LineQuery{{EventID: ev, Since: since, Now: t0, DefaultThreshold: 1}})
				if err != nil || len(st) != 1 {
					t.Fatalf("LineStates = %+v, %v", st, err)
				}
				return st[0]
			}
			if st := read(-1); st.Gen != "" || st.Seq != 0 {
				t.Fatalf("before any change: %+v, want no count and no generation", st)
			}
			check("holder", 1)
			check("w1", 2)
			check("w2", 3)
			old := read(2)
			if old.Gen == "" || old.Seq != 2 {
				t.Fatalf("after two joins: %+v, want a generation", old)
			}
			if err := s.rdb.Del(ctx, s.k.line(ev), s.k.changes(ev)).Err(); err != nil {
				t.Fatal(err)
			}
			for i, uid := range []string{"n1", "n2", "n3"} {
				check(uid, int64(10+i))
			}
			st := read(2)
			if st.Seq != 3 || st.Gen == "" || st.Gen == old.Gen {
				t.Fatalf("the count started again: %+v, want seq 3 under a generation other than %q", st, old.Gen)
			}
		})
	}
}
