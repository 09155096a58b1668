package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestOffsetFollowsTheReference(t *testing.T) {
	t.Parallel()
	base := NewManual(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	o := NewOffset(base)
	if !o.Now().Equal(base.Now()) {
		t.Fatal("a fresh Offset is not the base clock")
	}
	ref := base.Now().Add(90 * time.Second)
	if err := o.Sync(context.Background(), func(context.Context) (time.Time, error) { return ref, nil }); err != nil {
		t.Fatal(err)
	}
	if o.Offset() != 90*time.Second || !o.Now().Equal(ref) {
		t.Fatalf("offset %v, now %v; want 90s and %v", o.Offset(), o.Now(), ref)
	}
	base.Advance(time.Minute)
	if !o.Now().Equal(ref.Add(time.Minute)) {
		t.Fatalf("now %v after a minute", o.Now())
	}
	if err := o.Sync(context.Background(), func(context.Context) (time.Time, error) { return time.Time{}, errors.New("down") }); err == nil || o.Offset() != 90*time.Second {
		t.Fatalf("a failed sync changed the offset to %v (err %v)", o.Offset(), err)
	}
}
