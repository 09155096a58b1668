package edge

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/token"
)

// The cross-language vectors: this test mints passes (valid and broken in
// every way the rule cares about), checks that Decide gives each the intended
// answer, and keeps them in testdata/edge-vectors.json. The CloudFront
// Function's test (infra/edge/edge.test.mjs, node:test) runs the same file, so
// the Go rule and the JavaScript port must agree on every vector.
//
// Minting is deterministic (fixed clock, fixed keys, HS256 is deterministic),
// so the file is compared, not rewritten; after changing a vector run
//
//	VWR_UPDATE_VECTORS=1 go test ./internal/edge -run TestEdgeVectors
const vectorsFile = "testdata/edge-vectors.json"

// Vectors is the file's shape, read by the JavaScript test too.
type Vectors struct {
	Comment string `json:"comment"`
	// Now is the verification time, Unix seconds.
	Now int64 `json:"now"`
	// Keys is the KeyValueStore's content: kid → HMAC secret.
	Keys  map[string]string `json:"keys"`
	Cases []Vector          `json:"cases"`
}

// Vector is one request and the edge's answer.
type Vector struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Query  string `json:"query"`  // raw query, without "?"
	Cookie string `json:"cookie"` // urr-vwr-token, "" = absent
	// Want is "pass", "redirect", "notfound" or "badrequest"; Location is
	// set for redirect, Forward (the canonical path handed to the origin)
	// for pass.
	Want     string `json:"want"`
	Location string `json:"location,omitempty"`
	Forward  string `json:"forward,omitempty"`
}

var vectorNow = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

const (
	vecKidCurrent = "k2"
	vecKidOld     = "k1"
	vecSecretNew  = "edge-vector-secret-k2-0123456789abcdef"
	vecSecretOld  = "edge-vector-secret-k1-fedcba9876543210"
	vecUnknownKid = "k9"
)

// signRaw signs arbitrary header and claims with HS256 under secret, so the
// vectors can hold tokens the issuer never makes (other tiers, other algs).
func signRaw(t *testing.T, header, claims map[string]any, secret string) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	input := enc(header) + "." + enc(claims)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// signRawOrdered signs claims given as JSON text, keeping key order and duplicates.
func signRawOrdered(t *testing.T, header map[string]any, claimsJSON, secret string) string {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString([]byte(claimsJSON))
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func upper(c map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range c {
		out[strings.ToUpper(k)] = v
	}
	return out
}

func mintVectors(t *testing.T) Vectors {
	t.Helper()
	keys, err := token.ParseKeyRing(vecKidCurrent + ":" + vecSecretNew + "," + vecKidOld + ":" + vecSecretOld)
	if err != nil {
		t.Fatal(err)
	}
	oldOnly, err := token.ParseKeyRing(vecKidOld + ":" + vecSecretOld)
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := token.ParseKeyRing(vecUnknownKid + ":" + vecSecretNew)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(r *token.KeyRing, event string, iat, exp time.Time) string {
		s, err := r.IssueTier1(token.Tier1{Subject: "req-7f3a", EventID: event, Position: 42, IssuedAt: iat, ExpiresAt: exp})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	iat, exp := vectorNow.Add(-time.Minute), vectorNow.Add(9*time.Minute)
	valid := issue(keys, "summer-sale", iat, exp)
	parts := strings.Split(valid, ".")
	claims := func(over map[string]any) map[string]any {
		c := map[string]any{"tier": 1, "eid": "summer-sale", "pos": 42, "iss": "vwr", "aud": []string{"vwr-tier1"},
			"sub": "req-7f3a", "iat": iat.Unix(), "exp": exp.Unix()}
		for k, v := range over {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	hs := map[string]any{"alg": "HS256", "kid": vecKidCurrent, "typ": "JWT"}
	entry, err := keys.IssueEntry(token.Entry{EventID: "summer-sale", UserID: "u1", ID: "jti-1", IssuedAt: iat, ExpiresAt: exp})
	if err != nil {
		t.Fatal(err)
	}
	// Flip one character in the middle of the signature: a different MAC.
	sig := []byte(parts[2])
	if sig[10] == 'A' {
		sig[10] = 'B'
	} else {
		sig[10] = 'A'
	}
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"k2","typ":"JWT"}`)) + "." + parts[1] + "."
	hs512Header := map[string]any{"alg": "HS512", "kid": vecKidCurrent, "typ": "JWT"}

	back := func(event, ret string) string {
		return "/vwr/?event=" + event + "&return=" + ret
	}
	toSale := back("summer-sale", "%2Fevents%2Fsummer-sale")
	v := Vectors{
		Comment: "Minted by internal/edge TestEdgeVectors; run by infra/edge/edge.test.mjs. Keys are test-only.",
		Now:     vectorNow.Unix(),
		Keys:    map[string]string{vecKidCurrent: vecSecretNew, vecKidOld: vecSecretOld},
		Cases: append([]Vector{
			{Name: "unprotected path", Path: "/vwr/", Want: "pass"},
			{Name: "prefix look-alike", Path: "/eventsx/summer-sale", Want: "pass"},
			{Name: "events root", Path: "/events/", Want: "notfound"},
			{Name: "malformed event id", Path: "/events/sale.2026", Cookie: valid, Want: "notfound"},
			{Name: "event id too long", Path: "/events/" + strings.Repeat("a", 65), Want: "notfound"},
			{Name: "valid pass", Path: "/events/summer-sale", Cookie: valid, Want: "pass"},
			{Name: "valid pass below the event", Path: "/events/summer-sale/seats/12", Query: "row=3", Cookie: valid, Want: "pass"},
			{Name: "valid pass signed by the retiring kid", Path: "/events/summer-sale", Cookie: issue(oldOnly, "summer-sale", iat, exp), Want: "pass"},
			{Name: "missing cookie", Path: "/events/summer-sale", Want: "redirect", Location: toSale},
			{Name: "missing cookie keeps the query", Path: "/events/summer-sale/seats", Query: "row=3&col=b%20c", Want: "redirect",
				Location: back("summer-sale", "%2Fevents%2Fsummer-sale%2Fseats%3Frow%3D3%26col%3Db%2520c")},
			// A return path SafeReturn refuses becomes the event's own page.
			{Name: "a raw space in the query is not returned to", Path: "/events/summer-sale/seats", Query: "col=b c", Want: "redirect", Location: toSale},
			{Name: "expired", Path: "/events/summer-sale", Cookie: issue(keys, "summer-sale", vectorNow.Add(-11*time.Minute), vectorNow.Add(-time.Minute)), Want: "redirect", Location: toSale},
			{Name: "expires this second", Path: "/events/summer-sale", Cookie: issue(keys, "summer-sale", iat, vectorNow), Want: "redirect", Location: toSale},
			{Name: "expires next second", Path: "/events/summer-sale", Cookie: issue(keys, "summer-sale", iat, vectorNow.Add(time.Second)), Want: "pass"},
			{Name: "wrong event", Path: "/events/winter-sale", Cookie: valid, Want: "redirect", Location: back("winter-sale", "%2Fevents%2Fwinter-sale")},
			{Name: "bad signature", Path: "/events/summer-sale", Cookie: parts[0] + "." + parts[1] + "." + string(sig), Want: "redirect", Location: toSale},
			{Name: "signature of another token", Path: "/events/summer-sale", Cookie: parts[0] + "." + strings.Split(issue(keys, "winter-sale", iat, exp), ".")[1] + "." + parts[2], Want: "redirect", Location: toSale},
			{Name: "alg none", Path: "/events/summer-sale", Cookie: none, Want: "redirect", Location: toSale},
			{Name: "alg HS512", Path: "/events/summer-sale", Cookie: signRaw(t, hs512Header, claims(nil), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "unknown kid", Path: "/events/summer-sale", Cookie: issue(unknown, "summer-sale", iat, exp), Want: "redirect", Location: toSale},
			{Name: "no kid", Path: "/events/summer-sale", Cookie: signRaw(t, map[string]any{"alg": "HS256", "typ": "JWT"}, claims(nil), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "entry token (audience vwr-entry)", Path: "/events/summer-sale", Cookie: entry, Want: "redirect", Location: toSale},
			{Name: "tier 2 claim", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"tier": 2}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "wrong issuer", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"iss": "evil"}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "audience as a string", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"aud": "vwr-tier1"}), vecSecretNew), Want: "pass"},
			{Name: "no exp", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"exp": nil}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "no iat", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"iat": nil}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "issued too far in the future", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"iat": vectorNow.Add(time.Minute).Unix()}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "issued within the clock skew", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"iat": vectorNow.Add(20 * time.Second).Unix()}), vecSecretNew), Want: "pass"},
			{Name: "not yet valid (nbf)", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"nbf": vectorNow.Add(time.Minute).Unix()}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "no subject", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"sub": nil}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "position 0", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"pos": 0}), vecSecretNew), Want: "redirect", Location: toSale},
			// Go decodes tier and pos into integers: 1.0 or 4.2e1 is a decoding error there.
			{Name: "tier written as 1.0", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"tier": json.RawMessage("1.0")}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "pos written as 4.2e1", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"pos": json.RawMessage("4.2e1")}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "exp with a fraction", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"exp": json.RawMessage(fmt.Sprintf("%d.5", exp.Unix()))}), vecSecretNew), Want: "pass"},
			// Go's decoder matches claim names without regard to case.
			{Name: "claim names in upper case", Path: "/events/summer-sale", Cookie: signRaw(t, hs, upper(claims(nil)), vecSecretNew), Want: "pass"},
			{Name: "upper-case tier 2 after tier 1", Path: "/events/summer-sale", Cookie: signRawOrdered(t, hs, `{"tier":1,"eid":"summer-sale","pos":42,"iss":"vwr","aud":"vwr-tier1","sub":"req-7f3a","iat":`+fmt.Sprint(iat.Unix())+`,"exp":`+fmt.Sprint(exp.Unix())+`,"TIER":2}`, vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "sub spelt with a long s", Path: "/events/summer-sale", Cookie: signRawOrdered(t, hs, `{"tier":1,"eid":"summer-sale","pos":42,"iss":"vwr","aud":"vwr-tier1","ſub":"req-7f3a","iat":`+fmt.Sprint(iat.Unix())+`,"exp":`+fmt.Sprint(exp.Unix())+`}`, vecSecretNew), Want: "pass"},
			{Name: "pos spelt with a long s, written as 4.2e1", Path: "/events/summer-sale", Cookie: signRawOrdered(t, hs, `{"tier":1,"eid":"summer-sale","poſ":4.2e1,"iss":"vwr","aud":"vwr-tier1","sub":"req-7f3a","iat":`+fmt.Sprint(iat.Unix())+`,"exp":`+fmt.Sprint(exp.Unix())+`}`, vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "tier as a string", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"tier": "1"}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "not a JWT", Path: "/events/summer-sale", Cookie: "not-a-token", Want: "redirect", Location: toSale},
			{Name: "padded segments", Path: "/events/summer-sale", Cookie: parts[0] + "=." + parts[1] + "." + parts[2], Want: "redirect", Location: toSale},
		}, encodedPathVectors(valid, toSale, back)...),
	}
	// A path that is already canonical is forwarded as it is.
	for i, c := range v.Cases {
		if c.Want == "pass" && c.Forward == "" {
			v.Cases[i].Forward = c.Path
		}
	}
	return v
}

// encodedPathVectors are the canonical-path cases (Canonical): paths a
// visitor writes by hand to reach a protected page past a prefix check, and
// what the edge makes of each. Every redirect's return is a path the page
// follows unchanged (e2e/pages.test.js runs them in Chromium).
func encodedPathVectors(valid, toSale string, back func(event, ret string) string) []Vector {
	redirect := func(name, path, loc string) Vector {
		return Vector{Name: "encoded: " + name, Path: path, Want: "redirect", Location: loc}
	}
	refuse := func(name, path, cookie string) Vector {
		return Vector{Name: "encoded: " + name, Path: path, Cookie: cookie, Want: "badrequest"}
	}
	notFound := func(name, path string) Vector {
		return Vector{Name: "encoded: " + name, Path: path, Want: "notfound"}
	}
	forward := func(name, path, cookie, to string) Vector {
		return Vector{Name: "encoded: " + name, Path: path, Cookie: cookie, Want: "pass", Forward: to}
	}
	toSeats := back("summer-sale", "%2Fevents%2Fsummer-sale%2Fseats")
	return []Vector{
		// Escaped unreserved characters are the characters themselves.
		redirect("an escaped e in the prefix", "/%65vents/summer-sale", toSale),
		redirect("an escaped e inside the prefix", "/ev%65nts/summer-sale", toSale),
		redirect("the whole prefix escaped, upper-case hex", "/%65%76%65%6E%74%73/summer-sale", toSale),
		redirect("the whole prefix escaped, lower-case hex", "/%65%76%65%6e%74%73/summer-sale", toSale),
		redirect("an escaped letter in the event", "/events/%73ummer-sale", toSale),
		redirect("an escaped hyphen in the event", "/events/summer%2Dsale", toSale),
		redirect("an escaped underscore makes another event", "/events/summer%5Fsale", back("summer_sale", "%2Fevents%2Fsummer_sale")),
		redirect("an escaped letter below the event", "/events/summer-sale/%73eats", toSeats),
		redirect("an escaped tilde below the event", "/events/summer-sale/%7Euser", back("summer-sale", "%2Fevents%2Fsummer-sale%2F~user")),
		redirect("a reserved escape keeps its meaning, hex in upper case", "/events/summer-sale/a%3bb", back("summer-sale", "%2Fevents%2Fsummer-sale%2Fa%253Bb")),
		// The prefix in any case is the prefix; event ids keep their case.
		redirect("the prefix in upper case", "/EVENTS/summer-sale", toSale),
		redirect("the prefix capitalised, with a page below", "/Events/summer-sale/seats", toSeats),
		redirect("an escaped capital E", "/%45VENTS/summer-sale", toSale),
		redirect("event ids are case-sensitive", "/events/Summer-Sale", back("Summer-Sale", "%2Fevents%2FSummer-Sale")),
		// Dot segments and doubled slashes are resolved before the check.
		redirect("a dot-dot segment in front", "/x/../events/summer-sale", toSale),
		redirect("an escaped dot-dot in front", "/x/%2e%2e/events/summer-sale", toSale),
		redirect("an escaped dot-dot in upper case", "/x/%2E%2E/events/summer-sale", toSale),
		redirect("half an escaped dot-dot", "/x/.%2e/events/summer-sale", toSale),
		redirect("a dot segment in front", "/./events/summer-sale", toSale),
		redirect("an escaped dot segment in front", "/%2e/events/summer-sale", toSale),
		redirect("the waiting room's path climbed out of", "/vwr/../events/summer-sale", toSale),
		redirect("a doubled leading slash", "//events/summer-sale", toSale),
		redirect("a doubled slash after the prefix", "/events//summer-sale", toSale),
		redirect("a dot segment after the prefix", "/events/./summer-sale", toSale),
		redirect("a detour through another segment", "/events/x/../summer-sale", toSale),
		redirect("a detour through another event", "/events/winter-sale/../summer-sale", toSale),
		redirect("dot-dots climb to another event", "/events/summer-sale/seats/%2e%2e/%2e%2e/winter-sale", back("winter-sale", "%2Fevents%2Fwinter-sale")),
		redirect("a trailing dot segment", "/events/summer-sale/.", back("summer-sale", "%2Fevents%2Fsummer-sale%2F")),
		redirect("a double slash below the event is merged", "/events/summer-sale//evil.example/x", back("summer-sale", "%2Fevents%2Fsummer-sale%2Fevil.example%2Fx")),
		// What some origin reads as the prefix, written so that this check
		// would not: refused.
		refuse("an encoded slash after the prefix", "/events%2Fsummer-sale", ""),
		refuse("an encoded slash in lower case", "/events%2fsummer-sale", ""),
		refuse("an encoded backslash after the prefix", "/events%5Csummer-sale", ""),
		refuse("a raw backslash after the prefix", "/events\\summer-sale", ""),
		refuse("an encoded slash in front", "/%2Fevents/summer-sale", ""),
		refuse("encoded slashes around a dot-dot in front", "/x%2F..%2Fevents/summer-sale", ""),
		refuse("a path parameter on the prefix", "/events;x/summer-sale", ""),
		refuse("a double-encoded e", "/%2565vents/summer-sale", ""),
		refuse("encoded slashes climbing out of the event", "/events/summer-sale%2F..%2F..%2Fx", ""),
		refuse("encoded slashes below the event", "/events/summer-sale/%2F%2Fevil.example", ""),
		refuse("an encoded backslash below the event", "/events/summer-sale/a%5Cb", ""),
		refuse("an encoded slash below the event, even with a pass", "/events/summer-sale/x%2Fy", valid),
		refuse("an encoded NUL", "/events/summer-sale/%00", ""),
		refuse("encoded CR LF", "/events/summer-sale/%0D%0ASet-Cookie:%20x=1", ""),
		refuse("an encoded DEL", "/events/summer-sale/%7F", ""),
		refuse("a malformed escape", "/events/summer-sale/%zz", ""),
		refuse("a cut-off escape", "/events/summer-sale/%", ""),
		refuse("an IIS-style %u escape", "/%u0065vents/summer-sale", ""),
		refuse("a malformed escape outside the prefix", "/shop/%G1", ""),
		// Not an event id once canonical.
		notFound("a path parameter on the event", "/events/summer-sale;jsessionid=1"),
		notFound("an escaped space after the event", "/events/summer-sale%20"),
		notFound("the prefix in upper case with no event", "/EVENTS/"),
		notFound("dot-dot back to the prefix", "/events/summer-sale/.."),
		// Passed on, at the canonical path.
		forward("an escaped prefix with a pass", "/%65vents/summer-sale", valid, "/events/summer-sale"),
		forward("the prefix in upper case with a pass", "/EVENTS/summer-sale/seats", valid, "/events/summer-sale/seats"),
		forward("escapes everywhere with a pass", "/events/%73ummer-sale/%73eats", valid, "/events/summer-sale/seats"),
		forward("a dot-dot in front with a pass", "/x/../events/summer-sale", valid, "/events/summer-sale"),
		forward("dot-dots out of the prefix", "/events/summer-sale/../../shop/cart", "", "/shop/cart"),
		forward("more dot-dots than segments", "/events/summer-sale/a/../../../elsewhere", "", "/elsewhere"),
		forward("an encoded slash outside the prefix is the site's business", "/shop/a%2Fb", "", "/shop/a%2Fb"),
		forward("an escaped tilde outside the prefix", "/shop/%7euser", "", "/shop/~user"),
		forward("a reserved escape outside the prefix, hex in upper case", "/shop/a%3bb", "", "/shop/a%3Bb"),
		forward("non-ASCII stays escaped", "/shop/caf%c3%a9", "", "/shop/caf%C3%A9"),
		forward("a doubled slash outside the prefix", "/shop//cart", "", "/shop/cart"),
		forward("the prefix without a slash", "/events", "", "/events"),
		forward("the prefix capitalised without a slash", "/Events", "", "/Events"),
	}
}

func TestEdgeVectors(t *testing.T) {
	t.Parallel()
	v := mintVectors(t)
	ring := make([]string, 0, len(v.Keys))
	for _, kid := range []string{vecKidCurrent, vecKidOld} {
		ring = append(ring, kid+":"+v.Keys[kid])
	}
	keys, err := token.ParseKeyRing(strings.Join(ring, ","))
	if err != nil {
		t.Fatal(err)
	}
	names := map[Action]string{Pass: "pass", Redirect: "redirect", NotFound: "notfound", Refuse: "badrequest"}
	encoded := 0
	for _, c := range v.Cases {
		if strings.HasPrefix(c.Name, "encoded: ") {
			encoded++
		}
		d := Decide(keys, c.Path, c.Query, c.Cookie, time.Unix(v.Now, 0))
		forward := ""
		if d.Action == Pass {
			forward = d.Path
		}
		if names[d.Action] != c.Want || d.Location != c.Location || forward != c.Forward {
			t.Errorf("%s: Decide = %s %q → %q, the vector wants %s %q → %q", c.Name, names[d.Action], d.Location, forward, c.Want, c.Location, c.Forward)
		}
	}
	if encoded < 40 {
		t.Errorf("%d encoded-path vectors, the issue asks for at least 40", encoded)
	}
	want, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if os.Getenv("VWR_UPDATE_VECTORS") == "1" {
		if err := os.MkdirAll(filepath.Dir(vectorsFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(vectorsFile)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is missing or out of date (%v); regenerate it: VWR_UPDATE_VECTORS=1 go test ./internal/edge -run TestEdgeVectors", vectorsFile, err)
	}
}
