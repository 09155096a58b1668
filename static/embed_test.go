package static

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := fs.ReadFile(VWR(), name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

// Every /vwr/ asset a page links must be embedded, so the pages never 404 on
// a CDN that serves exactly this folder.
func TestPagesReferenceEmbeddedAssets(t *testing.T) {
	t.Parallel()
	ref := regexp.MustCompile(`(?:src|href)="/vwr/([^"]+)"`)
	imp := regexp.MustCompile(`from '\./([^']+)'`)
	for _, page := range []string{"index.html", "queue.html"} {
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			html := read(t, page)
			refs := ref.FindAllStringSubmatch(html, -1)
			if len(refs) < 2 {
				t.Fatalf("%s links %d assets, want the stylesheet and a module", page, len(refs))
			}
			for _, m := range refs {
				body := read(t, m[1])
				for _, im := range imp.FindAllStringSubmatch(body, -1) {
					read(t, im[1])
				}
			}
			for _, must := range []string{`aria-live="polite"`, "<noscript>", `name="viewport"`, `role="progressbar"`} {
				if !strings.Contains(html, must) {
					t.Errorf("%s lacks %s", page, must)
				}
			}
			if strings.Contains(html, "<script>") || strings.Contains(html, " style=") {
				t.Errorf("%s has inline script or style, which the CSP forbids", page)
			}
		})
	}
}

// Each element id a page's script looks up must exist in that page.
func TestScriptIDsExistInPage(t *testing.T) {
	t.Parallel()
	lookup := regexp.MustCompile(`\$\('([A-Za-z0-9_-]+)'\)`)
	for page, script := range map[string]string{"index.html": "vwr.js", "queue.html": "queue.js"} {
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			html := read(t, page)
			ids := lookup.FindAllStringSubmatch(read(t, script), -1)
			if len(ids) == 0 {
				t.Fatalf("%s looks up no elements", script)
			}
			for _, m := range ids {
				if !strings.Contains(html, `id="`+m[1]+`"`) {
					t.Errorf("%s uses #%s, missing from %s", script, m[1], page)
				}
			}
		})
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	h := Handler("/vwr/")
	tests := []struct {
		path, contentType, contains string
		code                        int
	}{
		{"/vwr/", "text/html", "vwr.js", http.StatusOK},
		{"/vwr/?event=demo", "text/html", "vwr.js", http.StatusOK},
		{"/vwr/queue.html", "text/html", "queue.js", http.StatusOK},
		{"/vwr/vwr.js", "text/javascript", "assign", http.StatusOK},
		{"/vwr/vwr.css", "text/css", "tabular-nums", http.StatusOK},
		{"/vwr/missing.js", "", "", http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.code {
				t.Fatalf("code = %d, want %d", rec.Code, tc.code)
			}
			if tc.code != http.StatusOK {
				return
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
				t.Errorf("Content-Type = %q, want %s", ct, tc.contentType)
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("body lacks %q", tc.contains)
			}
			if !strings.HasPrefix(rec.Header().Get("Cache-Control"), "public, max-age=") {
				t.Errorf("Cache-Control = %q, want public", rec.Header().Get("Cache-Control"))
			}
			if rec.Header().Get("Content-Security-Policy") != ContentSecurityPolicy {
				t.Error("missing CSP")
			}
		})
	}
}

func TestServeFile(t *testing.T) {
	t.Parallel()
	for _, cc := range []string{"", "no-store"} {
		t.Run("cache-control="+cc, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			if cc != "" {
				rec.Header().Set("Cache-Control", cc)
			}
			ServeFile(rec, httptest.NewRequest(http.MethodGet, "/events/demo", nil), "queue.html")
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "/vwr/queue.js") {
				t.Fatalf("code %d, body %.80q", rec.Code, rec.Body.String())
			}
			want := cc
			if want == "" {
				want = CacheControl("queue.html")
			}
			if got := rec.Header().Get("Cache-Control"); got != want {
				t.Fatalf("Cache-Control = %q, want %q", got, want)
			}
		})
	}
}

// The vendored BLS code "Verify my place" imports is served, including the
// files whose names start with "_" (which a plain go:embed would skip).
func TestVendoredCryptoIsServed(t *testing.T) {
	t.Parallel()
	h := Handler("/vwr/")
	for _, p := range []string{"/vwr/vendor/noble-curves-2.4.0/bls12-381.js", "/vwr/vendor/noble-hashes-2.4.0/_md.js",
		"/vwr/vendor/noble-hashes-2.4.0/_u64.js", "/vwr/vendor/noble-curves-2.4.0/LICENSE"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Errorf("%s: %d", p, rec.Code)
		}
	}
}
