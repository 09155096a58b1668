// Package token issues and verifies vwr's two JWT kinds: the Tier 1 pass
// (audience vwr-tier1) minted by the serverless front door, and the entry
// token (audience vwr-entry) minted by the Tier 2 queue. Each verifier demands
// its own audience, so one kind never passes as the other even when an
// operator configures the same secret for both.
package token

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer and audiences of vwr tokens.
const (
	Issuer        = "vwr"
	AudienceTier1 = "vwr-tier1"
	AudienceEntry = "vwr-entry"
)

// Cookie names that carry the two token kinds (the seed's names). The Tier 1
// API sets Tier1Cookie and the edge check and Tier 2 read it; Tier 2 sets
// EntryCookie and the gate reads it.
const (
	Tier1Cookie = "urr-vwr-token"
	EntryCookie = "urr-entry-token"
)

// MaxClockSkew is how far in the future a token's iat may lie. The tiers run
// on different hosts (Lambda and the queue service), so a pass minted a moment
// ago by a clock slightly ahead must still verify; exp is checked strictly.
const MaxClockSkew = 30 * time.Second

// MinSecretLen is the shortest accepted HMAC secret, in bytes. HS256 keys
// shorter than the hash output weaken the MAC.
const MinSecretLen = 32

// Errors returned by verification. Every failure wraps ErrInvalid, so callers
// that only need "reject" can test for that one.
var (
	ErrInvalid    = errors.New("token: invalid")
	ErrExpired    = fmt.Errorf("%w: expired", ErrInvalid)
	ErrWrongEvent = fmt.Errorf("%w: wrong event", ErrInvalid)
)

// KeyRing holds HMAC keys by kid. The first key signs; all keys verify, which
// lets operators rotate by prepending a new key and dropping the old one later.
type KeyRing struct {
	signKid string
	keys    map[string][]byte
}

// ParseKeyRing reads "kid:secret,kid2:secret2", or the same ring as JSON,
// which is how a Secrets Manager secret holds it (templates generate
// {"kid":"k1","secret":"…"}; a rotation writes the list form):
//
//	{"kid":"k2","secret":"…"}
//	{"keys":[{"kid":"k2","secret":"…"},{"kid":"k1","secret":"…"}]}
//
// The first entry signs.
func ParseKeyRing(spec string) (*KeyRing, error) {
	if strings.HasPrefix(strings.TrimSpace(spec), "{") {
		return parseJSONRing(spec)
	}
	r := &KeyRing{keys: map[string][]byte{}}
	for i, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kid, secret, ok := strings.Cut(part, ":")
		if !ok || kid == "" {
			return nil, fmt.Errorf("token: key %d: want kid:secret", i+1)
		}
		if err := r.add(kid, []byte(secret)); err != nil {
			return nil, err
		}
	}
	if r.signKid == "" {
		return nil, errors.New("token: key ring is empty")
	}
	return r, nil
}

type jsonKey struct {
	Kid    string `json:"kid"`
	Secret string `json:"secret"`
}

func parseJSONRing(spec string) (*KeyRing, error) {
	var doc struct {
		jsonKey
		Keys []jsonKey `json:"keys"`
	}
	dec := json.NewDecoder(strings.NewReader(spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, errors.New("token: key ring JSON: want {\"kid\",\"secret\"} or {\"keys\":[…]}")
	}
	keys := doc.Keys
	if doc.Kid != "" || doc.Secret != "" {
		if len(keys) > 0 {
			return nil, errors.New("token: key ring JSON: give kid/secret or keys, not both")
		}
		keys = []jsonKey{doc.jsonKey}
	}
	r := &KeyRing{keys: map[string][]byte{}}
	for i, k := range keys {
		if k.Kid == "" {
			return nil, fmt.Errorf("token: key %d: kid is empty", i+1)
		}
		if err := r.add(k.Kid, []byte(k.Secret)); err != nil {
			return nil, err
		}
	}
	if r.signKid == "" {
		return nil, errors.New("token: key ring is empty")
	}
	return r, nil
}

// NewKeyRing returns a ring with a single key. With an empty kid, the kid is
// derived from the secret's hash, so it changes when the secret rotates
// without revealing it.
func NewKeyRing(kid string, secret []byte) (*KeyRing, error) {
	if kid == "" {
		sum := sha256.Sum256(secret)
		kid = "k" + hex.EncodeToString(sum[:4])
	}
	r := &KeyRing{keys: map[string][]byte{}}
	if err := r.add(kid, secret); err != nil {
		return nil, err
	}
	return r, nil
}

// RandomSecret returns a fresh URL-safe secret with 256 bits of entropy.
func RandomSecret() string { return randomString(32) }

// randomString is n random bytes in URL-safe base64. crypto/rand.Read never
// returns an error (since Go 1.24 it crashes the program instead).
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (r *KeyRing) add(kid string, secret []byte) error {
	if len(secret) < MinSecretLen {
		return fmt.Errorf("token: key %q: secret must be at least %d bytes", kid, MinSecretLen)
	}
	if _, dup := r.keys[kid]; dup {
		return fmt.Errorf("token: key %q listed twice", kid)
	}
	r.keys[kid] = secret
	if r.signKid == "" {
		r.signKid = kid
	}
	return nil
}

// KeyPair is one key of a ring.
type KeyPair struct {
	Kid    string `json:"kid"`
	Secret string `json:"secret"`
}

// Pairs lists the ring's keys, the signing key first and the rest by kid:
// what `vwr admin edge-keys` copies to the edge's KeyValueStore and writes
// back after a rotation. Whoever holds them can mint passes.
func (r *KeyRing) Pairs() []KeyPair {
	out := []KeyPair{{Kid: r.signKid, Secret: string(r.keys[r.signKid])}}
	kids := make([]string, 0, len(r.keys))
	for kid := range r.keys {
		if kid != r.signKid {
			kids = append(kids, kid)
		}
	}
	sort.Strings(kids)
	for _, kid := range kids {
		out = append(out, KeyPair{Kid: kid, Secret: string(r.keys[kid])})
	}
	return out
}

// RingJSON is the list form of a ring, {"keys":[…]}, the first key signing:
// what the Tier 1 key secret holds after a rotation.
func RingJSON(pairs []KeyPair) (string, error) {
	b, err := json.Marshal(struct {
		Keys []KeyPair `json:"keys"`
	}{pairs})
	return string(b), err
}

// SigningKid is the kid of the key that signs new tokens.
func (r *KeyRing) SigningKid() string { return r.signKid }

func (r *KeyRing) sign(claims jwt.Claims) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	t.Header["kid"] = r.signKid
	s, err := t.SignedString(r.keys[r.signKid])
	if err != nil {
		return "", fmt.Errorf("token: sign: %w", err)
	}
	return s, nil
}

func (r *KeyRing) keyFunc(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	key, ok := r.keys[kid]
	if !ok {
		return nil, fmt.Errorf("unknown kid %q", kid)
	}
	return key, nil
}

func (r *KeyRing) parse(raw string, claims jwt.Claims, aud string, now time.Time) error {
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(aud),
		jwt.WithIssuer(Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if _, err := p.ParseWithClaims(raw, claims, r.keyFunc); err != nil {
		if errors.Is(err, jwt.ErrTokenExpired) {
			return ErrExpired
		}
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	iat, err := claims.GetIssuedAt()
	if err != nil || iat == nil {
		return fmt.Errorf("%w: missing iat", ErrInvalid)
	}
	if iat.Time.After(now.Add(MaxClockSkew)) {
		return fmt.Errorf("%w: issued in the future", ErrInvalid)
	}
	return nil
}

// Tier1 is a verified (or to-be-issued) Tier 1 pass.
type Tier1 struct {
	Subject   string // visitor id: the server-issued requestId
	EventID   string
	Position  int64
	IssuedAt  time.Time
	ExpiresAt time.Time
}

type tier1Claims struct {
	Tier     int    `json:"tier"`
	EventID  string `json:"eid"`
	Position int64  `json:"pos"`
	jwt.RegisteredClaims
}

// IssueTier1 signs a Tier 1 pass.
func (r *KeyRing) IssueTier1(t Tier1) (string, error) {
	return r.sign(tier1Claims{
		Tier:     1,
		EventID:  t.EventID,
		Position: t.Position,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Audience:  jwt.ClaimStrings{AudienceTier1},
			Subject:   t.Subject,
			IssuedAt:  jwt.NewNumericDate(t.IssuedAt),
			ExpiresAt: jwt.NewNumericDate(t.ExpiresAt),
		},
	})
}

// VerifyTier1 checks signature, algorithm, issuer, audience, expiry, tier and
// that the pass was issued for eventID.
func (r *KeyRing) VerifyTier1(raw, eventID string, now time.Time) (Tier1, error) {
	var c tier1Claims
	if err := r.parse(raw, &c, AudienceTier1, now); err != nil {
		return Tier1{}, err
	}
	if c.Tier != 1 || c.Subject == "" || c.Position < 1 {
		return Tier1{}, fmt.Errorf("%w: malformed tier 1 claims", ErrInvalid)
	}
	if c.EventID != eventID {
		return Tier1{}, ErrWrongEvent
	}
	return Tier1{
		Subject:   c.Subject,
		EventID:   c.EventID,
		Position:  c.Position,
		IssuedAt:  c.IssuedAt.Time,
		ExpiresAt: c.ExpiresAt.Time,
	}, nil
}

// Entry is a verified (or to-be-issued) Tier 2 entry token.
type Entry struct {
	EventID   string
	UserID    string
	ID        string // jti
	IssuedAt  time.Time
	ExpiresAt time.Time
	// SlotEndsAt is when the admission behind the token ends; the token may
	// expire sooner and be renewed up to it. Zero when not given.
	SlotEndsAt time.Time
}

type entryClaims struct {
	UserID string `json:"uid"`
	Slot   int64  `json:"slot,omitempty"` // SlotEndsAt, unix ms
	jwt.RegisteredClaims
}

// NewTokenID returns a random jti (128 bits).
func NewTokenID() string { return randomString(16) }

// IssueEntry signs an entry token. An empty ID gets a random one.
func (r *KeyRing) IssueEntry(e Entry) (string, error) {
	if e.ID == "" {
		e.ID = NewTokenID()
	}
	var slot int64
	if !e.SlotEndsAt.IsZero() {
		slot = e.SlotEndsAt.UnixMilli()
	}
	return r.sign(entryClaims{
		UserID: e.UserID,
		Slot:   slot,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Audience:  jwt.ClaimStrings{AudienceEntry},
			Subject:   e.EventID,
			ID:        e.ID,
			IssuedAt:  jwt.NewNumericDate(e.IssuedAt),
			ExpiresAt: jwt.NewNumericDate(e.ExpiresAt),
		},
	})
}

// VerifyEntry checks signature, algorithm, issuer, audience and expiry, and,
// when eventID is not empty, that the token was issued for that event.
func (r *KeyRing) VerifyEntry(raw, eventID string, now time.Time) (Entry, error) {
	var c entryClaims
	if err := r.parse(raw, &c, AudienceEntry, now); err != nil {
		return Entry{}, err
	}
	if c.Subject == "" || c.UserID == "" {
		return Entry{}, fmt.Errorf("%w: malformed entry claims", ErrInvalid)
	}
	if eventID != "" && c.Subject != eventID {
		return Entry{}, ErrWrongEvent
	}
	e := Entry{
		EventID:   c.Subject,
		UserID:    c.UserID,
		ID:        c.ID,
		IssuedAt:  c.IssuedAt.Time,
		ExpiresAt: c.ExpiresAt.Time,
	}
	if c.Slot > 0 {
		e.SlotEndsAt = time.UnixMilli(c.Slot).UTC()
	}
	return e, nil
}

// DerivedKeys are keys for another use of the ring's secrets, separated by
// label: hex(HMAC-SHA-256(secret, label)) for each key, the signing key's
// first, the others by kid. Tier 1 signs its proof-of-work challenges with
// them, so every instance that holds the pass keys agrees on them and a
// rotation of the ring rotates them too, without a secret of their own.
func (r *KeyRing) DerivedKeys(label string) [][]byte {
	kids := make([]string, 0, len(r.keys))
	for kid := range r.keys {
		if kid != r.signKid {
			kids = append(kids, kid)
		}
	}
	sort.Strings(kids)
	out := make([][]byte, 0, len(r.keys))
	for _, kid := range append([]string{r.signKid}, kids...) {
		m := hmac.New(sha256.New, r.keys[kid])
		m.Write([]byte(label))
		out = append(out, []byte(hex.EncodeToString(m.Sum(nil))))
	}
	return out
}
