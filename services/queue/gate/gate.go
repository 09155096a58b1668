// Package gate is net/http middleware for the protected site (seed §5.9): it
// lets a request under a guarded path prefix through only when it carries a
// valid Tier 2 entry token for the route's event and, when the site names its
// authenticated user in a header, for that user. Verified entries are put in
// the request context for downstream handlers.
package gate

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
)

// Where the entry token is read from: the header the seed's web client sends,
// else the cookie the queue API sets.
const (
	TokenHeader = "x-queue-entry-token"
	TokenCookie = token.EntryCookie
	// BypassHeader is the seed's CloudFront bypass header. See Config.BypassSecret.
	BypassHeader = "X-CloudFront-Verified"
	// OriginVerifyHeader is the header the front door's CloudFront adds to
	// every request it sends the protected site (an origin custom header,
	// its value the stack's origin-verify secret). See Config.OriginVerify.
	OriginVerifyHeader = "X-Vwr-Origin-Verify"
)

// DefaultPrefixes are the seed's guarded paths: seat selection and booking.
var DefaultPrefixes = []string{"/api/seats/", "/api/reservations/"}

// Config tunes the gate.
type Config struct {
	// Keys verify entry tokens (QUEUE_ENTRY_TOKEN_SECRET). Required.
	Keys *token.KeyRing
	// Prefixes are the guarded path prefixes; every method under them is
	// guarded. Empty means DefaultPrefixes.
	Prefixes []string
	// UserHeader, when set, names the header in which the site's own
	// authentication (in front of the gate) puts the user id; the token's
	// uid must equal it, so a token cannot be lent to someone else.
	UserHeader string
	// BypassSecret, when set, lets a request through without a token if its
	// X-CloudFront-Verified header equals this secret (constant-time). The
	// seed trusted the header's mere presence, so any client could add it
	// and skip the queue; a shared secret that only the edge (Lambda@Edge
	// or a CloudFront origin custom header) knows keeps the optimisation
	// without that hole. Empty means the header is ignored.
	BypassSecret string
	// OriginVerify, when set, is required of every request, guarded or not:
	// its X-Vwr-Origin-Verify header must equal this value (constant-time),
	// else 403 origin_not_verified. CloudFront adds the header on its way to
	// the site, so a visitor who finds the site's own address and goes
	// around the front door (and its edge check) is refused. The header is
	// removed before the site sees the request.
	OriginVerify string
	// EventID extracts the event a request is for. Nil means the path
	// segment right after the guarded prefix (/api/seats/{eventId}/…). An
	// empty result means the route carries no event and any event's token
	// is accepted.
	EventID func(r *http.Request, prefix string) string
	// Clock tells "now" for expiry; defaults to the wall clock.
	Clock clock.Clock
	// Deny is how a refused request is answered: DenyJSON (403 JSON),
	// DenyRedirect (302 to RedirectTo) or DenyAuto, the default: 302 for a
	// browser loading a page (GET or HEAD asking for text/html), 403 JSON
	// for everything else (fetch, forms, API clients).
	Deny string
	// RedirectTo is the page a refused visitor should go to: the Tier 2
	// queue page. "{event}" is replaced by the route's event id; a route
	// without one goes to "/". Default DefaultRedirectTo. It is the 302's
	// Location and the 403 body's redirectTo.
	RedirectTo string
}

// Deny modes (QUEUE_GATE_DENY).
const (
	DenyAuto     = "auto"
	DenyJSON     = "json"
	DenyRedirect = "redirect"
)

// DefaultRedirectTo is the queue page the waiting pages ship with
// (static/vwr/queue.html), served under /vwr/ by the CDN and by vwr local.
const DefaultRedirectTo = "/vwr/queue.html?event={event}"

// Gate is the middleware.
type Gate struct {
	cfg Config
}

// New returns a gate, or an error when cfg has no keys.
func New(cfg Config) (*Gate, error) {
	if cfg.Keys == nil {
		return nil, errors.New("gate: Keys is required (QUEUE_ENTRY_TOKEN_SECRET)")
	}
	if len(cfg.Prefixes) == 0 {
		cfg.Prefixes = DefaultPrefixes
	}
	for _, p := range cfg.Prefixes {
		if !strings.HasPrefix(p, "/") {
			return nil, errors.New("gate: prefix " + p + " must start with /")
		}
	}
	if cfg.EventID == nil {
		cfg.EventID = SegmentAfterPrefix
	}
	switch cfg.Deny {
	case "":
		cfg.Deny = DenyAuto
	case DenyAuto, DenyJSON, DenyRedirect:
	default:
		return nil, errors.New("gate: Deny must be auto, json or redirect, not " + strconv.Quote(cfg.Deny))
	}
	if cfg.RedirectTo == "" {
		cfg.RedirectTo = DefaultRedirectTo
	}
	if !validRedirect(cfg.RedirectTo) {
		return nil, errors.New("gate: RedirectTo must be a path (/…) or an http(s) URL, not " + strconv.Quote(cfg.RedirectTo))
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	return &Gate{cfg: cfg}, nil
}

// SegmentAfterPrefix is the default event extractor: the first path segment
// after prefix, e.g. "E1" in /api/seats/E1/reserve, read from the path as
// the gate matched it (see match). Nothing after the prefix means no event.
func SegmentAfterPrefix(r *http.Request, prefix string) string {
	p := matchPath(r.URL.Path)
	base := strings.TrimSuffix(prefix, "/")
	if len(p) < len(base) || !strings.EqualFold(p[:len(base)], base) {
		return ""
	}
	rest := strings.TrimPrefix(p[len(base):], "/")
	seg, _, _ := strings.Cut(rest, "/")
	return seg
}

type ctxKey struct{}

// EntryFrom returns the verified entry token the gate attached to ctx. It is
// false for unguarded paths and for requests let through by the bypass.
func EntryFrom(ctx context.Context) (token.Entry, bool) {
	e, ok := ctx.Value(ctxKey{}).(token.Entry)
	return e, ok
}

// Failure codes in the 403 body.
const (
	CodeRequired = "entry_token_required" // no token presented
	CodeInvalid  = "entry_token_invalid"  // bad signature/alg/audience/event/user
	CodeExpired  = "entry_token_expired"  // valid but past exp: queue again
	// CodeOriginNotVerified: the request did not come through the front
	// door (Config.OriginVerify).
	CodeOriginNotVerified = "origin_not_verified"
)

// denial is the 403 body: the seed's error and redirectTo, plus a code.
type denial struct {
	Error      string `json:"error"`
	Code       string `json:"code"`
	RedirectTo string `json:"redirectTo"`
}

// Prefixes are the guarded path prefixes in effect.
func (g *Gate) Prefixes() []string { return append([]string(nil), g.cfg.Prefixes...) }

// Wrap guards next.
func (g *Gate) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.cfg.OriginVerify != "" {
			v := r.Header.Get(OriginVerifyHeader)
			r.Header.Del(OriginVerifyHeader)
			if subtle.ConstantTimeCompare([]byte(v), []byte(g.cfg.OriginVerify)) != 1 {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"error":"requests reach this site only through its front door","code":"` + CodeOriginNotVerified + `"}` + "\n"))
				return
			}
		}
		prefix, guarded := g.match(r.URL.Path)
		if !guarded {
			next.ServeHTTP(w, r)
			return
		}
		bypassed := g.bypass(r)
		// The secret stops here: downstream never sees it (nor logs it), and
		// never mistakes a client-sent header for the edge's word.
		r.Header.Del(BypassHeader)
		if bypassed {
			next.ServeHTTP(w, r)
			return
		}

		ev := g.cfg.EventID(r, prefix)
		if ev != "" && !queue.ValidID(ev) {
			g.deny(w, r, "", CodeInvalid)
			return
		}
		raw := entryToken(r)
		if raw == "" {
			g.deny(w, r, ev, CodeRequired)
			return
		}
		e, err := g.cfg.Keys.VerifyEntry(raw, ev, g.cfg.Clock.Now())
		switch {
		case errors.Is(err, token.ErrExpired):
			g.deny(w, r, ev, CodeExpired)
			return
		case err != nil:
			g.deny(w, r, ev, CodeInvalid)
			return
		}
		if g.cfg.UserHeader != "" {
			uid := r.Header.Get(g.cfg.UserHeader)
			if uid == "" || subtle.ConstantTimeCompare([]byte(uid), []byte(e.UserID)) != 1 {
				g.deny(w, r, ev, CodeInvalid)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, e)))
	})
}

// match reports the guarded prefix p falls under. It compares the path as
// the most lenient server behind the gate might read it (matchPath), and
// ignores case, so that /api//seats/, /x/../api/seats/, /api\seats/,
// /api/seats;x=1/ or /API/seats/ cannot reach a guarded route unguarded.
// Reading more paths as guarded only ever refuses more.
func (g *Gate) match(p string) (string, bool) {
	p = matchPath(p)
	for _, prefix := range g.cfg.Prefixes {
		if hasPrefixFold(p, prefix) || strings.EqualFold(p, strings.TrimSuffix(prefix, "/")) {
			return prefix, true
		}
	}
	return "", false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// matchPath is the path the gate matches prefixes against: backslashes read
// as slashes (IIS and some proxies do), ";params" dropped from every segment
// (Servlet containers do), then cleaned of dot segments and repeated slashes.
func matchPath(p string) string {
	p = strings.ReplaceAll(p, "\\", "/")
	if strings.Contains(p, ";") {
		segs := strings.Split(p, "/")
		for i, seg := range segs {
			segs[i], _, _ = strings.Cut(seg, ";")
		}
		p = strings.Join(segs, "/")
	}
	return cleanPath(p)
}

func (g *Gate) bypass(r *http.Request) bool {
	if g.cfg.BypassSecret == "" {
		return false
	}
	v := r.Header.Get(BypassHeader)
	return v != "" && subtle.ConstantTimeCompare([]byte(v), []byte(g.cfg.BypassSecret)) == 1
}

func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

func entryToken(r *http.Request) string {
	if v := strings.TrimSpace(r.Header.Get(TokenHeader)); v != "" {
		return v
	}
	if c, err := r.Cookie(TokenCookie); err == nil {
		return c.Value
	}
	return ""
}

// validRedirect accepts a path on this site or an absolute http(s) URL; a
// "//host" or "/\\host" path would leave the site, so it is not a path.
func validRedirect(to string) bool {
	if strings.HasPrefix(to, "https://") || strings.HasPrefix(to, "http://") {
		return true
	}
	return strings.HasPrefix(to, "/") && !strings.HasPrefix(to, "//") && !strings.HasPrefix(to, "/\\")
}

// RedirectFor is where a refused request for eventID is sent: RedirectTo
// with the event filled in, or "/" when the route names no event.
func (g *Gate) RedirectFor(eventID string) string {
	if !strings.Contains(g.cfg.RedirectTo, "{event}") {
		return g.cfg.RedirectTo
	}
	if eventID == "" || !queue.ValidID(eventID) {
		return "/"
	}
	// Valid ids are URL-safe as they are.
	return strings.ReplaceAll(g.cfg.RedirectTo, "{event}", eventID)
}

func (g *Gate) deny(w http.ResponseWriter, r *http.Request, eventID, code string) {
	to := g.RedirectFor(eventID)
	w.Header().Set("Cache-Control", "no-store")
	if g.cfg.Deny == DenyRedirect || (g.cfg.Deny == DenyAuto && pageLoad(r)) {
		w.Header().Set("Location", to)
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	_ = json.NewEncoder(w).Encode(denial{Error: "Queue entry token required", Code: code, RedirectTo: to})
}

// pageLoad reports a browser loading a page: GET or HEAD that accepts HTML.
// fetch() and XHR send "*/*" unless told otherwise, so they get the JSON.
func pageLoad(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if r.Header.Get("Sec-Fetch-Mode") == "navigate" {
		return true
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}
