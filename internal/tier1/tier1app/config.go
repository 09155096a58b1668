// Package tier1app assembles Tier 1 from its configuration. It is the one
// place that chooses the store (DynamoDB or Redis), builds the AWS and Redis
// clients, and turns the environment into a Service and the handlers'
// dependencies, as services/queue/app does for Tier 2. Every
// lambdas/<fn>/main.go boots through it, and so does `vwr local`.
package tier1app

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/vwr-go/vwr/internal/applog"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/tier1store"
	"github.com/vwr-go/vwr/internal/token"
)

// Store kinds selected by VWR_TIER1_STORE.
const (
	StoreDynamoDB = "dynamodb"
	StoreRedis    = "redis"
)

// Config is every Tier 1 setting, read from the environment by FromEnv
// (internal/envconf). A zero field means "the default", applied by the
// package that owns the setting: tier1.Config for the Service's tuning,
// dynamostore for table names, applog for logging. Every function reads the
// same set; the templates give each function only the variables it uses.
type Config struct {
	Store          string `env:"VWR_TIER1_STORE"`     // dynamodb (default) or redis
	RedisURL       string `env:"VWR_TIER1_REDIS_URL"` // required when Store is redis
	EventsTable    string `env:"VWR_TIER1_EVENTS_TABLE"`
	PositionsTable string `env:"VWR_TIER1_POSITIONS_TABLE"`
	// TokenKeys sign and verify Tier 1 passes ("kid:secret,…"). Only assign
	// and check mint passes; the others run on a throwaway key. For local
	// runs and tests: in AWS the keys come from TokenKeysSecretARN instead,
	// so no key material sits in the function's configuration.
	TokenKeys string `env:"VWR_TIER1_TOKEN_KEYS"`
	// TokenKeysSecretARN names the Secrets Manager secret holding the same
	// ring, read once at cold start (LoadKeyRing). Exclusive with TokenKeys.
	TokenKeysSecretARN string `env:"VWR_TIER1_TOKEN_KEYS_SECRET_ARN"`
	// AdminToken is an optional bearer token for the admin routes.
	AdminToken string `env:"VWR_ADMIN_TOKEN"`
	// OriginVerifySecretARN, when set, names the secret ({"value":…}) whose
	// value every visitor route requires as X-Vwr-Origin-Verify (read once
	// at cold start; tier1api.Deps.OriginVerify).
	OriginVerifySecretARN string `env:"VWR_ORIGIN_VERIFY_SECRET_ARN"`
	// AdmittedStatsTable is the SQS consumer's per-minute admission counts,
	// read by the admin status only. Optional.
	AdmittedStatsTable string `env:"VWR_ADMITTED_STATS_TABLE"`

	PositionTTL      time.Duration    `env:"VWR_TIER1_POSITION_TTL"`
	TokenTTL         time.Duration    `env:"VWR_TIER1_TOKEN_TTL"`
	StatusCacheTTL   time.Duration    `env:"VWR_TIER1_STATUS_CACHE_TTL"`
	DefaultShards    envconf.Positive `env:"VWR_TIER1_DEFAULT_SHARDS"`
	DefaultBatchSize envconf.Positive `env:"VWR_TIER1_DEFAULT_BATCH_SIZE"`
	// AdvancerTicks is the ticks per scheduled invocation; the gap between
	// them is AdvancerTick, which also numbers the tick slots.
	AdvancerTicks envconf.Positive `env:"ADVANCER_TICKS"`
	AdvancerTick  envconf.Seconds  `env:"ADVANCER_TICK_SECONDS"`

	// What a client pays at the door (docs/bots.md). ClientIPHeader names the
	// header a trusted proxy sets to the client's address
	// (CloudFront-Viewer-Address in the AWS templates); without it there is
	// no per-client bound.
	ClientIPHeader string           `env:"VWR_TIER1_CLIENT_IP_HEADER"`
	ClientLimit    envconf.Positive `env:"VWR_TIER1_CLIENT_LIMIT"`  // arrivals per client, event and window; 100
	ClientWindow   time.Duration    `env:"VWR_TIER1_CLIENT_WINDOW"` // the bound's window; 10m
	PowDefault     envconf.Positive `env:"VWR_TIER1_POW_DEFAULT"`   // hashes of a challenge for an event asking none; 500000
	PowLifetime    time.Duration    `env:"VWR_TIER1_POW_LIFETIME"`  // how long a fresh challenge stays valid; 5m
	PowWindow      time.Duration    `env:"VWR_TIER1_POW_WINDOW"`    // the cache window of ?nonce= challenges; 5m

	// The public beacon scheduled sales are drawn with (docs/draw.md).
	BeaconURL  string        `env:"VWR_DRAW_BEACON_URL"` // drand HTTP relay; https://api.drand.sh
	ChainInfo  string        `env:"VWR_DRAW_CHAIN_INFO"` // the chain's /info JSON; drand quicknet
	DrawMargin time.Duration `env:"VWR_DRAW_MARGIN"`     // opening to beacon round, at least; 10s

	Log applog.Config
}

// DefaultAdvancerTicks is the seed's (§5.3) ticks per scheduled invocation:
// with the default 10 s tick, one invocation per minute covers the minute.
const DefaultAdvancerTicks = 6

// FromEnv reads the Config from environ (nil: the process environment) and
// applies this package's defaults. Validate checks it.
func FromEnv(environ map[string]string) (Config, error) {
	var c Config
	if err := envconf.Parse(&c, environ); err != nil {
		return Config{}, err
	}
	return c.WithDefaults(), nil
}

// WithDefaults fills what this package owns: the store kind and the ticks
// per invocation.
func (c Config) WithDefaults() Config {
	if c.Store == "" {
		c.Store = StoreDynamoDB
	}
	if c.AdvancerTicks == 0 {
		c.AdvancerTicks = DefaultAdvancerTicks
	}
	c.Log = c.Log.WithDefaults()
	return c
}

// Draw is the beacon configuration; Validate reports a chain info that
// does not parse (Draw then falls back to the zero value, quicknet).
func (c Config) Draw() (tier1.DrawConfig, error) {
	d := tier1.DrawConfig{Margin: c.DrawMargin}
	if c.ChainInfo != "" {
		chain, err := draw.ParseChainInfo([]byte(c.ChainInfo))
		if err != nil {
			return tier1.DrawConfig{}, fmt.Errorf("VWR_DRAW_CHAIN_INFO: %w", err)
		}
		d.Chain = chain
	}
	if c.BeaconURL != "" || c.ChainInfo != "" {
		chain := d.Chain
		if chain.Hash == nil {
			chain = draw.Quicknet()
		}
		d.Beacon = draw.Client{URL: cmp.Or(c.BeaconURL, draw.DefaultRelay), Chain: chain}
	}
	return d, nil
}

// Service is the domain's configuration; tier1 fills zero fields.
func (c Config) Service() tier1.Config {
	d, _ := c.Draw()
	return tier1.Config{
		Draw:             d,
		PositionTTL:      c.PositionTTL,
		TokenTTL:         c.TokenTTL,
		StatusCacheTTL:   c.StatusCacheTTL,
		DefaultShards:    int(c.DefaultShards),
		DefaultBatchSize: int64(c.DefaultBatchSize),
		TickEvery:        c.AdvancerTick.D(),
		Pow: tier1.PowConfig{
			Default: int64(c.PowDefault), Lifetime: c.PowLifetime, Window: c.PowWindow,
			// Keys come from the pass keys (PowKeys); until then, a random one.
		},
		Clients: c.clientBound(),
	}.WithDefaults()
}

// clientBound is the per-client bound: on, at VWR_TIER1_CLIENT_LIMIT
// (default 100), only where a client-address header is named.
func (c Config) clientBound() tier1.ClientBound {
	b := tier1.ClientBound{Window: c.ClientWindow}
	if c.ClientIPHeader != "" {
		b.Limit = cmp.Or(int64(c.ClientLimit), tier1.DefaultClientLimit)
	}
	return b
}

// PowKeyLabel separates the proof-of-work keys from the pass keys they are
// derived from (token.KeyRing.DerivedKeys).
const PowKeyLabel = "vwr altcha v1"

// PowKeys are the keys that sign and verify proof-of-work challenges,
// derived from the pass keys so every instance that mints passes agrees.
func PowKeys(keys *token.KeyRing) [][]byte { return keys.DerivedKeys(PowKeyLabel) }

// StoreConfig is the store selection (bin/queue reads the same variables
// into settingsstore.Config).
func (c Config) StoreConfig() tier1store.Config {
	return tier1store.Config{Store: c.Store, RedisURL: c.RedisURL, EventsTable: c.EventsTable, PositionsTable: c.PositionsTable}
}

// Dynamo is the DynamoDB store's table configuration.
func (c Config) Dynamo() dynamostore.Config {
	return dynamostore.Config{EventsTable: c.EventsTable, PositionsTable: c.PositionsTable}.WithDefaults()
}

// Passes says whether a function mints Tier 1 passes (assign, check), which
// makes VWR_TIER1_TOKEN_KEYS required.
type Passes bool

// Whether a function mints passes.
const (
	MintsPasses   Passes = true
	NoPassMinting Passes = false
)

// Validate checks a defaulted Config; every message names its variable.
func (c Config) Validate(mints Passes) error {
	var errs []error
	switch c.Store {
	case StoreDynamoDB:
		d := c.Dynamo()
		if d.EventsTable == d.PositionsTable {
			errs = append(errs, errors.New("VWR_TIER1_EVENTS_TABLE and VWR_TIER1_POSITIONS_TABLE must differ"))
		}
	case StoreRedis:
		// OpenStore requires VWR_TIER1_REDIS_URL; vwr local lends the queue's Redis.
	default:
		errs = append(errs, fmt.Errorf("VWR_TIER1_STORE must be %q or %q, not %q", StoreDynamoDB, StoreRedis, c.Store))
	}
	switch {
	case c.TokenKeys != "" && c.TokenKeysSecretARN != "":
		errs = append(errs, errors.New("set VWR_TIER1_TOKEN_KEYS (local) or VWR_TIER1_TOKEN_KEYS_SECRET_ARN (AWS), not both"))
	case c.TokenKeysSecretARN != "":
		// Read and parsed at cold start by LoadKeyRing.
	case c.TokenKeys == "":
		if mints {
			errs = append(errs, errors.New("VWR_TIER1_TOKEN_KEYS is required (kid:secret, secret at least 32 bytes), or VWR_TIER1_TOKEN_KEYS_SECRET_ARN in AWS"))
		}
	default:
		if _, err := token.ParseKeyRing(c.TokenKeys); err != nil {
			errs = append(errs, fmt.Errorf("VWR_TIER1_TOKEN_KEYS: %w", err))
		}
	}
	if c.AdvancerTicks > 60 {
		errs = append(errs, errors.New("ADVANCER_TICKS must be in [1, 60]"))
	}
	if _, err := c.Draw(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Service().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Log.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// KeyRing returns the pass keys. A function that never mints passes gets a
// throwaway key when it was given none: nothing it signs leaves the process.
func (c Config) KeyRing(mints Passes) (*token.KeyRing, error) {
	if c.TokenKeys == "" && !mints {
		return token.NewKeyRing("unused", []byte(token.RandomSecret()))
	}
	keys, err := token.ParseKeyRing(c.TokenKeys)
	if err != nil {
		return nil, fmt.Errorf("VWR_TIER1_TOKEN_KEYS: %w", err)
	}
	return keys, nil
}
