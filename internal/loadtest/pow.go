package loadtest

import (
	"encoding/json"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/altcha"
)

// What a client pays at the door (docs/bots.md): with Config.Pow, every
// visitor's first assign is answered 428 with a challenge, which it solves
// as the page does (counting from 0; here in Go, natively) and sends back
// in the Altcha header. The report gains the solve times and what K
// tickets cost one client.

// DefaultPowTickets is K in the report's cost for one client.
const DefaultPowTickets = 10_000

// endpointUnpaid names a visitor's first assign at a proof-of-work event,
// whose 428 (the challenge) is the expected answer, not an error.
const endpointUnpaid = "tier1.assign.unpaid"

// PowSolve is the distribution of the visitors' solve times, in ms: the
// solving thread's CPU time on Linux (so a loaded machine does not inflate
// it), the wall clock elsewhere.
type PowSolve struct {
	Median  float64 `json:"median"`
	P90     float64 `json:"p90"`
	Samples int64   `json:"samples"`
}

// PowCost is what the proof of work costs one client that wants Tickets
// arrivals, from the solves of this run (the loadtest's native Go solver,
// one solve per core at a time).
type PowCost struct {
	ExpectedHashes  int64   `json:"expectedHashes"`  // the event's pow
	HashesPerSecond float64 `json:"hashesPerSecond"` // hashes tried ÷ solve time, over every solve
	Tickets         int64   `json:"tickets"`
	CPUSeconds      float64 `json:"cpuSeconds"` // Tickets × the mean solve time
}

// powStats collects the run's solves.
type powStats struct {
	mu     sync.Mutex
	ms     []float64
	hashes int64
	once   sync.Once
	cores  chan struct{} // at most one solve per core, as one device per visitor
}

// core waits for a free core; the returned func gives it back. Solving on
// more goroutines than cores would time the scheduler, not the solver.
func (p *powStats) core() func() {
	p.once.Do(func() { p.cores = make(chan struct{}, runtime.GOMAXPROCS(0)) })
	p.cores <- struct{}{}
	return func() { <-p.cores }
}

func (p *powStats) add(d time.Duration, hashes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ms = append(p.ms, float64(d)/float64(time.Millisecond))
	p.hashes += hashes
}

// report is (nil, nil) when nobody solved anything.
func (p *powStats) report(pow, tickets int64) (*PowSolve, *PowCost) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ms) == 0 {
		return nil, nil
	}
	s := append([]float64(nil), p.ms...)
	sort.Float64s(s)
	var total float64
	for _, x := range s {
		total += x
	}
	mean := total / float64(len(s))
	return &PowSolve{Median: round2(quantile(s, 0.5)), P90: round2(quantile(s, 0.9)), Samples: int64(len(s))},
		&PowCost{
			ExpectedHashes: pow, HashesPerSecond: float64(int64(float64(p.hashes) / (total / 1000))),
			Tickets: tickets, CPUSeconds: round2(float64(tickets) * mean / 1000),
		}
}

// timedSolve solves ch and says how long it took: the thread's CPU time
// where the system tells it (what the work costs, whatever else shares the
// machine), else the wall clock.
func timedSolve(ch altcha.Challenge) (int64, bool, time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, cpu := threadCPU()
	t0 := time.Now()
	n, ok := altcha.Solve(ch.Challenge, ch.Salt, ch.MaxNumber)
	if c1, _ := threadCPU(); cpu {
		return n, ok, c1 - c0
	}
	return n, ok, time.Since(t0)
}

// solveRefusal solves the challenge a 428, 400 pow_invalid or 409 answer
// carries and keeps the header for the visitor's next assign; false when
// the answer carries none.
func (v *visitor) solveRefusal(res response) bool {
	switch res.status {
	case http.StatusPreconditionRequired, http.StatusBadRequest, http.StatusConflict:
	default:
		return false
	}
	var b struct {
		Challenge *altcha.Challenge `json:"challenge"`
	}
	if json.Unmarshal(res.body, &b) != nil || b.Challenge == nil {
		return false
	}
	ch := *b.Challenge
	release := v.r.pow.core()
	n, ok, d := timedSolve(ch)
	release()
	if !ok {
		return false
	}
	v.r.pow.add(d, n+1)
	v.altcha = ch.Payload(n).Encode()
	return true
}
