package token_test

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vwr-go/vwr/internal/token"
)

var (
	now     = time.Date(2026, 4, 5, 6, 7, 8, 0, time.UTC)
	secret1 = strings.Repeat("a", 32)
	secret2 = strings.Repeat("b", 40)
)

func ring(t *testing.T, spec string) *token.KeyRing {
	t.Helper()
	r, err := token.ParseKeyRing(spec)
	if err != nil {
		t.Fatalf("ParseKeyRing(%q): %v", spec, err)
	}
	return r
}

func tier1(ev string) token.Tier1 {
	return token.Tier1{Subject: "visitor-1", EventID: ev, Position: 42, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
}

func entry(ev string) token.Entry {
	return token.Entry{EventID: ev, UserID: "user-1", ID: "jti-1", IssuedAt: now, ExpiresAt: now.Add(10 * time.Minute)}
}

// sign builds a token by hand, for the shapes the package itself never issues.
func sign(t *testing.T, m jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", m.Alg(), err)
	}
	return s
}

func entryClaims(ev string) jwt.MapClaims {
	return jwt.MapClaims{"iss": token.Issuer, "aud": token.AudienceEntry, "sub": ev, "uid": "user-1",
		"jti": "j", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

func tier1Claims(ev string) jwt.MapClaims {
	return jwt.MapClaims{"iss": token.Issuer, "aud": token.AudienceTier1, "sub": "visitor-1", "eid": ev,
		"pos": 42, "tier": 1, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	r := ring(t, "k1:"+secret1)
	t.Run("tier1", func(t *testing.T) {
		t.Parallel()
		raw, err := r.IssueTier1(tier1("ev1"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.VerifyTier1(raw, "ev1", now.Add(time.Minute))
		want := tier1("ev1")
		if err != nil || got.Subject != want.Subject || got.EventID != want.EventID || got.Position != want.Position ||
			!got.IssuedAt.Equal(want.IssuedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("entry", func(t *testing.T) {
		t.Parallel()
		raw, err := r.IssueEntry(entry("ev1"))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range []string{"ev1", ""} { // "" accepts any event
			got, err := r.VerifyEntry(raw, ev, now.Add(time.Minute))
			want := entry("ev1")
			if err != nil || got.EventID != want.EventID || got.UserID != want.UserID || got.ID != want.ID ||
				!got.IssuedAt.Equal(want.IssuedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
				t.Fatalf("event %q: got %+v, %v", ev, got, err)
			}
		}
	})
	t.Run("entry without id gets a random jti", func(t *testing.T) {
		t.Parallel()
		e := entry("ev1")
		e.ID = ""
		a, _ := r.IssueEntry(e)
		b, _ := r.IssueEntry(e)
		ga, err1 := r.VerifyEntry(a, "ev1", now)
		gb, err2 := r.VerifyEntry(b, "ev1", now)
		if err1 != nil || err2 != nil || ga.ID == "" || ga.ID == gb.ID {
			t.Fatalf("jti %q and %q (%v, %v)", ga.ID, gb.ID, err1, err2)
		}
	})
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	old := ring(t, "old:"+secret1)
	rotated := ring(t, "new:"+secret2+",old:"+secret1)
	if rotated.SigningKid() != "new" {
		t.Fatalf("signing kid %q, want the first listed", rotated.SigningKid())
	}
	fromOld, _ := old.IssueTier1(tier1("ev"))
	if _, err := rotated.VerifyTier1(fromOld, "ev", now); err != nil {
		t.Fatalf("rotated ring rejects a token of the old key: %v", err)
	}
	fromNew, _ := rotated.IssueTier1(tier1("ev"))
	parsed, _, err := jwt.NewParser().ParseUnverified(fromNew, jwt.MapClaims{})
	if err != nil || parsed.Header["kid"] != "new" {
		t.Fatalf("new token kid %v (%v)", parsed.Header["kid"], err)
	}
	if _, err := old.VerifyTier1(fromNew, "ev", now); !errors.Is(err, token.ErrInvalid) {
		t.Fatalf("old ring accepted a token of a key it lacks: %v", err)
	}
	// Dropping the old key retires its tokens.
	newOnly := ring(t, "new:"+secret2)
	if _, err := newOnly.VerifyTier1(fromOld, "ev", now); !errors.Is(err, token.ErrInvalid) {
		t.Fatalf("retired key still verifies: %v", err)
	}
}

func TestRejections(t *testing.T) {
	t.Parallel()
	r := ring(t, "k1:"+secret1)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	goodEntry, _ := r.IssueEntry(entry("ev1"))
	goodTier1, _ := r.IssueTier1(tier1("ev1"))
	sameSecretOtherKid := ring(t, "k2:"+secret1)
	fromOtherKid, _ := sameSecretOtherKid.IssueEntry(entry("ev1"))
	wrongKeySameKid := ring(t, "k1:"+secret2)
	fromWrongKey, _ := wrongKeySameKid.IssueEntry(entry("ev1"))
	wrongKeyTier1, _ := wrongKeySameKid.IssueTier1(tier1("ev1"))

	noneEntry := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "k1", entryClaims("ev1"))
	noneTier1 := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "k1", tier1Claims("ev1"))
	hs512Entry := sign(t, jwt.SigningMethodHS512, []byte(secret1), "k1", entryClaims("ev1"))
	hs512Tier1 := sign(t, jwt.SigningMethodHS512, []byte(secret1), "k1", tier1Claims("ev1"))
	rs256Entry := sign(t, jwt.SigningMethodRS256, rsaKey, "k1", entryClaims("ev1"))
	rs256Tier1 := sign(t, jwt.SigningMethodRS256, rsaKey, "k1", tier1Claims("ev1"))

	with := func(base jwt.MapClaims, k string, v any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for kk, vv := range base {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	hs := func(c jwt.MapClaims) string { return sign(t, jwt.SigningMethodHS256, []byte(secret1), "k1", c) }

	cases := []struct {
		name  string
		kind  string // entry | tier1
		raw   string
		event string
		at    time.Time
		want  error
	}{
		{"entry expired", "entry", goodEntry, "ev1", now.Add(10 * time.Minute), token.ErrExpired},
		{"tier1 expired", "tier1", goodTier1, "ev1", now.Add(2 * time.Hour), token.ErrExpired},
		{"entry wrong event", "entry", goodEntry, "ev2", now, token.ErrWrongEvent},
		{"tier1 wrong event", "tier1", goodTier1, "ev2", now, token.ErrWrongEvent},
		{"entry alg none", "entry", noneEntry, "ev1", now, token.ErrInvalid},
		{"tier1 alg none", "tier1", noneTier1, "ev1", now, token.ErrInvalid},
		{"entry HS512 with the right secret", "entry", hs512Entry, "ev1", now, token.ErrInvalid},
		{"tier1 HS512 with the right secret", "tier1", hs512Tier1, "ev1", now, token.ErrInvalid},
		{"entry RS256", "entry", rs256Entry, "ev1", now, token.ErrInvalid},
		{"tier1 RS256", "tier1", rs256Tier1, "ev1", now, token.ErrInvalid},
		{"entry unknown kid", "entry", fromOtherKid, "ev1", now, token.ErrInvalid},
		{"entry no kid", "entry", sign(t, jwt.SigningMethodHS256, []byte(secret1), "", entryClaims("ev1")), "ev1", now, token.ErrInvalid},
		{"entry wrong key", "entry", fromWrongKey, "ev1", now, token.ErrInvalid},
		{"tier1 wrong key", "tier1", wrongKeyTier1, "ev1", now, token.ErrInvalid},
		{"tier1 pass used as entry token, same secret", "entry", goodTier1, "ev1", now, token.ErrInvalid},
		{"entry token used as tier1 pass, same secret", "tier1", goodEntry, "ev1", now, token.ErrInvalid},
		{"entry wrong issuer", "entry", hs(with(entryClaims("ev1"), "iss", "urr")), "ev1", now, token.ErrInvalid},
		{"entry without exp", "entry", hs(with(entryClaims("ev1"), "exp", nil)), "ev1", now, token.ErrInvalid},
		{"entry issued in the future", "entry", hs(with(entryClaims("ev1"), "iat", now.Add(time.Hour).Unix())), "ev1", now, token.ErrInvalid},
		{"entry without iat", "entry", hs(with(entryClaims("ev1"), "iat", nil)), "ev1", now, token.ErrInvalid},
		{"entry without uid", "entry", hs(with(entryClaims("ev1"), "uid", nil)), "ev1", now, token.ErrInvalid},
		{"tier1 with tier 2", "tier1", hs(with(tier1Claims("ev1"), "tier", 2)), "ev1", now, token.ErrInvalid},
		{"tier1 with position 0", "tier1", hs(with(tier1Claims("ev1"), "pos", 0)), "ev1", now, token.ErrInvalid},
		{"tier1 without subject", "tier1", hs(with(tier1Claims("ev1"), "sub", nil)), "ev1", now, token.ErrInvalid},
		{"garbage", "entry", "not.a.jwt", "ev1", now, token.ErrInvalid},
		{"tampered payload", "entry", tamper(goodEntry), "ev1", now, token.ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if c.kind == "entry" {
				_, err = r.VerifyEntry(c.raw, c.event, c.at)
			} else {
				_, err = r.VerifyTier1(c.raw, c.event, c.at)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// tamper swaps the payload's user id without re-signing.
func tamper(raw string) string {
	parts := strings.Split(raw, ".")
	c := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(raw, c); err != nil {
		return raw
	}
	c["uid"] = "someone-else"
	forged := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	s, _ := forged.SigningString()
	return strings.Split(s, ".")[0] + "." + strings.Split(s, ".")[1] + "." + parts[2]
}

func TestKeyRingConstruction(t *testing.T) {
	t.Parallel()
	short := strings.Repeat("s", token.MinSecretLen-1)
	bad := []struct{ name, spec string }{
		{"empty", ""},
		{"only commas", " , ,"},
		{"short secret", "k:" + short},
		{"short second secret", "k1:" + secret1 + ",k2:" + short},
		{"missing colon", secret1},
		{"empty kid", ":" + secret1},
		{"duplicate kid", "k:" + secret1 + ",k:" + secret2},
		{"JSON without kid", `{"secret":"` + secret1 + `"}`},
		{"JSON short secret", `{"kid":"k1","secret":"` + short + `"}`},
		{"JSON both forms", `{"kid":"k1","secret":"` + secret1 + `","keys":[{"kid":"k2","secret":"` + secret2 + `"}]}`},
		{"JSON empty list", `{"keys":[]}`},
		{"JSON unknown field", `{"kid":"k1","secret":"` + secret1 + `","alg":"none"}`},
		{"JSON duplicate kid", `{"keys":[{"kid":"k","secret":"` + secret1 + `"},{"kid":"k","secret":"` + secret2 + `"}]}`},
		{"not JSON", `{"kid":`},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if r, err := token.ParseKeyRing(c.spec); err == nil {
				t.Fatalf("ParseKeyRing accepted %q (signing kid %q)", c.spec, r.SigningKid())
			}
		})
	}
	if _, err := token.NewKeyRing("k", []byte(short)); err == nil {
		t.Fatal("NewKeyRing accepted a short secret")
	}
	a, err1 := token.NewKeyRing("", []byte(secret1))
	b, err2 := token.NewKeyRing("", []byte(secret2))
	if err1 != nil || err2 != nil || a.SigningKid() == b.SigningKid() || !strings.HasPrefix(a.SigningKid(), "k") {
		t.Fatalf("derived kids %q, %q (%v, %v)", a.SigningKid(), b.SigningKid(), err1, err2)
	}
	if strings.Contains(a.SigningKid(), secret1[:8]) {
		t.Fatal("derived kid reveals the secret")
	}
	if s := token.RandomSecret(); len(s) < token.MinSecretLen || s == token.RandomSecret() {
		t.Fatalf("RandomSecret %q", s)
	}
	if r, err := token.ParseKeyRing(" k1:" + secret1 + " , k2:" + secret2); err != nil || r.SigningKid() != "k1" {
		t.Fatalf("spaced spec: %v", err)
	}
}

// TestKeyRingJSON: the Secrets Manager forms of the ring (one generated key,
// or a rotation's list) sign and verify like the kid:secret spec.
func TestKeyRingJSON(t *testing.T) {
	t.Parallel()
	one, err := token.ParseKeyRing(`{"kid":"k1","secret":"` + secret1 + `"}`)
	if err != nil || one.SigningKid() != "k1" {
		t.Fatalf("single key: %v", err)
	}
	rotated, err := token.ParseKeyRing(` {"keys":[{"kid":"k2","secret":"` + secret2 + `"},{"kid":"k1","secret":"` + secret1 + `"}]}`)
	if err != nil || rotated.SigningKid() != "k2" {
		t.Fatalf("list: %v", err)
	}
	old, err := one.IssueTier1(tier1("ev"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rotated.VerifyTier1(old, "ev", now); err != nil {
		t.Fatalf("a pass signed by the retiring kid: %v", err)
	}
	spec, err := token.ParseKeyRing("k1:" + secret1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spec.VerifyTier1(old, "ev", now); err != nil {
		t.Fatalf("the spec form verifies the JSON form's pass: %v", err)
	}
}

// A pass minted by a host whose clock runs a little ahead must verify; one
// beyond MaxClockSkew must not.
func TestIssuedAtClockSkew(t *testing.T) {
	t.Parallel()
	r := ring(t, "k1:"+secret1)
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		ahead time.Duration
		ok    bool
	}{{0, true}, {10 * time.Second, true}, {token.MaxClockSkew, true}, {token.MaxClockSkew + time.Second, false}} {
		raw, err := r.IssueTier1(token.Tier1{Subject: "r1", EventID: "ev1", Position: 3,
			IssuedAt: now.Add(tc.ahead), ExpiresAt: now.Add(10 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.VerifyTier1(raw, "ev1", now)
		if (err == nil) != tc.ok {
			t.Errorf("iat %v ahead: err = %v, want ok=%v", tc.ahead, err, tc.ok)
		}
	}
}

func TestDerivedKeys(t *testing.T) {
	t.Parallel()
	ring, err := token.ParseKeyRing("new:" + strings.Repeat("n", 32) + ",old:" + strings.Repeat("o", 32))
	if err != nil {
		t.Fatal(err)
	}
	ks := ring.DerivedKeys("label")
	if len(ks) != 2 || len(ks[0]) != 64 || string(ks[0]) == string(ks[1]) {
		t.Fatalf("derived %q: want two distinct 64-hex-digit keys", ks)
	}
	newOnly, _ := token.NewKeyRing("new", []byte(strings.Repeat("n", 32)))
	if string(newOnly.DerivedKeys("label")[0]) != string(ks[0]) {
		t.Error("the signing key's derived key must come first and depend on its secret only")
	}
	if string(ring.DerivedKeys("other")[0]) == string(ks[0]) || strings.Contains(string(ks[0]), "nnnn") {
		t.Error("derived keys must differ per label and not show the secret")
	}
}

func TestPairsRoundTrip(t *testing.T) {
	t.Parallel()
	r, err := token.ParseKeyRing(`{"keys":[{"kid":"k3","secret":"` + strings.Repeat("c", 40) + `"},{"kid":"k1","secret":"` + strings.Repeat("a", 40) + `"},{"kid":"k2","secret":"` + strings.Repeat("b", 40) + `"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	pairs := r.Pairs()
	if len(pairs) != 3 || pairs[0].Kid != "k3" || pairs[1].Kid != "k1" || pairs[2].Kid != "k2" || pairs[0].Secret != strings.Repeat("c", 40) {
		t.Fatalf("pairs %+v: want the signing key first, then by kid", pairs)
	}
	spec, err := token.RingJSON(pairs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := token.ParseKeyRing(spec)
	if err != nil || back.SigningKid() != "k3" || len(back.Pairs()) != 3 {
		t.Fatalf("RingJSON %s: %v", spec, err)
	}
}
