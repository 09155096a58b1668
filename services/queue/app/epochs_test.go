package app

import (
	"testing"
	"time"
)

// TestForgottenEpochStillFindsALoss: an instance forgets the epoch of an
// event that is no longer listed once the durable settings hold the same
// one, and a loss of the queue's Redis (which unlists every event) is still
// found: the next visitor is not let in as if the sale had just begun.
func TestForgottenEpochStillFindsALoss(t *testing.T) {
	t.Parallel()
	p := newPair(t, 2, Config{})
	a, b := p.guest("a", 1, time.Hour), p.guest("b", 2, time.Hour)
	code, body := p.check(0, a)
	wantStatus(t, "a", code, body, 200, "active")
	p.pass() // ranks a's admission and keeps the epoch in the settings
	if n := p.apps[0].Service.RememberedEpochs(); n != 1 {
		t.Fatalf("%d epochs remembered while a holds a slot, want 1", n)
	}
	p.flush()
	p.pass()
	p.pass()
	if n := p.apps[0].Service.RememberedEpochs(); n != 0 {
		t.Fatalf("%d epochs remembered after two passes without the event, want 0", n)
	}
	p.clk.Advance(time.Second)
	if code, body := p.check(0, b); code == 200 && body["status"] == "active" {
		t.Fatalf("b after the loss: %d %v; want the loss found (no direct entry)", code, body)
	}
}
