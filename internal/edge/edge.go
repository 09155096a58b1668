// Package edge is the check that stands in front of the protected site: a
// visitor reaches /events/… only with a valid Tier 1 pass for that event;
// everyone else is sent to the waiting room. vwr local runs it as net/http
// middleware; the CloudFront Function of the CDK stack applies the same rule
// at the edge, so Decide is kept pure and small enough to port line by line.
//
// The rule, for a request to path P with query Q:
//
//  1. P is not /events/{event} or below it: pass (not protected).
//  2. {event} is not ^[A-Za-z0-9_-]{1,64}$: 404 (nothing to wait for).
//  3. Cookie urr-vwr-token verifies as a Tier 1 pass for {event}
//     (HS256 + kid, iss vwr, aud vwr-tier1, tier 1, not expired, eid == {event}): pass.
//  4. Otherwise: 302 to /vwr/?event={event}&return={P?Q}, where P?Q must
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
	Pass     Action = iota // hand the request to the origin
	Redirect               // 302 to Decision.Location
	NotFound               // malformed event id under the protected prefix
)

// Decision is the outcome of the rule for one request.
type Decision struct {
	Action   Action
	Location string // set for Redirect
	EventID  string // set for protected paths
}

// Decide applies the rule. cookie is the raw urr-vwr-token value ("" when absent).
func Decide(keys *token.KeyRing, path, rawQuery, cookie string, now time.Time) Decision {
	event, ok := protectedEvent(path)
	if !ok {
		return Decision{Action: Pass}
	}
	if !ids.Valid(event) {
		return Decision{Action: NotFound}
	}
	if cookie != "" {
		if _, err := keys.VerifyTier1(cookie, event, now); err == nil {
			return Decision{Action: Pass, EventID: event}
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
	return Decision{Action: Redirect, Location: WaitingRoom + "?" + q.Encode(), EventID: event}
}

// protectedEvent returns the {event} segment of /events/{event}[/…] and
// whether path is under the protected prefix at all.
func protectedEvent(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, ProtectedPrefix)
	if !ok {
		return "", false
	}
	event, _, _ := strings.Cut(rest, "/")
	return event, true
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
		// The escaped path: it is what the browser asked for, and a decoded
		// one could turn %2F into a "//" the return check refuses.
		d := Decide(keys, r.URL.EscapedPath(), r.URL.RawQuery, cookie, clk.Now())
		switch d.Action {
		case Redirect:
			// Per-visitor answer: a shared cache must not hand it to someone with a pass.
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, d.Location, http.StatusFound)
		case NotFound:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"unknown event","code":"invalid_event_id"}` + "\n"))
		default:
			next.ServeHTTP(w, r)
		}
	})
}
