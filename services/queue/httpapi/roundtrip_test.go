package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/vwr-go/vwr/internal/redistrips"
	"github.com/vwr-go/vwr/internal/testenv"
)

// TestCheckIsOneRoundTrip counts, through a go-redis hook, what one POST
// check costs in every state: joining, queued, already active, direct entry.
// The event's very first check also lists it (SADD, relisted.lua): that is
// the only check that leaves the event's slot.
func TestCheckIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, options{threshold: 1, userHeader: "X-User-Id"})
	h := &redistrips.Hook{}
	b.rdb.AddHook(h)
	warm := testenv.UniqueID(t)
	b.do(t, "POST", "/api/queue/check/"+warm, userHdr("w"), nil) // loads the script (NOSCRIPT → EVAL once)
	ev := testenv.UniqueID(t)
	h.Reset()
	b.do(t, "POST", "/api/queue/check/"+ev, userHdr("first"), nil)
	if tr := h.Reset(); len(tr) != 3 || fmt.Sprint(tr.Names()) != "[evalsha sadd evalsha]" {
		t.Fatalf("the event's first check: %v, want [evalsha] [sadd] [evalsha]", tr)
	}
	b.do(t, "POST", "/api/queue/leave/"+ev, userHdr("first"), nil)
	for _, c := range []struct{ name, uid, want string }{
		{"direct entry", "a", "active"},
		{"join", "b", "queued"},
		{"already queued", "b", "queued"},
		{"already active", "a", "active"},
	} {
		h.Reset()
		r := b.do(t, "POST", "/api/queue/check/"+ev, userHdr(c.uid), nil)
		if r.str("status") != c.want {
			t.Fatalf("%s: %v", c.name, r)
		}
		if tr := h.Reset(); len(tr) != 1 || tr.Scripts() != 1 {
			t.Fatalf("%s: %d round trips and %d script calls (%v), want 1 and 1", c.name, len(tr), tr.Scripts(), tr)
		}
	}
}
