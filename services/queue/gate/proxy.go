package gate

import (
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"

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

// Proxy returns a reverse proxy to upstream guarded by g: requests under the
// gate's prefixes need a valid entry token (answered exactly as Wrap
// answers), everything else is forwarded as it is. The upstream sees the
// usual X-Forwarded-For/-Host/-Proto headers, the verified user and event in
// ProxyUserHeader and ProxyEventHeader, and never the bypass header (on any
// path).
func (g *Gate) Proxy(upstream *url.URL, log *slog.Logger) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
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
	return g.Wrap(rp)
}
