package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue/gate"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type testBundle struct {
	rdb   *redis.Client
	keys  *token.KeyRing
	event string
	venue Venue
	site  *Site
	h     http.Handler // gate + site, as vwr local mounts it
}

func setup(t *testing.T, venue Venue) *testBundle {
	t.Helper()
	return setupOn(t, venue, testenv.Redis(t))
}

// setupMini runs the bundle on a private miniredis, for tests that need
// Redis' own clock to pass: FastForward expires keys (holds set with EX)
// without sleeping. The other tests run the same scripts on redis-server.
func setupMini(t *testing.T, venue Venue) (*testBundle, *miniredis.Miniredis) {
	t.Helper()
	mr := miniredis.RunT(t)
	return setupOn(t, venue, mr.Addr()), mr
}

func setupOn(t *testing.T, venue Venue, addr string) *testBundle {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	keys, err := token.NewKeyRing("e1", []byte(strings.Repeat("k", 40)))
	if err != nil {
		t.Fatal(err)
	}
	event := testenv.UniqueID(t)
	site, err := New(Config{EntryKeys: keys, Redis: rdb, Venues: map[string]Venue{event: venue}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return &testBundle{rdb: rdb, keys: keys, event: event, venue: venue, site: site, h: g.Wrap(site.Handler())}
}

func (b *testBundle) entry(t *testing.T, event, uid string) string {
	t.Helper()
	now := time.Now()
	s, err := b.keys.IssueEntry(token.Entry{EventID: event, UserID: uid, IssuedAt: now, ExpiresAt: now.Add(10 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (b *testBundle) do(t *testing.T, method, path, body, entryToken string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if entryToken != "" {
		req.AddCookie(&http.Cookie{Name: gate.TokenCookie, Value: entryToken})
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	return rec
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %q: %v", rec.Body.String(), err)
	}
	return v
}

func TestVenue(t *testing.T) {
	t.Parallel()
	v := Venue{Rows: 3, PerRow: 12}
	ids := v.SeatIDs()
	if len(ids) != 36 || ids[0] != "A1" || ids[11] != "A12" || ids[35] != "C12" {
		t.Fatalf("SeatIDs = %v", ids)
	}
	for _, tc := range []struct {
		id   string
		want bool
	}{{"A1", true}, {"C12", true}, {"C13", false}, {"D1", false}, {"A0", false}, {"A01", false}, {"a1", false}, {"A", false}, {"A1x", false}, {"", false}} {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			if got := v.Has(tc.id); got != tc.want {
				t.Fatalf("Has(%q) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}

func TestStoreHold(t *testing.T) {
	t.Parallel()
	b := setup(t, Venue{Rows: 1, PerRow: 2})
	ctx := context.Background()
	st := NewStore(b.rdb)
	now := time.Now()
	ttl := 300 * time.Second

	h, err := st.Hold(ctx, b.event, b.venue, "A1", "u1", ttl, now)
	if err != nil || h.Already || h.Remaining != 1 || !h.ExpiresAt.Equal(now.Add(ttl).Truncate(time.Millisecond)) {
		t.Fatalf("first hold = %+v, %v", h, err)
	}
	if got, _ := b.rdb.Get(ctx, holdKey(b.event, "A1")).Result(); got != "u1" {
		t.Fatalf("hold key holds %q, want u1", got)
	}
	if d := b.rdb.TTL(ctx, holdKey(b.event, "A1")).Val(); d <= 290*time.Second || d > ttl {
		t.Fatalf("hold key TTL = %v, want about 300s", d)
	}
	if h, err := st.Hold(ctx, b.event, b.venue, "A1", "u1", ttl, now); err != nil || !h.Already || h.Remaining != 1 {
		t.Fatalf("repeat hold = %+v, %v; want already held and nothing counted twice", h, err)
	}
	if _, err := st.Hold(ctx, b.event, b.venue, "A1", "u2", ttl, now); !errors.Is(err, ErrSeatTaken) {
		t.Fatalf("other visitor on A1: err = %v, want ErrSeatTaken", err)
	}
	if h, err := st.Hold(ctx, b.event, b.venue, "A2", "u2", ttl, now); err != nil || h.Remaining != 0 {
		t.Fatalf("A2 = %+v, %v", h, err)
	}
	seats, remaining, err := st.List(ctx, b.event, b.venue, "u1", now)
	if err != nil || remaining != 0 {
		t.Fatalf("List remaining = %d, %v", remaining, err)
	}
	if seats[0].Status != StatusMine || seats[1].Status != StatusHeld {
		t.Fatalf("List = %+v", seats)
	}
}

func TestStoreSoldOutAndRelease(t *testing.T) {
	t.Parallel()
	b, mr := setupMini(t, Venue{Rows: 1, PerRow: 3})
	ctx := context.Background()
	st := NewStore(b.rdb)
	now := time.Now()
	// Two short holds and one long one fill the venue.
	for i, seat := range []string{"A1", "A2"} {
		if _, err := st.Hold(ctx, b.event, b.venue, seat, "short"+seat, time.Second, now); err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
	}
	if _, err := st.Hold(ctx, b.event, b.venue, "A3", "long", time.Minute, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Hold(ctx, b.event, b.venue, "A1", "late", time.Minute, now); !errors.Is(err, ErrSeatTaken) {
		t.Fatalf("err = %v, want ErrSeatTaken", err)
	}
	// Redis expires the short holds (EX 1) and the clock moves past them: both come back.
	mr.FastForward(1100 * time.Millisecond)
	later := now.Add(1100 * time.Millisecond)
	if n := b.rdb.Exists(ctx, holdKey(b.event, "A1"), holdKey(b.event, "A2"), holdKey(b.event, "A3")).Val(); n != 1 {
		t.Fatalf("%d hold keys left after the short holds expired, want the long one", n)
	}
	_, remaining, err := st.List(ctx, b.event, b.venue, "late", later)
	if err != nil || remaining != 2 {
		t.Fatalf("remaining after expiry = %d, %v; want 2", remaining, err)
	}
	if _, err := st.Hold(ctx, b.event, b.venue, "A1", "late", time.Minute, later); err != nil {
		t.Fatalf("hold released seat: %v", err)
	}
	// Lost count (say, an operator deleted it) is rebuilt from the live holds.
	b.rdb.Del(ctx, remainingKey(b.event))
	if h, err := st.Hold(ctx, b.event, b.venue, "A2", "other", time.Minute, later); err != nil || h.Remaining != 0 {
		t.Fatalf("after rebuild = %+v, %v; want remaining 0", h, err)
	}
	if _, err := st.Hold(ctx, b.event, b.venue, "A2", "third", time.Minute, later); !errors.Is(err, ErrSeatTaken) {
		t.Fatalf("err = %v, want ErrSeatTaken", err)
	}
}

func TestStoreSoldOut(t *testing.T) {
	t.Parallel()
	b := setup(t, Venue{Rows: 1, PerRow: 1})
	ctx := context.Background()
	st := NewStore(b.rdb)
	now := time.Now()
	if _, err := st.Hold(ctx, b.event, b.venue, "A1", "u1", time.Minute, now); err != nil {
		t.Fatal(err)
	}
	// Only one seat and it is held: the count says sold out before the seat key is tried.
	b.rdb.Del(ctx, holdKey(b.event, "A1"))
	b.rdb.ZRem(ctx, holdsKey(b.event), "A1")
	b.rdb.Set(ctx, remainingKey(b.event), 0, 0)
	if _, err := st.Hold(ctx, b.event, b.venue, "A1", "u2", time.Minute, now); !errors.Is(err, ErrSoldOut) {
		t.Fatalf("err = %v, want ErrSoldOut", err)
	}
}

// Many visitors race for few seats: every seat goes to exactly one of them
// and the count never goes below zero.
func TestStoreConcurrentHolds(t *testing.T) {
	t.Parallel()
	b := setup(t, Venue{Rows: 2, PerRow: 5})
	ctx := context.Background()
	st := NewStore(b.rdb)
	ids := b.venue.SeatIDs()
	var (
		mu      sync.Mutex
		winners = map[string]string{}
		taken   int
		wg      sync.WaitGroup
	)
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			uid := "u" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			seat := ids[i%len(ids)]
			_, err := st.Hold(ctx, b.event, b.venue, seat, uid, time.Minute, time.Now())
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				if prev, dup := winners[seat]; dup {
					t.Errorf("seat %s held by %s and %s", seat, prev, uid)
				}
				winners[seat] = uid
			case errors.Is(err, ErrSeatTaken), errors.Is(err, ErrSoldOut):
				taken++
			default:
				t.Errorf("hold: %v", err)
			}
		}(i)
	}
	wg.Wait()
	if len(winners) != len(ids) || taken != 60-len(ids) {
		t.Fatalf("%d winners, %d refused; want %d and %d", len(winners), taken, len(ids), 60-len(ids))
	}
	if n, _ := b.rdb.Get(ctx, remainingKey(b.event)).Int(); n != 0 {
		t.Fatalf("remaining = %d, want 0", n)
	}
}

func TestSeatAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, Venue{Name: "Test hall", Rows: 2, PerRow: 4})
	ctx := context.Background()
	other, err := token.NewKeyRing("e1", []byte(strings.Repeat("x", 40)))
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := other.IssueEntry(token.Entry{EventID: b.event, UserID: "u1", IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)})
	mine := b.entry(t, b.event, "alice")
	wrongEvent := b.entry(t, "elsewhere", "alice")
	base := "/api/seats/" + b.event

	tests := []struct {
		name, method, path, body, token string
		code                            int
		errCode                         string
	}{
		{"list without entry token", "GET", base, "", "", 403, "entry_token_required"},
		{"list with forged token", "GET", base, "", forged, 403, "entry_token_invalid"},
		{"list with other event's token", "GET", base, "", wrongEvent, 403, "entry_token_invalid"},
		{"hold without entry token", "POST", base + "/hold", `{"seatId":"A1"}`, "", 403, "entry_token_required"},
		{"hold with forged token", "POST", base + "/hold", `{"seatId":"A1"}`, forged, 403, "entry_token_invalid"},
		{"hold bad json", "POST", base + "/hold", `{"seatId":`, mine, 400, "invalid_json"},
		{"hold unknown field", "POST", base + "/hold", `{"seatId":"A1","uid":"bob"}`, mine, 400, "invalid_json"},
		{"hold missing seat", "POST", base + "/hold", `{}`, mine, 400, "invalid_seat"},
		{"hold seat not in venue", "POST", base + "/hold", `{"seatId":"Z9"}`, mine, 400, "invalid_seat"},
		{"hold body too large", "POST", base + "/hold", `{"seatId":"` + strings.Repeat("A", 5000) + `"}`, mine, 413, "body_too_large"},
		{"seats of unknown event", "GET", "/api/seats/nosuch", "", b.entry(t, "nosuch", "alice"), 404, "unknown_event"},
		{"unknown route", "GET", "/api/seats/" + b.event + "/nope", "", mine, 404, "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := b.do(t, tc.method, tc.path, tc.body, tc.token)
			if rec.Code != tc.code {
				t.Fatalf("code = %d, want %d (%s)", rec.Code, tc.code, rec.Body.String())
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type = %q", ct)
			}
			if got := decode[map[string]string](t, rec)["code"]; got != tc.errCode {
				t.Fatalf("code = %q, want %q", got, tc.errCode)
			}
		})
	}
	// Nothing was written by any rejected request.
	if n := b.rdb.Exists(ctx, remainingKey(b.event), holdsKey(b.event), holdKey(b.event, "A1")).Val(); n != 0 {
		t.Fatalf("%d keys written by rejected requests", n)
	}

	rec := b.do(t, "POST", base+"/hold", `{"seatId":"B3"}`, mine)
	if rec.Code != http.StatusCreated {
		t.Fatalf("hold = %d %s", rec.Code, rec.Body.String())
	}
	h := decode[Hold](t, rec)
	if h.SeatID != "B3" || h.Remaining != 7 || time.Until(h.ExpiresAt) < 290*time.Second {
		t.Fatalf("hold = %+v", h)
	}
	if got := b.rdb.Get(ctx, holdKey(b.event, "B3")).Val(); got != "alice" {
		t.Fatalf("holder = %q, want the entry token's uid", got)
	}
	if rec := b.do(t, "POST", base+"/hold", `{"seatId":"B3"}`, mine); rec.Code != http.StatusOK || !decode[Hold](t, rec).Already {
		t.Fatalf("repeat hold = %d %s", rec.Code, rec.Body.String())
	}
	rec = b.do(t, "POST", base+"/hold", `{"seatId":"B3"}`, b.entry(t, b.event, "bob"))
	if rec.Code != http.StatusConflict || decode[map[string]string](t, rec)["code"] != "seat_taken" {
		t.Fatalf("bob on B3 = %d %s", rec.Code, rec.Body.String())
	}

	rec = b.do(t, "GET", base, "", b.entry(t, b.event, "bob"))
	list := decode[seatList](t, rec)
	if rec.Code != 200 || list.Total != 8 || list.Remaining != 7 || list.Name != "Test hall" || len(list.Seats) != 8 {
		t.Fatalf("list = %d %+v", rec.Code, list)
	}
	if list.Seats[6].ID != "B3" || list.Seats[6].Status != StatusHeld || list.Seats[0].Status != StatusAvailable {
		t.Fatalf("bob sees %+v", list.Seats)
	}
	if got := decode[seatList](t, b.do(t, "GET", base, "", mine)).Seats[6]; got.Status != StatusMine || got.ExpiresAt.IsZero() {
		t.Fatalf("alice sees B3 as %+v", got)
	}
}

func TestSeatAPIStoreDown(t *testing.T) {
	t.Parallel()
	b := setup(t, Venue{Rows: 1, PerRow: 2})
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = down.Close() })
	site, err := New(Config{EntryKeys: b.keys, Redis: down, Venues: map[string]Venue{b.event: b.venue}})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gate.New(gate.Config{Keys: b.keys})
	b.h = g.Wrap(site.Handler())
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/api/seats/" + b.event + "/hold", `{"seatId":"A1"}`},
		{"GET", "/api/seats/" + b.event, ""},
	} {
		rec := b.do(t, tc.method, tc.path, tc.body, b.entry(t, b.event, "u1"))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("%s %s = %d, Retry-After %q", tc.method, tc.path, rec.Code, rec.Header().Get("Retry-After"))
		}
		if strings.Contains(rec.Body.String(), "127.0.0.1") || strings.Contains(rec.Body.String(), "dial") {
			t.Fatalf("5xx body leaks the error: %s", rec.Body.String())
		}
	}
}

func TestEventPage(t *testing.T) {
	t.Parallel()
	b := setup(t, Venue{Name: "Demo night", Rows: 1, PerRow: 2})
	expired, _ := b.keys.IssueEntry(token.Entry{EventID: b.event, UserID: "u1", IssuedAt: time.Now().Add(-time.Hour), ExpiresAt: time.Now().Add(-time.Minute)})
	tests := []struct {
		name, path, token string
		code              int
		contains          string
	}{
		{"no entry token shows the queue page", "/events/" + b.event, "", 200, "/vwr/queue.js"},
		{"expired entry token shows the queue page", "/events/" + b.event, expired, 200, "/vwr/queue.js"},
		{"other event's token shows the queue page", "/events/" + b.event, b.entry(t, "other", "u1"), 200, "/vwr/queue.js"},
		{"valid entry token shows the seat page", "/events/" + b.event, b.entry(t, b.event, "u1"), 200, `data-event="` + b.event + `"`},
		{"bad event id", "/events/bad.id", "", 400, "invalid_event_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := b.do(t, "GET", tc.path, "", tc.token)
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.contains) {
				t.Fatalf("code %d, body %.200q; want %d containing %q", rec.Code, rec.Body.String(), tc.code, tc.contains)
			}
			if tc.code == 200 && rec.Header().Get("Cache-Control") != "no-store" {
				t.Fatalf("Cache-Control = %q, want no-store", rec.Header().Get("Cache-Control"))
			}
		})
	}
	// The page's clock counts to the slot's end, not the short token's.
	now := time.Now().Truncate(time.Millisecond)
	short, _ := b.keys.IssueEntry(token.Entry{EventID: b.event, UserID: "u1", IssuedAt: now, ExpiresAt: now.Add(20 * time.Second),
		SlotEndsAt: now.Add(10 * time.Minute)})
	page := b.do(t, "GET", "/events/"+b.event, "", short).Body.String()
	if want := fmt.Sprintf(`data-expires="%d" data-token-expires="%d"`, now.Add(10*time.Minute).UnixMilli(), now.Add(20*time.Second).Truncate(time.Second).UnixMilli()); !strings.Contains(page, want) {
		t.Fatalf("seat page lacks %s: %.400q", want, page)
	}
	rec := b.do(t, "GET", "/demo/assets/seats.js", "", "")
	if rec.Code != 200 || !strings.Contains(rec.Header().Get("Content-Type"), "javascript") {
		t.Fatalf("seats.js = %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
}

// TestSeatPageLanguage: the seat page speaks the language the visitor chose
// on the waiting pages (the urr-lang cookie), or ?lang=, or the browser's.
func TestSeatPageLanguage(t *testing.T) {
	t.Parallel()
	b := setup(t, Venue{Name: "Demo night", Rows: 1, PerRow: 2})
	tok := b.entry(t, b.event, "u1")
	tests := []struct {
		name, query, cookie, accept, want, title string
	}{
		{"default", "", "", "", "en", "Choose your seat"},
		{"browser", "", "", "ko-KR,ko;q=0.9,en;q=0.8", "ko", "좌석을 선택하세요"},
		{"browser prefers English", "", "", "fr-FR, en-US;q=0.8, ko;q=0.5", "en", "Choose your seat"},
		{"cookie from the waiting room", "", "ko", "en-US", "ko", "좌석을 선택하세요"},
		{"parameter wins", "?lang=en", "ko", "ko-KR", "en", "Choose your seat"},
		{"unknown values fall through", "?lang=xx", "zz", "ko", "ko", "좌석을 선택하세요"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest("GET", "/events/"+b.event+tc.query, nil)
			req.AddCookie(&http.Cookie{Name: gate.TokenCookie, Value: tok})
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: LangCookie, Value: tc.cookie})
			}
			if tc.accept != "" {
				req.Header.Set("Accept-Language", tc.accept)
			}
			rec := httptest.NewRecorder()
			b.h.ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code != 200 || !strings.Contains(body, `<html lang="`+tc.want+`">`) || !strings.Contains(body, "<h1 id=\"title\">"+tc.title+"</h1>") {
				t.Fatalf("%d %.400s", rec.Code, body)
			}
			if !strings.Contains(rec.Header().Get("Vary"), "Cookie") {
				t.Fatalf("Vary = %q: the page depends on cookies", rec.Header().Get("Vary"))
			}
			// ?lang= is remembered for the other pages, as the waiting pages do.
			if set := rec.Header().Get("Set-Cookie"); (tc.query == "?lang=en") != strings.HasPrefix(set, LangCookie+"=en;") {
				t.Fatalf("Set-Cookie %q after %q", set, tc.query)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	keys, _ := token.NewKeyRing("k", []byte(strings.Repeat("k", 40)))
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no keys", Config{Redis: rdb}, "QUEUE_ENTRY_TOKEN_SECRET"},
		{"no redis", Config{EntryKeys: keys}, "Redis"},
		{"bad venue", Config{EntryKeys: keys, Redis: rdb, Venues: map[string]Venue{"e": {Rows: 0, PerRow: 3}}}, "rows"},
		{"bad event id", Config{EntryKeys: keys, Redis: rdb, Venues: map[string]Venue{"a b": {Rows: 1, PerRow: 3}}}, "must match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

// Redis may expire a hold before the injected clock passes its expiry (clock
// skew between app and Redis). The seat is free then, and the count must not
// drop twice for it.
func TestStoreHoldAfterRedisExpiredFirst(t *testing.T) {
	t.Parallel()
	b, mr := setupMini(t, Venue{Rows: 1, PerRow: 2})
	ctx := context.Background()
	st := NewStore(b.rdb)
	lagging := time.Now()
	if _, err := st.Hold(ctx, b.event, b.venue, "A1", "u1", time.Second, lagging); err != nil {
		t.Fatal(err)
	}
	mr.FastForward(1100 * time.Millisecond) // Redis drops the key (EX 1); our clock stays behind
	if n := b.rdb.Exists(ctx, holdKey(b.event, "A1")).Val(); n != 0 {
		t.Fatal("the hold key outlived its EX 1")
	}
	h, err := st.Hold(ctx, b.event, b.venue, "A1", "u2", time.Minute, lagging)
	if err != nil || h.Remaining != 1 {
		t.Fatalf("hold after Redis expiry = %+v, %v; want held with 1 seat left", h, err)
	}
	if n := b.rdb.ZCard(ctx, holdsKey(b.event)).Val(); n != 1 {
		t.Fatalf("%d holds recorded, want 1", n)
	}
}
