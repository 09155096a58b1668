package tier1

import (
	"math"
	"time"
)

// The wait estimate. A visitor's wait is the time until the tick whose batch
// reaches them, plus the moment their page needs to notice it. Everything
// here is a pure function of what a snapshot holds (counters, serving
// counter, the advance history), when it was read, and the clock, so the
// page computes the same figures from the status document (static/vwr/
// wait.js; internal/tier1/tier1api/testdata/wait-vectors.json pins the two
// together).

// minPaceIntervals is how many measured tick intervals replace the
// configured one.
const minPaceIntervals = 2

// Pace is how fast the advancer really lets an event's line in: Batch real
// visitors per full tick, full ticks Interval apart.
type Pace struct {
	Batch    int64
	Interval time.Duration
	// NextTick is when the tick after the snapshot was read is expected.
	NextTick time.Time
	// Measured says Interval comes from the event's own recent raises; until
	// there are minPaceIntervals of them it is the configured tick.
	Measured bool
	// Paused: the operator stopped the advancer; nobody is let in until they
	// resume it.
	Paused bool
}

// MeasurePace reads the release rate the advancer achieves from ev's advance
// history as of asOf (when the snapshot holding ev was read). A raise that
// let in a full batch leaves people waiting, so the gap to the next raise is
// one tick of the advancer as it really runs, late and missed ticks
// included. Raises that let in fewer than a batch (the line behind was
// shorter) say nothing about the pace and are left out, so a short line
// never reads as a slow advancer. The batch is the event's current one: a
// batch raised mid-sale counts from the next tick, and raises smaller than
// the new batch no longer count as full.
func MeasurePace(ev Event, tick time.Duration, asOf time.Time) Pace {
	p := Pace{Batch: max(ev.BatchSize, 1), Interval: tick, Paused: ev.Paused}
	var recent []Advance
	for _, a := range ev.Advances {
		if a.At.After(asOf.Add(-time.Minute)) && !a.At.After(asOf) {
			recent = append(recent, a)
		}
	}
	var sum time.Duration
	k := 0
	for i := 0; i+1 < len(recent); i++ {
		if recent[i].Admitted >= p.Batch {
			if d := recent[i+1].At.Sub(recent[i].At); d > 0 {
				sum += d
				k++
			}
		}
	}
	if k >= minPaceIntervals {
		// Whole milliseconds, as the status document gives it.
		p.Interval, p.Measured = (sum / time.Duration(k)).Round(time.Millisecond), true
		// An advancer that stopped raising a line it left waiting is slower
		// than its history says: count the open gap once it is well overdue.
		if last := recent[len(recent)-1]; last.Admitted >= p.Batch {
			if open := asOf.Sub(last.At); open > p.Interval*3/2 {
				p.Interval = ((sum + open) / time.Duration(k+1)).Round(time.Millisecond)
			}
		}
	}
	p.NextTick = asOf.Add(p.Interval / 2) // the advancer's phase is unknown
	if len(recent) > 0 {
		last := recent[len(recent)-1].At
		n := asOf.Sub(last)/p.Interval + 1
		p.NextTick = last.Add(n * p.Interval)
	}
	p.NextTick = p.NextTick.Truncate(time.Millisecond)
	return p
}

// Ticks is how many full ticks, counting the next one, it takes until the
// visitor with peopleAhead real visitors in front is let in.
func (p Pace) Ticks(peopleAhead int64) int64 {
	return max(peopleAhead, 0)/p.Batch + 1
}

// AdmitAt is when the visitor with peopleAhead in front is expected to be
// let in. While paused, it counts from now as if the line resumed at once.
func (p Pace) AdmitAt(peopleAhead int64, now time.Time) time.Time {
	next := p.NextTick
	if p.Paused {
		next = now.Add(p.Interval)
	}
	return next.Add(time.Duration(p.Ticks(peopleAhead)-1) * p.Interval)
}

// EstimateAhead counts the real visitors holding a place after the serving
// counter s and before position p, from per-shard counters read a moment
// ago. The holes of strides a shard has not handed out yet are not people.
// p's own shard has handed out at least p's stride. Every other shard has
// likely handed out grow more places since the counters were read (see
// Grow), give or take √grow: its count is taken as c + G with G ~ N(grow,
// grow), and a shard counts E[min(c + G, strides)] — the expectation, since
// a shard that ran ahead of p adds nothing more while one that lags adds
// all it got. With grow = 0 and counters that already hold p this is
// exactly Visitors(p−1) − Visitors(s). docs/tier1-design.md states the
// error.
func EstimateAhead(counters []int64, n int, s, p, grow int64) int64 {
	if n <= 0 || p <= s+1 {
		return 0
	}
	own := int((p - 1) % int64(n))
	ownCount := (p-1)/int64(n) + 1
	var total float64
	for k := 0; k < n; k++ {
		var c int64
		if k < len(counters) {
			c = max(counters[k], 0)
		}
		g := max(grow, 0)
		if k == own {
			c, g = max(c, ownCount), 0
		}
		total += expectedMin(c, g, strides(k, n, p-1)) - expectedMin(c, g, strides(k, n, s))
	}
	return max(int64(math.Round(total)), 0)
}

// expectedMin is E[min(c + G, a)] for G ~ N(g, g) (a shard's count c grown
// by g ± √g places), and min(c, a) when g = 0. wait.js computes the same
// digits: the float64 conversions keep the compiler from fusing a multiply
// and an add (as it may on arm64), which JavaScript never does.
func expectedMin(c, g, a int64) float64 {
	if g <= 0 || c >= a {
		return float64(min(c, a))
	}
	mu, sigma := float64(c+g), math.Sqrt(float64(g))
	z := (float64(a) - mu) / sigma
	// E[min(X, a)] = a − E[(a − X)⁺] = a − ((a − μ)Φ(z) + σφ(z)).
	pdf := math.Exp(-float64(z*z)/2) / math.Sqrt(2*math.Pi)
	return max(float64(a)-(float64((float64(a)-mu)*normalCDF(z))+float64(sigma*pdf)), float64(c))
}

// normalCDF is Φ(z) from Abramowitz and Stegun's erf 7.1.26 (error below
// 1.5e-7), written out so wait.js computes the same digits.
func normalCDF(z float64) float64 {
	x := math.Abs(z) / math.Sqrt2
	t := 1 / (1 + float64(0.3275911*x))
	p := float64(1.061405429*t) - 1.453152027
	p = float64(p*t) + 1.421413741
	p = float64(p*t) - 0.284496736
	p = float64(p*t) + 0.254829592
	y := 1 - float64(float64(p*t)*math.Exp(-float64(x*x)))
	if z < 0 {
		return (1 - y) / 2
	}
	return (1 + y) / 2
}

// strides is how many of shard k's positions (k+1, k+1+n, …) are ≤ x.
func strides(k, n int, x int64) int64 {
	d := x - int64(k) - 1
	if d < 0 {
		return 0
	}
	return d/int64(n) + 1
}

// Grow is EstimateAhead's grow for position p: the places each shard has
// likely handed out since the counters were read, age ago — the enter rate
// (per second, over the n shards) times age, rounded. With no rate measured
// yet (a sale's first second) p's own shard tells: it handed out p's stride
// and as many places before it as each other shard likely did.
func Grow(counters []int64, n int, p int64, enterRate float64, age time.Duration) int64 {
	if n <= 0 || age <= 0 {
		return 0
	}
	if enterRate > 0 {
		return int64(math.Round(enterRate * age.Seconds() / float64(n)))
	}
	if p <= 0 {
		return 0
	}
	own, ownCount := int((p-1)%int64(n)), (p-1)/int64(n)+1
	var c int64
	if own < len(counters) {
		c = counters[own]
	}
	return max(ownCount-c-1, 0)
}

// Tier1Poll is how long a waiting page waits before its next status poll, in
// seconds: by distance (2 s within 50 people, 4 s within 500, 8 s within
// 5,000, else 15 s), but no later than when its turn is due (dueIn seconds,
// at least 1 s) so that it notices its tick at once. common.js's
// tier1Interval does the same.
func Tier1Poll(peopleAhead int64, dueIn float64) float64 {
	var s float64
	switch {
	case peopleAhead <= 50:
		s = 2
	case peopleAhead <= 500:
		s = 4
	case peopleAhead <= 5000:
		s = 8
	default:
		s = 15
	}
	if !math.IsNaN(dueIn) && dueIn < s {
		s = max(dueIn, 1)
	}
	return s
}

// Wait is a visitor's estimate as an API answer gives it.
type Wait struct {
	PeopleAhead int64
	Seconds     int // until the visitor is expected in, page notice included
	NextPoll    int // seconds; 1 once nobody is ahead
	Paused      bool
	// AfterDraw: a pre-queue that is not drawn yet has no places, so no
	// wait to estimate; the page says "after the draw".
	AfterDraw bool
}

// EstimateWait is the estimate for position p from snap, read at asOf, at
// now, with enterRate enters per second seen lately (0: unknown). tick is
// the configured advancer tick, used until the event has a history; notice
// is how long a page takes to see a raise (the status cache). It is the
// Page's arithmetic on the status document the same snapshot gives.
func EstimateWait(snap Snapshot, asOf, now time.Time, p int64, enterRate float64, tick, notice time.Duration) Wait {
	ev := snap.Event
	ph := ev.Sale.Phase
	asOf = asOf.Truncate(time.Millisecond)
	pace := MeasurePace(ev, tick, asOf)
	pg := Page{
		ServingCounter: ev.ServingCounter, Paused: ev.Paused, AfterDraw: ph == SalePrequeue || ph == SaleDrawing,
		Counters: snap.Counters, AsOf: asOf, EnterRate: RoundRate(enterRate),
		Batch: pace.Batch, Tick: pace.Interval, NextTick: pace.NextTick, Notice: notice,
	}
	if len(pg.Counters) > ev.Shards {
		pg.Counters = pg.Counters[:ev.Shards]
	}
	return pg.estimate(p, now)
}

// Page is what a waiting page reads from the status document to estimate
// its own wait between checks; static/vwr/wait.js does exactly this, and
// the load test's simulated visitors call it.
type Page struct {
	ServingCounter int64
	Paused         bool
	AfterDraw      bool // the sale's pre-queue or drawing phase
	Counters       []int64
	AsOf           time.Time
	EnterRate      float64 // per second
	Batch          int64
	Tick           time.Duration
	NextTick       time.Time
	Notice         time.Duration
}

// PageOf is the Page an EventStatus publishes, at the API's millisecond
// precision.
func PageOf(st EventStatus) Page {
	ms := func(t time.Time) time.Time { return t.Truncate(time.Millisecond) }
	ph := st.Sale.Phase
	return Page{
		ServingCounter: st.ServingCounter, Paused: st.Paused, AfterDraw: ph == SalePrequeue || ph == SaleDrawing,
		Counters: st.ShardCounters, AsOf: ms(st.AsOf), EnterRate: RoundRate(st.EnterRate),
		Batch: st.Pace.Batch, Tick: st.Pace.Interval, NextTick: ms(st.Pace.NextTick), Notice: st.Notice,
	}
}

// RoundRate is the enter rate as the status document gives it (tenths).
func RoundRate(r float64) float64 { return math.Round(r*10) / 10 }

// Wait estimates, at now, the wait of the visitor at position p. ok is
// false when the document was read before p was handed out (p's own shard
// had not reached it): the page then keeps its last answer.
func (pg Page) Wait(p int64, now time.Time) (w Wait, ok bool) {
	n := len(pg.Counters)
	if pg.AfterDraw {
		return pg.estimate(p, now), true
	}
	if n == 0 || p <= 0 || pg.Batch <= 0 || pg.Tick <= 0 {
		return Wait{}, false
	}
	if p > pg.ServingCounter && pg.Counters[(p-1)%int64(n)] < (p-1)/int64(n)+1 {
		return Wait{}, false
	}
	return pg.estimate(p, now), true
}

func (pg Page) estimate(p int64, now time.Time) Wait {
	if pg.AfterDraw {
		return Wait{AfterDraw: true, NextPoll: 2}
	}
	n := len(pg.Counters)
	ahead := EstimateAhead(pg.Counters, n, pg.ServingCounter, p, Grow(pg.Counters, n, p, pg.EnterRate, now.Sub(pg.AsOf)))
	pace := Pace{Batch: max(pg.Batch, 1), Interval: pg.Tick, NextTick: pg.NextTick, Paused: pg.Paused}
	due := pace.AdmitAt(ahead, now).Add(pg.Notice).Sub(now)
	w := Wait{PeopleAhead: ahead, Paused: pg.Paused, Seconds: int(math.Round(max(due, 0).Seconds())), NextPoll: 1}
	if ahead > 0 || pg.Paused {
		w.NextPoll = int(math.Ceil(Tier1Poll(ahead, due.Seconds())))
	}
	return w
}
