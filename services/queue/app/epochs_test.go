package app

import (
	"context"
	"testing"
	"time"
)

// TestForgottenEpochStillFindsALoss: an instance forgets the epoch of an
// event that is no longer listed once the durable settings hold the same
// one (its worker reads the listed events once per cleanup interval, here
// at every pass), and a loss of the queue's Redis (which unlists every event) is still
// found: the next visitor is not let in as if the sale had just begun.
func TestForgottenEpochStillFindsALoss(t *testing.T) {
	t.Parallel()
	p := newPair(t, 2, Config{StaleCleanupInterval: 1})
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

// TestRaisedThresholdWakesTheEventOnEveryInstance: a threshold raised in
// the durable settings wakes the event on an instance that did not take
// the admin call, as soon as its settings cache sees the change: its next
// pass lets the head of the line in, though no request to the event
// followed.
func TestRaisedThresholdWakesTheEventOnEveryInstance(t *testing.T) {
	t.Parallel()
	p := newPair(t, 1, Config{})
	a, b := p.guest("a", 1, time.Hour), p.guest("b", 2, time.Hour)
	code, body := p.check(0, a)
	wantStatus(t, "a", code, body, 200, "active")
	code, body = p.check(0, b)
	wantStatus(t, "b", code, body, 200, "queued")
	if n := p.pass(); n != 0 {
		t.Fatalf("a full event let %d in", n)
	}
	if code, body, _ := p.admin(0, "PUT", "/api/queue/admin/threshold/"+p.ev, `{"threshold":2}`); code != 200 {
		t.Fatalf("raise the threshold: %d %v", code, body)
	}
	if err := p.apps[1].Settings.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, err := p.apps[1].Worker.AdmitOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("the other instance's pass after the raise let %d in (%v), want b", n, err)
	}
}
