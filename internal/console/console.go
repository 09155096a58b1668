// Package console is vwr's operator console: a web page that shows a sale
// live (both tiers' lines, the serving counter, admissions, the projected
// time to empty the line, a recovery window, the draw) and steers it
// (activate, pause, resume, batch size, threshold, advance, schedule).
//
// The browser talks only to this server, under one path prefix; the server
// reads and changes the deployment through its admin APIs with the
// operator's own credentials (Upstream), so no AWS credential or admin token
// ever reaches the page. `vwr console` serves it on loopback; `vwr local`
// mounts it at /vwr/console/.
//
// Every route refuses clients that are not on loopback (unless allowed by
// Config.Allow), a Host that is not loopback or configured (DNS rebinding),
// cross-site requests (Sec-Fetch-Site, Origin), and any change without the
// session's CSRF token; the session cookie is HttpOnly and SameSite=Strict.
package console

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/jsonhttp"
)

// DefaultPrefix is where the console lives: the page and its API.
const DefaultPrefix = "/vwr/console/"

// Defaults of Config.
const (
	DefaultSampleEvery = time.Second
	DefaultListEvery   = 5 * time.Second
	DefaultHistory     = 15 * time.Minute
	DefaultSessionTTL  = 12 * time.Hour
)

// Config is one console.
type Config struct {
	// Prefix is the path the console is mounted at, ending in "/"
	// (default DefaultPrefix).
	Prefix string
	// Tokens sign an operator in (the form, or Authorization: Bearer on any
	// request). At least one, each at least 8 bytes.
	Tokens []string
	// Allow lists the client networks besides loopback that may use the
	// console (VWR_CONSOLE_ALLOW). Empty: loopback only.
	Allow []netip.Prefix
	// Hosts lists the host names the console may be reached at besides
	// loopback addresses and localhost (VWR_CONSOLE_HOSTS); any other Host
	// header is refused, which defeats DNS rebinding.
	Hosts []string
	// Upstream reaches the deployment's admin APIs.
	Upstream *Upstream
	// Site is the public base URL of the deployment (links to its pages).
	Site string
	// SampleEvery is how often a watched event is read (default 1 s): at
	// most one read of each tier per interval, whatever the number of tabs.
	SampleEvery time.Duration
	// ListEvery is how often the event list is read while a console polls
	// (default 5 s).
	ListEvery time.Duration
	// History is how much of each watched event's readings is kept
	// (default 15 min).
	History    time.Duration
	SessionTTL time.Duration
	Clock      clock.Clock
	Logger     *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = DefaultSampleEvery
	}
	if c.ListEvery <= 0 {
		c.ListEvery = DefaultListEvery
	}
	if c.History <= 0 {
		c.History = DefaultHistory
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	for i, h := range c.Hosts {
		c.Hosts[i] = strings.ToLower(strings.TrimSpace(h))
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if !strings.HasPrefix(c.Prefix, "/") || !strings.HasSuffix(c.Prefix, "/") {
		errs = append(errs, fmt.Errorf("console: prefix %q must start and end with /", c.Prefix))
	}
	if len(c.Tokens) == 0 {
		errs = append(errs, errors.New("console: a sign-in token is required"))
	}
	for _, t := range c.Tokens {
		if len(t) < MinTokenBytes {
			errs = append(errs, fmt.Errorf("console: a sign-in token must be at least %d bytes", MinTokenBytes))
		}
	}
	if c.Upstream == nil || c.Upstream.Tier1 == nil || c.Upstream.Tier2 == nil {
		errs = append(errs, errors.New("console: the upstream admin APIs are required"))
	}
	return errors.Join(errs...)
}

// MinTokenBytes is the shortest sign-in token accepted ("local-admin" is 11).
const MinTokenBytes = 8

// Server is one console: its page, its API and what it keeps in memory
// (sessions, the readings of watched events). It is safe for concurrent use.
type Server struct {
	cfg    Config
	ctx    context.Context // ends the background readers
	tokens [][sha256.Size]byte

	sessions sessions
	signins  limiter

	mu      sync.Mutex
	watches map[string]*watch
	list    listCache
}

// New returns a console; its background readers stop when ctx ends.
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ctx: ctx, watches: map[string]*watch{}}
	for _, t := range cfg.Tokens {
		s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
	}
	s.sessions.byID = map[string]session{}
	return s, nil
}

// Prefix is where the console is mounted.
func (s *Server) Prefix() string { return s.cfg.Prefix }

// Handler serves the console: mount it at Prefix (it answers only paths
// below it). Every request passes the guard first.
func (s *Server) Handler() http.Handler {
	p := s.cfg.Prefix
	mux := http.NewServeMux()
	api := []jsonhttp.Route{
		{Pattern: "POST " + p + "api/session", Handler: http.HandlerFunc(s.signIn)},
		{Pattern: "GET " + p + "api/session", Handler: s.authed(s.sessionInfo)},
		{Pattern: "DELETE " + p + "api/session", Handler: s.authed(s.signOut)},
		{Pattern: "GET " + p + "api/live", Handler: s.authed(s.live)},
		{Pattern: "POST " + p + "api/events/{event}/{action}", Handler: s.authed(s.action)},
	}
	jsonhttp.Register(mux, api, nil)
	mux.Handle(p+"api/", jsonhttp.NotFound())
	files := pages(p)
	mux.Handle(p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			jsonhttp.WriteError(w, &jsonhttp.Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Message: "method not allowed; use GET"})
			return
		}
		files.ServeHTTP(w, r)
	}))
	return s.guard(mux)
}
