// Package app assembles the Tier 2 runtime (Redis store, queue service,
// admission worker, HTTP API, metrics and the gate) from one Config. Both
// binaries use it: the deployable services/queue/cmd/queue and `vwr local`.
// It holds wiring only; behaviour lives in services/queue and its adapters.
package app

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/gate"
)

// Config is every setting of the Tier 2 runtime. FromEnv reads it from the
// environment; zero fields take the seed's defaults in WithDefaults.
type Config struct {
	Addr                 string        // QUEUE_LISTEN_ADDR
	RedisURL             string        // REDIS_URL
	EntryTokenSecret     string        // QUEUE_ENTRY_TOKEN_SECRET
	Tier1TokenKeys       string        // VWR_TIER1_TOKEN_KEYS (kid:secret,…)
	UserHeader           string        // QUEUE_USER_HEADER
	AdminToken           string        // QUEUE_ADMIN_TOKEN
	CookieSecure         bool          // QUEUE_COOKIE_SECURE
	Threshold            int64         // QUEUE_THRESHOLD
	ActiveTTL            time.Duration // QUEUE_ACTIVE_TTL_SECONDS
	SeenTTL              time.Duration // QUEUE_SEEN_TTL_SECONDS
	AdmissionInterval    time.Duration // QUEUE_ADMISSION_INTERVAL_MS
	AdmissionBatchSize   int64         // QUEUE_ADMISSION_BATCH_SIZE
	StaleCleanupInterval time.Duration // QUEUE_STALE_CLEANUP_INTERVAL_MS
	GatePrefixes         []string      // QUEUE_GATE_PREFIXES (comma-separated)
	GateUserHeader       string        // QUEUE_GATE_USER_HEADER
	GateBypassSecret     string        // QUEUE_GATE_BYPASS_SECRET
}

// DefaultAddr is where the Tier 2 API listens unless QUEUE_LISTEN_ADDR says otherwise.
const DefaultAddr = ":8080"

// Env lists every variable FromEnv reads with its default and meaning. A test
// keeps it, FromEnv and the table in docs/tier2-api.md in step.
var Env = []struct{ Name, Default, Meaning string }{
	{"REDIS_URL", "(required)", "Redis to keep the queue in, e.g. redis://host:6379/0 (rediss:// for TLS)"},
	{"QUEUE_ENTRY_TOKEN_SECRET", "(required)", "HMAC secret (≥32 bytes) that signs entry tokens; the gate verifies with the same secret"},
	{"VWR_TIER1_TOKEN_KEYS", "(unset: Tier 1 passes are refused)", "kid:secret,… keys verifying Tier 1 passes; the first signs (Tier 1 side)"},
	{"QUEUE_USER_HEADER", "(unset)", "trusted header carrying the user id, only behind an authenticating gateway"},
	{"QUEUE_ADMIN_TOKEN", "(unset: admin endpoints 404)", "bearer token for /api/queue/admin/*"},
	{"QUEUE_COOKIE_SECURE", "false", "add Secure to the urr-entry-token cookie (set true behind HTTPS)"},
	{"QUEUE_THRESHOLD", "1000", "default number of users active per event at once"},
	{"QUEUE_ACTIVE_TTL_SECONDS", "600", "how long an admitted user's slot and entry token last"},
	{"QUEUE_SEEN_TTL_SECONDS", "600", "queued users silent for longer are dropped by the stale cleanup"},
	{"QUEUE_ADMISSION_INTERVAL_MS", "1000", "how often the worker admits from each active event"},
	{"QUEUE_ADMISSION_BATCH_SIZE", "100", "most users admitted per event per pass"},
	{"QUEUE_STALE_CLEANUP_INTERVAL_MS", "30000", "how often stale queued users are dropped"},
	{"QUEUE_LISTEN_ADDR", DefaultAddr, "HTTP listen address of the deployable binary"},
	{"QUEUE_GATE_PREFIXES", "/api/seats/,/api/reservations/", "path prefixes the gate guards (protected site)"},
	{"QUEUE_GATE_USER_HEADER", "(unset)", "header with the site's authenticated user; the entry token's uid must match it"},
	{"QUEUE_GATE_BYPASS_SECRET", "(unset: bypass off)", "X-CloudFront-Verified is honoured only when it equals this secret"},
}

// FromEnv reads the Config from the process environment. Malformed numbers
// and booleans are errors naming the variable; missing required values are
// reported later by validate, so callers may fill them in first (vwr local).
func FromEnv() (Config, error) { return FromGetenv(os.Getenv) }

// FromGetenv is FromEnv over any lookup function (tests pass a map's).
func FromGetenv(get func(string) string) (Config, error) {
	c := Config{
		Addr:             get("QUEUE_LISTEN_ADDR"),
		RedisURL:         get("REDIS_URL"),
		EntryTokenSecret: get("QUEUE_ENTRY_TOKEN_SECRET"),
		Tier1TokenKeys:   get("VWR_TIER1_TOKEN_KEYS"),
		UserHeader:       strings.TrimSpace(get("QUEUE_USER_HEADER")),
		AdminToken:       get("QUEUE_ADMIN_TOKEN"),
		GateUserHeader:   strings.TrimSpace(get("QUEUE_GATE_USER_HEADER")),
		GateBypassSecret: get("QUEUE_GATE_BYPASS_SECRET"),
	}
	if v := get("QUEUE_GATE_PREFIXES"); v != "" {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				c.GatePrefixes = append(c.GatePrefixes, p)
			}
		}
	}
	var errs []error
	intVar := func(name string) int64 {
		v := strings.TrimSpace(get(name))
		if v == "" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s: want a positive integer, got %q", name, v))
			return 0
		}
		return n
	}
	c.Threshold = intVar("QUEUE_THRESHOLD")
	c.ActiveTTL = time.Duration(intVar("QUEUE_ACTIVE_TTL_SECONDS")) * time.Second
	c.SeenTTL = time.Duration(intVar("QUEUE_SEEN_TTL_SECONDS")) * time.Second
	c.AdmissionInterval = time.Duration(intVar("QUEUE_ADMISSION_INTERVAL_MS")) * time.Millisecond
	c.AdmissionBatchSize = intVar("QUEUE_ADMISSION_BATCH_SIZE")
	c.StaleCleanupInterval = time.Duration(intVar("QUEUE_STALE_CLEANUP_INTERVAL_MS")) * time.Millisecond
	if v := strings.TrimSpace(get("QUEUE_COOKIE_SECURE")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("QUEUE_COOKIE_SECURE: want true or false, got %q", v))
		}
		c.CookieSecure = b
	}
	return c, errors.Join(errs...)
}

// WithDefaults fills zero fields with the defaults (seed §4.5).
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Threshold == 0 {
		c.Threshold = queue.DefaultThreshold
	}
	if c.ActiveTTL == 0 {
		c.ActiveTTL = queue.DefaultActiveTTL
	}
	if c.SeenTTL == 0 {
		c.SeenTTL = queue.DefaultSeenTTL
	}
	if c.AdmissionInterval == 0 {
		c.AdmissionInterval = queue.DefaultAdmissionInterval
	}
	if c.AdmissionBatchSize == 0 {
		c.AdmissionBatchSize = queue.DefaultAdmissionBatchSize
	}
	if c.StaleCleanupInterval == 0 {
		c.StaleCleanupInterval = queue.DefaultStaleCleanupInterval
	}
	if len(c.GatePrefixes) == 0 {
		c.GatePrefixes = append([]string(nil), gate.DefaultPrefixes...)
	}
	return c
}

// validate reports every problem at once, each naming its variable. The
// Redis URL is only required when no client is injected.
func (c Config) validate(needRedisURL bool) error {
	var errs []error
	if needRedisURL && c.RedisURL == "" {
		errs = append(errs, errors.New("REDIS_URL is required (e.g. redis://127.0.0.1:6379/0)"))
	}
	switch {
	case c.EntryTokenSecret == "":
		errs = append(errs, errors.New("QUEUE_ENTRY_TOKEN_SECRET is required (at least 32 bytes; e.g. `openssl rand -base64 32`)"))
	case len(c.EntryTokenSecret) < token.MinSecretLen:
		errs = append(errs, fmt.Errorf("QUEUE_ENTRY_TOKEN_SECRET must be at least %d bytes", token.MinSecretLen))
	}
	if c.Tier1TokenKeys != "" {
		if _, err := token.ParseKeyRing(c.Tier1TokenKeys); err != nil {
			errs = append(errs, fmt.Errorf("VWR_TIER1_TOKEN_KEYS: %v", err))
		}
	}
	if c.UserHeader != "" && !validHeaderName(c.UserHeader) {
		errs = append(errs, fmt.Errorf("QUEUE_USER_HEADER: %q is not a valid header name", c.UserHeader))
	}
	if c.GateUserHeader != "" && !validHeaderName(c.GateUserHeader) {
		errs = append(errs, fmt.Errorf("QUEUE_GATE_USER_HEADER: %q is not a valid header name", c.GateUserHeader))
	}
	if c.Threshold < queue.MinThreshold || c.Threshold > queue.MaxThreshold {
		errs = append(errs, fmt.Errorf("QUEUE_THRESHOLD must be from %d to %d", queue.MinThreshold, queue.MaxThreshold))
	}
	if c.ActiveTTL < time.Second {
		errs = append(errs, errors.New("QUEUE_ACTIVE_TTL_SECONDS must be at least 1"))
	}
	if c.SeenTTL < time.Second {
		errs = append(errs, errors.New("QUEUE_SEEN_TTL_SECONDS must be at least 1"))
	}
	if c.AdmissionInterval <= 0 {
		errs = append(errs, errors.New("QUEUE_ADMISSION_INTERVAL_MS must be positive"))
	}
	if c.AdmissionBatchSize <= 0 {
		errs = append(errs, errors.New("QUEUE_ADMISSION_BATCH_SIZE must be positive"))
	}
	if c.StaleCleanupInterval <= 0 {
		errs = append(errs, errors.New("QUEUE_STALE_CLEANUP_INTERVAL_MS must be positive"))
	}
	for _, p := range c.GatePrefixes {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("QUEUE_GATE_PREFIXES: %q must start with /", p))
		}
	}
	return errors.Join(errs...)
}

func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if r > 127 || !strings.ContainsRune("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", r) {
			return false
		}
	}
	// Authorization and Cookie carry credentials the API reads itself.
	return http.CanonicalHeaderKey(h) != "Authorization" && http.CanonicalHeaderKey(h) != "Cookie"
}
