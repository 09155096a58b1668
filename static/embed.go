// Package static embeds vwr's browser pages (static/vwr: the Tier 1 waiting
// page and the Tier 2 queue page) so that vwr local serves exactly the files a
// deployment uploads to S3 behind the CDN, and the operator console's page
// (static/console), which only vwr console and vwr local serve. The pages
// are plain HTML, CSS and ES modules: there is no build step between this
// folder and the browser.
package static

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// all: the vendored noble-hashes has files whose names start with "_".
//
//go:embed all:vwr
var files embed.FS

// The operator console's page (internal/console serves it). It is not part
// of the waiting pages a deployment uploads to S3.
//
//go:embed console
var consoleFiles embed.FS

// Console returns static/console as a file system rooted at the page.
func Console() fs.FS {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic("static: embedded console folder missing: " + err.Error())
	}
	return sub
}

// VWR returns static/vwr as a file system rooted at the pages.
func VWR() fs.FS {
	sub, err := fs.Sub(files, "vwr")
	if err != nil {
		panic("static: embedded vwr folder missing: " + err.Error())
	}
	return sub
}

// ContentSecurityPolicy allows only same-origin scripts, styles and calls:
// the pages have no inline script and talk only to their own origin.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// CacheControl is what the pages are served with. They carry no per-visitor
// data, so a CDN may cache them; the short max-age lets a release reach
// browsers within minutes without hashed file names.
func CacheControl(name string) string {
	if strings.HasSuffix(name, ".html") || name == "" || strings.HasSuffix(name, "/") {
		return "public, max-age=60, stale-while-revalidate=300"
	}
	return "public, max-age=300, stale-while-revalidate=3600"
}

// Handler serves the pages below prefix (for example "/vwr/").
func Handler(prefix string) http.Handler {
	fileServer := http.StripPrefix(strings.TrimSuffix(prefix, "/"), http.FileServerFS(VWR()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setPageHeaders(w, path.Base(r.URL.Path))
		if strings.HasSuffix(r.URL.Path, "/") {
			w.Header().Set("Cache-Control", CacheControl("index.html"))
		}
		fileServer.ServeHTTP(w, r)
	})
}

// ServeFile writes one embedded page (for example "queue.html") at whatever
// URL the caller mounted it, such as the demo site's /events/{event}. A
// Cache-Control the caller already set is kept: such URLs are often
// per-visitor and must not be cached.
func ServeFile(w http.ResponseWriter, r *http.Request, name string) {
	cc := w.Header().Get("Cache-Control")
	setPageHeaders(w, name)
	if cc != "" {
		w.Header().Set("Cache-Control", cc)
	}
	http.ServeFileFS(w, r, VWR(), name)
}

func setPageHeaders(w http.ResponseWriter, name string) {
	h := w.Header()
	h.Set("Cache-Control", CacheControl(name))
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}
