package storetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vwr-go/vwr/services/queue"
)

// The line's change log (Store.LineStates, Snapshot.LineSeq and
// LineBase): what an instance answers queued users from memory with
// (services/queue/lines.go).

func (f *fixture) lines(since int64, now time.Time, th int64) queue.LineState {
	f.T.Helper()
	st, err := f.S.LineStates(f.Ctx, []queue.LineQuery{{EventID: f.Ev, Since: since, Now: now, DefaultThreshold: th}})
	if err != nil || len(st) != 1 {
		f.T.Fatalf("LineStates = %+v, %v", st, err)
	}
	if st[0].EventID != f.Ev {
		f.T.Fatalf("LineStates answered for %q, want %q", st[0].EventID, f.Ev)
	}
	return st[0]
}

func kinds(cs []queue.LineChange) string {
	out := ""
	for _, c := range cs {
		out += string(c.Kind)
	}
	return out
}

func runChanges(t *testing.T, newStore Factory) {
	t.Run("an admission pass, a waiter's leave and a join ahead are heard by a subscriber, a join at the tail is not", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		ctx, cancel := context.WithCancel(f.Ctx)
		defer cancel()
		ready, heard, ended := make(chan struct{}), make(chan queue.LinePush, 64), make(chan error, 1)
		// caughtUp, where the store has one, says false while a message
		// is being handled, and true once every one sent was.
		var caughtUp func() bool
		var early atomic.Int64
		go func() {
			ended <- f.S.LineChanges(ctx, func(cu func() bool) { caughtUp = cu; close(ready) }, func(p queue.LinePush) {
				if caughtUp != nil && caughtUp() {
					early.Add(1)
				}
				select {
				case heard <- p:
				default:
				}
			})
		}()
		select {
		case <-ready:
		case err := <-ended:
			t.Fatalf("LineChanges ended before it held: %v", err)
		case <-time.After(5 * time.Second):
			t.Fatal("LineChanges not ready after 5 s")
		}
		hear := func(what string, want queue.LinePush) {
			t.Helper()
			select {
			case p := <-heard:
				if p != want {
					t.Fatalf("%s: heard %+v, want %+v", what, p, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: nothing heard in 5 s", what)
			}
		}
		f.Check("holder", 1, t0, 1)
		f.Check("w1", 10, t0, 1) // change 1, and each join below at the tail: nothing published
		f.Check("w2", 20, t0, 1)
		f.Check("w3", 30, t0, 1)
		if res := f.Admit(t0, 2, 1); len(res.Admitted) != 1 {
			t.Fatalf("Admit: %+v, want w1 let in", res)
		}
		hear("admission pass", queue.LinePush{EventID: f.Ev})
		if res := f.Admit(t0, 2, 1); len(res.Admitted) != 0 {
			t.Fatalf("Admit when full: %+v, want nobody", res)
		}
		f.Leave("w2")                                         // change 5
		hear("waiter's leave", queue.LinePush{EventID: f.Ev}) // the pass that admitted nobody published nothing before it
		if s := f.Check("w0", 15, t0, 1); s.LineSeq != 6 {
			t.Fatalf("a join ahead of w3: %+v, want change 6", s)
		}
		hear("join ahead", queue.LinePush{EventID: f.Ev, Seq: 6, Base: 15})
		f.Check("w4", 40, t0, 1) // at the tail
		f.Leave("holder")        // not a waiter: the line is unchanged
		select {
		case p := <-heard:
			t.Fatalf("a join at the tail or a holder's leave published %+v", p)
		case <-time.After(50 * time.Millisecond):
		}
		if n := early.Load(); n != 0 {
			t.Fatalf("caught up said true while %d messages were being handled", n)
		}
		if caughtUp != nil {
			for deadline := time.Now().Add(5 * time.Second); !caughtUp(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("every message handled 5 s ago, and not caught up")
				}
			}
		}
		cancel()
		select {
		case err := <-ended:
			if err == nil {
				t.Fatal("LineChanges returned nil after ctx ended, want its error")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("LineChanges still runs 5 s after ctx ended")
		}
	})
	t.Run("every change of who is in line is logged once, and a queued step says where the log stood", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		if s := f.Check("holder", 5, t0, 2); !s.Activated || s.LineSeq != 0 {
			t.Fatalf("direct entry: %+v, want activated and no change logged", s)
		}
		if st := f.lines(-1, t0, 2); st.Seq != 0 || st.Gap || len(st.Changes) != 0 || st.Front != -1 {
			t.Fatalf("before any waiter: %+v", st)
		}
		// A second holder fills the threshold, then three waiters.
		f.Check("holder2", 6, t0, 2)
		w1 := f.Check("w1", 10, t0, 2)
		if w1.Status != queue.StatusQueued || w1.LineSeq != 1 || w1.LineBase != 10 {
			t.Fatalf("w1: %+v, want queued at change 1, base 10", w1)
		}
		f.Check("w3", 30, t0, 2)
		w2 := f.Check("w2", 20, t0, 2)
		if w2.Rank != 1 || w2.LineSeq != 3 || w2.LineBase != 20 {
			t.Fatalf("w2: %+v, want rank 1 at change 3, base 20", w2)
		}
		// Polls change nothing in the log.
		again := f.Check("w1", 10, t0.Add(time.Second), 2)
		touch, err := f.S.Touch(f.Ctx, queue.TouchInput{EventID: f.Ev, UserID: "w3", Now: t0.Add(time.Second), DefaultThreshold: 2})
		if err != nil || again.LineSeq != 3 || touch.LineSeq != 3 || touch.LineBase != 30 || touch.Rank != 2 {
			t.Fatalf("polls: check %+v, touch %+v, %v; want change 3, w3 at base 30 rank 2", again, touch, err)
		}
		st := f.lines(1, t0, 2)
		if st.Seq != 3 || st.Gap || kinds(st.Changes) != "JJ" || st.Changes[0].Base != 30 || st.Changes[1].Base != 20 {
			t.Fatalf("after change 1: %+v, want the joins of 30 and 20", st)
		}
		if st.QueueSize != 3 || st.ActiveCount != 2 || st.Threshold != 2 || st.AdmittedLastMinute != 2 || !st.RateSince.Equal(t0) || st.Front != -1 {
			t.Fatalf("counters: %+v", st)
		}
		// The change at the cursor comes along (a reader checks it is the
		// one it read under that number); none for cursor 0.
		if st.Prev == nil || *st.Prev != (queue.LineChange{Kind: queue.LineJoined, Base: 10}) {
			t.Fatalf("the change at cursor 1: %+v, want w1's join", st.Prev)
		}
		if st := f.lines(3, t0, 2); st.Prev == nil || *st.Prev != (queue.LineChange{Kind: queue.LineJoined, Base: 20}) || len(st.Changes) != 0 {
			t.Fatalf("at the end of the log: %+v, want the last change at the cursor and none after", st)
		}
		if st := f.lines(0, t0, 2); st.Prev != nil || len(st.Changes) != 3 {
			t.Fatalf("from cursor 0: %+v, want no change at the cursor", st)
		}
		// A slot frees; the pass lets w1 in: one entry for the batch, and
		// the frontier moves to its base.
		f.Leave("holder")
		if res := f.Admit(t0.Add(2*time.Second), 2, 10); len(res.Admitted) != 1 || res.Admitted[0] != "w1" {
			t.Fatalf("admitted %v", res.Admitted)
		}
		// w2 leaves; w3 is swept as silent.
		f.Leave("w2")
		if n, err := f.S.Sweep(f.Ctx, f.Ev, t0.Add(time.Hour), time.Minute); err != nil || n != 1 {
			t.Fatalf("CleanupStale = %d, %v", n, err)
		}
		st = f.lines(3, t0.Add(3*time.Second), 2)
		want := []queue.LineChange{
			{Kind: queue.LineAdmitted, N: 1, Base: 10},
			{Kind: queue.LineLeft, Base: 20, UserID: "w2"},
			{Kind: queue.LineSwept, Base: 30, UserID: "w3"},
		}
		if st.Seq != 6 || st.Gap || len(st.Changes) != len(want) || st.Front != 10 || st.QueueSize != 0 {
			t.Fatalf("after the pass, the leave and the sweep: %+v", st)
		}
		for i := range want {
			if st.Changes[i] != want[i] {
				t.Fatalf("change %d = %+v, want %+v", 4+i, st.Changes[i], want[i])
			}
		}
		// A holder's leave changes nobody's place in line: not logged.
		f.Leave("holder2")
		if st := f.lines(6, t0.Add(3*time.Second), 2); st.Seq != 6 || len(st.Changes) != 0 || st.Gap {
			t.Fatalf("after a holder left: %+v", st)
		}
		// Answers for someone not queued carry no place.
		if s := f.Check("w1", 10, t0.Add(4*time.Second), 2); s.Status != queue.StatusActive || s.LineSeq != 0 || s.LineBase != 0 {
			t.Fatalf("w1 let in: %+v", s)
		}
	})

	t.Run("a cursor ahead of the log is a gap", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("holder", 1, t0, 1)
		f.Check("w", 2, t0, 1)
		if st := f.lines(7, t0, 1); !st.Gap || st.Seq != 1 || len(st.Changes) != 0 {
			t.Fatalf("cursor ahead (the log started again): %+v, want a gap", st)
		}
	})

	t.Run("the read shows the epoch and a running recovery window", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		in := queue.CheckInput{EventID: f.Ev, UserID: "holder", Score: 1, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1,
			Epoch: queue.EpochInput{Candidate: "e1", Window: 25 * time.Second}}
		if _, err := f.S.Check(f.Ctx, in); err != nil {
			t.Fatal(err)
		}
		if st := f.lines(-1, t0, 1); st.Epoch.ID != "e1" || !st.Epoch.RecoveringUntil.IsZero() {
			t.Fatalf("epoch %+v, want e1 and no window", st.Epoch)
		}
		f.h.Lose(t, f.Ev)
		if st := f.lines(-1, t0, 1); st.Epoch.ID != "" || st.Seq != 0 {
			t.Fatalf("after the loss: %+v, want no epoch and no changes", st)
		}
		in.UserID, in.Epoch = "w", queue.EpochInput{Known: "e1", Candidate: "e2", Window: 25 * time.Second}
		if _, err := f.S.Check(f.Ctx, in); err != nil {
			t.Fatal(err)
		}
		if st := f.lines(-1, t0.Add(time.Second), 1); st.Epoch.ID != "e2" || !st.Epoch.RecoveringUntil.Equal(t0.Add(25*time.Second)) {
			t.Fatalf("epoch %+v, want e2 recovering until %v", st.Epoch, t0.Add(25*time.Second))
		}
	})

	t.Run("a replay that takes waiters out of the line logs a reset", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		in := queue.CheckInput{EventID: f.Ev, UserID: "holder", Score: 1, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1,
			Epoch: queue.EpochInput{Candidate: "e1", Window: 25 * time.Second}, Pass: true}
		if _, err := f.S.Check(f.Ctx, in); err != nil {
			t.Fatal(err)
		}
		f.h.Lose(t, f.Ev)
		// After the loss the holder polls and joins the line again; the
		// replay knows they hold a slot and takes them out of it.
		in.Epoch = queue.EpochInput{Known: "e1", Candidate: "e2", Window: 25 * time.Second}
		in.Now = t0.Add(time.Second)
		if s, err := f.S.Check(f.Ctx, in); err != nil || s.Status != queue.StatusQueued {
			t.Fatalf("holder after the loss: %+v, %v", s, err)
		}
		seq := f.lines(-1, in.Now, 1).Seq
		if _, err := f.S.Replay(f.Ctx, queue.ReplayInput{EventID: f.Ev, Now: in.Now,
			Entries: []queue.Served{{UserID: "holder", Pass: true, SlotEnd: t0.Add(ttl)}}}); err != nil {
			t.Fatal(err)
		}
		if st := f.lines(seq, in.Now, 1); kinds(st.Changes) != "X" || st.QueueSize != 0 {
			t.Fatalf("after the replay: %+v, want one reset", st)
		}
	})
}
