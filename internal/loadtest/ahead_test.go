package loadtest

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// TestTier2AheadErrorAgainstTheRankSpan: a count is measured against the
// span of the exact ranks read before and after its request, widened by the
// joins ahead of the visitor under way between the reads (they put people
// in ahead, so the rank may have risen and fallen between them); out of
// bound beyond max(5, 2 % of the nearest exact rank); a sample without
// both reads is left out.
func TestTier2AheadErrorAgainstTheRankSpan(t *testing.T) {
	t.Parallel()
	in := func(r int64) rankRead { return rankRead{rank: r, ok: true} }
	q := func(shown int64, exact bool, before, after rankRead) aheadSample {
		return aheadSample{shown: shown, exact: exact, before: before, after: after, pos: 10_000, from: at(1), to: at(1.01)}
	}
	joined := func(shown int64, from float64) aheadSample {
		return aheadSample{shown: shown, before: in(50), after: in(50), pos: 500, from: at(from), to: at(from + 1)}
	}
	ss := []aheadSample{
		q(100, true, in(102), in(98)),      // inside the span: 0
		q(95, false, in(102), in(98)),      // 3 below 98: within 5
		q(1000, false, in(1030), in(1021)), // 21 below 1021: beyond 2 % (20.42)
		q(1000, false, in(1020), in(1019)), // 19 below 1019: within 2 % (20.38)
		q(0, true, in(7), in(6)),           // 6 below 6: beyond 5, though "exact"
		q(10, true, in(3), rankRead{}),     // admitted before the second read: left out
		// 50 before and after, 12 joins ahead under way between 10 s and
		// 11 s: anything from 38 to 62 may have been true; 40 is.
		joined(40, 10),
		// The same count where no join ahead was under way: 10 off.
		joined(40, 20),
	}
	var joins []joinAt
	for range 12 {
		joins = append(joins, joinAt{pos: 100, sent: at(10.5), recv: at(10.6)})
	}
	joins = append(joins,
		joinAt{pos: 600, sent: at(10.5), recv: at(10.6)}, // behind
		joinAt{pos: 100, sent: at(9), recv: at(9.9)},     // answered before the first read
		joinAt{pos: 100, sent: at(11.1), recv: at(11.2)}, // sent after the second
		joinAt{pos: 100, sent: at(19), recv: at(19.5)},   // long before the other window
		joinAt{pos: 100, sent: at(5), recv: at(9.99)},    // the longest, still over before 10 s
	)
	e := tier2AheadError(ss, joins, at(0))
	worst := e.Worst
	e.Worst = nil
	want := Tier2AheadError{Samples: 7, EstimatedShare: 0.7143, MaxAbs: 21, P99Abs: 21, OutOfBound: 3, OutOfBoundExact: 1}
	if !reflect.DeepEqual(*e, want) {
		t.Fatalf("got %+v, want %+v", *e, want)
	}
	// The answers off, furthest first: 21, 19, 10 (the one without joins
	// ahead), 6, 3.
	if len(worst) != 5 || worst[0] != (AheadSample{AtSeconds: 1, Shown: 1000, Before: 1030, After: 1021, Error: 21}) ||
		worst[2] != (AheadSample{AtSeconds: 20, Shown: 40, Before: 50, After: 50, Error: 10}) || worst[4].Error != 3 || !worst[3].Exact {
		t.Fatalf("worst %+v", worst)
	}
	if e := tier2AheadError(nil, nil, at(0)); !reflect.DeepEqual(*e, Tier2AheadError{}) {
		t.Fatal("no samples must give zeros")
	}
}

func TestPassSubject(t *testing.T) {
	t.Parallel()
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"req-42","evt":"x"}`))
	if got := passSubject("h." + payload + ".sig"); got != "req-42" {
		t.Fatalf("subject %q", got)
	}
	for _, bad := range []string{"", "a.b", "a.!!!.c", "a." + base64.RawURLEncoding.EncodeToString([]byte("[]")) + ".c"} {
		if got := passSubject(bad); got != "" {
			t.Errorf("passSubject(%q) = %q", bad, got)
		}
	}
}

// TestRedisCounterSplitsByKind: the hook counts a marked request's
// commands and round trips (a pipeline is one) under the kind its header
// names, an unknown kind as other, and traffic of no request as
// background.
func TestRedisCounterSplitsByKind(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	c := NewRedisCounter()
	rdb.AddHook(c)
	h := c.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		rdb.Get(ctx, "k")
		if r.URL.Path == "/pipe" {
			_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, "a")
				p.Incr(ctx, "b")
				return nil
			})
		}
	}))
	send := func(path, kind string) {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		if kind != "" {
			req.Header.Set(KindHeader, kind)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	send("/get", KindQueuedPoll)
	send("/get", KindQueuedPoll)
	send("/pipe", KindJoin)
	send("/get", "made-up")
	rdb.Set(context.Background(), "k", "v", 0) // no request: background
	// A new connection's handshake (HELLO, CLIENT SETINFO), sent in the
	// first request's context, is the connection's: background.
	byKind, bg := c.Counts()
	want := map[string]RequestCounts{
		KindQueuedPoll: {Requests: 2, Commands: 2, RoundTrips: 2},
		KindJoin:       {Requests: 1, Commands: 3, RoundTrips: 2},
		kindOther:      {Requests: 1, Commands: 1, RoundTrips: 1},
	}
	if len(byKind) != len(want) || bg < 2 {
		t.Fatalf("counts %+v, background %d; want %+v and the handshake and SET in the background", byKind, bg, want)
	}
	for k, w := range want {
		if byKind[k] != w {
			t.Errorf("%s: %+v, want %+v", k, byKind[k], w)
		}
	}
	c.Reset()
	if byKind, bg := c.Counts(); len(byKind) != 0 || bg != 0 {
		t.Fatalf("after Reset: %+v, %d", byKind, bg)
	}
}

// TestRedisPerRequestByKind: the report's per-kind figures are each kind's
// commands and round trips over its requests, the totals over all kinds,
// and background commands per second of the sale.
func TestRedisPerRequestByKind(t *testing.T) {
	t.Parallel()
	var ops BackendOps
	redisPerRequest(&ops, BackendCounts{Tier2: map[string]RequestCounts{
		KindJoin:       {Requests: 100, Commands: 110, RoundTrips: 100},
		KindQueuedPoll: {Requests: 1000, Commands: 150, RoundTrips: 120},
		KindLeave:      {Requests: 100, Commands: 100, RoundTrips: 100},
	}, RedisBackground: 500}, 10)
	if got := ops.RedisByRequest[KindQueuedPoll]; got != (RedisPerRequest{Requests: 1000, RedisCommandsPerRequest: 0.15, RedisRoundTripsPerRequest: 0.12}) {
		t.Errorf("queued polls %+v", got)
	}
	if got := ops.RedisByRequest[KindJoin]; got.RedisCommandsPerRequest != 1.1 || got.RedisRoundTripsPerRequest != 1 {
		t.Errorf("joins %+v", got)
	}
	if _, ok := ops.RedisByRequest[KindActivePoll]; ok {
		t.Error("a kind without requests is reported")
	}
	// 360 commands in 320 round trips over 1,200 requests.
	if ops.RedisCommandsPerRequest != 0.3 || ops.RedisRoundTripsPerRequest != 0.27 {
		t.Errorf("totals %v, %v", ops.RedisCommandsPerRequest, ops.RedisRoundTripsPerRequest)
	}
	if ops.RedisBackgroundCommandsPerSecond == nil || *ops.RedisBackgroundCommandsPerSecond != 50 {
		t.Errorf("background %v", ops.RedisBackgroundCommandsPerSecond)
	}
}
