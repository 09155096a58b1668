package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
)

// TestHostileUserIDsThroughTheAPI sends user ids made of what key layouts,
// globs, Lua and JSON give meaning to, through the trusted header and as a
// Tier 1 pass's sub, to every visitor route of event a while event b has
// state: b's keys are byte-for-byte unchanged (DUMP), a keeps exactly the
// keys a leave-everything run leaves, and each admitted id comes back
// unchanged in its entry token.
func TestHostileUserIDsThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, options{threshold: 1, userHeader: "X-User-Id"})
	evA, evB := testenv.UniqueID(t)+"-a", testenv.UniqueID(t)+"-b"
	for i, uid := range []string{"b1", "b2"} {
		if r := b.do(t, "POST", "/api/queue/check/"+evB, userHdr(uid), nil); r.status != 200 {
			t.Fatalf("b's user %d: %v", i, r)
		}
	}
	if r := b.do(t, "POST", "/api/queue/check/"+evB, bearer(b.pass(t, evB, "b3", 3)), nil); r.str("status") != "queued" {
		t.Fatalf("b3: %v", r)
	}
	before := b.dumpMatching(t, "*{"+evB+"}*")
	if len(before) != 10 { // queue, active, admissions, rank-pending, epoch, served, header, listed, changes, line
		t.Fatalf("setup: b has %d keys: %v", len(before), before)
	}

	key := func(suffix string) string { return b.prefix + "{" + evB + "}:" + suffix }
	hostile := []string{
		"{" + evB + "}:queue *?[]\"\\ x",
		key("queue"), key("active"), key("swept"), key("threshold"), key("served"), key("unlogged"), key("header"), key("listed"), b.prefix + "queue:active-events",
		"*", "[a-z]?", "\\\"", "{}", "' or 1=1 --", "]] .. redis.call('FLUSHALL') .. [[",
		"알리스 {" + evB + "}", strings.Repeat("}", 256),
	}
	for i, uid := range hostile {
		if !queue.ValidUser(uid) {
			t.Fatalf("%q is not a valid user id", uid)
		}
		// Even ones through the trusted header, odd ones as a pass's sub.
		who := userHdr(uid)
		if i%2 == 1 {
			who = bearer(b.pass(t, evA, uid, int64(i+1)))
		}
		r := b.do(t, "POST", "/api/queue/check/"+evA, who, nil)
		want := "queued"
		if i == 0 {
			want = "active"
		}
		if r.status != 200 || r.str("status") != want {
			t.Fatalf("check %q = %v, want %s", uid, r, want)
		}
		if i == 0 {
			e, err := b.entry.VerifyEntry(r.str("entryToken"), evA, b.clk.Now())
			if err != nil || e.UserID != uid || r.cookie == nil || r.cookie.Value != r.str("entryToken") {
				t.Fatalf("entry token of %q: %+v, %v (cookie %v)", uid, e, err, r.cookie)
			}
		}
		for _, route := range []string{"GET /api/queue/status/", "POST /api/queue/heartbeat/"} {
			method, path, _ := strings.Cut(route, " ")
			if r := b.do(t, method, path+evA, who, nil); r.status != 200 || r.str("status") != want {
				t.Fatalf("%s %q = %v, want %s", route, uid, r, want)
			}
		}
	}
	for i, uid := range hostile {
		who := userHdr(uid)
		if i%2 == 1 {
			who = bearer(b.pass(t, evA, uid, int64(i+1)))
		}
		if r := b.do(t, "POST", "/api/queue/leave/"+evA, who, nil); r.status != 200 || !r.flag("removed") {
			t.Fatalf("leave %q = %v", uid, r)
		}
	}

	after := b.dumpMatching(t, "*{"+evB+"}*")
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("b's keys changed:\nbefore %q\nafter  %q", before, after)
	}
	// Everyone left a: only the admission record (rate window and the
	// ranking count no worker has drained yet), the epoch, the record of
	// who was served, the mark that the event is listed and the line's
	// change log (expiring) with its count are left, in a's slot.
	got := b.dumpMatching(t, "*{"+evA+"}*")
	if len(got) != 7 || got[b.prefix+"{"+evA+"}:changes"] == "" || got[b.prefix+"{"+evA+"}:line"] == "" || got[b.prefix+"{"+evA+"}:epoch"] == "" || got[b.prefix+"{"+evA+"}:admissions"] == "" || got[b.prefix+"{"+evA+"}:listed"] == "" ||
		got[b.prefix+"{"+evA+"}:rank-pending"] == "" || got[b.prefix+"{"+evA+"}:served"] == "" {
		t.Fatalf("a's keys after everyone left: %q", got)
	}
	// Every pass that left is done; of the header users only the one who
	// held a slot is on record. The ids are fields, nothing else.
	served, err := b.rdb.HGetAll(context.Background(), b.prefix+"{"+evA+"}:served").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{hostile[0]: "hL"}
	for i := 1; i < len(hostile); i += 2 {
		want[hostile[i]] = "pL"
	}
	if fmt.Sprint(served) != fmt.Sprint(want) {
		t.Fatalf("served %q, want %q", served, want)
	}
	members, err := b.rdb.ZRange(context.Background(), b.prefix+"{"+evA+"}:admissions", 0, -1).Result()
	if err != nil || len(members) != 1 || !strings.HasSuffix(members[0], ":"+hostile[0]) {
		t.Fatalf("a's admissions %q, %v; want one for %q", members, err, hostile[0])
	}
	evs, err := b.rdb.SMembers(context.Background(), b.prefix+"queue:active-events").Result()
	if err != nil || len(evs) != 2 {
		t.Fatalf("active events %q, %v; want only %s and %s", evs, err, evA, evB)
	}
	for _, k := range b.keysUnder(t) {
		if !strings.Contains(k, "{"+evA+"}") && !strings.Contains(k, "{"+evB+"}") && k != b.prefix+"queue:active-events" {
			t.Fatalf("unexpected key %q", k)
		}
	}
}

// dumpMatching is DUMP (the serialized value, byte for byte) of every key
// of the bundle matching match, plus whether it has a TTL.
func (b *testBundle) dumpMatching(t *testing.T, match string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	iter := b.rdb.Scan(ctx, 0, b.prefix+match, 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		v, err := b.rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		pttl, err := b.rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = fmt.Sprintf("%q ttl=%v", v, pttl > 0)
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
