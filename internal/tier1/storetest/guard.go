package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/altcha"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
)

// PowKey signs the suite's challenges.
var PowKey = []byte("storetest-pow-key-0123456789abcdef")

// TestPow is the suite's proof of work: small, so solving costs little.
const TestPow = 2_000

// countingStore counts the door's store calls, to show what a refusal costs;
// afterSnapshot, when set, runs after each read of an event's snapshot (a
// change landing just after a read).
type countingStore struct {
	tier1.Store
	tier1.SaleStore
	spends, counts, claims atomic.Int64
	afterSnapshot          func(eventID string)
}

func (c *countingStore) Snapshot(ctx context.Context, eventID string) (tier1.Snapshot, error) {
	snap, err := c.Store.Snapshot(ctx, eventID)
	if c.afterSnapshot != nil {
		c.afterSnapshot(eventID)
	}
	return snap, err
}

func (c *countingStore) SpendSolution(ctx context.Context, s tier1.Solution) (tier1.Spend, error) {
	c.spends.Add(1)
	return c.Store.SpendSolution(ctx, s)
}

func (c *countingStore) ClaimSolution(ctx context.Context, s tier1.Solution) error {
	c.claims.Add(1)
	return c.Store.ClaimSolution(ctx, s)
}

func (c *countingStore) CountArrival(ctx context.Context, a tier1.ArrivalCount) (int64, bool, error) {
	c.counts.Add(1)
	return c.Store.CountArrival(ctx, a)
}

type doorBundle struct {
	*bundle
	calls *countingStore
}

// setupDoor is setup with a known pow key and a per-client bound of limit
// arrivals per 10 minutes (0: off); opts change the Service's config.
func setupDoor(t *testing.T, f Factory, limit int64, opts ...func(*tier1.Config)) *doorBundle {
	t.Helper()
	clk := clock.NewManual(Epoch)
	st := f(t)
	ss, _ := st.(tier1.SaleStore)
	cs := &countingStore{Store: st, SaleStore: ss}
	keys := Keys(t)
	c := cfg()
	c.Pow.Keys = [][]byte{PowKey}
	c.Clients = tier1.ClientBound{Limit: limit, Window: 10 * time.Minute}
	for _, o := range opts {
		o(&c)
	}
	b := &bundle{ctx: context.Background(), store: cs, clk: clk, keys: keys, svc: tier1.New(cs, keys, clk, c), event: testenv.UniqueID(t)}
	return &doorBundle{bundle: b, calls: cs}
}

// Solve answers a challenge as a client would: the Altcha header.
func Solve(t testing.TB, ch altcha.Challenge) string {
	t.Helper()
	n, ok := altcha.Solve(ch.Challenge, ch.Salt, ch.MaxNumber)
	if !ok {
		t.Fatalf("challenge %+v has no solution", ch)
	}
	return ch.Payload(n).Encode()
}

// fresh asks the door for a challenge (an arrival without a solution) and
// solves it.
func (b *doorBundle) fresh(t *testing.T) string {
	t.Helper()
	_, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, Nonce: []byte("fresh-challenge!")})
	var pe *tier1.PowError
	if !errors.As(err, &pe) || !errors.Is(err, tier1.ErrPowRequired) {
		t.Fatalf("Enter without a solution: %v, want ErrPowRequired with a challenge", err)
	}
	return Solve(t, pe.Challenge)
}

func (b *doorBundle) assigned(t *testing.T) int64 {
	t.Helper()
	st, err := b.svc.AdminStatus(b.ctx, b.event)
	if err != nil {
		t.Fatal(err)
	}
	return st.Assigned
}

func runGuard(t *testing.T, f Factory) {
	t.Run("a solution is spent once; a retry with its key is not a second spend", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		s := tier1.Solution{EventID: b.event, Challenge: strings.Repeat("ab", 32), KeyHash: tier1.KeyHash(b.event, "key-1"), Expires: Epoch.Add(time.Minute), Now: Epoch}
		gs := b.store
		for i, want := range []tier1.Spend{tier1.SpendFirst, tier1.SpendRetry, tier1.SpendRetry} {
			if got, err := gs.SpendSolution(b.ctx, s); err != nil || got != want {
				t.Fatalf("spend %d: %v, %v; want %v", i, got, err, want)
			}
		}
		other := s
		other.KeyHash = tier1.KeyHash(b.event, "key-2")
		if got, err := gs.SpendSolution(b.ctx, other); err != nil || got != tier1.SpendReplayed {
			t.Fatalf("spend with another key: %v, %v", got, err)
		}
		keyless := s
		keyless.Challenge, keyless.KeyHash = strings.Repeat("cd", 32), ""
		for i, want := range []tier1.Spend{tier1.SpendFirst, tier1.SpendReplayed} {
			if got, err := gs.SpendSolution(b.ctx, keyless); err != nil || got != want {
				t.Fatalf("keyless spend %d: %v, %v; want %v (no key, no retry)", i, got, err, want)
			}
		}
		elsewhere := s
		elsewhere.EventID = testenv.UniqueID(t)
		if got, err := gs.SpendSolution(b.ctx, elsewhere); err != nil || got != tier1.SpendFirst {
			t.Fatalf("the same challenge at another event: %v, %v", got, err)
		}
	})

	t.Run("racing spends of one solution: exactly one first", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		var firsts atomic.Int64
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := b.store.SpendSolution(b.ctx, tier1.Solution{
					EventID: b.event, Challenge: strings.Repeat("ef", 32), KeyHash: tier1.KeyHash(b.event, string(rune('a'+i))),
					Expires: Epoch.Add(time.Minute), Now: Epoch,
				})
				if err != nil {
					t.Error(err)
				}
				if got == tier1.SpendFirst {
					firsts.Add(1)
				}
			}()
		}
		wg.Wait()
		if firsts.Load() != 1 {
			t.Fatalf("%d spends were first, want 1", firsts.Load())
		}
	})

	t.Run("arrivals count up to the limit per client, event and window", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		a := tier1.ArrivalCount{EventID: b.event, Client: strings.Repeat("1", 32), Window: 42, Limit: 3, Expires: Epoch.Add(time.Minute), Now: Epoch}
		for i := int64(1); i <= 3; i++ {
			if n, ok, err := b.store.CountArrival(b.ctx, a); err != nil || !ok || n != i {
				t.Fatalf("arrival %d: %d, %v, %v", i, n, ok, err)
			}
		}
		for range 2 {
			if n, ok, err := b.store.CountArrival(b.ctx, a); err != nil || ok || n != 3 {
				t.Fatalf("over the limit: %d, %v, %v; want 3, false", n, ok, err)
			}
		}
		for name, other := range map[string]tier1.ArrivalCount{
			"next window":    {EventID: a.EventID, Client: a.Client, Window: 43, Limit: 3, Expires: a.Expires, Now: Epoch},
			"another client": {EventID: a.EventID, Client: strings.Repeat("2", 32), Window: 42, Limit: 3, Expires: a.Expires, Now: Epoch},
			"another event":  {EventID: testenv.UniqueID(t), Client: a.Client, Window: 42, Limit: 3, Expires: a.Expires, Now: Epoch},
		} {
			if n, ok, err := b.store.CountArrival(b.ctx, other); err != nil || !ok || n != 1 {
				t.Errorf("%s: %d, %v, %v; want a fresh count", name, n, ok, err)
			}
		}
	})

	t.Run("racing arrivals never pass the limit", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		var ok atomic.Int64
		var wg sync.WaitGroup
		for range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, counted, err := b.store.CountArrival(b.ctx, tier1.ArrivalCount{EventID: b.event, Client: strings.Repeat("3", 32), Window: 7, Limit: 10, Expires: Epoch.Add(time.Minute), Now: Epoch})
				if err != nil {
					t.Error(err)
				}
				if counted {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 10 {
			t.Fatalf("%d arrivals counted, want exactly the limit 10", ok.Load())
		}
	})

	t.Run("pow is a setting: kept by pause and resume, cleared by activate without it", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		st, err := b.svc.Activate(b.ctx, b.event, 2, 5, tier1.WithPow(TestPow))
		if err != nil || st.Pow != TestPow {
			t.Fatalf("Activate with pow: %+v, %v", st, err)
		}
		for _, op := range []func(context.Context, string) (tier1.AdminStatus, error){b.svc.Pause, b.svc.Resume} {
			if st, err := op(b.ctx, b.event); err != nil || st.Pow != TestPow {
				t.Fatalf("pow after pause/resume: %+v, %v", st, err)
			}
		}
		if snap := b.snapshot(t); snap.Event.Pow != TestPow {
			t.Fatalf("stored pow %d", snap.Event.Pow)
		}
		if st, err := b.svc.Activate(b.ctx, b.event, 2, 5); err != nil || st.Pow != 0 {
			t.Fatalf("Activate without pow: %+v, %v", st, err)
		}
		for _, bad := range []int64{-1, tier1.MinPow - 1, tier1.MaxPow + 1} {
			if _, err := b.svc.Activate(b.ctx, b.event, 2, 5, tier1.WithPow(bad)); !errors.Is(err, tier1.ErrInvalidConfig) {
				t.Errorf("pow %d: %v, want ErrInvalidConfig", bad, err)
			}
		}
	})

	t.Run("the door: 428 with a challenge, a position for its solution, 409 for a replay", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		if _, err := b.svc.Activate(b.ctx, b.event, 2, 5, tier1.WithPow(TestPow)); err != nil {
			t.Fatal(err)
		}
		_, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, IdempotencyKey: "k1"})
		var pe *tier1.PowError
		if !errors.As(err, &pe) || !errors.Is(err, tier1.ErrPowRequired) {
			t.Fatalf("no solution: %v", err)
		}
		ch := pe.Challenge
		params, _ := altcha.SaltParams(ch.Salt)
		if ch.MaxNumber != 2*TestPow || params.Get("event") != b.event || params.Get("expires") != "1795341900" {
			t.Fatalf("challenge %+v (params %v): want maxnumber 2×pow, this event, expiry in 5 minutes", ch, params)
		}
		if got := b.assigned(t); got != 0 || b.calls.spends.Load() != 0 {
			t.Fatalf("a refused arrival wrote: %d assigned, %d spends", got, b.calls.spends.Load())
		}
		h := Solve(t, ch)
		first, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, IdempotencyKey: "k1", Altcha: h})
		if err != nil || !first.Active || first.Position < 1 {
			t.Fatalf("with the solution: %+v, %v", first, err)
		}
		// The page retrying after a lost answer: same header, same key.
		again, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, IdempotencyKey: "k1", Altcha: h})
		if err != nil || !again.Reused || again.RequestID != first.RequestID {
			t.Fatalf("retry with the same key: %+v, %v", again, err)
		}
		for name, a := range map[string]tier1.Arrival{
			"another key":    {EventID: b.event, IdempotencyKey: "k2", Altcha: h},
			"no key at all":  {EventID: b.event, Altcha: h},
			"keyless replay": {EventID: b.event, Altcha: h},
		} {
			_, err := b.svc.Enter(b.ctx, a)
			if !errors.As(err, &pe) || !errors.Is(err, tier1.ErrPowReplayed) || pe.Challenge.Challenge == "" {
				t.Errorf("%s: %v, want ErrPowReplayed with a fresh challenge", name, err)
			}
		}
		if got := b.assigned(t); got != 1 {
			t.Fatalf("%d positions after one paid arrival and its replays, want 1", got)
		}
	})

	t.Run("solutions the door refuses as invalid", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		if _, err := b.svc.Activate(b.ctx, b.event, 1, 5, tier1.WithPow(TestPow)); err != nil {
			t.Fatal(err)
		}
		exp := Epoch.Add(5 * time.Minute)
		mk := func(key []byte, event string, exp time.Time) altcha.Challenge {
			ch, err := altcha.Create(key, altcha.Options{MaxNumber: 100, Params: []altcha.Param{{Key: "event", Value: event}}, Expires: exp})
			if err != nil {
				t.Fatal(err)
			}
			return ch
		}
		noExpiry, _ := altcha.Create(PowKey, altcha.Options{MaxNumber: 100, Params: []altcha.Param{{Key: "event", Value: b.event}}})
		twoEvents, _ := altcha.Create(PowKey, altcha.Options{MaxNumber: 100, Params: []altcha.Param{{Key: "event", Value: b.event}, {Key: "event", Value: "other"}}, Expires: exp})
		good := mk(PowKey, b.event, exp)
		n, _ := altcha.Solve(good.Challenge, good.Salt, good.MaxNumber)
		for name, h := range map[string]string{
			"signed with another key":   Solve(t, mk([]byte("not the server's key, 32 bytes.."), b.event, exp)),
			"for another event":         Solve(t, mk(PowKey, "other-event", exp)),
			"already expired":           Solve(t, mk(PowKey, b.event, Epoch)),
			"without an expiry":         Solve(t, noExpiry),
			"naming two events":         Solve(t, twoEvents),
			"wrong number":              good.Payload(n + 1).Encode(),
			"not base64":                "%%%",
			"base64 of nothing useful":  "e30=",
			"a JSON number for a field": "eyJhbGdvcml0aG0iOjF9",
		} {
			_, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, Altcha: h})
			var pe *tier1.PowError
			if !errors.As(err, &pe) || !errors.Is(err, tier1.ErrPowInvalid) || pe.Challenge.Challenge == "" {
				t.Errorf("%s: %v, want ErrPowInvalid with a fresh challenge", name, err)
			}
		}
		// A solution that was good expires with its challenge.
		h := Solve(t, good)
		b.clk.Set(exp)
		if _, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, Altcha: h}); !errors.Is(err, tier1.ErrPowInvalid) {
			t.Errorf("at its expiry: %v, want ErrPowInvalid", err)
		}
		if got := b.assigned(t); got != 0 || b.calls.spends.Load() != 0 {
			t.Fatalf("refused solutions wrote: %d assigned, %d spends", got, b.calls.spends.Load())
		}
	})

	t.Run("a solution of an easier challenge is refused once the operator raises pow, before it is spent", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		if _, err := b.svc.Activate(b.ctx, b.event, 2, 5, tier1.WithPow(TestPow)); err != nil {
			t.Fatal(err)
		}
		easy := b.fresh(t)
		p, _ := altcha.Decode(easy)
		if params, _ := altcha.SaltParams(p.Salt); params.Get(altcha.ParamMaxNumber) != "4000" {
			t.Fatalf("salt %q: want the difficulty (maxnumber=4000) signed into it", p.Salt)
		}
		if _, err := b.svc.Activate(b.ctx, b.event, 2, 5, tier1.WithPow(2*TestPow)); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(time.Minute) // well within the challenge's lifetime
		var pe *tier1.PowError
		_, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, IdempotencyKey: "k1", Altcha: easy})
		if !errors.As(err, &pe) || !errors.Is(err, tier1.ErrPowTooEasy) || pe.Challenge.MaxNumber != 4*TestPow {
			t.Fatalf("a solution issued at pow %d after the raise to %d: %v, want ErrPowTooEasy with a challenge at maxnumber %d", TestPow, 2*TestPow, err, 4*TestPow)
		}
		if got := b.assigned(t); got != 0 || b.calls.spends.Load() != 0 {
			t.Fatalf("a too-easy solution wrote: %d assigned, %d spends", got, b.calls.spends.Load())
		}
		// Nor is it spent by the refusal: sent again, it is still too easy,
		// not a replay.
		if _, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, IdempotencyKey: "k1", Altcha: easy}); !errors.Is(err, tier1.ErrPowTooEasy) {
			t.Fatalf("the same solution sent again: %v, want ErrPowTooEasy", err)
		}
		// The page solves the challenge the refusal carried, with the same key.
		hard := Solve(t, pe.Challenge)
		if res, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, IdempotencyKey: "k1", Altcha: hard}); err != nil || !res.Active || res.Position < 1 {
			t.Fatalf("the new challenge's solution: %+v, %v", res, err)
		}
		// A harder solution than asked for pays enough: lowering pow keeps
		// the challenges already out working.
		_, err = b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event})
		if !errors.As(err, &pe) {
			t.Fatalf("no solution: %v", err)
		}
		harder := Solve(t, pe.Challenge)
		if _, err := b.svc.Activate(b.ctx, b.event, 2, 5, tier1.WithPow(TestPow)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, Altcha: harder}); err != nil {
			t.Fatalf("a solution harder than the event asks for: %v", err)
		}
		if got := b.assigned(t); got != 2 {
			t.Fatalf("%d positions, want 2", got)
		}
	})

	t.Run("a challenge issued at the default before activation pays only the default", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0, func(c *tier1.Config) { c.Pow.Default = tier1.MinPow })
		// The page fetches (and may solve) a challenge before the sale starts.
		early, err := b.svc.Challenge(b.ctx, b.event)
		if err != nil || early.MaxNumber != 2*tier1.MinPow {
			t.Fatalf("challenge of an inactive event: %+v, %v; want the default", early, err)
		}
		cached, _, err := b.svc.WindowChallenge(b.ctx, b.event, []byte("a page's nonce"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Activate(b.ctx, b.event, 2, 5, tier1.WithPow(TestPow)); err != nil {
			t.Fatal(err)
		}
		for name, ch := range map[string]altcha.Challenge{"fresh": early, "cached per window": cached} {
			_, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, Altcha: Solve(t, ch)})
			var pe *tier1.PowError
			if !errors.As(err, &pe) || !errors.Is(err, tier1.ErrPowTooEasy) || pe.Challenge.MaxNumber != 2*TestPow {
				t.Errorf("%s challenge from before the activation: %v, want ErrPowTooEasy with the event's challenge", name, err)
			}
		}
		if got := b.assigned(t); got != 0 || b.calls.spends.Load() != 0 {
			t.Fatalf("too-easy solutions wrote: %d assigned, %d spends", got, b.calls.spends.Load())
		}
	})

	// The door decides from one read of the event: an activation (or a
	// raise of pow) landing after that read, and seen by a later read
	// once this instance's cached snapshot went stale, gives nobody a
	// place they did not pay for.
	changeAfterFirstRead := func(t *testing.T, b *doorBundle, change func(admin *tier1.Service)) {
		t.Helper()
		c := cfg()
		c.Pow.Keys = [][]byte{PowKey}
		admin := tier1.New(b.calls.Store, b.keys, b.clk, c) // another instance
		var once sync.Once
		b.calls.afterSnapshot = func(id string) {
			if id == b.event {
				once.Do(func() {
					change(admin)
					b.clk.Advance(2 * tier1.DefaultStatusCacheTTL)
				})
			}
		}
	}

	t.Run("an arrival that read the event before its activation is not given an unpaid place", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		changeAfterFirstRead(t, b, func(admin *tier1.Service) {
			if _, err := admin.Activate(b.ctx, b.event, 1, 5, tier1.WithPow(TestPow)); err != nil {
				t.Error(err)
			}
		})
		res, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, IdempotencyKey: "early", Nonce: []byte("0123456789abcdef")})
		if err == nil && res.Active {
			t.Fatalf("an arrival without a solution got a place across the activation: %+v", res)
		}
		if err == nil && res.Token == "" {
			t.Fatalf("pass-through without a pass: %+v", res)
		}
		if got := b.assigned(t); got != 0 {
			t.Fatalf("%d positions handed out without a proof of work", got)
		}
		// The next arrival reads the active event, and pays.
		if _, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, IdempotencyKey: "later"}); !errors.Is(err, tier1.ErrPowRequired) {
			t.Fatalf("an arrival after the activation: %v, want ErrPowRequired", err)
		}
	})

	t.Run("an arrival whose write must re-read the event pays what the re-read asks", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		if _, err := b.svc.Activate(b.ctx, b.event, 1, 5); err != nil {
			t.Fatal(err)
		}
		// Another instance re-activates with more shards (so this arrival's
		// write conflicts and re-reads) and a proof of work.
		changeAfterFirstRead(t, b, func(admin *tier1.Service) {
			if _, err := admin.Activate(b.ctx, b.event, 2, 5, tier1.WithPow(TestPow)); err != nil {
				t.Error(err)
			}
		})
		b.clk.Advance(2 * tier1.DefaultStatusCacheTTL) // the next read goes to the store
		_, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, IdempotencyKey: "racer"})
		var pe *tier1.PowError
		if !errors.As(err, &pe) || !errors.Is(err, tier1.ErrPowRequired) || pe.Challenge.MaxNumber != 2*TestPow {
			t.Fatalf("an unpaid arrival whose write re-read an event now asking pow %d: %v, want ErrPowRequired with its challenge", TestPow, err)
		}
		if got := b.assigned(t); got != 0 {
			t.Fatalf("%d positions handed out without a proof of work", got)
		}
	})

	t.Run("pre-queue tickets pay too, and a missing nonce is refused before the solution is spent", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 0)
		if _, err := b.svc.Schedule(b.ctx, b.event, Epoch.Add(time.Hour), time.Time{}, tier1.WithPow(TestPow)); err != nil {
			t.Fatalf("Schedule with pow: %v", err)
		}
		nonce := []byte("0123456789abcdef")
		if _, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, Nonce: nonce}); !errors.Is(err, tier1.ErrPowRequired) {
			t.Fatalf("ticket without a solution: %v", err)
		}
		h := b.fresh(t)
		if _, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, Altcha: h}); !errors.Is(err, tier1.ErrNonceRequired) {
			t.Fatalf("ticket without a nonce: %v", err)
		}
		if b.calls.spends.Load() != 0 {
			t.Fatal("the solution was spent on an arrival refused for its nonce")
		}
		res, err := b.svc.Enter(b.ctx, tier1.Arrival{EventID: b.event, Altcha: h, Nonce: nonce})
		if err != nil || res.Phase != tier1.PhasePrequeue {
			t.Fatalf("ticket with a solution: %+v, %v", res, err)
		}
		bad := testenv.UniqueID(t)
		if _, err := b.svc.Schedule(b.ctx, bad, Epoch.Add(time.Hour), time.Time{}, tier1.WithPow(1)); !errors.Is(err, tier1.ErrInvalidConfig) {
			t.Fatalf("schedule with pow 1: %v", err)
		}
		if _, err := b.svc.SaleStatus(b.ctx, bad); !errors.Is(err, tier1.ErrNotFound) {
			t.Fatalf("a schedule refused for its pow was written: %v", err)
		}
	})

	t.Run("an arrival before the pre-queue opens spends nothing and is not counted", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 1)
		from := Epoch.Add(2 * time.Minute) // within the challenge's lifetime
		if _, err := b.svc.Schedule(b.ctx, b.event, Epoch.Add(time.Hour), from, tier1.WithPow(TestPow)); err != nil {
			t.Fatalf("Schedule: %v", err)
		}
		me := tier1.Arrival{EventID: b.event, IdempotencyKey: "early", Nonce: []byte("0123456789abcdef"), Client: "198.51.100.9", HasClient: true}
		ch, err := b.svc.Challenge(b.ctx, b.event) // the page may solve ahead (GET /vwr/challenge)
		if err != nil {
			t.Fatal(err)
		}
		me.Altcha = Solve(t, ch)
		for i := range 3 {
			if _, err := b.svc.Enter(b.ctx, me); !errors.Is(err, tier1.ErrNotOpen) {
				t.Fatalf("arrival %d before the pre-queue opens: %v, want ErrNotOpen", i, err)
			}
		}
		if s, c := b.calls.spends.Load(), b.calls.counts.Load(); s != 0 || c != 0 {
			t.Fatalf("arrivals refused as not open yet wrote %d spends and %d counts", s, c)
		}
		// Once it opens, the same solution takes its ticket, within the bound.
		b.clk.Set(from)
		if res, err := b.svc.Enter(b.ctx, me); err != nil || res.Phase != tier1.PhasePrequeue {
			t.Fatalf("the same arrival once the pre-queue opens: %+v, %v", res, err)
		}
	})

	t.Run("the per-client bound: 429 with the window's end, other clients and the next window unaffected", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 2)
		if _, err := b.svc.Activate(b.ctx, b.event, 1, 5); err != nil {
			t.Fatal(err)
		}
		b.clk.Set(Epoch.Add(7 * time.Minute)) // 3 minutes left in the window
		me := tier1.Arrival{EventID: b.event, Client: "198.51.100.7:41000", HasClient: true, ClientWithPort: true}
		for i := range 2 {
			if _, err := b.svc.Enter(b.ctx, me); err != nil {
				t.Fatalf("arrival %d: %v", i, err)
			}
		}
		var re *tier1.RateError
		for range 3 {
			me.Client = "198.51.100.7:41001" // another port: the same client
			_, err := b.svc.Enter(b.ctx, me)
			if !errors.As(err, &re) || !errors.Is(err, tier1.ErrTooManyArrivals) || re.RetryAfter != 3*time.Minute {
				t.Fatalf("over the bound: %v, want 429 with Retry-After 3m", err)
			}
		}
		if got := b.calls.counts.Load(); got != 3 {
			t.Errorf("%d counter writes for 2 arrivals and 3 refusals: the instance should refuse the later ones from memory (want 3)", got)
		}
		if got := b.assigned(t); got != 2 {
			t.Fatalf("%d positions, want 2", got)
		}
		for name, other := range map[string]tier1.Arrival{
			"another address":        {EventID: b.event, Client: "198.51.100.8:41000", HasClient: true, ClientWithPort: true},
			"another IPv6 /64":       {EventID: b.event, Client: "2001:db8:0:2::1:443", HasClient: true, ClientWithPort: true},
			"a deployment with none": {EventID: b.event},
		} {
			if _, err := b.svc.Enter(b.ctx, other); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		b.clk.Set(Epoch.Add(10 * time.Minute))
		if _, err := b.svc.Enter(b.ctx, me); err != nil {
			t.Fatalf("next window: %v", err)
		}
	})

	t.Run("the bound counts paid arrivals once, not their retries", func(t *testing.T) {
		t.Parallel()
		b := setupDoor(t, f, 1)
		if _, err := b.svc.Activate(b.ctx, b.event, 1, 5, tier1.WithPow(TestPow)); err != nil {
			t.Fatal(err)
		}
		me := tier1.Arrival{EventID: b.event, IdempotencyKey: "mine", Client: "203.0.113.9", HasClient: true}
		me.Altcha = b.fresh(t)
		for i := range 3 {
			if _, err := b.svc.Enter(b.ctx, me); err != nil {
				t.Fatalf("paid arrival, attempt %d: %v", i, err)
			}
		}
		if got := b.calls.claims.Load(); got != 1 {
			t.Errorf("%d claims for one counted arrival, want 1", got)
		}
		me.IdempotencyKey, me.Altcha = "second", b.fresh(t)
		if _, err := b.svc.Enter(b.ctx, me); !errors.Is(err, tier1.ErrTooManyArrivals) {
			t.Fatalf("a second paid arrival over a bound of 1: %v", err)
		}
		// A retry of the arrival the bound refused is refused too: its
		// solution stays spent, and not as a retry, so the same solution
		// and key cannot skip the count and take a place past the bound.
		for i := range 3 {
			if _, err := b.svc.Enter(b.ctx, me); !errors.Is(err, tier1.ErrPowReplayed) {
				t.Fatalf("retry %d of the arrival refused for the bound: %v, want 409 pow_replayed", i, err)
			}
		}
		// Nor can it race its own refusal: the same solution and key sent
		// many times at once, from a client over its bound, take no place.
		me.IdempotencyKey, me.Altcha = "racer", b.fresh(t)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := b.svc.Enter(b.ctx, me); !errors.Is(err, tier1.ErrTooManyArrivals) && !errors.Is(err, tier1.ErrPowReplayed) {
					t.Errorf("racing retries over the bound: %v, want 429 or 409", err)
				}
			}()
		}
		wg.Wait()
		if got := b.assigned(t); got != 1 {
			t.Fatalf("%d positions after racing retries, for a client bounded at 1", got)
		}
		if got := b.assigned(t); got != 1 {
			t.Fatalf("%d positions for a client bounded at 1", got)
		}
		// IPv6 addresses of one /64 are one client.
		v6 := tier1.Arrival{EventID: b.event, Client: "2001:db8:0:1::a", HasClient: true}
		for i, addr := range []string{"2001:db8:0:1::a", "2001:db8:0:1:ffff::b"} {
			v6.Client, v6.IdempotencyKey, v6.Altcha = addr, "v6-"+addr[len(addr)-1:], b.fresh(t)
			_, err := b.svc.Enter(b.ctx, v6)
			if (i == 0) != (err == nil) {
				t.Fatalf("%s: %v", addr, err)
			}
		}
	})
}
