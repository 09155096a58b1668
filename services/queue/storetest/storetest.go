// Package storetest is the conformance suite every queue.Store must pass:
// the Redis adapter (redis-server, a 3-node Cluster, miniredis) and the
// in-memory one (memstore) run the same cases, so that the domain's tests
// may run on either. What only one backend has (Redis' key layout, scripts,
// round trips) is tested beside that backend.
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vwr-go/vwr/services/queue"
)

// Harness is one fresh store, isolated from every other test's, with the
// few looks behind the port the cases need.
type Harness struct {
	Store queue.Store
	// Lose makes the store lose every piece of the event's state, its
	// listing included, as a FLUSHALL of the queue's Redis does; the
	// schedules, claims and leases stay.
	Lose func(t *testing.T, eventID string)
	// Unlist drops the event from the listed events alone, as a retire
	// does before it finds someone joined.
	Unlist func(t *testing.T, eventID string)
	// Line reads the event's line in order, as of now (at or after every
	// heartbeat in it).
	Line func(t *testing.T, eventID string, now time.Time) []Waiter
	// Elapse lets d pass on the clock the store's claims and leases lapse
	// on (Redis' own); nil sleeps.
	Elapse func(t *testing.T, d time.Duration)
}

// Waiter is one queued user as Harness.Line reads them.
type Waiter struct {
	UserID string
	Base   int64     // the Tier 1 position or arrival ms the line orders by
	Heard  time.Time // the last heartbeat, to the start of its HeartbeatTick
}

// Factory returns a new Harness.
type Factory func(t *testing.T) Harness

// Run runs every case against stores from f, in parallel.
func Run(t *testing.T, f Factory) {
	t.Helper()
	runLines(t, f)
	runChanges(t, f)
	runServed(t, f)
	runPlanner(t, f)
	runConcurrency(t, f)
}

// T0 is the suite's "now": a Wednesday at noon, on a heartbeat tick.
var T0 = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

var t0 = T0

// TTL is the slot's length the suite's checks and passes give.
const TTL = 600 * time.Second

const ttl = TTL

// longLine is more waiters than one page of the Redis store's sweep.
const longLine = 2000

// lapse is a claim's or a lease's ttl where the case waits for it to lapse
// (claims and leases lapse on the store's own clock, as Redis' PX does).
const lapse = 50 * time.Millisecond

// Fixture is one test's event on one store, with the steps the cases take
// most; a backend's own tests use it too.
type Fixture struct {
	T   *testing.T
	S   queue.Store
	Ctx context.Context
	Ev  string
}

// NewFixture is a fresh event on s.
func NewFixture(t *testing.T, s queue.Store) *Fixture {
	return &Fixture{T: t, S: s, Ctx: context.Background(), Ev: "ev-" + fmt.Sprint(time.Now().UnixNano())}
}

// fixture is a Fixture with the looks behind the port its harness gives.
type fixture struct {
	*Fixture
	h Harness
}

func setup(t *testing.T, f Factory) *fixture {
	t.Helper()
	h := f(t)
	return &fixture{Fixture: NewFixture(t, h.Store), h: h}
}

// Check checks uid in (no pass, no idle limit), failing the test on an error.
func (f *Fixture) Check(uid string, score int64, now time.Time, threshold int64) queue.Snapshot {
	f.T.Helper()
	snap, err := f.S.Check(f.Ctx, queue.CheckInput{EventID: f.Ev, UserID: uid, Score: score, Now: now, ActiveTTL: ttl, DefaultThreshold: threshold})
	if err != nil {
		f.T.Fatalf("Check(%s): %v", uid, err)
	}
	return snap
}

// Admit makes one admission pass, failing the test on an error.
func (f *Fixture) Admit(now time.Time, threshold, batch int64) queue.AdmitResult {
	f.T.Helper()
	res, err := f.S.Admit(f.Ctx, queue.AdmitInput{EventID: f.Ev, Now: now, ActiveTTL: ttl, DefaultThreshold: threshold, Batch: batch})
	if err != nil {
		f.T.Fatalf("Admit: %v", err)
	}
	return res
}

// Emptied leaves the event listed but empty: uid joins and leaves, and an
// admission pass drains the ranking count the join left pending, so that a
// retire may drop the event.
func (f *Fixture) Emptied(uid string) {
	f.T.Helper()
	f.Check(uid, 1, t0, 1)
	f.Leave(uid)
	f.Admit(t0, 1, 10)
}

// Leave removes uid, failing the test on a store error.
func (f *Fixture) Leave(uid string) {
	f.T.Helper()
	if _, err := f.S.Leave(f.Ctx, queue.LeaveInput{EventID: f.Ev, UserID: uid}); err != nil {
		f.T.Fatalf("Leave(%s): %v", uid, err)
	}
}

// Listed reports whether the event is listed.
func (f *Fixture) Listed() bool {
	f.T.Helper()
	evs, err := f.S.Listed(f.Ctx)
	if err != nil {
		f.T.Fatalf("Listed: %v", err)
	}
	for _, e := range evs {
		if e == f.Ev {
			return true
		}
	}
	return false
}

// stats reads the event's counters at now, threshold 1 by default.
func (f *fixture) stats(now time.Time) queue.StoreStats {
	f.T.Helper()
	st, err := f.S.Stats(f.Ctx, f.Ev, now, 1)
	if err != nil {
		f.T.Fatalf("Stats: %v", err)
	}
	return st
}

// line reads the event's line as of now: user ids in order, and each
// waiter by id.
func (f *fixture) line(now time.Time) ([]string, map[string]Waiter) {
	f.T.Helper()
	var ids []string
	by := map[string]Waiter{}
	for _, w := range f.h.Line(f.T, f.Ev, now) {
		ids = append(ids, w.UserID)
		by[w.UserID] = w
	}
	return ids, by
}

// elapse lets d pass on the store's own clock.
func (f *fixture) elapse(d time.Duration) {
	f.T.Helper()
	if f.h.Elapse == nil {
		time.Sleep(d)
		return
	}
	f.h.Elapse(f.T, d)
}

// heard is the start of at's heartbeat tick.
func heard(at time.Time) time.Time { return at.Truncate(queue.HeartbeatTick) }

func runLines(t *testing.T, newStore Factory) {
	t.Run("a batch of heartbeats moves the ticks of those still queued and puts nobody back", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("holder", 1, t0, 1)
		f.Check("w1", 2, t0, 1)
		f.Check("w2", 3, t0, 1)
		f.Check("gone", 4, t0, 1)
		f.Leave("gone")
		// A queued poll whose caller batches writes nothing.
		later := t0.Add(time.Minute)
		if _, err := f.S.Check(f.Ctx, queue.CheckInput{EventID: f.Ev, UserID: "w1", Score: 2, Now: later, ActiveTTL: ttl, DefaultThreshold: 1, BatchBeat: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.S.Touch(f.Ctx, queue.TouchInput{EventID: f.Ev, UserID: "w2", Now: later, DefaultThreshold: 1, BatchBeat: true}); err != nil {
			t.Fatal(err)
		}
		if _, by := f.line(later); !by["w1"].Heard.Equal(t0) || !by["w2"].Heard.Equal(t0) {
			t.Fatalf("batched polls wrote their heartbeats: %+v %+v", by["w1"], by["w2"])
		}
		err := f.S.Beat(f.Ctx, map[string]map[string]time.Time{f.Ev: {"w1": later, "w2": later.Add(-30 * time.Second), "gone": later}})
		if err != nil {
			t.Fatal(err)
		}
		ids, by := f.line(later)
		if w := by["w1"]; w.Base != 2 || !w.Heard.Equal(heard(later)) {
			t.Fatalf("w1 after the batch: %+v, want base 2 heard at %v's tick", w, later)
		}
		if w := by["w2"]; w.Base != 3 || !w.Heard.Equal(heard(later.Add(-30*time.Second))) {
			t.Fatalf("w2 after the batch: %+v, want base 3 at the tick it was heard", w)
		}
		if fmt.Sprint(ids) != "[w1 w2]" {
			t.Fatalf("line after the batch %v: a leaver back, or the holder in it", ids)
		}
	})
	t.Run("empty line and free slot activates at once", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		got := f.Check("alice", 7, t0, 2)
		// The event's first check lists it: Wake asks the caller's worker to visit it.
		want := queue.Snapshot{Status: queue.StatusActive, Activated: true, ActiveCount: 1, Threshold: 2, AdmittedLastMinute: 1, ExpiresAt: t0.Add(ttl), Wake: true}
		if got != want {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		if !f.Listed() {
			t.Fatal("event not in the active-events set after check")
		}
		if ids, _ := f.line(t0); len(ids) != 0 {
			t.Fatalf("an active user is in line: %v", ids)
		}
	})

	t.Run("full event queues by score", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("a", 1, t0, 1)
		for _, u := range []struct {
			id    string
			score int64
		}{{"p9", 9}, {"p3", 3}, {"p5", 5}} {
			if s := f.Check(u.id, u.score, t0, 1); s.Status != queue.StatusQueued || s.Activated {
				t.Fatalf("%s: got %+v, want queued", u.id, s)
			}
		}
		for _, c := range []struct {
			id          string
			rank, score int64
		}{{"p3", 0, 3}, {"p5", 1, 5}, {"p9", 2, 9}} {
			s := f.Check(c.id, 999, t0.Add(time.Second), 1)
			if _, by := f.line(t0.Add(time.Second)); by[c.id].Base != c.score {
				t.Fatalf("%s: base %d; a re-check must keep the first score", c.id, by[c.id].Base)
			}
			if s.Status != queue.StatusQueued || s.Rank != c.rank || s.QueueSize != 3 || s.ActiveCount != 1 {
				t.Fatalf("%s: got %+v, want queued rank %d of 3", c.id, s, c.rank)
			}
		}
		// Rechecking with another score never moves anyone.
		if ids, by := f.line(t0.Add(time.Second)); by["p3"].Base != 3 || fmt.Sprint(ids) != "[p3 p5 p9]" {
			t.Fatalf("line %v, p3's base %d; want [p3 p5 p9] and 3", ids, by["p3"].Base)
		}
	})

	t.Run("a non-empty line is never jumped even with free slots", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("a", 1, t0, 1)
		f.Check("b", 2, t0, 1)
		if _, err := f.S.Leave(f.Ctx, queue.LeaveInput{EventID: f.Ev, UserID: "a"}); err != nil {
			t.Fatal(err)
		}
		if s := f.Check("c", 3, t0, 1); s.Status != queue.StatusQueued || s.Rank != 1 {
			t.Fatalf("c jumped the line: %+v", s)
		}
	})

	t.Run("polling never extends an active session", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		first := f.Check("a", 1, t0, 5)
		for i := 1; i <= 3; i++ {
			now := t0.Add(time.Duration(i) * 100 * time.Second)
			s := f.Check("a", 1, now, 5)
			if s.Status != queue.StatusActive || s.Activated || !s.ExpiresAt.Equal(first.ExpiresAt) {
				t.Fatalf("check %d: got %+v, want active with expiry %v", i, s, first.ExpiresAt)
			}
			ts, err := f.S.Touch(f.Ctx, queue.TouchInput{EventID: f.Ev, UserID: "a", Now: now, DefaultThreshold: 5})
			if err != nil || !ts.ExpiresAt.Equal(first.ExpiresAt) {
				t.Fatalf("touch %d: %+v, %v", i, ts, err)
			}
		}
		// Once expired, the next check is a fresh join.
		s := f.Check("a", 1, t0.Add(ttl), 5)
		if !s.Activated || !s.ExpiresAt.Equal(t0.Add(2*ttl)) {
			t.Fatalf("after expiry: %+v", s)
		}
	})

	t.Run("touch refreshes only and reports unknown users", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		s, err := f.S.Touch(f.Ctx, queue.TouchInput{EventID: f.Ev, UserID: "ghost", Now: t0, DefaultThreshold: 3})
		if err != nil || s.Status != "" {
			t.Fatalf("ghost: %+v, %v", s, err)
		}
		f.Check("a", 1, t0, 1)
		f.Check("b", 2, t0, 1)
		later := t0.Add(time.Minute)
		s, err = f.S.Touch(f.Ctx, queue.TouchInput{EventID: f.Ev, UserID: "b", Now: later, DefaultThreshold: 1})
		if err != nil || s.Status != queue.StatusQueued || s.Rank != 0 {
			t.Fatalf("b: %+v, %v", s, err)
		}
		// The heartbeat is the score's tick; the base (the order) stays.
		if _, by := f.line(later); by["b"].Base != 2 || !by["b"].Heard.Equal(heard(later)) {
			t.Fatalf("b in line: %+v, want base 2 heard at %v's tick", by["b"], later)
		}
		if st := f.stats(later); st.QueueSize != 1 || st.ActiveCount != 1 {
			t.Fatalf("touch changed the line or the active set: %+v", st)
		}
	})

	t.Run("leave frees the slot", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("a", 1, t0, 1)
		f.Check("b", 2, t0, 1)
		for _, c := range []struct {
			uid  string
			want bool
		}{{"a", true}, {"a", false}, {"nobody", false}} {
			got, err := f.S.Leave(f.Ctx, queue.LeaveInput{EventID: f.Ev, UserID: c.uid})
			if err != nil || got != c.want {
				t.Fatalf("Leave(%s) = %v, %v; want %v", c.uid, got, err, c.want)
			}
		}
		res := f.Admit(t0, 1, 10)
		if fmt.Sprint(res.Admitted) != "[b]" || res.ActiveCount != 1 || res.QueueSize != 0 {
			t.Fatalf("after leave: %+v", res)
		}
		if ok, _ := f.S.Leave(f.Ctx, queue.LeaveInput{EventID: f.Ev, UserID: "b"}); !ok {
			t.Fatal("leave of an active user reported nothing removed")
		}
		if st := f.stats(t0); st.QueueSize != 0 || st.ActiveCount != 0 {
			t.Fatalf("leave of an active user left %+v", st)
		}
	})

	t.Run("admission follows position and never exceeds threshold", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("first", 100, t0, 1) // direct; the line forms behind it
		for _, p := range []int64{8, 2, 6, 4, 10, 1, 9, 3, 7, 5} {
			f.Check(fmt.Sprintf("p%02d", p), p, t0, 1)
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
			res := f.Admit(st.now, 3, st.batch)
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
		if n := f.stats(t0.Add(ttl)).QueueSize; n != 5 {
			t.Fatalf("%d in line, want the 5 still queued", n)
		}
	})

	t.Run("per-event threshold overrides the default", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		if err := f.S.SetThreshold(f.Ctx, f.Ev, 1); err != nil {
			t.Fatal(err)
		}
		f.Check("a", 1, t0, 100)
		if s := f.Check("b", 2, t0, 100); s.Status != queue.StatusQueued || s.Threshold != 1 {
			t.Fatalf("b: %+v", s)
		}
		if err := f.S.SetThreshold(f.Ctx, f.Ev, 2); err != nil {
			t.Fatal(err)
		}
		if res := f.Admit(t0, 100, 100); fmt.Sprint(res.Admitted) != "[b]" {
			t.Fatalf("after raising: %+v", res)
		}
	})

	t.Run("admission rate counts the last minute", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("a", 1, t0, 1)
		for i := 2; i <= 4; i++ {
			f.Check(fmt.Sprint("u", i), int64(i), t0, 1)
		}
		if _, err := f.S.Leave(f.Ctx, queue.LeaveInput{EventID: f.Ev, UserID: "a"}); err != nil {
			t.Fatal(err)
		}
		f.Admit(t0.Add(30*time.Second), 10, 10)
		for _, c := range []struct {
			at   time.Duration
			want int64
		}{{30 * time.Second, 4}, {59 * time.Second, 4}, {60 * time.Second, 3}, {90 * time.Second, 0}} {
			st, err := f.S.Stats(f.Ctx, f.Ev, t0.Add(c.at), 10)
			if err != nil || st.AdmittedLastMinute != c.want {
				t.Fatalf("at +%v: %+v, %v; want %d admitted", c.at, st, err, c.want)
			}
		}
	})

	t.Run("stats read counters without writing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("a", 1, t0, 1)
		f.Check("b", 2, t0.Add(time.Second), 1)
		f.Check("c", 3, t0.Add(2*time.Second), 1)
		// Before any stale sweep the oldest heartbeat is unknown.
		if st, err := f.S.Stats(f.Ctx, f.Ev, t0.Add(30*time.Second), 1); err != nil || !st.OldestHeartbeat.IsZero() {
			t.Fatalf("oldest heartbeat before a sweep: %+v, %v", st, err)
		}
		if n, err := f.S.Sweep(f.Ctx, f.Ev, t0.Add(30*time.Second), ttl); err != nil || n != 0 {
			t.Fatalf("Sweep = %d, %v", n, err)
		}
		st, err := f.S.Stats(f.Ctx, f.Ev, t0.Add(30*time.Second), 1)
		// b's heartbeat at t0+1 s, to its tick's start.
		want := queue.StoreStats{QueueSize: 2, ActiveCount: 1, Threshold: 1, AdmittedLastMinute: 1, RateSince: t0,
			OldestHeartbeat: t0.Add(time.Second).Truncate(queue.HeartbeatTick)}
		if err != nil || st != want {
			t.Fatalf("got %+v, %v; want %+v", st, err, want)
		}
		st, _ = f.S.Stats(f.Ctx, f.Ev, t0.Add(ttl), 1)
		if st.ActiveCount != 0 {
			t.Fatalf("expired active counted (%d)", st.ActiveCount)
		}
	})

	t.Run("stale cleanup drops silent waiters, never early, and notes the oldest kept", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		const seenTTL = 100 * time.Second
		f.Check("a", 1, t0, 1)
		f.Check("silent", 2, t0, 1)
		f.Check("alive", 3, t0, 1)
		f.Check("late", 4, t0, 1)
		f.Check("alive", 3, t0.Add(500*time.Second), 1) // heartbeats
		f.Check("late", 4, t0.Add(410*time.Second), 1)
		// 100 s after late's heartbeat: silent that long at most, so kept.
		n, err := f.S.Sweep(f.Ctx, f.Ev, t0.Add(510*time.Second), seenTTL)
		if err != nil || n != 1 {
			t.Fatalf("Sweep = %d, %v; want 1 (silent)", n, err)
		}
		if members, _ := f.line(t0.Add(510 * time.Second)); fmt.Sprint(members) != "[alive late]" {
			t.Fatalf("line = %v, want [alive late]", members)
		}
		// The oldest heartbeat kept is late's, to the start of its tick.
		st, err := f.S.Stats(f.Ctx, f.Ev, t0.Add(510*time.Second), 1)
		tick := queue.HeartbeatTick
		if want := t0.Add(410 * time.Second).Truncate(tick); err != nil || !st.OldestHeartbeat.Equal(want) {
			t.Fatalf("oldest heartbeat %v, %v; want %v", st.OldestHeartbeat, err, want)
		}
		// Two ticks later late has surely been silent for the TTL.
		if n, err := f.S.Sweep(f.Ctx, f.Ev, t0.Add(410*time.Second+seenTTL+2*tick), seenTTL); err != nil || n != 1 {
			t.Fatalf("second sweep = %d, %v; want 1 (late)", n, err)
		}
		if st := f.stats(t0.Add(time.Second)); st.ActiveCount != 1 {
			t.Fatalf("cleanup touched the active user: %+v", st)
		}
	})

	t.Run("stale cleanup sweeps a long line", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("a", 1, t0, 1)
		for i := 0; i < longLine+5; i++ {
			f.Check(fmt.Sprint("u", i), int64(i+2), t0, 1)
		}
		keep := fmt.Sprint("u", longLine+2) // on the second page
		f.Check(keep, int64(longLine+4), t0.Add(time.Hour), 1)
		n, err := f.S.Sweep(f.Ctx, f.Ev, t0.Add(time.Hour), time.Minute)
		if err != nil || n != longLine+4 {
			t.Fatalf("removed %d, %v; want %d", n, err, longLine+4)
		}
		if members, _ := f.line(t0.Add(time.Hour)); fmt.Sprint(members) != "["+keep+"]" {
			t.Fatalf("line = %v, want [%s]", members, keep)
		}
	})

	t.Run("an admission claim has one owner, released by that owner alone, and lapses", func(t *testing.T) {
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
				got, err = f.S.ClaimAdmission(f.Ctx, f.Ev, st.owner, 4*time.Second)
			} else {
				got, err = f.S.ReleaseAdmission(f.Ctx, f.Ev, st.owner)
			}
			if err != nil || got != st.want {
				t.Fatalf("step %d %s(%s) = %v, %v; want %v", i, st.op, st.owner, got, err, st.want)
			}
		}
		// A pass that dies blocks the event for the claim's ttl at most.
		g := setup(t, newStore)
		if ok, err := g.S.ClaimAdmission(g.Ctx, g.Ev, "dies", lapse); err != nil || !ok {
			t.Fatalf("ClaimAdmission = %v, %v", ok, err)
		}
		g.elapse(2 * lapse)
		if ok, err := g.S.ClaimAdmission(g.Ctx, g.Ev, "next", time.Minute); err != nil || !ok {
			t.Fatalf("ClaimAdmission after the claim lapsed = %v, %v; want true", ok, err)
		}
	})

	t.Run("rankings count each period's admissions, best first", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		g := &fixture{Fixture: &Fixture{T: t, S: f.S, Ctx: f.Ctx, Ev: f.Ev + "-g"}, h: f.h}
		// 2021-01-03 is a Sunday in ISO week 2020-W53.
		now := time.Date(2021, 1, 3, 23, 59, 0, 0, time.UTC)
		f.Check("direct", 1, now, 1) // a direct entry counts too
		for i := 2; i <= 4; i++ {
			f.Check(fmt.Sprint("u", i), int64(i), now, 1)
		}
		if res := f.Admit(now, 3, 10); len(res.Admitted) != 2 {
			t.Fatalf("admitted %v", res.Admitted)
		}
		g.Check("x", 1, now, 1)
		g.Admit(now, 1, 10) // adds x's direct entry to the rankings
		for _, period := range []string{"daily", "weekly", "monthly"} {
			r, err := f.S.Ranking(f.Ctx, period, now, 10)
			if err != nil || fmt.Sprint(r) != fmt.Sprint([]queue.RankEntry{{EventID: f.Ev, Admissions: 3}, {EventID: g.Ev, Admissions: 1}}) {
				t.Fatalf("Ranking(%s) = %+v, %v; want %s 3, %s 1", period, r, err, f.Ev, g.Ev)
			}
			if r, err := f.S.Ranking(f.Ctx, period, now, 1); err != nil || len(r) != 1 || r[0].EventID != f.Ev {
				t.Fatalf("Ranking(%s, limit 1) = %+v, %v", period, r, err)
			}
		}
		// Two minutes later it is Monday of 2021-W01, still in January.
		next := now.Add(2 * time.Minute)
		g.Leave("x")
		g.Check("y", 2, next, 1)
		g.Admit(next, 1, 10) // adds y's direct entry to the rankings
		for period, want := range map[string]string{
			"daily":   fmt.Sprint([]queue.RankEntry{{EventID: g.Ev, Admissions: 1}}),
			"weekly":  fmt.Sprint([]queue.RankEntry{{EventID: g.Ev, Admissions: 1}}),
			"monthly": fmt.Sprint([]queue.RankEntry{{EventID: f.Ev, Admissions: 3}, {EventID: g.Ev, Admissions: 2}}),
		} {
			if r, err := f.S.Ranking(f.Ctx, period, next, 10); err != nil || fmt.Sprint(r) != want {
				t.Fatalf("Ranking(%s) on Monday = %+v, %v; want %s", period, r, err, want)
			}
		}
	})

	t.Run("retire drops only empty events", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("a", 1, t0, 1)
		f.Check("b", 2, t0, 1)
		for _, c := range []struct {
			name  string
			leave string
			want  bool
		}{{"queued and active", "", false}, {"active only", "b", false}, {"rank pending only", "a", false}} {
			if c.leave != "" {
				f.Leave(c.leave)
			}
			removed, err := f.S.Retire(f.Ctx, f.Ev)
			if err != nil || removed != c.want || !f.Listed() {
				t.Fatalf("%s: Retire = %v, %v, listed %v", c.name, removed, err, f.Listed())
			}
		}
		f.Admit(t0, 1, 10) // drains the pending ranking count
		removed, err := f.S.Retire(f.Ctx, f.Ev)
		if err != nil || !removed || f.Listed() {
			t.Fatalf("empty: Retire = %v, %v, listed %v", removed, err, f.Listed())
		}
	})

	t.Run("a lost queue is rebuilt at the same positions", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("x", 0, t0, 1)
		for p := int64(2); p <= 5; p++ {
			f.Check(fmt.Sprint("p", p), p, t0, 1)
		}
		f.h.Lose(t, f.Ev)
		f.Check("x", 0, t0.Add(time.Second), 1)
		for _, p := range []int64{4, 2, 5, 3} {
			f.Check(fmt.Sprint("p", p), p, t0.Add(time.Second), 1)
		}
		for p := int64(2); p <= 5; p++ {
			if s := f.Check(fmt.Sprint("p", p), p, t0.Add(2*time.Second), 1); s.Status != queue.StatusQueued || s.Rank != p-2 {
				t.Fatalf("p%d: %+v, want rank %d", p, s, p-2)
			}
		}
		if !f.Listed() {
			t.Fatal("event not relisted after the loss")
		}
	})
}
