package altcha

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

var (
	testKey = []byte("altcha-test-key-0123456789abcdef")
	oldKey  = []byte("altcha-old-key-0123456789abcdef!")
	t0      = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
)

func tierOne(t *testing.T, key []byte, number, maxNumber int64, expires time.Time) Challenge {
	t.Helper()
	ch, err := Create(key, Options{MaxNumber: maxNumber, Number: number, Params: []Param{{"event", "demo"}}, Expires: expires})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestCreateShape(t *testing.T) {
	t.Parallel()
	ch := tierOne(t, testKey, 0, 1000, t0.Add(time.Minute))
	if ch.Algorithm != Algorithm || ch.MaxNumber != 1000 || !isHex64(ch.Challenge) || !isHex64(ch.Signature) {
		t.Fatalf("challenge %+v", ch)
	}
	// 24 random hex digits, then the parameters in order, then '&'.
	rnd, q, ok := strings.Cut(ch.Salt, "?")
	if !ok || len(rnd) != 2*DefaultSaltBytes || q != "event=demo&expires=1795341660&" {
		t.Fatalf("salt %q", ch.Salt)
	}
	if again := tierOne(t, testKey, 0, 1000, t0.Add(time.Minute)); again.Salt == ch.Salt {
		t.Error("two challenges share a salt: the random part is not random")
	}
}

func TestCreateRefuses(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{
		{MaxNumber: 0},
		{MaxNumber: MaxNumber + 1},
		{MaxNumber: 10, Number: 11},
		{MaxNumber: 10, Salt: strings.Repeat("a", MaxSaltLen)},
		{MaxNumber: 10, Params: []Param{{ParamMaxNumber, "9"}}},
		{MaxNumber: 10, Params: []Param{{ParamMaxNumber, "010"}}},
	} {
		if _, err := Create(testKey, o); err == nil {
			t.Errorf("Create(%+v) accepted", o)
		}
	}
}

// TestRandomNumberRange: the secret is drawn from [1, maxnumber], as
// altcha-lib draws it, so a counting client always finds it.
func TestRandomNumberRange(t *testing.T) {
	t.Parallel()
	seen := map[int64]bool{}
	for range 400 {
		ch, err := Create(testKey, Options{MaxNumber: 3})
		if err != nil {
			t.Fatal(err)
		}
		n, ok := Solve(ch.Challenge, ch.Salt, 3)
		if !ok || n < 1 || n > 3 {
			t.Fatalf("number %d (found %v) outside [1, 3]", n, ok)
		}
		seen[n] = true
	}
	if len(seen) != 3 {
		t.Errorf("numbers drawn: %v, want all of 1, 2, 3", seen)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	exp := t0.Add(5 * time.Minute)
	ch := tierOne(t, testKey, 321, 1000, exp)
	good := ch.Payload(321)
	forged, _ := Create([]byte("a forger's own key, 32 bytes long"), Options{MaxNumber: 1000, Number: 321, Params: []Param{{"event", "demo"}}, Expires: exp})
	cases := []struct {
		name string
		p    Payload
		keys [][]byte
		now  time.Time
		want error
	}{
		{"valid", good, [][]byte{testKey}, t0, nil},
		{"valid with the old key listed too", good, [][]byte{oldKey, testKey}, t0, nil},
		{"valid one second before expiry", good, [][]byte{testKey}, exp.Add(-time.Second), nil},
		{"expired at the second", good, [][]byte{testKey}, exp, ErrExpired},
		{"expired long ago", good, [][]byte{testKey}, exp.Add(time.Hour), ErrExpired},
		{"signed with a key the server does not hold", forged.Payload(321), [][]byte{testKey}, t0, ErrSignature},
		{"no keys at all", good, nil, t0, ErrSignature},
		{"wrong number", ch.Payload(320), [][]byte{testKey}, t0, ErrSolution},
		{"a challenge swapped for another", func() Payload { p := good; p.Challenge = forged.Challenge; return p }(), [][]byte{testKey}, t0, ErrSignature},
		{"expiry pushed out in the salt", func() Payload { p := good; p.Salt = strings.Replace(p.Salt, "expires=", "expires=9", 1); return p }(), [][]byte{testKey}, t0, ErrSolution},
		{"expires given twice", func() Payload { p := good; p.Salt = strings.TrimSuffix(p.Salt, "&") + "&expires=1&"; return p }(), [][]byte{testKey}, t0, ErrMalformed},
		{"expires not a number", func() Payload { p := good; p.Salt = "ab?expires=soon&"; return p }(), [][]byte{testKey}, t0, ErrMalformed},
		{"bad escape in the parameters", func() Payload { p := good; p.Salt = "ab?event=%zz&"; return p }(), [][]byte{testKey}, t0, ErrMalformed},
		{"number above the limit", func() Payload { p := good; p.Number = MaxNumber + 1; return p }(), [][]byte{testKey}, t0, ErrMalformed},
		{"empty salt", func() Payload { p := good; p.Salt = ""; return p }(), [][]byte{testKey}, t0, ErrMalformed},
		{"salt too long", func() Payload { p := good; p.Salt = strings.Repeat("a", MaxSaltLen) + "&"; return p }(), [][]byte{testKey}, t0, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v, err := Verify(c.p, c.keys, c.now)
			if !errors.Is(err, c.want) || (c.want != nil && !errors.Is(err, ErrInvalid)) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
			if c.want == nil && (v.Params.Get("event") != "demo" || !v.Expires.Equal(exp)) {
				t.Errorf("verified %+v", v)
			}
		})
	}
}

// signed makes the challenge a signer would for salt and number (Create
// refuses salts that lie about their maxnumber; a forger does not ask it).
func signed(key []byte, salt string, number int64) Payload {
	ch := hashHex(salt, number)
	return Payload{Algorithm: Algorithm, Challenge: ch, Number: number, Salt: salt, Signature: sign(key, ch)}
}

// TestVerifyMaxNumber: the difficulty a challenge was issued at travels in
// its signed salt, and Verify reports it. The JSON maxnumber is unsigned:
// a solution of an easy challenge cannot claim a harder one, and a number
// above the signed bound is no solution of it.
func TestVerifyMaxNumber(t *testing.T) {
	t.Parallel()
	exp := t0.Add(5 * time.Minute)
	ch, err := Create(testKey, Options{MaxNumber: 1000, Number: 321, Params: []Param{{"event", "demo"}, {ParamMaxNumber, "1000"}}, Expires: exp})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(ch.Salt, "?event=demo&maxnumber=1000&expires=1795341900&") {
		t.Fatalf("salt %q", ch.Salt)
	}
	v, err := Verify(ch.Payload(321), [][]byte{testKey}, t0)
	if err != nil || v.MaxNumber != 1000 {
		t.Fatalf("Verify: %+v, %v; want maxnumber 1000", v, err)
	}
	if v, err := Verify(tierOne(t, testKey, 5, 10, exp).Payload(5), [][]byte{testKey}, t0); err != nil || v.MaxNumber != 0 {
		t.Fatalf("a salt without maxnumber: %+v, %v; want 0", v, err)
	}
	raised := ch.Payload(321)
	raised.Salt = strings.Replace(raised.Salt, "maxnumber=1000", "maxnumber=9000", 1)
	for name, c := range map[string]struct {
		p    Payload
		want error
	}{
		"maxnumber raised in the salt":  {raised, ErrSolution},
		"number above the signed bound": {signed(testKey, "ab?maxnumber=5&", 7), ErrSolution},
		"maxnumber given twice":         {signed(testKey, "ab?maxnumber=5&maxnumber=9&", 3), ErrMalformed},
		"maxnumber zero":                {signed(testKey, "ab?maxnumber=0&", 0), ErrMalformed},
		"maxnumber with a leading zero": {signed(testKey, "ab?maxnumber=05&", 3), ErrMalformed},
		"maxnumber not a number":        {signed(testKey, "ab?maxnumber=lots&", 3), ErrMalformed},
		"maxnumber above the limit":     {signed(testKey, "ab?maxnumber=1099511627777&", 3), ErrMalformed},
		"maxnumber negative":            {signed(testKey, "ab?maxnumber=-5&", 3), ErrMalformed},
	} {
		if _, err := Verify(c.p, [][]byte{testKey}, t0); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if v, err := Verify(signed(testKey, "ab?maxnumber=5&", 5), [][]byte{testKey}, t0); err != nil || v.MaxNumber != 5 {
		t.Fatalf("number at the signed bound: %+v, %v", v, err)
	}
}

// TestVerifyWithoutExpiry: a salt with no expires parameter never expires
// here; Tier 1 only issues salts with one and refuses others itself.
func TestVerifyWithoutExpiry(t *testing.T) {
	t.Parallel()
	ch, err := Create(testKey, Options{MaxNumber: 50, Number: 5})
	if err != nil {
		t.Fatal(err)
	}
	v, err := Verify(ch.Payload(5), [][]byte{testKey}, t0.Add(100*365*24*time.Hour))
	if err != nil || !v.Expires.IsZero() || len(v.Params) != 0 {
		t.Fatalf("Verify: %+v, %v", v, err)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	ch := tierOne(t, testKey, 77, 100, t0.Add(time.Minute))
	p := ch.Payload(77)
	h := p.Encode()
	raw, _ := base64.StdEncoding.DecodeString(h)
	if strings.Contains(string(raw), `\u0026`) || !strings.HasPrefix(string(raw), `{"algorithm":"SHA-256","challenge":"`) {
		t.Errorf("encoded JSON %s: want the widget's key order and '&' unescaped", raw)
	}
	got, err := Decode(h)
	if err != nil || got != p {
		t.Fatalf("Decode(Encode(p)) = %+v, %v", got, err)
	}
	// The widget adds "took"; extra fields are ignored.
	extra := base64.StdEncoding.EncodeToString([]byte(strings.TrimSuffix(string(raw), "}") + `,"took":1234,"test":false}`))
	if got, err := Decode(extra); err != nil || got != p {
		t.Fatalf("Decode with took: %+v, %v", got, err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for name, h := range map[string]string{
		"empty":             "",
		"too long":          strings.Repeat("A", MaxPayloadLen+4),
		"url-safe base64":   strings.NewReplacer("+", "-", "/", "_").Replace(b64(`{"algorithm":"SHA-256","challenge":"??>","number":1,"salt":"a&","signature":"x"}`)),
		"null":              b64(`null`),
		"string":            b64(`"x"`),
		"number null":       b64(`{"algorithm":"SHA-256","challenge":"","number":null,"salt":"","signature":""}`),
		"number exponent":   b64(`{"algorithm":"SHA-256","challenge":"","number":1e3,"salt":"","signature":""}`),
		"number too big":    b64(`{"algorithm":"SHA-256","challenge":"","number":99999999999999999999,"salt":"","signature":""}`),
		"algorithm number":  b64(`{"algorithm":256,"challenge":"","number":1,"salt":"","signature":""}`),
		"missing algorithm": b64(`{"challenge":"","number":1,"salt":"","signature":""}`),
		"truncated":         b64(`{"algorithm":"SHA-256",`),
	} {
		if _, err := Decode(h); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Decode = %v, want ErrMalformed", name, err)
		}
	}
}

// TestEncodeParams: the salt's parameters are serialized as
// URLSearchParams does, and read back by net/url unchanged.
func TestEncodeParams(t *testing.T) {
	t.Parallel()
	ps := []Param{{"event", "a_b-c.d"}, {"note", "x y*~é&="}}
	got := encodeParams(ps)
	if want := "event=a_b-c.d&note=x+y*%7E%C3%A9%26%3D"; got != want {
		t.Fatalf("encodeParams = %q, want %q", got, want)
	}
	v, err := url.ParseQuery(got)
	if err != nil || v.Get("note") != "x y*~é&=" || v.Get("event") != "a_b-c.d" {
		t.Fatalf("ParseQuery(%q) = %v, %v", got, v, err)
	}
}

func TestSolveNotFound(t *testing.T) {
	t.Parallel()
	ch := tierOne(t, testKey, 90, 100, t0)
	if n, ok := Solve(ch.Challenge, ch.Salt, 89); ok {
		t.Fatalf("Solve below the number found %d", n)
	}
	if _, ok := Solve("zz", ch.Salt, 100); ok {
		t.Fatal("Solve accepted a malformed challenge")
	}
}

// FuzzDecodeVerify: no header makes Decode or Verify panic, and whatever is
// accepted really is a solution signed with the key, for the salt given.
func FuzzDecodeVerify(f *testing.F) {
	ch, _ := Create(testKey, Options{MaxNumber: 100, Number: 42, Params: []Param{{"event", "demo"}}, Expires: t0.Add(time.Hour)})
	f.Add(ch.Payload(42).Encode())
	f.Add(ch.Payload(41).Encode())
	f.Add("")
	f.Add("e30=")
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"algorithm":"SHA-256","challenge":"` + ch.Challenge + `","number":42,"salt":"` + ch.Salt + `","signature":"` + ch.Signature + `","took":1}`)))
	f.Fuzz(func(t *testing.T, header string) {
		p, err := Decode(header)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode error %v is not ErrMalformed", err)
			}
			return
		}
		if _, err := Verify(p, [][]byte{testKey}, t0); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Verify error %v is not ErrInvalid", err)
			}
			return
		}
		if hashHex(p.Salt, p.Number) != p.Challenge || !signedByOneOf([][]byte{testKey}, p.Challenge, p.Signature) || !strings.HasSuffix(p.Salt, "&") {
			t.Fatalf("accepted %+v, which is not a signed solution", p)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	ch, _ := Create(testKey, Options{MaxNumber: 1000, Number: 500, Params: []Param{{"event", "demo"}}, Expires: t0.Add(time.Hour)})
	h := ch.Payload(500).Encode()
	b.ReportAllocs()
	for b.Loop() {
		p, err := Decode(h)
		if err == nil {
			_, err = Verify(p, [][]byte{testKey}, t0)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSolve is the native solver's speed: ns/op is one hash.
func BenchmarkSolve(b *testing.B) {
	ch, _ := Create(testKey, Options{MaxNumber: 1 << 30, Number: 1 << 30, Params: []Param{{"event", "demo"}}, Expires: t0.Add(time.Hour)})
	b.ResetTimer()
	Solve(ch.Challenge, ch.Salt, int64(b.N)-1)
}
