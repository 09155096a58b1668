package docs

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vwr-go/vwr/internal/token"
)

// exampleFiles are the verification examples gate.md shows, by language.
var exampleFiles = map[string]string{
	"js":     "gate-examples/verify-entry.mjs",
	"python": "gate-examples/verify_entry.py",
	"java":   "gate-examples/VerifyEntry.java",
}

// TestGateDocShowsTheExamples: every example in gate.md is the tested file,
// character for character, so the page cannot drift from what runs.
func TestGateDocShowsTheExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("gate.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```(js|python|java)\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if _, seen := blocks[m[1]]; !seen {
			blocks[m[1]] = m[2]
		}
	}
	for lang, file := range exampleFiles {
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if blocks[lang] != string(want) {
			t.Errorf("gate.md's first %s block is not %s; copy the file into the page", lang, file)
		}
	}
}

// entryVector is one token and what vwr's own verifier says of it.
type entryVector struct {
	name, token, event string
}

// entryVectors mints tokens valid and broken in every way the verification
// rules care about, signed with secret.
func entryVectors(t *testing.T, secret string) []entryVector {
	t.Helper()
	now := time.Now()
	keys, err := token.NewKeyRing("", []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ev, uid string, iat, exp time.Time) string {
		raw, err := keys.IssueEntry(token.Entry{EventID: ev, UserID: uid, IssuedAt: iat, ExpiresAt: exp})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	sign := func(m jwt.SigningMethod, key []byte, claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(m, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	claims := func(change map[string]any) jwt.MapClaims {
		c := jwt.MapClaims{"iss": token.Issuer, "aud": []string{token.AudienceEntry}, "sub": "E1", "uid": "alice",
			"jti": "j", "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix()}
		for k, v := range change {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	enc := base64.RawURLEncoding.EncodeToString
	algNone := enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(mustJSON(t, claims(nil))) + "."
	tier1, err := keys.IssueTier1(token.Tier1{Subject: "alice", EventID: "E1", Position: 3, IssuedAt: now, ExpiresAt: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	valid := issue("E1", "alice", now.Add(-time.Minute), now.Add(2*time.Minute))
	return []entryVector{
		{"valid", valid, "E1"},
		{"valid, Korean user id", issue("E1", "김민지", now, now.Add(time.Minute)), "E1"},
		{"iat 20 s ahead (within the skew)", issue("E1", "alice", now.Add(20*time.Second), now.Add(time.Minute)), "E1"},
		{"iat 90 s ahead", issue("E1", "alice", now.Add(90*time.Second), now.Add(3*time.Minute)), "E1"},
		{"expired 2 s ago", issue("E1", "alice", now.Add(-time.Minute), now.Add(-2*time.Second)), "E1"},
		{"another event", valid, "E2"},
		{"another secret", sign(jwt.SigningMethodHS256, []byte(secret+"-other"), claims(nil)), "E1"},
		{"HS512 with the right secret", sign(jwt.SigningMethodHS512, []byte(secret), claims(nil)), "E1"},
		{"alg none", algNone, "E1"},
		{"a Tier 1 pass", tier1, "E1"},
		{"wrong issuer", sign(jwt.SigningMethodHS256, []byte(secret), claims(map[string]any{"iss": "someone"})), "E1"},
		{"no exp", sign(jwt.SigningMethodHS256, []byte(secret), claims(map[string]any{"exp": nil})), "E1"},
		{"no iat", sign(jwt.SigningMethodHS256, []byte(secret), claims(map[string]any{"iat": nil})), "E1"},
		{"no uid", sign(jwt.SigningMethodHS256, []byte(secret), claims(map[string]any{"uid": nil})), "E1"},
		{"empty uid", sign(jwt.SigningMethodHS256, []byte(secret), claims(map[string]any{"uid": ""})), "E1"},
		{"tampered payload", tamper(valid, enc(mustJSON(t, claims(map[string]any{"uid": "mallory"})))), "E1"},
	}
}

// tamper swaps a token's payload, keeping its header and signature.
func tamper(tok, payload string) string {
	parts := strings.Split(tok, ".")
	return parts[0] + "." + payload + "." + parts[2]
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGateExamplesAgreeWithVWR runs the Node (jose) and Python (PyJWT)
// examples of gate.md on every vector and checks that each accepts exactly
// what vwr's own verifier accepts, with the same user id.
func TestGateExamplesAgreeWithVWR(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not found: install Node.js 20+ (see the README)")
	}
	nodeModules := filepath.Join(root, "e2e", "node_modules")
	if _, err := os.Stat(filepath.Join(nodeModules, "jose", "package.json")); err != nil {
		t.Fatalf("jose is not installed in e2e/node_modules: run `make testenv`")
	}
	python := filepath.Join(root, ".venv", "bin", "python")
	if out, err := exec.Command(python, "-c", "import jwt").CombinedOutput(); err != nil {
		t.Fatalf("PyJWT is not installed in .venv (%v: %s): run `make testenv`", err, out)
	}
	// Node resolves "jose" from the script's folder: run a copy beside a
	// link to e2e's node_modules.
	dir := t.TempDir()
	if err := os.Symlink(nodeModules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(exampleFiles["js"])
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "verify-entry.mjs")
	if err := os.WriteFile(script, js, 0o644); err != nil {
		t.Fatal(err)
	}
	runners := map[string][]string{
		"node (jose)":    {node, script},
		"python (PyJWT)": {python, exampleFiles["python"]},
	}

	secret := token.RandomSecret()
	keys, _ := token.NewKeyRing("", []byte(secret))
	accepted := 0
	for _, v := range entryVectors(t, secret) {
		e, err := keys.VerifyEntry(v.token, v.event, time.Now())
		wantOK := err == nil
		if wantOK {
			accepted++
		}
		for name, argv := range runners {
			cmd := exec.Command(argv[0], append(argv[1:], v.token, v.event)...)
			cmd.Env = append(os.Environ(), "QUEUE_ENTRY_TOKEN_SECRET="+secret)
			out, _ := cmd.Output()
			var got struct {
				OK    bool   `json:"ok"`
				UID   string `json:"uid"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Errorf("%s on %q: no JSON answer: %q", name, v.name, out)
				continue
			}
			if got.OK != wantOK || (wantOK && got.UID != e.UserID) {
				t.Errorf("%s on %q: ok=%v uid=%q (%s); vwr says ok=%v uid=%q (%v)", name, v.name, got.OK, got.UID, got.Error, wantOK, e.UserID, err)
			}
		}
	}
	if accepted != 3 {
		t.Fatalf("vwr accepted %d vectors, want the 3 valid ones; the vectors are broken", accepted)
	}
}
