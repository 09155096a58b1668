package httpapi_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/testenv"
)

// spec is docs/openapi.yaml read as lines. The repo has no YAML module, and
// the checks below only need the two indentation levels OpenAPI fixes.
type spec []string

func loadSpec(t *testing.T) spec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// block returns the lines nested under the line equal to head (after
// trimming) at the given indentation, searching from within.
func (s spec) block(head string, indent int) spec {
	for i, l := range s {
		if indentOf(l) == indent && strings.TrimSpace(l) == head {
			var out spec
			for _, m := range s[i+1:] {
				if strings.TrimSpace(m) != "" && indentOf(m) <= indent {
					break
				}
				out = append(out, m)
			}
			return out
		}
	}
	return nil
}

// keys lists the mapping keys at exactly indent.
func (s spec) keys(indent int) []string {
	var out []string
	for _, l := range s {
		if indentOf(l) == indent && strings.HasSuffix(strings.TrimSpace(l), ":") && !strings.HasPrefix(strings.TrimSpace(l), "-") {
			out = append(out, strings.Trim(strings.TrimSuffix(strings.TrimSpace(l), ":"), `'"`))
		}
	}
	return out
}

// TestOpenAPIMatchesRoutes checks that every route the mux serves is in
// docs/openapi.yaml and every operation there is served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	sp := loadSpec(t)
	paths := sp.block("paths:", 0)
	var documented []string
	for _, p := range paths.keys(2) {
		for _, m := range paths.block(p+":", 2).keys(4) {
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	b := setup(t, options{adminToken: adminToken, userHeader: "X-User-Id"})
	served := b.api.Routes()
	slices.Sort(documented)
	slices.Sort(served)
	if len(documented) == 0 || !slices.Equal(documented, served) {
		t.Fatalf("docs/openapi.yaml and the mux disagree:\n spec: %v\n  mux: %v", documented, served)
	}
}

// TestOpenAPISchemasMatchResponses checks the documented fields of View and
// Stats against real responses.
func TestOpenAPISchemasMatchResponses(t *testing.T) {
	t.Parallel()
	sp := loadSpec(t)
	schemas := sp.block("schemas:", 2)
	props := func(name string) []string {
		p := schemas.block(name+":", 4).block("properties:", 6).keys(8)
		slices.Sort(p)
		return p
	}
	b := setup(t, options{threshold: 1, adminToken: adminToken, userHeader: "X-User-Id"})
	ev := testenv.UniqueID(t)
	active := b.do(t, "POST", "/api/queue/check/"+ev, userHdr("a"), nil)
	queued := b.do(t, "POST", "/api/queue/check/"+ev, userHdr("b"), nil)
	b.clk.Advance(time.Second)
	stats := b.do(t, "GET", "/api/queue/admin/stats/"+ev, bearer(adminToken), nil)
	bodyKeys := func(r reply) []string {
		var k []string
		for key := range r.body {
			k = append(k, key)
		}
		slices.Sort(k)
		return k
	}
	if got, want := bodyKeys(active), props("View"); !slices.Equal(got, want) {
		t.Fatalf("active response fields %v, View schema %v", got, want)
	}
	for _, k := range bodyKeys(queued) {
		if !slices.Contains(props("View"), k) {
			t.Fatalf("queued response field %q not in the View schema", k)
		}
	}
	if got, want := bodyKeys(stats), props("Stats"); !slices.Equal(got, want) {
		t.Fatalf("stats response fields %v, Stats schema %v", got, want)
	}
}
