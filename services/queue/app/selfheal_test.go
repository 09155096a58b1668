package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/envconf"
	esredis "github.com/vwr-go/vwr/internal/eventsettings/redisstore"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/httpapi"
)

const tier1Secret = "selfheal-tier1-secret-0123456789abcdef"

// admissionOrder records every admission both instances report, in order.
type admissionOrder struct {
	mu  sync.Mutex
	uid []string
}

func (o *admissionOrder) Admitted(a queue.Admission) {
	o.mu.Lock()
	o.uid = append(o.uid, a.UserID)
	o.mu.Unlock()
}

// visitor is one simulated browser: a Tier 1 pass with its position, and
// the entry token the site renews while its slot runs.
type visitor struct {
	uid      string
	pos      int64
	pass     string
	entry    string
	tokenExp time.Time
	slotEnd  time.Time
	done     bool // held a slot until its end, or left
	leftAt   time.Time
}

// TestSelfHealMidSale: two instances on one redis-server, 300 visitors with
// Tier 1 positions, threshold 10. Mid-sale the queue's Redis is flushed (or,
// separately, killed with SIGKILL and restarted empty, or flushed while
// both instances restart, so that no process remembers anything). Waiting
// pages poll every nextPoll (1 s) and call check when told not_in_queue;
// the protected site renews each holder's entry token every second. One
// visitor in seven leaves two seconds into their slot and comes straight
// back with the same pass, and everyone whose slot ended tries again too:
// they are told "done". Throughout, at no moment do more than 10 visitors
// who have not left hold an unexpired entry token (a leaver's token is
// refused by heartbeat at once); nobody is handed a second slot; the
// admissions (first admission of each visitor) follow Tier 1 positions with
// no inversion; and every visitor, all of whom kept polling, gets a slot.
func TestSelfHealMidSale(t *testing.T) {
	t.Parallel()
	for _, loss := range []string{"flush", "kill -9 and empty restart", "flush and restart of every instance"} {
		t.Run(loss, func(t *testing.T) {
			t.Parallel()
			selfHeal(t, loss)
		})
	}
}

func selfHeal(t *testing.T, loss string) {
	const (
		users     = 300
		threshold = 10
		lossAt    = 25 // simulated seconds into the sale
	)
	qr := testenv.NewOwnRedis(t)
	crdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	t.Cleanup(func() { crdb.Close() })
	cs := esredis.New(crdb, testenv.UniqueID(t)+":")
	clk := clock.NewManual(time.Now().UTC().Truncate(time.Second))
	order := &admissionOrder{}
	cfg := Config{
		EntryTokenSecret: secret, Tier1TokenKeys: "t1:" + tier1Secret, AdminToken: "adm",
		ActiveTTL:      envconf.Seconds(10 * time.Second),
		EntryTokenTTL:  envconf.Seconds(4 * time.Second),
		RecoveryWindow: envconf.Seconds(10 * time.Second), // ≥ 4 s + 5 s skew, ≥ 2 × nextPoll
	}
	var apps []*App
	var handlers []http.Handler
	start := func() {
		apps, handlers = nil, nil
		for range 2 {
			rdb := redis.NewClient(&redis.Options{Addr: qr.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
			t.Cleanup(func() { rdb.Close() })
			a, err := Open(cfg, Options{Redis: rdb, ConfigStore: cs, Clock: clk, Notifier: order, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			a.Preload(context.Background())
			apps, handlers = append(apps, a), append(handlers, a.Handler())
		}
	}
	start()
	ev := "sale"
	do := func(h http.Handler, method, path string, v *visitor, body string) (int, map[string]any, *http.Cookie) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if v != nil {
			req.Header.Set("Authorization", "Bearer "+v.pass)
			if v.entry != "" {
				req.AddCookie(&http.Cookie{Name: httpapi.EntryCookie, Value: v.entry})
			}
		} else {
			req.Header.Set("Authorization", "Bearer adm")
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		var c *http.Cookie
		for _, ck := range rec.Result().Cookies() {
			if ck.Name == httpapi.EntryCookie {
				c = ck
			}
		}
		return rec.Code, out, c
	}
	if code, body, _ := do(handlers[0], "PUT", "/api/queue/admin/threshold/"+ev, nil, `{"threshold":10}`); code != 200 {
		t.Fatalf("set threshold: %d %v", code, body)
	}
	if err := apps[1].Settings.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}

	t1keys, err := token.ParseKeyRing("t1:" + tier1Secret)
	if err != nil {
		t.Fatal(err)
	}
	vs := make([]*visitor, users)
	for i := range vs {
		pos := int64(i + 1)
		v := &visitor{uid: fmt.Sprintf("v%03d", pos), pos: pos}
		if v.pass, err = t1keys.IssueTier1(token.Tier1{Subject: v.uid, EventID: ev, Position: pos,
			IssuedAt: clk.Now(), ExpiresAt: clk.Now().Add(24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		vs[i] = v
	}
	maxValid := 0
	checkValid := func(when string) {
		n := 0
		for _, v := range vs {
			if v.tokenExp.After(clk.Now()) {
				n++
			}
		}
		maxValid = max(maxValid, n)
		if n > threshold {
			t.Fatalf("%s: %d visitors hold an unexpired entry token, threshold %d", when, n, threshold)
		}
	}
	// take reads an answer: an active one hands the visitor a (renewed)
	// token, for the slot it already had, never a second one.
	take := func(v *visitor, body map[string]any, c *http.Cookie) {
		if body["status"] != "active" {
			return
		}
		if c == nil {
			t.Fatalf("%s active without a cookie: %v", v.uid, body)
		}
		e, err := apps[0].EntryKeys.VerifyEntry(c.Value, ev, clk.Now())
		if err != nil || e.UserID != v.uid {
			t.Fatalf("%s got a bad entry token: %v", v.uid, err)
		}
		if !v.slotEnd.IsZero() && !e.SlotEndsAt.Equal(v.slotEnd) {
			t.Fatalf("%s was handed a second slot (until %v; it had one until %v)", v.uid, e.SlotEndsAt, v.slotEnd)
		}
		v.entry, v.tokenExp, v.slotEnd = c.Value, e.ExpiresAt, e.SlotEndsAt
	}
	// comeBack is a visitor whose slot is over trying the same pass again.
	comeBack := func(v *visitor, why string) {
		code, body, _ := do(handlers[rand.IntN(2)], "POST", "/api/queue/check/"+ev, v, "")
		if code == http.StatusServiceUnavailable {
			return
		}
		if code != 200 || body["status"] != "done" || body["code"] != why {
			t.Fatalf("%s back after its slot (%s): %d %v; want done (%s)", v.uid, why, code, body, why)
		}
	}
	// Arrival in Tier 1 order, as Tier 1 releases the line.
	for _, v := range vs {
		_, body, c := do(handlers[int(v.pos)%2], "POST", "/api/queue/check/"+ev, v, "")
		take(v, body, c)
		checkValid("arrival")
	}
	recovering := false
	for sec := 1; sec <= 1200; sec++ {
		clk.Advance(time.Second)
		if sec == lossAt {
			switch loss {
			case "flush", "flush and restart of every instance":
				qrdb := redis.NewClient(&redis.Options{Addr: qr.Addr})
				if err := qrdb.FlushAll(context.Background()).Err(); err != nil {
					t.Fatal(err)
				}
				qrdb.Close()
				if loss != "flush" {
					start()
				}
			default:
				qr.Kill9()
				// One second of outage: every call fails (503), tokens run on.
				for _, v := range vs {
					if code, _, _ := do(handlers[0], "GET", "/api/queue/status/"+ev, v, ""); code != http.StatusServiceUnavailable {
						t.Fatalf("during the outage: status %d, want 503", code)
					}
				}
				clk.Advance(time.Second)
				qr.Restart()
				// go-redis backs off after failed dials and retries once a
				// second (real time): wait until both instances answer again.
				for _, h := range handlers {
					deadline := time.Now().Add(15 * time.Second)
					for {
						req := httptest.NewRequest("GET", "/healthz", nil)
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, req)
						if rec.Code == 200 {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("an instance did not reconnect to the restarted Redis: %d %s", rec.Code, rec.Body)
						}
						time.Sleep(50 * time.Millisecond)
					}
				}
			}
		}
		for _, i := range rand.Perm(users) {
			v := vs[i]
			if v.done {
				continue
			}
			if !v.slotEnd.IsZero() && !clk.Now().Before(v.slotEnd) {
				v.done = true // the slot ran out; the site stops renewing
				v.entry = ""
				comeBack(v, "slot_ended")
				continue
			}
			if v.pos%7 == 0 && !v.slotEnd.IsZero() && clk.Now().Sub(v.slotEnd.Add(-cfg.ActiveTTL.D())) >= 2*time.Second {
				// Leaves two seconds in, and tries the same pass again
				// at once; its old token no longer renews.
				h := handlers[rand.IntN(2)]
				code, body, _ := do(h, "POST", "/api/queue/leave/"+ev, v, "")
				if code == http.StatusServiceUnavailable {
					continue
				}
				if code != 200 {
					t.Fatalf("%s leaving: %d %v", v.uid, code, body)
				}
				v.done, v.leftAt, v.tokenExp = true, clk.Now(), time.Time{}
				if code, body, _ := do(h, "POST", "/api/queue/heartbeat/"+ev, v, ""); code != http.StatusGone || body["code"] != "left" {
					t.Fatalf("%s renewing after its leave: %d %v; want 410 left", v.uid, code, body)
				}
				v.entry = ""
				comeBack(v, "left")
				continue
			}
			h := handlers[rand.IntN(2)]
			// Waiting pages poll status; the site renews a holder's token
			// through heartbeat. Either way, not_in_queue means check.
			path := "/api/queue/status/"
			method := "GET"
			if v.entry != "" {
				path, method = "/api/queue/heartbeat/", "POST"
			}
			code, body, c := do(h, method, path+ev, v, "")
			if code == http.StatusServiceUnavailable {
				continue // a connection that died with the old server; next second
			}
			if body["status"] == "not_in_queue" {
				code, body, c = do(h, "POST", "/api/queue/check/"+ev, v, "")
			}
			if code != 200 {
				if code == http.StatusServiceUnavailable {
					continue
				}
				t.Fatalf("%s at %ds: %d %v", v.uid, sec, code, body)
			}
			if body["recovering"] == true {
				recovering = true
			}
			take(v, body, c)
			checkValid(fmt.Sprintf("%ds", sec))
		}
		for _, a := range apps {
			if _, err := a.Worker.AdmitOnce(context.Background()); err != nil {
				t.Fatalf("admission pass at %ds: %v", sec, err)
			}
		}
		if !slices.ContainsFunc(vs, func(v *visitor) bool { return !v.done }) {
			break
		}
	}
	if !recovering {
		t.Fatal("no answer ever said recovering: the loss went unnoticed")
	}
	for _, v := range vs {
		if !v.done {
			t.Fatalf("%s (position %d) never got a slot although it kept polling", v.uid, v.pos)
		}
	}
	// First admissions in order: each visitor's position is above every
	// earlier one's. (A visitor admitted just before the loss, who never
	// learnt of it, is admitted again; only the first counts.)
	order.mu.Lock()
	defer order.mu.Unlock()
	seen := map[string]bool{}
	var last int64
	inversions := 0
	for _, uid := range order.uid {
		if seen[uid] {
			continue
		}
		seen[uid] = true
		var pos int64
		fmt.Sscanf(uid, "v%d", &pos)
		if pos < last {
			inversions++
		}
		last = max(last, pos)
	}
	if inversions != 0 || len(seen) != users {
		t.Fatalf("%d inversions among %d first admissions (want 0 among %d): %v", inversions, len(seen), users, order.uid)
	}
	t.Logf("%s: at most %d valid entry tokens at once; %d admissions reported for %d visitors", loss, maxValid, len(order.uid), users)
}
