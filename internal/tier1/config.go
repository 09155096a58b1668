package tier1

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
)

// Config tunes the Service. The zero value plus WithDefaults is the seed's
// behaviour: one shard, batches of 500, ticks 10 s apart.
type Config struct {
	PositionTTL      time.Duration // how long a position record lives (DynamoDB TTL); 24h
	TokenTTL         time.Duration // Tier 1 JWT lifetime; 600s
	StatusCacheTTL   time.Duration // in-memory cache of an event's snapshot; ≤ 1s
	DefaultShards    int           // shards when Activate is given 0; 1
	DefaultBatchSize int64         // batch when Activate is given 0; 500
	// TickEvery is the advancer's tick interval. Ticks are numbered by
	// unix time / TickEvery, and each numbered tick raises an event at most
	// once however many advancers run. 10s (ADVANCER_TICK_SECONDS).
	TickEvery time.Duration
	// Sleep waits between advancer ticks. Tests inject one that moves a manual
	// clock instead of sleeping. Default: a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives one line per advance. Default: slog.Default().
	Logger *slog.Logger
	// Draw is the public beacon scheduled sales are drawn with. Default:
	// drand quicknet from https://api.drand.sh, margin 10 s.
	Draw DrawConfig
	// Pow issues and checks proof-of-work challenges (guard.go).
	Pow PowConfig
	// Clients bounds the arrivals per client address (guard.go); off
	// unless Limit > 0 and the handler knows the client's address.
	Clients ClientBound
}

// Defaults.
const (
	DefaultPositionTTL    = 24 * time.Hour
	DefaultTokenTTL       = 600 * time.Second
	DefaultStatusCacheTTL = time.Second
	DefaultTickEvery      = 10 * time.Second
	DefaultShardCount     = 1
	DefaultBatch          = 500
)

// WithDefaults fills every zero field with its default.
func (c Config) WithDefaults() Config {
	if c.PositionTTL == 0 {
		c.PositionTTL = DefaultPositionTTL
	}
	if c.TokenTTL == 0 {
		c.TokenTTL = DefaultTokenTTL
	}
	if c.StatusCacheTTL == 0 {
		c.StatusCacheTTL = DefaultStatusCacheTTL
	}
	if c.DefaultShards == 0 {
		c.DefaultShards = DefaultShardCount
	}
	if c.DefaultBatchSize == 0 {
		c.DefaultBatchSize = DefaultBatch
	}
	if c.TickEvery == 0 {
		c.TickEvery = DefaultTickEvery
	}
	if c.Sleep == nil {
		c.Sleep = clock.Sleep
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Draw.Chain.Hash == nil {
		c.Draw.Chain = draw.Quicknet()
	}
	if c.Draw.Beacon == nil {
		c.Draw.Beacon = draw.Client{URL: draw.DefaultRelay, Chain: c.Draw.Chain}
	}
	if c.Draw.Margin == 0 {
		c.Draw.Margin = DefaultDrawMargin
	}
	c.Pow = c.Pow.withDefaults()
	c.Clients = c.Clients.withDefaults()
	return c
}

// Validate checks a defaulted Config; messages name the env variable.
func (c Config) Validate() error {
	var errs []error
	if c.PositionTTL <= 0 {
		errs = append(errs, errors.New("VWR_TIER1_POSITION_TTL must be positive"))
	}
	if c.TokenTTL <= 0 {
		errs = append(errs, errors.New("VWR_TIER1_TOKEN_TTL must be positive"))
	}
	if c.StatusCacheTTL <= 0 || c.StatusCacheTTL > time.Second {
		errs = append(errs, errors.New("VWR_TIER1_STATUS_CACHE_TTL must be in (0, 1s]"))
	}
	if c.DefaultShards < MinShards || c.DefaultShards > MaxShards {
		errs = append(errs, fmt.Errorf("VWR_TIER1_DEFAULT_SHARDS must be in [%d, %d]", MinShards, MaxShards))
	}
	if c.DefaultBatchSize < MinBatchSize || c.DefaultBatchSize > MaxBatchSize {
		errs = append(errs, fmt.Errorf("VWR_TIER1_DEFAULT_BATCH_SIZE must be in [%d, %d]", MinBatchSize, MaxBatchSize))
	}
	if err := c.Draw.Chain.Check(); err != nil {
		errs = append(errs, fmt.Errorf("VWR_DRAW_CHAIN_INFO: %w", err))
	}
	if c.Draw.Margin < draw.MinMargin {
		errs = append(errs, fmt.Errorf("VWR_DRAW_MARGIN must be at least %v", draw.MinMargin))
	}
	if c.TickEvery < time.Second {
		errs = append(errs, errors.New("ADVANCER_TICK_SECONDS must be at least 1"))
	}
	errs = append(errs, c.Pow.validate()...)
	errs = append(errs, c.Clients.validate()...)
	return errors.Join(errs...)
}
