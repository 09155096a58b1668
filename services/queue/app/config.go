// Package app assembles the Tier 2 runtime (Redis store, queue service,
// admission worker, HTTP API, metrics and the gate) from one Config. Both
// binaries use it: the deployable services/queue/cmd/queue and `vwr local`.
// It holds wiring only; behaviour lives in services/queue and its adapters.
package app

import (
	"errors"
	"fmt"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/eventsettings/settingsstore"
	"github.com/vwr-go/vwr/internal/token"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/gate"
)

// Config is every setting of the Tier 2 runtime, read from the environment
// by FromEnv (internal/envconf). A zero field means "the default", which the
// package owning the setting applies: queue.Config and queue.WorkerConfig for
// the queue's tunables, gate.New for the guarded prefixes, applog for
// logging. This package defaults only what it owns (the listen address).
type Config struct {
	Addr              string       `env:"QUEUE_LISTEN_ADDR"`
	RedisURL          string       `env:"REDIS_URL"`
	RedisClusterAddrs envconf.List `env:"REDIS_CLUSTER_ADDRS"`
	EntryTokenSecret  string       `env:"QUEUE_ENTRY_TOKEN_SECRET"`
	Tier1TokenKeys    string       `env:"VWR_TIER1_TOKEN_KEYS"`
	UserHeader        string       `env:"QUEUE_USER_HEADER"`
	AdminToken        string       `env:"QUEUE_ADMIN_TOKEN"`
	CookieSecure      bool         `env:"QUEUE_COOKIE_SECURE"`

	Threshold            envconf.Positive `env:"QUEUE_THRESHOLD"`
	ActiveTTL            envconf.Seconds  `env:"QUEUE_ACTIVE_TTL_SECONDS"`
	SeenTTL              envconf.Seconds  `env:"QUEUE_SEEN_TTL_SECONDS"`
	AdmissionInterval    envconf.Millis   `env:"QUEUE_ADMISSION_INTERVAL_MS"`
	AdmissionBatchSize   envconf.Positive `env:"QUEUE_ADMISSION_BATCH_SIZE"`
	StaleCleanupInterval envconf.Millis   `env:"QUEUE_STALE_CLEANUP_INTERVAL_MS"`
	WorkerParallelism    envconf.Positive `env:"QUEUE_WORKER_PARALLELISM"`
	EntryTokenTTL        envconf.Seconds  `env:"QUEUE_ENTRY_TOKEN_TTL_SECONDS"`
	RecoveryWindow       envconf.Seconds  `env:"QUEUE_RECOVERY_WINDOW_SECONDS"`
	ActiveIdle           envconf.Seconds  `env:"QUEUE_ACTIVE_IDLE_SECONDS"`

	// OpenEvents keeps the drop-in behaviour: any valid event id is an
	// event and its threshold override lives in the queue's Redis (lost
	// with it). Off, only events configured in Tier 1's store exist.
	OpenEvents      bool           `env:"QUEUE_OPEN_EVENTS"`
	SettingsRefresh envconf.Millis `env:"QUEUE_SETTINGS_REFRESH_MS"`
	// PollsFromStore makes every queued poll the store's step (exact
	// people ahead, a Redis call each), as before answers from memory: the
	// baseline the device benchmark compares bin/queue against, and a
	// fallback for an operator who wants exact counts over Redis time.
	PollsFromStore bool `env:"QUEUE_POLLS_FROM_STORE"`
	// SettingsStore names the store the event settings live in: Tier 1's
	// backend, chosen by the same variables as Tier 1 itself.
	SettingsStore settingsstore.Config

	// Gate configures the entry-token gate vwr local puts in front of its
	// demo site (the same variables as `vwr gate`).
	Gate gate.Settings

	Log applog.Config
}

// DefaultAddr is where the Tier 2 API listens unless QUEUE_LISTEN_ADDR says otherwise.
const DefaultAddr = ":8080"

// FromEnv reads the Config from environ (nil: the process environment).
// Malformed values are errors naming the variable; missing required values
// are reported by Open, so callers may fill them in first (vwr local).
func FromEnv(environ map[string]string) (Config, error) {
	var c Config
	err := envconf.Parse(&c, environ)
	return c, err
}

// WithDefaults fills what this package owns.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	c.Log = c.Log.WithDefaults()
	return c
}

// Queue is the domain's configuration: zero fields take queue's defaults.
func (c Config) Queue() queue.Config {
	return queue.Config{
		Threshold:          int64(c.Threshold),
		ActiveTTL:          c.ActiveTTL.D(),
		SeenTTL:            c.SeenTTL.D(),
		AdmissionBatchSize: int64(c.AdmissionBatchSize),
		EntryTokenTTL:      c.EntryTokenTTL.D(),
		RecoveryWindow:     c.RecoveryWindow.D(),
		ActiveIdle:         c.ActiveIdle.D(),
	}.WithDefaults()
}

// Worker is the admission worker's configuration, defaulted by queue.
func (c Config) Worker() queue.WorkerConfig {
	return queue.WorkerConfig{
		AdmissionInterval:    c.AdmissionInterval.D(),
		StaleCleanupInterval: c.StaleCleanupInterval.D(),
		Parallelism:          int(c.WorkerParallelism),
	}.WithDefaults()
}

// validate reports every problem at once, each naming its variable. Redis
// settings are only required when no client is injected, the settings
// store only when events must be configured and no ConfigStore is injected.
func (c Config) validate(needRedis, needTier1 bool) error {
	var errs []error
	if needTier1 {
		if err := c.SettingsStore.WithDefaults().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if needRedis && c.RedisURL == "" && len(c.RedisClusterAddrs) == 0 {
		errs = append(errs, errors.New("REDIS_URL is required (e.g. redis://127.0.0.1:6379/0; for a Redis Cluster, REDIS_CLUSTER_ADDRS=host:port,… or REDIS_URL=redis+cluster://host:port,…)"))
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
	if c.UserHeader != "" && !gate.ValidHeaderName(c.UserHeader) {
		errs = append(errs, fmt.Errorf("QUEUE_USER_HEADER: %q is not a valid header name", c.UserHeader))
	}
	if err := c.Queue().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Gate.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Log.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
