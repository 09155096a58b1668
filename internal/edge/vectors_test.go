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
	// Want is "pass", "redirect" or "notfound"; Location is set for redirect.
	Want     string `json:"want"`
	Location string `json:"location,omitempty"`
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
	return Vectors{
		Comment: "Minted by internal/edge TestEdgeVectors; run by infra/edge/edge.test.mjs. Keys are test-only.",
		Now:     vectorNow.Unix(),
		Keys:    map[string]string{vecKidCurrent: vecSecretNew, vecKidOld: vecSecretOld},
		Cases: []Vector{
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
			{Name: "dot segments are not returned to", Path: "/events/summer-sale/a/../../../elsewhere", Want: "redirect", Location: toSale},
			{Name: "a double slash is not returned to", Path: "/events/summer-sale//evil.example/x", Want: "redirect", Location: toSale},
			{Name: "an encoded slash is not returned to", Path: "/events/summer-sale/%2F%2Fevil.example", Want: "redirect", Location: toSale},
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
			{Name: "tier as a string", Path: "/events/summer-sale", Cookie: signRaw(t, hs, claims(map[string]any{"tier": "1"}), vecSecretNew), Want: "redirect", Location: toSale},
			{Name: "not a JWT", Path: "/events/summer-sale", Cookie: "not-a-token", Want: "redirect", Location: toSale},
			{Name: "padded segments", Path: "/events/summer-sale", Cookie: parts[0] + "=." + parts[1] + "." + parts[2], Want: "redirect", Location: toSale},
		},
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
	names := map[Action]string{Pass: "pass", Redirect: "redirect", NotFound: "notfound"}
	for _, c := range v.Cases {
		d := Decide(keys, c.Path, c.Query, c.Cookie, time.Unix(v.Now, 0))
		if names[d.Action] != c.Want || d.Location != c.Location {
			t.Errorf("%s: Decide = %s %q, the vector wants %s %q", c.Name, names[d.Action], d.Location, c.Want, c.Location)
		}
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
