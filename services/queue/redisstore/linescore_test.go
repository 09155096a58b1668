package redisstore

import (
	"fmt"
	"strings"
	"testing"

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
