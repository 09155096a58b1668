package loadtest

import (
	"container/heap"
	"context"
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
	work := make(chan *visitor)
	done := make(chan struct{}, total) // never blocks a worker, even after run returns
	var wg sync.WaitGroup
	for range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := range work {
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
		var due *visitor
		wait := time.Hour
		if len(s.h) > 0 {
			if d := s.h[0].at.Sub(s.clk.Now()); d <= 0 {
				due = heap.Pop(&s.h).(wakeItem).v
			} else {
				wait = d
			}
		}
		s.mu.Unlock()
		if due != nil {
			select {
			case work <- due:
				continue
			case <-done:
				finished++
				s.push(s.clk.Now(), due) // not taken: back in line, at once
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
