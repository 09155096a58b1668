package edge

import (
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCanonical checks the properties the edge relies on, for any path:
// the canonical form is canonical (a second pass changes nothing), has no
// dot segment or doubled slash, and a protected one starts with the prefix
// and carries no encoded slash, backslash or control character.
func FuzzCanonical(f *testing.F) {
	for _, p := range hostilePaths {
		f.Add(p)
	}
	for _, p := range []string{"/", "/events", "/events/", "/a/b/../c/./d/", "/%41%7e%2F%25", "/caf\xc3\xa9", "/a%3bb"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		path, protected, err := Canonical(raw)
		if err != nil {
			return
		}
		again, prot2, err := Canonical(path)
		if err != nil || again != path || prot2 != protected {
			t.Fatalf("Canonical(%q) = %q %v, but Canonical of that = %q %v %v", raw, path, protected, again, prot2, err)
		}
		if strings.Contains(path, "//") || strings.Contains(path+"/", "/./") || strings.Contains(path+"/", "/../") {
			t.Fatalf("Canonical(%q) = %q keeps a dot segment or a doubled slash", raw, path)
		}
		if protected && !strings.HasPrefix(path, ProtectedPrefix) {
			t.Fatalf("Canonical(%q) = %q is protected but not under %s", raw, path, ProtectedPrefix)
		}
		if protected {
			lower := strings.ToLower(path)
			for _, bad := range []string{"%2f", "%5c", "%00", "%0a", "%0d", "%7f"} {
				if strings.Contains(lower, bad) {
					t.Fatalf("Canonical(%q) = %q is protected and holds %s", raw, path, bad)
				}
			}
		}
	})
}

// TestCanonicalAgreesWithTheFunction runs thousands of random paths, built
// from the pieces that matter (escapes of dots, slashes, backslashes and
// the prefix's letters, dot segments, path parameters, case), through this
// package's Canonical and the CloudFront Function's canonical under Node:
// both must give every path the same answer.
func TestCanonicalAgreesWithTheFunction(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not found: install Node.js 20+ (make testenv's prerequisites)")
	}
	pieces := []string{"/", "/", "/", ".", "..", "events", "EVENTS", "Events", "%65", "%45", "vents", "summer-sale", "demo",
		"%2e", "%2E", "%2f", "%2F", "%5c", "\\", ";x", "%25", "%2565", "%00", "%0A", "%7F", "%7e", "~", "%3b", "x", "%", "%g1",
		"%C3%A9", "\xc3\xa9", " ", "?", "#", "%64"}
	starts := []string{"/", "/", "/events/", "/events/demo/", "/EVENTS/", "/%65vents/", "/x/../events/", "/events%2F", "/events"}
	rng := rand.New(rand.NewPCG(19, 2026))
	paths := make([]string, 4000)
	for i := range paths {
		var b strings.Builder
		b.WriteString(starts[rng.IntN(len(starts))])
		for range 1 + rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		paths[i] = b.String()
	}
	type answer struct {
		Path string `json:"path"`
		Prot bool   `json:"prot"`
		Bad  bool   `json:"bad"`
	}
	script := `
const fs = require('fs');
const src = fs.readFileSync(process.argv[1], 'utf8').replace("import cf from 'cloudfront';", '');
const canonical = new Function('cf', 'require', src + '\nreturn canonical;')({ kvs() { return {}; } }, require);
const paths = JSON.parse(fs.readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(paths.map((p) => { const c = canonical(p); return c === null ? { bad: true } : { path: c.path, prot: c.prot }; })));
`
	in, err := json.Marshal(paths)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", script, filepath.Join("..", "..", "infra", "edge", "edge-check.js"))
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var js []answer
	if err := json.Unmarshal(out, &js); err != nil || len(js) != len(paths) {
		t.Fatalf("node answered %d of %d (%v)", len(js), len(paths), err)
	}
	kinds := map[string]int{}
	for i, p := range paths {
		path, prot, err := Canonical(p)
		goAns := answer{Path: path, Prot: prot, Bad: err != nil}
		if goAns.Bad {
			goAns.Path = ""
		}
		if goAns != js[i] {
			t.Errorf("Canonical(%q): Go %+v, JavaScript %+v", p, goAns, js[i])
		}
		switch {
		case goAns.Bad:
			kinds["refused"]++
		case prot:
			kinds["protected"]++
		default:
			kinds["unprotected"]++
		}
	}
	// The generator must reach every outcome, or the comparison proves little.
	for _, k := range []string{"refused", "protected", "unprotected"} {
		if kinds[k] < 100 {
			t.Errorf("only %d %s paths among %d: %v", kinds[k], k, len(paths), kinds)
		}
	}
}
