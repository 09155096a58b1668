package altcha

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the Go-made and refused entries of testdata/vectors.json (the altcha-lib-made ones are kept)")

// vectorFile is testdata/vectors.json, shared with e2e/altcha.test.js (Node,
// altcha-lib) and e2e/pow.test.js (Chromium, the page's solver).
type vectorFile struct {
	Comment    string         `json:"comment"`
	HMACKey    string         `json:"hmacKey"`
	Now        time.Time      `json:"now"`
	Challenges []vectorMade   `json:"challenges"`
	Refused    []vectorRefuse `json:"refused"`
}

// vectorMade is one challenge, made by Go or by altcha-lib, that every
// implementation must re-make byte for byte, solve to the same number and
// accept as the same payload.
type vectorMade struct {
	Name    string        `json:"name"`
	MadeBy  string        `json:"madeBy"` // "go" or "altcha-lib"
	Options vectorOptions `json:"options"`
	Want    Challenge     `json:"challenge"`
	Payload string        `json:"payload"`
}

type vectorOptions struct {
	Salt      string      `json:"salt"`
	Number    int64       `json:"number"`
	MaxNumber int64       `json:"maxnumber"`
	Params    [][2]string `json:"params"`
	Expires   int64       `json:"expires"` // unix seconds; 0: none
}

func (o vectorOptions) options() Options {
	opts := Options{Salt: o.Salt, Number: o.Number, MaxNumber: o.MaxNumber}
	for _, p := range o.Params {
		opts.Params = append(opts.Params, Param{p[0], p[1]})
	}
	if o.Expires != 0 {
		opts.Expires = time.Unix(o.Expires, 0)
	}
	return opts
}

// vectorRefuse is an Altcha header the server must refuse, with the reason.
// LibAccepts records where altcha-lib's verifySolution is more lenient
// (vwr only accepts what it issues).
type vectorRefuse struct {
	Name       string `json:"name"`
	Payload    string `json:"payload"`
	Want       string `json:"want"` // malformed, signature, solution or expired
	LibAccepts bool   `json:"libAccepts"`
}

var refusal = map[string]error{
	"malformed": ErrMalformed, "signature": ErrSignature, "solution": ErrSolution, "expired": ErrExpired,
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Challenges) < 8 || len(f.Refused) < 12 {
		t.Fatalf("vectors.json holds %d challenges and %d refusals; the file is truncated", len(f.Challenges), len(f.Refused))
	}
	return f
}

// TestVectors: every challenge of the shared file, whoever made it, is
// re-made identically by Create, solved to its number, encoded to the same
// header and verified; every refused header is refused for its reason.
func TestVectors(t *testing.T) {
	t.Parallel()
	if *update {
		writeVectors(t)
	}
	f := loadVectors(t)
	key := []byte(f.HMACKey)
	made := map[string]int{}
	for _, v := range f.Challenges {
		made[v.MadeBy]++
		got, err := Create(key, v.Options.options())
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if got != v.Want {
			t.Errorf("%s: Create = %+v, want %+v", v.Name, got, v.Want)
		}
		if n, ok := Solve(v.Want.Challenge, v.Want.Salt, v.Want.MaxNumber); !ok || n != v.Options.Number {
			t.Errorf("%s: Solve = %d, %v; want %d", v.Name, n, ok, v.Options.Number)
		}
		if enc := v.Want.Payload(v.Options.Number).Encode(); enc != v.Payload {
			t.Errorf("%s: Encode = %s, want %s", v.Name, enc, v.Payload)
		}
		p, err := Decode(v.Payload)
		if err != nil {
			t.Fatalf("%s: Decode: %v", v.Name, err)
		}
		if _, err := Verify(p, [][]byte{key}, f.Now); err != nil {
			t.Errorf("%s: Verify: %v", v.Name, err)
		}
	}
	if made["go"] < 4 || made["altcha-lib"] < 4 {
		t.Errorf("want challenges made by both implementations, got %v", made)
	}
	for _, v := range f.Refused {
		err := decodeVerify(v.Payload, [][]byte{key}, f.Now)
		if !errors.Is(err, refusal[v.Want]) {
			t.Errorf("%s: got %v, want %s", v.Name, err, v.Want)
		}
	}
}

func decodeVerify(header string, keys [][]byte, now time.Time) error {
	p, err := Decode(header)
	if err != nil {
		return err
	}
	_, err = Verify(p, keys, now)
	return err
}

// writeVectors rewrites the Go-made challenges and the refusals, keeping
// the altcha-lib-made challenges as altcha-lib made them.
func writeVectors(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	key := []byte(f.HMACKey)
	far := int64(4102444800) // 2100-01-01
	goMade := []struct {
		name string
		o    vectorOptions
	}{
		{"go: event, maxnumber and expires, as Tier 1 issues them", vectorOptions{Salt: "5f0c1d2e3a4b5c6d7e8f9012", Number: 2718, MaxNumber: 4000, Params: [][2]string{{"event", "concert-2026"}, {ParamMaxNumber, "4000"}}, Expires: far}},
		{"go: a salt whose parameters fill one whole SHA-256 block", vectorOptions{Salt: "00112233445566778899aabbccddeeff00112233", Number: 999, MaxNumber: 1000, Params: [][2]string{{"event", "e"}}, Expires: far}},
		{"go: a long event id (two salt blocks before the number)", vectorOptions{Salt: "abcdefabcdefabcdefabcdef", Number: 1, MaxNumber: 2, Params: [][2]string{{"event", "E_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"}}, Expires: far}},
		{"go: no parameters", vectorOptions{Salt: "0a0b0c", Number: 100, MaxNumber: 100}},
		{"go: parameters that need form encoding", vectorOptions{Salt: "beef", Number: 55, MaxNumber: 60, Params: [][2]string{{"k ey", "v&a=l~ue*"}}, Expires: far}},
	}
	var keep []vectorMade
	for _, v := range f.Challenges {
		if v.MadeBy != "go" {
			keep = append(keep, v)
		}
	}
	for _, g := range goMade {
		ch, err := Create(key, g.o.options())
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, vectorMade{Name: g.name, MadeBy: "go", Options: g.o, Want: ch, Payload: ch.Payload(g.o.Number).Encode()})
	}
	f.Challenges = keep

	ok := keep[len(keep)-5] // the Go-made "as Tier 1 issues them"
	good := ok.Want.Payload(ok.Options.Number)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	with := func(change func(*Payload)) string { p := good; change(&p); return p.Encode() }
	other, _ := Create([]byte("another key entirely, 32 bytes.."), ok.Options.options())
	expired := ok.Options
	expired.Expires = 1700000000
	expiredCh, _ := Create(key, expired.options())
	unsuffixed, _ := Create(key, vectorOptions{Salt: "cafe", Number: 3, MaxNumber: 10}.options())
	// Salts that lie about their maxnumber, which Create refuses to make.
	lying, _ := Create(key, vectorOptions{Salt: "cafe?maxnumber=5", Number: 7, MaxNumber: 10}.options())
	twice, _ := Create(key, vectorOptions{Salt: "cafe?maxnumber=10&maxnumber=5", Number: 3, MaxNumber: 10}.options())
	f.Refused = []vectorRefuse{
		{Name: "signed with another key", Payload: other.Payload(ok.Options.Number).Encode(), Want: "signature"},
		{Name: "signature of another challenge", Payload: with(func(p *Payload) { p.Signature = keep[0].Want.Signature }), Want: "signature"},
		{Name: "wrong number", Payload: with(func(p *Payload) { p.Number++ }), Want: "solution"},
		{Name: "event in the salt changed", Payload: with(func(p *Payload) { p.Salt = p.Salt[:24] + "?event=other-event&expires=4102444800&" }), Want: "solution"},
		{Name: "expired", Payload: expiredCh.Payload(ok.Options.Number).Encode(), Want: "expired"},
		{Name: "algorithm SHA-1", Payload: with(func(p *Payload) { p.Algorithm = "SHA-1" }), Want: "malformed"},
		{Name: "algorithm in lower case (altcha-lib upper-cases it)", Payload: with(func(p *Payload) { p.Algorithm = "sha-256" }), Want: "malformed", LibAccepts: true},
		{Name: "challenge in upper case", Payload: with(func(p *Payload) { p.Challenge = upper(p.Challenge) }), Want: "malformed"},
		{Name: "salt without its closing & (altcha-lib adds it back)", Payload: unsuffixed.Payload(3).withSalt("cafe").Encode(), Want: "malformed", LibAccepts: true},
		{Name: "number as a string (altcha-lib concatenates it all the same)", Payload: b64(`{"algorithm":"SHA-256","challenge":"` + good.Challenge + `","number":"2718","salt":"` + good.Salt + `","signature":"` + good.Signature + `"}`), Want: "malformed", LibAccepts: true},
		{Name: "fractional number", Payload: b64(`{"algorithm":"SHA-256","challenge":"` + good.Challenge + `","number":2718.5,"salt":"` + good.Salt + `","signature":"` + good.Signature + `"}`), Want: "malformed"},
		{Name: "negative number", Payload: with(func(p *Payload) { p.Number = -1 }), Want: "malformed"},
		{Name: "missing signature", Payload: b64(`{"algorithm":"SHA-256","challenge":"` + good.Challenge + `","number":2718,"salt":"` + good.Salt + `"}`), Want: "malformed"},
		{Name: "not base64", Payload: "not base64!", Want: "malformed"},
		{Name: "base64 of something that is not JSON", Payload: b64("altcha"), Want: "malformed"},
		{Name: "a JSON array", Payload: b64(`[1,2,3]`), Want: "malformed"},
		{Name: "trailing data after the object", Payload: b64(`{"algorithm":"SHA-256","challenge":"` + good.Challenge + `","number":2718,"salt":"` + good.Salt + `","signature":"` + good.Signature + `"} {}`), Want: "malformed"},
		{Name: "unpadded base64 (atob takes it)", Payload: trimPad(good.Encode()), Want: "malformed", LibAccepts: true},
		{Name: "salt with a control character", Payload: with(func(p *Payload) { p.Salt = "ab\ncd&" }), Want: "malformed"},
		{Name: "maxnumber raised in the signed salt", Payload: with(func(p *Payload) { p.Salt = strings.Replace(p.Salt, "maxnumber=4000", "maxnumber=8000", 1) }), Want: "solution"},
		{Name: "number above the salt's maxnumber (altcha-lib does not read it)", Payload: lying.Payload(7).Encode(), Want: "solution", LibAccepts: true},
		{Name: "maxnumber given twice (altcha-lib does not read it)", Payload: twice.Payload(3).Encode(), Want: "malformed", LibAccepts: true},
	}
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/vectors.json", append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (p Payload) withSalt(s string) Payload { p.Salt = s; return p }

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func trimPad(s string) string {
	for len(s) > 0 && s[len(s)-1] == '=' {
		s = s[:len(s)-1]
	}
	return s
}

// TestVectorFileShape keeps the JSON the other languages read exactly as
// this package writes it (no field lost to a typo on either side).
func TestVectorFileShape(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var loose map[string]any
	if err := json.Unmarshal(b, &loose); err != nil {
		t.Fatal(err)
	}
	f := loadVectors(t)
	again, _ := json.Marshal(f)
	var strict map[string]any
	_ = json.Unmarshal(again, &strict)
	if !reflect.DeepEqual(loose, strict) {
		t.Error("testdata/vectors.json has fields this test does not read (or lacks some): rewrite it with -update")
	}
}
