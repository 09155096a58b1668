// Package loadtest rehearses a sale against a running vwr: it simulates
// visitors who behave as the waiting pages do (static/vwr/vwr.js for Tier 1,
// queue.js for Tier 2), injects faults, and reports what a waiting room is
// judged on — does it hold, does it keep the order, are its estimates honest,
// does it lose anyone. `vwr loadtest` (cmd/vwr) wires it to an in-process
// `vwr local` or to a -base URL.
//
// Visitors are state machines on one timer heap: a bounded pool of workers
// runs one step (one HTTP request) at a time, so 100,000 visitors cost a heap
// entry each, not a goroutine, and the in-flight requests never exceed
// Config.Concurrency.
package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
)

// Config is one rehearsal.
type Config struct {
	Visitors int
	Arrival  string  // ArrivalBurst, ArrivalPoisson or ArrivalRamp
	Rate     float64 // arrivals per second
	Seed     uint64  // arrivals and every visitor's jitter

	Event     string
	Threshold int64         // Tier 2 threshold set through the admin API before the run
	Shards    int           // Tier 1 counter shards set at activation
	Batch     int           // Tier 1 advance per tick set at activation
	Dwell     time.Duration // how long an admitted visitor stays (±20 %)
	// Seats > 0: each admitted visitor first holds one seat on the
	// protected site (Target.Site), of a venue this size; 0: no seat holds.
	Seats int
	// Pow > 0 activates the event with a proof of work of this many
	// expected hashes; visitors solve it as the page does (pow.go).
	// PowTickets is K in the report's cost for one client (10,000).
	Pow        int64
	PowTickets int64
	// Reenter is the share (0…1) of admitted visitors who, once they have
	// left, try again with the same Tier 1 pass, as a hostile visitor
	// would, and keep trying while that works (up to maxReentries times).
	Reenter float64

	Concurrency int           // requests in flight at most
	Timeout     time.Duration // the whole run; visitors still waiting then are unfinished
	Faults      []Fault
	JunkRate    float64 // junk-events: unconfigured event ids per second
	// AheadSampleEvery: one queued poll in this many reads the visitor's
	// exact rank around it (Target.ExactRank), for the people-ahead error.
	AheadSampleEvery int

	Progress io.Writer   // where the progress line goes; nil: none
	Clock    clock.Clock // nil: the wall clock
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Visitors == 0 {
		c.Visitors = 10000
	}
	if c.Arrival == "" {
		c.Arrival = ArrivalBurst
	}
	if c.Rate == 0 {
		c.Rate = 500
	}
	if c.Event == "" {
		c.Event = "loadtest"
	}
	if c.Threshold == 0 {
		c.Threshold = 500
	}
	if c.Shards == 0 {
		c.Shards = 4
	}
	if c.Dwell == 0 {
		c.Dwell = 5 * time.Second
	}
	if c.Batch == 0 {
		// Tier 1 meters at about what Tier 2 drains: threshold/dwell a second.
		c.Batch = int(max(1, float64(c.Threshold)/c.Dwell.Seconds()))
	}
	if c.Concurrency == 0 {
		c.Concurrency = 256
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Minute
	}
	if c.JunkRate == 0 {
		c.JunkRate = 200
	}
	if c.AheadSampleEvery == 0 {
		c.AheadSampleEvery = DefaultAheadSampleEvery
	}
	if c.PowTickets == 0 {
		c.PowTickets = DefaultPowTickets
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	return c
}

// Target is what the visitors talk to, plus whatever the target can tell or
// do beyond HTTP (an in-process stack can count backend operations and
// inject faults; a remote -base cannot).
type Target struct {
	Describe string
	// Base serves Tier 1 at /vwr-api/vwr/… and Tier 2 at /api/queue/….
	Base string
	// Tier2 are the Tier 2 instances' bases (default: Base). Visitors are
	// spread over them and move to the next after a transport error, as a
	// load balancer would send them.
	Tier2 []string
	// Admin bearer tokens of Tier 1 and Tier 2.
	Tier1AdminToken, Tier2AdminToken string
	// Site is the protected site's base, with the seat API at
	// /api/seats/{event} behind the queue's gate (default: Base).
	Site string

	// Inject performs a fault other than junk-events; nil: none supported.
	Inject func(ctx context.Context, kind string) (note string, err error)
	// Backend reads the backend counters; ResetBackend zeroes them before
	// the first arrival. Both may be nil.
	Backend      func() BackendCounts
	ResetBackend func()
	// RedisMemory sums MEMORY USAGE over the event's Tier 2 keys; nil when
	// unknown.
	RedisMemory func(ctx context.Context, event string) (int64, error)
	// ExactRank reads user's rank in event's Tier 2 line (people ahead);
	// ok is false when the user is not in it. nil when unknown.
	ExactRank func(ctx context.Context, event, user string) (rank int64, ok bool, err error)
	// Idle runs the idle phase once the sale is over and says what Tier 2's
	// Redis executed meanwhile; nil: no idle phase.
	Idle func(ctx context.Context) (*IdleReport, error)
	// Client is the shared HTTP client; nil: one sized for Concurrency.
	Client *http.Client
}

// BackendCounts are the target's backend counters since ResetBackend.
type BackendCounts struct {
	Tier1Store                         string
	DynamoReads, DynamoWrites          int64
	HottestItemShare, HottestPartShare float64
	// Tier2 are the Tier 2 HTTP requests of the sale's event the target
	// served, by kind (KindJoin…), with their Redis commands and round
	// trips; RedisBackground the commands its Tier 2 clients sent on
	// behalf of none of them (the workers', background refreshes).
	Tier2           map[string]RequestCounts
	RedisBackground int64
}

// Result is a run's report plus the series the plots are drawn from.
type Result struct {
	Report  Report
	Samples []Sample
	Visits  []Visit
	// Failures are every non-2xx answer and transport error, in order.
	Failures []Failure
	// PassedOver explains each Tier 2 inversion with one visitor admitted
	// ahead of the one passed over (empty when there is none).
	PassedOver []PassedOver
}

// PassedOver is one Tier 2 inversion: A was queued and still told so after
// B, behind A, had been let in. Times are seconds since the first arrival.
type PassedOver struct {
	APosition, BPosition int64
	AJoined, ALastQueued float64 // A's first queued answer; A's last queued check sent
	BAfter, BActive      float64 // B was still waiting when it sent this; B's active answer
	BDirect              bool
	AInstance, BInstance int // which Tier 2 instance each was balanced to
}

// Failure is one failed request, at T seconds since the first arrival;
// Status 0 is a transport error.
type Failure struct {
	T        float64
	Endpoint string
	Status   int
}

// Sample is one reading of the servers' own counters.
type Sample struct {
	T            float64 // seconds since the first arrival
	Tier2Queue   int64
	Tier2Active  int64
	Tier1Waiting int64
	Threshold    int64
}

// Run rehearses cfg against t and returns what happened. An error means the
// rehearsal could not run (setup failed); what the system did wrong is in
// the report.
func Run(ctx context.Context, cfg Config, t Target) (*Result, error) {
	cfg = cfg.WithDefaults()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x76777221))
	arrivals, err := Arrivals(cfg.Arrival, cfg.Visitors, cfg.Rate, rng)
	if err != nil {
		return nil, err
	}
	if len(t.Tier2) == 0 {
		t.Tier2 = []string{t.Base}
	}
	if t.Site == "" {
		t.Site = t.Base
	}
	if t.Client == nil {
		t.Client = NewClient(cfg.Concurrency)
	}
	for _, f := range cfg.Faults {
		if f.Kind != FaultJunkEvents && t.Inject == nil {
			return nil, fmt.Errorf("loadtest: fault %s needs the in-process target (no -base)", f)
		}
	}
	r := &run{cfg: cfg, t: t, rec: newRecorder(), lb: newBalancer(len(t.Tier2))}
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	if t.ResetBackend != nil {
		t.ResetBackend()
	}

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	r.start = cfg.Clock.Now()
	vs := make([]*visitor, cfg.Visitors)
	for i := range vs {
		vs[i] = newVisitor(r, i, cfg.Seed)
	}
	s := newScheduler(cfg.Concurrency, cfg.Clock, func(ctx context.Context, v *visitor) (time.Duration, bool) {
		d, done := v.step(ctx)
		if done {
			r.done.Add(1)
		}
		return d, done
	})
	bar := newProgress(cfg.Progress, r.progressState)
	for i, v := range vs {
		s.push(r.start.Add(arrivals[i]), v)
	}

	var bg sync.WaitGroup
	bgCtx, stopBG := context.WithCancel(ctx)
	bg.Add(4)
	go func() { defer bg.Done(); bar.run(bgCtx) }()
	go func() { defer bg.Done(); r.sample(bgCtx) }()
	go func() { defer bg.Done(); r.healthChecks(bgCtx) }()
	go func() { defer bg.Done(); r.faults(bgCtx) }()
	s.run(ctx, cfg.Visitors)
	r.lateP50, r.lateP99 = s.lateness()
	end := cfg.Clock.Now()
	stopBG()
	bg.Wait()
	bar.Finish()

	var backend *BackendCounts
	if t.Backend != nil {
		b := t.Backend()
		backend = &b
	}
	res := r.analyze(vs, end, backend)
	if t.Idle != nil && parent.Err() == nil {
		// After the sale, however long it took: the phase bounds itself.
		idle, err := t.Idle(parent)
		if err != nil {
			return res, fmt.Errorf("%w: %w", ErrIdlePhase, err)
		}
		ops := &res.Report.BackendOpsPerVisitor
		ops.Idle = idle
		if idle.Seconds > 0 {
			rate := round2(float64(idle.Commands) / idle.Seconds)
			ops.IdleCommandsPerSecond = &rate
		}
	}
	return res, nil
}

// ErrIdlePhase is Run's error when the sale was rehearsed but the idle
// phase failed: the Result is returned with it, without the idle figures.
var ErrIdlePhase = errors.New("loadtest: idle phase")

// NewClient is an HTTP client that keeps up to n connections per host open.
func NewClient(n int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * n,
		MaxIdleConnsPerHost: n,
		// Below bin/queue's (and an ALB's default) 60 s idle timeout, so a
		// POST never goes out on a connection the server is closing: Go does
		// not retry those, and the run would count a transport error.
		IdleConnTimeout: 30 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

type run struct {
	cfg   Config
	t     Target
	rec   *recorder
	lb    *balancer
	start time.Time

	mu         sync.Mutex
	samples    []Sample
	faultsDone []FaultReport
	memBytes   int64 // at the largest Tier 2 line seen
	memWaiters int64
	// windows are the ends of the recovery windows Tier 2 announced
	// (recoveringUntil): admissions the queue decides only resume then.
	windows map[time.Time]bool
	junkSeq atomic.Int64
	pow     powStats
	// The people-ahead samples (ahead.go).
	aheadSeq atomic.Int64
	aheads   []aheadSample
	// holdTTL is how long the protected site holds a seat (its list says).
	holdTTL time.Duration
	// For the progress line.
	arrived, admitted, done atomic.Int64
	// How late the tool ran visitors' steps (ms), from the scheduler.
	lateP50, lateP99 float64
}

// progressState reads the sale's state for the progress line.
func (r *run) progressState() progressState {
	st := progressState{
		T: r.since(r.cfg.Clock.Now()), Total: int64(r.cfg.Visitors),
		Arrived: r.arrived.Load(), Admitted: r.admitted.Load(), Done: r.done.Load(), Threshold: r.cfg.Threshold,
	}
	r.mu.Lock()
	if n := len(r.samples); n > 0 {
		last := r.samples[n-1]
		st.Tier1Waiting, st.Tier2Line, st.Tier2Active = last.Tier1Waiting, last.Tier2Queue, last.Tier2Active
		if last.Threshold > 0 {
			st.Threshold = last.Threshold
		}
	}
	r.mu.Unlock()
	return st
}

// sawHoldTTL notes the seat-hold lifetime the site announced.
func (r *run) sawHoldTTL(d time.Duration) {
	if d <= 0 {
		return
	}
	r.mu.Lock()
	r.holdTTL = d
	r.mu.Unlock()
}

// sawRecovery notes a recovery window's end that an answer announced.
func (r *run) sawRecovery(until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.windows == nil {
		r.windows = map[time.Time]bool{}
	}
	r.windows[until] = true
}

func (r *run) since(t time.Time) float64 { return t.Sub(r.start).Seconds() }

// setup activates the event on Tier 1 and sets its Tier 2 threshold.
func (r *run) setup(ctx context.Context) error {
	ev := r.cfg.Event
	body := fmt.Sprintf(`{"shards":%d,"batchSize":%d,"pow":%d}`, r.cfg.Shards, r.cfg.Batch, r.cfg.Pow)
	if err := r.admin(ctx, http.MethodPost, r.t.Base+"/vwr-api/vwr/admin/activate/"+ev, r.t.Tier1AdminToken, body, nil); err != nil {
		return fmt.Errorf("loadtest: activate %s on Tier 1: %w", ev, err)
	}
	body = fmt.Sprintf(`{"threshold":%d}`, r.cfg.Threshold)
	if err := r.admin(ctx, http.MethodPut, r.t.Tier2[0]+"/api/queue/admin/threshold/"+ev, r.t.Tier2AdminToken, body, nil); err != nil {
		return fmt.Errorf("loadtest: set the Tier 2 threshold of %s: %w", ev, err)
	}
	// Every instance must know the event before the first visitor comes:
	// instances that read event settings from a durable store refresh them
	// every few seconds.
	for _, base := range r.t.Tier2 {
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := r.admin(ctx, http.MethodGet, base+"/api/queue/admin/stats/"+ev, r.t.Tier2AdminToken, "", nil)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("loadtest: Tier 2 at %s does not know %s after 30 s: %w", base, ev, err)
			}
			if clock.Sleep(ctx, 200*time.Millisecond) != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}

// sample reads the servers' counters twice a second, and Redis memory every
// two seconds while the line grows.
func (r *run) sample(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := r.cfg.Clock.Now()
		var q struct {
			QueueSize    int64 `json:"queueSize"`
			CurrentUsers int64 `json:"currentUsers"`
			Threshold    int64 `json:"threshold"`
		}
		var t1 struct {
			Waiting int64 `json:"waiting"`
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		e1 := r.admin(sctx, http.MethodGet, r.t.Tier2[0]+"/api/queue/admin/stats/"+r.cfg.Event, r.t.Tier2AdminToken, "", &q)
		e2 := r.admin(sctx, http.MethodGet, r.t.Base+"/vwr-api/vwr/admin/status/"+r.cfg.Event, r.t.Tier1AdminToken, "", &t1)
		cancel()
		if e1 != nil && e2 != nil {
			continue // both down (a fault): no reading rather than a false zero
		}
		r.mu.Lock()
		r.samples = append(r.samples, Sample{T: r.since(now), Tier2Queue: q.QueueSize, Tier2Active: q.CurrentUsers, Tier1Waiting: t1.Waiting, Threshold: q.Threshold})
		grow := e1 == nil && q.QueueSize > r.memWaiters
		r.mu.Unlock()
		n++
		if r.t.RedisMemory != nil && grow && q.QueueSize >= 100 && n%4 == 0 {
			b, err := r.t.RedisMemory(ctx, r.cfg.Event)
			if err == nil && b > 0 {
				r.mu.Lock()
				r.memBytes, r.memWaiters = b, q.QueueSize
				r.mu.Unlock()
			}
		}
	}
}

// faults injects each fault at its time.
func (r *run) faults(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, f := range r.cfg.Faults {
		wg.Add(1)
		go func(f Fault) {
			defer wg.Done()
			if clock.Sleep(ctx, time.Until(r.start.Add(f.At))) != nil {
				return
			}
			fr := FaultReport{Kind: f.Kind, AtSeconds: r.since(r.cfg.Clock.Now())}
			if f.Kind == FaultJunkEvents {
				fr.Injected = true
				fr.Note = fmt.Sprintf("unconfigured event ids at %.0f/s from here to the end", r.cfg.JunkRate)
				r.addFault(fr)
				r.junk(ctx)
				return
			}
			note, err := r.t.Inject(ctx, f.Kind)
			fr.Injected, fr.Note = err == nil, note
			if err != nil {
				fr.Note = err.Error()
			}
			r.addFault(fr)
		}(f)
	}
}

func (r *run) addFault(f FaultReport) {
	r.mu.Lock()
	r.faultsDone = append(r.faultsDone, f)
	r.mu.Unlock()
}

// junk takes passes for never-activated event ids (Tier 1 fails open) and
// presents them to Tier 2, at JunkRate until ctx ends.
func (r *run) junk(ctx context.Context) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / r.cfg.JunkRate))
	defer tick.Stop()
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			continue // the target is slower than the junk rate: skip, do not pile up
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ev := "junk-" + strconv.FormatInt(r.junkSeq.Add(1), 36)
			res := r.call(ctx, "junk.assign", http.MethodPost, r.t.Base+"/vwr-api/vwr/assign/"+ev, nil, nil)
			var pass struct {
				Token string `json:"token"`
			}
			if res.decode(&pass) != nil || pass.Token == "" {
				return
			}
			r.call(ctx, "junk.check", http.MethodPost, r.t.Tier2[0]+"/api/queue/check/"+ev, map[string]string{"Authorization": "Bearer " + pass.Token}, nil)
		}()
	}
}

var errStatus = errors.New("unexpected status")

// balancer stands in for the load balancer in front of the Tier 2
// instances: a visitor keeps its instance while it is up; an instance that
// cut a connection is out until its /healthz answers again.
type balancer struct {
	up []atomic.Bool
}

func newBalancer(n int) *balancer {
	b := &balancer{up: make([]atomic.Bool, n)}
	for i := range b.up {
		b.up[i].Store(true)
	}
	return b
}

func (b *balancer) down(i int) { b.up[i].Store(false) }

// pick returns i if it is up, else the next instance that is (i when none is).
func (b *balancer) pick(i int) int {
	for k := range len(b.up) {
		if j := (i + k) % len(b.up); b.up[j].Load() {
			return j
		}
	}
	return i
}

// healthChecks probes instances that are out, twice a second.
func (r *run) healthChecks(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for i, base := range r.t.Tier2 {
			if r.lb.up[i].Load() {
				continue
			}
			hctx, cancel := context.WithTimeout(ctx, time.Second)
			req, _ := http.NewRequestWithContext(hctx, http.MethodGet, base+"/healthz", nil)
			if resp, err := r.t.Client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					r.lb.up[i].Store(true)
				}
			}
			cancel()
		}
	}
}
