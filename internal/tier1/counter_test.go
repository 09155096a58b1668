package tier1

import (
	"math/rand/v2"
	"testing"
	"time"
)

// positionsOf lists every position handed out, the slow obvious way.
func positionsOf(counters []int64, n int) map[int64]bool {
	set := map[int64]bool{}
	for k, c := range counters {
		for i := int64(1); i <= c; i++ {
			set[StridedPosition(k, n, i)] = true
		}
	}
	return set
}

func bruteVisitors(set map[int64]bool, s int64) int64 {
	var v int64
	for p := range set {
		if p <= s {
			v++
		}
	}
	return v
}

func TestVisitorsCountsHoles(t *testing.T) {
	t.Parallel()
	// 4 shards: shard 0 has 1,5,9; shard 1 has 2; shard 2 lags (3, 7 are
	// holes); shard 3 has 4,8.
	counters := []int64{3, 1, 0, 2}
	cases := []struct{ s, want int64 }{
		{0, 0}, {1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 4}, {6, 4}, {7, 4}, {8, 5}, {9, 6}, {100, 6}, {-3, 0},
	}
	for _, tc := range cases {
		if got := Visitors(counters, 4, tc.s); got != tc.want {
			t.Errorf("Visitors(S=%d) = %d, want %d", tc.s, got, tc.want)
		}
	}
	if got := MaxAssigned(counters, 4); got != 9 {
		t.Errorf("MaxAssigned = %d, want 9", got)
	}
	if got := Assigned(counters, 4); got != 6 {
		t.Errorf("Assigned = %d, want 6", got)
	}
	if got := PeopleAhead(counters, 4, 1, 8); got != 3 {
		t.Errorf("PeopleAhead(S=1, p=8) = %d, want 3 (2, 4, 5)", got)
	}
	if got := PeopleAhead(counters, 4, 5, 6); got != 0 {
		t.Errorf("PeopleAhead(S=5, p=6) = %d, want 0", got)
	}
}

func TestNextServing(t *testing.T) {
	t.Parallel()
	counters := []int64{3, 1, 0, 2} // positions 1 2 4 5 8 9
	cases := []struct {
		name         string
		s, batch     int64
		want         int64
		wantAdmitted int64
	}{
		{"first two", 0, 2, 2, 2},
		{"skips the hole at 3", 0, 3, 4, 3},
		{"skips holes 6 and 7", 4, 2, 8, 2},
		{"capped at maxAssigned", 0, 100, 9, 6},
		{"nobody waiting", 9, 5, 9, 0},
		{"zero batch", 2, 0, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := NextServing(counters, 4, tc.s, tc.batch)
			if got != tc.want {
				t.Fatalf("NextServing(S=%d, batch=%d) = %d, want %d", tc.s, tc.batch, got, tc.want)
			}
			if adm := Visitors(counters, 4, got) - Visitors(counters, 4, tc.s); adm != tc.wantAdmitted {
				t.Fatalf("admitted %d, want %d", adm, tc.wantAdmitted)
			}
		})
	}
}

// The closed forms agree with brute force on random lagging shards, and
// every tick admits exactly min(batch, waiting) and stops at maxAssigned.
func TestCounterArithmeticAgainstBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		n := 1 + rng.IntN(8)
		counters := make([]int64, n)
		for k := range counters {
			counters[k] = int64(rng.IntN(20))
		}
		set := positionsOf(counters, n)
		top := MaxAssigned(counters, n)
		for s := int64(0); s <= top+n64(n); s++ {
			if got, want := Visitors(counters, n, s), bruteVisitors(set, s); got != want {
				t.Fatalf("counters %v: Visitors(%d) = %d, brute force %d", counters, s, got, want)
			}
		}
		s := int64(rng.IntN(int(top) + 1))
		batch := int64(1 + rng.IntN(10))
		next := NextServing(counters, n, s, batch)
		waiting := bruteVisitors(set, top) - bruteVisitors(set, s)
		if next > top && next != s {
			t.Fatalf("counters %v: NextServing(%d,%d) = %d passed maxAssigned %d", counters, s, batch, next, top)
		}
		if adm := bruteVisitors(set, next) - bruteVisitors(set, s); adm != min(batch, waiting) {
			t.Fatalf("counters %v: NextServing(%d,%d) = %d admits %d, want %d", counters, s, batch, next, adm, min(batch, waiting))
		}
		if next > s && batch < waiting && bruteVisitors(set, next-1)-bruteVisitors(set, s) >= batch {
			t.Fatalf("counters %v: NextServing(%d,%d) = %d is not the smallest", counters, s, batch, next)
		}
	}
}

func n64(n int) int64 { return int64(n) }

func TestAdvanceHistory(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var h []Advance
	for i := range 10 {
		h = recordAdvance(h, Advance{At: t0.Add(time.Duration(i) * 10 * time.Second), Admitted: int64(i + 1)})
	}
	// At t0+90s the last minute holds the advances at 40s…90s (exclusive of 30s).
	if len(h) != 6 || h[0].Admitted != 5 {
		t.Fatalf("history = %+v, want the 6 advances of the last minute", h)
	}
	now := t0.Add(90 * time.Second)
	if got := AdmitRatePerMinute(h, 10*time.Second, now); got != 5+6+7+8+9+10 {
		t.Fatalf("rate = %d, want 45", got)
	}
	if got := AdmitRatePerMinute(h, 10*time.Second, now.Add(time.Minute)); got != 0 {
		t.Fatalf("rate a minute later = %d, want 0", got)
	}
	for i := range 100 {
		h = recordAdvance(h, Advance{At: now.Add(time.Duration(i) * time.Millisecond), Admitted: 1})
	}
	if len(h) != maxAdvances {
		t.Fatalf("history length %d, want the cap %d", len(h), maxAdvances)
	}
}

// TestFairnessBound measures how far out of arrival order random shard
// choice puts visitors, against FairnessBound.
func TestFairnessBound(t *testing.T) {
	t.Parallel()
	if FairnessBound(1_000_000, 1, 1e-6) != 0 {
		t.Fatal("one shard must be exact arrival order")
	}
	for _, tc := range []struct {
		shards int
		n      int64
	}{{2, 200_000}, {4, 200_000}, {4, 1_000_000}, {16, 200_000}} {
		rng := rand.New(rand.NewPCG(uint64(tc.shards), uint64(tc.n)))
		counts := make([]int64, tc.shards)
		var worst int64
		for i := int64(1); i <= tc.n; i++ {
			k := rng.IntN(tc.shards)
			counts[k]++
			d := StridedPosition(k, tc.shards, counts[k]) - i
			worst = max(worst, max(d, -d))
		}
		bound := FairnessBound(tc.n, tc.shards, 1e-6)
		t.Logf("%d shards, %d visitors: worst |position − arrival rank| = %d, bound %d", tc.shards, tc.n, worst, bound)
		if worst > bound || worst == 0 {
			t.Errorf("%d shards, %d visitors: worst displacement %d, bound %d", tc.shards, tc.n, worst, bound)
		}
	}
}
