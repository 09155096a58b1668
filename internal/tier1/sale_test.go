package tier1_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/vwr-go/vwr/internal/tier1"
)

func TestParseNonce(t *testing.T) {
	t.Parallel()
	want := bytes.Repeat([]byte{0xab}, 16)
	for _, ok := range []string{"abababababababababababababababab", "ABABABABABABABABABABABABABABABAB", "q6urq6urq6urq6urq6urqw"} {
		got, err := tier1.ParseNonce(ok)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("ParseNonce(%q) = %x, %v", ok, got, err)
		}
	}
	for _, bad := range []string{"", "ab", "abababababababababababababababa", "ababababababababababababababababab",
		"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "q6urq6urq6urq6urq6urq7", "q6urq6urq6urq6urq6urq+", "q6urq6urq6urq6urq6urqw=="} {
		if _, err := tier1.ParseNonce(bad); !errors.Is(err, tier1.ErrInvalidNonce) {
			t.Errorf("ParseNonce(%q) = %v, want ErrInvalidNonce", bad, err)
		}
	}
}

// TestCoveringCountersTakeExactlyOneToN: after the draw the counters must
// say that positions 1…n, and no others, were handed out, so the next
// position of every shard is above n and Visitors counts n.
func TestCoveringCountersTakeExactlyOneToN(t *testing.T) {
	t.Parallel()
	for _, shards := range []int{1, 2, 3, 7, 64} {
		for _, n := range []int64{0, 1, 2, 5, 63, 64, 65, 1000} {
			c := tier1.CoveringCounters(n, shards)
			if got := tier1.Assigned(c, shards); got != n {
				t.Fatalf("%d shards, n=%d: %v hand out %d", shards, n, c, got)
			}
			if got := tier1.Visitors(c, shards, n); got != n {
				t.Fatalf("%d shards, n=%d: Visitors ≤ n = %d", shards, n, got)
			}
			if top := tier1.MaxAssigned(c, shards); n > 0 && top != n {
				t.Fatalf("%d shards, n=%d: max assigned %d", shards, n, top)
			}
			for k := range shards {
				if next := tier1.StridedPosition(k, shards, c[k]+1); next <= n {
					t.Fatalf("%d shards, n=%d: shard %d next hands out %d", shards, n, k, next)
				}
			}
		}
	}
	if fmt.Sprint(tier1.CoveringCounters(7, 3)) != "[3 2 2]" {
		t.Fatalf("CoveringCounters(7, 3) = %v", tier1.CoveringCounters(7, 3))
	}
}
