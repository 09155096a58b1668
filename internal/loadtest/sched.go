package loadtest

import (
	"container/heap"
	"context"
	"sort"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
)

// scheduler runs visitors' steps when they fall due on a fixed pool of
// workers. A visitor is either in the heap or in exactly one worker, so its
// fields need no lock.
type scheduler struct {
	workers int
	clk     clock.Clock
	step    func(ctx context.Context, v *visitor) (time.Duration, bool)

	mu   sync.Mutex
	h    wakeHeap
	wake chan struct{} // a push that may have moved the earliest wake-up
	// late is how long after it fell due each step was handed to a worker,
	// in ms: a saturated tool (or machine) shows here, not as a slow server.
	late []float32
}

func newScheduler(workers int, clk clock.Clock, step func(ctx context.Context, v *visitor) (time.Duration, bool)) *scheduler {
	return &scheduler{workers: workers, clk: clk, step: step, wake: make(chan struct{}, 1)}
}

type wakeItem struct {
	at time.Time
	v  *visitor
}

type wakeHeap []wakeItem

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wakeItem)) }
func (h *wakeHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

func (s *scheduler) push(at time.Time, v *visitor) {
	s.mu.Lock()
	heap.Push(&s.h, wakeItem{at, v})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run dispatches until total visitors are done or ctx ends.
func (s *scheduler) run(ctx context.Context, total int) {
	work := make(chan wakeItem)
	done := make(chan struct{}, total) // never blocks a worker, even after run returns
	var wg sync.WaitGroup
	for range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				v := it.v
				// How long the step waited for a worker after it fell due:
				// the tool's delay, which a browser does not have.
				late := max(s.clk.Now().Sub(it.at), 0)
				v.late += late
				s.mu.Lock()
				s.late = append(s.late, float32(late.Seconds()*1000))
				s.mu.Unlock()
				d, finished := s.step(ctx, v)
				if finished {
					done <- struct{}{}
					continue
				}
				s.push(s.clk.Now().Add(d), v)
			}
		}()
	}
	defer func() { close(work); wg.Wait() }()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	finished := 0
	for finished < total {
		s.mu.Lock()
		var due *wakeItem
		wait := time.Hour
		if len(s.h) > 0 {
			if d := s.h[0].at.Sub(s.clk.Now()); d <= 0 {
				it := heap.Pop(&s.h).(wakeItem)
				due = &it
			} else {
				wait = d
			}
		}
		s.mu.Unlock()
		if due != nil {
			select {
			case work <- *due:
				continue
			case <-done:
				finished++
				s.push(due.at, due.v) // not taken: back in line, as due as it was
				continue
			case <-ctx.Done():
				return
			}
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-s.wake:
		case <-done:
			finished++
		case <-ctx.Done():
			return
		}
	}
}

// lateness is the p50 and p99 of how late steps were handed to a worker, ms.
func (s *scheduler) lateness() (p50, p99 float64) {
	s.mu.Lock()
	xs := make([]float64, len(s.late))
	for i, x := range s.late {
		xs[i] = float64(x)
	}
	s.mu.Unlock()
	sort.Float64s(xs)
	return round2(quantile(xs, 0.5)), round2(quantile(xs, 0.99))
}
