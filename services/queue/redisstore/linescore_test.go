package redisstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/services/queue"
)

// TestLineScoreConstantsMatch ties lib.lua's heartbeat encoding to the Go
// side that decodes it (QueueScore) and documents it (queue.HeartbeatTick).
func TestLineScoreConstantsMatch(t *testing.T) {
	t.Parallel()
	for _, want := range []string{
		fmt.Sprintf("local HB_TICK_MS = %d\n", queue.HeartbeatTick.Milliseconds()),
		fmt.Sprintf("local HB_TICKS = %d\n", hbTicks),
	} {
		if !strings.Contains(lib, want) {
			t.Errorf("lib.lua lacks %q", want)
		}
	}
	// The largest base with the largest tick is still an exact float64.
	if top := int64(queue.MaxLineBase)*hbTicks + hbTicks - 1; top >= 1<<53 {
		t.Errorf("MaxLineBase × %d + tick = %d, beyond 2^53", hbTicks, top)
	}
}

// TestLargestBasesStayExact: bases at MaxLineBase (arrival ms far in the
// future) keep their order and their exact base through heartbeats and a
// sweep, on every backend's Lua; a larger base is refused, writing nothing.
func TestLargestBasesStayExact(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, b.new)
			f.check("x", 1, t0, 1)
			top := int64(queue.MaxLineBase)
			f.check("last", top, t0, 1)
			f.check("before", top-1, t0, 1)
			for i := 1; i <= 3; i++ { // heartbeats in later ticks
				f.check("last", 0, t0.Add(time.Duration(i)*7*time.Second), 1)
			}
			if n, err := f.s.Sweep(f.ctx, f.ev, t0.Add(30*time.Second), time.Minute); err != nil || n != 0 {
				t.Fatalf("Sweep = %d, %v", n, err)
			}
			for uid, want := range map[string]int64{"before": top - 1, "last": top} {
				if got, ok, err := f.s.QueueScore(f.ctx, f.ev, uid); err != nil || !ok || got != want {
					t.Fatalf("%s: base %d, %v, %v; want %d", uid, got, ok, err, want)
				}
			}
			if s := f.check("before", 0, t0.Add(30*time.Second), 1); s.Rank != 0 {
				t.Fatalf("before: rank %d, want 0", s.Rank)
			}
			_, err := f.s.Check(f.ctx, queue.CheckInput{EventID: f.ev, UserID: "over", Score: top + 1, Now: t0, ActiveTTL: ttl, DefaultThreshold: 1})
			if err == nil {
				t.Fatal("a base above MaxLineBase was accepted")
			}
			if _, ok, _ := f.s.QueueScore(f.ctx, f.ev, "over"); ok {
				t.Fatal("the refused check wrote the user")
			}
		})
	}
}
