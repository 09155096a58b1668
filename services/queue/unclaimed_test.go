package queue

import (
	"fmt"
	"testing"
	"time"
)

func TestUnclaimedForgetsClaimedAndOld(t *testing.T) {
	t.Parallel()
	var u unclaimed
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	slot := t0.Add(DefaultActiveTTL)
	u.add("e", []string{"a", "b", "c"}, []string{"c"}, t0, slot)
	u.add("f", []string{"z"}, nil, t0, slot)
	u.forget("e", "b") // fetched a token
	got := func(ev string, now time.Time) string {
		m := map[string]bool{}
		for _, r := range u.pending(ev, now) {
			if !r.SlotEnd.Equal(slot) && r.UserID != "a" {
				t.Errorf("%s: slot %v", r.UserID, r.SlotEnd)
			}
			if r.Pass != (r.UserID != "c") || r.Left {
				t.Errorf("%s: %+v; only c came without a pass", r.UserID, r)
			}
			m[r.UserID] = true
		}
		return fmt.Sprint(m)
	}
	if s := got("e", t0.Add(time.Second)); s != "map[a:true c:true]" {
		t.Fatalf("pending %s", s)
	}
	// a is admitted again later (a new slot): the later record counts.
	later := t0.Add(ClaimHorizon - time.Second)
	u.add("e", []string{"a"}, nil, later, later.Add(DefaultActiveTTL))
	if s := got("e", t0.Add(ClaimHorizon)); s != "map[a:true]" {
		t.Fatalf("after the horizon of the first batch: %s", s)
	}
	u.sweep(later.Add(ClaimHorizon))
	if len(u.events) != 0 {
		t.Fatalf("sweep left %d events", len(u.events))
	}
}
