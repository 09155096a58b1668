package clock

import (
	"testing"
	"time"
)

func TestManual(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := NewManual(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	c.Advance(90 * time.Second)
	if got, want := c.Now(), start.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("after Advance: %v, want %v", got, want)
	}
	later := start.Add(time.Hour)
	c.Set(later)
	if got := c.Now(); !got.Equal(later) {
		t.Fatalf("after Set: %v, want %v", got, later)
	}
	var _ Clock = System{}
	if d := time.Since(System{}.Now()); d < 0 || d > time.Minute {
		t.Fatalf("System clock is off by %v", d)
	}
}
