package console

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/redisstore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// lifecycle is a console in front of a real Tier 1 (its HTTP API over
// redis-server, a local beacon, a manual clock shared with the console)
// and a Tier 2 that knows none of these events.
type lifecycle struct {
	t   *testing.T
	clk *clock.Manual
	svc *tier1.Service
	h   http.Handler
}

const lifecycleToken = "console-lifecycle-token"

func newLifecycle(t *testing.T) *lifecycle {
	t.Helper()
	clk := clock.NewManual(storetest.Epoch)
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	_, dc := storetest.Beacon(t, clk)
	svc := tier1.New(redisstore.New(rdb), storetest.Keys(t), clk, tier1.Config{Draw: dc, Logger: slog.New(slog.DiscardHandler)})
	api := tier1api.New(tier1api.Deps{Service: svc, Clock: clk, Logger: slog.New(slog.DiscardHandler)}, tier1api.AdminOptions{Token: "t1-admin-token"}).Handler()
	t1 := httptest.NewServer(api)
	t.Cleanup(t1.Close)
	t2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/queue/admin/events" {
			_, _ = w.Write([]byte(`{"events":[],"truncated":false}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"no such event","code":"not_found"}`))
	}))
	t.Cleanup(t2.Close)
	u1, _ := url.Parse(t1.URL)
	u2, _ := url.Parse(t2.URL)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := New(ctx, Config{
		Tokens: []string{lifecycleToken},
		Upstream: &Upstream{Tier1: u1, Tier2: u2, Authorize: func(_ context.Context, tier int, req *http.Request, _ []byte) error {
			if tier == 1 {
				req.Header.Set("Authorization", "Bearer t1-admin-token")
			}
			return nil
		}},
		Clock: clk, SampleEvery: 20 * time.Millisecond, ListEvery: time.Nanosecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &lifecycle{t: t, clk: clk, svc: svc, h: s.Handler()}
}

func (l *lifecycle) call(method, path, body string) (int, map[string]any) {
	l.t.Helper()
	r := httptest.NewRequest(method, "http://127.0.0.1:8090"+path, strings.NewReader(body))
	r.RemoteAddr, r.Host = "127.0.0.1:50000", "127.0.0.1:8090"
	r.Header.Set("Authorization", "Bearer "+lifecycleToken)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	l.h.ServeHTTP(w, r)
	var out map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &out)
	return w.Code, out
}

// act sends a control and returns the API's answer, which must be 2xx.
func (l *lifecycle) act(ev, action, body string) map[string]any {
	l.t.Helper()
	code, out := l.call("POST", "/vwr/console/api/events/"+ev+"/"+action, body)
	if code != 200 || out["status"].(float64) >= 300 {
		l.t.Fatalf("%s %s: %d %v", action, ev, code, out)
	}
	return out
}

// until polls the console's live view of ev until ok holds for it.
func (l *lifecycle) until(ev, what string, ok func(event map[string]any, row map[string]any) bool) map[string]any {
	l.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := l.call("GET", "/vwr/console/api/live?event="+ev, "")
		e, _ := body["event"].(map[string]any)
		if code == 200 && e != nil && ok(e, rowOf(body, ev)) {
			return e
		}
		if time.Now().After(deadline) {
			if e != nil {
				delete(e, "samples")
			}
			l.t.Fatalf("the console never showed %s of %s: %d %v (row %v)", what, ev, code, e, rowOf(body, ev))
		}
		// The list is read again once ListEvery has passed on the console's
		// clock, which only the test moves.
		l.clk.Advance(time.Millisecond)
		time.Sleep(20 * time.Millisecond)
	}
}

// listState polls the list (no event watched) until ev's row has state.
func (l *lifecycle) listState(ev, state string) {
	l.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body := l.call("GET", "/vwr/console/api/live", "")
		if r := rowOf(body, ev); r != nil && r["state"] == state {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("the list never showed %s %s: %v", ev, state, body["events"])
		}
		// The list is read again once ListEvery has passed on the console's
		// clock, which only the test moves.
		l.clk.Advance(time.Millisecond)
		time.Sleep(20 * time.Millisecond)
	}
}

func rowOf(body map[string]any, ev string) map[string]any {
	rows, _ := body["events"].([]any)
	for _, r := range rows {
		if m, _ := r.(map[string]any); m["eventId"] == ev {
			return m
		}
	}
	return nil
}

func state(want string) func(e, row map[string]any) bool {
	return func(e, row map[string]any) bool { return e["state"] == want && row != nil && row["state"] == want }
}

// TestConsoleFollowsASale: every state the console names, reached through
// its own controls against a real Tier 1 — scheduled, pre-queue, drawing,
// drawn (then active) with n, R, the round, the beacon's randomness and the
// command that verifies it; active, paused, resumed, inactive; cancelled —
// in the event's view and in the list.
func TestConsoleFollowsASale(t *testing.T) {
	t.Parallel()
	l := newLifecycle(t)
	ev, plain, cancelled := testenv.UniqueID(t), testenv.UniqueID(t), testenv.UniqueID(t)

	// An event Tier 1 never activated is inactive there (and in no list).
	l.until(plain, "an unknown event as inactive", func(e, row map[string]any) bool { return e["state"] == StateInactive && row == nil })
	l.act(plain, "activate", `{"shards":1,"batchSize":3}`)
	l.until(plain, "the activation", state(StateActive))
	l.act(plain, "pause", "")
	l.until(plain, "the pause", state(StatePaused))
	l.act(plain, "resume", "")
	l.until(plain, "the resume", state(StateActive))
	l.act(plain, "deactivate", "")
	l.until(plain, "the deactivation", state(StateInactive))

	opens := storetest.Epoch.Add(time.Hour)
	from := storetest.Epoch.Add(30 * time.Minute)
	a := l.act(ev, "schedule", `{"opensAt":"`+opens.Format(time.RFC3339)+`","prequeueFrom":"`+from.Format(time.RFC3339)+`"}`)
	if doc, _ := a["answer"].(map[string]any); doc["phase"] != "prequeue" || doc["eventId"] != ev {
		t.Fatalf("schedule answered %v", a)
	}
	l.until(ev, "a sale before its pre-queue", state(StateScheduled))
	l.clk.Set(from.Add(time.Minute))
	l.until(ev, "the pre-queue", state(StatePrequeue))
	const tickets = 7
	for i := range tickets {
		if _, err := l.svc.AssignWithNonce(context.Background(), ev, "", bytes.Repeat([]byte{byte(i + 1)}, 16)); err != nil {
			t.Fatal(err)
		}
	}
	// The advancer closes the list at the opening; the draw waits for
	// the round.
	l.clk.Set(opens)
	if _, err := l.svc.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.clk.Advance(drawEvery)
	e := l.until(ev, "the closed list", func(e, row map[string]any) bool {
		d, _ := e["draw"].(map[string]any)
		return state(StateDrawing)(e, row) && d != nil && d["status"] == "drawing"
	})
	d := e["draw"].(map[string]any)
	if d["n"] != float64(tickets) || len(d["root"].(string)) != 64 || d["round"].(float64) == 0 || d["randomness"] != nil {
		t.Fatalf("the draw while drawing: %v", d)
	}
	l.clk.Set(opens.Add(time.Minute))
	if _, err := l.svc.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.clk.Advance(drawEvery)
	e = l.until(ev, "the draw", func(e, row map[string]any) bool {
		d, _ := e["draw"].(map[string]any)
		return state(StateActive)(e, row) && d != nil && d["status"] == "drawn"
	})
	d = e["draw"].(map[string]any)
	if d["n"] != float64(tickets) || len(d["root"].(string)) != 64 || d["randomness"] == "" || d["randomness"] == nil ||
		!strings.HasSuffix(d["url"].(string), "/vwr/draw/"+ev) || !strings.HasPrefix(d["verify"].(string), "vwr verify-draw -event "+ev+" -url ") {
		t.Fatalf("the drawn sale: %v", d)
	}

	// Not watched: the list alone names the state.
	l.act(cancelled, "schedule", `{"opensAt":"`+l.clk.Now().Add(time.Hour).Format(time.RFC3339)+`"}`)
	l.listState(cancelled, StatePrequeue)
	l.act(cancelled, "cancel", "")
	l.listState(cancelled, StateCancelled)
}
