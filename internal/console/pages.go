package console

import (
	"net/http"
	"strings"

	"github.com/vwr-go/vwr/static"
)

// pages serves static/console below prefix with the waiting pages' CSP:
// same-origin scripts, styles and calls only, nothing inline, no framing.
func pages(prefix string) http.Handler {
	files := http.StripPrefix(strings.TrimSuffix(prefix, "/"), http.FileServerFS(static.Console()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", static.ContentSecurityPolicy)
		// Revalidate every time: a new vwr's page must not meet an old script.
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
