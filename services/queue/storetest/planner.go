package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/vwr-go/vwr/services/queue"
)

// runPlanner is the part of the suite about what the worker visits and
// who makes its passes: the two schedules, waking, leases, sweep claims,
// epochs, and the largest line bases.
func runPlanner(t *testing.T, newStore Factory) {
	t.Run("the visit schedule answers what is due, most overdue first", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		a, b, c := f.Ev+"-a", f.Ev+"-b", f.Ev+"-c"
		due := func(now time.Time) string {
			t.Helper()
			evs, err := f.S.DueVisits(f.Ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(evs)
		}
		if got := due(t0); got != "[]" {
			t.Fatalf("due on an empty schedule: %s", got)
		}
		for ev, at := range map[string]time.Time{a: t0.Add(2 * time.Second), b: t0, c: t0.Add(time.Hour)} {
			if err := f.S.Schedule(f.Ctx, ev, at, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := due(t0.Add(2*time.Second)), fmt.Sprint([]string{b, a}); got != want {
			t.Fatalf("due = %s, want %s", got, want)
		}
		// A visit that is done schedules the next one, later or sooner.
		if err := f.S.Schedule(f.Ctx, b, t0.Add(3*time.Second), time.Time{}); err != nil {
			t.Fatal(err)
		}
		if got, want := due(t0.Add(2*time.Second)), fmt.Sprint([]string{a}); got != want {
			t.Fatalf("due after b's reschedule = %s, want %s", got, want)
		}
		// Woken: due at once, whatever anyone's clock says; a visit due
		// sooner stays.
		if err := f.S.Wake(f.Ctx, []string{c, f.Ev + "-new"}); err != nil {
			t.Fatal(err)
		}
		if got, want := due(t0.Add(-time.Hour)), fmt.Sprint([]string{c, f.Ev + "-new"}); got != want {
			t.Fatalf("due after the wake = %s, want %s", got, want)
		}
		// Enlist puts on the schedule, due at once, only those not on it.
		n, err := f.S.Enlist(f.Ctx, []string{a, b, f.Ev + "-lost"})
		if err != nil || n != 1 {
			t.Fatalf("Enlist = %d, %v; want 1 (the event missing from the schedule)", n, err)
		}
		if got, want := due(t0), fmt.Sprint([]string{c, f.Ev + "-lost", f.Ev + "-new"}); got != want {
			t.Fatalf("due after the enlist = %s, want %s (a and b keep their visits)", got, want)
		}
		// A raised threshold frees slots: its event is due at once.
		if err := f.S.SetThreshold(f.Ctx, a, 5); err != nil {
			t.Fatal(err)
		}
		if got, want := due(t0), fmt.Sprint([]string{a, c, f.Ev + "-lost", f.Ev + "-new"}); got != want {
			t.Fatalf("due after a's threshold was raised = %s, want %s", got, want)
		}
	})

	t.Run("the sweep schedule keeps a line's first sweep, and a retire takes the event off both", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		sweeps := func(now time.Time) string {
			t.Helper()
			evs, err := f.S.DueSweeps(f.Ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(evs)
		}
		if err := f.S.Schedule(f.Ctx, f.Ev, t0, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		// A later visit that finds the line again keeps the scheduled sweep.
		if err := f.S.Schedule(f.Ctx, f.Ev, t0.Add(time.Second), t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got := sweeps(t0); got != "[]" {
			t.Fatalf("sweeps due before the first = %s", got)
		}
		if got := sweeps(t0.Add(time.Second)); got != fmt.Sprint([]string{f.Ev}) {
			t.Fatalf("sweeps due = %s, want [%s]", got, f.Ev)
		}
		if err := f.S.ScheduleSweep(f.Ctx, f.Ev, t0.Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := sweeps(t0.Add(29 * time.Second)); got != "[]" {
			t.Fatalf("sweeps due before the next = %s", got)
		}
		f.Emptied("a")
		if retired, err := f.S.Retire(f.Ctx, f.Ev); err != nil || !retired {
			t.Fatalf("Retire = %v, %v", retired, err)
		}
		if got := sweeps(t0.Add(time.Hour)); got != "[]" {
			t.Fatalf("sweeps due after the retire = %s", got)
		}
		if evs, err := f.S.DueVisits(f.Ctx, t0.Add(time.Hour)); err != nil || len(evs) != 0 {
			t.Fatalf("visits due after the retire = %v, %v", evs, err)
		}
	})

	t.Run("a check says when it made work no schedule shows yet", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		steps := []struct {
			uid  string
			th   int64
			wake bool
			why  string
		}{
			{"a", 2, true, "the first check lists the event"},
			{"b", 2, false, "a direct entry of a listed event"},
			{"c", 2, true, "the first waiter of an empty line"},
			{"d", 2, false, "a second waiter"},
			{"c", 2, false, "a waiter's poll"},
		}
		for i, st := range steps {
			if s := f.Check(st.uid, int64(i+1), t0, st.th); s.Wake != st.wake {
				t.Fatalf("%s (%s): Wake %v, want %v", st.uid, st.why, s.Wake, st.wake)
			}
		}
	})

	t.Run("a duty's lease has one holder, renewed by it, until it lapses", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		duty := f.Ev // a duty of this test's own
		steps := []struct {
			owner string
			want  bool
		}{{"w1", true}, {"w2", false}, {"w1", true}, {"w2", false}}
		for i, st := range steps {
			if ok, err := f.S.Lease(f.Ctx, duty, st.owner, time.Minute); err != nil || ok != st.want {
				t.Fatalf("step %d Lease(%s) = %v, %v; want %v", i, st.owner, ok, err, st.want)
			}
		}
		other := duty + "-other"
		if ok, err := f.S.Lease(f.Ctx, other, "w2", lapse); err != nil || !ok {
			t.Fatalf("another duty's lease = %v, %v", ok, err)
		}
		f.elapse(2 * lapse)
		if ok, err := f.S.Lease(f.Ctx, other, "w1", time.Minute); err != nil || !ok {
			t.Fatalf("Lease after the holder stopped renewing = %v, %v; want taken over", ok, err)
		}
	})

	t.Run("a sweep is claimed once per interval", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		for i, st := range []struct {
			owner string
			want  bool
		}{{"w1", true}, {"w2", false}, {"w1", false}} {
			if ok, err := f.S.ClaimSweep(f.Ctx, f.Ev, st.owner, time.Minute); err != nil || ok != st.want {
				t.Fatalf("step %d ClaimSweep(%s) = %v, %v; want %v", i, st.owner, ok, err, st.want)
			}
		}
		// Another event's claim, short enough to wait out.
		other := f.Ev + "-other"
		if ok, err := f.S.ClaimSweep(f.Ctx, other, "w1", lapse); err != nil || !ok {
			t.Fatalf("another event's ClaimSweep = %v, %v", ok, err)
		}
		f.elapse(2 * lapse)
		if ok, err := f.S.ClaimSweep(f.Ctx, other, "w2", lapse); err != nil || !ok {
			t.Fatalf("ClaimSweep after the interval = %v, %v; want true", ok, err)
		}
	})

	t.Run("epochs are read in order and never started by the read", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		g := &fixture{Fixture: &Fixture{T: t, S: f.S, Ctx: f.Ctx, Ev: f.Ev + "-g"}, h: f.h}
		if ids, err := f.S.Epochs(f.Ctx, []string{f.Ev, g.Ev}); err != nil || fmt.Sprint(ids) != "[ ]" {
			t.Fatalf("Epochs before any step = %q, %v", ids, err)
		}
		in := queue.CheckInput{EventID: g.Ev, UserID: "u", Score: 1, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1,
			Epoch: queue.EpochInput{Candidate: "epoch-g", Window: time.Minute}}
		if s, err := f.S.Check(f.Ctx, in); err != nil || s.Epoch.ID != "epoch-g" {
			t.Fatalf("Check = %+v, %v; want epoch-g started", s, err)
		}
		if ids, err := f.S.Epochs(f.Ctx, []string{f.Ev, g.Ev, f.Ev}); err != nil || fmt.Sprint(ids) != "[ epoch-g ]" {
			t.Fatalf("Epochs = %q, %v; want [\"\" epoch-g \"\"]", ids, err)
		}
		if ids, err := f.S.Epochs(f.Ctx, nil); err != nil || len(ids) != 0 {
			t.Fatalf("Epochs of none = %q, %v", ids, err)
		}
	})

	t.Run("the largest bases keep their order and their heartbeats, and a larger one writes nothing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newStore)
		f.Check("x", 1, t0, 1)
		top := int64(queue.MaxLineBase)
		f.Check("last", top, t0, 1)
		f.Check("before", top-1, t0, 1)
		for i := 1; i <= 3; i++ { // heartbeats in later ticks
			f.Check("last", 0, t0.Add(time.Duration(i)*7*time.Second), 1)
		}
		if n, err := f.S.Sweep(f.Ctx, f.Ev, t0.Add(30*time.Second), time.Minute); err != nil || n != 0 {
			t.Fatalf("Sweep = %d, %v", n, err)
		}
		ids, by := f.line(t0.Add(30 * time.Second))
		if fmt.Sprint(ids) != "[before last]" || by["before"].Base != top-1 || by["last"].Base != top ||
			!by["last"].Heard.Equal(heard(t0.Add(21*time.Second))) {
			t.Fatalf("line %v %+v; want before (%d) then last (%d, heard at +21 s)", ids, by, top-1, top)
		}
		_, err := f.S.Check(f.Ctx, queue.CheckInput{EventID: f.Ev, UserID: "over", Score: top + 1, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1})
		if err == nil {
			t.Fatal("a base above MaxLineBase was accepted")
		}
		if ids, _ := f.line(t0.Add(30 * time.Second)); len(ids) != 2 {
			t.Fatalf("the refused check wrote the user: %v", ids)
		}
	})
}
