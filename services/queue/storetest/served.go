package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/vwr-go/vwr/services/queue"
)

// runServed is the part of the suite about the served record: one
// admission per pass, leaves, the idle limit, the durable ledger's queue of
// changes and the replay after a loss.

const (
	idle  = 60 * time.Second
	grace = 5 * time.Second // queue.RebuildGrace
)

// in is a CheckInput of the fixture's event with the idle limit on.
func (f *fixture) in(uid string, score int64, now time.Time, threshold int64, pass bool) queue.CheckInput {
	return queue.CheckInput{EventID: f.Ev, UserID: uid, Score: score, Now: now, ActiveTTL: ttl, DefaultThreshold: threshold,
		Pass: pass, Idle: idle}
}

func (f *fixture) checkIn(in queue.CheckInput) queue.Snapshot {
	f.T.Helper()
	snap, err := f.S.Check(f.Ctx, in)
	if err != nil {
		f.T.Fatalf("Check(%s): %v", in.UserID, err)
	}
	return snap
}

// pass checks uid in with a Tier 1 pass at position pos.
func (f *fixture) pass(uid string, pos int64, now time.Time, threshold int64) queue.Snapshot {
	f.T.Helper()
	return f.checkIn(f.in(uid, pos, now, threshold, true))
}

func (f *fixture) touch(uid string, now time.Time) queue.Snapshot {
	f.T.Helper()
	s, err := f.S.Touch(f.Ctx, queue.TouchInput{EventID: f.Ev, UserID: uid, Now: now, DefaultThreshold: 10, Idle: idle})
	if err != nil {
		f.T.Fatalf("Touch(%s): %v", uid, err)
	}
	return s
}

func (f *fixture) leavePass(uid string, ledger bool) {
	f.T.Helper()
	if _, err := f.S.Leave(f.Ctx, queue.LeaveInput{EventID: f.Ev, UserID: uid, Pass: true, Ledger: ledger}); err != nil {
		f.T.Fatalf("Leave(%s): %v", uid, err)
	}
}

func (f *fixture) admitIn(in queue.AdmitInput) queue.AdmitResult {
	f.T.Helper()
	in.EventID, in.ActiveTTL, in.Batch = f.Ev, ttl, max(in.Batch, 10)
	res, err := f.S.Admit(f.Ctx, in)
	if err != nil {
		f.T.Fatalf("Admit: %v", err)
	}
	return res
}

// lose makes the store lose the event's state, as a FLUSHALL does.
func (f *fixture) lose() {
	f.T.Helper()
	f.h.Lose(f.T, f.Ev)
}

func (f *fixture) replay(now time.Time, finish string, ledger bool, entries ...queue.Served) int {
	f.T.Helper()
	n, err := f.S.Replay(f.Ctx, queue.ReplayInput{EventID: f.Ev, Entries: entries, Now: now, Finish: finish, Ledger: ledger,
		RebuildGrace: grace})
	if err != nil {
		f.T.Fatal(err)
	}
	return n
}

func left(uid string, pass bool) queue.Served {
	return queue.Served{UserID: uid, Pass: pass, Left: true}
}
func slotOf(uid string, pass bool, end time.Time) queue.Served {
	return queue.Served{UserID: uid, Pass: pass, SlotEnd: end}
}

func runServed(t *testing.T, newStore Factory) {
	t.Run("a pass is admitted once: after a leave, the slot's end or the idle limit it is done", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		// a: admitted, leaves, comes back with the same pass.
		if s := f.pass("a", 1, t0, 5); s.Status != queue.StatusActive || !s.Activated {
			t.Fatalf("a: %+v", s)
		}
		f.leavePass("a", false)
		// b: admitted and stays to the slot's end; c: admitted and silent.
		f.pass("b", 2, t0, 5)
		f.pass("c", 3, t0, 5)
		for now := t0; now.Before(t0.Add(ttl)); now = now.Add(idle / 2) {
			if s := f.touch("b", now); s.Status != queue.StatusActive {
				t.Fatalf("b renewing at %v: %+v", now.Sub(t0), s)
			}
		}
		end := t0.Add(ttl)
		for _, c := range []struct {
			uid, done string
			at        time.Time
		}{{"a", queue.DoneLeft, end.Add(-time.Second)}, {"c", queue.DoneIdle, end.Add(-time.Second)}, {"b", queue.DoneSlotEnded, end}} {
			s := f.pass(c.uid, 1, c.at, 5)
			if s.Status != queue.StatusDone || s.Done != c.done || s.Activated || s.QueueSize != 0 {
				t.Fatalf("%s again: %+v, want done (%s) and nothing taken", c.uid, s, c.done)
			}
			if ts := f.touch(c.uid, c.at); ts.Status != "" || ts.Done != c.done {
				t.Fatalf("%s touch: %+v, want unknown, done (%s)", c.uid, ts, c.done)
			}
		}
		if st, err := f.S.Stats(f.Ctx, f.Ev, end, 5); err != nil || st.ActiveCount != 0 || st.QueueSize != 0 {
			t.Fatalf("stats at the end: %+v, %v; want nobody", st, err)
		}
		// A header identity may come back: it joins again, at the back.
		g := setup(t, newStore)
		g.Check("x", 1, t0, 1)
		g.Check("w", t0.UnixMilli(), t0, 1)
		g.Leave("x")
		g.Admit(t0, 1, 1) // w takes the slot x freed
		g.Check("v", t0.Add(time.Second).UnixMilli(), t0.Add(time.Second), 1)
		if s := g.Check("x", t0.Add(2*time.Second).UnixMilli(), t0.Add(2*time.Second), 1); s.Status != queue.StatusQueued || s.Rank != 1 {
			t.Fatalf("a header user after leaving: %+v, want queued behind v", s)
		}
	})

	t.Run("a holder who stops showing up frees the slot after the idle limit", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.pass("a", 1, t0, 1)
		f.pass("b", 2, t0, 1)
		if s := f.touch("a", t0.Add(50*time.Second)); s.Status != queue.StatusActive || !s.ExpiresAt.Equal(t0.Add(ttl)) {
			t.Fatalf("a's heartbeat: %+v, want active until the slot's end", s)
		}
		if s := f.pass("a", 1, t0.Add(100*time.Second), 1); s.Status != queue.StatusActive {
			t.Fatalf("a checking 50 s after its heartbeat: %+v", s)
		}
		if res := f.admitIn(queue.AdmitInput{Now: t0.Add(159 * time.Second), DefaultThreshold: 1}); len(res.Admitted) != 0 {
			t.Fatalf("admitted %v while a held the slot", res.Admitted)
		}
		res := f.admitIn(queue.AdmitInput{Now: t0.Add(160 * time.Second), DefaultThreshold: 1, ClaimGrace: 65 * time.Second})
		if fmt.Sprint(res.Admitted) != "[b]" || res.ActiveCount != 1 {
			t.Fatalf("after a's idle limit: %+v, want b let in", res)
		}
		if s := f.touch("a", t0.Add(160*time.Second)); s.Status != "" || s.Done != queue.DoneIdle {
			t.Fatalf("a after the idle limit: %+v", s)
		}
		// b, let in by the worker, has the claim grace to show up first.
		if s := f.touch("b", t0.Add(224*time.Second)); s.Status != queue.StatusActive {
			t.Fatalf("b claiming within the grace: %+v", s)
		}
		if s := f.touch("b", t0.Add(285*time.Second)); s.Status != "" || s.Done != queue.DoneIdle {
			t.Fatalf("b silent for the idle limit after its claim: %+v", s)
		}
	})

	t.Run("a slot the idle limit freed is noted for the ledger, and no replay hands it back", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		in := f.in("a", 1, t0, 1, true)
		in.Ledger = true
		f.checkIn(in) // a: a direct entry, then silent
		in.UserID, in.Score = "b", 2
		f.checkIn(in) // b waits
		at := t0.Add(idle)
		res := f.admitIn(queue.AdmitInput{Now: at, DefaultThreshold: 1, Ledger: true, ClaimGrace: 65 * time.Second})
		got := map[string]string{}
		for _, e := range res.Unlogged {
			got[e.UserID] = e.Value()
		}
		idled := queue.Served{UserID: "a", Pass: true, Idle: true}
		want := map[string]string{"a": idled.Value(), "b": slotOf("b", true, at.Add(ttl)).Value()}
		if fmt.Sprint(res.Admitted) != "[b]" || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after a's idle limit: admitted %v, unlogged %v; want [b], %v", res.Admitted, got, want)
		}
		if back, err := queue.ParseServed("a", idled.Value()); err != nil || back != idled {
			t.Fatalf("ParseServed(%q) = %+v, %v", idled.Value(), back, err)
		}
		// A slot that simply ended is no change: nothing for the ledger.
		if err := f.S.Logged(f.Ctx, f.Ev, res.Unlogged); err != nil {
			t.Fatal(err)
		}
		end := at.Add(ttl)
		f.touch("b", end.Add(-time.Second))
		if res := f.admitIn(queue.AdmitInput{Now: end, DefaultThreshold: 1, Ledger: true}); len(res.Unlogged) != 0 {
			t.Fatalf("a slot's end noted %+v", res.Unlogged)
		}
		// The store is lost; the ledger says a was let in (an older entry),
		// then freed idle, and b holds the slot. The replay puts b back,
		// not a, and a's pass is done, token or not.
		g := setup(t, newStore)
		ep := queue.EpochInput{Known: "gone", Candidate: "new-epoch", Window: time.Minute}
		now := at.Add(time.Second)
		g.admitIn(queue.AdmitInput{Now: now, DefaultThreshold: 1, Ledger: true, Epoch: ep})
		g.replay(now, "new-epoch", true, slotOf("a", true, t0.Add(ttl)), slotOf("b", true, at.Add(ttl)), idled)
		if st, err := g.S.Stats(g.Ctx, g.Ev, now, 1); err != nil || st.ActiveCount != 1 {
			t.Fatalf("after the replay: %+v, %v; want b alone active", st, err)
		}
		for _, holder := range []time.Time{{}, t0.Add(ttl)} {
			ia := g.in("a", 1, now, 1, true)
			ia.Ledger, ia.Epoch, ia.HolderSlotEnd = true, ep, holder
			if s := g.checkIn(ia); s.Status != queue.StatusDone || s.Done != queue.DoneIdle || s.ActiveCount != 1 {
				t.Fatalf("a back in the window (token slot %v): %+v, want done (idle), b alone active", holder, s)
			}
		}
	})

	t.Run("served changes wait for the ledger until logged", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		in := f.in("d", 1, t0, 2, true)
		in.Ledger = true
		f.checkIn(in) // a direct entry
		in.UserID, in.Score, in.DefaultThreshold = "q", 5, 1
		f.checkIn(in)
		in.UserID, in.Score, in.Pass = "h", 6, false
		f.checkIn(in) // q and h wait
		f.leavePass("d", true)
		res := f.admitIn(queue.AdmitInput{Now: t0.Add(time.Second), DefaultThreshold: 2, Ledger: true})
		slot := t0.Add(time.Second + ttl)
		got := map[string]string{}
		for _, e := range res.Unlogged {
			got[e.UserID] = e.Value()
		}
		want := map[string]string{"d": left("d", true).Value(), "q": slotOf("q", true, slot).Value(), "h": slotOf("h", false, slot).Value()}
		if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(res.Header) != "[h]" {
			t.Fatalf("unlogged %v, header %v; want %v, [h]", got, res.Header, want)
		}
		// q leaves before the append is done: only the rest is forgotten.
		f.leavePass("q", true)
		if err := f.S.Logged(f.Ctx, f.Ev, res.Unlogged); err != nil {
			t.Fatal(err)
		}
		res = f.admitIn(queue.AdmitInput{Now: t0.Add(2 * time.Second), DefaultThreshold: 2, Ledger: true})
		if len(res.Unlogged) != 1 || res.Unlogged[0] != left("q", true) {
			t.Fatalf("after logging: %+v, want only q's leave", res.Unlogged)
		}
		// Empty, but with a change waiting for the ledger: not retired.
		f.Leave("h")
		if retired, err := f.S.Retire(f.Ctx, f.Ev); err != nil || retired {
			t.Fatalf("Retire with q's leave unlogged = %v, %v; want kept", retired, err)
		}
		// Without the ledger nothing is queued for it.
		g := setup(t, newStore)
		g.pass("d", 1, t0, 2)
		if res := g.admitIn(queue.AdmitInput{Now: t0, DefaultThreshold: 2}); len(res.Unlogged) != 0 {
			t.Fatalf("unlogged without a ledger: %+v", res.Unlogged)
		}
	})

	t.Run("relog queues the whole served record for the ledger again, never over a newer change", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		var want []string
		for i := range 2500 { // more than one page
			uid := fmt.Sprintf("u%04d", i)
			in := f.in(uid, int64(i+1), t0, 5000, true)
			in.Ledger = true
			f.checkIn(in)
			want = append(want, uid)
		}
		f.leavePass("u0000", true)
		res := f.admitIn(queue.AdmitInput{Now: t0, DefaultThreshold: 5000, Ledger: true})
		if len(res.Unlogged) != 2500 {
			t.Fatalf("unlogged %d, want 2500", len(res.Unlogged))
		}
		if err := f.S.Logged(f.Ctx, f.Ev, res.Unlogged); err != nil {
			t.Fatal(err)
		}
		// The event was retired meanwhile: relog lists it again.
		f.h.Unlist(t, f.Ev)
		f.leavePass("u0001", true) // a change already queued stays as it is
		n, err := f.S.Relog(f.Ctx, f.Ev)
		if err != nil || n != 2499 {
			t.Fatalf("Relog: %d, %v; want 2499 (u0001's leave was queued already)", n, err)
		}
		if !f.Listed() {
			t.Fatal("relog left the event unlisted: no worker would append what it queued")
		}
		res = f.admitIn(queue.AdmitInput{Now: t0.Add(time.Second), DefaultThreshold: 5000, Ledger: true})
		got := map[string]string{}
		for _, e := range res.Unlogged {
			got[e.UserID] = e.Value()
		}
		if len(got) != 2500 || got["u0000"] != left("u0000", true).Value() || got["u0001"] != left("u0001", true).Value() ||
			got["u2499"] != slotOf("u2499", true, t0.Add(ttl)).Value() {
			t.Fatalf("queued again: %d entries, u0000 %q, u0001 %q, u2499 %q", len(got), got["u0000"], got["u0001"], got["u2499"])
		}
		// An event with no served record queues nothing and stays unlisted.
		g := setup(t, newStore)
		if n, err := g.S.Relog(g.Ctx, g.Ev); err != nil || n != 0 || g.Listed() {
			t.Fatalf("Relog of an empty event: %d, %v, listed %v", n, err, g.Listed())
		}
	})

	t.Run("a loss awaits the ledger's replay, which rebuilds who was served", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		win := 25 * time.Second
		ep := func(known string) queue.EpochInput {
			return queue.EpochInput{Known: known, Candidate: fmt.Sprint("e-", known, "-", time.Now().UnixNano()), Window: win}
		}
		ledgerIn := func(uid string, pos int64, now time.Time, known string, holder time.Time) queue.CheckInput {
			in := f.in(uid, pos, now, 3, true)
			in.Ledger, in.Epoch, in.HolderSlotEnd = true, ep(known), holder
			return in
		}
		first := f.checkIn(ledgerIn("x", 1, t0, "", time.Time{}))
		slot := t0.Add(ttl)
		f.lose()
		now := t0.Add(time.Minute)
		// Back after the loss, before the replay: whoever the store lost is
		// asked to come back in a moment (only the ledger can tell who they
		// were): a leaver, a leaver's token, a waiter, a header user.
		for _, in := range []queue.CheckInput{
			ledgerIn("left-again", 2, now, first.Epoch.ID, time.Time{}),
			ledgerIn("left-token", 3, now, first.Epoch.ID, slot),
			ledgerIn("waiter", 4, now, first.Epoch.ID, time.Time{}),
		} {
			if s := f.checkIn(in); s.Status != queue.StatusWait || s.QueueSize != 0 || s.ActiveCount != 0 || s.Epoch.RecoveringUntil.IsZero() {
				t.Fatalf("%s after the loss: %+v, want wait during a window", in.UserID, s)
			}
		}
		in := f.in("hx", now.UnixMilli(), now, 3, false)
		in.Ledger, in.Epoch = true, ep(first.Epoch.ID)
		if s := f.checkIn(in); s.Status != queue.StatusWait {
			t.Fatalf("a header user after the loss: %+v, want wait", s)
		}
		// Past the window the replay still blocks admissions.
		after := now.Add(win + time.Second)
		res := f.admitIn(queue.AdmitInput{Now: after, DefaultThreshold: 3, Ledger: true, Epoch: ep(first.Epoch.ID)})
		if !res.Replay || len(res.Admitted) != 0 || len(res.Unlogged) != 0 || res.Epoch.RecoveringUntil.IsZero() {
			t.Fatalf("admission before the replay: %+v, want none, replay pending, changes kept", res)
		}
		// The ledger, in chunks and order: x held a slot, left-again and
		// left-token left (after an earlier admission), ended's slot is
		// over, unclaimed was let in, hx (header) left.
		n := f.replay(after, "", true, slotOf("left-again", true, slot), slotOf("x", true, slot), slotOf("left-token", true, slot))
		n += f.replay(after, res.Epoch.ID, true, left("left-again", true), left("left-token", true),
			slotOf("ended", true, after.Add(-time.Second)), slotOf("unclaimed", true, slot), left("hx", false))
		if n != 4 {
			t.Fatalf("replay put back %d, want x, unclaimed, left-again and left-token (for a moment)", n)
		}
		// The replay ended after the window: the line gets the grace to form.
		rebuilt := after.Add(grace)
		for _, c := range []struct{ uid, done string }{{"left-again", queue.DoneLeft}, {"left-token", queue.DoneLeft}, {"ended", queue.DoneSlotEnded}} {
			if s := f.checkIn(ledgerIn(c.uid, 2, after, res.Epoch.ID, slot)); s.Status != queue.StatusDone || s.Done != c.done {
				t.Fatalf("%s after the replay: %+v, want done (%s)", c.uid, s, c.done)
			}
		}
		if s := f.checkIn(ledgerIn("unclaimed", 4, after, res.Epoch.ID, time.Time{})); s.Status != queue.StatusActive || !s.ExpiresAt.Equal(slot) {
			t.Fatalf("unclaimed after the replay: %+v, want its slot", s)
		}
		for _, c := range []struct {
			uid string
			pos int64
		}{{"late", 9}, {"waiter", 4}} {
			if s := f.checkIn(ledgerIn(c.uid, c.pos, after, res.Epoch.ID, time.Time{})); s.Status != queue.StatusQueued || !s.Epoch.RecoveringUntil.Equal(rebuilt) {
				t.Fatalf("%s after the replay: %+v, want queued until %v", c.uid, s, rebuilt)
			}
		}
		in.Now, in.Score, in.Epoch = after, after.UnixMilli(), ep(res.Epoch.ID)
		if s := f.checkIn(in); s.Status != queue.StatusQueued {
			t.Fatalf("a header user who left, after the replay: %+v, want queued again (at the back)", s)
		}
		if res := f.admitIn(queue.AdmitInput{Now: rebuilt.Add(-time.Millisecond), DefaultThreshold: 3, Ledger: true, Epoch: ep(res.Epoch.ID)}); len(res.Admitted) != 0 {
			t.Fatalf("admitted %v before the line had its grace", res.Admitted)
		}
		// x never showed up: its slot ends with the window; unclaimed holds one.
		res = f.admitIn(queue.AdmitInput{Now: rebuilt, DefaultThreshold: 3, Ledger: true, Epoch: ep(res.Epoch.ID)})
		if res.Replay || fmt.Sprint(res.Admitted) != "[waiter late]" {
			t.Fatalf("admission after the replay: %+v, want the waiter, then late (unclaimed holds 1 of 3)", res)
		}
	})

	t.Run("a leave since the loss outlives the replay; holders count back only after it", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		ep := queue.EpochInput{Known: "gone", Candidate: "new-epoch", Window: time.Minute}
		slot := t0.Add(ttl)
		in := func(uid string, holder time.Time) queue.CheckInput {
			i := f.in(uid, 1, t0, 5, true)
			i.Ledger, i.Epoch, i.HolderSlotEnd = true, ep, holder
			return i
		}
		if s := f.checkIn(in("back", slot)); s.Status != queue.StatusWait {
			t.Fatalf("a holder before the replay: %+v, want wait", s)
		}
		f.leavePass("gone-now", true) // held a slot before the loss, leaves since
		f.replay(t0, "new-epoch", true, slotOf("back", true, slot), slotOf("gone-now", true, slot), left("leaver", true))
		if s := f.checkIn(in("back", slot)); s.Status != queue.StatusActive || !s.ExpiresAt.Equal(slot) {
			t.Fatalf("back after the replay: %+v, want counted back until its slot's end", s)
		}
		if s := f.checkIn(in("leaver", slot)); s.Status != queue.StatusDone || s.Done != queue.DoneLeft {
			t.Fatalf("leaver after the replay: %+v, want done (left), not counted back", s)
		}
		if s := f.touch("gone-now", t0); s.Status != "" || s.Done != queue.DoneLeft {
			t.Fatalf("gone-now: %+v, want gone (left): the leave since the loss is newer than the ledger", s)
		}
	})

	t.Run("a valid entry token for an event without an epoch means its state was lost", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		in := f.in("h", 1, t0, 3, true)
		in.Ledger, in.HolderSlotEnd = true, t0.Add(ttl)
		in.Epoch = queue.EpochInput{Candidate: "fresh", Window: time.Minute} // an instance that knows no epoch
		if s := f.checkIn(in); s.Status != queue.StatusWait || s.Epoch.RecoveringUntil.IsZero() {
			t.Fatalf("a holder of an event without an epoch: %+v, want a window and the replay awaited", s)
		}
		// Without a token, the same instance starts the epoch as for a new event.
		g := setup(t, newStore)
		fresh := g.in("n", 1, t0, 3, true)
		fresh.Ledger, fresh.Epoch = true, queue.EpochInput{Candidate: "fresh", Window: time.Minute}
		if s := g.checkIn(fresh); s.Status != queue.StatusActive || !s.Epoch.RecoveringUntil.IsZero() {
			t.Fatalf("a newcomer to a new event: %+v, want admitted, no window", s)
		}
	})

	t.Run("replay without a ledger puts unclaimed admissions back only during the window", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		ep := func(known string) queue.EpochInput {
			return queue.EpochInput{Known: known, Candidate: fmt.Sprint("e-", known, "-", time.Now().UnixNano()), Window: 10 * time.Second}
		}
		checkE := func(uid string, score int64, now time.Time, e queue.EpochInput) queue.Snapshot {
			t.Helper()
			in := f.in(uid, score, now, 3, false)
			in.Epoch = e
			return f.checkIn(in)
		}
		slot := t0.Add(ttl)
		// No window runs: nothing is put back.
		first := checkE("x", 1, t0, ep(""))
		if n := f.replay(t0, "", false, slotOf("a", false, slot)); n != 0 || f.stats(t0).ActiveCount != 1 {
			t.Fatalf("restored %d outside a window", n)
		}
		f.lose()
		// The loss is found: a window runs. a had joined the line again.
		now := t0.Add(time.Second)
		if s := checkE("a", 2, now, ep(first.Epoch.ID)); s.Status != queue.StatusQueued || s.Epoch.RecoveringUntil.IsZero() {
			t.Fatalf("a after the loss: %+v", s)
		}
		checkE("c", 5, now, ep(first.Epoch.ID))
		n := f.replay(now, "", false,
			slotOf("a", false, slot),                       // back, and out of the line
			slotOf("b", false, slot),                       // back
			slotOf("f", false, slot),                       // back, but never shows up
			slotOf("d", false, now.Add(-time.Millisecond)), // slot over: not back
		)
		if n != 3 {
			t.Fatalf("restored %d, want 3", n)
		}
		if n := f.replay(now, "", false, slotOf("a", false, slot.Add(time.Hour))); n != 0 {
			t.Fatalf("a restored twice (%d)", n)
		}
		// Showing up, by check (a) or heartbeat (b), claims the slot.
		if s := checkE("a", 2, now, ep(first.Epoch.ID)); s.Status != queue.StatusActive || !s.ExpiresAt.Equal(slot) {
			t.Fatalf("a after restore: %+v, want active until %v", s, slot)
		}
		if s := f.touch("b", now); s.Status != queue.StatusActive || !s.ExpiresAt.Equal(slot) {
			t.Fatalf("b after restore: %+v; want active until %v", s, slot)
		}
		if q := f.stats(now).QueueSize; q != 1 {
			t.Fatalf("line holds %d, want only c", q)
		}
		// f may have left before the loss: its slot ends with the window.
		end := now.Add(10 * time.Second)
		st, err := f.S.Stats(f.Ctx, f.Ev, end, 3)
		if err != nil || st.ActiveCount != 2 {
			t.Fatalf("at the window's end: %+v, %v; want a and b active", st, err)
		}
		// After the window nothing is put back: its slot may be someone else's.
		if n := f.replay(end, "", false, slotOf("e", false, slot)); n != 0 {
			t.Fatalf("restored %d after the window", n)
		}
	})
}
