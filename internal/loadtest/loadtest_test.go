package loadtest

import (
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestArrivals(t *testing.T) {
	t.Parallel()
	const n, rate = 1000, 100.0
	for _, kind := range ArrivalKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			a, err := Arrivals(kind, n, rate, rand.New(rand.NewPCG(7, 7)))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Arrivals(kind, n, rate, rand.New(rand.NewPCG(7, 7)))
			if len(a) != n || a[0] != 0 {
				t.Fatalf("%d arrivals, first at %s", len(a), a[0])
			}
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("same seed, different arrival %d: %s vs %s", i, a[i], b[i])
				}
				if i > 0 && a[i] < a[i-1] {
					t.Fatalf("arrival %d at %s before %s", i, a[i], a[i-1])
				}
			}
			span := a[n-1].Seconds()
			switch kind {
			case ArrivalBurst:
				if math.Abs(span-float64(n-1)/rate) > 1e-6 {
					t.Errorf("burst spans %v s, want %v", span, float64(n-1)/rate)
				}
			case ArrivalPoisson:
				// Mean gap 1/rate: the span is within a few standard deviations of n/rate.
				if want := float64(n) / rate; math.Abs(span-want) > 4*math.Sqrt(float64(n))/rate {
					t.Errorf("poisson spans %v s, want about %v", span, want)
				}
			case ArrivalRamp:
				// Twice a burst's span, and the last tenth far denser than the first.
				if math.Abs(span-2*float64(n)/rate) > 0.05 {
					t.Errorf("ramp spans %v s, want about %v", span, 2*float64(n)/rate)
				}
				first, last := a[n/10]-a[0], a[n-1]-a[n-1-n/10]
				if first < 2*last {
					t.Errorf("ramp: first tenth took %s, last %s; want the rate rising", first, last)
				}
			case ArrivalSale:
				// Peak rate at the start, falling by e every n/rate = 10 s:
				// 63 % within 10 s, the last at 10·ln(1000) ≈ 69 s.
				tau := float64(n) / rate
				k := sort.Search(n, func(i int) bool { return a[i].Seconds() > tau })
				if math.Abs(float64(k)/n-(1-1/math.E)) > 0.01 {
					t.Errorf("sale: %d of %d within τ, want 63 %%", k, n)
				}
				if want := tau * math.Log(n); math.Abs(span-want) > 0.1 {
					t.Errorf("sale spans %v s, want τ·ln N = %v", span, want)
				}
				if gap := (a[1] - a[0]).Seconds(); math.Abs(gap-1/rate) > 1e-4 {
					t.Errorf("sale: first gap %v s, want 1/rate", gap)
				}
			}
		})
	}
	for _, bad := range []struct {
		kind string
		rate float64
	}{{"flood", 10}, {ArrivalBurst, 0}, {ArrivalBurst, math.Inf(1)}, {ArrivalPoisson, -1}} {
		if _, err := Arrivals(bad.kind, 10, bad.rate, rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Errorf("Arrivals(%q, rate %v) accepted", bad.kind, bad.rate)
		}
	}
}

func TestParseFault(t *testing.T) {
	t.Parallel()
	var fs Faults
	for _, s := range []string{"redis-flush@20s", "tier2-kill@1m30s", "junk-events@0s"} {
		if err := fs.Set(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if fs[1].Kind != FaultTier2Kill || fs[1].At != 90*time.Second || fs.String() != "redis-flush@20s,tier2-kill@1m30s,junk-events@0s" {
		t.Fatalf("parsed %v", fs)
	}
	for _, bad := range []string{"redis-flush", "meteor@10s", "redis-flush@soon", "redis-flush@-1s", "@1s"} {
		if _, err := ParseFault(bad); err == nil {
			t.Errorf("ParseFault(%q) accepted", bad)
		}
	}
}

// at is a time n seconds after a fixed origin.
func at(n float64) time.Time {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n * float64(time.Second)))
}

func TestTier1Inversions(t *testing.T) {
	t.Parallel()
	v := func(pos int64, admitted, lastWait float64) *visitor {
		x := &visitor{requestID: "r", position: pos}
		if admitted > 0 {
			x.tier1AdmitRecv = at(admitted)
		}
		if lastWait > 0 {
			x.lastWaitSent1 = at(lastWait)
		}
		return x
	}
	// In order: 1 in at 10, 2 told to wait at 9 and in at 12.
	if n := tier1Inversions([]*visitor{v(1, 10, 5), v(2, 12, 9)}); n != 0 {
		t.Errorf("in order: %d inversions", n)
	}
	// 2 admitted at 10, then 1 told to wait by a check sent at 11: passed over.
	if n := tier1Inversions([]*visitor{v(1, 15, 11), v(2, 10, 0)}); n != 1 {
		t.Errorf("passed over: %d inversions, want 1", n)
	}
	// A wait answer sent before the other's admission arrived proves nothing.
	if n := tier1Inversions([]*visitor{v(1, 15, 9.9), v(2, 10, 0)}); n != 0 {
		t.Errorf("overlap: %d inversions", n)
	}
}

func TestTier2Inversions(t *testing.T) {
	t.Parallel()
	v := func(pos int64, joined, lastQueued, active float64) *visitor {
		x := &visitor{position: pos, t2FirstSent: at(joined - 0.1), activeRecv: at(active), activeSent: at(active - 0.05)}
		if joined > 0 {
			x.t2FirstQueued, x.t2LastQueued = at(joined), at(lastQueued)
		}
		return x
	}
	ok := []*visitor{v(1, 1, 5, 6), v(2, 1.5, 6, 7), v(3, 2, 7, 8)}
	if n := tier2Inversions(ok); n != 0 {
		t.Errorf("in order: %d inversions", n)
	}
	// 3 was waiting at 4 and active at 5; 1, queued since 1, still waiting at 6.
	bad := []*visitor{v(1, 1, 6, 7), v(2, 1.5, 3, 4), v(3, 2, 4, 5)}
	if n := tier2Inversions(bad); n != 1 {
		t.Errorf("passed over: %d inversions, want 1", n)
	}
	// The explanation names 2 (active at 4, the first of the two let in
	// ahead of 1).
	r := &run{start: at(0)}
	if ps := r.passedOver(bad); len(ps) != 1 || ps[0].APosition != 1 || ps[0].BPosition != 2 || ps[0].BActive != 4 || ps[0].ALastQueued != 6 {
		t.Errorf("passed over: %+v, want 1 passed over by 2", ps)
	}
	// A visitor who only joined after the other was admitted is not passed over.
	late := []*visitor{v(1, 6, 8, 9), v(2, 1, 3, 4)}
	if n := tier2Inversions(late); n != 0 {
		t.Errorf("late joiner: %d inversions", n)
	}
	// A direct entry behind a queued visitor is a pass-over too.
	direct := &visitor{position: 5, t2FirstSent: at(3), activeSent: at(3), activeRecv: at(3.1)}
	if n := tier2Inversions([]*visitor{v(1, 1, 4, 5), direct}); n != 1 {
		t.Errorf("direct entry ahead of a queued visitor: %d inversions, want 1", n)
	}
}

func TestActiveHolders(t *testing.T) {
	t.Parallel()
	v := func(active, left float64) *visitor { return &visitor{activeRecv: at(active), leaveSent: at(left)} }
	vs := []*visitor{v(0, 10), v(1, 5), v(5, 8), v(6, 12), {}}
	mx, over := activeHolders(vs, at(20), 2)
	// At 6: the first, the third and the fourth hold tokens.
	if mx != 3 || over != 1 {
		t.Fatalf("maxActive %d, over %d; want 3, 1", mx, over)
	}
	if mx, over := activeHolders(vs, at(20), 3); mx != 3 || over != 0 {
		t.Fatalf("threshold 3: maxActive %d, over %d", mx, over)
	}
}

func TestQuantileAndWaitError(t *testing.T) {
	t.Parallel()
	w := waitError([]float64{0.5, 0.1, 0.3, 0.2, 0.4})
	if w.Median != 0.3 || w.P90 != 0.5 || w.Samples != 5 {
		t.Fatalf("%+v", w)
	}
	if (waitError(nil) != WaitError{}) {
		t.Fatal("no samples must give zeros")
	}
}

// TestProgressWritesPlainLinesOffATerminal: into a file or a pipe the
// progress line is whole lines of the sale's state, never \r frames.
func TestProgressWritesPlainLinesOffATerminal(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	n := int64(0)
	p := newProgress(&buf, func() progressState {
		n++
		return progressState{T: float64(n), Arrived: 10 * n, Total: 100, Tier1Waiting: 7, Tier2Line: 3, Tier2Active: 5, Threshold: 5, Admitted: 4 * n, Done: n}
	})
	if p.tty {
		t.Fatal("a strings.Builder is not a terminal")
	}
	p.draw(false)
	p.draw(false)
	close(p.done) // as if run had ended
	p.Finish()
	out := buf.String()
	if strings.Contains(out, "\r") || strings.Count(out, "\n") != 3 {
		t.Fatalf("progress off a terminal:\n%q", out)
	}
	last := strings.Split(strings.TrimSpace(out), "\n")[2]
	for _, want := range []string{"arrived 30/100", "waiting: Tier 1 7, Tier 2 3", "active 5/5", "admitted 12 (4.0/s)", "done 3"} {
		if !strings.Contains(last, want) {
			t.Errorf("last line %q lacks %q", last, want)
		}
	}
	if isTerminal(os.Stdin) && isTerminal(&buf) {
		t.Fatal("isTerminal")
	}
}

// TestPeopleAheadErrorSpan: a count is compared with the real count's span
// — places certainly handed out by the earliest moment it refers to, to
// those possibly handed out by the latest — and is off by its distance
// from that span.
func TestPeopleAheadErrorSpan(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// Places 1…40 are handed out one a second: asked at i, answered at i+0.5.
	var vs []*visitor
	for i := 1; i <= 40; i++ {
		vs = append(vs, &visitor{requestID: "r", position: int64(i), enterSent: at(float64(i)), enterRecv: at(float64(i) + 0.5)})
	}
	last := vs[39]
	// At 20.2 s places 1…19 are certain and 20 possible: 19 or 20 ahead
	// of place 40 with the serving counter at 0.
	last.ahead1 = []aheadShown{
		{from: at(20.2), t: at(20.2), serving: 0, shown: 19},
		{from: at(20.2), t: at(20.2), serving: 0, shown: 20},
		{from: at(20.2), t: at(20.2), serving: 0, shown: 39}, // 19 too many: outside 16
		{from: at(10.2), t: at(20.2), serving: 5, shown: 6},  // 4…15 ahead in that span (places 6…9 to 6…20): in
	}
	e := peopleAheadError(vs)
	if e.Samples != 4 || e.WithinBound != 0.75 {
		t.Fatalf("%+v: want 4 counts, 3 within the bound", *e)
	}
	// The one outside: 19 more than 20, of a line of 20.
	if e.MaxOfLine != 0.95 {
		t.Fatalf("max error %v of the line, want 19 of 20", e.MaxOfLine)
	}
}

// TestWaitsLeaveOutOnlyTheLateNotice: a saturated tool sends every poll
// late, but the line moves on meanwhile; only the steps after the last
// "still waiting" answer were late in noticing the turn. Taking out every
// late poll made the sale rehearsal's long waits look a third of what they
// were (estimates 2–3 times "too long").
func TestWaitsLeaveOutOnlyTheLateNotice(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r := &run{cfg: Config{}.WithDefaults(), start: t0, rec: newRecorder(), lb: newBalancer(1)}
	v := &visitor{r: r, stage: stageDone, finished: at(40), arrived: at(0), position: 1,
		// Tier 1: told 30 s at 0; nine late polls (5 s in all) said "wait",
		// then the poll that saw the turn and the check were 0.5 s late.
		enterRecv: at(0), est1: 30, lateWait1: 5 * time.Second, tier1AdmitRecv: at(30.5), lateAdmit1: 5500 * time.Millisecond,
		// Tier 2: told 20 s at 31; nine late polls (9 s), the last 1 s late.
		t2FirstQueued: at(31), est2: 20, est2Set: true, lateWait2: 14 * time.Second, activeRecv: at(52), lateActive: 15 * time.Second}
	v.later2.add(at(41), 10)
	res := r.analyze([]*visitor{v}, at(60), nil)
	w := res.Report.WaitEstimateError
	if got := res.Visits[0]; got.ActualWait != 20 || got.Tier1Wait != 30 {
		t.Fatalf("waits %v at Tier 2 and %v at Tier 1, want 20 and 30", got.ActualWait, got.Tier1Wait)
	}
	if w.Median != 0 || w.Tier1.Median != 0 || w.Later.Median != 0 {
		t.Fatalf("errors %+v, Tier 1 %+v, later %+v: want none", w, *w.Tier1, *w.Later)
	}
}
