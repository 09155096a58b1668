package loadtest

import (
	"math"
	"sort"
	"strings"
	"time"
)

// Visit is one visitor's journey, in seconds since the first arrival (NaN
// where a stage was never reached).
type Visit struct {
	Position     int64
	Arrived      float64
	Tier1Admit   float64
	Active       float64
	Left         float64
	EstimateWait float64 // Tier 2's estimate at the first queued answer (NaN: direct entry)
	ActualWait   float64 // first queued answer to active
	// Tier 1's estimate when the place was taken, and the wait from then to
	// the pass (NaN: the place was served at once, or never).
	Tier1Estimate float64
	Tier1Wait     float64
}

func (r *run) analyze(vs []*visitor, end time.Time, backend *BackendCounts) *Result {
	rc := r.rec
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()

	sec := func(t time.Time) float64 {
		if t.IsZero() {
			return math.NaN()
		}
		return r.since(t)
	}
	rep := Report{
		Errors:    map[string]map[string]int64{},
		LatencyMs: rc.latencyReport(),
		Threshold: r.cfg.Threshold,
		Faults:    append([]FaultReport{}, r.faultsDone...),
	}
	for ep, m := range rc.errors() {
		rep.Errors[ep] = m
	}
	vr := VisitorsReport{Total: int64(len(vs)), Arrival: r.cfg.Arrival, RatePerSecond: r.cfg.Rate, Seed: r.cfg.Seed, Target: r.t.Describe}
	var last time.Time
	var enters int64
	visits := make([]Visit, len(vs))
	var w2, w1, l2, l1 []float64
	for i, v := range vs {
		if v.seat != "" {
			vr.SeatsHeld++
		}
		if v.soldOut {
			vr.SoldOut++
		}
		if v.reentries > 0 {
			vr.Reentered++
		}
		if v.refused {
			vr.ReentryRefused++
		}
		if len(v.slots) > 1 {
			rep.AdmittedTwice++
		}
		switch {
		case v.stage != stageDone:
			vr.Unfinished++
		case v.gaveUp:
			vr.GaveUp++
		}
		if !v.activeRecv.IsZero() {
			vr.Admitted++
			if v.direct {
				vr.DirectEntries++
			}
		}
		if v.left {
			vr.Left++
		}
		if v.passThrough {
			vr.PassThrough++
		}
		if v.requeued > 0 {
			vr.Requeued++
		}
		if v.passRenewals > 0 {
			vr.PassRenewals++
		}
		if !v.enterRecv.IsZero() {
			enters += 1 + int64(v.requeued)
		}
		if v.finished.After(last) {
			last = v.finished
		}
		vi := Visit{Position: v.position, Arrived: sec(v.arrived), Tier1Admit: sec(v.tier1AdmitRecv), Active: sec(v.activeRecv),
			Left: sec(v.leaveSent), EstimateWait: math.NaN(), ActualWait: math.NaN(), Tier1Estimate: math.NaN(), Tier1Wait: math.NaN()}
		// Waits leave out how late the tool was in noticing the turn
		// (visitor.late).
		if v.est2Set && !v.activeRecv.IsZero() {
			noticeLate := v.lateActive - v.lateWait2
			vi.EstimateWait, vi.ActualWait = v.est2, waited(v.t2FirstQueued, v.activeRecv, noticeLate)
			if vi.ActualWait > 0 {
				w2 = append(w2, relErr(vi.EstimateWait, vi.ActualWait))
			}
			l2 = v.later2.errors(v.activeRecv, noticeLate, l2)
		}
		if !v.tier1AdmitRecv.IsZero() && v.requeued == 0 && !v.est1Served {
			noticeLate := v.lateAdmit1 - v.lateWait1
			if a := waited(v.enterRecv, v.tier1AdmitRecv, noticeLate); a > 0 {
				vi.Tier1Estimate, vi.Tier1Wait = v.est1, a
				w1 = append(w1, relErr(v.est1, a))
			}
			l1 = v.later1.errors(v.tier1AdmitRecv, noticeLate, l1)
		}
		visits[i] = vi
	}
	if last.IsZero() || vr.Unfinished > 0 {
		last = end
	}
	dur := r.since(last)
	vr.DurationSeconds = round2(dur)
	vr.PowSolveMs, vr.PowCost = r.pow.report(r.cfg.Pow, r.cfg.PowTickets)
	vr.SeatsHeldTwice, vr.SeatsReheldAfterLoss = r.seatsHeldTwice(vs)
	vr.StepLateMs = StepLate{P50: r.lateP50, P99: r.lateP99}
	rep.Visitors = vr
	// Unfinished visitors were still on their way when the run ended; they
	// are counted apart, not as lost.
	rep.LostVisitors = vr.Requeued + vr.GaveUp

	// Throughput.
	perSec := map[int64]int64{}
	for _, v := range vs {
		if !v.activeRecv.IsZero() {
			perSec[int64(r.since(v.activeRecv))]++
		}
	}
	var peak int64
	for _, n := range perSec {
		peak = max(peak, n)
	}
	if dur > 0 {
		rep.ThroughputPerSecond = Throughput{
			Requests: round2(float64(rc.requests) / dur), Enters: round2(float64(enters) / dur),
			Admissions: round2(float64(vr.Admitted) / dur), PeakAdmissions: peak,
		}
	}

	passed := r.passedOver(vs)
	rep.Inversions = Inversions{Tier1: tier1Inversions(vs), Tier2: int64(len(passed))}
	rep.MaxActive, rep.OverAdmissions = activeHolders(vs, end, r.cfg.Threshold)
	rep.WaitEstimateError = waitError(w2)
	later2, t1, later1 := waitError(l2), waitError(w1), waitError(l1)
	rep.WaitEstimateError.Later, t1.Later = &later2, &later1
	t1.PeopleAhead = peopleAheadError(vs)
	rep.WaitEstimateError.Tier1 = &t1
	if r.t.ExactRank != nil {
		var joins []joinAt
		for _, v := range vs {
			if !v.t2FirstSent.IsZero() && !v.t2FirstRecv.IsZero() {
				joins = append(joins, joinAt{pos: v.position, sent: v.t2FirstSent, recv: v.t2FirstRecv})
			}
		}
		rep.WaitEstimateError.PeopleAheadError = tier2AheadError(r.aheads, joins, r.start)
	}

	rep.BackendOpsPerVisitor = BackendOps{Tier1Store: "unknown"}
	if backend != nil {
		b, n := *backend, float64(len(vs))
		ops := BackendOps{Tier1Store: b.Tier1Store, HottestItemWriteShare: round4(b.HottestItemShare), HottestPartitionWriteShare: round4(b.HottestPartShare)}
		if n > 0 {
			ops.DynamoReads, ops.DynamoWrites = round2(float64(b.DynamoReads)/n), round2(float64(b.DynamoWrites)/n)
		}
		if b.DynamoWrites > 0 && enters > 0 && b.HottestPartShare > 0 {
			perEnter := float64(b.DynamoWrites) / float64(enters)
			ops.ImpliedEnterCapacity = math.Round(1000 / (b.HottestPartShare * perEnter))
		}
		redisPerRequest(&ops, b, dur)
		rep.BackendOpsPerVisitor = ops
	}
	if r.memWaiters > 0 {
		b := round2(float64(r.memBytes) / float64(r.memWaiters))
		rep.RedisBytesPerWaiter = &b
	}
	r.faultRecovery(rep.Faults, vs)
	fails := make([]Failure, len(rc.failures))
	for i, f := range rc.failures {
		fails[i] = Failure{T: r.since(f.at), Endpoint: f.endpoint, Status: f.status}
	}
	return &Result{Report: rep, Samples: append([]Sample{}, r.samples...), Visits: visits, Failures: fails, PassedOver: passed}
}

// redisPerRequest fills ops' Redis figures from the counts: per Tier 2
// request in all, per request of each kind, and the background commands
// per second over dur seconds.
func redisPerRequest(ops *BackendOps, b BackendCounts, dur float64) {
	var all RequestCounts
	ops.RedisByRequest = map[string]RedisPerRequest{}
	for kind, c := range b.Tier2 {
		all.Requests += c.Requests
		all.Commands += c.Commands
		all.RoundTrips += c.RoundTrips
		if c.Requests > 0 {
			ops.RedisByRequest[kind] = RedisPerRequest{Requests: c.Requests,
				RedisCommandsPerRequest:   round4(float64(c.Commands) / float64(c.Requests)),
				RedisRoundTripsPerRequest: round4(float64(c.RoundTrips) / float64(c.Requests))}
		}
	}
	if all.Requests > 0 {
		ops.RedisCommandsPerRequest = round2(float64(all.Commands) / float64(all.Requests))
		ops.RedisRoundTripsPerRequest = round2(float64(all.RoundTrips) / float64(all.Requests))
	}
	if dur > 0 {
		bg := round2(float64(b.RedisBackground) / dur)
		ops.RedisBackgroundCommandsPerSecond = &bg
	}
}

// faultRecovery fills each fault's error count and recovery time: the
// failures from the fault until the next fault (or the end), and the first
// Tier 2 admission after the last of them and after any recovery window
// that began in between (whenever it came).
func (r *run) faultRecovery(fs []FaultReport, vs []*visitor) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].AtSeconds < fs[j].AtSeconds })
	var admits []float64
	for _, v := range vs {
		if !v.activeRecv.IsZero() {
			admits = append(admits, r.since(v.activeRecv))
		}
	}
	sort.Float64s(admits)
	for i := range fs {
		from, to := fs[i].AtSeconds, math.Inf(1)
		if i+1 < len(fs) {
			to = fs[i+1].AtSeconds
		}
		lastErr := from
		for _, f := range r.rec.failures {
			if strings.HasPrefix(f.endpoint, "junk.") {
				continue
			}
			if t := r.since(f.at); t >= from && t < to {
				fs[i].ErrorCount++
				lastErr = max(lastErr, t)
			}
		}
		if fs[i].Kind == FaultJunkEvents || !fs[i].Injected {
			continue
		}
		// Users put back after a loss learn of their admission during the
		// recovery window; the queue admits anew only after it. (analyze
		// holds r.mu.)
		for until := range r.windows {
			if t := r.since(until); t >= from && t < to {
				lastErr = max(lastErr, t)
			}
		}
		k := sort.SearchFloat64s(admits, lastErr)
		if k < len(admits) {
			rec := round2(admits[k] - from)
			fs[i].RecoverySeconds = &rec
		}
	}
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// relErr is |estimate − actual| ÷ actual.
func relErr(estimate, actual float64) float64 { return math.Abs(estimate-actual) / actual }

// waited is the wait from one answer to the one that saw the turn, in
// seconds, less noticeLate: how late the tool sent the steps after the last
// "still waiting" answer, which a browser would have sent on time. Late
// polls before that answer are not left out: the line moved on while the
// tool was late, so they did not make the turn later, and taking them out
// too made a long wait of many late polls look far shorter than it was.
func waited(from, to time.Time, noticeLate time.Duration) float64 {
	return (to.Sub(from) - noticeLate).Seconds()
}

// errors appends the relative error of each later estimate against the
// wait that remained until done (noticeLate as in waited).
func (e *estimates) errors(done time.Time, noticeLate time.Duration, out []float64) []float64 {
	for i, t := range e.t {
		if a := waited(t, done, noticeLate); a > 0 {
			out = append(out, relErr(e.est[i], a))
		}
	}
	return out
}

// peopleAheadError compares every count of people ahead a visitor's page
// showed (at its place and from later status documents) with the real count
// then: the places handed out between the document's serving counter and
// the visitor's place. The tool sees a place handed out somewhere between
// its assign request's send and its answer, and an assign answer's count was
// made somewhere between its own send and answer; so the real count lies
// between the places certainly handed out by the earliest moment the count
// can refer to and those possibly handed out by the latest, and a count
// within that span is off by nothing.
func peopleAheadError(vs []*visitor) *AheadError {
	var sent, recv []placeAt
	var qs []aheadQuery
	for _, v := range vs {
		if v.requestID == "" || v.passThrough || v.position <= 0 || v.enterRecv.IsZero() {
			continue
		}
		sent, recv = append(sent, placeAt{v.position, v.enterSent}), append(recv, placeAt{v.position, v.enterRecv})
		for _, a := range v.ahead1 {
			if v.position > a.serving {
				qs = append(qs, aheadQuery{from: a.from, to: a.t, s: a.serving, p: v.position, shown: a.shown})
			}
		}
	}
	if len(qs) == 0 {
		return &AheadError{}
	}
	// Certainly handed out by from, and possibly by to.
	lo := countAhead(recv, qs, func(q aheadQuery) time.Time { return q.from })
	hi := countAhead(sent, qs, func(q aheadQuery) time.Time { return q.to })
	var rel []float64
	var within int64
	for i, q := range qs {
		shown := float64(q.shown)
		diff := math.Max(0, math.Max(float64(lo[i].ahead)-shown, shown-float64(hi[i].ahead)))
		line := float64(hi[i].line)
		if diff <= max(0.02*line, 16) {
			within++
		}
		if line > 0 {
			rel = append(rel, diff/line)
		}
	}
	sort.Float64s(rel)
	return &AheadError{Samples: int64(len(qs)), WithinBound: round4(float64(within) / float64(len(qs))),
		MedianOfLine: round4(quantile(rel, 0.5)), P90OfLine: round4(quantile(rel, 0.9)), MaxOfLine: round4(quantile(rel, 1))}
}

// placeAt is a place and a moment it is known by.
type placeAt struct {
	pos int64
	at  time.Time
}

// aheadQuery is one people-ahead count shown for place p with the serving
// counter at s, referring to a moment between from and to.
type aheadQuery struct {
	from, to    time.Time
	s, p, shown int64
}

type aheadCount struct{ ahead, line int64 }

// countAhead answers, for each query in qs, how many of places were known
// by its moment (when) and lie between its s and p (ahead), or after s
// (line): a walk through time over a Fenwick tree of positions.
func countAhead(places []placeAt, qs []aheadQuery, when func(aheadQuery) time.Time) []aheadCount {
	ps := append([]placeAt(nil), places...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].at.Before(ps[j].at) })
	pos := make([]int64, len(ps))
	for i, pl := range ps {
		pos[i] = pl.pos
	}
	sort.Slice(pos, func(i, j int) bool { return pos[i] < pos[j] })
	// rank is the count of places at positions ≤ x.
	rank := func(x int64) int { return sort.Search(len(pos), func(i int) bool { return pos[i] > x }) }
	fw := make([]int64, len(pos)+1)
	upTo := func(i int) (n int64) {
		for ; i > 0; i -= i & -i {
			n += fw[i]
		}
		return n
	}
	order := make([]int, len(qs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return when(qs[order[a]]).Before(when(qs[order[b]])) })
	out := make([]aheadCount, len(qs))
	k := 0
	for _, i := range order {
		q := qs[i]
		for ; k < len(ps) && !ps[k].at.After(when(q)); k++ {
			for j := rank(ps[k].pos); j < len(fw); j += j & -j {
				fw[j]++
			}
		}
		out[i] = aheadCount{ahead: upTo(rank(q.p-1)) - upTo(rank(q.s)), line: upTo(len(pos)) - upTo(rank(q.s))}
	}
	return out
}

// redisLoss says whether a fault of this kind loses what Tier 2's Redis
// held (the demo site's seat holds live there too).
func redisLoss(kind string) bool {
	return kind == FaultRedisFlush || kind == FaultRedisFlushRestart || kind == FaultRedisRestart
}

// seatsHeldTwice counts seats two visitors were told they hold at once. A
// seat held again after a fault that emptied Redis (where the demo site's
// holds live, beside Tier 2's line) is counted apart, as re-held after the
// loss; one held again after the first hold ran out is not counted.
func (r *run) seatsHeldTwice(vs []*visitor) (twice, afterLoss int64) {
	bySeat := map[string][]time.Time{}
	for _, v := range vs {
		if v.seat != "" {
			bySeat[v.seat] = append(bySeat[v.seat], v.seatAt)
		}
	}
	var losses []float64
	for _, f := range r.faultsDone {
		if f.Injected && redisLoss(f.Kind) {
			losses = append(losses, f.AtSeconds)
		}
	}
	for _, ts := range bySeat {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		double, reheld := false, false
		for i := 1; i < len(ts); i++ {
			prev, t := ts[i-1], ts[i]
			if r.holdTTL > 0 && t.Sub(prev) >= r.holdTTL {
				continue // the first hold had run out
			}
			lost := false
			for _, at := range losses {
				if r.since(prev) <= at && at <= r.since(t) {
					lost = true
				}
			}
			double, reheld = double || !lost, reheld || lost
		}
		switch {
		case double:
			twice++
		case reheld:
			afterLoss++
		}
	}
	return twice, afterLoss
}

func waitError(xs []float64) WaitError {
	sort.Float64s(xs)
	return WaitError{Median: round4(quantile(xs, 0.5)), P90: round4(quantile(xs, 0.9)), Samples: int64(len(xs))}
}

// tier1Inversions counts visitors passed over at Tier 1: visitor A was told
// "not yet" by a check sent after a visitor B behind A (higher position) had
// been admitted. Both facts are seen by the client, in that order, so each
// count is certain, not a timing artefact.
func tier1Inversions(vs []*visitor) int64 {
	type e struct {
		pos       int64
		admitted  time.Time // received
		lastWait  time.Time // sent
		hasAdmit  bool
		hasWaited bool
	}
	var es []e
	for _, v := range vs {
		if v.requestID == "" || v.passThrough {
			continue
		}
		es = append(es, e{v.position, v.tier1AdmitRecv, v.lastWaitSent1, !v.tier1AdmitRecv.IsZero() && v.requeued == 0, !v.lastWaitSent1.IsZero()})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].pos < es[j].pos })
	// earliest[i]: the first admission among positions after es[i].
	var n int64
	var earliest time.Time
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].hasWaited && !earliest.IsZero() && es[i].lastWait.After(earliest) {
			n++
		}
		if es[i].hasAdmit && (earliest.IsZero() || es[i].admitted.Before(earliest)) {
			earliest = es[i].admitted
		}
	}
	return n
}

// tier2Inversions counts visitors passed over at Tier 2 (tier2PassedOver).
func tier2Inversions(vs []*visitor) int64 { return int64(len(tier2PassedOver(vs))) }

// passing is one visitor passed over (a) and the first visitor behind it
// let in ahead of it (b).
type passing struct{ a, b *visitor }

// tier2PassedOver finds the visitors passed over at Tier 2, where the line
// is ordered by Tier 1 position: A was already queued (its first queued
// answer arrived) before B was last seen queued — or before B's first check,
// for a direct entry — B is behind A, B became active, and A was still told
// "queued" by a check sent after B's active answer arrived. With each it
// names the B whose active answer came first.
func tier2PassedOver(vs []*visitor) []passing {
	var es []*visitor
	for _, v := range vs {
		if v.passThrough || v.position <= 0 || v.t2FirstSent.IsZero() {
			continue
		}
		es = append(es, v)
	}
	// Walking from the back of the line, the admitted visitors behind A sit
	// in a Fenwick tree keyed by the rank of "after" (descending), holding
	// the earliest active answer: A is passed over if some B with after >
	// A.joined answered active before A's last queued check was sent.
	sort.Slice(es, func(i, j int) bool { return es[i].position < es[j].position })
	afters := make([]time.Time, 0, len(es))
	for _, x := range es {
		afters = append(afters, x.tier2After())
	}
	sort.Slice(afters, func(i, j int) bool { return afters[i].After(afters[j]) }) // descending
	rank := func(t time.Time) int {                                               // count of afters strictly later than t
		return sort.Search(len(afters), func(i int) bool { return !afters[i].After(t) })
	}
	fw := newMinFenwick(len(afters))
	var out []passing
	for i := len(es) - 1; i >= 0; i-- {
		a := es[i]
		if !a.t2FirstQueued.IsZero() && !a.t2LastQueued.IsZero() {
			if b := fw.prefixMin(rank(a.t2FirstQueued)); b != nil && a.t2LastQueued.After(b.activeRecv) {
				out = append(out, passing{a, b})
			}
		}
		if !a.activeRecv.IsZero() {
			fw.update(rank(a.tier2After())+1, a) // position among afters ≥ its own
		}
	}
	return out
}

// passedOver explains each Tier 2 inversion for passed-over.csv.
func (r *run) passedOver(vs []*visitor) []PassedOver {
	var out []PassedOver
	for _, p := range tier2PassedOver(vs) {
		a, b := p.a, p.b
		out = append(out, PassedOver{
			APosition: a.position, BPosition: b.position,
			AJoined: r.since(a.t2FirstQueued), ALastQueued: r.since(a.t2LastQueued),
			BAfter: r.since(b.tier2After()), BActive: r.since(b.activeRecv),
			BDirect: b.direct, AInstance: a.tier2, BInstance: b.tier2,
		})
	}
	return out
}

// tier2After is when the visitor was last known to be still waiting at
// Tier 2: its last queued check, or its active check for a direct entry.
func (v *visitor) tier2After() time.Time {
	if v.t2LastQueued.IsZero() {
		return v.activeSent
	}
	return v.t2LastQueued
}

// minFenwick answers "the visitor with the earliest active answer among the
// first k slots" with updates.
type minFenwick struct{ t []*visitor }

func newMinFenwick(n int) *minFenwick { return &minFenwick{t: make([]*visitor, n+1)} }

// update puts v into slot i (1-based) if its active answer came earlier.
func (f *minFenwick) update(i int, v *visitor) {
	for ; i < len(f.t); i += i & -i {
		if f.t[i] == nil || v.activeRecv.Before(f.t[i].activeRecv) {
			f.t[i] = v
		}
	}
}

// prefixMin is the visitor with the earliest active answer in slots 1..k,
// or nil.
func (f *minFenwick) prefixMin(k int) *visitor {
	var m *visitor
	for i := min(k, len(f.t)-1); i > 0; i -= i & -i {
		if f.t[i] != nil && (m == nil || f.t[i].activeRecv.Before(m.activeRecv)) {
			m = f.t[i]
		}
	}
	return m
}

// activeHolders sweeps the intervals in which each visitor certainly held an
// entry token (from the active answer until it asked to leave) and returns
// the most held at once, and how many admissions raised the count above the
// threshold.
func activeHolders(vs []*visitor, end time.Time, threshold int64) (maxActive, over int64) {
	type ev struct {
		t     time.Time
		delta int64
	}
	var evs []ev
	for _, v := range vs {
		if v.activeRecv.IsZero() {
			continue
		}
		stop := v.leaveSent
		if stop.IsZero() {
			stop = end
		}
		evs = append(evs, ev{v.activeRecv, 1}, ev{stop, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if !evs[i].t.Equal(evs[j].t) {
			return evs[i].t.Before(evs[j].t)
		}
		return evs[i].delta < evs[j].delta // leaves first at a tie
	})
	var cur int64
	for _, e := range evs {
		cur += e.delta
		if e.delta > 0 && cur > threshold {
			over++
		}
		maxActive = max(maxActive, cur)
	}
	return maxActive, over
}
