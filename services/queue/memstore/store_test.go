package memstore

import (
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/services/queue/storetest"
)

// TestConformance runs the Store suite the Redis adapter passes.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clk := clock.NewManual(time.Now())
		s := New(clk)
		return storetest.Harness{
			Store: s,
			Lose: func(t *testing.T, ev string) {
				s.mu.Lock()
				defer s.mu.Unlock()
				delete(s.events, ev)
				delete(s.listed, ev)
			},
			Unlist: func(t *testing.T, ev string) {
				s.mu.Lock()
				defer s.mu.Unlock()
				delete(s.listed, ev)
			},
			Line: func(t *testing.T, ev string, now time.Time) []storetest.Waiter {
				s.mu.Lock()
				defer s.mu.Unlock()
				e := s.events[ev]
				if e == nil {
					return nil
				}
				var out []storetest.Waiter
				for _, uid := range e.ordered() {
					w := e.line[uid]
					out = append(out, storetest.Waiter{UserID: uid, Base: w.base, Heard: at(w.tick * tickMS)})
				}
				return out
			},
			Elapse: func(t *testing.T, d time.Duration) { clk.Advance(d) },
		}
	})
}
