package tier1

import (
	"math"
	"time"
)

// Visitors is the number of real visitors holding a position ≤ s when shard
// k of n has handed out counters[k] positions: Σ_k min(c_k, ⌊(s−k−1)/n⌋+1).
// Positions a lagging shard has not handed out yet (holes) are not counted.
func Visitors(counters []int64, n int, s int64) int64 {
	if s <= 0 || n <= 0 {
		return 0
	}
	var total int64
	for k, c := range counters {
		if k >= n || c <= 0 {
			continue
		}
		// Positions of shard k that are ≤ s: k+1, k+1+n, … (s ≥ 1, k < n, so
		// s−k−1 ≥ −n and the integer division below never sees a value < −n).
		x := s - int64(k) - 1
		var upTo int64
		if x >= 0 {
			upTo = x/int64(n) + 1
		}
		total += min(c, upTo)
	}
	return total
}

// MaxAssigned is the highest position handed out so far (0 when none).
func MaxAssigned(counters []int64, n int) int64 {
	var top int64
	for k, c := range counters {
		if k >= n || c <= 0 {
			continue
		}
		top = max(top, StridedPosition(k, n, c))
	}
	return top
}

// Assigned is the number of positions handed out so far.
func Assigned(counters []int64, n int) int64 {
	var total int64
	for k, c := range counters {
		if k < n && c > 0 {
			total += c
		}
	}
	return total
}

// NextServing is where one advancer tick moves the serving counter: the
// smallest s' ≥ s that lets exactly batch more real visitors in, or
// maxAssigned when fewer than batch are waiting. It never returns more than
// maxAssigned and never less than s.
func NextServing(counters []int64, n int, s, batch int64) int64 {
	top := MaxAssigned(counters, n)
	if s >= top || batch <= 0 {
		return s
	}
	want := Visitors(counters, n, s) + batch
	if Visitors(counters, n, top) <= want {
		return top
	}
	// Visitors is monotone in s and rises by at most 1 per step, so the
	// smallest s' with Visitors(s') ≥ want admits exactly batch more.
	lo, hi := s, top // Visitors(lo) < want ≤ Visitors(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if Visitors(counters, n, mid) >= want {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// PeopleAhead is how many real visitors wait in front of position p while
// the serving counter is s.
func PeopleAhead(counters []int64, n int, s, p int64) int64 {
	if p <= s+1 {
		return 0
	}
	return max(0, Visitors(counters, n, p-1)-Visitors(counters, n, s))
}

// AdmitRatePerMinute is the visitors the advances within the minute before
// now admitted, per minute of the span they were made in: from one tick
// before the first of them to now, at most a minute. Summing a younger
// history and calling it a minute's worth was the unit slip that made early
// estimates 60/t times too long.
func AdmitRatePerMinute(advances []Advance, tick time.Duration, now time.Time) int64 {
	var total int64
	var first time.Time
	for _, a := range advances {
		if a.At.After(now.Add(-time.Minute)) && !a.At.After(now) {
			total += a.Admitted
			if first.IsZero() || a.At.Before(first) {
				first = a.At
			}
		}
	}
	if total == 0 {
		return 0
	}
	span := min(max(now.Sub(first)+tick, tick), time.Minute)
	return int64(math.Round(float64(total) * float64(time.Minute) / float64(span)))
}

// maxAdvances caps the advance history kept on an event item.
const maxAdvances = 32

// recordAdvance appends a raise to the history and keeps only the last
// minute's entries (at most maxAdvances), so the event item stays small.
func recordAdvance(history []Advance, a Advance) []Advance {
	out := make([]Advance, 0, len(history)+1)
	for _, h := range history {
		if h.At.After(a.At.Add(-time.Minute)) {
			out = append(out, h)
		}
	}
	out = append(out, a)
	if len(out) > maxAdvances {
		out = out[len(out)-maxAdvances:]
	}
	return out
}

// FairnessBound is how far out of arrival order (in positions) any of the
// first n visitors can be when each picks one of N = shards shards at
// random, except with probability delta. Visitor i's position minus i is
// at most N−1 plus |N·C_k(i) − i| for its shard k; each N·C_k(t) − t is a
// martingale with increments in {N−1, −1} and variance n·(N−1) after n
// steps, so Freedman's maximal inequality with a union bound over the
// shards gives N + a, where a solves a² = 2L·(n(N−1) + N·a/3) and
// L = ln(2N/delta). One shard is exact arrival order (0).
// docs/tier1-design.md derives it.
func FairnessBound(n int64, shards int, delta float64) int64 {
	if shards <= 1 || n <= 0 {
		return 0
	}
	N := float64(shards)
	L := math.Log(2 * N / delta)
	b := N * L / 3
	a := b + math.Sqrt(b*b+2*float64(n)*(N-1)*L)
	return int64(shards) + int64(math.Ceil(a))
}
