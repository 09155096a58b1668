package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/envconf"
	esredis "github.com/vwr-go/vwr/internal/eventsettings/redisstore"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue/httpapi"
)

// The promises Tier 2 keeps against hostile visitors and losses, each tried
// with two instances on one real redis-server of the test's own (so it may
// be flushed) and event settings in Tier 1's Redis store.

// pair is two Tier 2 instances sharing a queue Redis, a settings store and
// a clock, serving one configured event.
type pair struct {
	t     *testing.T
	qr    *testenv.OwnRedis
	cs    *esredis.Store
	csPre string // the settings store's key prefix
	clk   *clock.Manual
	cfg   Config
	apps  [2]*App
	t1    *token.KeyRing
	ev    string
	order *admissionOrder
}

func newPair(t *testing.T, threshold int, cfg Config) *pair {
	t.Helper()
	crdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	t.Cleanup(func() { crdb.Close() })
	cfg.EntryTokenSecret, cfg.Tier1TokenKeys, cfg.AdminToken = secret, "t1:"+tier1Secret, "adm"
	pre := testenv.UniqueID(t) + ":"
	p := &pair{t: t, qr: testenv.NewOwnRedis(t), cs: esredis.New(crdb, pre), csPre: pre,
		clk: clock.NewManual(time.Now().UTC().Truncate(time.Second)), cfg: cfg, ev: "sale", order: &admissionOrder{}}
	var err error
	if p.t1, err = token.ParseKeyRing(cfg.Tier1TokenKeys); err != nil {
		t.Fatal(err)
	}
	p.restart()
	if code, body, _ := p.admin(0, "PUT", "/api/queue/admin/threshold/"+p.ev, fmt.Sprintf(`{"threshold":%d}`, threshold)); code != 200 {
		t.Fatalf("set threshold: %d %v", code, body)
	}
	if p.apps[1].Settings != nil {
		if err := p.apps[1].Settings.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// restart replaces both instances with fresh ones: nothing of the old
// ones' memory survives, as when every process restarts.
func (p *pair) restart() {
	p.t.Helper()
	p.restartOf(0, 1)
}

// restartOf replaces the given instances with fresh ones.
func (p *pair) restartOf(which ...int) {
	p.t.Helper()
	for _, i := range which {
		rdb := redis.NewClient(&redis.Options{Addr: p.qr.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		p.t.Cleanup(func() { rdb.Close() })
		a, err := Open(p.cfg, Options{Redis: rdb, ConfigStore: p.cs, Clock: p.clk, Notifier: p.order, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			p.t.Fatal(err)
		}
		a.Preload(context.Background())
		p.apps[i] = a
	}
}

// guest is one visitor: a Tier 1 pass and the entry cookie the API last set.
type guest struct {
	uid   string
	pos   int64
	pass  string
	entry string
}

func (p *pair) guest(uid string, pos int64, passTTL time.Duration) *guest {
	p.t.Helper()
	pass, err := p.t1.IssueTier1(token.Tier1{Subject: uid, EventID: p.ev, Position: pos, IssuedAt: p.clk.Now(), ExpiresAt: p.clk.Now().Add(passTTL)})
	if err != nil {
		p.t.Fatal(err)
	}
	return &guest{uid: uid, pos: pos, pass: pass}
}

// visit sends one visitor request to instance i with the pass (unless
// noPass) and the entry cookie (if any), and keeps a new cookie.
func (p *pair) visit(i int, g *guest, method, route string, noPass bool) (int, map[string]any) {
	p.t.Helper()
	req := httptest.NewRequest(method, route+p.ev, nil)
	if !noPass {
		req.Header.Set("Authorization", "Bearer "+g.pass)
	}
	if g.entry != "" {
		req.AddCookie(&http.Cookie{Name: httpapi.EntryCookie, Value: g.entry})
	}
	rec := httptest.NewRecorder()
	p.apps[i].Handler().ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		p.t.Fatalf("%s %s: %d %q", method, route, rec.Code, rec.Body.String())
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name == httpapi.EntryCookie && c.Value != "" {
			g.entry = c.Value
		}
	}
	return rec.Code, out
}

func (p *pair) check(i int, g *guest) (int, map[string]any) {
	return p.visit(i, g, "POST", "/api/queue/check/", false)
}
func (p *pair) heartbeat(i int, g *guest) (int, map[string]any) {
	return p.visit(i, g, "POST", "/api/queue/heartbeat/", false)
}
func (p *pair) leave(i int, g *guest) {
	p.t.Helper()
	if code, body := p.visit(i, g, "POST", "/api/queue/leave/", false); code != 200 {
		p.t.Fatalf("leave %s: %d %v", g.uid, code, body)
	}
}

func (p *pair) admin(i int, method, path, body string) (int, map[string]any, string) {
	p.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer adm")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	p.apps[i].Handler().ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out, rec.Body.String()
}

// pass runs one admission pass on both instances and returns how many
// they let in.
func (p *pair) pass() int {
	p.t.Helper()
	n := 0
	for _, a := range p.apps {
		m, err := a.Worker.AdmitOnce(context.Background())
		if err != nil {
			p.t.Fatalf("admission pass: %v", err)
		}
		n += m
	}
	return n
}

func (p *pair) flush() {
	p.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.qr.Addr})
	defer c.Close()
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		p.t.Fatal(err)
	}
}

// loseSettings deletes every key of the settings store (and so the
// ledgers), as a FLUSHALL of its own Redis would.
func (p *pair) loseSettings() {
	p.t.Helper()
	ctx := context.Background()
	crdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(p.t)})
	defer crdb.Close()
	keys, err := crdb.Keys(ctx, p.csPre+"*").Result()
	if err != nil || len(keys) == 0 {
		p.t.Fatalf("settings keys %v, %v", keys, err)
	}
	if err := crdb.Del(ctx, keys...).Err(); err != nil {
		p.t.Fatal(err)
	}
}

// loseRedisWithEveryInstance flushes the queue's Redis and restarts both
// instances; the first holder's renewal finds the loss, the next admission
// pass replays the ledger, and every holder then renews (counted back).
func (p *pair) loseRedisWithEveryInstance(holders ...*guest) {
	p.t.Helper()
	p.flush()
	p.restart()
	p.clk.Advance(time.Second)
	p.heartbeat(0, holders[0]) // finds the loss (503 until the replay)
	p.pass()                   // replays the ledger
	for _, g := range holders {
		code, body := p.heartbeat(1, g)
		wantStatus(p.t, g.uid+" renewing after the replay", code, body, 200, "active")
	}
}

func (p *pair) admissions() []string {
	p.order.mu.Lock()
	defer p.order.mu.Unlock()
	return append([]string(nil), p.order.uid...)
}

func wantStatus(t *testing.T, what string, code int, body map[string]any, wantCode int, status string) {
	t.Helper()
	if code != wantCode || (status != "" && body["status"] != status && body["code"] != status) {
		t.Fatalf("%s: %d %v; want %d %s", what, code, body, wantCode, status)
	}
}

// TestReentryTakesNoSlot: two visitors at the head of the line take their
// slots, then keep leaving and checking again with the same pass, on
// either instance, round after round, while ten people wait behind them.
// They are told "done" every time and never hold a slot again; their old
// tokens no longer renew (410); the line behind them is let in, in order,
// into exactly the slots they freed. A holder who renews to the slot's end
// is done too, and one whose page stops renewing frees the slot after the
// idle limit.
func TestReentryTakesNoSlot(t *testing.T) {
	t.Parallel()
	p := newPair(t, 2, Config{})
	r := []*guest{p.guest("r1", 1, time.Hour), p.guest("r2", 2, time.Hour)}
	var w []*guest
	for i := range 10 {
		w = append(w, p.guest(fmt.Sprintf("w%02d", i+1), int64(i+3), time.Hour))
	}
	for _, g := range r {
		code, body := p.check(0, g)
		wantStatus(t, g.uid+" first check", code, body, 200, "active")
	}
	for i, g := range w {
		code, body := p.check(i%2, g)
		wantStatus(t, g.uid+" joins", code, body, 200, "queued")
	}
	// Round 1: r1 and r2 leave and come back with the same pass.
	for round := 0; round < 5; round++ {
		for i, g := range r {
			if round == 0 {
				p.leave(i, g)
			}
			old := g.entry
			code, body := p.check(1-i, g)
			wantStatus(t, fmt.Sprintf("round %d: %s checks again", round, g.uid), code, body, 200, "done")
			if body["code"] != "left" || g.entry != old {
				t.Fatalf("round %d: %s got %v (a new cookie: %v)", round, g.uid, body, g.entry != old)
			}
			code, body = p.heartbeat(i, g)
			wantStatus(t, fmt.Sprintf("round %d: %s renews its old token", round, g.uid), code, body, 410, "left")
			code, body = p.visit(1-i, g, "GET", "/api/queue/status/", true)
			wantStatus(t, fmt.Sprintf("round %d: %s asks with the token alone", round, g.uid), code, body, 410, "left")
		}
		p.clk.Advance(time.Second)
		p.pass()
	}
	// Exactly the two slots they freed went to the two at the head.
	if got := fmt.Sprint(p.admissions()); got != "[r1 r2 w01 w02]" {
		t.Fatalf("admissions %s, want [r1 r2 w01 w02]", got)
	}
	// w01 renews to the slot's end, then comes back: done. w02's page
	// stops renewing: its slot goes to w03 after the idle limit.
	_, _ = p.check(0, w[0])
	_, _ = p.check(1, w[1])
	idle := p.apps[0].Config.Queue().ActiveIdle
	for elapsed := time.Duration(0); elapsed < idle-time.Second; elapsed += 15 * time.Second {
		p.clk.Advance(15 * time.Second)
		code, body := p.heartbeat(0, w[0])
		wantStatus(t, "w01 renewing", code, body, 200, "active")
		if p.pass() != 0 {
			t.Fatal("a slot was handed out while both holders were within the idle limit")
		}
	}
	p.clk.Advance(15 * time.Second)
	if _, _ = p.heartbeat(0, w[0]); p.pass() != 1 {
		t.Fatal("w02's idle slot was not handed on")
	}
	if got := fmt.Sprint(p.admissions()); got != "[r1 r2 w01 w02 w03]" {
		t.Fatalf("admissions %s, want w03 let in after w02's idle limit", got)
	}
	code, body := p.check(1, w[1])
	wantStatus(t, "w02 back after its idle limit", code, body, 200, "done")
	if body["code"] != "idle" {
		t.Fatalf("w02: %v, want code idle", body)
	}
	for {
		p.clk.Advance(15 * time.Second)
		code, body := p.heartbeat(0, w[0])
		if body["status"] != "active" {
			// The token and the slot are over; the pass is not.
			wantStatus(t, "w01 at its slot's end", code, body, 200, "done")
			if body["code"] != "slot_ended" {
				t.Fatalf("w01 at its slot's end: %v", body)
			}
			break
		}
	}
	code, body = p.check(0, w[0])
	wantStatus(t, "w01 back after its slot's end", code, body, 200, "done")
	// Its slot, and w03's (let in, never claimed), go to the next two.
	p.pass()
	if got := fmt.Sprint(p.admissions()); got != "[r1 r2 w01 w02 w03 w04 w05]" {
		t.Fatalf("admissions %s, want w04 and w05 next, nobody twice", got)
	}
}

// TestRenewalOutlivesThePass: a visitor whose Tier 1 pass expires while
// they hold a slot keeps renewing it with the entry cookie alone, on
// either instance, up to the slot's end.
func TestRenewalOutlivesThePass(t *testing.T) {
	t.Parallel()
	p := newPair(t, 5, Config{})
	g := p.guest("g", 1, 2*time.Minute)
	code, body := p.check(0, g)
	wantStatus(t, "admission", code, body, 200, "active")
	slotEnd := body["expiresAt"]
	ttl := p.apps[0].Config.Queue().ActiveTTL
	for elapsed := 15 * time.Second; elapsed < ttl-20*time.Second; elapsed += 15 * time.Second {
		p.clk.Advance(15 * time.Second)
		// The expired pass goes along, as the browser sends it.
		code, body := p.heartbeat(int(elapsed/time.Second)%2, g)
		wantStatus(t, fmt.Sprintf("renewal at %s (the pass expired at 2m0s)", elapsed), code, body, 200, "active")
		if body["expiresAt"] != slotEnd {
			t.Fatalf("renewal moved the slot's end: %v, want %v", body["expiresAt"], slotEnd)
		}
	}
	p.clk.Advance(40 * time.Second)
	code, body = p.heartbeat(0, g)
	wantStatus(t, "after the slot's end", code, body, 401, "invalid_token")
}

// TestLeaverNotCountedBackAfterLoss: a leaves while b holds a slot; then
// the queue's Redis is lost. During the recovery window b's renewal counts
// b back in (after a moment: the ledger's replay says who left), but a's
// still-valid token is refused (410) and a's pass is done; the admission
// pass that replays the ledger lets nobody new in during the window.
func TestLeaverNotCountedBackAfterLoss(t *testing.T) {
	t.Parallel()
	p := newPair(t, 2, Config{})
	a, b, c := p.guest("a", 1, time.Hour), p.guest("b", 2, time.Hour), p.guest("c", 3, time.Hour)
	for _, g := range []*guest{a, b} {
		code, body := p.check(0, g)
		wantStatus(t, g.uid, code, body, 200, "active")
	}
	p.pass() // appends the admissions to the ledger, and the epoch to the settings
	tokenA := a.entry
	p.leave(1, a)
	a.entry = tokenA // a hostile leaver keeps the token the API cleared
	p.flush()
	// The first renewal finds the loss; until the ledger's replay (the
	// next admission pass) says who left, nobody the store lost is counted
	// back or queued: they hear 503 and come back.
	code, body := p.heartbeat(1, b)
	wantStatus(t, "b's first renewal after the loss", code, body, 503, "unavailable")
	code, body = p.check(0, c)
	wantStatus(t, "c before the replay", code, body, 503, "unavailable")
	if p.pass() != 0 {
		t.Fatal("admitted during the window")
	}
	code, body = p.check(0, c)
	wantStatus(t, "c during the window", code, body, 200, "queued")
	code, body = p.heartbeat(1, b)
	wantStatus(t, "b after the replay", code, body, 200, "active")
	if body["recovering"] != true {
		t.Fatalf("b: %v, want the window announced", body)
	}
	code, body = p.heartbeat(0, a)
	wantStatus(t, "a's token after the loss", code, body, 410, "left")
	code, body = p.visit(1, a, "POST", "/api/queue/heartbeat/", true)
	wantStatus(t, "a's token alone after the loss", code, body, 410, "left")
	a.entry = ""
	code, body = p.check(1, a)
	wantStatus(t, "a's pass after the loss", code, body, 200, "done")
	p.clk.Advance(p.apps[0].Config.Queue().RecoveryWindow)
	if p.pass() != 1 {
		t.Fatal("after the window, a's freed slot should go to c (b holds the other)")
	}
	if got := fmt.Sprint(p.admissions()); got != "[a b c]" {
		t.Fatalf("admissions %s", got)
	}
}

// TestLossFoundAfterEveryInstanceRestarts: Redis is flushed and both
// instances restart at once, so no process remembers the event's epoch.
// The epoch kept in the durable settings still tells them: a window runs,
// the ledger's replay restores the holders (who claim their slots by
// renewing) and keeps the leaver out, nobody is admitted twice, and at no
// moment do more than the threshold hold a valid entry token.
func TestLossFoundAfterEveryInstanceRestarts(t *testing.T) {
	t.Parallel()
	const threshold = 3
	p := newPair(t, threshold, Config{})
	var gs []*guest
	for i := range 8 {
		gs = append(gs, p.guest(fmt.Sprintf("g%d", i+1), int64(i+1), time.Hour))
	}
	for _, g := range gs {
		p.check(0, g)
	}
	p.pass()          // ledger: g1–g3 admitted; the epoch goes into the settings
	p.leave(1, gs[2]) // g3 leaves; g4 is let in next
	p.clk.Advance(time.Second)
	p.pass()
	p.check(0, gs[3]) // g4 fetches its token
	valid := func() int {
		n := 0
		for _, g := range gs {
			if g.entry == "" {
				continue
			}
			if e, err := p.apps[0].EntryKeys.VerifyEntry(g.entry, p.ev, p.clk.Now()); err == nil && e.UserID == g.uid {
				n++
			}
		}
		return n
	}
	if v := valid(); v != threshold+1 { // g3's token outlives its leave (documented bound)
		t.Fatalf("%d valid tokens before the loss", v)
	}
	p.flush()
	p.restart()
	p.clk.Advance(time.Second)
	// The waiting pages come back first: the loss is found, and until the
	// ledger's replay they are asked to come back in a moment.
	code, body := p.check(1, gs[4])
	wantStatus(t, "g5 finding the loss", code, body, 503, "unavailable")
	p.pass() // replays the ledger
	for _, g := range gs[4:] {
		code, body := p.check(1, g)
		wantStatus(t, g.uid+" after the loss", code, body, 200, "queued")
		if body["recovering"] != true {
			t.Fatalf("%s: %v, want the recovery window", g.uid, body)
		}
	}
	for _, g := range []*guest{gs[0], gs[1], gs[3]} {
		code, body := p.heartbeat(0, g)
		wantStatus(t, g.uid+" renewing after the replay", code, body, 200, "active")
	}
	code, body = p.check(0, gs[2])
	wantStatus(t, "g3 (left) after the loss", code, body, 200, "done")
	lost := p.clk.Now()
	for range 12 {
		p.clk.Advance(5 * time.Second)
		for _, g := range []*guest{gs[0], gs[1], gs[3]} {
			code, body := p.heartbeat(0, g)
			wantStatus(t, g.uid+" renewing", code, body, 200, "active")
		}
		p.pass()
		// g3's token (its leave's documented overlap) expires 20 s after
		// it was minted; from then on, at most the threshold hold one.
		if v := valid(); v > threshold+1 || (p.clk.Now().Sub(lost) > 20*time.Second && v > threshold) {
			t.Fatalf("%s after the loss: %d valid entry tokens", p.clk.Now().Sub(lost), v)
		}
	}
	if got := fmt.Sprint(p.admissions()); got != "[g1 g2 g3 g4]" {
		t.Fatalf("admissions %s: nobody new while the restored holders renew", got)
	}
	// A holder leaves: the head of the line, g5, gets the slot.
	p.leave(0, gs[0])
	p.clk.Advance(time.Second)
	p.pass()
	if got := fmt.Sprint(p.admissions()); got != "[g1 g2 g3 g4 g5]" {
		t.Fatalf("admissions %s, want g5 next", got)
	}
}

// TestSettingsStoreLossDoesNotSplit: the settings store loses everything,
// and one instance restarts just then. Until the other writes the events
// back, the fresh one answers 503 (never 404) for an event the queue holds
// state for. Writes made after the loss reach both instances within one
// refresh, the events nobody rewrote stay on both and after both restart,
// and a changed threshold is the same everywhere.
func TestSettingsStoreLossDoesNotSplit(t *testing.T) {
	t.Parallel()
	p := newPair(t, 5, Config{SettingsRefresh: envconf.Millis(time.Hour)})
	for _, ev := range []string{"kept", "changed"} {
		if code, _, raw := p.admin(0, "PUT", "/api/queue/admin/threshold/"+ev, `{"threshold":7}`); code != 200 {
			t.Fatalf("set %s: %d %s", ev, code, raw)
		}
	}
	refresh := func() {
		for _, a := range p.apps {
			if err := a.Settings.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	refresh()
	// A visitor of "kept": the queue now holds state (an epoch) for it.
	pass, err := p.t1.IssueTier1(token.Tier1{Subject: "k1", EventID: "kept", Position: 1, IssuedAt: p.clk.Now(), ExpiresAt: p.clk.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	checkKept := func(i int) int {
		req := httptest.NewRequest("POST", "/api/queue/check/kept", nil)
		req.Header.Set("Authorization", "Bearer "+pass)
		rec := httptest.NewRecorder()
		p.apps[i].Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	if code := checkKept(1); code != 200 {
		t.Fatalf("check of kept: %d", code)
	}
	// The store loses its data: every key under its prefix.
	p.loseSettings()
	// Instance 1 restarts now: it learns of no event at all. For one the
	// queue holds state for it answers 503 (retry), never 404; an event
	// that never was is 404.
	p.restartOf(1)
	if code := checkKept(1); code != 503 {
		t.Fatalf("a fresh instance, kept after the loss: %d, want 503 until the settings are back", code)
	}
	if code, body, _ := p.admin(1, "GET", "/api/queue/admin/stats/never", ""); code != 404 || body["code"] != "unknown_event" {
		t.Fatalf("an event that never was: %d %v, want 404", code, body)
	}
	// Instance 0 writes one of them again, and a new event.
	for ev, th := range map[string]int{"changed": 2, "new": 4} {
		if code, _, raw := p.admin(0, "PUT", "/api/queue/admin/threshold/"+ev, fmt.Sprintf(`{"threshold":%d}`, th)); code != 200 {
			t.Fatalf("set %s after the loss: %d %s", ev, code, raw)
		}
	}
	refresh()
	agree := func(when string) {
		t.Helper()
		for i := range p.apps {
			for ev, th := range map[string]float64{"sale": 5, "kept": 7, "changed": 2, "new": 4} {
				code, body, _ := p.admin(i, "GET", "/api/queue/admin/stats/"+ev, "")
				if code != 200 || body["threshold"] != th {
					t.Fatalf("%s: instance %d, %s = %d %v; want threshold %v", when, i, ev, code, body, th)
				}
			}
		}
	}
	agree("one refresh after the loss")
	if code := checkKept(1); code != 200 {
		t.Fatalf("the fresh instance, kept after the write-back: %d", code)
	}
	if p.apps[0].Settings.Losses()+p.apps[1].Settings.Losses() == 0 {
		t.Fatal("nobody noticed the loss")
	}
	p.restart()
	agree("after both instances restart")
}

// TestIdleHolderNotCountedBackAfterLoss: a holder whose page stopped
// renewing loses the slot after the idle limit, and the next visitor gets
// it. Then the queue's Redis is lost while both instances restart. The
// ledger's replay must not hand the idle holder their slot back: when they
// return with their pass during the recovery window they are done, and at
// no moment do more than the threshold hold a valid entry token.
func TestIdleHolderNotCountedBackAfterLoss(t *testing.T) {
	t.Parallel()
	const threshold = 2
	p := newPair(t, threshold, Config{})
	a, b, c := p.guest("a", 1, time.Hour), p.guest("b", 2, time.Hour), p.guest("c", 3, time.Hour)
	for _, g := range []*guest{a, b, c} {
		p.check(0, g)
	}
	p.pass() // the ledger: a and b admitted
	idle := p.apps[0].Config.Queue().ActiveIdle
	for elapsed := time.Duration(0); elapsed <= idle; elapsed += 10 * time.Second {
		p.clk.Advance(10 * time.Second)
		code, body := p.heartbeat(1, b)
		wantStatus(t, "b renewing", code, body, 200, "active")
		p.check(0, c)
		p.pass()
	}
	code, body := p.check(0, c)
	wantStatus(t, "c after a's idle limit", code, body, 200, "active")
	p.clk.Advance(time.Second)
	p.pass() // the ledger: c admitted, and whatever it keeps of a
	valid := func() []string {
		var out []string
		for _, g := range []*guest{a, b, c} {
			if e, err := p.apps[0].EntryKeys.VerifyEntry(g.entry, p.ev, p.clk.Now()); g.entry != "" && err == nil && e.UserID == g.uid {
				out = append(out, g.uid)
			}
		}
		return out
	}
	if v := valid(); len(v) != threshold {
		t.Fatalf("valid tokens before the loss: %v", v)
	}
	p.loseRedisWithEveryInstance(b, c)
	code, body = p.check(1, a)
	wantStatus(t, "a, idle before the loss, back with its pass in the window", code, body, 200, "done")
	if v := valid(); len(v) > threshold {
		t.Fatalf("valid entry tokens after the loss: %v, threshold %d", v, threshold)
	}
	code, body = p.check(0, a)
	wantStatus(t, "a again", code, body, 200, "done")
}

// TestLedgerSurvivesSettingsStoreLoss: the settings store, which holds the
// durable ledger too, loses everything while the instances run; some time
// later the queue's Redis is lost as well, and both instances restart.
// What was served before the first loss must still be known after the
// second: a leaver's still-valid token is refused, not counted back, and
// the passes served before are done, not queued again.
func TestLedgerSurvivesSettingsStoreLoss(t *testing.T) {
	t.Parallel()
	const threshold = 2
	p := newPair(t, threshold, Config{SettingsRefresh: envconf.Millis(time.Hour)})
	a, b, c := p.guest("a", 1, time.Hour), p.guest("b", 2, time.Hour), p.guest("c", 3, time.Hour)
	for _, g := range []*guest{a, b, c} {
		p.check(0, g)
	}
	p.pass() // the ledger: a and b admitted
	tokenA := a.entry
	p.leave(1, a) // in the ledger before it is answered
	a.entry = tokenA
	p.clk.Advance(time.Second)
	p.pass()
	code, body := p.check(0, c)
	wantStatus(t, "c takes a's slot", code, body, 200, "active")
	p.pass() // the ledger: c admitted
	// The settings store loses everything; the instances find out at their
	// next refresh and write back what they hold.
	p.loseSettings()
	for _, app := range p.apps {
		if err := app.Settings.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		p.clk.Advance(time.Second)
		p.pass()
	}
	// Then the queue's Redis is lost, and every instance restarts.
	p.loseRedisWithEveryInstance(b, c)
	code, body = p.heartbeat(0, a)
	wantStatus(t, "a's token, left before both losses", code, body, 410, "left")
	a.entry = ""
	code, body = p.check(1, a)
	wantStatus(t, "a's pass after both losses", code, body, 200, "done")
	p.clk.Advance(p.apps[0].Config.Queue().RecoveryWindow)
	p.pass()
	if got := fmt.Sprint(p.admissions()); got != "[a b c]" {
		t.Fatalf("admissions %s, want nobody twice", got)
	}
}

// TestOpenEventsKeepTheLedger: with open events (vwr local's default) and
// a store beside the queue's Redis (vwr local's Tier 1 store), a loss of
// the queue's Redis while the instances run still forgets no leave and no
// served pass: the leaver's valid token is refused, their pass is done,
// and nobody is admitted twice.
func TestOpenEventsKeepTheLedger(t *testing.T) {
	t.Parallel()
	p := newPair(t, 2, Config{OpenEvents: true, Threshold: 2})
	a, b, c := p.guest("a", 1, time.Hour), p.guest("b", 2, time.Hour), p.guest("c", 3, time.Hour)
	for _, g := range []*guest{a, b, c} {
		p.check(0, g)
	}
	p.pass() // the ledger: a and b admitted
	tokenA := a.entry
	p.leave(1, a)
	a.entry = tokenA
	p.flush()
	code, body := p.heartbeat(1, b)
	wantStatus(t, "b's renewal finding the loss", code, body, 503, "unavailable")
	p.pass() // replays the ledger
	code, body = p.heartbeat(0, b)
	wantStatus(t, "b after the replay", code, body, 200, "active")
	code, body = p.heartbeat(1, a)
	wantStatus(t, "a's token after the loss", code, body, 410, "left")
	a.entry = ""
	code, body = p.check(0, a)
	wantStatus(t, "a's pass after the loss", code, body, 200, "done")
	code, body = p.check(1, c)
	wantStatus(t, "c after the loss", code, body, 200, "queued")
	p.clk.Advance(p.apps[0].Config.Queue().RecoveryWindow)
	p.pass()
	if got := fmt.Sprint(p.admissions()); got != "[a b c]" {
		t.Fatalf("admissions %s, want c into a's slot, nobody twice", got)
	}
}

// TestLeaveOutlivesThePass: a holder whose Tier 1 pass expired while they
// held the slot gives it back with the entry cookie: the next visitor gets
// it at once, and the leaver's token renews no more.
func TestLeaveOutlivesThePass(t *testing.T) {
	t.Parallel()
	p := newPair(t, 1, Config{})
	g, w := p.guest("g", 1, 2*time.Minute), p.guest("w", 2, time.Hour)
	code, body := p.check(0, g)
	wantStatus(t, "g", code, body, 200, "active")
	for range 12 { // three minutes: the pass expires at two
		p.clk.Advance(15 * time.Second)
		code, body := p.heartbeat(1, g)
		wantStatus(t, "g renewing", code, body, 200, "active")
		p.check(0, w)
		if p.pass() != 0 {
			t.Fatal("w let in while g holds the slot")
		}
	}
	if code, body := p.visit(1, g, "POST", "/api/queue/leave/", false); code != 200 || body["removed"] != true {
		t.Fatalf("g leaving with an expired pass and its entry cookie: %d %v", code, body)
	}
	p.clk.Advance(time.Second)
	if p.pass() != 1 {
		t.Fatal("g's slot was not handed on")
	}
	code, body = p.heartbeat(0, g)
	wantStatus(t, "g's token after its leave", code, body, 410, "left")
}
