package gate

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/token"
)

// Settings are the gate's environment variables. The Tier 2 runtime
// (services/queue/app, for vwr local's demo site) and the `vwr gate` reverse
// proxy read the same ones, so both gates behave alike.
type Settings struct {
	Prefixes     envconf.List `env:"QUEUE_GATE_PREFIXES"`
	UserHeader   string       `env:"QUEUE_GATE_USER_HEADER"`
	BypassSecret string       `env:"QUEUE_GATE_BYPASS_SECRET"`
	OriginVerify string       `env:"QUEUE_GATE_ORIGIN_VERIFY"`
	Deny         string       `env:"QUEUE_GATE_DENY"`
	RedirectTo   string       `env:"QUEUE_GATE_REDIRECT_TO"`
}

// Config is the gate's Config for these settings.
func (s Settings) Config(keys *token.KeyRing, clk clock.Clock) Config {
	return Config{
		Keys:         keys,
		Prefixes:     s.Prefixes,
		UserHeader:   s.UserHeader,
		BypassSecret: s.BypassSecret,
		OriginVerify: s.OriginVerify,
		Deny:         s.Deny,
		RedirectTo:   s.RedirectTo,
		Clock:        clk,
	}
}

// Validate reports every bad setting, each naming its variable.
func (s Settings) Validate() error {
	var errs []error
	for _, p := range s.Prefixes {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("QUEUE_GATE_PREFIXES: %q must start with /", p))
		}
	}
	if s.UserHeader != "" && !ValidHeaderName(s.UserHeader) {
		errs = append(errs, fmt.Errorf("QUEUE_GATE_USER_HEADER: %q is not a valid header name", s.UserHeader))
	}
	switch s.Deny {
	case "", DenyAuto, DenyJSON, DenyRedirect:
	default:
		errs = append(errs, fmt.Errorf("QUEUE_GATE_DENY must be auto, json or redirect, not %q", s.Deny))
	}
	if v := s.OriginVerify; v != "" && (len(v) < 16 || strings.ContainsAny(v, "\r\n")) {
		errs = append(errs, errors.New("QUEUE_GATE_ORIGIN_VERIFY: at least 16 characters on one line (the front door's origin-verify secret)"))
	}
	if r := s.RedirectTo; r != "" && !validRedirect(r) {
		errs = append(errs, fmt.Errorf("QUEUE_GATE_REDIRECT_TO: %q must be a path (/vwr/queue.html?event={event}) or an http(s) URL", r))
	}
	return errors.Join(errs...)
}

// ValidHeaderName reports a header name a site may name for a user id: an
// RFC 9110 token, and not Authorization or Cookie, which carry credentials
// vwr reads itself.
func ValidHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if r > 127 || !strings.ContainsRune("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", r) {
			return false
		}
	}
	return http.CanonicalHeaderKey(h) != "Authorization" && http.CanonicalHeaderKey(h) != "Cookie"
}
