package tier1

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/altcha"
)

// What a client pays at the door (docs/bots.md): an event may ask every
// arrival for an ALTCHA proof of work, spent once, and every deployment
// that names a trusted client-address header bounds the arrivals one
// client address takes per event and window.

// Errors of the door.
var (
	// ErrPowRequired is an arrival without a solution at an event that asks for one.
	ErrPowRequired = errors.New("tier1: proof of work required")
	// ErrPowInvalid is a solution that is malformed, forged, expired or for another event.
	ErrPowInvalid = errors.New("tier1: proof of work invalid")
	// ErrPowReplayed is a solution that was already spent.
	ErrPowReplayed = errors.New("tier1: proof of work already spent")
	// ErrPowTooEasy is a valid solution of a challenge issued at a lower
	// difficulty than the event asks for now (the operator raised pow, or
	// activated the event after the challenge was issued at the default).
	ErrPowTooEasy = errors.New("tier1: proof of work easier than the event asks for")
	// ErrTooManyArrivals is a client address over its bound (see RateError).
	ErrTooManyArrivals = errors.New("tier1: too many arrivals from this client")
)

// PowError is a refusal that hands the client a fresh challenge, so it can
// solve it and come back without another round trip.
type PowError struct {
	Err       error // ErrPowRequired, ErrPowInvalid, ErrPowTooEasy or ErrPowReplayed
	Challenge altcha.Challenge
}

func (e *PowError) Error() string { return e.Err.Error() }
func (e *PowError) Unwrap() error { return e.Err }

// RateError is ErrTooManyArrivals with the time left in the client's window.
type RateError struct{ RetryAfter time.Duration }

func (e *RateError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", ErrTooManyArrivals, e.RetryAfter)
}
func (e *RateError) Unwrap() error { return ErrTooManyArrivals }

// Limits of an event's proof of work, in expected hashes per arrival.
const (
	MinPow = 1_000
	MaxPow = 100_000_000
)

// PowConfig is how the Service issues and checks challenges.
type PowConfig struct {
	// Keys sign challenges (the first) and verify them (all, so a rotation
	// keeps challenges already out working). tier1app derives them from the
	// pass keys, so every instance agrees; the default is a random key for
	// this process only.
	Keys [][]byte
	// Lifetime is how long a challenge from a 428 answer or an uncached
	// GET stays valid; 5 minutes.
	Lifetime time.Duration
	// Window is the cache window of GET /vwr/challenge/{event}?nonce=…: the
	// same nonce gets the same challenge for the rest of the window, valid
	// until the end of the next one; 5 minutes.
	Window time.Duration
	// Default is the expected hashes of a challenge for an event that does
	// not ask for one (an ALTCHA widget may still fetch it); DefaultPow.
	Default int64
}

// ClientBound limits the arrivals one client address takes per event.
type ClientBound struct {
	// Limit is the arrivals one client key may make per event and window;
	// 0 turns the bound off.
	Limit int64
	// Window is the bound's fixed window; 10 minutes.
	Window time.Duration
}

// Defaults of the door.
const (
	DefaultPow          = 500_000
	DefaultPowLifetime  = 5 * time.Minute
	DefaultPowWindow    = 5 * time.Minute
	DefaultClientLimit  = 100
	DefaultClientWindow = 10 * time.Minute
)

func (c PowConfig) withDefaults() PowConfig {
	if len(c.Keys) == 0 {
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		c.Keys = [][]byte{[]byte(hex.EncodeToString(k))}
	}
	if c.Lifetime == 0 {
		c.Lifetime = DefaultPowLifetime
	}
	if c.Window == 0 {
		c.Window = DefaultPowWindow
	}
	if c.Default == 0 {
		c.Default = DefaultPow
	}
	return c
}

func (c ClientBound) withDefaults() ClientBound {
	if c.Window == 0 {
		c.Window = DefaultClientWindow
	}
	return c
}

func (c PowConfig) validate() []error {
	var errs []error
	if c.Lifetime < 10*time.Second || c.Lifetime > time.Hour {
		errs = append(errs, errors.New("VWR_TIER1_POW_LIFETIME must be in [10s, 1h]"))
	}
	if c.Window < time.Second || c.Window > time.Hour {
		errs = append(errs, errors.New("VWR_TIER1_POW_WINDOW must be in [1s, 1h]"))
	}
	if c.Default < MinPow || c.Default > MaxPow {
		errs = append(errs, fmt.Errorf("VWR_TIER1_POW_DEFAULT must be in [%d, %d]", MinPow, MaxPow))
	}
	return errs
}

func (c ClientBound) validate() []error {
	var errs []error
	if c.Limit < 0 {
		errs = append(errs, errors.New("VWR_TIER1_CLIENT_LIMIT must not be negative"))
	}
	if c.Window < time.Second || c.Window > 24*time.Hour {
		errs = append(errs, errors.New("VWR_TIER1_CLIENT_WINDOW must be in [1s, 24h]"))
	}
	return errs
}

// Spend is what recording a spent solution found.
type Spend int

// Outcomes of SpendSolution.
const (
	// SpendFirst: the solution was not spent before; it is now.
	SpendFirst Spend = iota + 1
	// SpendRetry: spent before with the same Idempotency-Key (a retry of
	// the same arrival, which the assign answers idempotently).
	SpendRetry
	// SpendReplayed: spent before by another arrival.
	SpendReplayed
)

// Solution is a verified proof of work to record as spent.
type Solution struct {
	EventID   string
	Challenge string // 64 hex digits
	// KeyHash names the arrival's Idempotency-Key (KeyHash), "" without one.
	KeyHash string
	// Unclaimed writes a new record without KeyHash, so that it answers
	// SpendReplayed to every spend until ClaimSolution writes the key: an
	// arrival the client's bound has still to count cannot be retried past
	// the count, nor raced against its own refusal.
	Unclaimed bool
	// Expires is the challenge's expiry: the record may go then.
	Expires time.Time
	Now     time.Time
	// MaxNumber is the difficulty signed into the challenge (not stored).
	MaxNumber int64
}

// ArrivalCount is one arrival to count against a client's bound.
type ArrivalCount struct {
	EventID string
	Client  string // ClientKey's output: 32 hex digits
	Window  int64  // unix time / the bound's window
	Limit   int64
	Expires time.Time // the window's end: the counter may go then
	Now     time.Time
}

// GuardStore is the part of the Store port the door writes: at most one
// small item per spent solution, and one counter per client key, event and
// window, each expiring by itself.
type GuardStore interface {
	// SpendSolution records s once (without its KeyHash when s.Unclaimed).
	// A record of the same challenge reports SpendRetry when its KeyHash is
	// s.KeyHash (both non-empty), else SpendReplayed; neither writes
	// anything.
	SpendSolution(ctx context.Context, s Solution) (Spend, error)
	// ClaimSolution writes s.KeyHash into the record of a solution spent
	// Unclaimed, keeping its expiry, once the bound counted its arrival:
	// from then on a retry with the same key is SpendRetry. A record that
	// is gone is left gone.
	ClaimSolution(ctx context.Context, s Solution) error
	// CountArrival adds one to the client's arrivals in the window unless
	// they already reached the limit; ok is false then and nothing is
	// written. n is the count after the call.
	CountArrival(ctx context.Context, a ArrivalCount) (n int64, ok bool, err error)
}

// KeyHash names an Idempotency-Key in a spent-solution record without
// storing it (the key would hand out its position to whoever read it).
func KeyHash(eventID, key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(eventID + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// ClientAddress turns a trusted header's value into the address the bound
// counts: an IPv4 address, or the /64 an IPv6 address belongs to (one
// subscriber's usual allocation). withPort says the value ends in ":port",
// as CloudFront-Viewer-Address does even for IPv6 ("2001:db8::1:46532",
// no brackets). ok is false for anything that is not an address.
func ClientAddress(value string, withPort bool) (netip.Prefix, bool) {
	v := strings.TrimSpace(value)
	if withPort || strings.HasPrefix(v, "[") {
		i := strings.LastIndexByte(v, ':')
		if i < 0 {
			return netip.Prefix{}, false
		}
		if _, err := strconv.ParseUint(v[i+1:], 10, 16); err != nil {
			return netip.Prefix{}, false
		}
		v = strings.TrimSuffix(strings.TrimPrefix(v[:i], "["), "]")
	}
	addr, err := netip.ParseAddr(v)
	if err != nil || addr.Zone() != "" {
		return netip.Prefix{}, false
	}
	addr = addr.Unmap()
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return p, true
}

// guard is the Service's door state: which client keys this instance has
// already seen over their bound, so that a flood from one address costs the
// store one refused write per instance and window, not one per request.
type guard struct {
	mu   sync.Mutex
	over map[string]time.Time // event, client, window → window end
}

const maxOverEntries = 10_000

func (g *guard) isOver(k string, now time.Time) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	end, ok := g.over[k]
	if ok && !now.Before(end) {
		delete(g.over, k)
		ok = false
	}
	return end, ok
}

func (g *guard) setOver(k string, end time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.over == nil || len(g.over) >= maxOverEntries {
		g.over = map[string]time.Time{}
	}
	g.over[k] = end
}

// Arrival is one POST /vwr/assign/{eventId}.
type Arrival struct {
	EventID        string
	IdempotencyKey string
	Nonce          []byte // Client-Nonce, for a pre-queue ticket
	// Altcha is the Altcha header: a solved challenge, or "".
	Altcha string
	// Client is the trusted client-address header's value; HasClient says
	// the deployment names one (else the bound is off).
	Client    string
	HasClient bool
	// ClientWithPort says Client ends in ":port" (ClientAddress).
	ClientWithPort bool
}

// Enter is an arrival at the door: when the event is queueing and asks for
// a proof of work, the solution is checked and spent; when the deployment
// bounds clients, the arrival is counted; then the visitor gets a position
// or pre-queue ticket (AssignWithNonce). A refusal writes nothing, except
// that a solution refused for the client's bound stays spent.
func (s *Service) Enter(ctx context.Context, a Arrival) (AssignResult, error) {
	if !ValidID(a.EventID) {
		return AssignResult{}, ErrInvalidEvent
	}
	if a.IdempotencyKey != "" && !ValidID(a.IdempotencyKey) {
		return AssignResult{}, ErrInvalidIdempotencyKey
	}
	// One read decides the arrival: whether it pays, at what difficulty,
	// and what it gets. A second read could see an activation (or a raise)
	// this one did not, and hand out a place nobody paid for.
	r, err := s.read(ctx, a.EventID)
	if err != nil {
		return AssignResult{}, err
	}
	ev := r.Event
	if !r.Found || !ev.Active {
		return s.assign(ctx, r, a.EventID, a.IdempotencyKey, a.Nonce, 0)
	}
	now := s.clk.Now()
	if ev.Sale.Phase == SalePrequeue && now.Before(ev.Sale.OpensAt) {
		// Refused before anything is spent or counted: nobody queues yet,
		// or the ticket would have no nonce.
		if now.Before(ev.Sale.PrequeueFrom) {
			return AssignResult{}, ErrNotOpen
		}
		if a.Nonce == nil {
			return AssignResult{}, ErrNonceRequired
		}
	}
	count := s.cfg.Clients.Limit > 0 && a.HasClient
	var claim *Solution
	var paid int64
	if ev.Pow > 0 {
		// A solution is spent unclaimed while its arrival has still to be
		// counted: a retry is a replay until the count let it in, so
		// neither a retry after a 429 nor one racing the count gets past
		// the bound.
		spend, sol, err := s.spend(ctx, ev, a, now, count)
		if err != nil {
			return AssignResult{}, err
		}
		paid = sol.MaxNumber
		// A retry of an arrival already counted is not counted again.
		count = count && spend == SpendFirst
		if count && sol.KeyHash != "" {
			claim = &sol
		}
	}
	if count {
		if err := s.countArrival(ctx, a, now); err != nil {
			return AssignResult{}, err
		}
		if claim != nil {
			// Failing this only turns the arrival's retries into replays.
			if err := s.claim(ctx, *claim); err != nil {
				s.cfg.Logger.Warn("tier1 claim solution", "event", a.EventID, "err", err.Error())
			}
		}
	}
	return s.assign(ctx, r, a.EventID, a.IdempotencyKey, a.Nonce, paid)
}

// paidFor refuses an arrival that paid less (paid: the maxnumber of its
// checked solution, 0 for none) than ev asks for, with a fresh challenge.
// The door checks against the read it decided on; this catches a place
// taken after a re-read that asks for more.
func (s *Service) paidFor(ev Event, paid int64, now time.Time) error {
	if ev.Pow <= 0 || paid >= maxNumberFor(ev.Pow) {
		return nil
	}
	why := ErrPowTooEasy
	if paid == 0 {
		why = ErrPowRequired
	}
	ch, err := s.challenge(ev.ID, ev.Pow, now)
	if err != nil {
		return err
	}
	return &PowError{Err: why, Challenge: ch}
}

// spend checks the arrival's solution and records it as spent.
func (s *Service) spend(ctx context.Context, ev Event, a Arrival, now time.Time, unclaimed bool) (Spend, Solution, error) {
	refuse := func(err error) (Spend, Solution, error) {
		ch, cerr := s.challenge(ev.ID, ev.Pow, now)
		if cerr != nil {
			return 0, Solution{}, cerr
		}
		return 0, Solution{}, &PowError{Err: err, Challenge: ch}
	}
	if a.Altcha == "" {
		return refuse(ErrPowRequired)
	}
	p, err := altcha.Decode(a.Altcha)
	if err != nil {
		return refuse(ErrPowInvalid)
	}
	v, err := altcha.Verify(p, s.cfg.Pow.Keys, now)
	if err != nil || v.Expires.IsZero() || v.Params.Get("event") != ev.ID || len(v.Params["event"]) != 1 {
		return refuse(ErrPowInvalid)
	}
	// The difficulty the challenge was issued at is signed into its salt
	// (a salt without one predates it): a solution of an easier challenge
	// pays less than the event asks for now. Refused before it is spent.
	if v.MaxNumber < maxNumberFor(ev.Pow) {
		return refuse(ErrPowTooEasy)
	}
	gs, err := s.guardStore()
	if err != nil {
		return 0, Solution{}, err
	}
	sol := Solution{
		EventID: ev.ID, Challenge: p.Challenge, KeyHash: KeyHash(ev.ID, a.IdempotencyKey), Unclaimed: unclaimed,
		Expires: v.Expires, Now: now, MaxNumber: v.MaxNumber,
	}
	spend, err := gs.SpendSolution(ctx, sol)
	if err != nil {
		return 0, Solution{}, unavailable("spend solution", err)
	}
	if spend == SpendReplayed {
		return refuse(ErrPowReplayed)
	}
	return spend, sol, nil
}

// claim writes the key of a solution spent unclaimed, once its arrival
// was counted.
func (s *Service) claim(ctx context.Context, sol Solution) error {
	gs, err := s.guardStore()
	if err != nil {
		return err
	}
	return gs.ClaimSolution(ctx, sol)
}

// countArrival counts the arrival against its client's bound.
func (s *Service) countArrival(ctx context.Context, a Arrival, now time.Time) error {
	b := s.cfg.Clients
	w := now.UnixNano() / int64(b.Window)
	end := time.Unix(0, (w+1)*int64(b.Window))
	client := s.ClientKey(a.Client, a.ClientWithPort)
	memo := a.EventID + "/" + client + "/" + strconv.FormatInt(w, 10)
	if _, over := s.door.isOver(memo, now); over {
		return &RateError{RetryAfter: retryAfter(end, now)}
	}
	gs, err := s.guardStore()
	if err != nil {
		return err
	}
	_, ok, err := gs.CountArrival(ctx, ArrivalCount{
		EventID: a.EventID, Client: client, Window: w, Limit: b.Limit, Expires: end, Now: now,
	})
	if err != nil {
		return unavailable("count arrival", err)
	}
	if !ok {
		s.door.setOver(memo, end)
		return &RateError{RetryAfter: retryAfter(end, now)}
	}
	return nil
}

func retryAfter(end, now time.Time) time.Duration {
	return max(end.Sub(now).Round(time.Second), time.Second)
}

// ClientKey is the name the bound counts a client under: a keyed hash of
// its address (ClientAddress), so the store holds no address. A value that
// is not an address (or no header at all) shares one key, "unknown".
func (s *Service) ClientKey(value string, withPort bool) string {
	p, ok := ClientAddress(value, withPort)
	in := "unknown"
	if ok {
		in = p.String()
	}
	m := hmac.New(sha256.New, s.cfg.Pow.Keys[0])
	m.Write([]byte("vwr client\x00" + in))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func (s *Service) guardStore() (GuardStore, error) {
	gs, ok := s.store.(GuardStore)
	if !ok {
		return nil, fmt.Errorf("%w: the store keeps no spent solutions", ErrUnavailable)
	}
	return gs, nil
}

// maxNumberFor is a challenge's maxnumber for n expected hashes: the secret
// is uniform in [1, 2n] and the client counts from 0.
func maxNumberFor(n int64) int64 { return 2 * n }

// saltFor pads a salt's random part so that, once the event, the
// maxnumber and a ten-digit expiry follow it, the salt's last block leaves
// room for a ten-digit number and SHA-256's padding: every number then
// costs the solver one block after the salt's first ones.
func saltFor(random, eventID string, maxNumber int64) string {
	tailed := len(random) + len("?event=") + len(eventID) + len("&"+altcha.ParamMaxNumber+"=") +
		len(strconv.FormatInt(maxNumber, 10)) + len("&expires=") + 10 + len("&")
	if r := tailed % 64; r > 64-9-10 {
		random += strings.Repeat("0", 64-r)
	}
	return random
}

// challenge issues a fresh challenge for eventID with a random salt, valid
// for the configured lifetime.
func (s *Service) challenge(eventID string, pow int64, now time.Time) (altcha.Challenge, error) {
	b := make([]byte, altcha.DefaultSaltBytes)
	_, _ = rand.Read(b)
	exp := now.Add(s.cfg.Pow.Lifetime).Truncate(time.Second)
	return s.makeChallenge(eventID, pow, hex.EncodeToString(b), 0, exp)
}

func (s *Service) makeChallenge(eventID string, pow int64, random string, number int64, exp time.Time) (altcha.Challenge, error) {
	mx := maxNumberFor(pow)
	ch, err := altcha.Create(s.cfg.Pow.Keys[0], altcha.Options{
		MaxNumber: mx, Number: number, Salt: saltFor(random, eventID, mx),
		// The difficulty is signed with the challenge, so that a raise
		// (or an activation) refuses solutions of easier challenges.
		Params:  []altcha.Param{{Key: "event", Value: eventID}, {Key: altcha.ParamMaxNumber, Value: strconv.FormatInt(mx, 10)}},
		Expires: exp,
	})
	if err != nil {
		return altcha.Challenge{}, fmt.Errorf("tier1: challenge: %w", err)
	}
	return ch, nil
}

// powOf is the expected hashes of eventID's challenges: its own setting
// while it queues, else the configured default.
func (s *Service) powOf(ctx context.Context, eventID string) (int64, error) {
	snap, err := s.snapshot(ctx, eventID)
	if err != nil {
		return 0, err
	}
	if snap.Found && snap.Event.Active && snap.Event.Pow > 0 {
		return snap.Event.Pow, nil
	}
	return s.cfg.Pow.Default, nil
}

// Challenge is a fresh challenge for eventID (GET /vwr/challenge/{event}
// without a nonce): a random salt, never the same twice.
func (s *Service) Challenge(ctx context.Context, eventID string) (altcha.Challenge, error) {
	if !ValidID(eventID) {
		return altcha.Challenge{}, ErrInvalidEvent
	}
	pow, err := s.powOf(ctx, eventID)
	if err != nil {
		return altcha.Challenge{}, err
	}
	return s.challenge(eventID, pow, s.clk.Now())
}

// WindowChallenge is the challenge of eventID for the client nonce in the
// current window: the same all window long (so a CDN may cache it on the
// path and nonce until until), valid until the end of the next window.
// Its salt and number come from the signing key, so only the server knows
// the number, and no two nonces share a challenge.
func (s *Service) WindowChallenge(ctx context.Context, eventID string, nonce []byte) (ch altcha.Challenge, until time.Time, err error) {
	if !ValidID(eventID) {
		return altcha.Challenge{}, time.Time{}, ErrInvalidEvent
	}
	if len(nonce) == 0 {
		return altcha.Challenge{}, time.Time{}, ErrInvalidNonce
	}
	pow, err := s.powOf(ctx, eventID)
	if err != nil {
		return altcha.Challenge{}, time.Time{}, err
	}
	win := s.cfg.Pow.Window
	w := s.clk.Now().UnixNano() / int64(win)
	until = time.Unix(0, (w+1)*int64(win)).UTC()
	exp := until.Add(win).Truncate(time.Second)
	m := hmac.New(sha256.New, s.cfg.Pow.Keys[0])
	fmt.Fprintf(m, "vwr salt\x00%s\x00%x\x00%d", eventID, nonce, w)
	random := hex.EncodeToString(m.Sum(nil)[:altcha.DefaultSaltBytes])
	m = hmac.New(sha256.New, s.cfg.Pow.Keys[0])
	fmt.Fprintf(m, "vwr number\x00%s\x00%d\x00%d", random, pow, exp.Unix())
	number := 1 + int64(binary.BigEndian.Uint64(m.Sum(nil))%uint64(maxNumberFor(pow)))
	ch, err = s.makeChallenge(eventID, pow, random, number, exp)
	return ch, until, err
}
