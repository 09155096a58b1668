package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vwr-go/vwr/internal/jsonhttp"
)

// Refusals of the guard and the sign-in. They name what to change.
var (
	errForbiddenClient = &jsonhttp.Error{Status: http.StatusForbidden, Code: "forbidden_client",
		Message: "the console answers loopback clients only; allow other networks with VWR_CONSOLE_ALLOW (vwr console -allow)"}
	errForbiddenHost = &jsonhttp.Error{Status: http.StatusForbidden, Code: "forbidden_host",
		Message: "the console answers only at loopback addresses, localhost and the names in VWR_CONSOLE_HOSTS (vwr console -host)"}
	errCrossSite = &jsonhttp.Error{Status: http.StatusForbidden, Code: "cross_site",
		Message: "cross-site requests are refused: use the console's own page"}
	errOriginRequired = &jsonhttp.Error{Status: http.StatusForbidden, Code: "origin_required",
		Message: "a change from a browser session must carry an Origin header (or use Authorization: Bearer)"}
	errCSRF = &jsonhttp.Error{Status: http.StatusForbidden, Code: "csrf",
		Message: "missing or wrong X-CSRF-Token: reload the console"}
	errSignIn = &jsonhttp.Error{Status: http.StatusUnauthorized, Code: "unauthorized",
		Message: "sign in with the console's token (or send Authorization: Bearer)"}
	errWrongToken = &jsonhttp.Error{Status: http.StatusUnauthorized, Code: "wrong_token",
		Message: "that token does not open this console"}
	errTooManySignIns = &jsonhttp.Error{Status: http.StatusTooManyRequests, Code: "too_many_sign_ins",
		Message: "too many failed sign-ins; wait a minute"}
	errSignInBody = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_body",
		Message: `send {"token":"…"} as application/json, or token=… as a form`}
)

// SessionCookie is the console's session cookie.
const SessionCookie = "vwr_console"

// CSRFHeader carries the session's CSRF token on every change.
const CSRFHeader = "X-CSRF-Token"

// guard runs before every route: who may talk to the console at all.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !s.clientAllowed(r.RemoteAddr) {
			s.refuse(w, r, errForbiddenClient)
			return
		}
		if !s.hostAllowed(r.Host) {
			s.refuse(w, r, errForbiddenHost)
			return
		}
		// A navigation (a link, a bookmark) may come from anywhere: it
		// cannot read the page, and a GET changes nothing. Anything else
		// must come from the console's own page.
		navigation := r.Method == http.MethodGet && r.Header.Get("Sec-Fetch-Mode") == "navigate"
		switch r.Header.Get("Sec-Fetch-Site") {
		case "", "same-origin", "none":
		default:
			if !navigation {
				s.refuse(w, r, errCrossSite)
				return
			}
		}
		if o := r.Header.Get("Origin"); o != "" && !navigation && !sameOrigin(o, r.Host) {
			s.refuse(w, r, errCrossSite)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, e *jsonhttp.Error) {
	s.cfg.Logger.Info("console refused a request", "code", e.Code, "client", r.RemoteAddr, "host", r.Host,
		"origin", r.Header.Get("Origin"), "site", r.Header.Get("Sec-Fetch-Site"), "method", r.Method, "path", r.URL.Path)
	jsonhttp.WriteError(w, e)
}

// clientAllowed: loopback, or a network Config.Allow names.
func (s *Server) clientAllowed(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return true
	}
	for _, p := range s.cfg.Allow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// hostAllowed: the Host header names a loopback address, localhost, or a
// configured name. A page on another name that resolves to loopback (DNS
// rebinding) is refused.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return true
	}
	for _, h := range s.cfg.Hosts {
		if host == h {
			return true
		}
	}
	return false
}

// sameOrigin: origin is http(s)://<the request's own Host>. The Host passed
// hostAllowed, so this is the console's own page.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// session is one signed-in browser.
type session struct {
	csrf    string
	expires time.Time
}

// sessions are the signed-in browsers, in memory: a restart signs everyone
// out, which a console on loopback can afford.
type sessions struct {
	mu   sync.Mutex
	byID map[string]session
}

// maxSessions bounds the sessions kept; the oldest goes first.
const maxSessions = 256

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (ss *sessions) open(now time.Time, ttl time.Duration) (id string, sess session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, v := range ss.byID {
		if !now.Before(v.expires) {
			delete(ss.byID, k)
		}
	}
	for len(ss.byID) >= maxSessions {
		var oldest string
		for k, v := range ss.byID {
			if oldest == "" || v.expires.Before(ss.byID[oldest].expires) {
				oldest = k
			}
		}
		delete(ss.byID, oldest)
	}
	id, sess = randomToken(), session{csrf: randomToken(), expires: now.Add(ttl)}
	ss.byID[id] = sess
	return id, sess
}

func (ss *sessions) get(id string, now time.Time) (session, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	v, ok := ss.byID[id]
	if !ok || !now.Before(v.expires) {
		return session{}, false
	}
	return v, true
}

func (ss *sessions) close(id string) {
	ss.mu.Lock()
	delete(ss.byID, id)
	ss.mu.Unlock()
}

// limiter counts failed sign-ins per minute: a guessed token gets at most
// maxFailedSignIns tries a minute.
type limiter struct {
	mu     sync.Mutex
	window time.Time
	failed int
}

const maxFailedSignIns = 10

func (l *limiter) blocked(now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.window) >= time.Minute {
		l.window, l.failed = now, 0
	}
	return l.failed >= maxFailedSignIns, l.window.Add(time.Minute).Sub(now)
}

func (l *limiter) fail() {
	l.mu.Lock()
	l.failed++
	l.mu.Unlock()
}

// tokenOK compares tok with every sign-in token in constant time over
// digests, so neither content nor length leaks.
func (s *Server) tokenOK(tok string) bool {
	sum := sha256.Sum256([]byte(tok))
	ok := 0
	for _, t := range s.tokens {
		ok |= subtle.ConstantTimeCompare(sum[:], t[:])
	}
	return ok == 1 && tok != ""
}

// auth is how a request was authenticated.
type auth struct {
	bearer  bool
	session string // the session id when by cookie
	csrf    string
}

// authenticate reads Authorization: Bearer or the session cookie. A wrong
// bearer token fails even next to a good cookie.
func (s *Server) authenticate(r *http.Request) (auth, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") && s.tokenOK(strings.TrimSpace(tok)) {
			return auth{bearer: true}, true
		}
		return auth{}, false
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return auth{}, false
	}
	sess, ok := s.sessions.get(c.Value, s.cfg.Clock.Now())
	if !ok {
		return auth{}, false
	}
	return auth{session: c.Value, csrf: sess.csrf}, true
}

type authedFunc func(w http.ResponseWriter, r *http.Request, a auth) error

// authed wraps an API route: authentication, then for a change by a
// browser session an Origin and the CSRF token; then fn, whose error is
// the answer.
func (s *Server) authed(fn authedFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if _, err := jsonhttp.ReadBody(r); err != nil {
			s.fail(w, err)
			return
		}
		a, ok := s.authenticate(r)
		if !ok {
			s.fail(w, errSignIn)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !a.bearer {
			if r.Header.Get("Origin") == "" {
				s.refuse(w, r, errOriginRequired)
				return
			}
			got := r.Header.Get(CSRFHeader)
			if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(a.csrf)) != 1 {
				s.refuse(w, r, errCSRF)
				return
			}
		}
		if err := fn(w, r, a); err != nil {
			s.fail(w, err)
		}
	})
}

// fail answers err: an *jsonhttp.Error as it is, anything else as a fixed
// 500 (the cause goes to the log only).
func (s *Server) fail(w http.ResponseWriter, err error) {
	if e, ok := jsonhttp.As(err); ok {
		jsonhttp.WriteError(w, e)
		return
	}
	s.cfg.Logger.Error("console request failed", "err", err)
	jsonhttp.WriteError(w, &jsonhttp.Error{Status: http.StatusInternalServerError, Code: "internal", Message: "the console failed; see its log"})
}

// signIn takes the token from a JSON body or a form and opens a session.
// Like every change it needs the console's own Origin: a page elsewhere
// cannot sign a browser in (login CSRF).
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Header.Get("Origin") == "" {
		s.refuse(w, r, errOriginRequired)
		return
	}
	now := s.cfg.Clock.Now()
	if blocked, wait := s.signins.blocked(now); blocked {
		w.Header().Set("Retry-After", strconv.Itoa(int(max((wait+time.Second-1)/time.Second, 1))))
		jsonhttp.WriteError(w, errTooManySignIns)
		return
	}
	form := strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/x-www-form-urlencoded")
	var tok string
	if form {
		b, err := jsonhttp.ReadBody(r)
		vals, perr := url.ParseQuery(string(b))
		if err != nil || perr != nil {
			s.fail(w, errSignInBody)
			return
		}
		tok = vals.Get("token")
	} else {
		var body struct {
			Token string `json:"token"`
		}
		if err := jsonhttp.Decode(r, &body); err != nil {
			s.fail(w, errSignInBody)
			return
		}
		tok = body.Token
	}
	if !s.tokenOK(tok) {
		s.signins.fail()
		s.cfg.Logger.Info("console sign-in refused", "client", r.RemoteAddr)
		s.fail(w, errWrongToken)
		return
	}
	// A session fixed before sign-in is never reused.
	if c, err := r.Cookie(SessionCookie); err == nil {
		s.sessions.close(c.Value)
	}
	id, sess := s.sessions.open(now, s.cfg.SessionTTL)
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: id, Path: s.cfg.Prefix, MaxAge: int(s.cfg.SessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || strings.HasPrefix(r.Header.Get("Origin"), "https://"),
	})
	s.cfg.Logger.Info("console sign-in", "client", r.RemoteAddr)
	if form {
		http.Redirect(w, r, s.cfg.Prefix, http.StatusSeeOther)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, sessionBody{Auth: "cookie", CSRF: sess.csrf})
}

type sessionBody struct {
	Auth string `json:"auth"` // cookie or bearer
	CSRF string `json:"csrf,omitempty"`
}

func (s *Server) sessionInfo(w http.ResponseWriter, r *http.Request, a auth) error {
	if a.bearer {
		jsonhttp.WriteJSON(w, http.StatusOK, sessionBody{Auth: "bearer"})
		return nil
	}
	jsonhttp.WriteJSON(w, http.StatusOK, sessionBody{Auth: "cookie", CSRF: a.csrf})
	return nil
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request, a auth) error {
	if a.session != "" {
		s.sessions.close(a.session)
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: s.cfg.Prefix, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
	return nil
}
