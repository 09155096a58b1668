// Package edge is the check that stands in front of the protected site: a
// visitor reaches /events/… only with a valid Tier 1 pass for that event;
// everyone else is sent to the waiting room. vwr local runs it as net/http
// middleware; the CloudFront Function of the CDK stack applies the same rule
// at the edge, so Decide is kept pure and small enough to port line by line.
//
// The rule, for a request to path P (as sent, percent-encoded) with query Q:
//
//  0. P is put in its canonical form C (Canonical: unreserved escapes
//     decoded, dot segments removed, slashes merged, the prefix in lower
//     case); a malformed or ambiguous P is refused with 400. The origin is
//     handed C, so it sees the path this check saw.
//  1. C is not /events/{event} or below it: pass.
//  2. {event} is not ^[A-Za-z0-9_-]{1,64}$: 404 (nothing to wait for).
//  3. Cookie urr-vwr-token verifies as a Tier 1 pass for {event}
//     (HS256 + kid, iss vwr, aud vwr-tier1, tier 1, not expired, eid == {event}): pass.
//  4. Otherwise: 302 to /vwr/?event={event}&return={C?Q}, where C?Q must
//     pass SafeReturn (else return is /events/{event}): the page follows
//     only a return path this check could have built.
package edge

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/ids"
	"github.com/vwr-go/vwr/internal/token"
)

// Names shared with the Tier 1 API, the pages and the CloudFront Function.
const (
	CookieName      = token.Tier1Cookie
	ProtectedPrefix = "/events/"
	WaitingRoom     = "/vwr/"
)

// Action is what the edge does with one request.
type Action int

// Actions of Decide.
const (
	Pass     Action = iota // hand the request, at Decision.Path, to the origin
	Redirect               // 302 to Decision.Location
	NotFound               // malformed event id under the protected prefix
	Refuse                 // 400: a malformed or ambiguous path (ErrPath)
)

// Decision is the outcome of the rule for one request.
type Decision struct {
	Action   Action
	Location string // set for Redirect
	EventID  string // set for protected paths
	// Path is the canonical path, the one the origin must be handed (set
	// unless the path was refused).
	Path string
}

// Decide applies the rule. cookie is the raw urr-vwr-token value ("" when absent).
func Decide(keys *token.KeyRing, rawPath, rawQuery, cookie string, now time.Time) Decision {
	path, protected, err := Canonical(rawPath)
	if err != nil {
		return Decision{Action: Refuse}
	}
	if !protected {
		return Decision{Action: Pass, Path: path}
	}
	event, _, _ := strings.Cut(path[len(ProtectedPrefix):], "/")
	if !ids.Valid(event) {
		return Decision{Action: NotFound, Path: path}
	}
	if cookie != "" {
		if _, err := keys.VerifyTier1(cookie, event, now); err == nil {
			return Decision{Action: Pass, EventID: event, Path: path}
		}
	}
	ret := path
	if rawQuery != "" {
		ret += "?" + rawQuery
	}
	if !SafeReturn(ret, event) {
		ret = ProtectedPrefix + event
	}
	q := url.Values{"event": {event}, "return": {ret}}
	return Decision{Action: Redirect, Location: WaitingRoom + "?" + q.Encode(), EventID: event, Path: path}
}

// Middleware enforces Decide in front of next.
func Middleware(keys *token.KeyRing, clk clock.Clock, next http.Handler) http.Handler {
	if clk == nil {
		clk = clock.System{}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cookie string
		if c, err := r.Cookie(CookieName); err == nil {
			cookie = c.Value
		}
		// The escaped path: what the browser asked for, before any decoding.
		d := Decide(keys, r.URL.EscapedPath(), r.URL.RawQuery, cookie, clk.Now())
		switch d.Action {
		case Refuse:
			writeError(w, http.StatusBadRequest, `{"error":"malformed or ambiguous path","code":"invalid_path"}`)
		case Redirect:
			// Per-visitor answer: a shared cache must not hand it to someone with a pass.
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, d.Location, http.StatusFound)
		case NotFound:
			writeError(w, http.StatusNotFound, `{"error":"unknown event","code":"invalid_event_id"}`)
		default:
			next.ServeHTTP(w, withPath(r, d.Path))
		}
	})
}

// withPath hands r on at the canonical path, so the origin routes on
// exactly what the check saw.
func withPath(r *http.Request, canonical string) *http.Request {
	if canonical == r.URL.EscapedPath() {
		return r
	}
	decoded, err := url.PathUnescape(canonical)
	if err != nil {
		return r // cannot happen: Canonical leaves only well-formed escapes
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = decoded, canonical
	r2.RequestURI = canonical
	if r.URL.RawQuery != "" {
		r2.RequestURI += "?" + r.URL.RawQuery
	}
	return r2
}

func writeError(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body + "\n"))
}
