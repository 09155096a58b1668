package gate

import (
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/vwr-go/vwr/internal/jsonhttp"
)

// Headers the proxy sets on a request it let through a guarded prefix, so a
// site in any language knows who the queue let in without parsing the
// token. The proxy removes client-sent copies from every request first.
const (
	ProxyUserHeader  = "X-Queue-Entry-User"
	ProxyEventHeader = "X-Queue-Entry-Event"
)

// errUpstream is the answer when the site behind the proxy does not answer.
var errUpstream = jsonhttp.Unavailable("upstream_unavailable", "the site behind the gate is not answering; retry shortly")

// errAmbiguousPath refuses a guarded path that sites read in different
// ways: an encoded or raw backslash, or an encoded slash.
var errAmbiguousPath = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_path", Message: "malformed or ambiguous path"}

// Proxy returns a reverse proxy to upstream guarded by g: requests under the
// gate's prefixes need a valid entry token (answered exactly as Wrap
// answers), everything else is forwarded as it is. The upstream sees the
// usual X-Forwarded-For/-Host/-Proto headers, the verified user and event in
// ProxyUserHeader and ProxyEventHeader, and never the bypass header (on any
// path). A guarded request reaches the upstream at the path the gate
// checked, dot segments and repeated slashes resolved, so a site that routes
// on the path as it arrives cannot read another event from it than the one
// whose token was verified; a guarded path with an encoded slash or a
// backslash is refused (400 invalid_path) once its token is verified.
func (g *Gate) Proxy(upstream *url.URL, log *slog.Logger) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			if _, guarded := g.match(pr.In.URL.Path); guarded {
				pr.Out.URL.Path, pr.Out.URL.RawPath = cleanPath(pr.In.URL.Path), ""
			}
			pr.SetURL(upstream)
			pr.SetXForwarded()
			pr.Out.Header.Del(ProxyUserHeader)
			pr.Out.Header.Del(ProxyEventHeader)
			// Only the gate reads it; a site behind it never should.
			pr.Out.Header.Del(BypassHeader)
			if e, ok := EntryFrom(pr.In.Context()); ok {
				pr.Out.Header.Set(ProxyUserHeader, e.UserID)
				pr.Out.Header.Set(ProxyEventHeader, e.EventID)
			}
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Error("upstream request failed", "upstream", upstream.Host, "method", r.Method, "path", r.URL.Path, "err", err.Error())
			jsonhttp.WriteError(w, errUpstream)
		},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// After the gate: a visitor without a valid token is answered as Wrap
	// answers, whatever the path.
	return g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := g.match(r.URL.Path); ok && ambiguous(r.URL.EscapedPath()) {
			jsonhttp.WriteError(w, errAmbiguousPath)
			return
		}
		rp.ServeHTTP(w, r)
	}))
}

// ambiguous reports an escaped path holding what servers disagree about:
// a backslash (raw or encoded) or an encoded slash.
func ambiguous(escaped string) bool {
	u := strings.ToUpper(escaped)
	return strings.Contains(u, "%2F") || strings.Contains(u, "%5C") || strings.Contains(escaped, "\\")
}
